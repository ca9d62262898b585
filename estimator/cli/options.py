"""karmada-estimator's flags: the parser, one function per flag group, and the checks and
assembly of what it parsed (feature gates, logging options, the server's configuration).

The flags are Karmada's Go karmada-scheduler-estimator's, read with Go's value syntax
(estimator/goflags.py), plus this estimator's own. Importing this module stays light (no gRPC,
no numba): the help and a bad flag answer at once.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

from estimator import goflags
from estimator.core.featuregates import FeatureGates
from estimator.core.model import PACKING_MODES
from estimator.deploy import cli as manifests_cli
from estimator.service.logoptions import LogOptions

if TYPE_CHECKING:
    from estimator.service.server import ServerConfig

# The gates this estimator's behaviour depends on. It always behaves as if both were on; a
# gate turned off is reported at start, not obeyed silently.
BEHAVIOUR_GATES = ("SchedulingOvercommitProtection", "ResourceQuotaEstimate")

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


def _go(parse: Callable[[str], Any], label: str = "") -> Callable[[str], Any]:
    """An argparse type from one of estimator.goflags' Go parsers: the error names the value
    and carries Go's reason; argparse prefixes the flag."""

    def convert(text: str) -> Any:
        try:
            return parse(text)
        except goflags.FlagValueError as error:
            raise argparse.ArgumentTypeError(f'invalid argument "{text}": {error}') from None

    convert.__name__ = label or parse.__name__
    return convert


def _bool(p: Any, *names: str, help: str) -> None:  # p: a parser or an argument group
    # Bare means true; "=false" and Go's other forms are values (normalize_argv rewrites a
    # bare flag to "=true" so a following word is never taken as its value).
    p.add_argument(
        *names,
        nargs="?",
        const=True,
        default=False,
        type=_go(goflags.parse_bool, "bool"),
        metavar="true|false",
        help=help,
    )


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
    _add_state_flags(p)
    _add_karmada_flags(p)
    _add_logging_flags(p)
    _add_own_flags(p)
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


def _add_state_flags(p: argparse.ArgumentParser) -> None:
    src = p.add_argument_group("cluster state (one of)")
    src.add_argument(
        "--objects",
        action="append",
        default=[],
        metavar="FILE",
        help="kubectl-style file (v1 List YAML/JSON or multi-document YAML) describing the member; "
        "repeatable. SIGHUP reloads; a bad reload keeps the previous state. Not a Karmada flag.",
    )
    # The flag's first name: still accepted (users' scripts and manifests pass it), with a warning.
    src.add_argument(
        "--snapshot", action="append", dest="objects", metavar="FILE", help="Deprecated name of --objects."
    )
    src.add_argument(
        "--objects-cache",
        default="",
        metavar="DIR",
        help="Directory where loaded --objects files (4 MiB and more) are kept as arrays, so the next "
        "start from the same unchanged files skips parsing; 'off' disables. Default: "
        "$KARMADA_ESTIMATOR_STATE_CACHE, else $XDG_CACHE_HOME/karmada-estimator/objects or "
        "~/.cache/karmada-estimator/objects. Not a Karmada flag.",
    )
    src.add_argument("--kubeconfig", default="", help="Path to member cluster's kubeconfig file (live list/watch).")
    src.add_argument(
        "--master",
        default="",
        help="The address of the member Kubernetes API server. Overrides any value in kubeconfig.",
    )


