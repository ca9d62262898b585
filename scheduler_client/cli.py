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
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import re
import sys
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Sequence

import yaml

from estimator.api import FlagValueError, parse_go_duration
from scheduler_client import accurate, bindings, controlplane, doctor, dra, report
from scheduler_client.clusters import to_cluster_object
from scheduler_client.gates import RESOURCE_MODELING, GateError, parse_gates
from scheduler_client.members import Member, build_members
from scheduler_client.placement import Options, PlacementResult, evaluate
from scheduler_client.policy import Placement, SpreadConstraint
from scheduler_client.select import KARMADA, STRATEGIES
from scheduler_client.sources import InputError, load_clusters, load_in_flight, load_job, load_job_manifest, \
    load_member_snapshot, load_policy

EXIT_CHOSEN, EXIT_BAD_INPUT, EXIT_NONE_FITS, EXIT_UNREACHABLE, EXIT_UNDECIDED = 0, 2, 3, 4, 5
# The placement this tool exists for, assumed when no policy is given.
ONE_MEMBER = Placement(spread_constraints=(SpreadConstraint("cluster", "", 1, 1),))


class UsageError(ValueError):
    """A flag value we cannot use; names the flag."""


class NotPropagated(Exception):
    """No policy of the control plane selects the job: Karmada would not place it anywhere."""


def parse_duration(text: str) -> float:
    """A Go duration ("3s", "500ms", "1m30s") or plain seconds, in seconds."""
    text = text.strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            seconds = parse_go_duration(text)
        except FlagValueError as error:
            raise UsageError(f"--estimator-timeout: {text!r} is not a duration (e.g. 3s, 500ms): {error}") from None
    if not math.isfinite(seconds) or seconds <= 0:
        raise UsageError(f"--estimator-timeout: must be positive, got {text!r}")
    return seconds


def _pairs(values: Sequence[str], flag: str, what: str) -> list[tuple[str, str]]:
    pairs = []
    for value in values:
        name, sep, rest = value.partition("=")
        if not sep or not name or not rest:
            raise UsageError(f"{flag} {value!r}: expected NAME={what}")
        pairs.append((name, rest))
    return pairs


def _add_member_arguments(p: argparse.ArgumentParser) -> None:
    members = p.add_argument_group("members")
    members.add_argument("--clusters", action="append", default=[], metavar="CLUSTERS.yaml",
                         help="Karmada Cluster objects (kubectl get clusters -o yaml): labels, resource models and "
                              "status.resourceSummary. Repeatable.")
    members.add_argument("--member", action="append", default=[], metavar="NAME=FILE",
                         help="a member's nodes and pods (kubectl get nodes,pods -A -o yaml; add deviceclasses,"
                              "resourceslices,resourceclaims for GPUs served through DRA); repeat a NAME to add "
                              "files. Without a Cluster status, the summary is computed from it as Karmada's cluster "
                              "status controller does; it also gives per-node explanations and the devices served "
                              "through DRA, which no Cluster status shows.")
    est = p.add_argument_group("accurate estimators (karmada-scheduler-estimator, gRPC)")
    est.add_argument("--estimator", action="append", default=[], metavar="NAME=HOST:PORT",
                     help="the member's scheduler-estimator address")
    est.add_argument("--enable-scheduler-estimator", action="store_true",
                     help="ask every member without --estimator at Karmada's Service name "
                          "<prefix>-<member>.<namespace>.svc:<port>")
    est.add_argument("--scheduler-estimator-service-namespace", default=accurate.DEFAULT_SERVICE_NAMESPACE)
    est.add_argument("--scheduler-estimator-service-prefix", default=accurate.DEFAULT_SERVICE_PREFIX)
    est.add_argument("--scheduler-estimator-port", type=int, default=accurate.DEFAULT_PORT)
    est.add_argument("--estimator-timeout", "--scheduler-estimator-timeout", default="3s", metavar="DURATION",
                     help="one deadline for all estimator calls (default 3s, as karmada-scheduler)")
    est.add_argument("--estimator-ca-file", "--scheduler-estimator-ca-file", default="",
                     help="CA for the estimators' server certificates (turns TLS on)")
    est.add_argument("--estimator-cert-file", "--scheduler-estimator-cert-file", default="",
                     help="client certificate for mutual TLS")
    est.add_argument("--estimator-key-file", "--scheduler-estimator-key-file", default="",
                     help="client key for mutual TLS")
    est.add_argument("--insecure-skip-estimator-verify", action="store_true",
                     help="TLS without verifying the estimators' certificates (trusts what each presents)")
    est.add_argument("--estimator-server-name", action="append", default=[], metavar="[MEMBER=]NAME",
                     help="the name the estimators' certificates are verified against (and sent as SNI) instead of "
                          "the host dialled, for an estimator reached through an IP address or a port-forward "
                          "(e.g. karmada-scheduler-estimator-member-b.karmada-system.svc); MEMBER=NAME for one "
                          "member's estimator, NAME alone for every other. Repeatable")
    p.add_argument("--feature-gates", default="", metavar="A=true,B=false",
                   help="Karmada feature gates (defaults as Karmada's: MultiplePodTemplatesScheduling=false, "
                        "CustomizedClusterResourceModeling=true, ...)")
    p.add_argument("--output", "-o", choices=("table", "json"), default="table")


