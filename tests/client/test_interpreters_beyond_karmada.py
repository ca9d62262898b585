"""Interpreters for kinds Karmada has no interpreter for: JobSet and TrainJob."""

from __future__ import annotations

import pytest

from estimator.core.model import Toleration
from scheduler_client.interpreters import interpret
from tests.client.test_interpreters import amounts, job, summary, template


# --- beyond Karmada: JobSet, TrainJob ---------------------------------------------------


def replicated_job(name, replicas=None, parallelism=None, completions=None, requests=None, labels=None, **extra):
    job_spec = {"template": template(requests=requests or {"cpu": "1"})}
    if parallelism is not None:
        job_spec["parallelism"] = parallelism
    if completions is not None:
        job_spec["completions"] = completions
    out = {"name": name, "template": {"spec": job_spec}, **extra}
    if labels:
        out["template"]["metadata"] = {"labels": labels}
    if replicas is not None:
        out["replicas"] = replicas
    return out


JOBSET_CASES = [
    ("each replicated job runs replicas x parallelism pods",
     [replicated_job("driver", 1, requests={"cpu": "2"}), replicated_job("workers", 2, 4, 4, {"cpu": "1", "nvidia.com/gpu": "1"})],
     [("driver", 1, amounts(cpu="2")), ("workers", 8, amounts(cpu="1", gpu="1"))]),
    ("replicas and parallelism default to 1", [replicated_job("solo")], [("solo", 1, amounts(cpu="1"))]),
    ("completions below parallelism cap the pods at once", [replicated_job("w", 3, 4, 2)], [("w", 6, amounts(cpu="1"))]),
]


@pytest.mark.parametrize("jobs,expected", [c[1:] for c in JOBSET_CASES], ids=[c[0] for c in JOBSET_CASES])
def test_jobset(jobs, expected):
    assert summary(job("jobset.x-k8s.io/v1alpha2", "JobSet", {"replicatedJobs": jobs})) == expected


def test_a_jobset_dependency_is_counted_conservatively_and_said():
    manifest = job("jobset.x-k8s.io/v1alpha2", "JobSet", {"replicatedJobs": [
        replicated_job("init"), replicated_job("train", dependsOn=[{"name": "init", "status": "Complete"}])]})
    result = interpret(manifest)
    assert [c.name for c in result.components] == ["init", "train"]
    assert "conservative" in result.notes[0]


def trainjob(num_nodes=None, resources=None, overrides=None, runtime="torch-distributed"):
    spec = {"runtimeRef": {"name": runtime}, "trainer": {}}
    if num_nodes is not None:
        spec["trainer"]["numNodes"] = num_nodes
    if resources is not None:
        spec["trainer"]["resourcesPerNode"] = resources
    if overrides is not None:
        spec["podSpecOverrides"] = overrides
    return job("trainer.kubeflow.org/v1alpha1", "TrainJob", spec)


def runtime(name="torch-distributed", num_nodes=1, jobs=None, mpi=None):
    policy = {"numNodes": num_nodes, **({"mpi": mpi} if mpi else {"torch": {"numProcPerNode": "auto"}})}
    return {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "ClusterTrainingRuntime", "metadata": {"name": name},
            "spec": {"mlPolicy": policy, "template": {"spec": {"replicatedJobs": jobs or [
                replicated_job("dataset-initializer", 1, requests={"cpu": "500m"}),
                replicated_job("node", 1, requests={"cpu": "1"},
                               labels={"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"},
                               dependsOn=[{"name": "dataset-initializer", "status": "Complete"}]),
            ]}}}}


GPU_NODE = {"requests": {"cpu": "4", "nvidia.com/gpu": "2"}, "limits": {"nvidia.com/gpu": "2"}}
TRAINJOB_CASES = [
    ("with its runtime, every replicated job is a component and the trainer runs numNodes pods",
     trainjob(3, GPU_NODE), [runtime()],
     [("dataset-initializer", 1, amounts(cpu="500m")), ("node", 3, amounts(cpu="4", gpu="2"))]),
    ("numNodes comes from the runtime when the TrainJob does not set it",
     trainjob(None, None), [runtime(num_nodes=2)],
     [("dataset-initializer", 1, amounts(cpu="500m")), ("node", 2, amounts(cpu="1"))]),
    ("with MPI runLauncherAsNode the launcher is one of the nodes",
     trainjob(4, None, runtime="mpi"),
     [runtime("mpi", jobs=[replicated_job("launcher", 1, requests={"cpu": "1"}), replicated_job("node", 1)],
              mpi={"runLauncherAsNode": True})],
     [("launcher", 1, amounts(cpu="1")), ("node", 3, amounts(cpu="1"))]),
    ("without its runtime only the trainer nodes are counted",
     trainjob(2, GPU_NODE), [], [("node", 2, amounts(cpu="4", gpu="2"))]),
]


@pytest.mark.parametrize("manifest,related,expected", [c[1:] for c in TRAINJOB_CASES], ids=[c[0] for c in TRAINJOB_CASES])
def test_trainjob(manifest, related, expected):
    assert summary(manifest, related) == expected


def test_a_trainjob_without_its_runtime_says_what_it_could_not_count():
    notes = interpret(trainjob(2, GPU_NODE)).notes
    assert "ClusterTrainingRuntime/torch-distributed" in notes[0] and "not in the job file" in notes[0]


def test_pod_spec_overrides_reach_the_jobs_they_target():
    overrides = [{"targetJobs": [{"name": "node"}], "nodeSelector": {"gpu": "a100"},
                  "tolerations": [{"key": "gpu", "operator": "Exists"}]}]
    initializer, node = interpret(trainjob(2, GPU_NODE, overrides), [runtime()]).components
    assert node.shape.claim.node_selector == (("gpu", "a100"),)
    assert node.shape.claim.tolerations == (Toleration("gpu", "Exists"),)
    assert initializer.shape.claim.is_empty
