"""ResourceQuota plugin: free amounts, scopes, per-set demand, in-flight workloads."""

from __future__ import annotations

import numpy as np
import pytest

from estimator.core.model import AssumedWorkload, Component, ComponentSetsQuery, ReplicaShape, ReplicasQuery
from estimator.core.resources import MAX_INT32
from estimator.core.snapshot import ClusterSnapshot, QuotaRecord, ScopeRequirement
from estimator.estimate.framework import Code, EstimateContext
from estimator.estimate.plugins.resourcequota import ResourceQuotaPlugin, free_amounts, quota_applies


def snapshot_with(*quotas: QuotaRecord) -> ClusterSnapshot:
    by_namespace: dict[str, tuple] = {}
    for q in quotas:
        by_namespace[q.namespace] = by_namespace.get(q.namespace, ()) + (q,)
    one = np.ones((1, 1), dtype=np.int64)
    return ClusterSnapshot(
        version=1, node_names=("n1",), resource_names=("pods",), allocatable=one, available=one.copy(),
        node_class=np.zeros(1, dtype=np.int32), classes=(), quotas=by_namespace, workloads=None,
    )


def quota(name="q", namespace="ml", hard=None, used=None, scopes=()):
    return QuotaRecord(namespace, name, tuple(scopes), dict(hard or {}), dict(used or {}))


def shape(cpu=0, memory=0, gpu=0, priority_class="", namespace="ml"):
    requests = tuple((k, v) for k, v in (("cpu", cpu), ("memory", memory), ("nvidia.com/gpu", gpu)) if v)
    return ReplicaShape(tuple(sorted(requests)), namespace=namespace, priority_class=priority_class)


def train(gpu_per_worker=1, priority_class=""):
    return (
        Component("master", 1, shape(cpu=50, memory=32 << 20, priority_class=priority_class)),
        Component("worker", 2, shape(cpu=50, memory=32 << 20, gpu=gpu_per_worker, priority_class=priority_class)),
    )


def sets(*quotas, components=None, namespace="ml", assumed=()):
    ctx = EstimateContext(snapshot_with(*quotas))
    query = ComponentSetsQuery(components if components is not None else train(), namespace, tuple(assumed))
    return ResourceQuotaPlugin().estimate_components(ctx, query)


SETS_CASES = [
    ("no quota in the namespace places no constraint", [], MAX_INT32),
    ("a gpu quota divides free gpus by the gpus of one set",
     [quota(hard={"requests.nvidia.com/gpu": 8}, used={"requests.nvidia.com/gpu": 1})], 3),
    ("a cpu quota counts millicores of all replicas of a set",
     [quota(hard={"requests.cpu": 1000}, used={"requests.cpu": 700})], 2),
    ("plain cpu and requests.cpu both bound cpu and the tighter one wins",
     [quota(hard={"cpu": 10_000, "requests.cpu": 300}, used={"cpu": 0, "requests.cpu": 0})], 2),
    ("a pods quota counts one pod per replica",
     [quota(hard={"pods": 10}, used={"pods": 4})], 2),
    ("count/pods is a pods quota too",
     [quota(hard={"count/pods": 3}, used={"count/pods": 0})], 1),
    ("a limits quota bounds by the request, which no limit is below (one set: 150m cpu)",
     [quota(hard={"limits.cpu": 1000}, used={"limits.cpu": 600})], 2),
    ("limits of a resource a pod cannot limit do not bound",
     [quota(hard={"limits.nvidia.com/gpu": 1}, used={"limits.nvidia.com/gpu": 1})], MAX_INT32),
    ("requests, plain and limits of one resource: the tightest wins",
     [quota(hard={"cpu": 10_000, "requests.cpu": 10_000, "limits.cpu": 400},
            used={"cpu": 0, "requests.cpu": 0, "limits.cpu": 0})], 2),
    ("an entry without a used amount is skipped, as Karmada does",
     [quota(hard={"requests.cpu": 1})], MAX_INT32),
    ("quota already over its hard limit admits nothing",
     [quota(hard={"requests.memory": 1 << 20}, used={"requests.memory": 2 << 20})], 0),
    ("the smallest of several quotas wins",
     [quota("a", hard={"pods": 100}, used={"pods": 0}), quota("b", hard={"requests.nvidia.com/gpu": 2}, used={"requests.nvidia.com/gpu": 0})], 1),
    ("a quota in another namespace does not apply",
     [quota(namespace="other", hard={"pods": 0}, used={"pods": 0})], MAX_INT32),
]


