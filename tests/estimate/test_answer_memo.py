"""Answers remembered per snapshot (estimate._AnswerMemo): a repeat on the same snapshot runs
no plugin and answers the same; any change to the member (a new snapshot) is answered afresh;
the memo never keeps a replaced snapshot alive; repeats are not counted as plugin runs."""

from __future__ import annotations

import gc
import weakref

from estimator.cluster.cache import ClusterCache
from estimator.core.model import Component, ComponentSetsQuery, ReplicaShape, ReplicasQuery
from estimator.estimate.estimate import ANSWERS_PER_SNAPSHOT, Estimator, default_framework
from estimator.estimate.framework import Framework
from estimator.pb import estimator_pb2 as pb
from estimator.service import metrics as m
from estimator.service.servicer import EstimatorServicer
from tests.support.builders import node, pod, quota
from tests.support.cachemutators import delete_pod, upsert_node, upsert_pod, upsert_quota

MI = 2**20


def job(gpus: int) -> ComponentSetsQuery:
    worker = Component("worker", 2, ReplicaShape((("cpu", 100), ("nvidia.com/gpu", gpus)), namespace="ml-team"))
    return ComponentSetsQuery((worker,), "ml-team")


class Counting:
    """Wraps a real plugin and counts its runs."""

    def __init__(self, plugin):
        self.plugin, self.NAME, self.runs = plugin, plugin.NAME, 0

    def estimate_components(self, ctx, query):
        self.runs += 1
        return self.plugin.estimate_components(ctx, query)

    def estimate_replicas(self, ctx, query):
        self.runs += 1
        return self.plugin.estimate_replicas(ctx, query)


def counting_estimator(snapshots, packing="first-fit"):
    plugins = [Counting(p) for p in default_framework().components_plugins]
    return Estimator(snapshots, packing=packing, framework=Framework(plugins, plugins)), plugins


def gpu_member(gpus_per_node=(8, 4)) -> ClusterCache:
    cache = ClusterCache()
    for i, gpus in enumerate(gpus_per_node):
        upsert_node(cache, node(f"gpu-{i}").cpu(16).memory("64Gi").gpu(gpus).build())
    return cache


def test_a_repeat_on_the_same_snapshot_runs_no_plugin_and_answers_the_same():
    cache = gpu_member()
    for packing in ("first-fit", "best"):
        estimator, plugins = counting_estimator(cache.snapshot, packing)
        first = estimator.max_available_component_sets(job(1))
        again = estimator.max_available_component_sets(job(1))
        assert first.sets == again.sets == 6  # 12 GPUs / 2 per set
        assert [p.runs for p in plugins] == [1, 1]
        assert first.outcome.durations and not again.outcome.durations
        assert again.witness() == first.witness() and again.bound == first.bound
        # A different request is a different answer.
        assert estimator.max_available_component_sets(job(2)).sets == 3
        assert [p.runs for p in plugins] == [2, 2]


def test_every_change_to_the_member_is_answered_afresh():
    cache = gpu_member()
    estimator, plugins = counting_estimator(cache.snapshot)
    assert estimator.max_available_component_sets(job(1)).sets == 6
    upsert_pod(cache, pod("ml-team", "busy").on("gpu-0").requests(cpu="1", **{"nvidia.com/gpu": "6"}).build())
    assert estimator.max_available_component_sets(job(1)).sets == 3  # 2 + 4 GPUs left
    upsert_quota(cache, quota("ml-team", "q").hard("requests.nvidia.com/gpu", 2).used("requests.nvidia.com/gpu", 0)
                       .build())
    assert estimator.max_available_component_sets(job(1)).sets == 1
    delete_pod(cache, "ml-team", "busy")
    assert estimator.max_available_component_sets(job(1)).sets == 1  # still the quota
    assert [p.runs for p in plugins] == [4, 4]


def test_replica_answers_are_remembered_too():
    cache = gpu_member()
    estimator, plugins = counting_estimator(cache.snapshot)
    query = ReplicasQuery(ReplicaShape((("nvidia.com/gpu", 4),), namespace="ml-team"))
    first, _ = estimator.max_available_replicas(query)
    again, outcome = estimator.max_available_replicas(query)
    assert first == again == 3 and not outcome.durations
    assert [p.runs for p in plugins] == [1, 1]
    upsert_node(cache, node("gpu-2").cpu(16).memory("64Gi").gpu(4).build())
    assert estimator.max_available_replicas(query)[0] == 4