def _add_karmada_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("Karmada scheduler-estimator flags")
    g.add_argument("--cluster-name", help="Name of member cluster that the estimator serves for (required).")
    g.add_argument(
        "--kube-api-qps",
        type=_go(goflags.parse_float32, "float32"),
        default=20.0,
        help="QPS to use while talking with apiserver.",
    )
    g.add_argument(
        "--kube-api-burst",
        type=_go(goflags.parse_int, "int"),
        default=30,
        help="Burst to use while talking with apiserver.",
    )
    g.add_argument(
        "--server-port", type=_go(goflags.parse_int, "int"), default=10352, help="The port on which to serve gRPC."
    )
    g.add_argument(
        "--health-probe-bind-address",
        default=":10351",
        help="Address for /healthz and /readyz (e.g. :10351); 0 disables.",
    )
    g.add_argument(
        "--metrics-bind-address", default=":8080", help="Address for Prometheus /metrics (e.g. :8080); 0 disables."
    )
    g.add_argument(
        "--parallelism",
        type=_go(goflags.parse_int, "int"),
        default=0,
        help="Concurrent estimate workers; 0 or less means 16, as in Karmada.",
    )
    g.add_argument("--grpc-auth-cert-file", default="", help="Server certificate for gRPC TLS.")
    g.add_argument("--grpc-auth-key-file", default="", help="Server key for gRPC TLS.")
    g.add_argument("--grpc-client-ca-file", default="", help="CA that client certificates must chain to (mutual TLS).")
    _bool(
        g,
        "--insecure-skip-grpc-client-verify",
        help="With a client CA set, do not require or verify client certificates.",
    )
    g.add_argument(
        "--feature-gates",
        action="append",
        default=[],
        metavar="A=true,B=false",
        type=_go(goflags.parse_feature_gates, "feature gates"),
        help="Karmada's feature gates (AllAlpha, AllBeta and every gate of Karmada v1.16-v1.19); "
        "an unknown gate is an error. Of them only "
        + " and ".join(BEHAVIOUR_GATES)
        + " concern an estimator; both behaviours are always on, see above.",
    )
    _bool(g, "--enable-pprof", help="Go's pprof endpoint does not exist here: accepted, and logged at start.")
    g.add_argument("--profiling-bind-address", default=":6060", help="Not bound (see --enable-pprof).")


def _add_logging_flags(p: argparse.ArgumentParser) -> None:
    lg = p.add_argument_group("logging (component-base and klog flags)")
    lg.add_argument(
        "--logging-format",
        type=_go(goflags.parse_logging_format, "format"),
        default=None,
        help='"text" (klog header) or "json" (every stderr line is a JSON object).',
    )
    lg.add_argument("--log-format", choices=("text", "json"), default=None, help=argparse.SUPPRESS)  # older name
    lg.add_argument(
        "-v",
        "--v",
        type=_go(goflags.parse_verbosity, "Level"),
        default=0,
        help="Log verbosity: >= 2 logs every estimate, >= 4 debug.",
    )
    lg.add_argument(
        "--vmodule",
        type=_go(goflags.parse_vmodule, "pattern=N"),
        default=[],
        metavar="pattern=N,...",
        help="Per-file verbosity; a pattern matches a Python file's name without .py.",
    )
    lg.add_argument(
        "--log-flush-frequency",
        type=_go(goflags.parse_duration, "duration"),
        default=5.0,
        help="Accepted; every line is written at once here.",
    )
    _bool(lg, "--log-text-split-stream", help="Text: errors to stderr, other lines to stdout (LoggingAlphaOptions).")
    _bool(lg, "--log-json-split-stream", help="JSON: errors to stderr, other lines to stdout (LoggingAlphaOptions).")
    lg.add_argument(
        "--log-text-info-buffer-size",
        type=_go(goflags.parse_byte_quantity, "quantity"),
        default=0,
        help="Accepted (LoggingAlphaOptions); lines are not buffered here.",
    )
    lg.add_argument(
        "--log-json-info-buffer-size",
        type=_go(goflags.parse_byte_quantity, "quantity"),
        default=0,
        help="Accepted (LoggingAlphaOptions); lines are not buffered here.",
    )
    _add_klog_flags(lg)


def _add_klog_flags(lg: Any) -> None:
    """klog's own flags, into the logging group `lg`."""
    _bool(lg, "--logtostderr", help="klog: log to stderr instead of files (default true).")
    _bool(lg, "--alsologtostderr", help="klog: with --logtostderr=false, also copy every line to stderr.")
    lg.add_argument(
        "--log-dir",
        default="",
        help="klog: with --logtostderr=false, write karmada-scheduler-estimator.log in this directory.",
    )
    lg.add_argument("--log-file", default="", help="klog: with --logtostderr=false, write to this file.")
    lg.add_argument(
        "--log-file-max-size",
        type=_go(lambda t: goflags.parse_uint(t, 0, 64), "uint64"),
        default=1800,
        help="klog: MB before the log file rolls over (one previous file kept); 0: unlimited.",
    )
    lg.add_argument(
        "--stderrthreshold",
        type=_go(goflags.parse_severity, "severity"),
        default=2,
        help="klog: with --logtostderr=false, lines at or above this severity also go to stderr.",
    )
    lg.add_argument(
        "--alsologtostderrthreshold",
        type=_go(goflags.parse_severity, "severity"),
        default=0,
        help="klog: with --alsologtostderr, the lowest severity copied to stderr.",
    )
    _bool(
        lg,
        "--legacy-stderr-threshold-behavior",
        help="klog: if false, --stderrthreshold also filters stderr-only output (default true).",
    )
    _bool(lg, "--skip-headers", help="klog: text lines without the I0102 15:04:05.000000 ... header.")
    _bool(lg, "--add-dir-header", help="klog: the header names the file's directory too.")
    _bool(lg, "--skip-log-headers", help="klog: accepted; log files get no header here anyway.")
    _bool(lg, "--one-output", help="klog: accepted; there is one log file per process here.")
    lg.add_argument(
        "--log-backtrace-at",
        type=_go(goflags.parse_trace_location, "traceLocation"),
        default=None,
        metavar="FILE:N",
        help="klog: the line logged at file.py:N carries a stack trace.",
    )