@pytest.mark.parametrize("name,quotas,expected", SETS_CASES, ids=[c[0] for c in SETS_CASES])
def test_component_sets_against_quotas(name, quotas, expected):
    result = sets(*quotas)
    assert result.value == expected
    assert (result.code is Code.UNSCHEDULABLE) == (expected == 0)


def test_priority_class_scope_applies_only_to_matching_components():
    scoped = quota(hard={"requests.nvidia.com/gpu": 2}, used={"requests.nvidia.com/gpu": 0},
                   scopes=[ScopeRequirement("PriorityClass", "In", ("high",))])
    assert sets(scoped, components=train(priority_class="high")).value == 1
    assert sets(scoped, components=train(priority_class="low")).value == MAX_INT32
    assert sets(scoped, components=train(priority_class="")).value == MAX_INT32


@pytest.mark.parametrize(
    "scope,priority_class,applies",
    [
        (ScopeRequirement("PriorityClass", "Exists"), "high", True),
        (ScopeRequirement("PriorityClass", "Exists"), "", False),
        (ScopeRequirement("PriorityClass", "DoesNotExist"), "", True),
        (ScopeRequirement("PriorityClass", "NotIn", ("high",)), "low", True),
        (ScopeRequirement("PriorityClass", "NotIn", ("high",)), "high", False),
        (ScopeRequirement("Terminating", "Exists"), "high", False),
        (ScopeRequirement("NotTerminating", "Exists"), "", True),
        (ScopeRequirement("CrossNamespacePodAffinity", "Exists"), "", False),
    ],
    ids=lambda v: str(v),
)
def test_priority_class_scopes_follow_karmada_and_deadline_scopes_kubernetes(scope, priority_class, applies):
    # A request carries no activeDeadlineSeconds and no pod affinity: NotTerminating holds, the others not.
    assert quota_applies(quota(scopes=[scope]), shape(cpu=100, priority_class=priority_class)) is applies


@pytest.mark.parametrize("scope,cpu,memory,applies", [
    ("BestEffort", 0, 0, True),
    ("BestEffort", 100, 0, False),
    ("NotBestEffort", 0, 1 << 20, True),
    ("NotBestEffort", 0, 0, False),
], ids=lambda v: str(v))
def test_best_effort_scopes_follow_the_requested_cpu_and_memory(scope, cpu, memory, applies):
    assert quota_applies(quota(scopes=[ScopeRequirement(scope, "Exists")]), shape(cpu=cpu, memory=memory)) is applies


def test_scopes_are_anded_as_kubernetes_does():
    both = quota(scopes=[ScopeRequirement("PriorityClass", "In", ("high",)), ScopeRequirement("Terminating", "Exists")])
    assert not quota_applies(both, shape(cpu=1, priority_class="high"))
    both = quota(scopes=[ScopeRequirement("PriorityClass", "In", ("high",)), ScopeRequirement("NotBestEffort", "Exists")])
    assert quota_applies(both, shape(cpu=1, priority_class="high"))
    assert not quota_applies(both, shape(cpu=1, priority_class="low"))


def test_ephemeral_storage_and_hugepages_quotas_bound():
    one = ReplicaShape((("cpu", 10), ("ephemeral-storage", 4 << 30), ("hugepages-2Mi", 256 << 20)), namespace="ml")
    components = (Component("worker", 2, one),)
    storage = quota(hard={"requests.ephemeral-storage": 20 << 30}, used={"requests.ephemeral-storage": 0})
    assert sets(storage, components=components).value == 2
    huge = quota(hard={"requests.hugepages-2Mi": 1 << 30}, used={"requests.hugepages-2Mi": 0})
    assert sets(huge, components=components).value == 2


