"""A PlacementResult for people (table) and for programs (JSON). Pure formatting.

JSON: {"job": {...}, "components": [...], "members": [{"name", "estimates": {"general": n,
"resource-models": n|null, "accurate": n|null}, "sets": n, "eligible": bool, "reasons": [...],
"accurateCertificate": {"bound": n|null, "provenOptimal": bool|null} (null: no certificate came),
"verdict", "estimateReasons", "components": [{"name", "replicas"}], "inFlight": [text]}],
"selected": name|null, "targets": [{"name", "replicas", "components": [{"name", "replicas"}]}],
"karmadaCompatible": bool, "karmada": {"targets": [{"name", "replicas", "components"}], "error": text|null,
"affinityTerm", "paths": [{"path": "a"|"b"|"c", "decisive", "text"}], "order": [names],
"sets": {name: n}, "rankedBy": "component sets"|"free pods"|"none", "accurateDropped", "exact",
"caveat"}, "trusted": bool, "doubt": {"member", "estimator", "reason", "unknown", "resources", "sets",
"countedBy", "text"}|null, "warnings": [...], "strategy", "affinityTerm", "controlPlane": {"server", "policy",
"policiesRead", "estimators": {member: {"address", "how"}}, "inFlight": {member: [{"binding",
"resource", "components", "ageSeconds", "text"}]}, "inFlightFrom"}
(with --karmada-kubeconfig only)}. An estimate of -1 means "this estimator does not know"; null,
not asked.

`components` of a target is Karmada v1.19's spec.clusters[].components: per component its
name and the replicas the member gets (the whole job, one set, for the cluster 1..1 spread).
Karmada writes it only with MultiplePodTemplatesScheduling on, more than one component and
that spread (else the list is empty, and absent from Karmada's object); this tool's own one
member (without --karmada-compatible) always holds the whole job, in the same shape. A
member's `components` is what it would be written with if chosen.

`targets` is this tool's answer: Karmada's own targets under --karmada-compatible, else the
one member it recommends. `trusted: false` means it recommends none although a member would be
chosen: `doubt` names that member, its accurate estimator's address, why that estimator gave no
answer and what is unknown (the job asks an extended resource, such as GPUs, that no answer
given judged per node); `selected` is then null, `targets` empty and that member's verdict
"undecided" (karmada-place exits 5). `karmada` is always Karmada's outcome: its targets as the
ResourceBinding's spec.clusters (a component job goes whole to each, written replicas 0),
or, when it places nothing, `error`, the text Karmada's scheduler reports. `exact: false`
means the case is outside the model (see `caveat`); its targets are then empty, and
`karmadaCompatible` is false even under --karmada-compatible (`targets` is this tool's own).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from estimator.api import Component
from scheduler_client.karmada import KarmadaOutcome, Target, TargetComponent
from scheduler_client.placement import PlacementResult
from scheduler_client.units import requests_text
from scheduler_client.verdicts import ESTIMATORS, Doubt
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
        out["tolerations"] = [
            {k: v for k, v in (("key", t.key), ("operator", t.operator), ("value", t.value), ("effect", t.effect)) if v}
            for t in shape.claim.tolerations
        ]
    if shape.claim.affinity_terms is not None:
        out["requiredNodeAffinityTerms"] = len(shape.claim.affinity_terms)
    if shape.priority_class:
        out["priorityClassName"] = shape.priority_class
    return out


def target_json(t: Target) -> dict[str, Any]:
    return {"name": t.name, "replicas": t.replicas, "components": components_json(t.components)}


def components_json(components: Sequence[TargetComponent]) -> list[dict[str, Any]]:
    return [{"name": c.name, "replicas": c.replicas} for c in components]


def karmada_json(k: KarmadaOutcome) -> dict[str, Any]:
    return {
        "targets": [target_json(t) for t in k.targets],
        "error": k.error,
        "affinityTerm": k.affinity_term,
        "paths": [{"path": p.path, "decisive": p.decisive, "text": p.text} for p in k.paths],
        "order": list(k.order),
        "sets": dict(k.sets),
        "rankedBy": k.ranked_by,
        "accurateDropped": k.accurate_dropped,
        "exact": k.exact,
        "caveat": k.caveat,
    }


def doubt_json(d: Doubt) -> dict[str, Any]:
    return {
        "member": d.member,
        "estimator": d.estimator or None,
        "reason": d.why,
        "unknown": d.unknown(),
        "resources": list(d.resources),
        "sets": d.sets,
        "countedBy": list(d.counted_by),
        "text": d.text(),
    }


def to_json(result: PlacementResult, control_plane: dict[str, Any] | None = None) -> dict[str, Any]:
    job = result.job
    out = {
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
                "accurateCertificate": {"bound": m.accurate_bound, "provenOptimal": m.accurate_proven_optimal},
                "components": components_json(result.components),
                "inFlight": list(result.in_flight.get(m.name, ())),
            }
            for m in result.members
        ],
        "selected": result.selected,
        "targets": [target_json(t) for t in result.targets],
        "karmadaCompatible": result.karmada_compatible,
        "karmada": karmada_json(result.karmada) if result.karmada else None,
        "trusted": result.undecided is None,
        "doubt": doubt_json(result.undecided) if result.undecided else None,
        "warnings": list(result.warnings),
        "strategy": result.strategy,
        "affinityTerm": result.affinity_term,
    }
    if control_plane is not None:
        out["controlPlane"] = control_plane
    return out


def components_text(components: Sequence[TargetComponent]) -> str:
    return ", ".join(f"{c.name} {c.replicas}" for c in components)


def set_text(components: tuple[Component, ...]) -> str:
    return " + ".join(f"{c.name} {c.replicas} x {requests_text(c.shape.requests)}" for c in components)


def _mark(value: int | None) -> str:
    if value is None:
        return NOT_ASKED_MARK
    return UNKNOWN_MARK if value < 0 else str(value)


def columns(rows: Sequence[tuple[str, ...]], indent: str = "  ") -> list[str]:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [(indent + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True))).rstrip() for row in rows]


def karmada_lines(result: PlacementResult) -> list[str]:
    k = result.karmada
    if k is None:
        return []
    if not k.exact:
        return [f"Karmada: not modelled here ({k.caveat})"]
    where = ", ".join(t.name for t in k.targets)
    term = f" (clusterAffinities term {k.affinity_term})" if k.affinity_term and k.targets else ""
    if result.karmada_compatible:
        lines = []
    elif k.targets:
        same = [t.name for t in k.targets] == [t.name for t in result.targets]
        lines = [f"Karmada would place it on: {where}{term}" + (" (the same)" if same else "")]
    else:
        lines = [f"Karmada would place nothing: {k.error}"]
    lines += [f"  Karmada path {p.text}" for p in k.paths]
    return lines


def control_plane_lines(control_plane: dict[str, Any] | None) -> list[str]:
    if not control_plane:
        return []
    lines = [f"control plane: {control_plane['server']}"]
    if control_plane["policy"]:
        lines.append(
            f"  policy: {control_plane['policy']} selects the job (of {control_plane['policiesRead']} read), "
            "as Karmada's resource detector picks it"
        )
    else:
        lines.append("  policy: the --policy file (the control plane's policies were not read)")
    for name, est in control_plane["estimators"].items():
        lines.append(f"  estimator of {name}: {est['address'] or 'none'} ({est['how']})")
    flights = control_plane["inFlight"]
    for name, items in flights.items():
        lines.append(f"  in flight on {name}: {'; '.join(item['text'] for item in items)}")
    if not flights:
        lines.append(f"  in flight: nothing (from {control_plane['inFlightFrom']})")
    return lines + [""]


def to_table(result: PlacementResult, control_plane: dict[str, Any] | None = None) -> str:
    job = result.job
    lines = control_plane_lines(control_plane)
    lines += [
        f"{job.kind} {job.namespace}/{job.name}: one set = {set_text(job.components)}",
        f"policy: {result.placement.describe()}",
        "",
    ]
    rows: list[tuple[str, ...]] = [("member", *ESTIMATORS, "sets", "verdict")]
    rows += [
        (m.name, *(_mark(m.estimates[name]) for name in ESTIMATORS), _mark(m.sets), m.verdict) for m in result.members
    ]
    lines += columns(rows)
    lines.append(f"  ({UNKNOWN_MARK} = the estimator answered -1, unknown; {NOT_ASKED_MARK} = not asked)")
    lines.append("")
    width = max((len(m.name) for m in result.members), default=0)
    for m in result.members:
        for i, reason in enumerate(m.reasons):
            lines.append(f"  {(m.name if i == 0 else '').ljust(width)}  {reason}")
    lines.append("")
    term = f" (clusterAffinities term {result.affinity_term})" if result.affinity_term and result.selected else ""
    if result.karmada_compatible and len(result.targets) > 1:
        lines.append(f"selected: {', '.join(t.name for t in result.targets)} (Karmada copies the whole job to each)")
    elif result.karmada_compatible and not result.targets and result.karmada and result.karmada.error:
        lines.append(f"selected: none - Karmada: {result.karmada.error}")
    elif result.undecided:
        d = result.undecided
        where = f" at {d.estimator}" if d.estimator else ""
        lines += [
            f"selected: undecided - {d.member} would be chosen ({d.sets} set(s) by {', '.join(d.counted_by)}), "
            "but the answer that decides it is unknown",
            f"  {d.member}: its accurate estimator{where} gave no answer: {d.why}",
            f"  unknown: {d.unknown()}",
        ]
    else:
        lines.append(
            f"selected: {result.selected}{term}"
            if result.selected
            else "selected: none - no member can host one complete set"
        )
    written = [t for t in result.targets if t.components]
    if written:
        lines.append(
            f"components: {components_text(written[0].components)} on "
            f"{', '.join(t.name for t in written)} (spec.clusters[].components, as Karmada v1.19 writes them)"
        )
    elif result.karmada_compatible and result.targets:
        lines.append(
            "components: none written (Karmada v1.19 writes them only with MultiplePodTemplatesScheduling "
            "on, several components and a cluster spread 1..1)"
        )
    lines += karmada_lines(result)
    if result.warnings:
        lines.append("warnings:")
        lines += [f"  ! {w}" for w in result.warnings]
    return "\n".join(lines)
