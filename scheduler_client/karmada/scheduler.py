"""What Karmada's scheduler does with this job, step by step as its code does. Pure.

    outcome(KarmadaInput) -> KarmadaOutcome: the target members (name + replicas, as Karmada
    writes them into the ResourceBinding) or Karmada's error text when it places nothing.

Per clusterAffinities term, four steps, one function each: filter (`_filter`: the filter
plugins, or Karmada's fit error) -> rank (`_rank`: what Karmada counts on each feasible member,
and their order) -> select (`_select`: SelectBestClusters) -> explain (`_explain`: which of the
paths (a), (b), (c) below the outcome took, and whether it decided it).

The facts followed (karmada pkg/scheduler at v1.18.2, the newest release the Go proxy serves):
- Filters (APIEnablement, TaintToleration, ClusterAffinity, SpreadConstraint). A workload's
  clusterAffinities term also admits its overflowAffinities groups; with nothing feasible the
  error is "0/N clusters are available: <count> <reason>, ...." (reasons sorted as text).
- Available sets. With MultiplePodTemplatesScheduling on and a spread constraint cluster 1..1,
  MaxAvailableComponentSets of every estimator, minimum over answers that are not -1; a member
  no estimator knows gets spec.replicas, 0 for a component job. The accurate client asks every
  feasible member under one deadline; ONE error (no connected estimator, a failed or late
  call) fails the whole call and the scheduler drops the accurate answers of EVERY member (c).
- Order: overflow group, score (0 for a new binding), available sets (more first), name.
- Selection (SelectBestClusters): no spread constraint, or one Karmada ignores (Divided +
  Weighted with no weightPreference, or static weights without a dynamic weight): every
  feasible member (a). By cluster: fewer feasible members than minGroups is an error; the
  first min(n, maxGroups) members; with replicaScheduling absent or Duplicated no capacity
  check at all (b); otherwise the swap in selectClustersByAvailableResource, and "no enough
  resource when selecting N clusters" when the total is short.
- AssignReplicas: a component job has spec.replicas 0 and no replicaRequirements, so every
  selected member gets the whole job, written as replicas 0. Karmada v1.19 (API: PR 7837,
  in v1.19.0-rc.0; scheduler: PR 7833, merged after it, read at master f8fdd02d) also writes
  spec.clusters[].components: with the gate on, more than one component and a cluster spread
  1..1, each component's name and full replicas (`target_components`).
- In-flight workloads (SchedulingOvercommitProtection): per member, the workloads the scheduler
  assumes there are deducted by the general estimator (pods and replicas x requests counted as
  allocating; pre-placed on the model nodes) and sent to the accurate estimator.
- clusterAffinities are tried in order; when all fail, the error is the first term's.
With the gate off, Karmada never reads the components of a kind it only knows through
componentResource: the job is not a workload, every member counts MaxInt32 and ties break
by name (a FlinkDeployment, which also has replicaResource, is outside this model).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from estimator.api import NO_EXECUTE, NO_SCHEDULE, AssumedWorkload, tolerates
from scheduler_client import dra
from scheduler_client.interpreters import KARMADA_BUILTIN, Job
from scheduler_client.karmada import gates as feature_gates
from scheduler_client.karmada.cluster import Cluster
from scheduler_client.karmada.clusterfilter import overflow_order
from scheduler_client.karmada.general import UNKNOWN, model_sets, requested_names, summary_sets
from scheduler_client.karmada.minimum import merge
from scheduler_client.karmada.policy import DUPLICATED, AffinityTerm, Placement
from scheduler_client.karmada.selection import select_by_available

MAX_INT32 = 2**31 - 1
# What the ranking numbers are: complete component sets (the one-member path), free pods
# (MaxAvailableReplicas with no requirements), or nothing (not a workload: MaxInt32 for all).
RANK_SETS, RANK_PODS, RANK_NONE = "component sets", "free pods", "none"
PATH_A, PATH_B, PATH_C = "a", "b", "c"
# Kinds Karmada's built-in interpreter also reads with replicaResource (GetReplicas).
_REPLICA_KINDS = frozenset({"FlinkDeployment"})
_AFFINITY_REASON = "cluster(s) did not match the placement cluster affinity constraint"
_API_REASON = "cluster(s) did not have the API resource"


@dataclass(frozen=True)
class TargetComponent:
    name: str
    replicas: int


@dataclass(frozen=True)
class Target:
    """One entry of the ResourceBinding's spec.clusters. `components` is Karmada v1.19's
    spec.clusters[].components (PRs 7837, 7833); empty where v1.19 writes none."""

    name: str
    replicas: int
    components: tuple[TargetComponent, ...] = ()


def target_components(job: Job, placement: Placement, gates: Mapping[str, bool]) -> tuple[TargetComponent, ...]:
    """What Karmada v1.19's AssignReplicas writes into each target's `components`
    (buildTargetComponents): with MultiplePodTemplatesScheduling on, more than one component
    and a cluster spread constraint 1..1 (isMultiTemplateSchedulingApplicable), every
    component of spec.components, in order, with its full replicas (the member gets one
    whole set); otherwise nothing."""
    if len(job.components) > 1 and is_workload(job, gates) and placement.single_member_spread():
        return tuple(TargetComponent(c.name, c.replicas) for c in job.components)
    return ()


@dataclass(frozen=True)
class AccurateReply:
    """What Karmada's accurate client got from one member: a value, or an error."""

    value: int | None
    error: str = ""


