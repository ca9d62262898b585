"""A member as Karmada's scheduler reads it: what this room's functions take for a member. Pure.

`Cluster` names the Cluster object's parts the filters, the general estimator and the
scheduler path read: metadata (name, labels), spec (provider, region, zones, taints,
resourceModels) and status (apiEnablements, resourceSummary with its allocatableModelings).
Beside them, `dra`: the devices the member serves through DRA, which no Cluster status
shows; read only to say why Karmada counts 0 there.

This tool's member view (`scheduler_client.memberview.Member`) has these and more (where each
number came from, the member snapshot); this room depends only on the protocol, not on how
the tool builds its view.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

from estimator.api import Taint
from scheduler_client.dra import DraResource
from scheduler_client.karmada.general import ResourceSummary
from scheduler_client.karmada.resourcemodels import GradeCount, ResourceModel


class Cluster(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def labels(self) -> Mapping[str, str]: ...

    @property
    def provider(self) -> str: ...

    @property
    def region(self) -> str: ...

    @property
    def zones(self) -> tuple[str, ...]: ...

    @property
    def taints(self) -> tuple[Taint, ...]: ...

    @property
    def api_enablements(self) -> frozenset[tuple[str, str]] | None:
        """(groupVersion, kind) pairs the member serves; None when its status does not say."""

    @property
    def summary(self) -> ResourceSummary | None: ...

    @property
    def models(self) -> tuple[ResourceModel, ...]: ...

    @property
    def grade_counts(self) -> tuple[GradeCount, ...] | None: ...

    @property
    def dra(self) -> tuple[DraResource, ...]: ...
