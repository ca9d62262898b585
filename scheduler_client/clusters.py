"""Karmada Cluster objects (cluster.karmada.io/v1alpha1) -> what the estimators read. Pure.

Read: metadata.name and labels; spec.provider, region, zones (zone migrates to zones, as
the apiserver does), taints and resourceModels (standardised as the apiserver stores them);
status.resourceSummary (allocatable, allocated, allocating, allocatableModelings) and
status.apiEnablements. `to_cluster_object` writes the same shape back (karmada-place summarize).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from estimator.api import (
    MAX_INT64,
    QuantityError,
    ResourceListError,
    Taint,
    parse_quantity,
    parse_resource_list,
    quantity_to_int,
)
from scheduler_client.fields import FieldError, mapping, sequence
from scheduler_client.karmada import GradeCount, ModelRange, ResourceModel, ResourceSummary, memory_like, standardize
from scheduler_client.wire import quantity_string

CLUSTER_API_VERSION = "cluster.karmada.io/v1alpha1"


class ClusterError(FieldError):
    """A Cluster object field we cannot use; names the field."""


@dataclass(frozen=True)
class ClusterObject:
    name: str
    labels: Mapping[str, str]
    provider: str = ""
    region: str = ""
    zones: tuple[str, ...] = ()
    taints: tuple[Taint, ...] = ()
    resource_models: tuple[ResourceModel, ...] = ()
    summary: ResourceSummary | None = None
    grade_counts: tuple[GradeCount, ...] | None = None
    # (groupVersion, kind) pairs the member serves; None when the status does not say.
    api_enablements: frozenset[tuple[str, str]] | None = None


def _mapping(value: Any, field: str) -> Mapping:
    return mapping(value, field, ClusterError)


def _list(value: Any, field: str) -> list:
    return sequence(value, field, ClusterError)


def _quantity(name: str, value: Any, field: str) -> int:
    try:
        return quantity_to_int(name, value if isinstance(value, str) else str(value))
    except QuantityError as error:
        raise ClusterError(field, str(error)) from None


def _upper_bound(name: str, value: Any, field: str) -> int:
    # The apiserver opens the last grade with max = MaxInt64 *units*; for cpu that is beyond
    # int64 millicores. A range's max is never used in arithmetic, so it saturates.
    try:
        return _quantity(name, value, field)
    except ClusterError:
        try:
            if parse_quantity(str(value)) > 0:
                return MAX_INT64
        except QuantityError:
            pass
        raise


_BINARY_SUFFIX = re.compile(r"(Ki|Mi|Gi|Ti|Pi|Ei)\s*$")


def _binary_format(value: Any) -> bool:
    """Go's resource.ParseQuantity gives BinarySI only for a Ki..Ei suffix."""
    return isinstance(value, str) and bool(_BINARY_SUFFIX.search(value))


def _resource_list(value: Any, field: str) -> dict[str, int]:
    try:
        amounts = parse_resource_list(_mapping(value, field), field)
    except ResourceListError as error:
        raise ClusterError(f"{field}.{error.name}", error.problem) from None
    return {str(name): amount for name, amount in amounts.items()}


def _models(value: Any, field: str) -> tuple[ResourceModel, ...]:
    models = []
    for i, raw in enumerate(_list(value, field)):
        model_field = f"{field}[{i}]"
        raw = _mapping(raw, model_field)
        grade = raw.get("grade")
        if isinstance(grade, bool) or not isinstance(grade, int) or grade < 0:
            raise ClusterError(f"{model_field}.grade", f"must be a whole number >= 0, got {grade!r}")
        ranges = []
        for j, item in enumerate(_list(raw.get("ranges"), f"{model_field}.ranges")):
            range_field = f"{model_field}.ranges[{j}]"
            item = _mapping(item, range_field)
            name = item.get("name")
            if not isinstance(name, str) or not name:
                raise ClusterError(f"{range_field}.name", "is required")
            low = _quantity(name, item.get("min", "0"), f"{range_field}.min")
            high = _upper_bound(name, item.get("max", "0"), f"{range_field}.max")
            ranges.append(ModelRange(name, low, high))
        models.append(ResourceModel(grade, tuple(ranges)))
    return standardize(models)


def _grade_counts(value: Any, field: str) -> tuple[GradeCount, ...] | None:
    if value is None:
        return None
    counts = []
    for i, raw in enumerate(_list(value, field)):
        raw = _mapping(raw, f"{field}[{i}]")
        grade, count = raw.get("grade", 0), raw.get("count", 0)
        for key, number in (("grade", grade), ("count", count)):
            if isinstance(number, bool) or not isinstance(number, int):
                raise ClusterError(f"{field}[{i}].{key}", f"must be an integer, got {number!r}")
        counts.append(GradeCount(grade, count))
    return tuple(counts)


