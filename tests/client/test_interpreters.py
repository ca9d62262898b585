"""Job interpreters: component names, replica counts and per-replica requirements.

The Karmada cases re-express the situations of Karmada's interpretcomponent-test.yaml for
each kind (pkg/resourceinterpreter/default/thirdparty/resourcecustomizations/...) as our own
tables; beyond Karmada: TrainJob, JobSet, and the places where we read a job more precisely
(each must leave a note on the job).
"""

from __future__ import annotations

import pytest

from estimator.core.model import NodeSelectorRequirement, NodeSelectorTerm, Toleration
from estimator.core.resources import quantity_to_int
from scheduler_client.interpreters import InterpretError, interpret, supported_kinds


# --- builders ---------------------------------------------------------------------------


def template(requests=None, limits=None, containers=1, node_selector=None, tolerations=None, affinity=None,
             priority=None, extra_container=None):
    container = {"name": "main", "image": "img"}
    resources = {}
    if requests:
        resources["requests"] = dict(requests)
    if limits:
        resources["limits"] = dict(limits)
    if resources:
        container["resources"] = resources
    spec = {"containers": [container] + ([extra_container] if extra_container else [])}
    if node_selector:
        spec["nodeSelector"] = node_selector
    if tolerations:
        spec["tolerations"] = tolerations
    if affinity:
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": affinity}}}
    if priority:
        spec["priorityClassName"] = priority
    return {"spec": spec}


def job(api_version, kind, spec, name="j", namespace="ns"):
    return {"apiVersion": api_version, "kind": kind, "metadata": {"name": name, "namespace": namespace}, "spec": spec}


def replica_spec(replicas=None, tmpl=None, **extra):
    out = dict(extra)
    if replicas is not None:
        out["replicas"] = replicas
    if tmpl is not None:
        out["template"] = tmpl
    return out


def summary(manifest, related=(), karmada_compatible=False):
    """[(name, replicas, {resource: amount})] in order."""
    return [(c.name, c.replicas, dict(c.shape.requests))
            for c in interpret(manifest, related, karmada_compatible).components]


def amounts(**quantities):
    """Expected requests in model units: amounts(cpu="500m", memory="256Mi", gpu="1")."""
    out = {}
    for name, text in quantities.items():
        name = {"gpu": "nvidia.com/gpu", "ephemeral": "ephemeral-storage"}.get(name, name)
        out[name] = quantity_to_int(name, text)
    return out


SMALL = dict(requests={"cpu": "500m", "memory": "256Mi"}, limits={"cpu": "1", "memory": "512Mi"})
BIG = dict(requests={"cpu": "1", "memory": "512Mi"}, limits={"cpu": "2", "memory": "1Gi"})
SIDECAR = {"name": "sidecar", "resources": {"requests": {"cpu": "50m", "memory": "64Mi"},
                                            "limits": {"cpu": "100m", "memory": "128Mi"}}}
GPU_TOLERATION = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]


# --- kubeflow.org: PyTorchJob, TFJob, MPIJob ---------------------------------------------

PYTORCH = "kubeflow.org/v1", "PyTorchJob", "pytorchReplicaSpecs"
TF = "kubeflow.org/v1", "TFJob", "tfReplicaSpecs"
MPI = "kubeflow.org/v2beta1", "MPIJob", "mpiReplicaSpecs"


def training(kind, specs):
    api_version, name, field = kind
    return job(api_version, name, {field: specs})


