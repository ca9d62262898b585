"""PropagationPolicy / ClusterPropagationPolicy -> what placement and doctor need. Pure.

Karmada's admission defaults are applied as its webhook and CRD would: a spread constraint
with neither field nor label spreads by `cluster`; minGroups 0 becomes 1; a replicaScheduling
without a type is `Divided`; a Divided one without a division preference becomes `Weighted`
(remembered, so doctor can say "defaulted").

The Karmada facts the helpers encode (pkg/scheduler/core):
- one member, component sets: only with a spread constraint spreadByField=cluster,
  minGroups=1, maxGroups=1 (isMultiTemplateSchedulingApplicable);
- Divided + Weighted ignores spread constraints entirely (shouldIgnoreSpreadConstraint) when
  there is no weightPreference at all, or static weights without a dynamic weight: every
  matched member gets a copy. `weightPreference: {}` and static + dynamic weights keep them;
- no replicaScheduling, or Duplicated, ignores available sets when selecting
  (shouldIgnoreAvailableResource): the top member is taken even if it fits 0 sets.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from estimator.api import NODE_SELECTOR_OPERATORS, LabelSelector, NodeSelectorRequirement, Toleration, label_selector
from scheduler_client.fields import FieldError, mapping, sequence

POLICY_KINDS = ("PropagationPolicy", "ClusterPropagationPolicy")
SPREAD_FIELDS = ("cluster", "region", "zone", "provider")
DUPLICATED, DIVIDED = "Duplicated", "Divided"
AGGREGATED, WEIGHTED = "Aggregated", "Weighted"


class PolicyError(FieldError):
    """A policy field we cannot use; names the field."""


@dataclass(frozen=True)
class ClusterAffinity:
    cluster_names: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    label_selector: LabelSelector | None = None
    label_selector_text: str = ""
    field_selector: tuple[NodeSelectorRequirement, ...] = ()

    @property
    def is_empty(self) -> bool:
        return not (self.cluster_names or self.exclude or self.label_selector or self.field_selector)

    def describe(self) -> str:
        parts = []
        if self.cluster_names:
            parts.append("clusterNames " + ", ".join(self.cluster_names))
        if self.exclude:
            parts.append("exclude " + ", ".join(self.exclude))
        if self.label_selector_text:
            parts.append("labelSelector " + self.label_selector_text)
        if self.field_selector:
            parts.append(
                "fieldSelector " + ", ".join(f"{r.key} {r.operator} {','.join(r.values)}" for r in self.field_selector)
            )
        return "; ".join(parts) or "every member"


@dataclass(frozen=True)
class OverflowAffinity:
    name: str
    affinity: ClusterAffinity


@dataclass(frozen=True)
class AffinityTerm:
    name: str  # "" for spec.placement.clusterAffinity
    affinity: ClusterAffinity
    # Karmada v1.18+: further member groups a workload may use, ranked after the primary group.
    overflow: tuple[OverflowAffinity, ...] = ()


@dataclass(frozen=True)
class SpreadConstraint:
    spread_by_field: str
    spread_by_label: str
    min_groups: int
    max_groups: int


@dataclass(frozen=True)
class ReplicaScheduling:
    type: str
    division_preference: str = ""
    division_defaulted: bool = False
    static_weights: int = 0
    dynamic_weight: str = ""
    weight_preference_given: bool = False  # `weightPreference: {}` counts: Karmada tests for nil


@dataclass(frozen=True)
class Placement:
    affinity_terms: tuple[AffinityTerm, ...] = (AffinityTerm("", ClusterAffinity()),)
    cluster_tolerations: tuple[Toleration, ...] = ()
    spread_constraints: tuple[SpreadConstraint, ...] = ()
    replica_scheduling: ReplicaScheduling | None = None

    def single_member_spread(self) -> bool:
        return any(
            sc.spread_by_field == "cluster" and sc.min_groups == 1 and sc.max_groups == 1
            for sc in self.spread_constraints
        )

    def spread_ignored(self) -> bool:
        rs = self.replica_scheduling
        return (
            rs is not None
            and rs.type == DIVIDED
            and rs.division_preference == WEIGHTED
            and (not rs.weight_preference_given or (rs.static_weights > 0 and not rs.dynamic_weight))
        )

    def availability_ignored(self) -> bool:
        return self.replica_scheduling is None or self.replica_scheduling.type == DUPLICATED

    def describe(self) -> str:
        spread = (
            ", ".join(
                f"spreadByField {sc.spread_by_field or sc.spread_by_label} {sc.min_groups}..{sc.max_groups}"
                for sc in self.spread_constraints
            )
            or "no spread constraint"
        )
        terms = " | ".join(
            (f"{t.name}: " if t.name else "")
            + t.affinity.describe()
            + "".join(f" (overflow {o.name}: {o.affinity.describe()})" for o in t.overflow)
            for t in self.affinity_terms
        )
        return f"{spread}; clusterAffinity {terms}"


@dataclass(frozen=True)
class ResourceSelector:
    api_version: str
    kind: str
    namespace: str
    name: str
    label_selector: LabelSelector | None


# How specifically a resource selector matches (Karmada's util.ImplicitPriority).
MISMATCH, MATCH_ALL, MATCH_LABEL_SELECTOR, MATCH_NAME = 0, 1, 2, 3


@dataclass(frozen=True)
class Policy:
    kind: str
    namespace: str
    name: str
    resource_selectors: tuple[ResourceSelector, ...]
    placement: Placement
    priority: int = 0  # spec.priority, Karmada's explicit priority (absent: 0)
    deleting: bool = False  # metadata.deletionTimestamp is set: Karmada matches nothing with it

    @property
    def key(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}" if self.namespace else f"{self.kind} {self.name}"

    def match_priority(self, manifest: Mapping) -> int:
        """ResourceMatchSelectorsPriority: the best of the selectors' matches (MISMATCH..MATCH_NAME);
        a selector's namespace defaults to the policy's, as the webhook does."""
        meta = manifest.get("metadata") or {}
        labels = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
        best = MISMATCH
        for rs in self.resource_selectors:
            namespace = rs.namespace or self.namespace
            if rs.api_version != manifest.get("apiVersion") or rs.kind != manifest.get("kind"):
                continue
            if namespace and (meta.get("namespace") or "default") != namespace:
                continue
            if rs.name:
                priority = MATCH_NAME if rs.name == meta.get("name") else MISMATCH
            elif rs.label_selector is None:
                priority = MATCH_ALL
            else:
                priority = MATCH_LABEL_SELECTOR if rs.label_selector.matches(labels) else MISMATCH
            best = max(best, priority)
        return best

    def selects(self, manifest: Mapping) -> bool:
        """ResourceMatches for any selector."""
        return self.match_priority(manifest) > MISMATCH


def matching_policy(policies: Sequence[Policy], manifest: Mapping) -> Policy | None:
    """The policy Karmada's resource detector applies to a new resource template
    (pkg/detector: LookForMatchedPolicy, then LookForMatchedClusterPolicy):
    PropagationPolicies of the resource's namespace first, ClusterPropagationPolicies only
    when none matches; policies being deleted are skipped; among the matching ones the
    highest spec.priority wins, then the most specific selector match (name over label
    selector over kind alone), then the smallest name."""
    namespace = str((manifest.get("metadata") or {}).get("namespace") or "default")
    for kind in POLICY_KINDS:
        ranked = []
        for policy in policies:
            if policy.kind != kind or policy.deleting:
                continue
            if kind == "PropagationPolicy" and policy.namespace != namespace:
                continue
            implicit = policy.match_priority(manifest)
            if implicit > MISMATCH:
                ranked.append(((-policy.priority, -implicit, policy.name), policy))
        if ranked:
            return min(ranked, key=lambda pair: pair[0])[1]
    return None


# --- parsing ----------------------------------------------------------------------------


def _mapping(value: Any, field: str) -> Mapping:
    return mapping(value, field, PolicyError)


def _list(value: Any, field: str) -> list:
    return sequence(value, field, PolicyError)


def _strings(value: Any, field: str) -> tuple[str, ...]:
    return tuple(str(v) for v in _list(value, field))


def _int(value: Any, field: str, default: int = 0) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise PolicyError(field, f"must be an integer, got {value!r}")
    if value < 0:
        raise PolicyError(field, f"must not be negative, got {value}")
    return value


def _selector(value: Any, field: str) -> tuple[LabelSelector | None, str]:
    if value is None:
        return None, ""
    try:
        selector = label_selector(_mapping(value, field))
    except ValueError as error:
        raise PolicyError(field, str(error)) from None
    text = ", ".join(
        [f"{k}={v}" for k, v in _mapping(value.get("matchLabels"), f"{field}.matchLabels").items()]
        + [
            f"{e.get('key')} {e.get('operator')} {','.join(map(str, e.get('values') or ()))}".strip()
            for e in _list(value.get("matchExpressions"), f"{field}.matchExpressions")
        ]
    )
    return selector, text or "{} (every member)"


def _field_selector(value: Any, field: str) -> tuple[NodeSelectorRequirement, ...]:
    requirements = []
    for i, expr in enumerate(_list(_mapping(value, field).get("matchExpressions"), f"{field}.matchExpressions")):
        expr_field = f"{field}.matchExpressions[{i}]"
        expr = _mapping(expr, expr_field)
        if expr.get("key") not in ("provider", "region", "zone"):
            raise PolicyError(f"{expr_field}.key", f"must be provider, region or zone, got {expr.get('key')!r}")
        if expr.get("operator") not in NODE_SELECTOR_OPERATORS:
            raise PolicyError(f"{expr_field}.operator", f"unknown operator {expr.get('operator')!r}")
        requirements.append(
            NodeSelectorRequirement(expr["key"], expr["operator"], _strings(expr.get("values"), f"{expr_field}.values"))
        )
    return tuple(requirements)


def parse_cluster_affinity(value: Any, field: str) -> ClusterAffinity:
    value = _mapping(value, field)
    selector, text = _selector(value.get("labelSelector"), f"{field}.labelSelector")
    return ClusterAffinity(
        cluster_names=_strings(value.get("clusterNames"), f"{field}.clusterNames"),
        exclude=_strings(value.get("exclude"), f"{field}.exclude"),
        label_selector=selector,
        label_selector_text=text,
        field_selector=_field_selector(value.get("fieldSelector"), f"{field}.fieldSelector")
        if value.get("fieldSelector") is not None
        else (),
    )


def _spread_constraints(value: Any, field: str) -> tuple[SpreadConstraint, ...]:
    constraints = []
    for i, raw in enumerate(_list(value, field)):
        item_field = f"{field}[{i}]"
        raw = _mapping(raw, item_field)
        by_field, by_label = str(raw.get("spreadByField") or ""), str(raw.get("spreadByLabel") or "")
        if by_field and by_field not in SPREAD_FIELDS:
            raise PolicyError(
                f"{item_field}.spreadByField", f"must be one of {', '.join(SPREAD_FIELDS)}, got {by_field!r}"
            )
        if by_field and by_label:
            raise PolicyError(item_field, "spreadByField and spreadByLabel cannot both be set")
        min_groups = _int(raw.get("minGroups"), f"{item_field}.minGroups") or 1
        max_groups = _int(raw.get("maxGroups"), f"{item_field}.maxGroups")
        if max_groups and max_groups < min_groups:
            raise PolicyError(f"{item_field}.maxGroups", f"{max_groups} is lower than minGroups {min_groups}")
        defaulted = not by_field and not by_label
        constraints.append(SpreadConstraint("cluster" if defaulted else by_field, by_label, min_groups, max_groups))
    return tuple(constraints)


def _replica_scheduling(value: Any, field: str) -> ReplicaScheduling | None:
    if value is None:
        return None
    value = _mapping(value, field)
    kind = str(value.get("replicaSchedulingType") or DIVIDED)
    if kind not in (DUPLICATED, DIVIDED):
        raise PolicyError(f"{field}.replicaSchedulingType", f"must be Duplicated or Divided, got {kind!r}")
    preference = str(value.get("replicaDivisionPreference") or "")
    if preference and preference not in (AGGREGATED, WEIGHTED):
        raise PolicyError(f"{field}.replicaDivisionPreference", f"must be Aggregated or Weighted, got {preference!r}")
    defaulted = kind == DIVIDED and not preference
    weights = _mapping(value.get("weightPreference"), f"{field}.weightPreference")
    return ReplicaScheduling(
        type=kind,
        division_preference=WEIGHTED if defaulted else preference,
        division_defaulted=defaulted,
        static_weights=len(_list(weights.get("staticWeightList"), f"{field}.weightPreference.staticWeightList")),
        dynamic_weight=str(weights.get("dynamicWeight") or ""),
        weight_preference_given=value.get("weightPreference") is not None,
    )


def overflow_allowed(rs: ReplicaScheduling | None) -> bool:
    """Karmada's validation: overflowAffinities only with Divided Aggregated or a dynamic weight."""
    if rs is None or rs.type != DIVIDED:
        return False
    return rs.division_preference == AGGREGATED or (rs.division_preference == WEIGHTED and bool(rs.dynamic_weight))


