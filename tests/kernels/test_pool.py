"""Best mode searches the eligible pool (nodes where some component fits a replica), not
the member: a member padded with nodes no component can use gets the answer of its bare
pool, at every budget, and where the pool is the whole member nothing changes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from estimator import kernels
from estimator.kernels import best, fit
from estimator.kernels._arrays import problem
from tests.kernels.test_properties import clusters
from tests.support import naive
from tests.support.gpuarrays import stranding_gpu_member

MAX_INT32 = 2**31 - 1
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
BUDGETS = (0, 0.25, 1.0, 4.0, None)


def pad(available, requests, replicas, masks, where: np.ndarray, kinds: np.ndarray):
    """The member with unusable nodes inserted before the positions `where` (values in
    0..N): kind 0 has room but every component's mask is off (fenced out by labels), kind 1
    every mask on but no pod slot, kind 2 nothing at all. Returns the padded arrays and the
    padded member's index of each original node."""
    n, k = available.shape
    c = requests.shape[0]
    rows, flags, original = [], [], []
    order = np.argsort(where, kind="stable")
    j = 0
    for i in range(n + 1):
        while j < len(order) and where[order[j]] == i:
            kind = kinds[order[j]]
            row = np.full(k, 1000, dtype=np.int64)
            if kind == 1:
                row[0] = 0
            elif kind == 2:
                row[:] = 0
            rows.append(row)
            flags.append(np.full(c, kind != 0))
            j += 1
        if i < n:
            original.append(len(rows))
            rows.append(available[i])
            flags.append(masks[:, i])
    padded = np.array(rows, dtype=np.int64).reshape(len(rows), k)
    padded_masks = np.array(flags, dtype=np.bool_).reshape(len(rows), c).T.copy()
    return padded, padded_masks, np.array(original, dtype=np.int64)


@st.composite
def padded_clusters(draw, max_pad=40):
    available, requests, replicas, masks, upper = draw(clusters())
    n = available.shape[0]
    count = draw(st.integers(0, max_pad))
    where = np.array(draw(st.lists(st.integers(0, n), min_size=count, max_size=count)), dtype=np.int64)
    kinds = np.array(draw(st.lists(st.integers(0, 2), min_size=count, max_size=count)), dtype=np.int64)
    return available, requests, replicas, masks, upper, where, kinds


def assert_padded_equals_bare(available, requests, replicas, masks, upper, where, kinds, budget):
    padded, padded_masks, original = pad(available, requests, replicas, masks, where, kinds)
    bare = kernels.best_sets(available, requests, replicas, masks, upper, budget=budget)
    got = kernels.best_sets(padded, requests, replicas, padded_masks, upper, budget=budget)
    assert (got.sets, got.bound) == (bare.sets, bare.bound)
    assert got.placement[:, original].tolist() == bare.placement.tolist()
    assert not np.delete(got.placement, original, axis=1).any()
    assert naive.verify(padded, requests, replicas, padded_masks, got.sets, got.placement)
    first_fit = kernels.first_fit_bounded(padded.copy(), requests, replicas, padded_masks, upper)
    assert first_fit.sets <= got.sets <= got.bound
    assert first_fit.bound == kernels.first_fit_bounded(available.copy(), requests, replicas, masks, upper).bound


@SETTINGS
@given(padded_clusters(), st.sampled_from(BUDGETS))
def test_a_member_padded_with_unusable_nodes_gets_the_answer_of_its_bare_pool(case, budget):
    assert_padded_equals_bare(*case, budget)


def _gpu_pool(n_nodes: int, seed: int):
    return stranding_gpu_member(n_nodes, seed)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10_000), st.sampled_from([6, 40, 300]), st.sampled_from([10, 1000, 5000]),
       st.sampled_from(BUDGETS))
def test_a_fenced_pool_inside_a_large_member_is_searched_as_the_pool_alone(seed, n_pool, n_pad, budget):
    """The issue's shape: a job whose node selector picks a small pool of a large member."""
    available, requests, replicas, masks = _gpu_pool(n_pool, seed)
    rng = np.random.default_rng(seed + 1)
    where = rng.integers(0, n_pool + 1, size=n_pad)
    kinds = rng.integers(0, 3, size=n_pad)
    assert_padded_equals_bare(available, requests, replicas, masks, MAX_INT32, where, kinds, budget)


