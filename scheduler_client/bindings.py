"""ResourceBindings -> the workloads karmada-scheduler holds "in flight" on each member. Pure.

Karmada v1.18 with SchedulingOvercommitProtection (pkg/scheduler: updateAssumptionsCache,
pkg/scheduler/cache AssigningResourceBindingCache): once it has patched a binding's schedule
result, the scheduler *assumes* the workload on every target member, until its pods show up
as a Healthy workload there, and sends those assumed workloads with every later estimate for
that member; both the general and the accurate estimators deduct them first. Without this,
jobs submitted together would all be counted against the same free capacity.

What the scheduler assumes, per target member of a ResourceBinding (not ClusterResourceBindings):
- a workload with components (spec.components): all of them, each with its full replicas;
- a single-template workload: one component named after the resource, the target's replicas,
  spec.replicaRequirements;
- a binding that is not a workload (no replicas, requirements or components): nothing;
- in the namespace of the resource (spec.resource.namespace).
When it stops: status.aggregatedStatus shows the workload Healthy on that member; the binding
is deleted; or 5 minutes (DefaultAssumptionTTL) after it was recorded, which is when the
scheduler patched the result: read here as status.lastScheduledTime (whole seconds).

What the API cannot show: the assumptions live in the scheduler's memory, so a scheduler
restarted since a binding was scheduled has forgotten it; and a result patched a moment ago
may not have its lastScheduledTime yet (then it counts as just scheduled).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from estimator.api import AssumedWorkload, Component, NodeClaim, ReplicaShape, parse_resource_list
from scheduler_client.fields import FieldError, mapping, sequence
from scheduler_client.interpreters.common import InterpretError, affinity_terms, node_selector, tolerations

ASSUMPTION_TTL_SECONDS = 5 * 60  # pkg/scheduler/cache DefaultAssumptionTTL
HEALTHY = "Healthy"


class BindingError(FieldError):
    """A ResourceBinding field we cannot use; names the field."""


@dataclass(frozen=True)
class InFlight:
    """One member's share of one binding, as the scheduler assumes it."""

    binding: str  # namespace/name of the ResourceBinding
    resource: str  # Kind namespace/name of the resource template
    member: str
    workload: AssumedWorkload
    age_seconds: float | None  # since status.lastScheduledTime; None when not written yet

    def describe(self) -> str:
        parts = ", ".join(f"{c.name} x{c.replicas}" for c in self.workload.components)
        age = "" if self.age_seconds is None else f", scheduled {self.age_seconds:.0f} s ago"
        return f"{self.resource} ({parts}{age})"


def _time(text: Any, field: str) -> datetime | None:
    if text in (None, ""):
        return None
    if not isinstance(text, str):
        raise BindingError(field, f"must be an RFC 3339 time, got {text!r}")
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise BindingError(field, f"must be an RFC 3339 time, got {text!r}") from None
    return moment if moment.tzinfo else moment.replace(tzinfo=UTC)


def _int(value: Any, field: str) -> int:
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise BindingError(field, f"must be a whole number, got {value!r}")
    return value


def _shape(requirements: Any, namespace: str, field: str) -> ReplicaShape:
    """Karmada's (Component)ReplicaRequirements: nodeClaim, resourceRequest, priorityClassName."""
    requirements = mapping(requirements, field, BindingError)
    claim_raw = mapping(requirements.get("nodeClaim"), f"{field}.nodeClaim", BindingError)
    try:
        requests = parse_resource_list(requirements.get("resourceRequest"), f"{field}.resourceRequest")
        terms_field = f"{field}.nodeClaim.hardNodeAffinity.nodeSelectorTerms"
        hard = mapping(claim_raw.get("hardNodeAffinity"), f"{field}.nodeClaim.hardNodeAffinity", BindingError)
        claim = NodeClaim(
            node_selector=node_selector(claim_raw.get("nodeSelector"), f"{field}.nodeClaim.nodeSelector"),
            affinity_terms=affinity_terms(hard.get("nodeSelectorTerms"), terms_field),
            tolerations=tolerations(claim_raw.get("tolerations"), f"{field}.nodeClaim.tolerations"),
        )
    except InterpretError as error:
        raise BindingError(error.field, error.message) from None
    except ValueError as error:
        raise BindingError(f"{field}.resourceRequest", str(error)) from None
    return ReplicaShape(
        tuple(sorted((n, a) for n, a in requests.items() if a > 0 and n != "pods")),
        claim,
        namespace,
        str(requirements.get("priorityClassName") or ""),
    )


