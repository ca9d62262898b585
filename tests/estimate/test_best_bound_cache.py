"""Best mode reuses the upper bound worked out for a snapshot and request shape (in either
mode): the answer is the same as with the bound computed afresh, and the bound the kernels
would compute is the one passed in (first-fit's staged bound, or best mode's lower one where
its exact search proves it)."""

from __future__ import annotations

import random

import numpy as np
import pytest

from estimator import kernels
from estimator.core.model import Component, ComponentSetsQuery, NodeClaim, ReplicaShape
from estimator.core.resources import MAX_INT32
from estimator.estimate.framework import EstimateContext
from estimator.estimate.plugins import noderesource
from estimator.estimate.plugins.noderesource import NodeResourcePlugin
from tests.support import naive
from tests.support.randmember import random_member

GI = 2**30


def member(seed: int):
    return random_member(seed, max_nodes=14, pod_slots=(2, 5, 110), gpu_share=0.5, max_pods=16, max_pod_cpu=3)


def query(seed: int) -> ComponentSetsQuery:
    rng = random.Random(seed * 11 + 3)
    components = []
    for c in range(rng.randint(1, 3)):
        requests = [("cpu", rng.randint(1, 4) * 500), ("memory", rng.randint(1, 8) * GI)]
        if rng.random() < 0.5:
            requests.append(("nvidia.com/gpu", rng.randint(1, 2)))
        components.append(Component(f"c{c}", rng.randint(1, 4), ReplicaShape(tuple(sorted(requests)), NodeClaim())))
    return ComponentSetsQuery(tuple(components), "ns")


def arrays(snapshot, q):
    inputs = noderesource.kernel_inputs(snapshot, q)
    return inputs.available, inputs.requests, inputs.replicas, inputs.masks


@pytest.mark.parametrize("seed", range(40))
def test_a_known_bound_gives_the_same_answer_as_computing_it(seed):
    available, requests, replicas, masks = arrays(member(seed), query(seed))
    first_fit = naive.first_fit(available, requests, replicas, masks, MAX_INT32)[0]
    fresh = kernels.best_sets(available, requests, replicas, masks, MAX_INT32, budget=1.0)
    served = kernels.best_sets(available, requests, replicas, masks, MAX_INT32, budget=1.0,
                               known_bound=fresh.bound)
    assert (served.sets, served.bound) == (fresh.sets, fresh.bound)
    assert first_fit <= served.sets <= served.bound
    assert naive.verify(available, requests, replicas, masks, served.sets, served.placement)
    # The bound best mode reports is the staged bound first-fit mode caches under the same key,
    # or lower where its exact search on a small pool proves one. Searching from the staged
    # bound takes the same steps as before: the same witness; from the proven one, the search
    # may reach the same answer through another witness.
    ff = kernels.first_fit_bounded(available.copy(), requests, replicas, masks, MAX_INT32)
    assert fresh.bound <= ff.bound
    if fresh.bound == ff.bound:
        assert np.array_equal(served.placement, fresh.placement)
    if available.shape[0] <= 6 and replicas.sum() <= 6:
        assert fresh.bound >= naive.exhaustive(available, requests, replicas, masks, 64)[0]


def test_a_known_bound_outside_first_fit_and_upper_is_refused():
    available = np.array([[4, 4000]], dtype=np.int64)
    requests = np.array([[1, 1000]], dtype=np.int64)
    replicas = np.array([1], dtype=np.int64)
    masks = np.ones((1, 1), dtype=np.bool_)
    for wrong in (3, 11):  # first-fit places 4; upper is 10
        with pytest.raises(ValueError, match="known_bound"):
            kernels.best_sets(available, requests, replicas, masks, 10, known_bound=wrong)


def test_best_mode_is_served_the_bound_of_either_mode(monkeypatch):
    seen = []
    real = kernels.best_sets
    monkeypatch.setattr(kernels, "best_sets", lambda *a, **k: seen.append(k.get("known_bound")) or real(*a, **k))
    bounds_called = []  # first-fit mode working a bound out (with its answer, in one call)
    real_bounded = kernels.first_fit_with_bound
    monkeypatch.setattr(kernels, "first_fit_with_bound",
                        lambda *a, **k: bounds_called.append(1) or real_bounded(*a, **k))
    plugin, q = NodeResourcePlugin(), query(5)
    snapshot = member(5)
    best = EstimateContext(snapshot, "best")
    first = plugin.estimate_components(best, q).detail
    again = plugin.estimate_components(best, q).detail
    assert seen == [None, first.bound]
    assert (again.sets, again.bound) == (first.sets, first.bound)
    # First-fit mode on the same snapshot and shape is served best mode's bound, and the
    # other way round on a fresh snapshot.
    assert plugin.estimate_components(EstimateContext(snapshot, "first-fit"), q).detail.bound == first.bound
    assert bounds_called == []
    fresh = member(5)
    plugin.estimate_components(EstimateContext(fresh, "first-fit"), q)
    assert bounds_called == [1]
    plugin.estimate_components(EstimateContext(fresh, "best"), q)
    assert seen[-1] == first.bound


@pytest.mark.parametrize("budget", [0, 1e-4, 0.05, 1.0, None])
@pytest.mark.parametrize("seed", range(6))
def test_a_search_too_small_to_start_gives_the_same_answer_without_the_fits_pass(seed, budget):
    """With the bound known, best mode skips the fits pass when no search step fits its
    allowance; the answer, bound and work are those of the full path, whatever the budget."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(200, 2000))
    available = np.zeros((n, 3), dtype=np.int64)  # pods, cpu, gpu
    free = rng.integers(0, 5, size=n)
    available[:, 0] = free + rng.integers(0, 3, size=n)
    available[:, 1] = free * 4000 + rng.integers(0, 9, size=n) * 500
    available[:, 2] = free
    requests = np.array([[1, 500, 0], [1, 4000, 1]], dtype=np.int64)
    replicas = np.array([1, int(rng.integers(1, 9))], dtype=np.int64)
    masks = rng.random((2, n)) < 0.9
    fresh = kernels.best_sets(available, requests, replicas, masks, MAX_INT32, budget=budget)
    served = kernels.best_sets(available, requests, replicas, masks, MAX_INT32, budget=budget,
                               known_bound=fresh.bound)
    assert (served.sets, served.bound, served.work) == (fresh.sets, fresh.bound, fresh.work)
    assert np.array_equal(served.placement, fresh.placement)
    assert naive.first_fit(available, requests, replicas, masks, MAX_INT32)[0] <= served.sets <= served.bound