def _add_own_flags(p: argparse.ArgumentParser) -> None:
    ours = p.add_argument_group("this estimator only")
    ours.add_argument(
        "--server-bind-address",
        default="0.0.0.0",
        help="Address the gRPC server binds to (not in the Go estimator, which binds all).",
    )
    ours.add_argument(
        "--packing",
        choices=PACKING_MODES,
        default="best",
        help="best: verified best packing, never below first-fit (default); "
        "first-fit: Karmada's algorithm, the Go estimator's answers except where it counts "
        "pods or quotas unlike kube-scheduler (see the list above).",
    )
    ours.add_argument(
        "--best-budget",
        type=float,
        default=1.0,
        metavar="X",
        help="--packing best: after first-fit's answer, search for a better one over the nodes the job "
        "can use, doing at most X times first-fit's own work there (at least 20,000 node visits, so "
        "a small pool can afford an exhaustive search; 8x that where the upper bound leaves room for "
        "3%% more sets than first-fit's), counted in node visits, so answers never depend on timing; "
        "no search where the bound proves first-fit optimal "
        "(default 1; 0: first-fit's answer; inf: no limit).",
    )
    ours.add_argument(
        "--max-concurrent-requests",
        type=int,
        default=64,
        help="Estimate RPCs in flight on one connection beyond this are refused at once with "
        "RESOURCE_EXHAUSTED, unread (a bounded queue, not one that grows), and beyond 4x this over "
        "all connections; connections are served in turn; health checks are never refused. "
        "0: no limit.",
    )
    ours.add_argument(
        "--max-request-bytes",
        type=int,
        default=1024 * 1024,
        help="Largest request message accepted; larger ones get RESOURCE_EXHAUSTED before they are read "
        "whole (default 1 MiB, where Karmada's estimator keeps gRPC's 4 MiB: a scheduler's largest requests "
        "are tens of KB, and a flood of 4 MB requests otherwise costs the small calls their latency).",
    )
    ours.add_argument(
        "--request-memory-budget",
        type=_go(goflags.parse_byte_quantity, "quantity"),
        default=512 << 20,
        metavar="BYTES",
        help="Memory the calls in flight may hold together (a quantity: 512Mi, 1Gi); a call that "
        "would go past it gets RESOURCE_EXHAUSTED before the memory is spent. Remembered answers "
        "get 1/8 of it on top. Default 512Mi; 0: no budget.",
    )
    ours.add_argument(
        "--shutdown-grace-period",
        type=float,
        default=10.0,
        help="Seconds in-flight calls get to finish on SIGTERM/SIGINT.",
    )
    ours.add_argument(
        "--max-staleness",
        type=_go(goflags.parse_duration, "duration"),
        default=0.0,
        help="Fail readiness while the live cluster state is older than this (e.g. 5m; the "
        "cache_stale metric says so); estimates are still answered. 0 (default): never.",
    )


# Karmada's flags whose value is a bool: a bare one means true (see goflags.normalize_argv).
BOOL_FLAGS = {
    "insecure-skip-grpc-client-verify",
    "enable-pprof",
    "log-text-split-stream",
    "log-json-split-stream",
    "logtostderr",
    "alsologtostderr",
    "skip-headers",
    "add-dir-header",
    "skip-log-headers",
    "one-output",
    "legacy-stderr-threshold-behavior",
}


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
    )
