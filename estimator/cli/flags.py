"""karmada-estimator's flags, one function per flag group: Karmada's cluster-state flags,
its scheduler-estimator flags, the logging flags of component-base and klog, and this
estimator's own; each adds its group to the parser estimator/cli/options.py builds.

Values are read with Go's syntax (estimator/goflags.py): a flag's type is one of goflags'
parsers, and Go's reason for refusing a value is argparse's message. A bool flag is listed in
BOOL_FLAGS, so a bare one means true as in pflag. Light to import (no gRPC, no numba).
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from estimator import goflags
from estimator.core.model import PACKING_MODES

# The gates this estimator's behaviour depends on. It always behaves as if both were on; a
# gate turned off is reported at start, not obeyed silently.
BEHAVIOUR_GATES = ("SchedulingOvercommitProtection", "ResourceQuotaEstimate")


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


def add_state_flags(p: argparse.ArgumentParser) -> None:
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


def add_karmada_flags(p: argparse.ArgumentParser) -> None:
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


def add_logging_flags(p: argparse.ArgumentParser) -> None:
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


def add_own_flags(p: argparse.ArgumentParser) -> None:
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
