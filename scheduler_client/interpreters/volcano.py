"""batch.volcano.sh/v1alpha1 Job: one component per task, the gang that must start together.

The component is named after the task, else `task-<i>` (0-based, as Karmada names it). A task
without a template is an error (Karmada's Lua fails too).

How many pods of each task the gang needs, as Volcano decides it in the member:
- its admission webhook defaults a task's minAvailable to the task's replicas, and a job's
  spec.minAvailable (0 or missing) to the sum of the tasks' minAvailable;
- job minAvailable above that sum: the extra pods come from the tasks in order, each up to
  its replicas; below it: the first job-minAvailable pods in task order (Volcano orders tasks
  by priority; with equal priorities that is the manifest's order, assumed here).
Karmada's interpreter reads only the task's minAvailable, default 1, and ignores the job's;
`karmada_compatible=True` reads it that way (the components Karmada sends), and each reading
notes where the other differs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from scheduler_client.interpreters.common import (
    InterpretError,
    Job,
    component,
    make_job,
    mapping,
    metadata,
    replicas,
    sequence,
)


def gang_counts(task_replicas: Sequence[int], task_min: Sequence[int | None], job_min: int) -> list[int]:
    """Pods per task that Volcano's gang needs; task_min None = not set (defaults to replicas)."""
    mins = [r if m is None else m for r, m in zip(task_replicas, task_min, strict=True)]
    total = sum(mins)
    needed = job_min or total
    if needed >= total:
        counts, extra = list(mins), needed - total
        for i, r in enumerate(task_replicas):
            take = min(extra, r - counts[i])
            counts[i] += take
            extra -= take
        return counts
    counts, left = [], needed
    for m in mins:
        counts.append(min(m, left))
        left -= counts[-1]
    return counts


def volcano_job(manifest: Mapping, related: Sequence[Mapping] = (), karmada_compatible: bool = False) -> Job:
    namespace, _ = metadata(manifest)
    spec = mapping(manifest.get("spec"), "spec")
    tasks = [mapping(t, f"spec.tasks[{i}]") for i, t in enumerate(sequence(spec.get("tasks"), "spec.tasks"))]
    names, task_replicas, task_min, karmada_counts = [], [], [], []
    for i, task in enumerate(tasks):
        field = f"spec.tasks[{i}]"
        if task.get("template") is None:
            raise InterpretError(f"{field}.template", "a task needs a pod template")
        names.append(str(task.get("name") or f"task-{i}"))
        task_replicas.append(replicas(task.get("replicas"), f"{field}.replicas", default=0))
        given = task.get("minAvailable")
        task_min.append(None if given is None or given == "" else replicas(given, f"{field}.minAvailable"))
        karmada_counts.append(replicas(given, f"{field}.minAvailable"))
        if not karmada_compatible and task_min[-1] is not None and task_min[-1] > task_replicas[-1]:
            raise InterpretError(
                f"{field}.minAvailable",
                f"{task_min[-1]} is more than the task's replicas {task_replicas[-1]} (Volcano refuses the job)",
            )
    job_min = replicas(spec.get("minAvailable"), "spec.minAvailable", default=0)
    if karmada_compatible:  # Karmada validates none of this; Volcano in the member does
        task_replicas = [max(r, m or 0) for r, m in zip(task_replicas, task_min, strict=True)]
        job_min = min(job_min, sum(task_replicas))
    if job_min > sum(task_replicas):
        raise InterpretError(
            "spec.minAvailable",
            f"{job_min} is more than the tasks' replicas in total {sum(task_replicas)} (Volcano refuses the job)",
        )
    volcano_counts = gang_counts(task_replicas, task_min, job_min)
    counts = karmada_counts if karmada_compatible else volcano_counts
    notes = []
    if karmada_counts != volcano_counts:
        per_task = ", ".join(f"{n} {v}" for n, v in zip(names, volcano_counts, strict=True))
        karmada = ", ".join(f"{n} {k}" for n, k in zip(names, karmada_counts, strict=True))
        if karmada_compatible:
            notes.append(
                f"tasks read as Karmada's interpreter reads them (minAvailable, default 1; the job's "
                f"minAvailable ignored): {karmada}; Volcano's gang in the member needs {per_task}"
            )
        else:
            notes.append(
                f"tasks read as Volcano's gang needs them (minAvailable defaulted to replicas, the job's "
                f"minAvailable honoured): {per_task}; Karmada's interpreter counts {karmada}"
            )
    components = [
        component(name, count, task["template"], namespace, f"spec.tasks[{i}]")
        for i, (name, count, task) in enumerate(zip(names, counts, tasks, strict=True))
    ]
    return make_job(manifest, components, notes)