@dataclass(frozen=True)
class PathNote:
    path: str  # "a", "b" or "c"
    decisive: bool  # the outcome would differ without this path
    text: str


@dataclass(frozen=True)
class KarmadaInput:
    job: Job
    members: Sequence[Cluster]
    placement: Placement
    gates: Mapping[str, bool]
    accurate_enabled: bool = False  # karmada-scheduler --enable-scheduler-estimator
    accurate: Mapping[str, AccurateReply] = field(default_factory=dict)
    # Per member, the workloads the scheduler holds in flight there (bindings.py); deducted
    # only with SchedulingOvercommitProtection on, as Karmada does.
    assumed: Mapping[str, Sequence[AssumedWorkload]] = field(default_factory=dict)


@dataclass(frozen=True)
class KarmadaOutcome:
    targets: tuple[Target, ...]
    error: str | None
    affinity_term: str
    paths: tuple[PathNote, ...]
    order: tuple[str, ...]  # feasible members of the deciding term, in Karmada's order
    sets: Mapping[str, int]  # what Karmada ranked them by, in `ranked_by` units
    accurate_dropped: bool
    exact: bool = True
    caveat: str = ""
    ranked_by: str = ""  # RANK_SETS, RANK_PODS or RANK_NONE


@dataclass
class _Term:
    targets: tuple[Target, ...] = ()
    error: str | None = None
    paths: list[PathNote] = field(default_factory=list)
    order: tuple[str, ...] = ()
    sets: dict[str, int] = field(default_factory=dict)
    dropped: bool = False
    exact: bool = True
    caveat: str = ""
    ranked_by: str = ""


def is_workload(job: Job, gates: Mapping[str, bool]) -> bool:
    return bool(job.components) and gates.get(feature_gates.MULTIPLE_POD_TEMPLATES, False)


# --- filter ---------------------------------------------------------------------------


def _filter_reasons(member: Cluster, job: Job, placement: Placement, term: AffinityTerm, workload: bool) -> list[str]:
    """Every filter plugin's reason against the member. Karmada stops at the first failing plugin
    in its plugin order, which comes from a Go map (fixed per scheduler process, unknown here);
    we report API, taints, affinity, spread properties in that order."""
    reasons = []
    # A Cluster without apiEnablements is taken to serve the kind (Karmada's status controller fills them).
    if member.api_enablements is not None and (job.api_version, job.kind) not in member.api_enablements:
        reasons.append(_API_REASON)
    for taint in member.taints:
        if taint.effect in (NO_SCHEDULE, NO_EXECUTE) and not tolerates(placement.cluster_tolerations, taint):
            reasons.append(
                "cluster(s) had untolerated taint {"
                + taint.key
                + (f"={taint.value}" if taint.value else "")
                + f":{taint.effect}"
                + "}"
            )
            break
    if overflow_order(term, member, workload) is None:
        reasons.append(_AFFINITY_REASON)
    for sc in placement.spread_constraints:
        if sc.spread_by_field == "provider" and not member.provider:
            reasons.append("cluster(s) did not have provider property")
        elif sc.spread_by_field == "region" and not member.region:
            reasons.append("cluster(s) did not have region property")
        elif sc.spread_by_field == "zone" and not member.zones:
            reasons.append("cluster(s) did not have zones property")
        else:
            continue
        break
    return reasons


def fit_error(total: int, reasons: Sequence[str]) -> str:
    if total == 0 or not reasons:
        return f"0/{total} clusters are available: no cluster exists."
    counts: dict[str, int] = {}
    for reason in reasons:
        counts[reason] = counts.get(reason, 0) + 1
    return f"0/{total} clusters are available: " + ", ".join(sorted(f"{n} {r}" for r, n in counts.items())) + "."


