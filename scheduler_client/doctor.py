"""`karmada-place doctor`: the scenario's silent failures, found before they happen. Pure.

    diagnose(DoctorInput) -> [Finding]

Each finding names the scenario failure it prevents (docs/scenario.md):
1. gate MultiplePodTemplatesScheduling off: no components, the job is copied everywhere;
2. no spread constraint cluster 1..1 (or one Karmada ignores): copied everywhere;
3. resource models that cannot see a requested resource: 0 sets on every member;
4. members without an accurate estimator: per-node fragmentation invisible (with a
   snapshot, the member where that already misleads Karmada is named).
Also, with member snapshots: a requested resource a member serves only through DRA (devices
in ResourceSlices, none in node allocatable, dra.py): Karmada counts 0 of it there and refuses
the member for this job whatever is free.
Also: a policy that does not select the job, and a policy that lets Karmada take a member
without checking it fits.

Findings that are one of Karmada's scheduler paths deciding where the job goes carry the
path: (a) no cluster 1..1 spread (or one Karmada ignores): a copy to every feasible member;
(b) replicaScheduling absent or Duplicated: the first member even at 0 sets; (c) a member
passing the filters without an accurate estimator while others have one: Karmada's accurate
call fails as a whole and the general estimator alone decides for every member. With
members given, the member Karmada would take in (b) is named (general estimator only:
doctor asks no estimator).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from scheduler_client import dra, explain, karmada
from scheduler_client.interpreters import Job
from scheduler_client.karmada import (
    DEFAULT_MODELS,
    MULTIPLE_POD_TEMPLATES,
    RESOURCE_MODELING,
    Policy,
    described_names,
    requested_names,
    summary_sets,
)
from scheduler_client.memberview import Member

ERROR, WARNING = "error", "warning"
ONE_MEMBER_SPREAD = "spreadConstraints: [{spreadByField: cluster, minGroups: 1, maxGroups: 1}]"
DIVIDED_AGGREGATED = "replicaScheduling: {replicaSchedulingType: Divided, replicaDivisionPreference: Aggregated}"


@dataclass(frozen=True)
class Finding:
    code: str
    severity: str
    failure: int | None  # the scenario's silent failure this is, if any
    message: str
    fix: str
    karmada_path: str | None = None  # "a", "b" or "c": the scheduler path that decides the outcome


@dataclass(frozen=True)
class DoctorInput:
    job: Job
    manifest: Mapping
    policy: Policy
    gates: Mapping[str, bool]
    explicit_gates: frozenset[str] = frozenset()
    members: Sequence[Member] = ()
    accurate_members: frozenset[str] = frozenset()


def _allowed(members: Sequence[Member], job: Job, policy: Policy) -> list[str]:
    term = policy.placement.affinity_terms[0]
    return [
        m.name
        for m in members
        if karmada.overflow_order(term, m) is not None
        and karmada.taints_reject(m, policy.placement.cluster_tolerations) is None
        and karmada.api_rejects(m, job.api_version, job.kind) is None
    ]


def _everywhere(allowed: Sequence[str]) -> str:
    return f"every member the policy allows ({', '.join(allowed)})" if allowed else "every member the policy allows"


def _gate(inp: DoctorInput, allowed: Sequence[str]) -> list[Finding]:
    if inp.gates.get(MULTIPLE_POD_TEMPLATES, False):
        return []
    how = "turned off" if MULTIPLE_POD_TEMPLATES in inp.explicit_gates else "off by default in Karmada"
    times = f": the job would run {len(allowed)} times" if len(allowed) > 1 else ""
    where = f"copies it to {_everywhere(allowed)}{times}"
    placement = inp.policy.placement
    if placement.single_member_spread() and not placement.spread_ignored():
        outcome = (
            karmada.outcome(karmada.KarmadaInput(inp.job, inp.members, placement, inp.gates)) if inp.members else None
        )
        taken = f" ({outcome.targets[0].name})" if outcome and outcome.targets else ""
        where = f"puts it on the first allowed member by name{taken} without looking at its resources"
    return [
        Finding(
            "gate-off",
            ERROR,
            1,
            f"feature gate {MULTIPLE_POD_TEMPLATES} is {how}: the {inp.job.kind} carries no components, "
            f"Karmada treats it like a ConfigMap and {where}",
            f"run karmada-controller-manager and karmada-scheduler with --feature-gates={MULTIPLE_POD_TEMPLATES}=true",
        )
    ]


def _selection(inp: DoctorInput) -> list[Finding]:
    if inp.policy.selects(inp.manifest):
        return []
    job = inp.job
    return [
        Finding(
            "policy-does-not-select",
            ERROR,
            None,
            f"{inp.policy.kind} {inp.policy.name} does not select {job.kind} {job.namespace}/{job.name} "
            "(no resourceSelector matches its apiVersion, kind, namespace and name or labels): "
            "it will not propagate this job",
            f"add a resourceSelector {{apiVersion: {job.api_version}, kind: {job.kind}, name: {job.name}}}",
        )
    ]


def _spread(inp: DoctorInput, allowed: Sequence[str]) -> list[Finding]:
    placement = inp.policy.placement
    findings = []
    if not placement.single_member_spread():
        if not placement.spread_constraints:
            what = "the policy has no spread constraint"
        else:
            what = (
                "its spread constraints ("
                + ", ".join(
                    f"{sc.spread_by_field or 'label ' + sc.spread_by_label} "
                    f"{sc.min_groups}..{sc.max_groups or 'unbounded'}"
                    for sc in placement.spread_constraints
                )
                + ") are not spreadByField cluster with minGroups 1, maxGroups 1"
            )
        aggregated = (
            placement.replica_scheduling is not None
            and placement.replica_scheduling.division_preference == "Aggregated"
        )
        findings.append(
            Finding(
                "no-one-member-spread",
                ERROR,
                2,
                f"{what}: Karmada never takes the multi-component path and copies the job to "
                f"{_everywhere(allowed)}"
                + ("; replicaDivisionPreference: Aggregated does not change that" if aggregated else ""),
                f"add {ONE_MEMBER_SPREAD}",
                karmada.PATH_A if not placement.spread_constraints or placement.spread_ignored() else None,
            )
        )
    elif placement.spread_ignored():
        rs = placement.replica_scheduling
        assert rs is not None  # spread_ignored() says so
        why = "defaulted to Weighted by Karmada's webhook" if rs.division_defaulted else "Weighted"
        findings.append(
            Finding(
                "spread-ignored",
                ERROR,
                2,
                f"replicaScheduling is Divided and replicaDivisionPreference is {why}, with "
                + ("no weightPreference" if not rs.weight_preference_given else "static weights and no dynamic weight")
                + ": Karmada ignores spread constraints then and copies the job to "
                f"{_everywhere(allowed)}",
                "set replicaDivisionPreference: Aggregated",
                karmada.PATH_A,
            )
        )
    elif placement.availability_ignored():
        state = "absent" if placement.replica_scheduling is None else "Duplicated"
        taken, severity = "", WARNING
        if inp.members and inp.gates.get(MULTIPLE_POD_TEMPLATES, False):
            outcome = karmada.outcome(karmada.KarmadaInput(inp.job, inp.members, placement, inp.gates))
            if outcome.targets:
                name = outcome.targets[0].name
                sets = outcome.sets.get(name, 0)
                taken = f": here {name}, where the general estimator counts {sets} set(s)"
                blind = _dra_blind(inp, name)
                if sets < 1 and blind:
                    taken += (
                        f", blind to the {', '.join(blind)} it serves through DRA: whether the job fits there, "
                        "only its accurate estimator can tell"
                    )
                elif sets < 1:
                    severity = ERROR
                    taken += ", so the job would stay Pending there"
        findings.append(
            Finding(
                "availability-ignored",
                severity,
                None,
                f"replicaScheduling is {state}: Karmada then takes the first member by score, "
                "available sets and name without checking it can host one set, so a job that fits "
                f"nowhere still lands somewhere and stays Pending{taken}",
                f"set {DIVIDED_AGGREGATED}",
                karmada.PATH_B,
            )
        )
    return findings


def _models(inp: DoctorInput) -> list[Finding]:
    if not inp.gates.get(RESOURCE_MODELING, True):
        return []
    requested = requested_names(inp.job.components)
    blind: dict[tuple[str, str, str], list[str]] = {}
    members = inp.members or ()
    for m in members:
        missing = sorted(requested - described_names(m.models))
        if m.models and missing:
            key = (m.models_source, ", ".join(sorted(described_names(m.models))), ", ".join(missing))
            blind.setdefault(key, []).append(m.name)
    if not members:
        missing = sorted(requested - described_names(DEFAULT_MODELS))
        if missing:
            blind[
                ("Karmada's default models", ", ".join(sorted(described_names(DEFAULT_MODELS))), ", ".join(missing))
            ] = ["every member without its own spec.resourceModels"]
    return [
        Finding(
            "resource-models-blind",
            ERROR,
            3,
            f"{', '.join(names)}: resource models ({source}) describe only {described}; the job asks "
            f"{missing}: Karmada's general estimator answers 0 sets there, the minimum over estimators "
            "is 0 whatever the accurate estimators say, and scheduling fails with "
            '"no enough resource when selecting 1 clusters"',
            f"describe {missing} in each Cluster's spec.resourceModels, or run karmada-scheduler with "
            f"--feature-gates={RESOURCE_MODELING}=false",
        )
        for (source, described, missing), names in blind.items()
    ]


def _accurate(inp: DoctorInput, allowed: Sequence[str]) -> list[Finding]:
    findings = []
    names = [m for m in allowed if m not in inp.accurate_members] if inp.members else []
    fix = (
        "deploy karmada-scheduler-estimator for each member and run karmada-scheduler with --enable-scheduler-estimator"
    )
    by_name = {m.name: m for m in inp.members}
    misleading = []
    for name in names:
        member = by_name[name]
        if member.snapshot is None:
            continue
        general = summary_sets(member.summary, inp.job.components).value
        blockers = explain.component_blockers(member.snapshot, inp.job.components)
        if general is not None and general >= 1 and blockers:
            misleading.append(name)
            findings.append(
                Finding(
                    "general-trap",
                    ERROR,
                    4,
                    f"{name} has no accurate estimator: the general estimator counts {general} set(s) "
                    f"from cluster totals, but {blockers[0]}; Karmada can place the job there, "
                    "report it Scheduled and FullyApplied, and its pods stay Pending",
                    fix,
                )
            )
    if inp.accurate_members and names:
        findings.append(
            Finding(
                "accurate-dropped",
                ERROR,
                4,
                f"{', '.join(names)} pass the policy's filters without an accurate estimator while "
                f"{', '.join(sorted(inp.accurate_members))} have one: Karmada's accurate client then "
                "fails the whole call, and the scheduler drops the accurate answers of EVERY member "
                "and decides on the general estimator (cluster totals) alone",
                fix + " (every member the policy allows needs one)",
                karmada.PATH_C,
            )
        )
    rest = [n for n in names if n not in misleading]
    if rest:
        findings.append(
            Finding(
                "no-accurate-estimator",
                WARNING,
                4,
                f"{', '.join(rest)}: no accurate scheduler-estimator, so Karmada sees only cluster "
                "totals there and per-node fragmentation is invisible",
                fix,
            )
        )
    if not inp.members:
        findings.append(
            Finding(
                "no-accurate-estimator",
                WARNING,
                4,
                "no members given (--clusters / --member): cannot tell which members have an "
                "accurate scheduler-estimator; without one, per-node fragmentation is invisible",
                fix,
            )
        )
    return findings


def _dra_blind(inp: DoctorInput, name: str) -> list[str]:
    """The requested resources member `name` serves only through DRA (Karmada counts 0 of them)."""
    member = next((m for m in inp.members if m.name == name), None)
    return [r.name for r in dra.member_blind(member, requested_names(inp.job.components))] if member else []


def _dra(inp: DoctorInput, allowed: Sequence[str]) -> list[Finding]:
    placement = inp.policy.placement
    # Karmada counts sets before it takes a member only on the multi-component path with a check.
    counted = (
        inp.gates.get(MULTIPLE_POD_TEMPLATES, False)
        and placement.single_member_spread()
        and not placement.spread_ignored()
        and not placement.availability_ignored()
    )
    requested = requested_names(inp.job.components)
    findings = []
    for member in inp.members:
        if member.name not in allowed:
            continue
        name = member.name
        for resource in dra.member_blind(member, requested):
            message = (
                f"{name} serves {resource.name} only through DRA ({resource.text()}): {dra.BLIND} sets for "
                "this job, and so does Karmada's own karmada-scheduler-estimator; Karmada takes the minimum "
                f"over its estimators, so it refuses {name} for every job asking {resource.name} although "
                f"{resource.free} device(s) are free"
            )
            if not counted:
                message += (
                    " (this policy does not make Karmada count sets before it takes a member, but every "
                    "policy that does will)"
                )
            fix = (
                f"make sure {name}'s scheduler-estimator is this project's, which counts DRA-served devices "
                "(Karmada's own reads node allocatable and answers 0 too)"
                if name in inp.accurate_members
                else f"deploy this project's estimator for {name}, which counts DRA-served devices (Karmada's general "
                'estimator and Karmada\'s own scheduler-estimator cannot), as docs/install.md ("Our manifests") '
                f"says (karmada-estimator manifests --cluster-name {name} --part member, then --part "
                "host), and run karmada-scheduler with --enable-scheduler-estimator=true"
            )
            if counted:
                fix += (
                    f". Karmada still takes the minimum with its general estimator's 0 while the Cluster's "
                    f"resourceSummary has no {resource.name}: to run the job on {name} meanwhile, once "
                    f"`karmada-place --estimator {name}=HOST:PORT` shows it fits, pin it there (clusterAffinity "
                    f"clusterNames: [{name}] with replicaScheduling Duplicated: Karmada then takes the member "
                    "without counting sets)"
                )
            findings.append(Finding("dra-invisible", ERROR if counted else WARNING, None, message, fix))
    return findings


def diagnose(inp: DoctorInput) -> list[Finding]:
    allowed = _allowed(inp.members, inp.job, inp.policy)
    return [
        *_selection(inp),
        *_gate(inp, allowed),
        *_spread(inp, allowed),
        *_models(inp),
        *_dra(inp, allowed),
        *_accurate(inp, allowed),
    ]


def render(inp: DoctorInput, findings: Sequence[Finding]) -> str:
    job, policy = inp.job, inp.policy
    lines = [
        f"doctor: {job.kind} {job.namespace}/{job.name} with {policy.kind} "
        f"{policy.namespace + '/' if policy.namespace else ''}{policy.name}"
    ]
    if not findings:
        lines.append("  no problems found: Karmada should place this job in one member, using per-node estimates")
    for f in findings:
        tag = (f"[failure {f.failure}] " if f.failure else "") + (
            f"[Karmada path ({f.karmada_path})] " if f.karmada_path else ""
        )
        lines.append(f"  {'ERROR' if f.severity == ERROR else 'WARN '} {tag}{f.message}")
        lines.append(f"        fix: {f.fix}")
    errors = sum(f.severity == ERROR for f in findings)
    warnings = len(findings) - errors
    lines.append(f"{errors} problem(s) that would place this job wrongly or not at all, {warnings} warning(s)")
    return "\n".join(lines)


def to_json(inp: DoctorInput, findings: Sequence[Finding]) -> dict:
    return {
        "job": {
            "apiVersion": inp.job.api_version,
            "kind": inp.job.kind,
            "namespace": inp.job.namespace,
            "name": inp.job.name,
        },
        "policy": {"kind": inp.policy.kind, "namespace": inp.policy.namespace, "name": inp.policy.name},
        "findings": [
            {
                "code": f.code,
                "severity": f.severity,
                "failure": f.failure,
                "message": f.message,
                "fix": f.fix,
                "karmadaPath": f.karmada_path,
            }
            for f in findings
        ],
    }
