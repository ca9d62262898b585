"""Best mode's work budget: counted in node visits, so an answer never depends on timing."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from estimator import kernels
from estimator.kernels import best
from tests.support import naive
from tests.support.gpuarrays import stranding_gpu_member

MAX_INT32 = 2**31 - 1


def _gpu_member(n_nodes: int, seed: int):
    return stranding_gpu_member(n_nodes, seed, workers=8)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10_000), st.sampled_from([20, 200, 2000]), st.sampled_from([0.25, 1.0, 3.0]))
def test_the_same_request_always_gets_the_same_answer_and_witness(seed, n_nodes, budget):
    available, requests, replicas, masks = _gpu_member(n_nodes, seed)
    runs = [kernels.best_sets(available, requests, replicas, masks, MAX_INT32, budget=budget) for _ in range(3)]
    assert len({(r.sets, r.bound, r.work) for r in runs}) == 1
    assert all(np.array_equal(r.placement, runs[0].placement) for r in runs)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10_000), st.sampled_from([50, 500, 3000]))
def test_a_bigger_budget_never_gives_fewer_sets_and_stays_within_the_truth(seed, n_nodes):
    available, requests, replicas, masks = _gpu_member(n_nodes, seed)
    first_fit = naive.first_fit(available, requests, replicas, masks, MAX_INT32)[0]
    answers = []
    for budget in (0, 0.5, 1.0, 4.0, None):
        got = kernels.best_sets(available, requests, replicas, masks, MAX_INT32, budget=budget)
        assert first_fit <= got.sets <= got.bound
        assert naive.verify(available, requests, replicas, masks, got.sets, got.placement)
        answers.append(got.sets)
    assert answers[0] == first_fit
    # Steps are tried in one fixed order and each budget stops that sequence later.
    assert answers == sorted(answers)


def test_the_search_stays_within_its_allowance():
    """On a member where the search has room to improve, the counted work after first-fit
    stays within budget x first-fit's work (or the floor) x the room the bound leaves
    (`best.room_factor`), plus the one step that may overrun its prediction, a set-by-set
    pass. Every node of this member is eligible, so first-fit's work over the pool is its
    work over the member."""
    available, requests, replicas, masks = _gpu_member(4000, 7)
    baseline = kernels.first_fit_sets(available.copy(), requests, replicas, masks, MAX_INT32)
    unlimited = kernels.best_sets(available, requests, replicas, masks, MAX_INT32, budget=None)
    assert unlimited.sets > baseline.sets  # the member leaves the search something to find
    for budget in (0.5, 1.0, 2.0, 4.0, 16.0):
        got = kernels.best_sets(available, requests, replicas, masks, MAX_INT32, budget=budget)
        allowance = budget * max(baseline.work, best._MIN_SEARCH_WORK) * best.room_factor(got.bound, baseline.sets)
        assert got.work - baseline.work <= allowance + 2 * baseline.work
        assert baseline.sets <= got.sets <= unlimited.sets
    assert got.sets == unlimited.sets  # the largest budget has room for the step that finds it


def test_first_fit_reports_its_work_in_node_visits():
    # One component of 1 replica on 3 nodes of 1 slot each: every set visits one node,
    # the failing 4th walks past the end.
    available = np.array([[1, 1], [1, 1], [1, 1]], dtype=np.int64)
    got = kernels.first_fit_sets(available, np.array([[1, 1]]), np.array([1]), np.ones((1, 3), bool), MAX_INT32)
    assert got.sets == 3
    assert got.work >= 3
