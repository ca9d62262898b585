"""Volcano Job gangs as Volcano admits them, FlinkDeployment read as Karmada reads it under
--karmada-compatible, and the XGBoostJob, PaddleJob and LeaderWorkerSet interpreters.

Expected values come from the projects' own rules: Volcano's admission webhook (a task's
minAvailable defaults to its replicas, the job's to their sum) and its design note on min
members (job minAvailable above the tasks' sum takes extra pods in task order, below it the
first pods in task order); Karmada's Lua for FlinkDeployment (memory through
kube.getResourceQuantity, a Kubernetes quantity string); the training operator's defaulting
(replicas 1, replica type keys in any case); LeaderWorkerSet's groups x size.
"""

from __future__ import annotations

import pytest

from scheduler_client.interpreters import InterpretError, interpret
from scheduler_client.interpreters.volcano import gang_counts
from tests.client.test_interpreters import amounts, flink, job, summary, template


def vtask(name, replicas=None, min_available=None, cpu="100m"):
    out = {"name": name, "template": template(requests={"cpu": cpu})}
    if replicas is not None:
        out["replicas"] = replicas
    if min_available is not None:
        out["minAvailable"] = min_available
    return out


def volcano(tasks, min_available=None):
    spec = {"tasks": tasks}
    if min_available is not None:
        spec["minAvailable"] = min_available
    return job("batch.volcano.sh/v1alpha1", "Job", spec)


def counts(manifest, karmada_compatible=False):
    return [(name, n) for name, n, _ in summary(manifest, karmada_compatible=karmada_compatible)]


# master: 2 replicas, worker: 2 replicas (the example of Volcano's design note)
VOLCANO = [
    ("Tasks without minAvailable need all their replicas", None, None, None, [("master", 2), ("worker", 2)]),
    ("A task minAvailable is kept and the job's defaults to the sum", None, None, 1, [("master", 2), ("worker", 1)]),
    ("A job minAvailable equal to the tasks' sum changes nothing", 3, None, 1, [("master", 2), ("worker", 1)]),
    ("A job minAvailable above the tasks' sum takes extra pods in task order", 3, 1, 1,
     [("master", 2), ("worker", 1)]),
    ("A job minAvailable below the tasks' sum takes the first pods in task order", 2, None, 1,
     [("master", 2), ("worker", 0)]),
    ("A job minAvailable below the sum with a small first task", 2, 1, None, [("master", 1), ("worker", 1)]),
]


@pytest.mark.parametrize("job_min,master_min,worker_min,expected", [c[1:] for c in VOLCANO],
                         ids=[c[0] for c in VOLCANO])
def test_volcano_gang_as_volcano_admits_it(job_min, master_min, worker_min, expected):
    manifest = volcano([vtask("master", 2, master_min), vtask("worker", 2, worker_min, cpu="200m")], job_min)
    assert counts(manifest) == expected


def test_karmada_reads_minavailable_default_1_and_ignores_the_job_minavailable():
    manifest = volcano([vtask("master", 2), vtask("worker", 2, 1)], 4)
    assert counts(manifest, karmada_compatible=True) == [("master", 1), ("worker", 1)]
    result = interpret(manifest, karmada_compatible=True)
    assert any("Volcano's gang in the member needs master 2, worker 2" in n for n in result.notes)
    assert any("Karmada's interpreter counts master 1, worker 1" in n for n in interpret(manifest).notes)


def test_no_note_when_both_readings_agree():
    assert interpret(volcano([vtask("a", 1), vtask("b", 3, 3)])).notes == ()


@pytest.mark.parametrize("manifest,field", [
    (volcano([vtask("a", 1, 2)]), "spec.tasks[0].minAvailable"),
    (volcano([vtask("a", 1), vtask("b", 1)], 3), "spec.minAvailable"),
], ids=["A task minAvailable above its replicas is refused", "A job minAvailable above all replicas is refused"])
def test_jobs_volcano_refuses_name_the_field(manifest, field):
    with pytest.raises(InterpretError) as error:
        interpret(manifest)
    assert error.value.field == field


@pytest.mark.parametrize("replicas,mins,job_min,expected", [
    ([3, 4], [None, None], 0, [3, 4]),
    ([3, 4], [1, 1], 5, [3, 2]),  # extra 3: the first task takes 2 (up to 3), the second 1
    ([3, 4], [None, 2], 4, [3, 1]),
])
def test_gang_counts(replicas, mins, job_min, expected):
    assert gang_counts(replicas, mins, job_min) == expected


# --- FlinkDeployment under --karmada-compatible ------------------------------------------


FLINK = [
    # kube.getResourceQuantity("2048m") = 2.048, a quantity whose Value() rounds up to 3 bytes.
    ("2048m is 2.048 bytes to Karmada", "2048m", 3, 2048 * 2**20),
    ("A Kubernetes quantity reads the same both ways", "2Gi", 2 * 2**30, 2 * 2**30),
    # Flink's sizes ignore case and are binary; Kubernetes' G is decimal.
    ("1G is a gigabyte to Karmada and a gibibyte to Flink", "1G", 10**9, 2**30),
]


