"""The node-resource plugin keeps per snapshot what depends only on the snapshot and the
request's shape (gathered columns, request rows and masks): answers stay those of a fresh
snapshot, consuming kernels never touch the shared arrays, and the kept entries are bounded
whatever resource names callers send."""

from __future__ import annotations

import numpy as np

from estimator.cluster.cache import ClusterCache
from estimator.core.model import AssumedWorkload, Component, ComponentSetsQuery, ReplicaShape, ReplicasQuery
from estimator.estimate.framework import EstimateContext
from estimator.estimate.plugins import noderesource as nr
from estimator.estimate.requeststate import GATHERED, PACKINGS
from tests.support.builders import node, pod
from tests.support.cachemutators import upsert_node, upsert_pod


def member() -> ClusterCache:
    cache = ClusterCache()
    for i, gpus in enumerate((8, 4, 2, 8, 1)):
        upsert_node(cache, node(f"gpu-{i}").cpu(16).memory("64Gi").gpu(gpus).build())
    upsert_pod(cache, pod("ml-team", "busy").on("gpu-0").requests(cpu="3", **{"nvidia.com/gpu": "3"}).build())
    return cache


def shape(cpu: int, gpus: int, **extra: int) -> ReplicaShape:
    requests = {"cpu": cpu, "nvidia.com/gpu": gpus, **extra}
    return ReplicaShape(tuple(sorted(requests.items())), namespace="ml-team")


def jobs() -> list[ComponentSetsQuery]:
    master = Component("master", 1, shape(2000, 0))
    workers = [Component("worker", 2, shape(1000, g)) for g in (1, 2, 3)]
    inflight = (AssumedWorkload("ml-team", (Component("worker", 3, shape(1000, 2)),)),)
    out = [ComponentSetsQuery((master, w), "ml-team") for w in workers]
    out += [ComponentSetsQuery((w,), "ml-team") for w in workers]
    out.append(ComponentSetsQuery((master, workers[0]), "ml-team", assumed=inflight))
    return out


def answer(snapshot, packing: str, query) -> tuple:
    ctx = EstimateContext(snapshot, packing, None)
    if isinstance(query, ReplicasQuery):
        return (nr.NodeResourcePlugin().estimate_replicas(ctx, query).value,)
    result = nr.NodeResourcePlugin().estimate_components(ctx, query)
    detail = result.detail
    return result.value, detail.placement.tolist(), detail.bound


def test_answers_on_a_shared_snapshot_equal_those_on_a_fresh_one_and_the_shared_columns_stay_untouched():
    cache = member()
    shared = cache.snapshot()
    pristine = shared.available.copy()
    queries = jobs() + [ReplicasQuery(shape(1000, 1)), ReplicasQuery(shape(1000, 2), assumed=jobs()[-1].assumed)]
    for packing in ("first-fit", "best"):
        for _ in range(3):  # later rounds reuse what the first one kept
            for query in queries:
                fresh = member().snapshot()
                assert answer(shared, packing, query) == answer(fresh, packing, query)
    assert np.array_equal(shared.available, pristine)
    kept = GATHERED.entries_on(shared)
    assert kept, "the gathered columns are kept per snapshot"
    for array in kept.values():
        assert not array.flags.writeable


def test_kept_entries_are_bounded_whatever_resource_names_arrive():
    snapshot = member().snapshot()
    for i in range(3 * GATHERED.entries):
        query = ComponentSetsQuery((Component("w", 1, shape(1000, 1, **{f"example.com/r{i}": 1})),), "ml-team")
        assert answer(snapshot, "first-fit", query)[0] == 0  # no node has the resource
    assert len(GATHERED.entries_on(snapshot)) <= GATHERED.entries
    assert len(PACKINGS.entries_on(snapshot)) <= PACKINGS.entries