class _PlaceParser(argparse.ArgumentParser):
    """--job is required unless a command runs: argparse's `required=True` would also demand
    it of `karmada-place doctor ...`, so it is checked here, with argparse's wording. Words
    left over are reported by the command's own parser, so the error names the command."""

    subcommands: dict[str, argparse.ArgumentParser]

    def parse_known_args(self, args=None, namespace=None):
        args = list(sys.argv[1:] if args is None else args)
        parsed, extra = super().parse_known_args(args, namespace)
        if parsed.command is None and parsed.job is None:
            self.error("the following arguments are required: --job")
        if parsed.command is not None and args[0] != parsed.command:
            # The command's defaults would silently replace flags given before it.
            self.error(f"the command comes first: karmada-place {parsed.command} [flags]")
        return parsed, extra

    def parse_args(self, args=None, namespace=None):
        parsed, extra = self.parse_known_args(args, namespace)
        if extra:
            failing = self.subcommands[parsed.command] if parsed.command else self
            failing.error(f"unrecognized arguments: {' '.join(extra)}")
        return parsed


def build_parser() -> argparse.ArgumentParser:
    """karmada-place: placing a job without a command; `doctor` and `summarize` as argparse
    subcommands (listed in --help, each with its own --help and errors)."""
    p = _PlaceParser(
        prog="karmada-place", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Where would Karmada put this multi-component job, and why not elsewhere? Per member: the "
                    "general estimator (cluster totals), the resource models and the accurate estimators; the "
                    "minimum of the answers that are not -1; ONE member chosen as Karmada chooses.",
        epilog="Exit: 0 chosen, 3 no member fits (or no policy selects the job), 2 bad input, 4 the Karmada "
               "control plane cannot be reached, 5 undecided: the member that would be chosen was decided without "
               "an answer that could judge it (its accurate estimator gave none, for a job asking an extended "
               "resource such as GPUs, which cluster totals cannot judge per node); the output names the member, "
               "the estimator and what is unknown, and recommends no member.")
    commands = p.add_subparsers(dest="command", title="commands (without one: place the job)", metavar="[COMMAND]",
                                parser_class=argparse.ArgumentParser)
    p.subcommands = {"doctor": commands.add_parser("doctor", help=DOCTOR, description=DOCTOR),
                     "summarize": commands.add_parser("summarize", help=SUMMARIZE, description=SUMMARIZE)}
    _add_doctor_arguments(p.subcommands["doctor"])
    _add_member_arguments(p.subcommands["summarize"])
    p.add_argument("--job", metavar="JOB.yaml", help="the job manifest (its runtime may follow); required")
    p.add_argument("--policy", metavar="POLICY.yaml", help="the PropagationPolicy that selects the job")
    p.add_argument("--strategy", choices=STRATEGIES, default=KARMADA,
                   help="karmada: most sets first, then name (default); tightest: fewest sets that fit")
    p.add_argument("--karmada-compatible", action="store_true",
                   help="answer exactly what Karmada's scheduler does: its targets (every member without a "
                        "cluster 1..1 spread constraint; the first member, even at 0 sets, with replicaScheduling "
                        "absent or Duplicated; the general estimator alone when any member's accurate estimator "
                        "is missing or fails) or its error text; 0 where Karmada answers 0 instead of -1 (unknown); "
                        "the job read as Karmada's interpreter reads it. Karmada's feature gates are --feature-gates "
                        "(MultiplePodTemplatesScheduling is off by default, as in Karmada: then Karmada sees no "
                        "components and takes members by name). Without it, Karmada's outcome is shown beside this "
                        "tool's recommendation")
    _add_member_arguments(p)
    plane = p.add_argument_group("a running Karmada control plane, instead of files")
    plane.add_argument("--karmada-kubeconfig", metavar="FILE",
                       help="read the karmada-apiserver as karmada-scheduler does: every Cluster, the "
                            "PropagationPolicy or ClusterPropagationPolicy that selects the job (unless --policy), the "
                            "estimator Services (ExternalName <prefix>-<cluster>, dialled at externalName:targetPort; "
                            "--estimator overrides one) and the ResourceBindings whose workloads the scheduler still "
                            "holds in flight (deducted with SchedulingOvercommitProtection on, as Karmada does)")
    plane.add_argument("--karmada-context", default="", metavar="NAME",
                       help="the kubeconfig context (default: its current-context)")
    p.add_argument("--in-flight", action="append", default=[], metavar="BINDINGS.yaml",
                   help="ResourceBindings (kubectl get rb -o yaml) whose workloads count as in flight on every member "
                        "of their spec.clusters, whatever their status: a what-if, or a moment reconstructed. "
                        "Replaces the control plane's in-flight bindings. Repeatable")
    return p