def test_in_flight_workloads_use_quota_first():
    gpu_quota = quota(hard={"requests.nvidia.com/gpu": 6}, used={"requests.nvidia.com/gpu": 0})
    in_flight = AssumedWorkload("ml", train(gpu_per_worker=2))
    assert sets(gpu_quota).value == 3
    assert sets(gpu_quota, assumed=[in_flight]).value == 1
    other_namespace = AssumedWorkload("elsewhere", train(gpu_per_worker=2))
    assert sets(gpu_quota, assumed=[other_namespace]).value == 3


def test_in_flight_pods_a_quota_refuses_take_nothing_from_it():
    # Quota admission refuses each in-flight worker (3 GPUs > 2 free): they never exist, so the
    # 2 GPUs stay for the job (2 workers x 1 GPU): 1 set. The master (no GPU) is admitted.
    gpu_quota = quota(hard={"requests.nvidia.com/gpu": 2}, used={"requests.nvidia.com/gpu": 0})
    assert sets(gpu_quota, assumed=[AssumedWorkload("ml", train(gpu_per_worker=3))]).value == 1


def test_in_flight_pods_are_admitted_one_at_a_time_against_every_quota():
    # The job: master (no GPU) + 2 workers x 1 GPU = 2 GPUs and 3 pods a set.
    # 5 GPUs free; in flight: master + 2 workers x 2 GPUs, all admitted: 1 GPU left, 0 sets.
    gpus = quota("g", hard={"requests.nvidia.com/gpu": 5}, used={"requests.nvidia.com/gpu": 0})
    in_flight = AssumedWorkload("ml", train(gpu_per_worker=2))
    assert sets(gpus, assumed=[in_flight]).value == 0
    # With a quota of 2 pods, only the in-flight master and one worker are admitted: 3 GPUs
    # stay, but no pod slot does: 0 sets, and the pods quota says why.
    pods = quota("p", hard={"pods": 2}, used={"pods": 0})
    result = sets(gpus, pods, assumed=[in_flight])
    assert result.value == 0 and result.reason.startswith("ResourceQuota ml/p: pods free 0")


def test_a_pod_refused_by_one_quota_takes_nothing_from_another():
    # In flight: one worker {200m cpu, 2 GPUs}; the cpu quota has 100m free, so admission refuses
    # it whole and the GPU quota keeps its 2 GPUs. The job's worker {50m, 2 GPUs}: GPUs 2 // 2
    # = 1, cpu 100 // 50 = 2: 1 set (deducting the refused pod from the GPU quota would give 0).
    gpus = quota("g", hard={"requests.nvidia.com/gpu": 2}, used={"requests.nvidia.com/gpu": 0})
    cpu = quota("c", hard={"requests.cpu": 1000}, used={"requests.cpu": 900})
    in_flight = AssumedWorkload("ml", (Component("worker", 1, shape(cpu=200, gpu=2)),))
    job = (Component("worker", 1, shape(cpu=50, gpu=2)),)
    assert sets(gpus, cpu, assumed=[in_flight], components=job).value == 1
    assert sets(gpus, assumed=[in_flight], components=job).value == 0  # without the cpu quota it is admitted


def test_replicas_use_the_request_namespace_and_one_replica_demand():
    ctx = EstimateContext(snapshot_with(quota(hard={"requests.cpu": 1000}, used={"requests.cpu": 0})))
    plugin = ResourceQuotaPlugin()
    assert plugin.estimate_replicas(ctx, ReplicasQuery(shape(cpu=300))).value == 3
    assert plugin.estimate_replicas(ctx, ReplicasQuery(shape(cpu=300, namespace="x"))).value == MAX_INT32
    assert plugin.estimate_replicas(ctx, ReplicasQuery(None)).value == MAX_INT32


def test_free_amounts_ignore_storage_and_object_counts():
    q = quota(hard={"requests.storage": 5, "count/secrets": 3, "services": 1, "requests.cpu": 9},
              used={"requests.storage": 0, "count/secrets": 0, "services": 0, "requests.cpu": 4})
    assert free_amounts(q) == {"cpu": 5}
