"""The `karmada-estimator manifests` subcommand: its arguments, and writing the rendered
manifests to stdout or one file per cluster (the rendering is estimator.deploy.manifests)."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Sequence
from pathlib import Path

from estimator.deploy.manifests import (
    ANTI_AFFINITY,
    CHART_LABELS,
    DEFAULT_LAYOUT,
    LAYOUTS,
    PARTS,
    Options,
    OptionsError,
    check,
    to_yaml,
)

SUMMARY = "Render the Kubernetes manifests of the estimator for one or more member clusters."
EPILOG = (
    "Host objects go to the cluster running Karmada (namespace --namespace); member objects "
    "(ServiceAccount, token Secret, read-only ClusterRole) go to each member itself. "
    "--layout picks the selector and certificate Secret of the Karmada install the objects "
    "must fit: "
    + "; ".join(
        f"{name}: {layout.installed_by}, Secret {layout.tls_secret} ({', '.join(layout.keys)})"
        for name, layout in LAYOUTS.items()
    )
    + ". Secrets holding credentials are never rendered: see docs/install.md."
)


def build_parser() -> argparse.ArgumentParser:
    """The subcommand's parser on its own; `karmada-estimator manifests` is the same one,
    added as a subparser of the estimator's command line (estimator/cli/options.py)."""
    p = argparse.ArgumentParser(prog="karmada-estimator manifests", description=SUMMARY, epilog=EPILOG)
    add_arguments(p)
    return p


def _label(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"{text!r}: expected KEY=VALUE")
    return key.strip(), value.strip()


def add_arguments(p: argparse.ArgumentParser) -> None:
    d = Options(cluster_name="x")
    p.add_argument(
        "--cluster-name",
        required=True,
        action="append",
        metavar="NAME[,NAME...]",
        help="Member cluster name(s), as registered in Karmada; repeat it or separate names "
        "with commas to render every member in one run.",
    )
    p.add_argument(
        "--layout",
        choices=tuple(LAYOUTS),
        default=DEFAULT_LAYOUT,
        help="Selector labels and certificate Secret of the Karmada install the objects fit "
        f"(default {DEFAULT_LAYOUT}: Karmada's Helm chart; see the epilog).",
    )
    p.add_argument(
        "--chart-labels",
        type=_label,
        action="append",
        metavar="KEY=VALUE",
        help="layout chart: the selector labels besides cluster, if your chart values changed "
        "schedulerEstimator.labels or global.commonLabels (default "
        + ",".join(f"{k}={v}" for k, v in CHART_LABELS.items())
        + "); repeatable.",
    )
    p.add_argument("--image", default=d.image, help=f"Estimator image (default {d.image}).")
    p.add_argument("--image-pull-policy", default=d.image_pull_policy, choices=("Always", "IfNotPresent", "Never"))
    p.add_argument("--namespace", default=d.namespace, help="Host namespace karmada-scheduler looks in.")
    p.add_argument(
        "--member-namespace", default=d.member_namespace, help="Namespace created on the member for the ServiceAccount."
    )
    p.add_argument("--part", choices=PARTS, default="all", help="Which cluster's objects to render.")
    p.add_argument("--replicas", type=int, default=d.replicas)
    p.add_argument(
        "--anti-affinity",
        choices=ANTI_AFFINITY,
        default=d.anti_affinity,
        help="required: replicas never share a node (needs as many nodes as replicas); "
        "preferred: spread when possible (single-node test clusters).",
    )
    p.add_argument(
        "--tls-secret",
        default="",
        help="Secret with the gRPC certificate, key and client CA under the layout's keys "
        "(default: the layout's Secret).",
    )
    p.add_argument(
        "--kubeconfig-secret",
        default="",
        help="Secret holding the member kubeconfig under key <cluster>-kubeconfig "
        "(default <cluster>-kubeconfig; one member only).",
    )
    p.add_argument("--packing", choices=("best", "first-fit"), default=d.packing)
    p.add_argument("--parallelism", type=int, default=d.parallelism)
    p.add_argument("--max-concurrent-requests", type=int, default=d.max_concurrent_requests)
    p.add_argument("--max-request-bytes", type=int, default=d.max_request_bytes)
    p.add_argument(
        "--request-memory-budget",
        default=d.request_memory_budget,
        help=f"The estimator's --request-memory-budget (default {d.request_memory_budget}); with 1/8 "
        "more for remembered answers it must stay below --memory-limit.",
    )
    p.add_argument(
        "--shutdown-grace-period",
        type=int,
        default=d.shutdown_grace_period,
        help="Seconds in-flight calls get on termination; the pod's termination grace is 10 s more.",
    )
    p.add_argument("--cpu-request", default=d.cpu_request)
    p.add_argument("--memory-request", default=d.memory_request)
    p.add_argument("--cpu-limit", default=d.cpu_limit)
    p.add_argument("--memory-limit", default=d.memory_limit)
    p.add_argument("--priority-class", default="", help="priorityClassName of the pods (default none).")
    p.add_argument("--service-monitor", action="store_true", help="Also render a prometheus-operator ServiceMonitor.")
    p.add_argument("--v", type=int, default=0, dest="log_verbosity", help="Estimator log verbosity.")
    p.add_argument(
        "-o",
        "--output-dir",
        type=Path,
        default=None,
        help="Write <cluster>-host.yaml and <cluster>-member.yaml per member here instead of stdout.",
    )


def cluster_names(values: Sequence[str]) -> list[str]:
    return [name.strip() for value in values for name in value.split(",") if name.strip()]


def members_from(args: argparse.Namespace) -> list[Options]:
    fields = {f.name for f in dataclasses.fields(Options)} - {"cluster_name", "chart_labels"}
    common = {k: v for k, v in vars(args).items() if k in fields}
    if args.chart_labels:
        common["chart_labels"] = tuple(args.chart_labels)
    names = cluster_names(args.cluster_name)
    if args.kubeconfig_secret and len(names) > 1:
        raise OptionsError("--kubeconfig-secret names one member's Secret: give one --cluster-name with it")
    if args.chart_labels and args.layout != "chart":
        raise OptionsError("--chart-labels applies to --layout chart only")
    if not names:
        raise OptionsError("--cluster-name: at least one member")
    return [Options(cluster_name=name, **common) for name in names]


def options_from(args: argparse.Namespace) -> tuple[Options, ...]:
    """The rendering options of every member the parsed arguments name."""
    return tuple(members_from(args))


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    return run(parser, parser.parse_args(list(sys.argv[1:] if argv is None else argv)))


def run(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    """Render what the parsed arguments ask for; a bad option is parser.error (exit 2)."""
    try:
        members = members_from(args)
        for options in members:
            check(options)
        text = to_yaml(members, args.part) if args.output_dir is None else None
    except OptionsError as error:
        parser.error(str(error))
    if text is not None:
        sys.stdout.write(text)
        return 0
    args.output_dir.mkdir(parents=True, exist_ok=True)
    for options in members:
        for section in ("host", "member") if args.part == "all" else (args.part,):
            path = args.output_dir / f"{options.cluster_name}-{section}.yaml"
            path.write_text(to_yaml(options, section))
            print(f"wrote {path}", file=sys.stderr)
    return 0
