"""jobset.x-k8s.io/v1alpha2 JobSet (not in Karmada): one component per replicatedJob.

A replicatedJob named N with `replicas` r (default 1) whose Job runs `parallelism` p pods
at a time (default 1, capped by `completions` when set) becomes component N with r x p
replicas of the Job's pod template. A job that `dependsOn` another is counted as running
at the same time as it (conservative: the JobSet may start it only later); the job says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from estimator.api import Component
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


def pods_per_job(job_spec: Mapping, field: str) -> int:
    """Pods a batch/v1 Job runs at once: parallelism (default 1), at most completions."""
    parallelism = replicas(job_spec.get("parallelism"), f"{field}.parallelism")
    if job_spec.get("completions") is not None:
        parallelism = min(parallelism, replicas(job_spec["completions"], f"{field}.completions"))
    return parallelism


def replicated_job_components(jobset_spec: Mapping, field: str, namespace: str) -> tuple[list[Component], list[str]]:
    components, notes = [], []
    seen: set[str] = set()
    for i, job in enumerate(sequence(jobset_spec.get("replicatedJobs"), f"{field}.replicatedJobs")):
        job_field = f"{field}.replicatedJobs[{i}]"
        job = mapping(job, job_field)
        name = job.get("name")
        if not isinstance(name, str) or not name:
            raise InterpretError(f"{job_field}.name", "a replicatedJob needs a name")
        if name in seen:
            raise InterpretError(f"{job_field}.name", f"duplicate replicatedJob name {name!r}")
        seen.add(name)
        job_spec = mapping(get(job, "template", "spec"), f"{job_field}.template.spec")
        count = replicas(job.get("replicas"), f"{job_field}.replicas") * pods_per_job(
            job_spec, f"{job_field}.template.spec"
        )
        components.append(component(name, count, job_spec.get("template"), namespace, f"{job_field}.template.spec"))
        for dependency in sequence(job.get("dependsOn"), f"{job_field}.dependsOn"):
            notes.append(
                f"{name} depends on {get(dependency, 'name', default='?')}: counted as running at the same "
                "time (conservative)"
            )
    return components, notes


def jobset(manifest: Mapping, related: Sequence[Mapping] = ()) -> Job:
    namespace, _ = metadata(manifest)
    components, notes = replicated_job_components(mapping(manifest.get("spec"), "spec"), "spec", namespace)
    return make_job(manifest, components, notes)
