"""leaderworkerset.x-k8s.io/v1 LeaderWorkerSet: `leader` and `worker` components.

spec.replicas groups (default 1), each of spec.leaderWorkerTemplate.size pods (default 1):
one leader running leaderTemplate (workerTemplate when there is none) and size - 1 workers
running workerTemplate. The whole set (every group) is one component set:
- leader: replicas groups;
- worker: replicas x (size - 1), left out when size is 1.
Karmada (v1.18) ships no interpreter for this kind: it sees these components only through a
ResourceInterpreterCustomization that returns them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from estimator.api import Component
from scheduler_client.interpreters.common import (
    InterpretError,
    Job,
    make_job,
    mapping,
    metadata,
    replicas,
    shape_from_template,
)


def leaderworkerset(manifest: Mapping, related: Sequence[Mapping] = ()) -> Job:
    namespace, _ = metadata(manifest)
    spec = mapping(manifest.get("spec"), "spec")
    groups = replicas(spec.get("replicas"), "spec.replicas")
    template = mapping(spec.get("leaderWorkerTemplate"), "spec.leaderWorkerTemplate")
    size = replicas(template.get("size"), "spec.leaderWorkerTemplate.size")
    if size < 1:
        raise InterpretError("spec.leaderWorkerTemplate.size", f"must be at least 1 (the leader), got {size}")
    if template.get("workerTemplate") is None:
        raise InterpretError("spec.leaderWorkerTemplate.workerTemplate", "is required")
    leader_field = "spec.leaderWorkerTemplate.leaderTemplate"
    leader_template = template.get("leaderTemplate")
    if leader_template is None:
        leader_field, leader_template = "spec.leaderWorkerTemplate.workerTemplate", template["workerTemplate"]
    components = [Component("leader", groups, shape_from_template(leader_template, namespace, leader_field))]
    if size > 1:
        components.append(
            Component(
                "worker",
                groups * (size - 1),
                shape_from_template(template["workerTemplate"], namespace, "spec.leaderWorkerTemplate.workerTemplate"),
            )
        )
    return make_job(manifest, components)