KUBEFLOW_CASES = [
    ("a PyTorchJob with a master and workers gives master then worker",
     training(PYTORCH, {"Worker": replica_spec(4, template(**BIG)), "Master": replica_spec(2, template(**SMALL))}),
     [("master", 2, amounts(cpu="500m", memory="256Mi")), ("worker", 4, amounts(cpu="1", memory="512Mi"))]),
    ("a PyTorchJob with only workers gives one component",
     training(PYTORCH, {"Worker": replica_spec(3, template(**SMALL))}),
     [("worker", 3, amounts(cpu="500m", memory="256Mi"))]),
    ("replica counts written as strings are numbers",
     training(PYTORCH, {"Master": replica_spec("1", template(**SMALL)), "Worker": replica_spec("2", template(**SMALL))}),
     [("master", 1, amounts(cpu="500m", memory="256Mi")), ("worker", 2, amounts(cpu="500m", memory="256Mi"))]),
    ("missing or empty replica counts default to 1",
     training(PYTORCH, {"Master": replica_spec(None, template(**SMALL)), "Worker": replica_spec("", template(**SMALL))}),
     [("master", 1, amounts(cpu="500m", memory="256Mi")), ("worker", 1, amounts(cpu="500m", memory="256Mi"))]),
    ("empty replica specs give no components", training(PYTORCH, {}), []),
    ("a replica type without a template still counts its replicas",
     training(PYTORCH, {"Master": replica_spec(1), "Worker": replica_spec(2)}),
     [("master", 1, {}), ("worker", 2, {})]),
    ("every container of a template is summed",
     training(PYTORCH, {"Master": replica_spec(1, template(**SMALL, extra_container=SIDECAR)),
                        "Worker": replica_spec(2, template(**BIG))}),
     [("master", 1, amounts(cpu="550m", memory="320Mi")), ("worker", 2, amounts(cpu="1", memory="512Mi"))]),
    ("limits stand in for requests that are not given",
     training(PYTORCH, {"Master": replica_spec(1, template(limits={"cpu": "1", "memory": "512Mi"})),
                        "Worker": replica_spec(2, template(limits={"cpu": "2", "memory": "1Gi"}))}),
     [("master", 1, amounts(cpu="1", memory="512Mi")), ("worker", 2, amounts(cpu="2", memory="1Gi"))]),
    ("a TFJob lists ps, worker, chief, master and evaluator in that order",
     training(TF, {"Evaluator": replica_spec(1, template(**SMALL)), "Worker": replica_spec(4, template(**BIG)),
                   "Chief": replica_spec(1, template(**SMALL)), "PS": replica_spec(2, template(**SMALL))}),
     [("ps", 2, amounts(cpu="500m", memory="256Mi")), ("worker", 4, amounts(cpu="1", memory="512Mi")),
      ("chief", 1, amounts(cpu="500m", memory="256Mi")), ("evaluator", 1, amounts(cpu="500m", memory="256Mi"))]),
    ("a TFJob replica type without a template still counts its replicas",
     training(TF, {"PS": replica_spec(1), "Worker": replica_spec(2)}), [("ps", 1, {}), ("worker", 2, {})]),
    ("an MPIJob keeps the replica type names as written",
     training(MPI, {"Launcher": replica_spec(1, template(**SMALL)), "Worker": replica_spec(4, template(**BIG))}),
     [("Launcher", 1, amounts(cpu="500m", memory="256Mi")), ("Worker", 4, amounts(cpu="1", memory="512Mi"))]),
    ("an MPIJob launcher defaults to 1 replica and its worker to 0",
     training(MPI, {"Launcher": replica_spec(None, template(**SMALL)), "Worker": replica_spec("", template(**SMALL))}),
     [("Launcher", 1, amounts(cpu="500m", memory="256Mi")), ("Worker", 0, amounts(cpu="500m", memory="256Mi"))]),
    ("MPIJob replica types without a template are skipped",
     training(MPI, {"Launcher": replica_spec(1), "Worker": replica_spec(2)}), []),
    ("an MPIJob with only workers gives one component",
     training(MPI, {"Worker": replica_spec(3, template(**SMALL))}), [("Worker", 3, amounts(cpu="500m", memory="256Mi"))]),
]


@pytest.mark.parametrize("manifest,expected", [c[1:] for c in KUBEFLOW_CASES], ids=[c[0] for c in KUBEFLOW_CASES])
def test_kubeflow_jobs(manifest, expected):
    assert summary(manifest) == expected


def test_node_selector_tolerations_affinity_and_priority_reach_the_claim():
    affinity = [{"matchExpressions": [{"key": "gpu", "operator": "In", "values": ["a100"]}]}]
    manifest = training(PYTORCH, {
        "Master": replica_spec(1, template(**SMALL, node_selector={"accelerator": "gpu", "zone": "us-west-1"},
                                           tolerations=GPU_TOLERATION, affinity=affinity, priority="high")),
        "Worker": replica_spec(3, template(**BIG, node_selector={"accelerator": "gpu"})),
    })
    master, worker = interpret(manifest).components
    assert master.shape.claim.node_selector == (("accelerator", "gpu"), ("zone", "us-west-1"))
    assert master.shape.claim.tolerations == (Toleration("nvidia.com/gpu", "Exists", "", "NoSchedule"),)
    assert master.shape.claim.affinity_terms == (NodeSelectorTerm((NodeSelectorRequirement("gpu", "In", ("a100",)),)),)
    assert master.shape.priority_class == "high" and master.shape.namespace == "ns"
    assert worker.shape.claim.node_selector == (("accelerator", "gpu"),) and worker.shape.claim.tolerations == ()


