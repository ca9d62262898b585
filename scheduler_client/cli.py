"""karmada-place: where does this job go, and why not elsewhere?

    karmada-place --job JOB.yaml [--policy POLICY.yaml] (--clusters CLUSTERS.yaml | --member NAME=FILE ...)
                  [--estimator NAME=HOST:PORT ...] [--estimator-timeout 3s] [TLS options]
                  [--estimator-server-name [MEMBER=]NAME ...] [--output table|json]
    karmada-place --job JOB.yaml --karmada-kubeconfig FILE [--karmada-context NAME] [...]
    karmada-place doctor --policy POLICY.yaml --job JOB.yaml [--feature-gates ...] [members, estimators]
    karmada-place summarize --member NAME=FILE ... [--clusters CLUSTERS.yaml]

With --karmada-kubeconfig the inputs come from a running Karmada control plane instead of
files: its Clusters, the policy that selects the job, the estimator Services karmada-scheduler
dials, and the workloads it still holds in flight (controlplane.py).

Exit status: 0 a member is chosen (doctor: no problem found; summarize: done), 3 no member
fits, or no policy of the control plane selects the job (doctor: a problem would misplace the
job), 2 bad input (the file and field are named), 4 the control plane cannot be reached or
refuses the request, 5 undecided: the member that would be chosen was decided without an answer
that could judge it (its accurate estimator gave none, and the job asks an extended resource,
such as GPUs, that cluster totals and the resource models cannot judge per node); the output
names the member, the estimator's address and what is unknown.

The commands are here; the flags, and the inputs they name, are cliargs.py.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import yaml

from estimator.api import AssumedWorkload, ComponentSetsQuery
from scheduler_client import accurate, bindings, controlplane, doctor, dra, report
from scheduler_client.cliargs import (
    UsageError,
    build_parser,
    estimator_endpoints,
    feature_gates,
    load_members,
    parse_duration,
    tls_warnings,
)
from scheduler_client.clusters import to_cluster_object
from scheduler_client.karmada import RESOURCE_MODELING, Placement, SpreadConstraint
from scheduler_client.placement import Options, PlacementResult, evaluate
from scheduler_client.sources import InputError, load_in_flight, load_job, load_job_manifest, load_policy

EXIT_CHOSEN, EXIT_BAD_INPUT, EXIT_NONE_FITS, EXIT_UNREACHABLE, EXIT_UNDECIDED = 0, 2, 3, 4, 5
# The placement this tool exists for, assumed when no policy is given.
ONE_MEMBER = Placement(spread_constraints=(SpreadConstraint("cluster", "", 1, 1),))


class NotPropagated(Exception):
    """No policy of the control plane selects the job: Karmada would not place it anywhere."""


# --- commands ---------------------------------------------------------------------------


@dataclass
class _ControlPlaneInputs:
    """What --karmada-kubeconfig adds to one placement."""

    view: controlplane.ControlPlaneView
    broken: dict[str, str]  # members whose estimator karmada-scheduler cannot dial, and why

    def summary(
        self, endpoints: dict[str, accurate.Endpoint], flights: Sequence[bindings.InFlight], source: str
    ) -> dict:
        view = self.view
        estimators = {}
        for name, service in view.estimators.items():
            endpoint = endpoints.get(name)
            address = endpoint.address if endpoint else None
            estimators[name] = {
                "address": address,
                "how": service.how if address == service.address else f"--estimator (overrides {service.how})",
            }
        return {
            "server": view.server,
            "policy": view.policy.key if view.policy else None,  # None: --policy FILE, not read here
            "policiesRead": view.policies_read,
            "estimators": estimators,
            "inFlight": {
                m: [
                    {
                        "binding": f.binding,
                        "resource": f.resource,
                        "components": [{"name": c.name, "replicas": c.replicas} for c in f.workload.components],
                        "ageSeconds": f.age_seconds,
                        "text": f.describe(),
                    }
                    for f in flights
                    if f.member == m
                ]
                for m in sorted({f.member for f in flights})
            },
            "inFlightFrom": source,
        }


def _control_plane(args: argparse.Namespace, manifest: Mapping) -> _ControlPlaneInputs:
    if args.clusters:
        raise UsageError(
            "--clusters and --karmada-kubeconfig exclude each other: the control plane's Clusters are read"
        )
    view = controlplane.read_control_plane(
        args.karmada_kubeconfig,
        manifest,
        context=args.karmada_context,
        estimator_namespace=args.scheduler_estimator_service_namespace,
        estimator_prefix=args.scheduler_estimator_service_prefix,
        estimator_port=args.scheduler_estimator_port,
        with_missing_services=args.enable_scheduler_estimator,
        policy_wanted=not args.policy,
        in_flight_wanted=not args.in_flight,
        exclude_bindings=frozenset({controlplane.binding_name(manifest)}),
    )
    # Estimator Services deployed: karmada-scheduler runs with --enable-scheduler-estimator, and
    # a member whose estimator it cannot dial fails the accurate call (path c).
    enabled = args.enable_scheduler_estimator or any(s.address for s in view.estimators.values())
    broken = {n: s.how for n, s in view.estimators.items() if enabled and s.address is None}
    return _ControlPlaneInputs(view, broken)


def _place(args: argparse.Namespace) -> tuple[int, PlacementResult, dict | None]:
    """The placement of `run_place`: (exit status, result, control-plane summary)."""
    gates, _ = feature_gates(args)
    timeout = parse_duration(args.estimator_timeout)
    job = load_job(args.job, karmada_compatible=args.karmada_compatible)
    if not job.components:
        raise InputError(
            args.job, "spec", f"the {job.kind} has no components to place (Karmada would copy it to every member)"
        )
    # Karmada's own reading of the job, for its outcome beside ours; it may fail where ours does not.
    try:
        karmada_job = job if args.karmada_compatible else load_job(args.job, karmada_compatible=True)
    except InputError as error:
        karmada_job, karmada_unreadable = None, str(error)
    else:
        karmada_unreadable = ""
    policy = load_policy(args.policy) if args.policy else None
    plane = _control_plane(args, load_job_manifest(args.job)) if args.karmada_kubeconfig else None
    if plane is not None and policy is None:
        policy = plane.view.policy
        if policy is None:
            raise NotPropagated(
                f"no PropagationPolicy in namespace {job.namespace} and no ClusterPropagationPolicy "
                f"of {plane.view.server} selects {job.kind} {job.namespace}/{job.name}: Karmada would "
                "not propagate it (no ResourceBinding, no member)"
            )
    flights, source = (plane.view.in_flight if plane else []), "the control plane's ResourceBindings"
    if args.in_flight:
        own = frozenset({controlplane.binding_name(load_job_manifest(args.job))})
        flights = load_in_flight(args.in_flight, datetime.now(UTC), own)
        source = ", ".join(args.in_flight)
    members = load_members(args, gates.get(RESOURCE_MODELING, True), plane.view.clusters if plane else None)
    endpoints = estimator_endpoints(args, members, plane.view.estimators if plane else None)
    broken = {n: why for n, why in (plane.broken if plane else {}).items() if n not in endpoints}

    def ask(
        names: Sequence[str],
        query: ComponentSetsQuery,
        object_key: str,
        assumed: Mapping[str, Sequence[AssumedWorkload]] | None = None,
    ) -> dict[str, accurate.Answer]:
        answers = accurate.ask_all([endpoints[n] for n in names if n in endpoints], query, object_key, timeout, assumed)
        for name in names:
            if name in broken:
                answers[name] = accurate.Answer(
                    name, accurate.UNKNOWN, f"karmada-scheduler cannot dial it: {broken[name]}"
                )
        return answers

    options = Options(
        strategy=args.strategy,
        karmada_compatible=args.karmada_compatible,
        gates=gates,
        accurate_members=frozenset(endpoints) | frozenset(broken),
        accurate_addresses={**{n: e.address for n, e in endpoints.items()}, **{n: "(none)" for n in broken}},
        policy_given=policy is not None,
    )
    result = evaluate(
        job,
        members,
        policy.placement if policy else ONE_MEMBER,
        options,
        ask,
        karmada_job,
        assumed=bindings.by_member(flights),
    )
    if flights:
        described = {m: tuple(f.describe() for f in flights if f.member == m) for m in {f.member for f in flights}}
        result = dataclasses.replace(result, in_flight=described)
    extra = tls_warnings(args)
    if karmada_unreadable:
        extra.append(
            f"Karmada's interpreter cannot read this job ({karmada_unreadable}): Karmada would not "
            "schedule it; the Karmada outcome shown assumes this tool's reading"
        )
    if extra:
        result = dataclasses.replace(result, warnings=result.warnings + tuple(extra))
    code = EXIT_UNDECIDED if result.undecided else (EXIT_CHOSEN if result.targets else EXIT_NONE_FITS)
    return code, result, plane.summary(endpoints, flights, source) if plane else None


def run_place(args: argparse.Namespace) -> int:
    try:
        code, result, plane = _place(args)
    except NotPropagated as error:
        print(f"karmada-place: {error}", file=sys.stderr)
        return EXIT_NONE_FITS
    if args.output == "json":
        print(json.dumps(report.to_json(result, plane), indent=2))
    else:
        print(report.to_table(result, plane))
    return code


def place_json(argv: Sequence[str]) -> tuple[int, dict | None, str]:
    """`karmada-place ARGS -o json` in process, for programs (the e2e harness asks it beside
    Karmada): (exit status, the JSON document or None, the error text). Thread-safe: it
    prints nothing."""
    parser = build_parser()
    try:
        args = parser.parse_args(list(argv))
    except SystemExit as exit_:
        return int(exit_.code or 0), None, "bad arguments"
    if args.command is not None:
        return EXIT_BAD_INPUT, None, "place_json places a job; it runs no command"
    try:
        code, result, plane = _place(args)
    except (InputError, UsageError) as error:
        return EXIT_BAD_INPUT, None, str(error)
    except controlplane.ControlPlaneError as error:
        return EXIT_UNREACHABLE, None, str(error)
    except NotPropagated as error:
        return EXIT_NONE_FITS, None, str(error)
    return code, report.to_json(result, plane), ""


def run_doctor(args: argparse.Namespace) -> int:
    gates, explicit = feature_gates(args)
    job = load_job(args.job)
    policy = load_policy(args.policy)
    members = load_members(args, gates.get(RESOURCE_MODELING, True)) if (args.clusters or args.member) else []
    endpoints = estimator_endpoints(args, members) if members else {}
    inp = doctor.DoctorInput(job, load_job_manifest(args.job), policy, gates, explicit, members, frozenset(endpoints))
    findings = doctor.diagnose(inp)
    if args.output == "json":
        print(json.dumps(doctor.to_json(inp, findings), indent=2))
    else:
        print(doctor.render(inp, findings))
    return EXIT_NONE_FITS if any(f.severity == doctor.ERROR for f in findings) else EXIT_CHOSEN


def run_summarize(args: argparse.Namespace) -> int:
    gates, _ = feature_gates(args)
    if not args.member:
        raise UsageError("summarize needs --member NAME=FILE")
    members = [m for m in load_members(args, gates.get(RESOURCE_MODELING, True)) if m.summary is not None]
    objects = [
        to_cluster_object(m.name, m.labels, m.models, m.summary, m.grade_counts, m.provider, m.region, m.zones)
        for m in members
        if m.summary is not None  # (every one, as chosen above)
    ]
    for member, obj in zip(members, objects, strict=True):
        if member.dra:  # beside the node-allocatable summary: what the member serves through DRA
            obj["metadata"]["annotations"] = {dra.ANNOTATION: dra.annotation(member.dra)}
    if args.output == "json":
        print(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}, indent=2))
    else:
        for m in members:
            for line in dra.comment_lines(m.name, m.dra, m.dra_failed_classes):
                print(line)
        print(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": objects}, sort_keys=False), end="")
    return EXIT_CHOSEN


COMMANDS = {None: run_place, "doctor": run_doctor, "summarize": run_summarize}


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:
        return int(exit_.code or 0)
    try:
        return COMMANDS[args.command](args)
    except (InputError, UsageError) as error:
        print(f"karmada-place: {error}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except controlplane.ControlPlaneError as error:
        print(f"karmada-place: {error}", file=sys.stderr)
        return EXIT_UNREACHABLE


if __name__ == "__main__":
    sys.exit(main())
