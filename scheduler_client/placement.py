"""Where does this job go, and why not elsewhere: the placement computation, start to end.

    evaluate(job, members, placement, options, ask_accurate) -> PlacementResult

1. the policy's filters (API, cluster taints, clusterAffinity) per affinity term;
2. per member, every estimator: general (resource summary), resource-models, accurate
   (gRPC, through `ask_accurate`, the only I/O, done once for every member a term allows);
3. per member, the minimum over authentic answers (merge.py);
4. ONE member per affinity term, in Karmada's order or the tightest fit (select.py);
   clusterAffinities are tried in order, the first term that places the job wins; a term's
   overflowAffinities members rank after its primary group. A member whose own snapshot shows
   that no node can hold a set (explain.py) is never chosen, whatever the estimators count.
   The member chosen is only recommended when the answers that decided it can be trusted:
   when its accurate estimator did not answer (-1) and the job asks an extended resource
   (GPUs) that neither the resource summary (cluster totals) nor the resource models judge
   per node, the result is `undecided` (a Doubt naming member, estimator and what is unknown)
   and nothing is selected;
5. what Karmada itself would do (karmada.py): under `karmada_compatible` that IS the answer
   (several members, a member fitting 0 sets, the general-only choice, or Karmada's error);
   otherwise it is reported beside this tool's recommendation; every target carries the
   components Karmada v1.19 writes into spec.clusters[].components;
6. reasons per member and warnings for the job (explain.py for per-node reasons; dra.py for
   requested resources a member serves through DRA, which the general estimator cannot see).

In-flight workloads (`assumed`, per member: what karmada-scheduler still assumes there, see
bindings.py) are deducted by every estimator, as karmada-scheduler has them deducted, when
SchedulingOvercommitProtection is on; with the gate off Karmada ignores them, and so does this.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

from estimator.api import AssumedWorkload, ComponentSetsQuery
from scheduler_client import clusterfilter, dra, explain, gates as feature_gates, karmada
from scheduler_client.accurate import Answer
from scheduler_client.general import UNKNOWN, Estimate, extended_names, model_sets, requested_names, summary_sets
from scheduler_client.interpreters import Job
from scheduler_client.karmada import AccurateReply, KarmadaInput, KarmadaOutcome, Target, TargetComponent, \
    target_components
from scheduler_client.members import Member
from scheduler_client.merge import merge
from scheduler_client.policy import Placement
from scheduler_client.resourcemodels import described_names
from scheduler_client.select import KARMADA, Candidate, choose, karmada_order

GENERAL, MODELS, ACCURATE = "general", "resource-models", "accurate"
ESTIMATORS = (GENERAL, MODELS, ACCURATE)

CHOSEN, FITS, TOO_SMALL, UNKNOWN_VERDICT, FILTERED = "chosen", "fits", "rejected", "unknown", "filtered out"
UNDECIDED = "undecided"  # the member that would be chosen, decided without an answer that could judge it

# (members, query, object key[, per member the in-flight workloads to send with it]) -> answers;
# the fourth argument is passed only when some member has in-flight workloads.
AskAccurate = Callable[..., Mapping[str, Answer]]
InFlightByMember = Mapping[str, Sequence[AssumedWorkload]]


@dataclass(frozen=True)
class Options:
    strategy: str = KARMADA
    karmada_compatible: bool = False
    gates: Mapping[str, bool] = field(default_factory=lambda: dict(feature_gates.DEFAULTS))
    # Members with an accurate estimator (an address to ask), and how each is reached.
    accurate_members: frozenset[str] = frozenset()
    accurate_addresses: Mapping[str, str] = field(default_factory=dict)
    policy_given: bool = True


@dataclass(frozen=True)
class MemberResult:
    name: str
    estimates: Mapping[str, int | None]
    estimate_reasons: Mapping[str, str]
    sets: int  # merged minimum; -1 when no estimator gave an authentic answer
    eligible: bool
    verdict: str
    reasons: tuple[str, ...]
    # The accurate answer's certificate (None: none came): its bound and whether it reaches it.
    accurate_bound: int | None = None
    accurate_proven_optimal: bool | None = None


@dataclass(frozen=True)
class Doubt:
    """Why the member that would be chosen is not recommended: the answer that would decide
    it is unknown."""

    member: str
    estimator: str  # its accurate estimator's address ("" when it has none to dial)
    why: str  # why that estimator gave no answer
    resources: tuple[str, ...]  # requested, judged per node by no answer given
    sets: int  # what the answers given count
    counted_by: tuple[str, ...]  # the estimators whose answer that is

    def unknown(self) -> str:
        """What is unknown, in one sentence."""
        names = ", ".join(self.resources)
        return (f"whether {self.member}'s nodes can hold one set: the job asks {names}, which the general estimator "
                f"counts only as cluster totals (not per node) and no resource model describes")

    def text(self) -> str:
        where = f" at {self.estimator}" if self.estimator else ""
        counted = ", ".join(self.counted_by)
        return (f"{self.member} would be chosen ({self.sets} set(s) by {counted}), but its accurate estimator{where} "
                f"gave no answer ({self.why}); unknown: {self.unknown()}")


@dataclass(frozen=True)
class PlacementResult:
    job: Job
    placement: Placement
    members: tuple[MemberResult, ...]  # Karmada's order
    selected: str | None
    affinity_term: str
    strategy: str
    warnings: tuple[str, ...]
    # This tool's answer: one member (the default mode), or Karmada's targets (karmada_compatible).
    targets: tuple[Target, ...] = ()
    karmada: KarmadaOutcome | None = None
    karmada_compatible: bool = False
    # What a member gets when it is chosen, as spec.clusters[].components (see `evaluate`).
    components: tuple[TargetComponent, ...] = ()
    # Per member, the in-flight workloads deducted there (descriptions, for the report).
    in_flight: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # Set when the member that would be chosen was decided without an answer that could judge
    # it: then `selected` is None and `targets` empty (this tool does not recommend it).
    undecided: Doubt | None = None


@dataclass
class _Row:
    member: Member
    estimates: dict[str, Estimate]
    sets: int
    deciding: tuple[str, ...]
    rejected_by: dict[str, str]  # affinity term name -> reason; "*" for term-independent filters
    blockers: tuple[str, ...]
    dra_blind: tuple[dra.DraResource, ...] = ()  # requested, served through DRA, absent from the summary
    answer: Answer | None = None  # its accurate estimator's, with the certificate if one came

    def filter_reason(self, term: str) -> str | None:
        return self.rejected_by.get("*") or self.rejected_by.get(term)

    @property
    def blocked(self) -> bool:
        """The member's own snapshot shows that no node placement of one set exists."""
        return bool(self.blockers)


