"""Pod template -> per-replica requirements, as Karmada's kube.accuratePodRequirements.

Requests are computed like the kube-scheduler (estimator.podrequests); the node claim
carries nodeSelector, required node affinity and tolerations; plus priorityClassName and
the job's namespace.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from estimator.model import (
    NODE_SELECTOR_OPERATORS,
    Component,
    NodeClaim,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    ReplicaShape,
    Toleration,
)
from estimator.podrequests import pod_requests


class InterpretError(ValueError):
    """A job manifest we cannot turn into components; names the field."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field


@dataclass(frozen=True)
class Job:
    api_version: str
    kind: str
    namespace: str
    name: str
    components: tuple[Component, ...]

    @property
    def object_key(self) -> str:
        """The gRPC `object` metadata value the karmada-scheduler sends."""
        return f"kind={self.kind}, name={self.namespace}/{self.name}"


def get(obj: Any, *path: str | int, default: Any = None) -> Any:
    for key in path:
        if isinstance(obj, dict) and isinstance(key, str):
            obj = obj.get(key)
        elif isinstance(obj, list) and isinstance(key, int) and 0 <= key < len(obj):
            obj = obj[key]
        else:
            return default
        if obj is None:
            return default
    return obj


def replicas(value: Any, field: str, default: int = 1) -> int:
    """Replica counts as Karmada's interpreters read them: missing -> default, "3" -> 3."""
    if value is None or value == "":
        return default
    try:
        count = int(value)
    except (TypeError, ValueError):
        raise InterpretError(field, f"replicas must be a whole number, got {value!r}") from None
    if count < 0:
        raise InterpretError(field, f"replicas must not be negative, got {count}")
    return count


def _requirement(raw: dict, field: str) -> NodeSelectorRequirement:
    operator = raw.get("operator", "")
    if operator not in NODE_SELECTOR_OPERATORS:
        raise InterpretError(f"{field}.operator", f"unknown operator {operator!r}")
    return NodeSelectorRequirement(str(raw.get("key", "")), operator, tuple(str(v) for v in raw.get("values") or ()))


def _terms(raw_terms: list, field: str) -> tuple[NodeSelectorTerm, ...] | None:
    if not raw_terms:
        return None
    terms = []
    for i, term in enumerate(raw_terms):
        term = term or {}
        exprs = tuple(_requirement(r, f"{field}[{i}].matchExpressions[{j}]")
                      for j, r in enumerate(term.get("matchExpressions") or ()))
        fields = tuple(_requirement(r, f"{field}[{i}].matchFields[{j}]")
                       for j, r in enumerate(term.get("matchFields") or ()))
        terms.append(NodeSelectorTerm(exprs, fields))
    return tuple(terms)


def _tolerations(raw: list) -> tuple[Toleration, ...]:
    return tuple(
        Toleration(
            key=str(t.get("key", "")),
            operator=str(t.get("operator", "")),
            value=str(t.get("value", "")),
            effect=str(t.get("effect", "")),
            toleration_seconds=t.get("tolerationSeconds"),
        )
        for t in raw or ()
    )


def claim_from_pod_spec(spec: dict, field: str) -> NodeClaim:
    affinity_field = f"{field}.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
    raw_terms = get(spec, "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution",
                    "nodeSelectorTerms", default=[])
    return NodeClaim(
        node_selector=tuple(sorted((str(k), str(v)) for k, v in (spec.get("nodeSelector") or {}).items())),
        affinity_terms=_terms(raw_terms, affinity_field),
        tolerations=_tolerations(spec.get("tolerations")),
    )


def shape_from_template(template: Any, namespace: str, field: str) -> ReplicaShape:
    """Per-replica requirements of a pod template (None template: no requirements)."""
    spec = get(template, "spec", default={})
    if not isinstance(spec, dict):
        raise InterpretError(f"{field}.spec", "must be an object")
    try:
        requests = pod_requests({"spec": spec})
    except ValueError as error:
        raise InterpretError(f"{field}.spec", str(error)) from None
    return ReplicaShape(
        requests=tuple(sorted((name, amount) for name, amount in requests.items() if amount > 0)),
        claim=claim_from_pod_spec(spec, f"{field}.spec"),
        namespace=namespace,
        priority_class=str(spec.get("priorityClassName") or ""),
    )


def component(name: str, replica_count: int, template: Any, namespace: str, field: str) -> Component:
    return Component(name, replica_count, shape_from_template(template, namespace, f"{field}.template"))
