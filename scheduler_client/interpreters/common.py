"""Shared pieces of the job interpreters: the Job result, field access, replica counts and
pod template -> per-replica requirements (as Karmada's kube.accuratePodRequirements).

Requests are computed like the kube-scheduler (estimator.core.podrequests: sidecar-aware, pod-level
resources, overhead); the node claim carries nodeSelector, required node affinity and
tolerations; plus priorityClassName and the job's namespace. Karmada's Lua interpreters do
the same with `util.Resource.AddPodTemplateRequest`, which ignores sidecars and pod-level
resources: for the templates its test data use, both give the same numbers.

Errors name the field (`spec.pytorchReplicaSpecs.Worker.replicas`); the caller adds the file.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from estimator.api import (
    NODE_SELECTOR_OPERATORS,
    Component,
    NodeClaim,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    ReplicaShape,
    Toleration,
    pod_requests,
)
from scheduler_client.fields import FieldError
from scheduler_client.fields import mapping as _mapping
from scheduler_client.fields import sequence as _sequence


class InterpretError(FieldError):
    """A job manifest we cannot turn into components; names the field."""


@dataclass(frozen=True)
class Job:
    api_version: str
    kind: str
    namespace: str
    name: str
    components: tuple[Component, ...]
    # Where we read the job differently from Karmada's interpreter, or had to assume
    # something; shown to the user, never silent.
    notes: tuple[str, ...] = ()

    @property
    def object_key(self) -> str:
        """The gRPC `object` metadata value the karmada-scheduler sends."""
        return f"kind={self.kind}, name={self.namespace}/{self.name}"

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]


def get(obj: Any, *path: str | int, default: Any = None) -> Any:
    """obj[path[0]][path[1]]...; `default` when any step is missing or null."""
    for key in path:
        if isinstance(obj, Mapping) and isinstance(key, str):
            obj = obj.get(key)
        elif isinstance(obj, list) and isinstance(key, int) and 0 <= key < len(obj):
            obj = obj[key]
        else:
            return default
        if obj is None:
            return default
    return obj


def mapping(value: Any, field: str) -> Mapping:
    """`value` if it is an object; {} when absent; an InterpretError naming `field` otherwise."""
    return _mapping(value, field, InterpretError)


def sequence(value: Any, field: str) -> Sequence:
    return _sequence(value, field, InterpretError)


def number(value: Any, field: str) -> Decimal | None:
    """A count or size as Karmada's Lua `to_num` reads it: missing or "" -> None; 3 or "3" -> 3."""
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise InterpretError(field, f"must be a number, got {value!r}")
    try:
        parsed = Decimal(str(value).strip())
    except InvalidOperation:
        # Karmada's to_num falls back to the default here; a typo should not vanish.
        raise InterpretError(field, f"must be a number, got {value!r}") from None
    if not parsed.is_finite():
        raise InterpretError(field, f"must be a finite number, got {value!r}")
    return parsed


def replicas(value: Any, field: str, default: int = 1) -> int:
    """Replica counts as Karmada's interpreters read them: missing or "" -> default, "3" -> 3."""
    parsed = number(value, field)
    if parsed is None:
        return default
    if parsed != parsed.to_integral_value():
        raise InterpretError(field, f"replicas must be a whole number, got {value!r}")
    if parsed < 0:
        raise InterpretError(field, f"replicas must not be negative, got {value!r}")
    return int(parsed)


def ceil_div(numerator: Decimal, denominator: Decimal) -> int:
    return math.ceil(numerator / denominator)


def metadata(manifest: Mapping) -> tuple[str, str]:
    """(namespace, name); a namespaced object without a namespace lands in `default`."""
    meta = mapping(manifest.get("metadata"), "metadata")
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise InterpretError("metadata.name", "is missing")
    return str(meta.get("namespace") or "default"), name