def _accurate_estimate(name: str, answers: Mapping[str, Answer], options: Options, asked: bool) -> Estimate:
    if name not in options.accurate_members:
        return Estimate(None, "no accurate estimator configured")
    if not asked:
        return Estimate(None, "not asked: the policy filters this member out")
    answer = answers.get(name)
    if answer is None:
        return Estimate(UNKNOWN, "no answer")
    if answer.value == UNKNOWN:
        return Estimate(UNKNOWN, answer.reason or "the estimator answered -1 (unknown)")
    where = options.accurate_addresses.get(name, "")
    return Estimate(answer.value, "scheduler-estimator" + (f" at {where}" if where else "")
                    + f", answered in {answer.seconds * 1000:.0f} ms")


def _filters(member: Member, job: Job, placement: Placement) -> dict[str, str]:
    rejected = {}
    common = (clusterfilter.api_rejects(member, job.api_version, job.kind)
              or clusterfilter.taints_reject(member, placement.cluster_tolerations))
    if common:
        rejected["*"] = common
    for term in placement.affinity_terms:
        if karmada.overflow_order(term, member) is None:
            rejected[term.name] = clusterfilter.affinity_rejects(term.affinity, member) or "filtered"
    return rejected


def _headline(row: _Row, verdict: str, strategy: str) -> str:
    values = ", ".join(f"{name} {row.estimates[name].value}" for name in row.deciding)
    if verdict == CHOSEN:
        why = "fewest sets that still fit (tightest), then name" if strategy != KARMADA else \
            "most sets among eligible members, then name"
        return f"chosen: {row.sets} set(s), the minimum of {values}; {why}"
    if verdict == FITS:
        return f"fits {row.sets} set(s) (minimum of {values}) but another member comes first"
    if verdict == UNDECIDED:
        return f"undecided: {row.sets} set(s), the minimum of {values}; it would be chosen, but its accurate " \
               f"estimator gave no answer (see 'selected' below)"
    if verdict == TOO_SMALL and row.sets >= 1:  # blocked: its own nodes cannot hold a set
        return f"rejected: the member's nodes cannot hold one set (its snapshot), although the minimum of " \
               f"{values} is {row.sets} set(s):"
    if verdict == TOO_SMALL:
        decider = row.deciding[0]
        return f"0 sets according to the {decider} estimator: {row.estimates[decider].reason}"
    return "no estimator gave an authentic answer, so the member cannot be chosen"