def _filter(inp: KarmadaInput, term: AffinityTerm, workload: bool) -> tuple[list[Cluster], str | None, str]:
    """The filter step: (the feasible members in input order, the fit error when there is none,
    its caveat)."""
    feasible, reasons, several = [], [], []
    for m in inp.members:
        failed = _filter_reasons(m, inp.job, inp.placement, term, workload)
        if failed:
            reasons.append(failed[0])
            if len(failed) > 1:
                several.append(f"{m.name}: {'; '.join(failed)}")
        else:
            feasible.append(m)
    if feasible:
        return feasible, None, ""
    caveat = ""
    if several:
        caveat = (
            "members failing several filters (" + " | ".join(several) + ") are counted once, under "
            "the first failing plugin in Karmada's plugin order, which varies between scheduler "
            "processes: the reasons in the error text may differ, not the outcome"
        )
    return [], fit_error(len(inp.members), reasons), caveat


# --- rank -----------------------------------------------------------------------------


def general_sets(member: Cluster, job: Job, gates: Mapping[str, bool], assumed: Sequence[AssumedWorkload] = ()) -> int:
    """Karmada's general estimator: resource summary, bounded by the resource models when on;
    in-flight workloads deducted first when SchedulingOvercommitProtection is on."""
    if not gates.get(feature_gates.OVERCOMMIT_PROTECTION, False):
        assumed = ()
    summary = member.summary.with_assumed(assumed) if member.summary is not None else None
    answers = {"summary": summary_sets(summary, job.components, karmada_compatible=True).value}
    if gates.get(feature_gates.RESOURCE_MODELING, True):
        answers["models"] = model_sets(member.models, member.grade_counts, job.components, True, assumed).value
    merged = merge(answers)
    return merged.sets if merged.sets != UNKNOWN else 0


@dataclass(frozen=True)
class _Ranking:
    """The rank step's result: what Karmada ranks the feasible members by, and their order keys."""

    names: tuple[str, ...]  # the feasible members, in input order
    group: Mapping[str, int]  # overflow group: 0 the term's primary group, i its i-th overflow group
    sets: Mapping[str, int]  # what Karmada ranks by, in `ranked_by` units
    ranked_by: str  # RANK_SETS, RANK_PODS or RANK_NONE
    applicable: bool  # the multi-component path: a workload with a cluster spread 1..1
    # Path (c): the members whose accurate call failed (Karmada then ranks by the general
    # estimator alone), and the sets had their accurate answers been kept.
    failing: tuple[str, ...] = ()
    with_accurate: Mapping[str, int] = field(default_factory=dict)
    caveat: str = ""

    @property
    def dropped(self) -> bool:
        return bool(self.failing)

    def ranked(self, values: Mapping[str, int] | None = None) -> list[tuple[str, int]]:
        """(name, value) in Karmada's order: overflow group, value (more first), name."""
        values = self.sets if values is None else values
        return sorted(((n, values[n]) for n in self.names), key=lambda p: (self.group[p[0]], -p[1], p[0]))


def _rank(inp: KarmadaInput, feasible: Sequence[Cluster], term: AffinityTerm, workload: bool) -> _Ranking:
    """The rank step: per feasible member, what Karmada counts there (its estimators' minimum,
    free pods, or MaxInt32 when the job is not a workload)."""
    names = tuple(m.name for m in feasible)
    group = {m.name: overflow_order(term, m, workload) or 0 for m in feasible}
    applicable = workload and inp.placement.single_member_spread()
    if not workload:
        return _Ranking(names, group, {n: MAX_INT32 for n in names}, RANK_NONE, applicable)
    if not applicable:
        # Karmada asks MaxAvailableReplicas with no requirements here: free pod slots.
        assumed = inp.assumed if inp.gates.get(feature_gates.OVERCOMMIT_PROTECTION, False) else {}
        sets = {
            m.name: min(m.summary.with_assumed(assumed.get(m.name, ())).allowed_pods(), MAX_INT32) if m.summary else 0
            for m in feasible
        }
        caveat = (
            "Karmada orders these members by the accurate estimators' MaxAvailableReplicas "
            "(no requirements), which is not asked here: the order uses cluster-total free pods"
            if inp.accurate_enabled
            else ""
        )
        return _Ranking(names, group, sets, RANK_PODS, applicable, caveat=caveat)
    general = {m.name: general_sets(m, inp.job, inp.gates, inp.assumed.get(m.name, ())) for m in feasible}
    with_accurate = dict(general)
    failing: tuple[str, ...] = ()
    if inp.accurate_enabled:
        failing = tuple(n for n in names if inp.accurate.get(n, AccurateReply(None)).value is None)
        for n in names:
            reply = inp.accurate.get(n)
            if reply is not None and reply.value is not None and reply.value != UNKNOWN:
                with_accurate[n] = min(with_accurate[n], reply.value)
    return _Ranking(names, group, general if failing else with_accurate, RANK_SETS, applicable, failing, with_accurate)


