"""What the estimate keeps per query object (plans, memo keys, quota demand) and the arrays
it vouches for: answers equal those of the fully checked path with nothing kept, on random
members, in both modes, repeated and in variants that share a shape."""

from __future__ import annotations

import gc
import random
from dataclasses import replace

import pytest

from estimator import kernels
from estimator.core.model import AssumedWorkload, Component, ComponentSetsQuery, ReplicaShape, ReplicasQuery
from estimator.estimate.estimate import Estimator
from estimator.estimate.framework import EstimateContext
from estimator.estimate.plugins import noderesource as nr
from estimator.estimate.querymemo import HashedKey, IdentityMemo
from estimator.estimate.requeststate import RequestCaches
from estimator.kernels import _arrays
from tests.support import naive
from tests.support.randmember import random_member


def member(seed: int):
    return random_member(seed, max_nodes=12, pod_slots=(2, 4, 110), gpu_share=0.5, max_pods=20, max_pod_cpu=6)


def shape(rng: random.Random, priority: str = "") -> ReplicaShape:
    requests = {"cpu": rng.choice([500, 1000, 2000, 4000]), "memory": rng.choice([1, 2, 8]) * 2**30}
    if rng.random() < 0.5:
        requests["nvidia.com/gpu"] = rng.choice([1, 2])
    return ReplicaShape(tuple(sorted(requests.items())), namespace="ns", priority_class=priority)


def queries(seed: int) -> list[ComponentSetsQuery]:
    rng = random.Random(seed)
    out = []
    for _ in range(4):
        components = tuple(Component(f"c{i}", rng.randint(0, 3), shape(rng)) for i in range(rng.randint(1, 3)))
        query = ComponentSetsQuery(components, "ns")
        # Variants that differ only in priority class: new answers for the same shape.
        out += [query] + [replace(query, components=tuple(replace(c, shape=replace(c.shape, priority_class=f"v{v}"))
                                                          for c in components)) for v in range(2)]
    inflight = AssumedWorkload("ns", (Component("w", 1, shape(rng)),))
    out.append(ComponentSetsQuery(out[0].components, "ns", assumed=(inflight,)))
    return out


def checked_answer(snapshot, query, packing: str):
    """The node-resource answer with every kernel check run and nothing kept: arrays built
    afresh, not vouched for."""
    available, requests, replicas, masks, upper, _ = nr.kernel_inputs(snapshot, query)
    if packing == "first-fit":
        packing_ = kernels.first_fit_bounded(available.copy(), requests, replicas, masks, upper)
    else:
        packing_ = kernels.best_sets(available, requests, replicas, masks, upper, budget=None)
    return packing_.sets, packing_.bound, packing_.placement.tolist(), (available, requests, replicas, masks)


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("packing", ["first-fit", "best"])
def test_kept_and_vouched_answers_equal_the_fully_checked_ones(seed, packing):
    snapshot = member(seed)
    plugin = nr.NodeResourcePlugin()
    ctx = EstimateContext(snapshot, packing, None, RequestCaches())
    for _ in range(2):  # the second round finds every plan and array kept
        for query in queries(seed):
            result = plugin.estimate_components(ctx, query)
            sets, bound, placement, arrays = checked_answer(snapshot, query, packing)
            assert (result.value, result.detail.bound, result.detail.placement.tolist()) == (sets, bound, placement)
            if packing == "first-fit" and not query.assumed:
                assert sets == naive.first_fit(*arrays, 2**31 - 1)[0]


def test_a_second_request_of_a_shape_runs_no_scan_over_the_nodes_and_a_repeat_none_at_all(monkeypatch):
    snapshot = member(3)
    plugin = nr.NodeResourcePlugin()
    first, variant = queries(3)[:2]
    caches = RequestCaches()
    for packing in ("first-fit", "best"):
        plugin.estimate_components(EstimateContext(snapshot, packing, None, caches), first)
    scanned = []
    monkeypatch.setattr(_arrays, "_no_negatives", lambda name, array: scanned.append(name))
    for packing in ("first-fit", "best"):
        plugin.estimate_components(EstimateContext(snapshot, packing, None, caches), variant)
    assert scanned == ["requests", "replicas"], "only the new query object's own rows (C x K), once"
    scanned.clear()
    for packing in ("first-fit", "best"):
        plugin.estimate_components(EstimateContext(snapshot, packing, None, caches), variant)
    assert scanned == []


def test_the_estimator_answers_as_without_its_per_query_memos(monkeypatch):
    snapshot = member(5)
    kept = Estimator(lambda: snapshot, packing="first-fit")
    asked = queries(5)
    answers = [kept.max_available_component_sets(q).sets for q in asked + asked]
    # Nothing kept per query object: every memo computes afresh.
    monkeypatch.setattr(_arrays, "vouched", lambda array, role: False)
    fresh = Estimator(lambda: member(5), packing="first-fit", caches=RequestCaches(query_entries=0))
    assert answers == [fresh.max_available_component_sets(q).sets for q in asked + asked]
    replicas = ReplicasQuery(asked[0].components[0].shape)
    assert kept.max_available_replicas(replicas)[0] == fresh.max_available_replicas(replicas)[0]


class Weak:
    pass


def test_identity_memo_recomputes_for_a_new_object_and_stays_bounded():
    calls = []
    memo = IdentityMemo(lambda obj: calls.append(obj) or len(calls), size=3)
    a = Weak()
    assert memo.get(a) == memo.get(a) == 1
    del a
    gc.collect()
    b = Weak()  # may reuse the dead object's id: still computed for b
    assert memo.get(b) == 2
    for _ in range(10):
        memo.get(Weak())
    assert len(memo) <= 3
    assert memo.get(7) == memo.get(7) - 1, "objects without weak references are computed every time"


def test_hashed_keys_of_equal_queries_are_equal_and_of_different_ones_not():
    one, variant = queries(1)[:2]
    assert HashedKey(one) == HashedKey(replace(one)) and hash(HashedKey(one)) == hash(one)
    assert HashedKey(one) != HashedKey(variant)
    assert HashedKey(one) != one
    plan_a, plan_b = nr._Plan(one), nr._Plan(variant)
    assert plan_a.claims == plan_b.claims and plan_a.bound_key == plan_b.bound_key


def test_a_plan_does_not_keep_a_replaced_snapshots_arrays_alive():
    import weakref

    snapshot = member(2)
    query = queries(2)[0]
    plugin = nr.NodeResourcePlugin()
    caches = RequestCaches()
    before = plugin.estimate_components(EstimateContext(snapshot, "first-fit", None, caches), query).value
    plan = caches.plans.peek(query)
    available, packing = plan.arrays(snapshot, query)
    refs = [weakref.ref(snapshot), weakref.ref(available), weakref.ref(packing)]
    del snapshot, available, packing
    gc.collect()
    assert all(ref() is None for ref in refs)
    fresh = member(2)
    assert plugin.estimate_components(EstimateContext(fresh, "first-fit", None, caches), query).value == before