def _overflow(raw: Mapping, term_field: str, primary: ClusterAffinity, name: str) -> tuple[OverflowAffinity, ...]:
    if raw.get("overflowAffinities") is None:
        return ()
    field = f"{term_field}.overflowAffinities"
    if primary.is_empty:
        raise PolicyError(field, "can only be used together with the inline clusterAffinity of the term")
    seen = {name}
    out = []
    for i, item in enumerate(_list(raw["overflowAffinities"], field)):
        item = _mapping(item, f"{field}[{i}]")
        overflow_name = item.get("affinityName")
        if not isinstance(overflow_name, str) or not overflow_name:
            raise PolicyError(f"{field}[{i}].affinityName", "is required")
        if overflow_name in seen:
            raise PolicyError(
                f"{field}[{i}].affinityName", f"{overflow_name!r} repeats the term's or another overflow group's name"
            )
        seen.add(overflow_name)
        out.append(OverflowAffinity(overflow_name, parse_cluster_affinity(item, f"{field}[{i}]")))
    return tuple(out)


def _tolerations(value: Any, field: str) -> tuple[Toleration, ...]:
    tolerations = []
    for i, raw in enumerate(_list(value, field)):
        raw = _mapping(raw, f"{field}[{i}]")
        tolerations.append(
            Toleration(
                str(raw.get("key") or ""),
                str(raw.get("operator") or ""),
                str(raw.get("value") or ""),
                str(raw.get("effect") or ""),
            )
        )
    return tuple(tolerations)