@SETTINGS
@given(padded_clusters())
def test_first_fit_over_the_pool_is_first_fit_over_the_member_and_visits_no_more(case):
    """Best mode budgets by first-fit's work over the pool and checks first with its work over
    the member: the same sets and placement, never more work."""
    available, requests, replicas, masks, upper, where, kinds = case
    padded, padded_masks, original = pad(available, requests, replicas, masks, where, kinds)
    whole = kernels.first_fit_sets(padded.copy(), requests, replicas, padded_masks, upper)
    p = problem(padded, requests, replicas, padded_masks, upper, in_place=False)
    pool = fit.eligible_pool(p.available, p.requests, p.replicas, p.masks, upper)
    on_pool = kernels.first_fit_sets(padded[pool.nodes].copy(), requests, replicas,
                                     np.ascontiguousarray(padded_masks[:, pool.nodes]), upper)
    assert on_pool.sets == whole.sets
    assert on_pool.placement.tolist() == whole.placement[:, pool.nodes].tolist()
    assert on_pool.work <= whole.work


@SETTINGS
@given(clusters())
def test_the_pool_is_the_nodes_where_some_component_fits_a_replica(case):
    available, requests, replicas, masks, upper = case
    p = problem(available, requests, replicas, masks, upper, in_place=False)
    pool = fit.eligible_pool(p.available, p.requests, p.replicas, p.masks, upper)
    expected = [n for n in range(available.shape[0])
                if any(replicas[c] > 0 and masks[c, n] and naive.node_fit(available[n].tolist(), requests[c].tolist())
                       for c in range(len(replicas)))]
    assert pool.nodes.tolist() == expected
    assert pool.whole == (len(expected) == available.shape[0])
    optimum = naive.exhaustive(available, requests, replicas, masks, upper)[0]
    assert optimum <= pool.bound <= upper  # the column totals' bound


@SETTINGS
@given(clusters(), st.sampled_from([0.25, 1.0, None]))
def test_where_the_pool_is_the_whole_member_the_search_is_the_uncompacted_one(case, budget):
    """Every node eligible: the pool pass hands the search the member's own arrays."""
    available, requests, replicas, masks, upper = case
    masks = np.ones_like(masks)
    available = np.maximum(available, requests.max(axis=0, initial=0))  # every component fits everywhere
    p = problem(available, requests, replicas, masks, upper, in_place=False)
    pool = fit.eligible_pool(p.available, p.requests, p.replicas, p.masks, upper)
    assert pool.whole or not replicas.any()
    got = kernels.best_sets(available, requests, replicas, masks, upper, budget=budget)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(best, "compact", lambda pool, a, m: (a, m))  # never compact
        uncompacted = kernels.best_sets(available, requests, replicas, masks, upper, budget=budget)
    assert (got.sets, got.bound, got.work) == (uncompacted.sets, uncompacted.bound, uncompacted.work)
    assert got.placement.tolist() == uncompacted.placement.tolist()


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 10_000), st.sampled_from([30, 400, 3000]), st.sampled_from(BUDGETS))
def test_a_known_bound_and_pool_give_the_answer_of_working_them_out(seed, n_pool, budget):
    """The plugin keeps each shape's bound and eligible pool per snapshot; served them, best
    mode may decide the search unaffordable before the pool pass, with the same answer."""
    available, requests, replicas, masks = _gpu_pool(n_pool, seed)
    rng = np.random.default_rng(seed)
    masks = masks & (rng.random(masks.shape) < 0.9)
    fresh = kernels.best_sets(available, requests, replicas, masks, MAX_INT32, budget=budget)
    served = kernels.best_sets(available, requests, replicas, masks, MAX_INT32, budget=budget,
                               known_bound=fresh.bound, known_pool=fresh.pool if fresh.pool >= 0 else None)
    assert (served.sets, served.bound, served.work) == (fresh.sets, fresh.bound, fresh.work)
    assert served.placement.tolist() == fresh.placement.tolist()
    assert fresh.pool in (-1, served.pool)