# --- select ---------------------------------------------------------------------------


def _select(
    placement: Placement, ranked: Sequence[tuple[str, int]], applicable: bool
) -> tuple[list[str] | None, str | None, str]:
    """The select step (SelectBestClusters): (selected names, error, branch); branch PATH_A or
    PATH_B when Karmada selects without a capacity check, "region" when not modelled."""
    constraints = placement.spread_constraints
    if not constraints or placement.spread_ignored():
        return [n for n, _ in ranked], None, PATH_A
    fields = {sc.spread_by_field for sc in constraints}
    if "region" in fields:
        return None, None, "region"
    if "cluster" not in fields:
        return None, "failed to select clusters: just support cluster and region spread constraint", ""
    sc = [c for c in constraints if c.spread_by_field == "cluster"][-1]
    if len(ranked) < sc.min_groups:
        return (
            None,
            ("failed to select clusters: the number of feasible clusters is less than spreadConstraint.MinGroups"),
            "",
        )
    count = min(len(ranked), sc.max_groups)
    if placement.availability_ignored():
        return [n for n, _ in ranked[:count]], None, PATH_B
    picked = select_by_available(ranked, count, 1 if applicable else 0)
    if not picked:
        return None, f"failed to select clusters: no enough resource when selecting {count} clusters", ""
    return [n for n, _ in picked], None, ""


# --- explain --------------------------------------------------------------------------


def _names(items: Sequence) -> str:
    return ", ".join(items)


def _path_a(placement: Placement, selected: Sequence[str] | None) -> PathNote:
    why = (
        "the policy has no spread constraint"
        if not placement.spread_constraints
        else "replicaScheduling Divided + Weighted with no weightPreference, or static weights without a dynamic "
        "weight, makes Karmada ignore the spread constraint"
    )
    return PathNote(
        PATH_A,
        True,
        f"(a) {why}: Karmada keeps every member that passes the filters and gives the "
        f"whole job to each of them, without a capacity check: {_names(selected or [])}",
    )


def _path_b(inp: KarmadaInput, ranking: _Ranking, chosen: str) -> PathNote:
    sets = ranking.sets
    checked = select_by_available(ranking.ranked(), 1, 1) or []
    alternative = checked[0][0] if checked else None
    decisive = sets[chosen] < 1 or alternative != chosen
    state = "absent" if inp.placement.replica_scheduling is None else DUPLICATED
    fit = f"it fits {sets[chosen]} set(s)" if sets[chosen] >= 1 else _zero_sets(inp, chosen)
    return PathNote(
        PATH_B,
        decisive,
        f"(b) replicaScheduling is {state}: Karmada takes the first member in "
        f"(score, available sets, name) order without checking it fits: {chosen}; {fit}",
    )


def _path_c(inp: KarmadaInput, ranking: _Ranking, selected: list[str] | None, error: str | None) -> PathNote:
    alt_selected, alt_error, _ = _select(inp.placement, ranking.ranked(ranking.with_accurate), ranking.applicable)
    decisive = (alt_selected or None, alt_error) != (selected or None, error)
    who = "; ".join(
        f"{n}: {inp.accurate.get(n, AccurateReply(None, 'no accurate estimator')).error or 'no answer'}"
        for n in ranking.failing
    )
    effect = (
        "this changes the outcome" + (f" (with them: {_names(alt_selected)})" if alt_selected else "")
        if decisive
        else "this does not change the outcome here"
    )
    return PathNote(
        PATH_C,
        decisive,
        f"(c) the accurate estimator call failed for {who}: Karmada's accurate client "
        "returns one error for the whole call and the scheduler drops the accurate "
        f"answers of EVERY member, using the general estimator alone; {effect}",
    )