def test_the_object_key_is_what_the_karmada_scheduler_sends():
    assert interpret(training(PYTORCH, {})).object_key == "kind=PyTorchJob, name=ns/j"


# --- ray.io: RayCluster, RayJob ---------------------------------------------------------


def ray_cluster_spec(head=True, groups=()):
    spec = {"rayVersion": "2.9.0"}
    if head:
        spec["headGroupSpec"] = {"rayStartParams": {}, "template": template(requests={"cpu": "1", "memory": "2Gi"})}
    spec["workerGroupSpecs"] = list(groups)
    return spec


def group(replicas=None, name=None, requests=None, **extra):
    out = {"rayStartParams": {}, **extra}
    if name:
        out["groupName"] = name
    if replicas is not None:
        out["replicas"] = replicas
    if requests is not None:
        out["template"] = template(requests=requests)
    return out


HEAD = ("ray-head", 1, amounts(cpu="1", memory="2Gi"))
RAY_CASES = [
    ("a head and one named worker group", [group(3, "small-group", {"cpu": "500m", "memory": "1Gi"})],
     [HEAD, ("small-group", 3, amounts(cpu="500m", memory="1Gi"))], ()),
    ("several named worker groups keep their order and GPUs",
     [group(5, "compute-group", {"cpu": "1", "memory": "2Gi"}),
      group(2, "gpu-group", {"cpu": "2", "memory": "8Gi", "nvidia.com/gpu": "1"})],
     [HEAD, ("compute-group", 5, amounts(cpu="1", memory="2Gi")),
      ("gpu-group", 2, amounts(cpu="2", memory="8Gi", gpu="1"))], ()),
    ("unnamed worker groups are worker-1, worker-2 (1-based)",
     [group(2, None, {"cpu": "500m", "memory": "1Gi"}), group(4, None, {"cpu": "1", "memory": "2Gi"})],
     [HEAD, ("worker-1", 2, amounts(cpu="500m", memory="1Gi")), ("worker-2", 4, amounts(cpu="1", memory="2Gi"))], ()),
    ("a worker group with zero replicas is kept", [group(0, "standby-group", {"cpu": "500m", "memory": "1Gi"})],
     [HEAD, ("standby-group", 0, amounts(cpu="500m", memory="1Gi"))], ()),
    ("a worker group without replicas counts 0", [group(None, "idle", {"cpu": "1"})],
     [HEAD, ("idle", 0, amounts(cpu="1"))], ()),
    ("a multi-host group starts replicas x numOfHosts pods, and says Karmada counts fewer",
     [group(2, "tpu", {"cpu": "1"}, numOfHosts=4)], [HEAD, ("tpu", 8, amounts(cpu="1"))], ("Karmada",)),
]


@pytest.mark.parametrize("groups,expected,notes", [c[1:] for c in RAY_CASES], ids=[c[0] for c in RAY_CASES])
@pytest.mark.parametrize("kind", ["RayCluster", "RayJob"])
def test_ray(kind, groups, expected, notes):
    spec = ray_cluster_spec(groups=groups)
    manifest = job("ray.io/v1", kind, spec if kind == "RayCluster" else
                   {"entrypoint": "python x.py", "rayClusterSpec": spec,
                    "submitterPodTemplate": template(requests={"cpu": "100m"})})
    result = interpret(manifest)
    assert summary(manifest) == expected
    assert all(any(word in note for note in result.notes) for word in notes) and (bool(notes) == bool(result.notes))


def test_a_ray_cluster_without_a_head_template_has_no_head():
    assert summary(job("ray.io/v1", "RayCluster", ray_cluster_spec(head=False, groups=[group(1, "w", {"cpu": "1"})]))) \
        == [("w", 1, amounts(cpu="1"))]


def test_a_rayjob_on_an_existing_cluster_has_no_components_and_says_why():
    result = interpret(job("ray.io/v1", "RayJob", {"entrypoint": "x", "clusterSelector": {"ray.io/cluster": "c"}}))
    assert result.components == () and "existing RayCluster" in result.notes[0]