def _reasons(row: _Row, verdict: str, term: str, strategy: str) -> tuple[str, ...]:
    reason = row.filter_reason(term)
    if reason:
        return (reason,)
    lines = [_headline(row, verdict, strategy)]
    general = row.estimates[GENERAL].value
    if row.blockers and (verdict == TOO_SMALL or (general is not None and general >= 1)):
        lines.extend(row.blockers)
    for resource in row.dra_blind:
        accurate = row.estimates[ACCURATE].value
        counted = f"; the accurate estimator counts {accurate} set(s)" if accurate is not None and accurate >= 0 \
            else ""
        lines.append(f"{resource.name} is served through DRA here: {resource.text()}; {dra.BLIND}, and so does "
                     f"Karmada's own scheduler-estimator{counted}")
    for name in (GENERAL, ACCURATE):  # blind resource models are summed up once, in the warnings
        estimate = row.estimates[name]
        if estimate.value == UNKNOWN:
            lines.append(f"{name} estimator: {estimate.reason}")
    certificate = row.answer.certificate() if row.answer is not None else ""
    if certificate:
        lines.append(f"{ACCURATE} estimator: {certificate}")
    return tuple(lines)


def _warnings(job: Job, placement: Placement, rows: Sequence[_Row], options: Options, selected: str | None) -> list[str]:
    warnings = [f"interpreter: {note}" for note in job.notes]
    if not options.policy_given:
        warnings.append("no policy given: assuming one member per job (spreadByField cluster, 1..1) and that "
                        "every member is allowed")
    elif not placement.single_member_spread():
        warnings.append("the policy has no spread constraint spreadByField: cluster, minGroups: 1, maxGroups: 1: "
                        "Karmada would not choose one member, it would copy the job to every member it allows "
                        "(see karmada-place doctor)")
    elif placement.spread_ignored():
        warnings.append("replicaScheduling Divided + Weighted with no weightPreference, or static weights without a "
                        "dynamic weight, makes Karmada ignore the spread constraint: the job would be copied to every "
                        "member it allows")
    elif placement.availability_ignored():
        warnings.append("replicaScheduling is absent or Duplicated: Karmada takes the top member without checking "
                        "that it fits a set")
    requested = requested_names(job.components)
    blind: dict[tuple[str, str], list[str]] = {}
    for row in rows:
        missing = sorted(requested - described_names(row.member.models))
        if row.estimates[MODELS].value is not None and missing:
            described = ", ".join(sorted(described_names(row.member.models)))
            blind.setdefault((described, ", ".join(missing)), []).append(row.member.name)
    for (described, missing), names in blind.items():
        if options.karmada_compatible:
            warnings.append(f"resource models of {', '.join(names)} describe only {described}: a model node has no "
                            f"{missing}, so Karmada answers 0 sets for this job there (scenario failure 3)")
        else:
            warnings.append(f"resource models of {', '.join(names)} describe only {described}; the job asks "
                            f"{missing}: they answer -1 (unknown) here, where Karmada answers 0 and rejects the "
                            "member (--karmada-compatible shows Karmada's answer)")
    failed = [r.member.name for r in rows if r.estimates[ACCURATE].value == UNKNOWN]
    if failed and not options.karmada_compatible:
        warnings.append(f"accurate estimator of {', '.join(failed)} did not answer: counted as -1 here; Karmada's "
                        "scheduler would drop the accurate answers of every member for this job (path c)")
    for row in rows:
        general = row.estimates[GENERAL].value
        if row.blockers and general is not None and general >= 1 and row.sets >= 1 \
                and row.estimates[ACCURATE].value is None:
            fate = "it is the member chosen" if row.member.name == selected else "Karmada may place the job there"
            warnings.append(f"{row.member.name}: the general estimator counts {general} set(s) from cluster totals, "
                            f"but {row.blockers[0]}; {fate} and those pods would stay Pending "
                            f"(ask the member's accurate estimator)")
    return warnings


def placed_components(job: Job) -> tuple[TargetComponent, ...]:
    """One whole set: every component with its full replicas (v1.19's shape for the 1..1 spread)."""
    return tuple(TargetComponent(c.name, c.replicas) for c in job.components)


