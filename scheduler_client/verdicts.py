"""Per member, this tool's verdict and the reasons a person reads; the job's warnings. Pure.

Step 6 of `placement.evaluate`: from each member's `Row` (its estimates, their minimum, the
policy's filters, what its snapshot and DRA devices show), the verdict (chosen, fits, rejected,
unknown, filtered out, undecided) and its reasons, most telling first; warnings for the job
(the policy, blind resource models, failed accurate estimators, cluster totals that mislead,
Karmada's side). `Doubt` says why the member that would be chosen is not recommended.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from estimator.api import AssumedWorkload
from scheduler_client import dra
from scheduler_client.accurate import Answer
from scheduler_client.interpreters import Job
from scheduler_client.karmada import (
    OVERCOMMIT_PROTECTION,
    UNKNOWN,
    Estimate,
    KarmadaOutcome,
    Placement,
    described_names,
    requested_names,
)
from scheduler_client.memberview import Member

GENERAL, MODELS, ACCURATE = "general", "resource-models", "accurate"
ESTIMATORS = (GENERAL, MODELS, ACCURATE)

CHOSEN, FITS, TOO_SMALL, UNKNOWN_VERDICT, FILTERED = "chosen", "fits", "rejected", "unknown", "filtered out"
UNDECIDED = "undecided"  # the member that would be chosen, decided without an answer that could judge it


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
        return (
            f"whether {self.member}'s nodes can hold one set: the job asks {names}, which the general estimator "
            f"counts only as cluster totals (not per node) and no resource model describes"
        )

    def text(self) -> str:
        where = f" at {self.estimator}" if self.estimator else ""
        counted = ", ".join(self.counted_by)
        return (
            f"{self.member} would be chosen ({self.sets} set(s) by {counted}), but its accurate estimator{where} "
            f"gave no answer ({self.why}); unknown: {self.unknown()}"
        )


@dataclass
class Row:
    """One member in one evaluation: what the steps before the verdict computed for it."""

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


def member_verdict(row: Row, chosen: set[str], term: str, doubt: Doubt | None, compatible: bool) -> str:
    """One of the verdicts above, for the member in the affinity term that decided."""
    if row.filter_reason(term):
        return FILTERED
    if row.member.name in chosen:
        return CHOSEN
    if doubt is not None and row.member.name == doubt.member:
        return UNDECIDED
    if row.sets == UNKNOWN:
        return UNKNOWN_VERDICT
    if row.sets >= 1 and not (row.blocked and not compatible):
        return FITS
    return TOO_SMALL


def _headline(row: Row, verdict: str, tightest: bool) -> str:
    values = ", ".join(f"{name} {row.estimates[name].value}" for name in row.deciding)
    if verdict == CHOSEN:
        why = (
            "fewest sets that still fit (tightest), then name"
            if tightest
            else "most sets among eligible members, then name"
        )
        return f"chosen: {row.sets} set(s), the minimum of {values}; {why}"
    if verdict == FITS:
        return f"fits {row.sets} set(s) (minimum of {values}) but another member comes first"
    if verdict == UNDECIDED:
        return (
            f"undecided: {row.sets} set(s), the minimum of {values}; it would be chosen, but its accurate "
            f"estimator gave no answer (see 'selected' below)"
        )
    if verdict == TOO_SMALL and row.sets >= 1:  # blocked: its own nodes cannot hold a set
        return (
            f"rejected: the member's nodes cannot hold one set (its snapshot), although the minimum of "
            f"{values} is {row.sets} set(s):"
        )
    if verdict == TOO_SMALL:
        decider = row.deciding[0]
        return f"0 sets according to the {decider} estimator: {row.estimates[decider].reason}"
    return "no estimator gave an authentic answer, so the member cannot be chosen"


def reasons(row: Row, verdict: str, term: str, tightest: bool) -> tuple[str, ...]:
    reason = row.filter_reason(term)
    if reason:
        return (reason,)
    lines = [_headline(row, verdict, tightest)]
    general = row.estimates[GENERAL].value
    if row.blockers and (verdict == TOO_SMALL or (general is not None and general >= 1)):
        lines.extend(row.blockers)
    for resource in row.dra_blind:
        accurate = row.estimates[ACCURATE].value
        counted = f"; the accurate estimator counts {accurate} set(s)" if accurate is not None and accurate >= 0 else ""
        lines.append(
            f"{resource.name} is served through DRA here: {resource.text()}; {dra.BLIND}, and so does "
            f"Karmada's own scheduler-estimator{counted}"
        )
    for name in (GENERAL, ACCURATE):  # blind resource models are summed up once, in the warnings
        estimate = row.estimates[name]
        if estimate.value == UNKNOWN:
            lines.append(f"{name} estimator: {estimate.reason}")
    certificate = row.answer.certificate() if row.answer is not None else ""
    if certificate:
        lines.append(f"{ACCURATE} estimator: {certificate}")
    return tuple(lines)


def job_warnings(
    job: Job,
    placement: Placement,
    rows: Sequence[Row],
    selected: str | None,
    policy_given: bool,
    karmada_compatible: bool,
) -> list[str]:
    """Warnings for the job: the interpreter's notes, the policy, resource models blind to a requested
    resource, accurate estimators that did not answer, cluster totals that mislead."""
    warnings = [f"interpreter: {note}" for note in job.notes]
    if not policy_given:
        warnings.append(
            "no policy given: assuming one member per job (spreadByField cluster, 1..1) and that "
            "every member is allowed"
        )
    elif not placement.single_member_spread():
        warnings.append(
            "the policy has no spread constraint spreadByField: cluster, minGroups: 1, maxGroups: 1: "
            "Karmada would not choose one member, it would copy the job to every member it allows "
            "(see karmada-place doctor)"
        )
    elif placement.spread_ignored():
        warnings.append(
            "replicaScheduling Divided + Weighted with no weightPreference, or static weights without a "
            "dynamic weight, makes Karmada ignore the spread constraint: the job would be copied to every "
            "member it allows"
        )
    elif placement.availability_ignored():
        warnings.append(
            "replicaScheduling is absent or Duplicated: Karmada takes the top member without checking "
            "that it fits a set"
        )
    requested = requested_names(job.components)
    blind: dict[tuple[str, str], list[str]] = {}
    for row in rows:
        missing = sorted(requested - described_names(row.member.models))
        if row.estimates[MODELS].value is not None and missing:
            described = ", ".join(sorted(described_names(row.member.models)))
            blind.setdefault((described, ", ".join(missing)), []).append(row.member.name)
    for (described, missing_names), names in blind.items():
        if karmada_compatible:
            warnings.append(
                f"resource models of {', '.join(names)} describe only {described}: a model node has no "
                f"{missing_names}, so Karmada answers 0 sets for this job there (scenario failure 3)"
            )
        else:
            warnings.append(
                f"resource models of {', '.join(names)} describe only {described}; the job asks "
                f"{missing_names}: they answer -1 (unknown) here, where Karmada answers 0 and rejects the "
                "member (--karmada-compatible shows Karmada's answer)"
            )
    failed = [r.member.name for r in rows if r.estimates[ACCURATE].value == UNKNOWN]
    if failed and not karmada_compatible:
        warnings.append(
            f"accurate estimator of {', '.join(failed)} did not answer: counted as -1 here; Karmada's "
            "scheduler would drop the accurate answers of every member for this job (path c)"
        )
    for row in rows:
        general = row.estimates[GENERAL].value
        if (
            row.blockers
            and general is not None
            and general >= 1
            and row.sets >= 1
            and row.estimates[ACCURATE].value is None
        ):
            fate = "it is the member chosen" if row.member.name == selected else "Karmada may place the job there"
            warnings.append(
                f"{row.member.name}: the general estimator counts {general} set(s) from cluster totals, "
                f"but {row.blockers[0]}; {fate} and those pods would stay Pending "
                f"(ask the member's accurate estimator)"
            )
    return warnings


def karmada_warnings(
    assumed: Mapping[str, Sequence[AssumedWorkload]] | None,
    honoured: bool,
    outcome: KarmadaOutcome,
    karmada_compatible: bool,
) -> list[str]:
    """Warnings about Karmada's side: in-flight workloads it ignores, cases outside the model."""
    warnings = []
    if assumed and any(assumed.values()) and not honoured:
        warnings.append(
            f"{sum(len(w) for w in assumed.values())} in-flight workload(s) not deducted: "
            f"{OVERCOMMIT_PROTECTION} is off, and then karmada-scheduler ignores them too"
        )
    if karmada_compatible and not outcome.exact:
        warnings.append(
            f"--karmada-compatible: this case is outside the model of Karmada ({outcome.caveat}); "
            "the answer shown is this tool's own"
        )
    elif outcome.caveat:
        warnings.append(f"Karmada: {outcome.caveat}")
    return warnings