def _explain(
    inp: KarmadaInput, ranking: _Ranking, selected: list[str] | None, error: str | None, branch: str
) -> list[PathNote]:
    """The explain step: which of Karmada's paths (a), (b), (c) this outcome took, and whether
    it decided the outcome."""
    notes = []
    if branch == PATH_A and inp.job.components:
        notes.append(_path_a(inp.placement, selected))
    if branch == PATH_B and ranking.applicable and selected:
        notes.append(_path_b(inp, ranking, selected[0]))
    if ranking.dropped:
        notes.append(_path_c(inp, ranking, selected, error))
    return notes


def _zero_sets(inp: KarmadaInput, name: str) -> str:
    """What Karmada's 0 sets on the member it takes means: Pending pods, unless it is blind there."""
    member = next(m for m in inp.members if m.name == name)
    blind = dra.member_blind(member, requested_names(inp.job.components))
    if not blind:
        return "it fits 0 sets, so the pods stay Pending"
    reply = inp.accurate.get(name)
    accurate = reply.value if reply is not None and reply.value is not None and reply.value != UNKNOWN else None
    return f"Karmada counts 0 sets there, blind to the {', '.join(r.name for r in blind)} it serves through DRA; " + (
        f"its accurate estimator counts {accurate} set(s)"
        if accurate is not None
        else "whether the pods run there, only its accurate estimator can tell"
    )


# --- one affinity term ----------------------------------------------------------------


def _schedule(inp: KarmadaInput, term: AffinityTerm) -> _Term:
    """One clusterAffinities term: filter -> rank -> select -> explain."""
    workload = is_workload(inp.job, inp.gates)
    feasible, error, caveat = _filter(inp, term, workload)
    if not feasible:
        return _Term(error=error, caveat=caveat)
    ranking = _rank(inp, feasible, term, workload)
    out = _Term(
        order=tuple(n for n, _ in ranking.ranked()),
        sets=dict(ranking.sets),
        dropped=ranking.dropped,
        caveat=ranking.caveat,
        ranked_by=ranking.ranked_by,
    )
    selected, error, branch = _select(inp.placement, ranking.ranked(), ranking.applicable)
    if out.caveat and branch != PATH_A and selected and len(selected) < len(ranking.names):
        out.exact = False  # which members are selected depends on that order
    if branch == "region":
        out.exact = False
        out.caveat = "a spread constraint by region: Karmada's region selection is not modelled here"
        return out
    if error:
        out.error = error
    elif not selected:
        out.error = "failed to assign replicas: no clusters available to schedule"
    else:
        components = target_components(inp.job, inp.placement, inp.gates)
        out.targets = tuple(Target(n, 0, components) for n in selected)
    out.paths.extend(_explain(inp, ranking, selected, error, branch))
    return out


def outcome(inp: KarmadaInput) -> KarmadaOutcome:
    job = inp.job
    gate_off = bool(job.components) and not inp.gates.get(feature_gates.MULTIPLE_POD_TEMPLATES, False)
    if gate_off and job.kind in _REPLICA_KINDS:
        return KarmadaOutcome(
            (),
            None,
            "",
            (),
            (),
            {},
            False,
            False,
            f"{feature_gates.MULTIPLE_POD_TEMPLATES} is off: Karmada reads the {job.kind} through "
            "replicaResource and divides replicas, which is not modelled here",
        )
    first: _Term | None = None
    chosen, chosen_name = None, ""
    for term in inp.placement.affinity_terms:
        result = _schedule(inp, term)
        if first is None:
            first = result
        if result.error is None:
            chosen, chosen_name = result, term.name
            break
    if chosen is None:
        chosen, chosen_name = first, inp.placement.affinity_terms[0].name
    assert chosen is not None and first is not None  # a placement has at least one affinity term
    caveat = chosen.caveat
    if job.components and (job.group, job.kind) not in KARMADA_BUILTIN:
        caveat = (
            f"Karmada has no built-in interpreter for {job.kind}: this assumes a "
            "ResourceInterpreterCustomization that returns these components" + (f"; {caveat}" if caveat else "")
        )
    if gate_off:
        caveat = (
            f"feature gate {feature_gates.MULTIPLE_POD_TEMPLATES} is off: Karmada does not read the job's "
            "components, counts every member as unlimited and breaks ties by name" + (f"; {caveat}" if caveat else "")
        )
    error = first.error if chosen.error is not None else None
    return KarmadaOutcome(
        chosen.targets if error is None else (),
        error,
        chosen_name,
        tuple(chosen.paths),
        chosen.order,
        chosen.sets,
        chosen.dropped,
        chosen.exact,
        caveat,
        chosen.ranked_by,
    )