def parse_placement(value: Any, field: str = "spec.placement") -> Placement:
    value = _mapping(value, field)
    terms: list[AffinityTerm] = []
    if value.get("clusterAffinity") is not None and value.get("clusterAffinities") is not None:
        raise PolicyError(field, "clusterAffinity and clusterAffinities cannot both be set")
    if value.get("clusterAffinities") is not None:
        for i, raw in enumerate(_list(value["clusterAffinities"], f"{field}.clusterAffinities")):
            term_field = f"{field}.clusterAffinities[{i}]"
            raw = _mapping(raw, term_field)
            name = raw.get("affinityName")
            if not isinstance(name, str) or not name:
                raise PolicyError(f"{term_field}.affinityName", "is required")
            primary = parse_cluster_affinity(raw, term_field)
            terms.append(AffinityTerm(name, primary, _overflow(raw, term_field, primary, name)))
    else:
        terms.append(AffinityTerm("", parse_cluster_affinity(value.get("clusterAffinity"), f"{field}.clusterAffinity")))
    replica_scheduling = _replica_scheduling(value.get("replicaScheduling"), f"{field}.replicaScheduling")
    for i, term in enumerate(terms):
        if term.overflow and not overflow_allowed(replica_scheduling):
            raise PolicyError(
                f"{field}.clusterAffinities[{i}].overflowAffinities",
                "can only be used together with dynamic weight or aggregated scheduling "
                "(replicaScheduling Divided, Aggregated or a dynamicWeight)",
            )
    return Placement(
        affinity_terms=tuple(terms),
        cluster_tolerations=_tolerations(value.get("clusterTolerations"), f"{field}.clusterTolerations"),
        spread_constraints=_spread_constraints(value.get("spreadConstraints"), f"{field}.spreadConstraints"),
        replica_scheduling=replica_scheduling,
    )


