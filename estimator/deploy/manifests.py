"""`karmada-estimator manifests`: Kubernetes manifests for the members' estimators.

Rendering is plain Python: each object is a function returning a dict, and the documents
are dumped with PyYAML. No template language, so every value is typed (ports are ints,
labels strings) and tests can inspect the dicts before they become YAML.

The objects are built by `hostobjects` and `memberobjects` from the `Options` of `options` (with
the names and layouts below); this module is the public front: it checks the options, renders
a part (`render`) and dumps the documents (`to_yaml`), the one module here that imports YAML.

Two sets of objects, for two clusters:

* host (the cluster running Karmada's control plane, namespace `karmada-system`): per member
  the estimator Deployment, the Service `karmada-scheduler-estimator-<cluster>` on 10352 that
  karmada-scheduler looks up by name, a PodDisruptionBudget, optionally a ServiceMonitor.
  The Deployment mounts two Secrets that are never rendered here (they hold credentials):
  `<cluster>-kubeconfig` (the member kubeconfig, Karmada's name and key) and the gRPC
  certificate Secret of the chosen layout.
* member: a namespace of our own, a ServiceAccount with a long-lived token Secret (the
  credential inside the member kubeconfig), and a ClusterRole allowed get/list/watch on
  nodes, pods, resourcequotas, replicasets, deployments and DRA objects, nothing more.

A layout (`--layout`) says which existing Karmada install the objects fit, so that ours can
be applied over it (a Deployment's selector is immutable) and reuse its certificates:

* `chart` (default): Karmada's Helm chart: selector `cluster: <member>` plus the chart's
  `schedulerEstimator.labels` (`app: karmada-scheduler-estimator`); Secret `karmada-cert`
  with `karmada.crt`, `karmada.key` and the CA `server-ca.crt`, mounted at /etc/karmada/pki.
* `karmadactl`: `karmadactl addons enable karmada-scheduler-estimator`: selector
  `app: karmada-scheduler-estimator-<member>`; Secret `karmada-cert` (`karmadactl init`'s)
  with `karmada.crt`, `karmada.key` and the CA `ca.crt`.
* `artifacts`: Karmada's artifacts/deploy/karmada-scheduler-estimator.yaml (hack/local-up),
  and the layout these manifests had until now (0.1.0): selector `app: karmada-scheduler-estimator-<member>`;
  Secret `karmada-scheduler-estimator-cert` with `tls.crt`, `tls.key`, `ca.crt`.

    karmada-estimator manifests --cluster-name member-a,member-b --image registry/estimator:0.1.0 \\
        --part host | kubectl --context karmada-host apply --server-side -f -
    karmada-estimator manifests --cluster-name member-b --part member \\
        | kubectl --context member-b apply --server-side -f -
"""

from __future__ import annotations

from collections.abc import Sequence

import yaml

from estimator.deploy.hostobjects import ENTRYPOINT, NUMBA_CACHE_DIR, RUN_AS, deployment, host_objects
from estimator.deploy.memberobjects import member_objects
from estimator.deploy.options import (
    ANTI_AFFINITY,
    CHART_LABELS,
    COMPONENT,
    DEFAULT_LAYOUT,
    GRPC_PORT,
    HEALTH_PORT,
    LAYOUTS,
    MAX_CLUSTER_NAME,
    METRICS_PORT,
    PARTS,
    Layout,
    Options,
    OptionsError,
    check,
)

# The public front: the names the subcommand (estimator/deploy/cli.py), the e2e installer and the
# tests use, wherever they are defined.
__all__ = [
    "ANTI_AFFINITY",
    "CHART_LABELS",
    "COMPONENT",
    "DEFAULT_LAYOUT",
    "ENTRYPOINT",
    "GRPC_PORT",
    "HEALTH_PORT",
    "LAYOUTS",
    "MAX_CLUSTER_NAME",
    "METRICS_PORT",
    "NUMBA_CACHE_DIR",
    "PARTS",
    "RUN_AS",
    "Layout",
    "Options",
    "OptionsError",
    "check",
    "deployment",
    "host_objects",
    "member_objects",
    "render",
    "to_yaml",
]


def render(options: Options, part: str = "all") -> list[dict]:
    check(options)
    if part not in PARTS:
        raise OptionsError(f"--part must be one of {', '.join(PARTS)}")
    objects = []
    if part in ("all", "host"):
        objects += host_objects(options)
    if part in ("all", "member"):
        objects += member_objects(options)
    return objects


def _header(options: Options, part: str, members: list[str] | None = None) -> str:
    if part == "host":
        names = ", ".join(members or [options.cluster_name])
        label = "members" if members and len(members) > 1 else "member"
        return (
            f"# karmada-estimator manifests for {label} {names}: apply to the Karmada host cluster "
            f"(namespace {options.namespace}); layout {options.layout}\n"
        )
    return (
        f"# karmada-estimator manifests for member {options.cluster_name}: "
        f"apply to member cluster {options.cluster_name}\n"
    )


def _dump(documents: list[dict]) -> str:
    return yaml.safe_dump_all(documents, sort_keys=False, default_flow_style=False, explicit_start=True)


def to_yaml(options: Options | Sequence[Options], part: str = "all") -> str:
    """Multi-document YAML for one member or several. The host documents of every member come
    first under one header (they all go to the host cluster); then each member's own part,
    headed by a comment that names the cluster it belongs to."""
    members = [options] if isinstance(options, Options) else list(options)
    if not members:
        raise OptionsError("--cluster-name: at least one member")
    if part not in PARTS:
        raise OptionsError(f"--part must be one of {', '.join(PARTS)}")
    names = [m.cluster_name for m in members]
    if len(set(names)) != len(names):
        raise OptionsError(f"--cluster-name: {', '.join(sorted({n for n in names if names.count(n) > 1}))} given twice")
    chunks = []
    if part in ("all", "host"):
        documents = [doc for member in members for doc in render(member, "host")]
        chunks.append(_header(members[0], "host", names) + _dump(documents))
    if part in ("all", "member"):
        for member in members:
            chunks.append(_header(member, "member") + _dump(render(member, "member")))
    return "".join(chunks)
