"""What a request may leave behind is bounded in bytes (estimate.py, querymemo.kept).

Small valid requests used to exhaust memory: the answer memo kept 16 answers with their
placements (components x nodes x 8 bytes each) and the plugins kept 64 packings of
components x nodes masks per snapshot, whatever their size. Now only a *kept* query (a few
components, columns and bytes) leaves anything behind, the memo is bounded in bytes, and
`working_bytes` says, before an estimate runs, at least what it holds at its peak.
"""

from __future__ import annotations

import gc
import tracemalloc

import pytest

from estimator.cluster.cache import ClusterCache
from estimator.core.model import AssumedWorkload, Component, ComponentSetsQuery, NodeClaim, ReplicaShape, \
    ReplicasQuery
from estimator.core.model import NodeSelectorRequirement, NodeSelectorTerm
from estimator import kernels
from estimator.estimate.estimate import Estimator
from estimator.estimate import querymemo
from estimator.estimate.querymemo import IdentityMemo
from tests.support.builders import GPU, node
from tests.support.cachemutators import upsert_node
from tests.support.memory import kept_bytes

NODES = 300
MI = 2**20


def member(nodes: int = NODES, extended: int = 0) -> ClusterCache:
    """`extended`: resources example.com/r000... each node has (room for the requests below)."""
    cache = ClusterCache()
    for i in range(nodes):
        built = node(f"n{i:04d}").cpu(64).memory("256Gi").gpu(8).zone(f"z{i % 3}")
        for k in range(extended):
            built = built.resource(f"example.com/r{k:03d}", 100)
        upsert_node(cache, built.build())
    return cache


def wide_job(components: int, cpu: int, names: int = 0, assumed: int = 0) -> ComponentSetsQuery:
    extra = tuple((f"example.com/r{k:03d}", 1) for k in range(names))
    shape = ReplicaShape((("cpu", cpu), *extra), namespace="ns")
    parts = tuple(Component(f"c{j}", 1, shape) for j in range(components))
    busy = tuple(AssumedWorkload("ns", (Component(f"a{j}", 1, shape),)) for j in range(assumed))
    return ComponentSetsQuery(parts, "ns", busy)




@pytest.mark.parametrize("packing", ["first-fit", "best"])
def test_requests_of_a_thousand_components_leave_nothing_behind(packing):
    cache = member()
    estimator = Estimator(cache.snapshot, packing=packing)
    estimator.max_available_component_sets(wide_job(3, 100))  # the member's own per-snapshot state

    def asked():
        for i in range(20):  # 20 different requests: each would be remembered with its placement
            assert estimator.max_available_component_sets(wide_job(1024, 1000 + i)).sets >= 0

    # Each answer's placement alone is 1024 x 300 x 8 bytes = 2.4 MB.
    assert kept_bytes(asked) < 2 * MI


def test_the_answer_memo_is_bounded_in_bytes():
    cache = member()
    estimator = Estimator(cache.snapshot, packing="first-fit", memo_bytes=MI)
    for i in range(16):  # kept queries: 60 components, a 144 KB placement each
        estimator.max_available_component_sets(wide_job(60, 1000 + i))
        assert estimator.memo_bytes() <= MI
    assert estimator.memo_bytes() > MI // 2, "the memo is used up to its bound"
    again = estimator.max_available_component_sets(wide_job(60, 1015))
    assert again.outcome.durations == {}, "the newest answer is remembered"


def test_a_query_with_a_large_claim_is_answered_but_not_kept():
    values = tuple(f"v{i:05d}" for i in range(4000))  # about 250 KB of strings
    claim = NodeClaim(affinity_terms=(NodeSelectorTerm((NodeSelectorRequirement("pool", "NotIn", values),)),))
    job = ComponentSetsQuery((Component("w", 1, ReplicaShape(((GPU, 1),), claim, namespace="ns")),), "ns")
    cache = member()
    estimator = Estimator(cache.snapshot, packing="first-fit")
    assert estimator.max_available_component_sets(job).sets == NODES * 8
    del job, claim
    gc.collect()
    assert kept_bytes(lambda: [estimator.max_available_component_sets(ComponentSetsQuery(
        (Component("w", 1, ReplicaShape(((GPU, 1),), NodeClaim(affinity_terms=(NodeSelectorTerm(
            (NodeSelectorRequirement("pool", "NotIn", values + (f"x{i}",)),)),)), namespace="ns")),), "ns"))
        for i in range(10)]) < querymemo.KEPT_MAX_QUERY_BYTES * 4


SHAPES = [(1, 1, 0), (3, 3, 0), (3, 3, 2), (64, 2, 0), (300, 1, 0), (1024, 1, 0), (8, 60, 0), (3, 100, 4),
          (200, 2, 200)]


def _rss_mb() -> dict[str, float]:
    from estimator.service import procmem  # tests may read /proc; the estimate layer may not

    return procmem.status_mb()


def _reset_peak_rss() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


@pytest.mark.parametrize("packing", ["first-fit", "best"])
@pytest.mark.parametrize("components,names,assumed", SHAPES)
def test_working_bytes_is_at_least_what_an_estimate_holds(packing, components, names, assumed):
    """The peak seen by tracemalloc (Python and numpy objects) and, where the model is large
    enough for pages to show it, the peak RSS (the kernels' own arrays too)."""
    snapshot = member(2000, extended=128).snapshot()  # built before: the member's, not the request's
    kernels.warmup()  # loading the kernels is the process's, once
    estimator = Estimator(lambda: snapshot, packing=packing)
    traced = rss = 0.0
    for i in range(2):  # the first on a snapshot also builds what is kept for the shape
        job = wide_job(components, 100 + i, names, assumed)
        gc.collect()
        peak_reset = _reset_peak_rss()
        before = _rss_mb().get("VmRSS", 0.0)
        tracemalloc.start()
        try:
            estimator.max_available_component_sets(job)
            traced = max(traced, tracemalloc.get_traced_memory()[1])
        finally:
            tracemalloc.stop()
        if peak_reset:
            rss = max(rss, (_rss_mb().get("VmHWM", 0.0) - before) * MI)
    model = estimator.working_bytes(job)
    assert traced <= model
    if model >= 16 * MI:
        assert rss <= model


def test_working_bytes_of_a_replicas_query_counts_its_in_flight_workloads():
    cache = member()
    estimator = Estimator(cache.snapshot, packing="first-fit")
    plain = ReplicasQuery(ReplicaShape((("cpu", 100),)))
    busy = ReplicasQuery(ReplicaShape((("cpu", 100),)), wide_job(1, 100, assumed=50).assumed)
    assert estimator.working_bytes(busy) - estimator.working_bytes(plain) >= 50 * NODES * 8
    gc.collect()
    tracemalloc.start()
    try:
        estimator.max_available_replicas(busy)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak <= estimator.working_bytes(busy)


class Weak:
    pass


def test_identity_memo_values_go_with_their_objects():
    memo = IdentityMemo(lambda obj: bytearray(MI))
    objects = [Weak() for _ in range(5)]
    for obj in objects:
        memo.get(obj)
    assert len(memo) == 5
    del objects, obj
    gc.collect()
    assert len(memo) == 0


class Items(list):
    pass


def test_identity_memo_keeps_only_what_it_admits():
    memo = IdentityMemo(len, admit=lambda size: size < 3)
    small, large = Items([1]), Items([1, 2, 3])
    assert memo.get(small) == 1 and memo.get(large) == 3
    assert memo.peek(small) == 1 and memo.peek(large) is None