def evaluate(job: Job, members: Sequence[Member], placement: Placement, options: Options,
             ask_accurate: AskAccurate | None = None, karmada_job: Job | None = None,
             assumed: InFlightByMember | None = None) -> PlacementResult:
    """`karmada_job`: the job as Karmada's own interpreter reads it, when that differs from `job`
    (Karmada's outcome is computed for it, its estimators asked with its components).
    `assumed`: per member, in-flight workloads (deducted only with SchedulingOvercommitProtection).

    Components of the answer: under `karmada_compatible`, exactly what Karmada v1.19 writes
    (karmada.target_components: none unless the gate is on, the job has several components and
    the spread is cluster 1..1); otherwise this tool's one member holds the whole job, written
    in the same shape (placed_components)."""
    honoured = options.gates.get(feature_gates.OVERCOMMIT_PROTECTION, False)
    flights = {name: tuple(w) for name, w in (assumed or {}).items() if w} if honoured else {}
    query = ComponentSetsQuery(job.components, job.namespace)
    filters = {m.name: _filters(m, job, placement) for m in members}
    allowed_somewhere = [m.name for m in members
                         if "*" not in filters[m.name]
                         and any(t.name not in filters[m.name] for t in placement.affinity_terms)]
    to_ask = [name for name in allowed_somewhere if name in options.accurate_members]

    def ask(names: Sequence[str], q: ComponentSetsQuery, key: str) -> Mapping[str, Answer]:
        if not names or not ask_accurate:
            return {}
        if any(flights.get(n) for n in names):
            return ask_accurate(names, q, key, {n: flights.get(n, ()) for n in names})
        return ask_accurate(names, q, key)

    answers = ask(to_ask, query, job.object_key)
    modeling = options.gates.get(feature_gates.RESOURCE_MODELING, True)
    requested = requested_names(job.components)

    rows = []
    for m in members:
        here = flights.get(m.name, ())
        estimates = {
            GENERAL: _after(summary_sets(m.summary.with_assumed(here) if m.summary else None, job.components,
                                         options.karmada_compatible), here),
            MODELS: model_sets(m.models, m.grade_counts, job.components, options.karmada_compatible, here)
            if modeling else Estimate(None, f"{feature_gates.RESOURCE_MODELING} is off"),
            ACCURATE: _after(_accurate_estimate(m.name, answers, options, m.name in to_ask), here),
        }
        merged = merge({name: e.value for name, e in estimates.items()})
        blockers = tuple(explain.component_blockers(m.snapshot, job.components)) if m.snapshot is not None else ()
        rows.append(_Row(m, estimates, merged.sets, merged.deciding, filters[m.name], blockers,
                         dra.member_blind(m, requested), answers.get(m.name)))

    selected, chosen_term = None, placement.affinity_terms[0].name
    for term in placement.affinity_terms:
        candidates = [Candidate(r.member.name, r.sets, _eligible(r, term.name),
                                karmada.overflow_order(term, r.member) or 0)
                      for r in rows]
        winner = choose(candidates, options.strategy)
        if winner is not None:
            selected, chosen_term = winner.name, term.name
            break

    seen_by_karmada = job
    if karmada_job is not None and karmada_job.components != job.components:
        seen_by_karmada = karmada_job
        answers = ask(to_ask, ComponentSetsQuery(karmada_job.components, karmada_job.namespace),
                      karmada_job.object_key) or answers
    replies = {name: AccurateReply(None if answer.failed else answer.value, answer.reason)
               for name, answer in answers.items()}
    outcome = karmada.outcome(KarmadaInput(seen_by_karmada, members, placement, options.gates,
                                           accurate_enabled=bool(options.accurate_members), accurate=replies,
                                           assumed=flights))
    components = placed_components(job)
    targets = (Target(selected, 0, components),) if selected else ()
    compatible = options.karmada_compatible and outcome.exact
    if compatible:
        components = target_components(seen_by_karmada, placement, options.gates)
        targets = outcome.targets
        selected = targets[0].name if targets else None
        chosen_term = outcome.affinity_term
        if outcome.accurate_dropped:
            for row in rows:
                _drop_accurate(row)
        if outcome.ranked_by == karmada.RANK_SETS:
            for row in rows:
                row.sets = outcome.sets.get(row.member.name, row.sets)
    rows_by_name = {r.member.name: r for r in rows}
    doubt = None
    if selected and not compatible:
        doubt = _doubt(rows_by_name[selected], requested, options)
        if doubt is not None:
            selected, targets = None, ()
    chosen_names = {t.name for t in targets}

    results = []
    for candidate in karmada_order([Candidate(r.member.name, r.sets, True) for r in rows]):
        row = rows_by_name[candidate.name]
        eligible = _eligible(row, chosen_term) if not compatible else \
            row.filter_reason(chosen_term) is None and row.sets != UNKNOWN
        if row.filter_reason(chosen_term):
            verdict = FILTERED
        elif row.member.name in chosen_names:
            verdict = CHOSEN
        elif doubt is not None and row.member.name == doubt.member:
            verdict = UNDECIDED
        elif row.sets == UNKNOWN:
            verdict = UNKNOWN_VERDICT
        elif row.sets >= 1 and not (row.blocked and not compatible):
            verdict = FITS
        else:
            verdict = TOO_SMALL
        reasons = _reasons(row, verdict, chosen_term, options.strategy)
        if compatible and verdict == CHOSEN:
            counted = f"{row.sets} set(s) as Karmada counts them" if outcome.ranked_by == karmada.RANK_SETS else \
                f"Karmada ranked members by {outcome.ranked_by}, not by sets"
            reasons = (f"Karmada's target: {counted}; "
                       + ("; ".join(p.text for p in outcome.paths) or "first in (score, available sets, name) order "
                          "among members with at least one set"),) + reasons[1:]
        results.append(MemberResult(
            name=row.member.name,
            estimates={name: e.value for name, e in row.estimates.items()},
            estimate_reasons={name: e.reason for name, e in row.estimates.items()},
            sets=row.sets,
            eligible=row.member.name in chosen_names if compatible else eligible and row.sets >= 1,
            verdict=verdict,
            reasons=reasons,
            accurate_bound=row.answer.bound if row.answer is not None else None,
            accurate_proven_optimal=row.answer.proven_optimal if row.answer is not None else None,
        ))
    warnings = _warnings(job, placement, rows, options, selected)
    if assumed and any(assumed.values()) and not honoured:
        warnings.append(f"{sum(len(w) for w in assumed.values())} in-flight workload(s) not deducted: "
                        f"{feature_gates.OVERCOMMIT_PROTECTION} is off, and then karmada-scheduler ignores them too")
    if options.karmada_compatible and not outcome.exact:
        warnings.append(f"--karmada-compatible: this case is outside the model of Karmada ({outcome.caveat}); "
                        "the answer shown is this tool's own")
    elif outcome.caveat:
        warnings.append(f"Karmada: {outcome.caveat}")
    return PlacementResult(job, placement, tuple(results), selected, chosen_term, options.strategy,
                           tuple(warnings), targets, outcome, compatible, components, undecided=doubt)


