"""One view per member, merged from its Karmada Cluster object and/or its snapshot. Pure.

    build_members(cluster objects, member snapshots) -> [Member]; MemberSnapshot, one member's
    objects and the estimator's snapshot of them.

What the general estimator reads, and where it came from (said in every explanation):
- resource summary: the Cluster object's status.resourceSummary when it has one (what
  Karmada's scheduler sees), else computed from the member snapshot as the cluster status
  controller would (karmada/clusterstatus.py), else none;
- resource models: spec.resourceModels, else Karmada's defaults (the apiserver sets them on
  create while CustomizedClusterResourceModeling is on), else none;
- allocatable modelings: from the same status as the summary, else graded from the snapshot.
Beside them, from the member snapshot only: the resources it serves through DRA (dra.py),
which no Cluster status shows. A `Member` is what Karmada's room reads as a member
(scheduler_client.karmada.Cluster), with where each number came from.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from estimator.api import ClusterSnapshot, Taint
from scheduler_client import karmada
from scheduler_client.clusters import ClusterObject
from scheduler_client.dra import DraResource
from scheduler_client.karmada import DEFAULT_MODELS, GradeCount, ModelError, ResourceModel, ResourceSummary

FROM_STATUS = "Cluster status"
FROM_SNAPSHOT = "computed from the member snapshot"
SPEC_MODELS = "spec.resourceModels"
DEFAULT_MODELS_SOURCE = "Karmada's default models"


@dataclass(frozen=True)
class MemberSnapshot:
    """A member's kubectl-style state: raw objects (for the status summary) and the
    estimator's snapshot of them (for per-node explanations)."""

    name: str
    nodes: tuple[Mapping, ...]
    pods: tuple[Mapping, ...]
    snapshot: ClusterSnapshot
    dra: tuple[DraResource, ...] = ()  # resources served through DRA (devices in ResourceSlices)
    dra_failed_classes: frozenset[str] = frozenset()  # DeviceClasses whose selectors cannot be evaluated


@dataclass(frozen=True)
class Member:
    name: str
    labels: Mapping[str, str] = field(default_factory=dict)
    provider: str = ""
    region: str = ""
    zones: tuple[str, ...] = ()
    taints: tuple[Taint, ...] = ()
    api_enablements: frozenset[tuple[str, str]] | None = None
    summary: ResourceSummary | None = None
    summary_source: str = ""
    models: tuple[ResourceModel, ...] = ()
    models_source: str = ""
    grade_counts: tuple[GradeCount, ...] | None = None
    snapshot: ClusterSnapshot | None = None
    dra: tuple[DraResource, ...] = ()  # from the member snapshot: what Karmada's status does not count
    dra_failed_classes: frozenset[str] = frozenset()


def build_members(
    cluster_objects: Sequence[ClusterObject], snapshots: Mapping[str, MemberSnapshot], modeling_enabled: bool = True
) -> list[Member]:
    """Members in order: Cluster objects first (file order), then snapshot-only members."""
    by_name = {c.name: c for c in cluster_objects}
    names = [c.name for c in cluster_objects] + [n for n in snapshots if n not in by_name]
    members = []
    for name in names:
        obj, snap = by_name.get(name), snapshots.get(name)
        models: tuple[ResourceModel, ...] = ()
        models_source = ""
        if obj is not None and obj.resource_models:
            models, models_source = obj.resource_models, SPEC_MODELS
        elif modeling_enabled:
            models, models_source = DEFAULT_MODELS, DEFAULT_MODELS_SOURCE
        summary, source, counts = None, "", None
        if obj is not None and obj.summary is not None:
            summary, source, counts = obj.summary, FROM_STATUS, obj.grade_counts
        elif snap is not None:
            summary, source = karmada.resource_summary(snap.nodes, snap.pods), FROM_SNAPSHOT
            if modeling_enabled and models:
                try:
                    counts = karmada.allocatable_modelings(models, snap.nodes, snap.pods)
                except ModelError:
                    counts = None  # the controller logs and records no modelings
        members.append(
            Member(
                name=name,
                labels=dict(obj.labels) if obj else {},
                provider=obj.provider if obj else "",
                region=obj.region if obj else "",
                zones=obj.zones if obj else (),
                taints=obj.taints if obj else (),
                api_enablements=obj.api_enablements if obj else None,
                summary=summary,
                summary_source=source,
                models=models,
                models_source=models_source,
                grade_counts=counts,
                snapshot=snap.snapshot if snap else None,
                dra=snap.dra if snap else (),
                dra_failed_classes=snap.dra_failed_classes if snap else frozenset(),
            )
        )
    return members
