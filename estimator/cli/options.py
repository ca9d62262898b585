"""karmada-estimator's command line: the parser (its flag groups are estimator/cli/flags.py, its
subcommands `manifests` and `version`), and the checks and assembly of what it parsed (feature
gates, logging options, the server's configuration).

The flags are Karmada's Go karmada-scheduler-estimator's, read with Go's value syntax
(estimator/goflags.py), plus this estimator's own. Importing this module stays light (no gRPC,
no numba): the help and a bad flag answer at once.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, NoReturn

from estimator import goflags
from estimator.cli import flags
from estimator.cli.flags import BEHAVIOUR_GATES as BEHAVIOUR_GATES  # re-exported: the start-up notes read it here
from estimator.cli.flags import BOOL_FLAGS
from estimator.core.featuregates import FeatureGates
from estimator.deploy import cli as manifests_cli
from estimator.service.logoptions import LogOptions

if TYPE_CHECKING:
    from estimator.service.server import ServerConfig

DESCRIPTION = """\
Accurate Karmada scheduler-estimator for one member cluster. Speaks Karmada's Estimator
gRPC protocol (MaxAvailableReplicas, MaxAvailableComponentSets, GetUnschedulableReplicas).
Accepts every flag of Karmada's Go karmada-scheduler-estimator (v1.16 to v1.19), with Go's
value syntax, so Karmada's manifests and Helm chart start it unchanged.

Differences from Karmada's Go estimator, on purpose (docs/semantics.md; the member's own
kube-scheduler, run by `make e2e`, judges both sides):
  * a pod's request is counted as kube-scheduler counts it: native sidecars (init
    containers with restartPolicy Always) add to the app containers, and pod-level
    spec.resources replaces the container sum; Karmada's estimator (scheduler code of
    Kubernetes 1.26) counts a sidecar as an ordinary init container and ignores pod-level
    resources, so it promises room those pods hold;
  * assumed (in-flight) workloads in a request are ALWAYS deducted (the Go server only
    does so with its SchedulingOvercommitProtection gate on, off by default);
  * ResourceQuotas are always applied as quota admission enforces them: pods / count/pods,
    limits.*, ephemeral-storage and hugepages, and the BestEffort / NotBestEffort /
    NotTerminating scopes (Karmada reads requests of cpu, memory and extended resources and
    PriorityClass scopes only);
  * --packing best (default) can place more component sets than Karmada's First-Fit and
    never fewer; --packing first-fit reproduces Karmada's answers wherever the two count
    a member alike (everywhere but the points above).
"""


class _Parser(argparse.ArgumentParser):
    """argparse, except that once --logging-format=json was asked for, a flag error is one
    JSON line too (stderr carries nothing else in that mode)."""

    json_errors = False

    def error(self, message: str) -> NoReturn:
        if not self.json_errors:
            super().error(message)
        entry = {
            "ts": round(time.time() * 1000, 3),
            "caller": "flags",
            "msg": f"{self.prog}: error: {message}",
            "logger": "estimator",
            "level": "error",
        }
        sys.stderr.write(json.dumps(entry) + "\n")
        sys.exit(2)


def _wants_json(argv: list[str]) -> bool:
    for i, arg in enumerate(argv):
        if arg in ("--logging-format=json", "--log-format=json"):
            return True
        if arg in ("--logging-format", "--log-format") and argv[i + 1 : i + 2] == ["json"]:
            return True
    return False


class EstimatorParser(_Parser):
    """--cluster-name is required unless a subcommand (or --version) runs. argparse's own `required=True`
    would also demand it of `karmada-estimator manifests ...`, so it is checked here."""

    subcommands: dict[str, argparse.ArgumentParser]

    def parse_known_args(  # type: ignore[override]  # one signature for typeshed's overloads
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        parsed, extra = super().parse_known_args(args, namespace)
        if parsed.command is None and parsed.cluster_name is None and not getattr(parsed, "version", False):
            self.error("the following arguments are required: --cluster-name")
        return parsed, extra

    def format_help(self) -> str:
        if self.epilog is None:  # written on demand: estimator.kernels imports numba
            from estimator.kernels import cache_note

            self.epilog = cache_note()
        return super().format_help()


def build_parser() -> EstimatorParser:
    p = EstimatorParser(
        prog="karmada-estimator",
        description=DESCRIPTION,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        allow_abbrev=False,  # pflag has no abbreviations; --cluster must not mean --cluster-name
    )
    _add_commands(p)
    p.add_argument("--version", action="store_true", help="print the version and exit")
    flags.add_state_flags(p)
    flags.add_karmada_flags(p)
    flags.add_logging_flags(p)
    flags.add_own_flags(p)
    p.set_defaults(logtostderr=True, legacy_stderr_threshold_behavior=True)
    return p


def _add_commands(p: EstimatorParser) -> None:
    commands = p.add_subparsers(
        dest="command",
        title="commands (without one: serve estimates)",
        metavar="[COMMAND]",
        parser_class=argparse.ArgumentParser,
    )
    render = commands.add_parser(
        "manifests", help=manifests_cli.SUMMARY, description=manifests_cli.SUMMARY, epilog=manifests_cli.EPILOG
    )
    manifests_cli.add_arguments(render)
    show = commands.add_parser("version", help="print the version and exit (as Karmada's `version` subcommand)")
    p.subcommands = {"manifests": render, "version": show}


def parse(parser: EstimatorParser, argv: list[str]) -> tuple[argparse.Namespace, set[str]]:
    """`argv` read as pflag reads it (`_` for `-` in names, a bare boolean is true), and the
    names of the flags given; an unknown flag or stray word exits 2 with pflag's wording."""
    argv = goflags.normalize_argv(argv, BOOL_FLAGS)
    parser.json_errors = _wants_json(argv)
    args, extra = parser.parse_known_args(argv)
    if extra:
        # pflag's wording (Karmada's binary exits on these too)
        flag = next((a for a in extra if a.startswith("-")), None)
        failing = parser.subcommands[args.command] if args.command else parser
        failing.error(f"unknown flag: {flag.split('=', 1)[0]}" if flag else f"unexpected argument: {extra[0]}")
    return args, _given(argv)