DOCTOR = ("Flags the silent failures before they happen: feature gate, spread constraint, blind resource models, "
          "members without an accurate estimator. Exit 3 when a problem would misplace the job.")
SUMMARIZE = ("Print Karmada Cluster objects whose status.resourceSummary (and allocatableModelings) is computed "
             "from member object files, as Karmada's cluster status controller computes them. Beside it, the "
             f"resources a member serves through DRA (annotation {dra.ANNOTATION}, and comments in YAML): the "
             "summary sums node allocatable only, so Karmada counts none of them.")


def _add_doctor_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--policy", required=True, metavar="POLICY.yaml")
    p.add_argument("--job", required=True, metavar="JOB.yaml")
    _add_member_arguments(p)


# --- shared set-up ----------------------------------------------------------------------


def _gates(args) -> tuple[dict[str, bool], frozenset[str]]:
    try:
        return parse_gates(args.feature_gates)
    except GateError as error:
        raise UsageError(f"--feature-gates: {error}") from None


def _members(args, modeling: bool, from_control_plane=None) -> list[Member]:
    clusters = list(from_control_plane) if from_control_plane is not None else \
        (load_clusters(args.clusters) if args.clusters else [])
    files: dict[str, list[str]] = {}
    for name, path in _pairs(args.member, "--member", "FILE"):
        files.setdefault(name, []).append(path)
    snapshots = {name: load_member_snapshot(name, paths) for name, paths in files.items()}
    members = build_members(clusters, snapshots, modeling)
    if not members:
        if from_control_plane is not None:
            raise UsageError("no members: the control plane has no Cluster objects")
        raise UsageError("no members: give --clusters CLUSTERS.yaml or --member NAME=FILE")
    return members


def _endpoints(args, members: Sequence[Member], plane: "_ControlPlaneInputs | None" = None
               ) -> dict[str, accurate.Endpoint]:
    names = [m.name for m in members]
    try:
        tls = accurate.ClientTLS.from_files(args.estimator_ca_file, args.estimator_cert_file,
                                            args.estimator_key_file, args.insecure_skip_estimator_verify)
    except OSError as error:
        raise InputError(getattr(error, "filename", "") or "TLS file", "", f"cannot read: {error.strerror}") from None
    if bool(tls.cert) != bool(tls.key):
        raise UsageError("--estimator-cert-file and --estimator-key-file go together")
    addresses: dict[str, str] = {}
    if plane is not None:  # the Services karmada-scheduler dials, as it resolves them
        addresses.update({n: s.address for n, s in plane.view.estimators.items() if s.address and n in names})
    elif args.enable_scheduler_estimator:
        for name in names:
            addresses[name] = accurate.karmada_service_address(name, args.scheduler_estimator_service_namespace,
                                                               args.scheduler_estimator_service_prefix,
                                                               args.scheduler_estimator_port)
    for name, address in _pairs(args.estimator, "--estimator", "HOST:PORT"):
        if name not in names:
            raise UsageError(f"--estimator {name}={address}: no member {name} (members: {', '.join(names)})")
        if not re.fullmatch(r".+:\d+", address):
            raise UsageError(f"--estimator {name}={address}: expected HOST:PORT")
        addresses[name] = address
    server_names = _server_names(args.estimator_server_name, names)
    every = server_names.get("", "")
    return {name: accurate.Endpoint(name, address, tls=tls, server_name=server_names.get(name, every))
            for name, address in addresses.items()}