def _eligible(row: _Row, term: str) -> bool:
    """May this tool choose the member: the policy allows it, some estimator knows, and its own
    snapshot does not show that no node can hold a set."""
    return row.filter_reason(term) is None and row.sets != UNKNOWN and not row.blocked


def _doubt(row: _Row, requested: frozenset[str], options: Options) -> Doubt | None:
    """Why the member chosen cannot be recommended, or None. Its accurate estimator did not
    answer (-1: failed, timed out, answered -1 or cannot be dialled), and the job asks an
    extended resource that no answer given judged per node: the resource summary only has
    cluster totals, and resource models that answered -1 do not describe it (models that
    answered a number describe every resource requested, and pack them onto model nodes)."""
    accurate = row.estimates[ACCURATE]
    if accurate.value != UNKNOWN:
        return None
    if row.estimates[MODELS].value not in (None, UNKNOWN):
        return None
    unjudged = extended_names(requested)
    if not unjudged:
        return None
    address = options.accurate_addresses.get(row.member.name, "")
    return Doubt(row.member.name, "" if address == "(none)" else address, accurate.reason, tuple(sorted(unjudged)),
                 row.sets, row.deciding)


def _after(estimate: Estimate, flights: Sequence[AssumedWorkload]) -> Estimate:
    """The estimate's reason says that in-flight workloads were deducted first."""
    if not flights or estimate.value is None:
        return estimate
    return Estimate(estimate.value, f"{estimate.reason}; after {len(flights)} in-flight workload(s) here")


def _drop_accurate(row: _Row) -> None:
    """Karmada's view after path (c): the general estimator alone."""
    accurate = row.estimates[ACCURATE]
    if accurate.value is None:
        return
    row.estimates[ACCURATE] = Estimate(accurate.value, f"{accurate.reason}; dropped by Karmada for every member "
                                                       "because the accurate call failed somewhere (path c)")
    merged = merge({name: e.value for name, e in row.estimates.items() if name != ACCURATE})
    row.sets, row.deciding = merged.sets, merged.deciding