# --- batch.volcano.sh Job ---------------------------------------------------------------


def task(name=None, min_available=None, requests=None, replicas=None):
    out = {"template": template(requests=requests or {"cpu": "100m"})}
    if name:
        out["name"] = name
    if min_available is not None:
        out["minAvailable"] = min_available
    if replicas is not None:
        out["replicas"] = replicas
    return out


VOLCANO_CASES = [
    ("named tasks count their minAvailable",
     [task("task-1", 2, {"cpu": "100m", "memory": "128Mi"}), task("task-2", 3, {"cpu": "200m", "memory": "256Mi"})],
     [("task-1", 2, amounts(cpu="100m", memory="128Mi")), ("task-2", 3, amounts(cpu="200m", memory="256Mi"))]),
    ("unnamed tasks are task-0, task-1 (0-based)",
     [task(None, 1, {"cpu": "100m"}), task(None, 2, {"cpu": "200m"})],
     [("task-0", 1, amounts(cpu="100m")), ("task-1", 2, amounts(cpu="200m"))]),
    ("minAvailable defaults to 1, whatever replicas says",
     [task("master", None, {"cpu": "1000m", "memory": "1Gi"}, replicas=5)], [("master", 1, amounts(cpu="1", memory="1Gi"))]),
    ("no tasks give no components", None, []),
    ("names fall back by position among named tasks",
     [task("named-task", 2, {"cpu": "100m"}), task(None, 1, {"cpu": "200m"}), task("another-named-task", 3, {"cpu": "300m"})],
     [("named-task", 2, amounts(cpu="100m")), ("task-1", 1, amounts(cpu="200m")),
      ("another-named-task", 3, amounts(cpu="300m"))]),
]


@pytest.mark.parametrize("tasks,expected", [c[1:] for c in VOLCANO_CASES], ids=[c[0] for c in VOLCANO_CASES])
def test_volcano_job(tasks, expected):
    # Karmada's own reading (its Lua: minAvailable, default 1), the components Karmada sends.
    spec = {} if tasks is None else {"tasks": tasks}
    assert summary(job("batch.volcano.sh/v1alpha1", "Job", spec), karmada_compatible=True) == expected


# --- flink.apache.org FlinkDeployment ---------------------------------------------------


def flink(jm_replicas=None, tm_replicas=None, parallelism=None, slots=None, memory="2048m", pod_template=None,
          tm_pod_template=None):
    spec = {"flinkVersion": "v1_17", "image": "flink:1.17",
            "jobManager": {"resource": {"cpu": 1, "memory": memory}},
            "taskManager": {"resource": {"cpu": 1, "memory": memory}}}
    if jm_replicas is not None:
        spec["jobManager"]["replicas"] = jm_replicas
    if tm_replicas is not None:
        spec["taskManager"]["replicas"] = tm_replicas
    if parallelism is not None:
        spec["job"] = {"jarURI": "local:///x.jar", "parallelism": parallelism}
    if slots is not None:
        spec["flinkConfiguration"] = {"taskmanager.numberOfTaskSlots": slots}
    if pod_template is not None:
        spec["podTemplate"] = pod_template
    if tm_pod_template is not None:
        spec["taskManager"]["podTemplate"] = tm_pod_template
    return job("flink.apache.org/v1beta1", "FlinkDeployment", spec)


FLINK_2048M = amounts(cpu="1", memory="2Gi")  # Flink reads 2048m as 2048 MiB
FLINK_CASES = [
    ("explicit task manager replicas", flink(1, 1, parallelism=2, slots="2"),
     [("jobmanager", 1, FLINK_2048M), ("taskmanager", 1, FLINK_2048M)]),
    ("task managers = ceil(parallelism / task slots) when replicas are not set", flink(None, None, 10, "2"),
     [("jobmanager", 1, FLINK_2048M), ("taskmanager", 5, FLINK_2048M)]),
    ("an uneven division rounds up", flink(None, None, 7, "2"),
     [("jobmanager", 1, FLINK_2048M), ("taskmanager", 4, FLINK_2048M)]),
    ("no parallelism and no slots give one task manager", flink(1, None),
     [("jobmanager", 1, FLINK_2048M), ("taskmanager", 1, FLINK_2048M)]),
    ("zero task slots give one task manager", flink(1, None, 4, "0"),
     [("jobmanager", 1, FLINK_2048M), ("taskmanager", 1, FLINK_2048M)]),
    ("job manager replicas default to 1", flink(None, 2, slots="2"),
     [("jobmanager", 1, FLINK_2048M), ("taskmanager", 2, FLINK_2048M)]),
    ("a Kubernetes quantity is read as one", flink(1, 1, memory="2Gi"),
     [("jobmanager", 1, FLINK_2048M), ("taskmanager", 1, FLINK_2048M)]),
]


