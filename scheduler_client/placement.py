"""Where does this job go, and why not elsewhere: the placement computation, start to end.

    evaluate(job, members, placement, options, ask_accurate) -> PlacementResult

One function per step (`evaluate` only strings them together); Karmada's behaviour comes from
its room, `scheduler_client.karmada`, through its public names:
1. the policy's filters (API, cluster taints, clusterAffinity) per affinity term (`_filters`);
2. per member, every estimator: general (resource summary), resource-models, accurate
   (gRPC, through `ask_accurate`, the only I/O, done once for every member a term allows:
   `_to_ask`, `_ask`), in `_rows`;
3. per member, the minimum over authentic answers, Karmada's rule (`_rows`, karmada.merge);
4. ONE member per affinity term, in Karmada's order or the tightest fit (`_recommend`,
   `choose`); clusterAffinities are tried in order, the first term that places the job wins; a
   term's overflowAffinities members rank after its primary group. A member whose own snapshot
   shows that no node can hold a set (explain.py) is never chosen, whatever the estimators
   count. The member chosen is only recommended when the answers that decided it can be
   trusted: when its accurate estimator did not answer (-1) and the job asks an extended
   resource (GPUs) that neither the resource summary (cluster totals) nor the resource models
   judge per node, the result is `undecided` (a Doubt naming member, estimator and what is
   unknown: `_doubt`) and nothing is selected;
5. what Karmada itself would do (`_karmada_outcome`, karmada.outcome): under
   `karmada_compatible` that IS the answer (several members, a member fitting 0 sets, the
   general-only choice, or Karmada's error); otherwise it is reported beside this tool's
   recommendation; every target carries the components Karmada v1.19 writes into
   spec.clusters[].components;
6. per member, the verdict and its reasons, and warnings for the job (`_member_results`,
   verdicts.py; explain.py for per-node reasons; dra.py for requested resources a member
   serves through DRA, which the general estimator cannot see).

In-flight workloads (`assumed`, per member: what karmada-scheduler still assumes there, see
bindings.py) are deducted by every estimator, as karmada-scheduler has them deducted, when
SchedulingOvercommitProtection is on; with the gate off Karmada ignores them, and so does this.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from estimator.api import AssumedWorkload, ComponentSetsQuery
from scheduler_client import dra, explain, karmada
from scheduler_client.accurate import Answer
from scheduler_client.interpreters import Job
from scheduler_client.karmada import (
    DEFAULT_GATES,
    OVERCOMMIT_PROTECTION,
    RANK_SETS,
    RESOURCE_MODELING,
    UNKNOWN,
    AccurateReply,
    Candidate,
    Estimate,
    KarmadaInput,
    KarmadaOutcome,
    Placement,
    Target,
    TargetComponent,
    extended_names,
    karmada_order,
    merge,
    model_sets,
    overflow_order,
    requested_names,
    summary_sets,
    target_components,
)
from scheduler_client.memberview import Member
from scheduler_client.verdicts import (
    ACCURATE,
    CHOSEN,
    GENERAL,
    MODELS,
    Doubt,
    Row,
    job_warnings,
    karmada_warnings,
    member_verdict,
    reasons,
)

# How this tool chooses ONE member: Karmada's order (most sets first, then name), or the
# tightest fit, which keeps big holes for big jobs (fewest sets that still fit, then name).
KARMADA, TIGHTEST = "karmada", "tightest"
STRATEGIES = (KARMADA, TIGHTEST)

# (members, query, object key[, per member the in-flight workloads to send with it]) -> answers;
# the fourth argument is passed only when some member has in-flight workloads.
AskAccurate = Callable[..., Mapping[str, Answer]]
InFlightByMember = Mapping[str, Sequence[AssumedWorkload]]


@dataclass(frozen=True)
class Options:
    strategy: str = KARMADA
    karmada_compatible: bool = False
    gates: Mapping[str, bool] = field(default_factory=lambda: dict(DEFAULT_GATES))
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
    return Estimate(
        answer.value,
        "scheduler-estimator" + (f" at {where}" if where else "") + f", answered in {answer.seconds * 1000:.0f} ms",
    )


def _filters(member: Member, job: Job, placement: Placement) -> dict[str, str]:
    rejected = {}
    common = karmada.api_rejects(member, job.api_version, job.kind) or karmada.taints_reject(
        member, placement.cluster_tolerations
    )
    if common:
        rejected["*"] = common
    for term in placement.affinity_terms:
        if overflow_order(term, member) is None:
            rejected[term.name] = karmada.affinity_rejects(term.affinity, member) or "filtered"
    return rejected


def placed_components(job: Job) -> tuple[TargetComponent, ...]:
    """One whole set: every component with its full replicas (v1.19's shape for the 1..1 spread)."""
    return tuple(TargetComponent(c.name, c.replicas) for c in job.components)


def choose(candidates: Sequence[Candidate], strategy: str = KARMADA) -> Candidate | None:
    """This tool's member among the candidates with at least one set: Karmada's first
    (karmada_order), or the tightest fit."""
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {', '.join(STRATEGIES)}, got {strategy!r}")
    fitting = [c for c in candidates if c.eligible and c.sets >= 1]
    if not fitting:
        return None
    if strategy == TIGHTEST:
        return min(fitting, key=lambda c: (c.group, c.sets, c.name))
    return karmada_order(fitting)[0]


def evaluate(
    job: Job,
    members: Sequence[Member],
    placement: Placement,
    options: Options,
    ask_accurate: AskAccurate | None = None,
    karmada_job: Job | None = None,
    assumed: InFlightByMember | None = None,
) -> PlacementResult:
    """`karmada_job`: the job as Karmada's own interpreter reads it, when that differs from `job`
    (Karmada's outcome is computed for it, its estimators asked with its components).
    `assumed`: per member, in-flight workloads (deducted only with SchedulingOvercommitProtection).

    Components of the answer: under `karmada_compatible`, exactly what Karmada v1.19 writes
    (karmada.target_components: none unless the gate is on, the job has several components and
    the spread is cluster 1..1); otherwise this tool's one member holds the whole job, written
    in the same shape (placed_components)."""
    honoured = options.gates.get(OVERCOMMIT_PROTECTION, False)
    flights = {name: tuple(w) for name, w in (assumed or {}).items() if w} if honoured else {}
    filters = {m.name: _filters(m, job, placement) for m in members}
    to_ask = _to_ask(members, filters, placement, options)
    answers = _ask(ask_accurate, to_ask, flights, job)
    rows = _rows(job, members, options, filters, to_ask, answers, flights)
    selected, chosen_term = _recommend(rows, placement, options.strategy)

    seen_by_karmada = job
    if karmada_job is not None and karmada_job.components != job.components:
        seen_by_karmada = karmada_job
        answers = _ask(ask_accurate, to_ask, flights, karmada_job) or answers
    outcome = _karmada_outcome(seen_by_karmada, members, placement, options, answers, flights)
    components = placed_components(job)
    targets: tuple[Target, ...] = (Target(selected, 0, components),) if selected else ()
    compatible = options.karmada_compatible and outcome.exact
    if compatible:  # Karmada's answer is this tool's
        components = target_components(seen_by_karmada, placement, options.gates)
        targets, chosen_term = outcome.targets, outcome.affinity_term
        selected = targets[0].name if targets else None
        _count_as_karmada(rows, outcome)
    doubt = None
    if selected and not compatible:
        doubt = _doubt({r.member.name: r for r in rows}[selected], requested_names(job.components), options)
        if doubt is not None:
            selected, targets = None, ()

    results = _member_results(rows, {t.name for t in targets}, chosen_term, doubt, outcome, options, compatible)
    warnings = job_warnings(
        job, placement, rows, selected, options.policy_given, options.karmada_compatible
    ) + karmada_warnings(assumed, honoured, outcome, options.karmada_compatible)
    return PlacementResult(
        job,
        placement,
        tuple(results),
        selected,
        chosen_term,
        options.strategy,
        tuple(warnings),
        targets,
        outcome,
        compatible,
        components,
        undecided=doubt,
    )


def _to_ask(
    members: Sequence[Member], filters: Mapping[str, Mapping[str, str]], placement: Placement, options: Options
) -> list[str]:
    """The members to ask their accurate estimator: those with one that some affinity term allows."""
    allowed_somewhere = [
        m.name
        for m in members
        if "*" not in filters[m.name] and any(t.name not in filters[m.name] for t in placement.affinity_terms)
    ]
    return [name for name in allowed_somewhere if name in options.accurate_members]


def _ask(
    ask_accurate: AskAccurate | None, names: Sequence[str], flights: InFlightByMember, job: Job
) -> Mapping[str, Answer]:
    """Step 2's only I/O: the accurate estimators of `names`, asked about `job` under one deadline,
    with each member's in-flight workloads when some member has any."""
    query = ComponentSetsQuery(job.components, job.namespace)
    if not names or not ask_accurate:
        return {}
    if any(flights.get(n) for n in names):
        return ask_accurate(names, query, job.object_key, {n: flights.get(n, ()) for n in names})
    return ask_accurate(names, query, job.object_key)


def _rows(
    job: Job,
    members: Sequence[Member],
    options: Options,
    filters: Mapping[str, dict[str, str]],
    asked: Sequence[str],
    answers: Mapping[str, Answer],
    flights: InFlightByMember,
) -> list[Row]:
    """Steps 2 and 3: per member, every estimator's answer, their minimum, and what its own
    snapshot and DRA devices show."""
    modeling = options.gates.get(RESOURCE_MODELING, True)
    requested = requested_names(job.components)
    rows = []
    for m in members:
        here = flights.get(m.name, ())
        estimates = {
            GENERAL: _after(
                summary_sets(
                    m.summary.with_assumed(here) if m.summary else None, job.components, options.karmada_compatible
                ),
                here,
            ),
            MODELS: model_sets(m.models, m.grade_counts, job.components, options.karmada_compatible, here)
            if modeling
            else Estimate(None, f"{RESOURCE_MODELING} is off"),
            ACCURATE: _after(_accurate_estimate(m.name, answers, options, m.name in asked), here),
        }
        merged = merge({name: e.value for name, e in estimates.items()})
        blockers = tuple(explain.component_blockers(m.snapshot, job.components)) if m.snapshot is not None else ()
        rows.append(
            Row(
                m,
                estimates,
                merged.sets,
                merged.deciding,
                filters[m.name],
                blockers,
                dra.member_blind(m, requested),
                answers.get(m.name),
            )
        )
    return rows


def _recommend(rows: Sequence[Row], placement: Placement, strategy: str) -> tuple[str | None, str]:
    """Step 4: (this tool's member or None, the affinity term that decided): the first term with a
    member to choose; a term's overflow groups rank after its primary group."""
    for term in placement.affinity_terms:
        candidates = [
            Candidate(r.member.name, r.sets, _eligible(r, term.name), overflow_order(term, r.member) or 0) for r in rows
        ]
        winner = choose(candidates, strategy)
        if winner is not None:
            return winner.name, term.name
    return None, placement.affinity_terms[0].name


def _karmada_outcome(
    job: Job,
    members: Sequence[Member],
    placement: Placement,
    options: Options,
    answers: Mapping[str, Answer],
    flights: InFlightByMember,
) -> KarmadaOutcome:
    """Step 5: what Karmada's scheduler does, with the accurate answers as its client got them."""
    replies = {
        name: AccurateReply(None if answer.failed else answer.value, answer.reason) for name, answer in answers.items()
    }
    return karmada.outcome(
        KarmadaInput(
            job,
            members,
            placement,
            options.gates,
            accurate_enabled=bool(options.accurate_members),
            accurate=replies,
            assumed=flights,
        )
    )


def _count_as_karmada(rows: Sequence[Row], outcome: KarmadaOutcome) -> None:
    """Under --karmada-compatible: the rows count what Karmada counted (path c, its sets)."""
    if outcome.accurate_dropped:
        for row in rows:
            _drop_accurate(row)
    if outcome.ranked_by == RANK_SETS:
        for row in rows:
            row.sets = outcome.sets.get(row.member.name, row.sets)


def _member_results(
    rows: Sequence[Row],
    chosen: set[str],
    term: str,
    doubt: Doubt | None,
    outcome: KarmadaOutcome,
    options: Options,
    compatible: bool,
) -> list[MemberResult]:
    """Step 6: per member, in Karmada's order, its verdict and the reasons for it."""
    rows_by_name = {r.member.name: r for r in rows}
    results = []
    for candidate in karmada_order([Candidate(r.member.name, r.sets, True) for r in rows]):
        row = rows_by_name[candidate.name]
        eligible = _eligible(row, term) if not compatible else row.filter_reason(term) is None and row.sets != UNKNOWN
        verdict = member_verdict(row, chosen, term, doubt, compatible)
        why = reasons(row, verdict, term, tightest=options.strategy != KARMADA)
        if compatible and verdict == CHOSEN:
            counted = (
                f"{row.sets} set(s) as Karmada counts them"
                if outcome.ranked_by == RANK_SETS
                else f"Karmada ranked members by {outcome.ranked_by}, not by sets"
            )
            why = (
                f"Karmada's target: {counted}; "
                + (
                    "; ".join(p.text for p in outcome.paths)
                    or "first in (score, available sets, name) order among members with at least one set"
                ),
            ) + why[1:]
        results.append(
            MemberResult(
                name=row.member.name,
                estimates={name: e.value for name, e in row.estimates.items()},
                estimate_reasons={name: e.reason for name, e in row.estimates.items()},
                sets=row.sets,
                eligible=row.member.name in chosen if compatible else eligible and row.sets >= 1,
                verdict=verdict,
                reasons=why,
                accurate_bound=row.answer.bound if row.answer is not None else None,
                accurate_proven_optimal=row.answer.proven_optimal if row.answer is not None else None,
            )
        )
    return results


def _eligible(row: Row, term: str) -> bool:
    """May this tool choose the member: the policy allows it, some estimator knows, and its own
    snapshot does not show that no node can hold a set."""
    return row.filter_reason(term) is None and row.sets != UNKNOWN and not row.blocked


def _doubt(row: Row, requested: frozenset[str], options: Options) -> Doubt | None:
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
    return Doubt(
        row.member.name,
        "" if address == "(none)" else address,
        accurate.reason,
        tuple(sorted(unjudged)),
        row.sets,
        row.deciding,
    )


def _after(estimate: Estimate, flights: Sequence[AssumedWorkload]) -> Estimate:
    """The estimate's reason says that in-flight workloads were deducted first."""
    if not flights or estimate.value is None:
        return estimate
    return Estimate(estimate.value, f"{estimate.reason}; after {len(flights)} in-flight workload(s) here")


def _drop_accurate(row: Row) -> None:
    """Karmada's view after path (c): the general estimator alone."""
    accurate = row.estimates[ACCURATE]
    if accurate.value is None:
        return
    row.estimates[ACCURATE] = Estimate(
        accurate.value,
        f"{accurate.reason}; dropped by Karmada for every member because the accurate call failed somewhere (path c)",
    )
    merged = merge({name: e.value for name, e in row.estimates.items() if name != ACCURATE})
    row.sets, row.deciding = merged.sets, merged.deciding