def assumed_components(spec: Mapping, replicas: int, namespace: str, name: str) -> tuple[Component, ...]:
    """What the scheduler assumes on one target member with `replicas` written for it."""
    raw = sequence(spec.get("components"), "spec.components", BindingError)
    if raw:
        out = []
        for i, item in enumerate(raw):
            item = mapping(item, f"spec.components[{i}]", BindingError)
            replicas = _int(item.get("replicas"), f"spec.components[{i}].replicas")
            shape = _shape(item.get("replicaRequirements"), namespace, f"spec.components[{i}].replicaRequirements")
            out.append(Component(str(item.get("name") or ""), replicas, shape))
        return tuple(out)
    if spec.get("replicaRequirements") is None and not _int(spec.get("replicas"), "spec.replicas"):
        return ()  # not a workload: nothing assumed
    return (Component(name, replicas, _shape(spec.get("replicaRequirements"), namespace, "spec.replicaRequirements")),)


def in_flight(
    bindings: Sequence[Mapping],
    now: datetime,
    exclude: frozenset[str] = frozenset(),
    ttl_seconds: float = ASSUMPTION_TTL_SECONDS,
    as_given: bool = False,
) -> list[InFlight]:
    """Every (binding, member) the scheduler would still assume at `now` (timezone-aware);
    bindings named in `exclude` (namespace/name) are left out. `as_given`: every member of
    spec.clusters counts, whatever the status says (bindings a user names as in flight).
    BindingError names the field; the caller names the binding."""
    out = []
    for binding in bindings:
        meta = mapping(binding.get("metadata"), "metadata", BindingError)
        key = f"{meta.get('namespace') or ''}/{meta.get('name') or ''}"
        if key in exclude:
            continue
        spec = mapping(binding.get("spec"), "spec", BindingError)
        status = mapping(binding.get("status"), "status", BindingError)
        targets = sequence(spec.get("clusters"), "spec.clusters", BindingError)
        if not targets:
            continue
        scheduled = _time(status.get("lastScheduledTime"), "status.lastScheduledTime")
        age = None if scheduled is None else max((now - scheduled).total_seconds(), 0.0)
        if age is not None and age > ttl_seconds and not as_given:
            continue
        healthy = set()
        for i, item in enumerate(sequence(status.get("aggregatedStatus"), "status.aggregatedStatus", BindingError)):
            item = mapping(item, f"status.aggregatedStatus[{i}]", BindingError)
            if item.get("health") == HEALTHY and not as_given:
                healthy.add(str(item.get("clusterName")))
        resource = mapping(spec.get("resource"), "spec.resource", BindingError)
        namespace = str(resource.get("namespace") or "")
        name = str(resource.get("name") or "")
        described = f"{resource.get('kind') or '?'} {namespace + '/' if namespace else ''}{name}"
        for i, target in enumerate(targets):
            target = mapping(target, f"spec.clusters[{i}]", BindingError)
            member = str(target.get("name") or "")
            if not member or member in healthy:
                continue
            components = assumed_components(
                spec, _int(target.get("replicas"), f"spec.clusters[{i}].replicas"), namespace, name
            )
            if components:
                out.append(InFlight(key, described, member, AssumedWorkload(namespace, components), age))
    return out


def by_member(flights: Sequence[InFlight]) -> dict[str, tuple[AssumedWorkload, ...]]:
    grouped: dict[str, list[AssumedWorkload]] = {}
    for flight in flights:
        grouped.setdefault(flight.member, []).append(flight.workload)
    return {member: tuple(workloads) for member, workloads in grouped.items()}