_HOST_NAME = re.compile(r"[A-Za-z0-9*]([A-Za-z0-9.*-]*[A-Za-z0-9])?|[0-9A-Fa-f:.]+")


def _server_names(values: Sequence[str], members: Sequence[str]) -> dict[str, str]:
    """--estimator-server-name: member -> name; "" -> the name for every other member."""
    names: dict[str, str] = {}
    for value in values:
        member, sep, name = value.partition("=")
        if not sep:
            member, name = "", value
        if sep and member not in members:
            raise UsageError(f"--estimator-server-name {value}: no member {member or '(empty)'} "
                             f"(members: {', '.join(members)})")
        if not _HOST_NAME.fullmatch(name):
            raise UsageError(f"--estimator-server-name {value}: {name!r} is not a host name")
        if member in names:
            raise UsageError(f"--estimator-server-name: given twice for {member or 'every member'}")
        names[member] = name
    return names


def _tls_warning(args) -> list[str]:
    secure = args.estimator_ca_file or args.insecure_skip_estimator_verify
    if (args.estimator_cert_file or args.estimator_key_file) and not secure:
        return ["a client certificate was given without --estimator-ca-file or --insecure-skip-estimator-verify: "
                "like karmada-scheduler, the estimators are dialled in plaintext"]
    if args.estimator_server_name and not secure:
        return ["--estimator-server-name without --estimator-ca-file: the estimators are dialled in plaintext, "
                "where no name is verified"]
    if args.estimator_server_name and args.insecure_skip_estimator_verify:
        return ["--estimator-server-name is not used with --insecure-skip-estimator-verify, which trusts the "
                "certificate each estimator presents, whatever its name"]
    return []


# --- commands ---------------------------------------------------------------------------


@dataclass
class _ControlPlaneInputs:
    """What --karmada-kubeconfig adds to one placement."""

    view: controlplane.ControlPlaneView
    broken: dict[str, str]  # members whose estimator karmada-scheduler cannot dial, and why

    def summary(self, endpoints: dict[str, accurate.Endpoint], flights: list[bindings.InFlight],
                source: str) -> dict:
        view = self.view
        estimators = {}
        for name, service in view.estimators.items():
            endpoint = endpoints.get(name)
            address = endpoint.address if endpoint else None
            estimators[name] = {"address": address,
                                "how": service.how if address == service.address else "--estimator (overrides "
                                                                                      f"{service.how})"}
        return {"server": view.server,
                "policy": view.policy.key if view.policy else None,  # None: --policy FILE, not read here
                "policiesRead": view.policies_read,
                "estimators": estimators,
                "inFlight": {m: [{"binding": f.binding, "resource": f.resource,
                                  "components": [{"name": c.name, "replicas": c.replicas}
                                                 for c in f.workload.components],
                                  "ageSeconds": f.age_seconds, "text": f.describe()}
                                 for f in flights if f.member == m]
                             for m in sorted({f.member for f in flights})},
                "inFlightFrom": source}


def _control_plane(args, manifest) -> _ControlPlaneInputs:
    if args.clusters:
        raise UsageError("--clusters and --karmada-kubeconfig exclude each other: the control plane's Clusters "
                         "are read")
    view = controlplane.read_control_plane(
        args.karmada_kubeconfig, manifest, context=args.karmada_context,
        estimator_namespace=args.scheduler_estimator_service_namespace,
        estimator_prefix=args.scheduler_estimator_service_prefix, estimator_port=args.scheduler_estimator_port,
        with_missing_services=args.enable_scheduler_estimator, policy_wanted=not args.policy,
        in_flight_wanted=not args.in_flight,
        exclude_bindings=frozenset({controlplane.binding_name(manifest)}))
    # Estimator Services deployed: karmada-scheduler runs with --enable-scheduler-estimator, and
    # a member whose estimator it cannot dial fails the accurate call (path c).
    enabled = args.enable_scheduler_estimator or any(s.address for s in view.estimators.values())
    broken = {n: s.how for n, s in view.estimators.items() if enabled and s.address is None}
    return _ControlPlaneInputs(view, broken)


