"""A PlacementResult for people (table) and for programs (JSON). Pure formatting.

JSON: {"job": {...}, "components": [...], "members": [{"name", "estimates": {"general": n,
"resource-models": n|null, "accurate": n|null}, "sets": n, "eligible": bool, "reasons": [...],
"verdict", "estimateReasons"}], "selected": name|null, "warnings": [...], "strategy",
"affinityTerm"}. An estimate of -1 means "this estimator does not know"; null, not asked.
"""

from __future__ import annotations

from typing import Any

from estimator.model import Component
from scheduler_client.placement import ESTIMATORS, PlacementResult
from scheduler_client.units import requests_text
from scheduler_client.wire import quantity_string

UNKNOWN_MARK, NOT_ASKED_MARK = "?", "-"


def _component_json(component: Component) -> dict[str, Any]:
    shape = component.shape
    out: dict[str, Any] = {
        "name": component.name,
        "replicas": component.replicas,
        "requests": {name: quantity_string(name, amount) for name, amount in shape.requests},
    }
    if shape.claim.node_selector:
        out["nodeSelector"] = dict(shape.claim.node_selector)
    if shape.claim.tolerations:
        out["tolerations"] = [{k: v for k, v in (("key", t.key), ("operator", t.operator), ("value", t.value),
                                                 ("effect", t.effect)) if v} for t in shape.claim.tolerations]
    if shape.claim.affinity_terms is not None:
        out["requiredNodeAffinityTerms"] = len(shape.claim.affinity_terms)
    if shape.priority_class:
        out["priorityClassName"] = shape.priority_class
    return out


def to_json(result: PlacementResult) -> dict[str, Any]:
    job = result.job
    return {
        "job": {"apiVersion": job.api_version, "kind": job.kind, "namespace": job.namespace, "name": job.name},
        "components": [_component_json(c) for c in job.components],
        "members": [
            {
                "name": m.name,
                "estimates": {name: m.estimates[name] for name in ESTIMATORS},
                "sets": m.sets,
                "eligible": m.eligible,
                "reasons": list(m.reasons),
                "verdict": m.verdict,
                "estimateReasons": {name: m.estimate_reasons[name] for name in ESTIMATORS},
            }
            for m in result.members
        ],
        "selected": result.selected,
        "warnings": list(result.warnings),
        "strategy": result.strategy,
        "affinityTerm": result.affinity_term,
    }


def set_text(components: tuple[Component, ...]) -> str:
    return " + ".join(f"{c.name} {c.replicas} x {requests_text(c.shape.requests)}" for c in components)


def _mark(value: int | None) -> str:
    if value is None:
        return NOT_ASKED_MARK
    return UNKNOWN_MARK if value < 0 else str(value)


def columns(rows: list[tuple[str, ...]], indent: str = "  ") -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [(indent + "  ".join(cell.ljust(w) for cell, w in zip(row, widths))).rstrip() for row in rows]


def to_table(result: PlacementResult) -> str:
    job = result.job
    lines = [f"{job.kind} {job.namespace}/{job.name}: one set = {set_text(job.components)}",
             f"policy: {result.placement.describe()}", ""]
    rows = [("member", *ESTIMATORS, "sets", "verdict")]
    rows += [(m.name, *(_mark(m.estimates[name]) for name in ESTIMATORS), _mark(m.sets), m.verdict)
             for m in result.members]
    lines += columns(rows)
    lines.append(f"  ({UNKNOWN_MARK} = the estimator answered -1, unknown; {NOT_ASKED_MARK} = not asked)")
    lines.append("")
    width = max((len(m.name) for m in result.members), default=0)
    for m in result.members:
        for i, reason in enumerate(m.reasons):
            lines.append(f"  {(m.name if i == 0 else '').ljust(width)}  {reason}")
    lines.append("")
    term = f" (clusterAffinities term {result.affinity_term})" if result.affinity_term and result.selected else ""
    lines.append(f"selected: {result.selected}{term}" if result.selected else
                 "selected: none - no member can host one complete set")
    if result.warnings:
        lines.append("warnings:")
        lines += [f"  ! {w}" for w in result.warnings]
    return "\n".join(lines)