@pytest.mark.parametrize("memory,karmada,flink_bytes", [c[1:] for c in FLINK], ids=[c[0] for c in FLINK])
def test_flink_memory_as_karmada_reads_it(memory, karmada, flink_bytes):
    manifest = flink(1, 1, memory=memory)
    assert dict(interpret(manifest, karmada_compatible=True).components[0].shape.requests)["memory"] == karmada
    assert dict(interpret(manifest).components[0].shape.requests)["memory"] == flink_bytes
    notes = interpret(manifest, karmada_compatible=True).notes
    assert bool(notes) == (karmada != flink_bytes)
    if notes:
        assert "the Flink operator gives the pod" in notes[0]


@pytest.mark.parametrize("memory", ["2g", 2147483648], ids=["A Flink-only size", "A bare number"])
def test_flink_memory_karmada_cannot_read_is_an_error_on_the_field(memory):
    with pytest.raises(InterpretError) as error:
        interpret(flink(1, 1, memory=memory), karmada_compatible=True)
    assert error.value.field == "spec.jobManager.resource.memory" and "GetComponents fails" in error.value.message


def test_flink_under_karmada_reading_drops_node_affinity_and_component_pod_templates():
    affinity = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}]}}}
    manifest = flink(1, 1, memory="2Gi", pod_template={"spec": {"nodeSelector": {"pool": "shared"}, "affinity": affinity}},
                     tm_pod_template={"spec": {"nodeSelector": {"pool": "own"}}})
    ours = interpret(manifest).components
    theirs = interpret(manifest, karmada_compatible=True).components
    assert ours[0].shape.claim.affinity_terms is not None and ours[1].shape.claim.node_selector == (("pool", "own"),)
    assert all(c.shape.claim.affinity_terms is None for c in theirs)
    assert [c.shape.claim.node_selector for c in theirs] == [(("pool", "shared"),)] * 2


# --- XGBoostJob, PaddleJob, LeaderWorkerSet ----------------------------------------------


def replica(count=None, cpu="1"):
    out = {"template": template(requests={"cpu": cpu})}
    if count is not None:
        out["replicas"] = count
    return out


KUBEFLOW = [
    ("An XGBoostJob has a master and its workers", "XGBoostJob", "xgbReplicaSpecs",
     {"Master": replica(1, "2"), "Worker": replica(3)}, [("master", 1, amounts(cpu="2")), ("worker", 3, amounts(cpu="1"))]),
    ("XGBoostJob replica types in any case, replicas default 1", "XGBoostJob", "xgbReplicaSpecs",
     {"worker": replica(None), "MASTER": replica(None, "2")},
     [("master", 1, amounts(cpu="2")), ("worker", 1, amounts(cpu="1"))]),
    ("A PaddleJob has a master and its workers", "PaddleJob", "paddleReplicaSpecs",
     {"Worker": replica(4, "500m"), "Master": replica(1)},
     [("master", 1, amounts(cpu="1")), ("worker", 4, amounts(cpu="500m"))]),
    ("A PaddleJob of workers only", "PaddleJob", "paddleReplicaSpecs", {"Worker": replica(2)},
     [("worker", 2, amounts(cpu="1"))]),
]


@pytest.mark.parametrize("kind,field,specs,expected", [c[1:] for c in KUBEFLOW], ids=[c[0] for c in KUBEFLOW])
def test_xgboost_and_paddle_jobs(kind, field, specs, expected):
    assert summary(job("kubeflow.org/v1", kind, {field: specs})) == expected


def lws(replicas=None, size=None, leader=True):
    tmpl = {"workerTemplate": template(requests={"cpu": "1", "nvidia.com/gpu": "8"})}
    if leader:
        tmpl["leaderTemplate"] = template(requests={"cpu": "2"})
    if size is not None:
        tmpl["size"] = size
    spec = {"leaderWorkerTemplate": tmpl}
    if replicas is not None:
        spec["replicas"] = replicas
    return job("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", spec)


LWS = [
    ("Every group has a leader and size minus one workers", lws(2, 4),
     [("leader", 2, amounts(cpu="2")), ("worker", 6, amounts(cpu="1", gpu="8"))]),
    ("Replicas and size default to 1: one leader", lws(), [("leader", 1, amounts(cpu="2"))]),
    ("Without a leader template the leader runs the worker template", lws(1, 2, leader=False),
     [("leader", 1, amounts(cpu="1", gpu="8")), ("worker", 1, amounts(cpu="1", gpu="8"))]),
]


@pytest.mark.parametrize("manifest,expected", [c[1:] for c in LWS], ids=[c[0] for c in LWS])
def test_leaderworkerset(manifest, expected):
    assert summary(manifest) == expected


@pytest.mark.parametrize("manifest,field", [
    (lws(1, 0), "spec.leaderWorkerTemplate.size"),
    (job("leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", {"leaderWorkerTemplate": {"size": 2}}),
     "spec.leaderWorkerTemplate.workerTemplate"),
], ids=["A size of 0 is refused", "A missing worker template is refused"])
def test_bad_leaderworkersets_name_the_field(manifest, field):
    with pytest.raises(InterpretError) as error:
        interpret(manifest)
    assert error.value.field == field