def parse_policy(obj: Any) -> Policy:
    obj = _mapping(obj, "<document>")
    kind = obj.get("kind")
    if kind not in POLICY_KINDS:
        raise PolicyError("kind", f"expected PropagationPolicy or ClusterPropagationPolicy, got {kind!r}")
    meta = _mapping(obj.get("metadata"), "metadata")
    spec = _mapping(obj.get("spec"), "spec")
    selectors = []
    for i, raw in enumerate(_list(spec.get("resourceSelectors"), "spec.resourceSelectors")):
        rs_field = f"spec.resourceSelectors[{i}]"
        raw = _mapping(raw, rs_field)
        for key in ("apiVersion", "kind"):
            if not raw.get(key):
                raise PolicyError(f"{rs_field}.{key}", "is required")
        selector, _ = _selector(raw.get("labelSelector"), f"{rs_field}.labelSelector")
        selectors.append(
            ResourceSelector(
                str(raw["apiVersion"]),
                str(raw["kind"]),
                str(raw.get("namespace") or ""),
                str(raw.get("name") or ""),
                selector,
            )
        )
    namespace = str(meta.get("namespace") or "default") if kind == "PropagationPolicy" else ""
    priority = spec.get("priority")
    if priority is not None and (isinstance(priority, bool) or not isinstance(priority, int)):
        raise PolicyError("spec.priority", f"must be an integer, got {priority!r}")
    return Policy(
        str(kind),
        namespace,
        str(meta.get("name") or ""),
        tuple(selectors),
        parse_placement(spec.get("placement")),
        priority=priority or 0,
        deleting=bool(meta.get("deletionTimestamp")),
    )