@pytest.mark.parametrize("manifest,expected", [c[1:] for c in FLINK_CASES], ids=[c[0] for c in FLINK_CASES])
def test_flinkdeployment(manifest, expected):
    assert summary(manifest) == expected


def test_flink_memory_read_differently_from_karmada_is_noted():
    assert any("Karmada" in note for note in interpret(flink(1, 1)).notes)
    assert interpret(flink(1, 1, memory="2Gi")).notes == ()


def test_flink_pod_template_gives_selector_tolerations_and_priority_to_both_components():
    pod_template = {"spec": {"nodeSelector": {"disktype": "ssd", "zone": "us-west-1"}, "priorityClassName": "high-priority",
                             "tolerations": [{"key": "key1", "operator": "Equal", "value": "value1", "effect": "NoSchedule"}]}}
    jobmanager, taskmanager = interpret(flink(1, 2, slots="2", pod_template=pod_template)).components
    for c in (jobmanager, taskmanager):
        assert c.shape.claim.node_selector == (("disktype", "ssd"), ("zone", "us-west-1"))
        assert c.shape.claim.tolerations == (Toleration("key1", "Equal", "value1", "NoSchedule"),)
        assert c.shape.priority_class == "high-priority"


def test_a_component_pod_template_wins_over_the_shared_one():
    shared = {"spec": {"nodeSelector": {"pool": "shared"}}}
    own = {"spec": {"nodeSelector": {"pool": "taskmanagers"}}}
    jobmanager, taskmanager = interpret(flink(1, 1, pod_template=shared, tm_pod_template=own)).components
    assert jobmanager.shape.claim.node_selector == (("pool", "shared"),)
    assert taskmanager.shape.claim.node_selector == (("pool", "taskmanagers"),)


# --- sparkoperator.k8s.io SparkApplication ----------------------------------------------


def spark(job_type="Java", driver=None, executor=None, **spec):
    body = {"type": job_type, "mode": "cluster", **spec}
    if driver is not None:
        body["driver"] = driver
    if executor is not None:
        body["executor"] = executor
    return job("sparkoperator.k8s.io/v1beta2", "SparkApplication", body)


JVM_1G = "1408Mi"  # 1g + max(10%, 384Mi)
SPARK_CASES = [
    ("driver and executors without dynamic allocation",
     spark(driver={"cores": 2, "memory": "1g"}, executor={"cores": 1, "instances": 2, "memory": "1g"}),
     [("driver", 1, amounts(cpu="2", memory=JVM_1G)), ("executor", 2, amounts(cpu="1", memory=JVM_1G))]),
    ("dynamic allocation raises executors to initialExecutors",
     spark(executor={"instances": 1, "memory": "1g"}, dynamicAllocation={"enabled": True, "initialExecutors": 3,
                                                                         "minExecutors": 2}),
     [("driver", 1, amounts(cpu="1", memory=JVM_1G)), ("executor", 3, amounts(cpu="1", memory=JVM_1G))]),
    ("dynamic allocation raises executors to minExecutors",
     spark(executor={"instances": 1}, dynamicAllocation={"enabled": True, "minExecutors": 4}),
     [("driver", 1, amounts(cpu="1", memory=JVM_1G)), ("executor", 4, amounts(cpu="1", memory=JVM_1G))]),
    ("a non-JVM job adds 40% memory overhead",
     spark("Python", executor={"instances": 4}),
     [("driver", 1, amounts(cpu="1", memory="1433.6Mi")), ("executor", 4, amounts(cpu="1", memory="1433.6Mi"))]),
    ("a GPU is requested by name and quantity",
     spark(driver={"gpu": {"name": "nvidia.com/gpu", "quantity": 2}}),
     [("driver", 1, amounts(cpu="1", memory=JVM_1G, gpu="2")), ("executor", 1, amounts(cpu="1", memory=JVM_1G))]),
    ("defaults: one core and 1g everywhere, one executor", spark(),
     [("driver", 1, amounts(cpu="1", memory=JVM_1G)), ("executor", 1, amounts(cpu="1", memory=JVM_1G))]),
    ("an explicit memory overhead replaces the factor",
     spark(driver={"memory": "2g", "memoryOverhead": "512m"}),
     [("driver", 1, amounts(cpu="1", memory="2560Mi")), ("executor", 1, amounts(cpu="1", memory=JVM_1G))]),
    ("the overhead factor of the spec wins over the default",
     spark(driver={"memory": "10g"}, memoryOverheadFactor="0.2"),
     [("driver", 1, amounts(cpu="1", memory="12Gi")), ("executor", 1, amounts(cpu="1", memory=JVM_1G))]),
]


