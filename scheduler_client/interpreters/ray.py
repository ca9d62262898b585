"""ray.io/v1 RayCluster and RayJob (its spec.rayClusterSpec), as Karmada's interpreters read them.

- `ray-head`: always 1 replica, present only when headGroupSpec has a template;
- one component per workerGroupSpecs entry, named by groupName, else `worker-<i>` (1-based);
  replicas default 0; no template -> no requirements.

Beyond Karmada: a multi-host worker group (numOfHosts > 1) starts replicas x numOfHosts
pods, so we count those (Karmada counts replicas only) and say so in the job's notes.
A RayJob without rayClusterSpec (it targets an existing cluster) has no components.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from estimator.api import Component, ReplicaShape
from scheduler_client.interpreters.common import (
    Job,
    component,
    get,
    make_job,
    mapping,
    metadata,
    replicas,
    sequence,
)

HEAD_COMPONENT = "ray-head"


def _cluster_components(cluster_spec: Mapping, field: str, namespace: str) -> tuple[list[Component], list[str]]:
    components, notes = [], []
    head_template = get(cluster_spec, "headGroupSpec", "template")
    if head_template is not None:
        components.append(component(HEAD_COMPONENT, 1, head_template, namespace, f"{field}.headGroupSpec"))
    groups_field = f"{field}.workerGroupSpecs"
    for i, group in enumerate(sequence(cluster_spec.get("workerGroupSpecs"), groups_field)):
        group_field = f"{groups_field}[{i}]"
        group = mapping(group, group_field)
        name = group.get("groupName") or f"worker-{i + 1}"
        count = replicas(group.get("replicas"), f"{group_field}.replicas", default=0)
        hosts = replicas(group.get("numOfHosts"), f"{group_field}.numOfHosts", default=1)
        if hosts > 1:
            notes.append(
                f"{name}: {count} replicas x {hosts} hosts = {count * hosts} pods "
                f"(Karmada's interpreter counts {count})"
            )
            count *= hosts
        if group.get("template") is None:
            components.append(Component(str(name), count, ReplicaShape(namespace=namespace)))
        else:
            components.append(component(str(name), count, group["template"], namespace, group_field))
    return components, notes


def raycluster(manifest: Mapping, related: Sequence[Mapping] = ()) -> Job:
    namespace, _ = metadata(manifest)
    components, notes = _cluster_components(mapping(manifest.get("spec"), "spec"), "spec", namespace)
    return make_job(manifest, components, notes)


def rayjob(manifest: Mapping, related: Sequence[Mapping] = ()) -> Job:
    namespace, _ = metadata(manifest)
    cluster_spec = get(manifest, "spec", "rayClusterSpec")
    if cluster_spec is None:
        return make_job(manifest, (), ("no spec.rayClusterSpec: the RayJob runs on an existing RayCluster",))
    components, notes = _cluster_components(
        mapping(cluster_spec, "spec.rayClusterSpec"), "spec.rayClusterSpec", namespace
    )
    return make_job(manifest, components, notes)
