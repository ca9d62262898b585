"""trainer.kubeflow.org/v1alpha1 TrainJob (Kubeflow Trainer v2; not in Karmada).

A TrainJob runs as a JobSet built from its runtime (a ClusterTrainingRuntime or
TrainingRuntime named by spec.runtimeRef). Put the runtime in the job file as another YAML
document and every replicatedJob of its template becomes a component (see jobset.py), with
the TrainJob's settings applied as the trainer controller applies them:

- the trainer step (the replicatedJob labelled trainer.kubeflow.org/trainjob-ancestor-step:
  trainer, else the one named `node`) runs numNodes pods: spec.trainer.numNodes, else the
  runtime's mlPolicy.numNodes, else 1 (one fewer with MPI's runLauncherAsNode, where the
  launcher is a node);
- spec.trainer.resourcesPerNode replaces the resources of its `node` container (else its
  first container);
- spec.podSpecOverrides add nodeSelector and tolerations, and replace affinity, on the
  replicatedJobs they target.

Without the runtime document only the trainer nodes can be counted (numNodes x
resourcesPerNode); the job's notes say so.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any, cast

from scheduler_client.interpreters.common import (
    InterpretError,
    Job,
    component,
    get,
    make_job,
    mapping,
    metadata,
    replicas,
    sequence,
)
from scheduler_client.interpreters.jobset import pods_per_job

TRAINER_STEP_LABEL = "trainer.kubeflow.org/trainjob-ancestor-step"
TRAINER_STEP = "trainer"
TRAINER_JOB = "node"
TRAINER_CONTAINER = "node"
RUNTIME_KINDS = ("ClusterTrainingRuntime", "TrainingRuntime")


def _runtime(manifest: Mapping, related: Sequence[Mapping]) -> tuple[Mapping | None, str]:
    ref = mapping(get(manifest, "spec", "runtimeRef"), "spec.runtimeRef")
    name = ref.get("name")
    if not isinstance(name, str) or not name:
        raise InterpretError("spec.runtimeRef.name", "is missing")
    kind = str(ref.get("kind") or RUNTIME_KINDS[0])
    for document in related:
        if isinstance(document, Mapping) and document.get("kind") == kind and get(document, "metadata", "name") == name:
            return document, f"{kind}/{name}"
    return None, f"{kind}/{name}"


def _overrides(manifest: Mapping) -> dict[str, list[tuple[Mapping, str]]]:
    """replicatedJob name -> the podSpecOverrides that target it (with their field paths)."""
    targets: dict[str, list[tuple[Mapping, str]]] = {}
    for i, override in enumerate(sequence(get(manifest, "spec", "podSpecOverrides"), "spec.podSpecOverrides")):
        field = f"spec.podSpecOverrides[{i}]"
        override = mapping(override, field)
        for j, target in enumerate(sequence(override.get("targetJobs"), f"{field}.targetJobs")):
            target_name = get(target, "name")
            if not target_name:
                raise InterpretError(f"{field}.targetJobs[{j}].name", "is missing")
            targets.setdefault(str(target_name), []).append((override, field))
    return targets


def _apply_overrides(pod_spec: dict, overrides: Sequence[tuple[Mapping, str]]) -> None:
    for override, _ in overrides:
        if override.get("nodeSelector"):
            pod_spec["nodeSelector"] = {**(pod_spec.get("nodeSelector") or {}), **override["nodeSelector"]}
        if override.get("tolerations"):
            pod_spec["tolerations"] = [*(pod_spec.get("tolerations") or []), *override["tolerations"]]
        if override.get("affinity") is not None:
            pod_spec["affinity"] = override["affinity"]


def _set_node_resources(pod_spec: dict, resources: Any) -> None:
    containers = pod_spec.get("containers") or []
    target = next((c for c in containers if isinstance(c, dict) and c.get("name") == TRAINER_CONTAINER), None)
    if target is None and containers:
        target = containers[0]
    if target is None:
        pod_spec["containers"] = [{"name": TRAINER_CONTAINER, "resources": resources}]
    else:
        target["resources"] = resources


def _num_nodes(manifest: Mapping, runtime: Mapping | None) -> int:
    explicit = get(manifest, "spec", "trainer", "numNodes")
    if explicit is not None:
        return replicas(explicit, "spec.trainer.numNodes")
    return replicas(get(runtime, "spec", "mlPolicy", "numNodes"), "spec.mlPolicy.numNodes (runtime)")


def _is_trainer_step(job: Mapping) -> bool:
    step = get(job, "template", "metadata", "labels", TRAINER_STEP_LABEL)
    return step == TRAINER_STEP if step is not None else job.get("name") == TRAINER_JOB


def trainjob(manifest: Mapping, related: Sequence[Mapping] = ()) -> Job:
    namespace, _ = metadata(manifest)
    runtime, runtime_name = _runtime(manifest, related)
    num_nodes = _num_nodes(manifest, runtime)
    resources = get(manifest, "spec", "trainer", "resourcesPerNode")
    overrides = _overrides(manifest)

    if runtime is None:
        pod_spec: dict = {"containers": [{"name": TRAINER_CONTAINER, "resources": resources or {}}]}
        _apply_overrides(pod_spec, overrides.get(TRAINER_JOB, ()))
        node = component(TRAINER_JOB, num_nodes, {"spec": pod_spec}, namespace, "spec.trainer")
        note = (
            f"runtime {runtime_name} is not in the job file: only the {num_nodes} trainer node(s) are counted; "
            "add the runtime as another YAML document to count its other jobs"
        )
        return make_job(manifest, (node,), (note,))

    launcher_is_node = bool(get(runtime, "spec", "mlPolicy", "mpi", "runLauncherAsNode"))
    field = "spec.template.spec (runtime)"
    components, notes = [], []
    for i, job in enumerate(
        sequence(get(runtime, "spec", "template", "spec", "replicatedJobs"), f"{field}.replicatedJobs")
    ):
        job_field = f"{field}.replicatedJobs[{i}]"
        job = mapping(job, job_field)
        name = str(job.get("name") or "")
        if not name:
            raise InterpretError(f"{job_field}.name", "a replicatedJob needs a name")
        job_spec = mapping(get(job, "template", "spec"), f"{job_field}.template.spec")
        # A copy of parsed YAML/JSON: a dict.
        template = cast(dict, copy.deepcopy(mapping(job_spec.get("template"), f"{job_field}.template.spec.template")))
        pod_spec = template.setdefault("spec", {})
        if _is_trainer_step(job):
            count = max(num_nodes - (1 if launcher_is_node else 0), 0) * replicas(
                job.get("replicas"), f"{job_field}.replicas"
            )
            if resources is not None:
                _set_node_resources(pod_spec, resources)
        else:
            count = replicas(job.get("replicas"), f"{job_field}.replicas") * pods_per_job(
                job_spec, f"{job_field}.template.spec"
            )
        _apply_overrides(pod_spec, overrides.get(name, ()))
        components.append(component(name, count, template, namespace, f"{job_field}.template.spec"))
        for dependency in sequence(job.get("dependsOn"), f"{job_field}.dependsOn"):
            notes.append(
                f"{name} depends on {get(dependency, 'name', default='?')}: counted as running at the same "
                "time (conservative)"
            )
    unknown = sorted(set(overrides) - {c.name for c in components})
    if unknown:
        raise InterpretError(
            "spec.podSpecOverrides", f"target jobs {', '.join(unknown)} are not in runtime {runtime_name}"
        )
    return make_job(manifest, components, notes)