def _given(argv: list[str]) -> set[str]:
    return {a[2:].split("=", 1)[0] for a in argv if a.startswith("--") and len(a) > 2}


def feature_gates(args: argparse.Namespace) -> FeatureGates:
    gates = FeatureGates()
    for value in args.feature_gates:
        gates.merge(value)
    return gates


def log_options(parser: argparse.ArgumentParser, args: argparse.Namespace, gates: FeatureGates) -> LogOptions:
    if args.logging_format is not None and args.log_format is not None and args.logging_format != args.log_format:
        parser.error("--logging-format and --log-format disagree")
    options = LogOptions(
        format=args.logging_format or args.log_format or "text",
        verbosity=args.v,
        vmodule=args.vmodule,
        flush_frequency=args.log_flush_frequency,
        logtostderr=args.logtostderr,
        alsologtostderr=args.alsologtostderr,
        log_dir=args.log_dir,
        log_file=args.log_file,
        log_file_max_size_mb=args.log_file_max_size,
        stderrthreshold=args.stderrthreshold,
        alsologtostderrthreshold=args.alsologtostderrthreshold,
        legacy_stderr_threshold=args.legacy_stderr_threshold_behavior,
        skip_headers=args.skip_headers,
        add_dir_header=args.add_dir_header,
        backtrace_at=args.log_backtrace_at,
    )
    errors = options.validate(
        gates,
        text_split=args.log_text_split_stream,
        text_buffer=args.log_text_info_buffer_size,
        json_split=args.log_json_split_stream,
        json_buffer=args.log_json_info_buffer_size,
    )
    if errors:
        # component-base's wording, prefixed with the flag
        parser.error("; ".join(errors))
    return options


def validate(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """The checks Karmada's options.Validate makes, and ours; exits 2 naming the flag. A
    --parallelism of 0 or less becomes Karmada's 16."""
    if not args.cluster_name:
        parser.error('--cluster-name: Invalid value: "": clusterName cannot be empty')
    if args.parallelism <= 0:
        args.parallelism = 16  # Karmada's parallelizer: 0 or less means its default
    if not 0 <= args.server_port <= 65535:
        parser.error(
            f"--server-port: Invalid value: {args.server_port}: must be a valid port between 0 and 65535 inclusive"
        )
    if bool(args.grpc_auth_cert_file) != bool(args.grpc_auth_key_file):
        parser.error("--grpc-auth-cert-file and --grpc-auth-key-file must be given together")
    if args.max_concurrent_requests < 0:
        parser.error("--max-concurrent-requests must be >= 0")
    if args.max_request_bytes <= 0:
        parser.error("--max-request-bytes must be > 0")
    if not args.kube_api_qps >= 0:
        parser.error("--kube-api-qps must be >= 0")
    if not args.best_budget >= 0:
        parser.error(f"--best-budget must be a number >= 0 (inf: no limit), got {args.best_budget}")
    if args.objects_cache and not args.objects:
        parser.error("--objects-cache applies to --objects files only")
    if args.objects and (args.kubeconfig or args.master):
        parser.error("use either --objects or --kubeconfig/--master, not both")


def server_config(args: argparse.Namespace) -> ServerConfig:
    """The server's configuration from validated flags."""
    from estimator.service.server import ServerConfig  # imports grpc: not before the state loads

    return ServerConfig(
        cluster_name=args.cluster_name,
        server_port=args.server_port,
        server_bind_address=args.server_bind_address,
        health_probe_bind_address=args.health_probe_bind_address,
        metrics_bind_address=args.metrics_bind_address,
        parallelism=args.parallelism,
        packing=args.packing,
        best_budget=args.best_budget,
        grpc_auth_cert_file=args.grpc_auth_cert_file,
        grpc_auth_key_file=args.grpc_auth_key_file,
        grpc_client_ca_file=args.grpc_client_ca_file,
        insecure_skip_grpc_client_verify=args.insecure_skip_grpc_client_verify,
        max_concurrent_requests=args.max_concurrent_requests,
        max_request_bytes=args.max_request_bytes,
        request_memory_bytes=args.request_memory_budget,
        shutdown_grace_seconds=args.shutdown_grace_period,
        max_staleness=args.max_staleness,
        seal_kernels=True,  # this process serves and compiles nothing more after its warm-up
    )