def test_the_memo_is_bounded_and_evicts_the_oldest_answer():
    cache = gpu_member((64,))
    estimator, plugins = counting_estimator(cache.snapshot)
    queries = [job(g) for g in range(1, ANSWERS_PER_SNAPSHOT + 2)]
    answers = [estimator.max_available_component_sets(q).sets for q in queries]
    assert answers == [64 // (2 * g) for g in range(1, ANSWERS_PER_SNAPSHOT + 2)]
    runs = plugins[0].runs
    estimator.max_available_component_sets(queries[-1])  # the newest: remembered
    assert plugins[0].runs == runs
    assert estimator.max_available_component_sets(queries[0]).sets == 32  # the oldest: evicted, recomputed
    assert plugins[0].runs == runs + 1


def test_a_replaced_snapshot_is_not_kept_alive_by_the_memo():
    cache = gpu_member()
    estimator, _ = counting_estimator(cache.snapshot)
    estimator.max_available_component_sets(job(1))
    old = weakref.ref(cache.snapshot())
    upsert_node(cache, node("cpu-0").cpu(4).memory("8Gi").build())
    cache.snapshot()  # the cache lets go of the old snapshot
    gc.collect()
    assert old() is None


class _Context:
    def invocation_metadata(self):
        return ()

    def abort(self, code, message):
        raise AssertionError(f"{code}: {message}")

    def set_trailing_metadata(self, metadata):
        self.trailers = metadata


def _samples(metrics: m.EstimatorMetrics, name: str) -> float:
    return sum(s.value for family in metrics.registry.collect() for s in family.samples if s.name == name)


def test_repeats_count_as_requests_but_not_as_plugin_runs():
    cache = gpu_member()
    metrics = m.EstimatorMetrics()
    servicer = EstimatorServicer("member", Estimator(cache.snapshot, packing="first-fit"), metrics)
    worker = pb.Component(name="worker", replicas=2, replicaRequirements=pb.ComponentReplicaRequirements(
        resourceRequest={"nvidia.com/gpu": {"string": "1"}}))
    request = pb.MaxAvailableComponentSetsRequest(cluster="member", namespace="ml-team", components=[worker])
    answers = [servicer.MaxAvailableComponentSets(request, _Context()).maxSets for _ in range(3)]
    assert answers == [6, 6, 6]
    assert _samples(metrics, f"{m.SUBSYSTEM}_estimating_request_total") == 3
    plugin_runs = f"{m.SUBSYSTEM}_estimating_plugin_execution_duration_seconds_count"
    assert _samples(metrics, plugin_runs) == 2  # both plugins, once


def test_in_flight_usage_never_leaks_into_the_quota_free_amounts_kept_per_snapshot():
    from estimator.core.model import AssumedWorkload

    cache = gpu_member((64,))
    upsert_quota(cache, quota("ml-team", "q").hard("requests.nvidia.com/gpu", 8).used("requests.nvidia.com/gpu", 2)
                       .build())
    estimator = Estimator(cache.snapshot, packing="first-fit")
    in_flight = AssumedWorkload("ml-team", job(2).components)  # 4 GPUs of the 6 free
    with_assumed = ComponentSetsQuery(job(1).components, "ml-team", (in_flight,))
    for _ in range(2):
        assert estimator.max_available_component_sets(with_assumed).sets == 1  # 2 GPUs left / 2 per set
        assert estimator.max_available_component_sets(job(1)).sets == 3  # 6 GPUs / 2 per set
        estimator = Estimator(cache.snapshot, packing="first-fit")  # again without the answer memo


def test_concurrent_requests_on_changing_snapshots_get_their_own_answers():
    import threading

    cache = gpu_member((64,))
    estimator = Estimator(cache.snapshot, packing="first-fit")
    wrong: list = []

    def ask(offset: int) -> None:
        for i in range(150):
            g = 1 + (i + offset) % (ANSWERS_PER_SNAPSHOT + 4)
            estimate = estimator.max_available_component_sets(job(g))
            snapshot = estimate.snapshot  # one node: a set is 2 pods, 200m cpu and 2g GPUs
            free = {name: int(snapshot.available[0, snapshot.column(name)])
                    for name in ("pods", "cpu", "nvidia.com/gpu")}
            expected = min(free["pods"] // 2, free["cpu"] // 200, free["nvidia.com/gpu"] // (2 * g))
            if estimate.sets != expected:
                wrong.append((g, estimate.sets, expected))

    def churn() -> None:
        for i in range(20):
            upsert_pod(cache, pod("ml-team", f"p{i}").on("gpu-0").requests(cpu="10m", **{"nvidia.com/gpu": "1"}).build())

    threads = [threading.Thread(target=ask, args=(k,)) for k in range(4)] + [threading.Thread(target=churn)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not wrong
    assert estimator.max_available_component_sets(job(1)).sets == 22  # 44 GPUs left after the 20 pods