def _taints(value: Any, field: str) -> tuple[Taint, ...]:
    taints = []
    for i, raw in enumerate(_list(value, field)):
        raw = _mapping(raw, f"{field}[{i}]")
        if not raw.get("key"):
            raise ClusterError(f"{field}[{i}].key", "is required")
        taints.append(Taint(str(raw["key"]), str(raw.get("value") or ""), str(raw.get("effect") or "")))
    return tuple(taints)


def _api_enablements(value: Any, field: str) -> frozenset[tuple[str, str]] | None:
    if value is None:
        return None
    pairs = set()
    for i, raw in enumerate(_list(value, field)):
        raw = _mapping(raw, f"{field}[{i}]")
        for resource in _list(raw.get("resources"), f"{field}[{i}].resources"):
            pairs.add((str(raw.get("groupVersion") or ""), str(_mapping(resource, f"{field}[{i}]").get("kind") or "")))
    return frozenset(pairs)


def parse_cluster(obj: Any) -> ClusterObject:
    obj = _mapping(obj, "<document>")
    if obj.get("kind") != "Cluster":
        raise ClusterError("kind", f"expected a Karmada Cluster, got {obj.get('kind')!r}")
    meta = _mapping(obj.get("metadata"), "metadata")
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise ClusterError("metadata.name", "is required")
    spec = _mapping(obj.get("spec"), "spec")
    status = _mapping(obj.get("status"), "status")
    zones = tuple(str(z) for z in _list(spec.get("zones"), "spec.zones")) or (
        (str(spec["zone"]),) if spec.get("zone") else ()
    )
    summary, counts = None, None
    if status.get("resourceSummary") is not None:
        raw = _mapping(status["resourceSummary"], "status.resourceSummary")
        summary = ResourceSummary(
            _resource_list(raw.get("allocatable"), "status.resourceSummary.allocatable"),
            _resource_list(raw.get("allocated"), "status.resourceSummary.allocated"),
            _resource_list(raw.get("allocating"), "status.resourceSummary.allocating"),
            decimal_format=frozenset(
                str(n)
                for n, v in _mapping(raw.get("allocatable"), "allocatable").items()
                if n != "cpu" and not _binary_format(v)
            ),
        )
        counts = _grade_counts(raw.get("allocatableModelings"), "status.resourceSummary.allocatableModelings")
    return ClusterObject(
        name=name,
        labels={
            str(k): "" if v is None else str(v) for k, v in _mapping(meta.get("labels"), "metadata.labels").items()
        },
        provider=str(spec.get("provider") or ""),
        region=str(spec.get("region") or ""),
        zones=zones,
        taints=_taints(spec.get("taints"), "spec.taints"),
        resource_models=_models(spec.get("resourceModels"), "spec.resourceModels"),
        summary=summary,
        grade_counts=counts,
        api_enablements=_api_enablements(status.get("apiEnablements"), "status.apiEnablements"),
    )


def _binary_string(amount: int) -> str | None:
    for suffix, unit in (("Ei", 2**60), ("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
        if amount >= unit and amount % unit == 0:
            return f"{amount // unit}{suffix}"
    return None


def _quantities(amounts: Mapping[str, int]) -> dict[str, str]:
    # Memory-like amounts in a binary format, as Karmada's status controller writes them:
    # Karmada's general estimator reads a decimal one in thousandths.
    return {
        name: (memory_like(name) and _binary_string(amount)) or quantity_string(name, amount)
        for name, amount in sorted(amounts.items())
    }


def to_cluster_object(
    name: str,
    labels: Mapping[str, str],
    models: Sequence[ResourceModel],
    summary: ResourceSummary,
    counts: Sequence[GradeCount] | None,
    provider: str = "",
    region: str = "",
    zones: Sequence[str] = (),
) -> dict:
    """A Cluster object whose status is `summary` (what the cluster status controller writes)."""
    resource_summary: dict[str, Any] = {
        "allocatable": _quantities(summary.allocatable),
        "allocated": _quantities(summary.allocated),
        "allocating": _quantities(summary.allocating),
    }
    if counts is not None:
        resource_summary["allocatableModelings"] = [{"grade": c.grade, "count": c.count} for c in counts]
    spec: dict[str, Any] = {"syncMode": "Push"}
    for key, value in (("provider", provider), ("region", region), ("zones", list(zones))):
        if value:
            spec[key] = value
    if models:
        spec["resourceModels"] = [
            {
                "grade": m.grade,
                "ranges": [
                    {"name": r.name, "min": quantity_string(r.name, r.min), "max": quantity_string(r.name, r.max)}
                    for r in m.ranges
                ],
            }
            for m in models
        ]
    metadata: dict[str, Any] = {"name": name}
    if labels:
        metadata["labels"] = dict(labels)
    return {
        "apiVersion": CLUSTER_API_VERSION,
        "kind": "Cluster",
        "metadata": metadata,
        "spec": spec,
        "status": {"resourceSummary": resource_summary},
    }