def _place(args) -> tuple[int, PlacementResult, dict | None]:
    """The placement of `run_place`: (exit status, result, control-plane summary)."""
    gates, _ = _gates(args)
    timeout = parse_duration(args.estimator_timeout)
    job = load_job(args.job, karmada_compatible=args.karmada_compatible)
    if not job.components:
        raise InputError(args.job, "spec", f"the {job.kind} has no components to place (Karmada would copy it to "
                                            "every member)")
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
            raise NotPropagated(f"no PropagationPolicy in namespace {job.namespace} and no ClusterPropagationPolicy "
                                f"of {plane.view.server} selects {job.kind} {job.namespace}/{job.name}: Karmada would "
                                "not propagate it (no ResourceBinding, no member)")
    flights, source = (plane.view.in_flight if plane else []), "the control plane's ResourceBindings"
    if args.in_flight:
        own = frozenset({controlplane.binding_name(load_job_manifest(args.job))})
        flights = load_in_flight(args.in_flight, datetime.now(timezone.utc), own)
        source = ", ".join(args.in_flight)
    members = _members(args, gates.get(RESOURCE_MODELING, True),
                       plane.view.clusters if plane else None)
    endpoints = _endpoints(args, members, plane)
    broken = {n: why for n, why in (plane.broken if plane else {}).items() if n not in endpoints}

    def ask(names, query, object_key, assumed=None):
        answers = accurate.ask_all([endpoints[n] for n in names if n in endpoints], query, object_key, timeout,
                                   assumed)
        for name in names:
            if name in broken:
                answers[name] = accurate.Answer(name, accurate.UNKNOWN, f"karmada-scheduler cannot dial it: "
                                                                        f"{broken[name]}")
        return answers

    options = Options(strategy=args.strategy, karmada_compatible=args.karmada_compatible, gates=gates,
                      accurate_members=frozenset(endpoints) | frozenset(broken),
                      accurate_addresses={**{n: e.address for n, e in endpoints.items()},
                                          **{n: "(none)" for n in broken}},
                      policy_given=policy is not None)
    result = evaluate(job, members, policy.placement if policy else ONE_MEMBER, options, ask, karmada_job,
                      assumed=bindings.by_member(flights))
    if flights:
        described = {m: tuple(f.describe() for f in flights if f.member == m) for m in {f.member for f in flights}}
        result = dataclasses.replace(result, in_flight=described)
    extra = _tls_warning(args)
    if karmada_unreadable:
        extra.append(f"Karmada's interpreter cannot read this job ({karmada_unreadable}): Karmada would not "
                     "schedule it; the Karmada outcome shown assumes this tool's reading")
    if extra:
        result = dataclasses.replace(result, warnings=result.warnings + tuple(extra))
    code = EXIT_UNDECIDED if result.undecided else (EXIT_CHOSEN if result.targets else EXIT_NONE_FITS)
    return code, result, plane.summary(endpoints, flights, source) if plane else None


def run_place(args) -> int:
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


def run_doctor(args) -> int:
    gates, explicit = _gates(args)
    job = load_job(args.job)
    policy = load_policy(args.policy)
    members = _members(args, gates.get(RESOURCE_MODELING, True)) if (args.clusters or args.member) else []
    endpoints = _endpoints(args, members) if members else {}
    inp = doctor.DoctorInput(job, load_job_manifest(args.job), policy, gates, explicit, members, frozenset(endpoints))
    findings = doctor.diagnose(inp)
    if args.output == "json":
        print(json.dumps(doctor.to_json(inp, findings), indent=2))
    else:
        print(doctor.render(inp, findings))
    return EXIT_NONE_FITS if any(f.severity == doctor.ERROR for f in findings) else EXIT_CHOSEN


def run_summarize(args) -> int:
    gates, _ = _gates(args)
    if not args.member:
        raise UsageError("summarize needs --member NAME=FILE")
    members = [m for m in _members(args, gates.get(RESOURCE_MODELING, True)) if m.summary is not None]
    objects = [to_cluster_object(m.name, m.labels, m.models, m.summary, m.grade_counts, m.provider, m.region, m.zones)
               for m in members]
    for member, obj in zip(members, objects):
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
