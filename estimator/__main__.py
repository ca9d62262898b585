"""karmada-estimator: the accurate scheduler-estimator for one member cluster.

Exit status: 0 after a clean drain, 2 on bad flags or a bad snapshot file, 1 on any other
start-up failure.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
from typing import Sequence

from estimator import logsetup
from estimator.errors import SnapshotError
from estimator.httpendpoints import BindAddressError
from estimator.kernels import cache_note
from estimator.plugins.noderesource import PACKING_MODES

log = logging.getLogger("estimator")

# Gates of the Go estimator. We always behave as if both were on; the flag is accepted so
# existing manifests start unchanged, and a gate turned off is reported, not obeyed silently.
KNOWN_FEATURE_GATES = ("SchedulingOvercommitProtection", "ResourceQuotaEstimate")

DESCRIPTION = """\
Accurate Karmada scheduler-estimator for one member cluster. Speaks Karmada's Estimator
gRPC protocol (MaxAvailableReplicas, MaxAvailableComponentSets, GetUnschedulableReplicas).

Differences from Karmada's Go estimator, on purpose:
  * assumed (in-flight) workloads in a request are ALWAYS deducted (the Go server only
    does so with its SchedulingOvercommitProtection gate on, off by default);
  * ResourceQuotas are always applied, including pods / count/pods quotas;
  * --packing best (default) can place more component sets than Karmada's First-Fit and
    never fewer; --packing first-fit reproduces Karmada's answers exactly.
