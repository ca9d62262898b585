"""Which members a policy lets the job go to, as Karmada's scheduler filter plugins. Pure.

Each check returns None when the member passes, else a reason a person reads:
- ClusterAffinity (util.ClusterMatches): exclude first; then labelSelector, fieldSelector
  (provider / region as labels, zone against spec.zones) and clusterNames, all ANDed;
  empty parts match everything;
- TaintToleration: the member's NoSchedule / NoExecute taints must be tolerated by the
  policy's clusterTolerations;
- APIEnablement: when the Cluster status lists its APIs, the job's kind must be among them.
`overflow_order` places a member in a clusterAffinities term: its primary group, one of its
overflowAffinities groups (Karmada v1.18+, workloads only), or filtered out.
"""

from __future__ import annotations

from collections.abc import Sequence

from estimator.api import (
    NO_EXECUTE,
    NO_SCHEDULE,
    OP_DOES_NOT_EXIST,
    OP_EXISTS,
    OP_IN,
    OP_NOT_IN,
    Toleration,
    requirement_matches,
    tolerates,
)
from scheduler_client.karmada.cluster import Cluster
from scheduler_client.karmada.policy import AffinityTerm, ClusterAffinity


def _zones_match(operator: str, values: Sequence[str], zones: Sequence[str]) -> bool:
    if operator == OP_IN:
        return any(z in values for z in zones)
    if operator == OP_NOT_IN:
        return not any(z in values for z in zones)
    if operator == OP_EXISTS:
        return bool(zones)
    if operator == OP_DOES_NOT_EXIST:
        return not zones
    return False  # Gt/Lt on zones: unsupported in Karmada, matches nothing


def affinity_rejects(affinity: ClusterAffinity, member: Cluster) -> str | None:
    if member.name in affinity.exclude:
        return "excluded by the policy's clusterAffinity (exclude)"
    if affinity.label_selector is not None and not affinity.label_selector.matches(member.labels):
        return f"labels do not match the policy's labelSelector ({affinity.label_selector_text})"
    fields = {key: value for key, value in (("provider", member.provider), ("region", member.region)) if value}
    for req in affinity.field_selector:
        ok = (
            _zones_match(req.operator, req.values, member.zones)
            if req.key == "zone"
            else requirement_matches(fields, req)
        )
        if not ok:
            return f"fieldSelector {req.key} {req.operator} {','.join(req.values)} does not match"
    if affinity.cluster_names and member.name not in affinity.cluster_names:
        return "not in the policy's clusterAffinity.clusterNames"
    return None


def taints_reject(member: Cluster, tolerations: Sequence[Toleration]) -> str | None:
    untolerated = [t for t in member.taints if t.effect in (NO_SCHEDULE, NO_EXECUTE) and not tolerates(tolerations, t)]
    if not untolerated:
        return None
    return (
        "cluster taint "
        + ", ".join(f"{t.key}{'=' + t.value if t.value else ''}:{t.effect}" for t in untolerated)
        + " not tolerated by the policy's clusterTolerations"
    )


def api_rejects(member: Cluster, api_version: str, kind: str) -> str | None:
    if member.api_enablements is None or (api_version, kind) in member.api_enablements:
        return None
    return f"does not serve {kind} ({api_version}) according to its Cluster status (apiEnablements)"


def overflow_order(term: AffinityTerm, member: Cluster, workload: bool = True) -> int | None:
    """0 in the term's primary group, i+1 in its i-th overflow group, None when filtered out."""
    if affinity_rejects(term.affinity, member) is None:
        return 0
    if workload:
        for i, overflow in enumerate(term.overflow):
            if affinity_rejects(overflow.affinity, member) is None:
                return i + 1
    return None
