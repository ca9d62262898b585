"""First-fit's upper bound is worked out once per snapshot and request shape; the answer
itself is computed for every request. Whether served from the snapshot or computed, the
bound is the one the kernels give for the same arrays."""

from __future__ import annotations

import random

import pytest

from estimator import kernels
from estimator.core.model import AssumedWorkload, Component, ComponentSetsQuery, NodeClaim, ReplicaShape
from estimator.core.resources import MAX_INT32
from estimator.estimate.framework import EstimateContext
from estimator.estimate.plugins import noderesource
from estimator.estimate.plugins.noderesource import NodeResourcePlugin
from tests.support.randmember import random_member

GI = 2**30


def member(seed: int):
    return random_member(seed, max_nodes=12, pod_slots=(3, 10, 110), gpu_share=0.4, max_pods=20, max_pod_cpu=4)


def query(seed: int) -> ComponentSetsQuery:
    rng = random.Random(seed * 7 + 1)
    components = []
    for c in range(rng.randint(1, 3)):
        requests = [("cpu", rng.randint(1, 4) * 500), ("memory", rng.randint(1, 8) * GI)]
        if rng.random() < 0.4:
            requests.append(("nvidia.com/gpu", rng.randint(1, 2)))
        components.append(Component(f"c{c}", rng.randint(1, 4), ReplicaShape(tuple(sorted(requests)), NodeClaim())))
    return ComponentSetsQuery(tuple(components), "ns")


def direct(snapshot, q):
    """The kernels' own first-fit with its bound, on the arrays the plugin builds."""
    arrays = noderesource.kernel_inputs(snapshot, q)
    return kernels.first_fit_bounded(arrays.available, arrays.requests, arrays.replicas, arrays.masks, MAX_INT32)


@pytest.mark.parametrize("seed", range(40))
def test_answers_and_bounds_match_the_kernels_computed_or_served(seed):
    snapshot, q = member(seed), query(seed)
    plugin, ctx = NodeResourcePlugin(), EstimateContext(snapshot, "first-fit")
    expected = direct(snapshot, q)
    for _ in range(2):  # the first computes the bound, the second is served it
        packing = plugin.estimate_components(ctx, q).detail
        assert (packing.sets, packing.bound) == (expected.sets, expected.bound)
        assert (packing.placement == expected.placement).all()


def test_the_bound_is_computed_once_per_snapshot_and_shape(monkeypatch):
    calls = []  # the bound worked out (with first-fit's answer, in one call)
    real = kernels.first_fit_with_bound
    monkeypatch.setattr(kernels, "first_fit_with_bound", lambda *a, **k: calls.append(1) or real(*a, **k))
    snapshot, q, other = member(3), query(3), query(4)
    plugin, ctx = NodeResourcePlugin(), EstimateContext(snapshot, "first-fit")
    for _ in range(3):
        plugin.estimate_components(ctx, q)
    assert len(calls) == 1
    plugin.estimate_components(ctx, other)
    assert len(calls) == 2  # another shape: its own bound
    plugin.estimate_components(EstimateContext(member(3), "first-fit"), q)
    assert len(calls) == 3  # another snapshot (even of the same member): computed again


def test_requests_with_assumed_workloads_do_not_share_bounds():
    snapshot = member(5)
    plain_query = query(5)
    assumed = ComponentSetsQuery(plain_query.components, "ns", (AssumedWorkload("ns", plain_query.components),))
    plugin, ctx = NodeResourcePlugin(), EstimateContext(snapshot, "first-fit")
    plugin.estimate_components(ctx, plain_query)
    with_assumed = plugin.estimate_components(ctx, assumed).detail
    fresh = NodeResourcePlugin().estimate_components(EstimateContext(member(5), "first-fit"), assumed).detail
    assert (with_assumed.sets, with_assumed.bound) == (fresh.sets, fresh.bound)


def test_many_shapes_on_one_snapshot_each_get_their_own_bound():
    snapshot = member(11)
    plugin, ctx = NodeResourcePlugin(), EstimateContext(snapshot, "first-fit")
    queries = [query(s) for s in range(60)]
    for _ in range(2):
        for q in queries:
            packing = plugin.estimate_components(ctx, q).detail
            expected = direct(snapshot, q)
            assert (packing.sets, packing.bound) == (expected.sets, expected.bound)
