"""karmada-estimator's main: flags in, exit status out.

Parse and check the flags (estimator.cli.options), configure logging, say at start what the
Go-only flags given do here, load the cluster state they name, and hand the server's
configuration and the state to the service (estimator.service.launch.serve), which runs until
it drains. Exit status: 0 after a clean drain, 2 on bad flags or a bad object file, 1 on any
other start-up failure.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from estimator.cli import options
from estimator.core.errors import StateLoadError
from estimator.core.featuregates import FeatureGates
from estimator.deploy import cli as manifests_cli
from estimator.service import launch, logsetup, procmem
from estimator.service.logoptions import LogOptions

if TYPE_CHECKING:
    from estimator.cluster.sources import ClusterState

log = logging.getLogger("estimator")


def main(argv: Sequence[str] | None = None) -> int:
    procmem.bound_heap_retention()  # first: glibc fixes its arena count when a second one is made
    parser = options.build_parser()
    args, given = options.parse(parser, list(sys.argv[1:] if argv is None else argv))
    if args.command == "manifests":
        return manifests_cli.run(parser.subcommands["manifests"], args)
    if args.command == "version" or args.version:
        from estimator.service.buildinfo import version_line

        print(version_line())
        return 0
    gates = options.feature_gates(args)
    log_options = options.log_options(parser, args, gates)
    options.validate(parser, args)
    logsetup.configure(options=log_options)
    log_startup_notes(args, gates, log_options, given)
    try:
        state = cluster_state(parser, args)
    except StateLoadError as error:
        log.error("cannot load cluster state: %s", error)
        return 2
    return launch.serve(options.server_config(args), state)


def cluster_state(parser: argparse.ArgumentParser, args: argparse.Namespace) -> ClusterState:
    """The state the validated flags name: --objects files (loaded now; StateLoadError names a
    bad one), else a live list/watch of --kubeconfig / --master / the in-cluster account."""
    if args.objects:
        from estimator.cluster.filestate import FileClusterState

        return FileClusterState(args.objects, state_cache=args.objects_cache or None, meanwhile=launch.prepare_service)
    try:
        from estimator.cluster.watch import KubeConfigError, WatchClusterState
    except ImportError:
        parser.error("live clusters (--kubeconfig/--master/in-cluster) are not available in this build; use --objects")
    try:
        # Neither --kubeconfig nor --master: the in-cluster service account, as client-go does.
        return WatchClusterState(
            kubeconfig=args.kubeconfig, master=args.master, qps=args.kube_api_qps, burst=args.kube_api_burst
        )
    except KubeConfigError as error:
        raise StateLoadError(str(error)) from None  # main() logs it and exits 2


def log_startup_notes(args: argparse.Namespace, gates: FeatureGates, log_options: LogOptions, given: set[str]) -> None:
    """Once at start: what each Go-only flag that was given does here."""
    if "snapshot" in given:
        log.warning("--snapshot is deprecated: use --objects (same meaning)")
    for gate in options.BEHAVIOUR_GATES:
        if not gates.enabled(gate):
            if gate in gates.explicit or "AllAlpha" in gates.explicit:
                log.warning(
                    "feature gate %s is off, not honoured: this estimator always behaves as if it were on", gate
                )
    other = sorted(
        g
        for g in gates.explicit
        if g not in options.BEHAVIOUR_GATES and g not in ("AllAlpha", "AllBeta") and not g.startswith("Logging")
    )
    if other:
        log.info("feature gates %s concern other Karmada components; accepted, no effect here", ", ".join(other))
    if args.enable_pprof:
        log.info(
            "--enable-pprof: Go's pprof has no Python equivalent; nothing is served on --profiling-bind-address %s",
            args.profiling_bind_address,
        )
    if "log-flush-frequency" in given:
        log.info("--log-flush-frequency: every log line is written at once here; the setting has no effect")
    if log_options.info_buffer_size:
        log.info(
            "--log-%s-info-buffer-size: log lines are not buffered here; the setting has no effect", log_options.format
        )
    if log_options.format == "json" and not log_options.logtostderr:
        log.info("--logtostderr=false: as in Karmada, klog's file output applies to the text format only")
    for name in ("skip-log-headers", "one-output"):
        if name in given:
            log.info("--%s: klog file detail with no effect here", name)
    if log_options.vmodule and log_options.format == "json":
        log.info("--vmodule applies to the JSON format too here")
    log.info("parallelism %d: concurrent estimate workers", args.parallelism)
