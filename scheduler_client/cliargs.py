"""karmada-place's flags: the parser, and flag values turned into inputs. The commands are cli.py.

    build_parser()        placing a job without a command; `doctor` and `summarize` as subcommands
    feature_gates(args)   --feature-gates -> Karmada's gates (and those set explicitly)
    load_members(args, modeling[, Clusters of a control plane]) -> the members (--clusters, --member)
    estimator_endpoints(args, members[, Services of a control plane]) -> each member's accurate estimator
    tls_warnings(args)    TLS options that do not do what they seem to

A flag value we cannot use raises UsageError, naming the flag (exit status 2).
"""

from __future__ import annotations

import argparse
import math
import re
import sys
from collections.abc import Mapping, Sequence

from estimator.api import FlagValueError, parse_go_duration
from scheduler_client import accurate, dra
from scheduler_client.clusters import ClusterObject
from scheduler_client.controlplane import EstimatorService
from scheduler_client.karmada import GateError, parse_gates
from scheduler_client.memberview import Member, build_members
from scheduler_client.placement import KARMADA, STRATEGIES
from scheduler_client.sources import InputError, load_clusters, load_member_snapshot


class UsageError(ValueError):
    """A flag value we cannot use; names the flag."""


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
    members.add_argument(
        "--clusters",
        action="append",
        default=[],
        metavar="CLUSTERS.yaml",
        help="Karmada Cluster objects (kubectl get clusters -o yaml): labels, resource models and "
        "status.resourceSummary. Repeatable.",
    )
    members.add_argument(
        "--member",
        action="append",
        default=[],
        metavar="NAME=FILE",
        help="a member's nodes and pods (kubectl get nodes,pods -A -o yaml; add deviceclasses,"
        "resourceslices,resourceclaims for GPUs served through DRA); repeat a NAME to add "
        "files. Without a Cluster status, the summary is computed from it as Karmada's cluster "
        "status controller does; it also gives per-node explanations and the devices served "
        "through DRA, which no Cluster status shows.",
    )
    est = p.add_argument_group("accurate estimators (karmada-scheduler-estimator, gRPC)")
    est.add_argument(
        "--estimator",
        action="append",
        default=[],
        metavar="NAME=HOST:PORT",
        help="the member's scheduler-estimator address",
    )
    est.add_argument(
        "--enable-scheduler-estimator",
        action="store_true",
        help="ask every member without --estimator at Karmada's Service name <prefix>-<member>.<namespace>.svc:<port>",
    )
    est.add_argument("--scheduler-estimator-service-namespace", default=accurate.DEFAULT_SERVICE_NAMESPACE)
    est.add_argument("--scheduler-estimator-service-prefix", default=accurate.DEFAULT_SERVICE_PREFIX)
    est.add_argument("--scheduler-estimator-port", type=int, default=accurate.DEFAULT_PORT)
    est.add_argument(
        "--estimator-timeout",
        "--scheduler-estimator-timeout",
        default="3s",
        metavar="DURATION",
        help="one deadline for all estimator calls (default 3s, as karmada-scheduler)",
    )
    est.add_argument(
        "--estimator-ca-file",
        "--scheduler-estimator-ca-file",
        default="",
        help="CA for the estimators' server certificates (turns TLS on)",
    )
    est.add_argument(
        "--estimator-cert-file", "--scheduler-estimator-cert-file", default="", help="client certificate for mutual TLS"
    )
    est.add_argument(
        "--estimator-key-file", "--scheduler-estimator-key-file", default="", help="client key for mutual TLS"
    )
    est.add_argument(
        "--insecure-skip-estimator-verify",
        action="store_true",
        help="TLS without verifying the estimators' certificates (trusts what each presents)",
    )
    est.add_argument(
        "--estimator-server-name",
        action="append",
        default=[],
        metavar="[MEMBER=]NAME",
        help="the name the estimators' certificates are verified against (and sent as SNI) instead of "
        "the host dialled, for an estimator reached through an IP address or a port-forward "
        "(e.g. karmada-scheduler-estimator-member-b.karmada-system.svc); MEMBER=NAME for one "
        "member's estimator, NAME alone for every other. Repeatable",
    )
    p.add_argument(
        "--feature-gates",
        default="",
        metavar="A=true,B=false",
        help="Karmada feature gates (defaults as Karmada's: MultiplePodTemplatesScheduling=false, "
        "CustomizedClusterResourceModeling=true, ...)",
    )
    p.add_argument("--output", "-o", choices=("table", "json"), default="table")