@pytest.mark.parametrize("manifest,expected", [c[1:] for c in SPARK_CASES], ids=[c[0] for c in SPARK_CASES])
def test_sparkapplication(manifest, expected):
    assert summary(manifest) == expected


def test_spark_node_selector_and_tolerations_go_to_their_role():
    driver, executor = interpret(spark(driver={"nodeSelector": {"disktype": "ssd"},
                                               "tolerations": [{"key": "key1", "operator": "Exists"}]})).components
    assert driver.shape.claim.node_selector == (("disktype", "ssd"),)
    assert driver.shape.claim.tolerations == (Toleration("key1", "Exists"),)
    assert executor.shape.claim.is_empty


def test_spark_core_request_is_the_pod_cpu_request_and_is_noted():
    result = interpret(spark(executor={"cores": 2, "coreRequest": "1500m"}))
    assert dict(result.components[1].shape.requests)["cpu"] == 1500
    assert any("coreRequest" in note for note in result.notes)


# --- errors -----------------------------------------------------------------------------


ERROR_CASES = [
    ("an unknown kind is named and the supported kinds are listed",
     {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"}}, "kind", "Deployment"),
    ("a word for replicas names the field",
     training(PYTORCH, {"Worker": replica_spec("two", template())}), "spec.pytorchReplicaSpecs.Worker.replicas", "two"),
    ("negative replicas name the field",
     training(TF, {"PS": replica_spec(-1, template())}), "spec.tfReplicaSpecs.PS.replicas", "negative"),
    ("a fractional replica count names the field",
     training(MPI, {"Worker": replica_spec("1.5", template())}), "spec.mpiReplicaSpecs.Worker.replicas", "whole"),
    ("a malformed quantity names the template",
     training(PYTORCH, {"Worker": replica_spec(1, template(requests={"cpu": "lots"}))}),
     "spec.pytorchReplicaSpecs.Worker.template.spec", "lots"),
    ("an unknown affinity operator names the expression",
     training(PYTORCH, {"Worker": replica_spec(1, template(affinity=[{"matchExpressions": [
         {"key": "k", "operator": "Near", "values": ["x"]}]}]))}),
     "spec.pytorchReplicaSpecs.Worker.template.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
     ".nodeSelectorTerms[0].matchExpressions[0].operator", "Near"),
    ("a Volcano task without a template names it", job("batch.volcano.sh/v1alpha1", "Job", {"tasks": [{"name": "t"}]}),
     "spec.tasks[0].template", "template"),
    ("a SparkApplication without a type names spec.type", spark(None), "spec.type", "Java"),
    ("a Flink memory size that is neither Flink nor Kubernetes names the field",
     flink(1, 1, memory="lots"), "spec.jobManager.resource.memory", "lots"),
    ("a job without a name says so", {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "spec": {}},
     "metadata.name", "missing"),
]


@pytest.mark.parametrize("manifest,field,word", [c[1:] for c in ERROR_CASES], ids=[c[0] for c in ERROR_CASES])
def test_bad_jobs_are_errors_naming_the_field(manifest, field, word):
    with pytest.raises(InterpretError) as caught:
        interpret(manifest)
    assert caught.value.field == field and word in str(caught.value)


def test_the_unknown_kind_error_lists_every_supported_kind():
    with pytest.raises(InterpretError) as caught:
        interpret({"apiVersion": "apps/v1", "kind": "Deployment"})
    for kind in supported_kinds():
        assert kind in str(caught.value)
    assert len(supported_kinds()) == 13
