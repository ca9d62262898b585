"""batch.volcano.sh/v1alpha1 Job: one component per task, as Karmada's interpreter reads it.

The component is named after the task, else `task-<i>` (0-based). Its replica count is the
task's *minAvailable* (default 1), not `replicas`: the gang that must start together is what
has to fit in one member. A task without a template is an error (Karmada's Lua fails too).
"""

from __future__ import annotations

from typing import Mapping, Sequence

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


def volcano_job(manifest: Mapping, related: Sequence[Mapping] = ()) -> Job:
    namespace, _ = metadata(manifest)
    components = []
    for i, task in enumerate(sequence(mapping(manifest.get("spec"), "spec").get("tasks"), "spec.tasks")):
        field = f"spec.tasks[{i}]"
        task = mapping(task, field)
        if task.get("template") is None:
            raise InterpretError(f"{field}.template", "a task needs a pod template")
        name = task.get("name") or f"task-{i}"
        count = replicas(task.get("minAvailable"), f"{field}.minAvailable")
        components.append(component(str(name), count, task["template"], namespace, field))
    return make_job(manifest, components)