def make_job(manifest: Mapping, components: Sequence[Component], notes: Sequence[str] = ()) -> Job:
    namespace, name = metadata(manifest)
    return Job(
        str(manifest.get("apiVersion", "")),
        str(manifest.get("kind", "")),
        namespace,
        name,
        tuple(components),
        tuple(notes),
    )


# --- node claims ------------------------------------------------------------------------


def _requirement(raw: Any, field: str) -> NodeSelectorRequirement:
    raw = mapping(raw, field)
    operator = raw.get("operator", "")
    if operator not in NODE_SELECTOR_OPERATORS:
        raise InterpretError(
            f"{field}.operator", f"unknown operator {operator!r} (one of {', '.join(NODE_SELECTOR_OPERATORS)})"
        )
    values = tuple(str(v) for v in sequence(raw.get("values"), f"{field}.values"))
    return NodeSelectorRequirement(str(raw.get("key", "")), operator, values)


def affinity_terms(raw_terms: Any, field: str) -> tuple[NodeSelectorTerm, ...] | None:
    """nodeSelectorTerms -> model terms; None (no constraint) when there are none."""
    raw_terms = sequence(raw_terms, field)
    if not raw_terms:
        return None
    terms = []
    for i, term in enumerate(raw_terms):
        term = mapping(term, f"{field}[{i}]")
        exprs = tuple(
            _requirement(r, f"{field}[{i}].matchExpressions[{j}]")
            for j, r in enumerate(sequence(term.get("matchExpressions"), f"{field}[{i}].matchExpressions"))
        )
        fields = tuple(
            _requirement(r, f"{field}[{i}].matchFields[{j}]")
            for j, r in enumerate(sequence(term.get("matchFields"), f"{field}[{i}].matchFields"))
        )
        terms.append(NodeSelectorTerm(exprs, fields))
    return tuple(terms)


def tolerations(raw: Any, field: str) -> tuple[Toleration, ...]:
    parsed = []
    for i, t in enumerate(sequence(raw, field)):
        t = mapping(t, f"{field}[{i}]")
        seconds = t.get("tolerationSeconds")
        if seconds is not None and (isinstance(seconds, bool) or not isinstance(seconds, int)):
            raise InterpretError(f"{field}[{i}].tolerationSeconds", f"must be an integer, got {seconds!r}")
        parsed.append(
            Toleration(
                key=str(t.get("key") or ""),
                operator=str(t.get("operator") or ""),
                value=str(t.get("value") or ""),
                effect=str(t.get("effect") or ""),
                toleration_seconds=seconds,
            )
        )
    return tuple(parsed)


def node_selector(raw: Any, field: str) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((str(k), "" if v is None else str(v)) for k, v in mapping(raw, field).items()))


def claim_from_pod_spec(spec: Mapping, field: str) -> NodeClaim:
    affinity_field = f"{field}.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
    raw_terms = get(
        spec, "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms"
    )
    return NodeClaim(
        node_selector=node_selector(spec.get("nodeSelector"), f"{field}.nodeSelector"),
        affinity_terms=affinity_terms(raw_terms, affinity_field),
        tolerations=tolerations(spec.get("tolerations"), f"{field}.tolerations"),
    )


# --- requirements -----------------------------------------------------------------------


def shape_from_template(template: Any, namespace: str, field: str) -> ReplicaShape:
    """Per-replica requirements of a pod template (None template: no requirements)."""
    spec = mapping(get(mapping(template, field), "spec"), f"{field}.spec")
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
    """A component whose replicas run `template` (found at `field`.template)."""
    return Component(name, replica_count, shape_from_template(template, namespace, f"{field}.template"))


def shape(requests: Mapping[str, int], claim: NodeClaim, namespace: str, priority_class: str = "") -> ReplicaShape:
    """Per-replica requirements given directly (FlinkDeployment, SparkApplication)."""
    return ReplicaShape(tuple(sorted((n, a) for n, a in requests.items() if a > 0)), claim, namespace, priority_class)