class _PlaceParser(argparse.ArgumentParser):
    """--job is required unless a command runs: argparse's `required=True` would also demand
    it of `karmada-place doctor ...`, so it is checked here, with argparse's wording. Words
    left over are reported by the command's own parser, so the error names the command."""

    subcommands: dict[str, argparse.ArgumentParser]

    def parse_known_args(  # type: ignore[override]  # argparse's stubs overload on the namespace's type
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        args = list(sys.argv[1:] if args is None else args)
        parsed, extra = super().parse_known_args(args, namespace)
        if parsed.command is None and parsed.job is None:
            self.error("the following arguments are required: --job")
        if parsed.command is not None and args[0] != parsed.command:
            # The command's defaults would silently replace flags given before it.
            self.error(f"the command comes first: karmada-place {parsed.command} [flags]")
        return parsed, extra

    def parse_args(  # type: ignore[override]  # as parse_known_args
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> argparse.Namespace:
        parsed, extra = self.parse_known_args(args, namespace)
        if extra:
            failing = self.subcommands[parsed.command] if parsed.command else self
            failing.error(f"unrecognized arguments: {' '.join(extra)}")
        return parsed


def build_parser() -> argparse.ArgumentParser:
    """karmada-place: placing a job without a command; `doctor` and `summarize` as argparse
    subcommands (listed in --help, each with its own --help and errors)."""
    p = _PlaceParser(
        prog="karmada-place",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Where would Karmada put this multi-component job, and why not elsewhere? Per member: the "
        "general estimator (cluster totals), the resource models and the accurate estimators; the "
        "minimum of the answers that are not -1; ONE member chosen as Karmada chooses.",
        epilog="Exit: 0 chosen, 3 no member fits (or no policy selects the job), 2 bad input, 4 the Karmada "
        "control plane cannot be reached, 5 undecided: the member that would be chosen was decided without "
        "an answer that could judge it (its accurate estimator gave none, for a job asking an extended "
        "resource such as GPUs, which cluster totals cannot judge per node); the output names the member, "
        "the estimator and what is unknown, and recommends no member.",
    )
    commands = p.add_subparsers(
        dest="command",
        title="commands (without one: place the job)",
        metavar="[COMMAND]",
        parser_class=argparse.ArgumentParser,
    )
    p.subcommands = {
        "doctor": commands.add_parser("doctor", help=DOCTOR, description=DOCTOR),
        "summarize": commands.add_parser("summarize", help=SUMMARIZE, description=SUMMARIZE),
    }
    _add_doctor_arguments(p.subcommands["doctor"])
    _add_member_arguments(p.subcommands["summarize"])
    p.add_argument("--job", metavar="JOB.yaml", help="the job manifest (its runtime may follow); required")
    p.add_argument("--policy", metavar="POLICY.yaml", help="the PropagationPolicy that selects the job")
    p.add_argument(
        "--strategy",
        choices=STRATEGIES,
        default=KARMADA,
        help="karmada: most sets first, then name (default); tightest: fewest sets that fit",
    )
    p.add_argument(
        "--karmada-compatible",
        action="store_true",
        help="answer exactly what Karmada's scheduler does: its targets (every member without a "
        "cluster 1..1 spread constraint; the first member, even at 0 sets, with replicaScheduling "
        "absent or Duplicated; the general estimator alone when any member's accurate estimator "
        "is missing or fails) or its error text; 0 where Karmada answers 0 instead of -1 (unknown); "
        "the job read as Karmada's interpreter reads it. Karmada's feature gates are --feature-gates "
        "(MultiplePodTemplatesScheduling is off by default, as in Karmada: then Karmada sees no "
        "components and takes members by name). Without it, Karmada's outcome is shown beside this "
        "tool's recommendation",
    )
    _add_member_arguments(p)
    plane = p.add_argument_group("a running Karmada control plane, instead of files")
    plane.add_argument(
        "--karmada-kubeconfig",
        metavar="FILE",
        help="read the karmada-apiserver as karmada-scheduler does: every Cluster, the "
        "PropagationPolicy or ClusterPropagationPolicy that selects the job (unless --policy), the "
        "estimator Services (ExternalName <prefix>-<cluster>, dialled at externalName:targetPort; "
        "--estimator overrides one) and the ResourceBindings whose workloads the scheduler still "
        "holds in flight (deducted with SchedulingOvercommitProtection on, as Karmada does)",
    )
    plane.add_argument(
        "--karmada-context", default="", metavar="NAME", help="the kubeconfig context (default: its current-context)"
    )
    p.add_argument(
        "--in-flight",
        action="append",
        default=[],
        metavar="BINDINGS.yaml",
        help="ResourceBindings (kubectl get rb -o yaml) whose workloads count as in flight on every member "
        "of their spec.clusters, whatever their status: a what-if, or a moment reconstructed. "
        "Replaces the control plane's in-flight bindings. Repeatable",
    )
    return p


DOCTOR = (
    "Flags the silent failures before they happen: feature gate, spread constraint, blind resource models, "
    "members without an accurate estimator. Exit 3 when a problem would misplace the job."
)
SUMMARIZE = (
    "Print Karmada Cluster objects whose status.resourceSummary (and allocatableModelings) is computed "
    "from member object files, as Karmada's cluster status controller computes them. Beside it, the "
    f"resources a member serves through DRA (annotation {dra.ANNOTATION}, and comments in YAML): the "
    "summary sums node allocatable only, so Karmada counts none of them."
)


def _add_doctor_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--policy", required=True, metavar="POLICY.yaml")
    p.add_argument("--job", required=True, metavar="JOB.yaml")
    _add_member_arguments(p)


# --- flag values -> inputs ------------------------------------------------------------


def feature_gates(args: argparse.Namespace) -> tuple[dict[str, bool], frozenset[str]]:
    try:
        return parse_gates(args.feature_gates)
    except GateError as error:
        raise UsageError(f"--feature-gates: {error}") from None


def load_members(
    args: argparse.Namespace, modeling: bool, from_control_plane: Sequence[ClusterObject] | None = None
) -> list[Member]:
    clusters = (
        list(from_control_plane)
        if from_control_plane is not None
        else (load_clusters(args.clusters) if args.clusters else [])
    )
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


def estimator_endpoints(
    args: argparse.Namespace, members: Sequence[Member], services: Mapping[str, EstimatorService] | None = None
) -> dict[str, accurate.Endpoint]:
    """Per member, its accurate estimator: --estimator, else (`services`: read from a control
    plane) the Service karmada-scheduler dials, else with --enable-scheduler-estimator Karmada's
    Service name; with the TLS options."""
    names = [m.name for m in members]
    try:
        tls = accurate.ClientTLS.from_files(
            args.estimator_ca_file,
            args.estimator_cert_file,
            args.estimator_key_file,
            args.insecure_skip_estimator_verify,
        )
    except OSError as error:
        raise InputError(getattr(error, "filename", "") or "TLS file", "", f"cannot read: {error.strerror}") from None
    if bool(tls.cert) != bool(tls.key):
        raise UsageError("--estimator-cert-file and --estimator-key-file go together")
    addresses: dict[str, str] = {}
    if services is not None:  # the Services karmada-scheduler dials, as it resolves them
        addresses.update({n: s.address for n, s in services.items() if s.address and n in names})
    elif args.enable_scheduler_estimator:
        for name in names:
            addresses[name] = accurate.karmada_service_address(
                name,
                args.scheduler_estimator_service_namespace,
                args.scheduler_estimator_service_prefix,
                args.scheduler_estimator_port,
            )
    for name, address in _pairs(args.estimator, "--estimator", "HOST:PORT"):
        if name not in names:
            raise UsageError(f"--estimator {name}={address}: no member {name} (members: {', '.join(names)})")
        if not re.fullmatch(r".+:\d+", address):
            raise UsageError(f"--estimator {name}={address}: expected HOST:PORT")
        addresses[name] = address
    server_names = _server_names(args.estimator_server_name, names)
    every = server_names.get("", "")
    return {
        name: accurate.Endpoint(name, address, tls=tls, server_name=server_names.get(name, every))
        for name, address in addresses.items()
    }


_HOST_NAME = re.compile(r"[A-Za-z0-9*]([A-Za-z0-9.*-]*[A-Za-z0-9])?|[0-9A-Fa-f:.]+")


def _server_names(values: Sequence[str], members: Sequence[str]) -> dict[str, str]:
    """--estimator-server-name: member -> name; "" -> the name for every other member."""
    names: dict[str, str] = {}
    for value in values:
        member, sep, name = value.partition("=")
        if not sep:
            member, name = "", value
        if sep and member not in members:
            raise UsageError(
                f"--estimator-server-name {value}: no member {member or '(empty)'} (members: {', '.join(members)})"
            )
        if not _HOST_NAME.fullmatch(name):
            raise UsageError(f"--estimator-server-name {value}: {name!r} is not a host name")
        if member in names:
            raise UsageError(f"--estimator-server-name: given twice for {member or 'every member'}")
        names[member] = name
    return names


def tls_warnings(args: argparse.Namespace) -> list[str]:
    secure = args.estimator_ca_file or args.insecure_skip_estimator_verify
    if (args.estimator_cert_file or args.estimator_key_file) and not secure:
        return [
            "a client certificate was given without --estimator-ca-file or --insecure-skip-estimator-verify: "
            "like karmada-scheduler, the estimators are dialled in plaintext"
        ]
    if args.estimator_server_name and not secure:
        return [
            "--estimator-server-name without --estimator-ca-file: the estimators are dialled in plaintext, "
            "where no name is verified"
        ]
    if args.estimator_server_name and args.insecure_skip_estimator_verify:
        return [
            "--estimator-server-name is not used with --insecure-skip-estimator-verify, which trusts the "
            "certificate each estimator presents, whatever its name"
        ]
    return []