"""


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="karmada-estimator", description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=cache_note(),
    )
    src = p.add_argument_group("cluster state (one of)")
    src.add_argument("--snapshot", action="append", default=[], metavar="FILE",
                     help="kubectl-style file (v1 List YAML/JSON or multi-document YAML) describing the member; "
                          "repeatable. SIGHUP reloads; a bad reload keeps the previous state.")
    src.add_argument("--kubeconfig", default="", help="Path to member cluster's kubeconfig file (live list/watch).")
    src.add_argument("--master", default="", help="The address of the member Kubernetes API server. "
                                                  "Overrides any value in kubeconfig.")
    p.add_argument("--cluster-name", required=True, help="Name of member cluster that the estimator serves for.")
    p.add_argument("--kube-api-qps", type=float, default=20.0, help="QPS to use while talking with apiserver.")
    p.add_argument("--kube-api-burst", type=int, default=30, help="Burst to use while talking with apiserver.")
    p.add_argument("--server-port", type=int, default=10352, help="The port on which to serve gRPC.")
    p.add_argument("--server-bind-address", default="0.0.0.0",
                   help="Address the gRPC server binds to (not in the Go estimator, which binds all).")
    p.add_argument("--health-probe-bind-address", default=":10351",
                   help="Address for /healthz and /readyz (e.g. :10351); 0 disables.")
    p.add_argument("--metrics-bind-address", default=":8080",
                   help="Address for Prometheus /metrics (e.g. :8080); 0 disables.")
    p.add_argument("--parallelism", type=int, default=16, help="Concurrent estimate workers. Must be > 0.")
    p.add_argument("--packing", choices=PACKING_MODES, default="best",
                   help="best: verified best packing, never below first-fit (default); "
                        "first-fit: Karmada's algorithm, same answers as the Go estimator.")
    p.add_argument("--grpc-auth-cert-file", default="", help="Server certificate for gRPC TLS.")
    p.add_argument("--grpc-auth-key-file", default="", help="Server key for gRPC TLS.")
    p.add_argument("--grpc-client-ca-file", default="",
                   help="CA that client certificates must chain to (mutual TLS).")
    p.add_argument("--insecure-skip-grpc-client-verify", action="store_true",
                   help="With a client CA set, do not require or verify client certificates.")
    p.add_argument("--max-concurrent-requests", type=int, default=64,
                   help="RPCs in flight beyond this are refused at once with RESOURCE_EXHAUSTED "
                        "(a bounded queue, not one that grows); 0: no limit.")
    p.add_argument("--max-request-bytes", type=int, default=4 * 1024 * 1024,
                   help="Largest request message accepted; larger ones get RESOURCE_EXHAUSTED.")
    p.add_argument("--shutdown-grace-period", type=float, default=10.0,
                   help="Seconds in-flight calls get to finish on SIGTERM/SIGINT.")
    p.add_argument("--feature-gates", default="",
                   help=f"Accepted for compatibility ({', '.join(KNOWN_FEATURE_GATES)}); "
                        "both behaviours are always on, see above.")
    p.add_argument("--log-format", choices=("text", "json"), default="text")
    p.add_argument("--v", type=int, default=0, help="Log verbosity: >= 2 logs every estimate, >= 4 debug.")
    return p


def _validate(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    if not args.cluster_name:
        parser.error("--cluster-name must not be empty")
    if args.parallelism <= 0:
        parser.error("--parallelism must be greater than 0")
    if not 0 <= args.server_port <= 65535:
        parser.error("--server-port must be a port number")
    if bool(args.grpc_auth_cert_file) != bool(args.grpc_auth_key_file):
        parser.error("--grpc-auth-cert-file and --grpc-auth-key-file must be given together")
    if args.max_concurrent_requests < 0:
        parser.error("--max-concurrent-requests must be >= 0")
    if args.max_request_bytes <= 0:
        parser.error("--max-request-bytes must be > 0")
    for gate in filter(None, (g.strip() for g in args.feature_gates.split(","))):
        name, _, value = gate.partition("=")
        if name not in KNOWN_FEATURE_GATES or value.lower() not in ("true", "false"):
            parser.error(f"--feature-gates: unknown gate or value {gate!r}")
        if value.lower() == "false":
            log.warning("feature gate %s=false is not honoured: this estimator always behaves as if it were on", name)


def _state(parser: argparse.ArgumentParser, args: argparse.Namespace):
    if args.snapshot and (args.kubeconfig or args.master):
        parser.error("use either --snapshot or --kubeconfig/--master, not both")
    if args.snapshot:
        from estimator.state import FileClusterState

        return FileClusterState(args.snapshot)
    try:
        from estimator.watch import KubeConfigError, WatchClusterState
    except ImportError:
        parser.error("live clusters (--kubeconfig/--master/in-cluster) are not available in this build; use --snapshot")
    try:
        # Neither --kubeconfig nor --master: the in-cluster service account, as client-go does.
        return WatchClusterState(kubeconfig=args.kubeconfig, master=args.master, qps=args.kube_api_qps,
                                 burst=args.kube_api_burst)
    except KubeConfigError as error:
        raise SnapshotError(str(error)) from None  # main() logs it and exits 2


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["manifests"]:
        from estimator.manifests import main as manifests_main

        return manifests_main(argv[1:])
    parser = build_parser()
    args = parser.parse_args(argv)
    logsetup.configure(args.log_format, args.v)
    _validate(parser, args)

    from estimator.server import EstimatorServer, ServerConfig

    try:
        state = _state(parser, args)
    except SnapshotError as error:
        log.error("cannot load cluster state: %s", error)
        return 2
    config = ServerConfig(
        cluster_name=args.cluster_name,
        server_port=args.server_port,
        server_bind_address=args.server_bind_address,
        health_probe_bind_address=args.health_probe_bind_address,
        metrics_bind_address=args.metrics_bind_address,
        parallelism=args.parallelism,
        packing=args.packing,
        grpc_auth_cert_file=args.grpc_auth_cert_file,
        grpc_auth_key_file=args.grpc_auth_key_file,
        grpc_client_ca_file=args.grpc_client_ca_file,
        insecure_skip_grpc_client_verify=args.insecure_skip_grpc_client_verify,
        max_concurrent_requests=args.max_concurrent_requests,
        max_request_bytes=args.max_request_bytes,
        shutdown_grace_seconds=args.shutdown_grace_period,
    )
    try:
        server = EstimatorServer(config, state)
        server.start()
    except BindAddressError as error:
        log.error("%s", error)
        return 2
    except (OSError, RuntimeError) as error:
        log.error("cannot start: %s", error)
        return 1

    stop = threading.Event()

    def on_signal(signum, _frame):
        log.info("received %s, draining", signal.Signals(signum).name)
        stop.set()

    def on_hangup(_signum, _frame):
        threading.Thread(target=state.reload, name="reload", daemon=True).start()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGHUP, on_hangup)
    while not stop.wait(1.0):
        pass
    server.stop()
    # A call still running past the grace period was cancelled for its client, but Python
    # cannot interrupt its worker thread; do not let it hold the process open.
    stuck = [t for t in threading.enumerate() if t.is_alive() and not t.daemon and t is not threading.current_thread()]
    if stuck:
        log.warning("exiting with %d call(s) still running past the grace period", len(stuck))
        logging.shutdown()
        os._exit(0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
