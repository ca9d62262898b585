"""`karmada-estimator manifests`: Kubernetes manifests for the members' estimators.

Rendering is plain Python: each object is a function returning a dict, and the documents
are dumped with PyYAML. No template language, so every value is typed (ports are ints,
labels strings) and tests can inspect the dicts before they become YAML.

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

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any

import yaml

from estimator import goflags

# --- Names Karmada's scheduler and tooling rely on ------------------------------------
COMPONENT = "karmada-scheduler-estimator"
HOST_NAMESPACE = "karmada-system"
GRPC_PORT = 10352
HEALTH_PORT = 10351
METRICS_PORT = 8080
KUBECONFIG_MOUNT = "/etc/karmada/member"
# The labels Karmada's chart puts in every estimator's selector besides `cluster: <member>`:
# its values' schedulerEstimator.labels (plus global.commonLabels, empty by default).
CHART_LABELS = {"app": COMPONENT}


@dataclass(frozen=True)
class Layout:
    """Where an existing Karmada install keeps what the estimator needs: the selector of its
    Deployment (immutable, so ours must be the same to be applied over it) and the Secret
    with the gRPC certificate, key and client CA."""

    name: str
    installed_by: str
    per_member_app_label: bool  # selector `app: karmada-scheduler-estimator-<member>`, else the chart's
    tls_secret: str
    tls_volume: str
    tls_mount: str
    cert_key: str
    key_key: str
    ca_key: str

    @property
    def keys(self) -> tuple[str, str, str]:
        return self.cert_key, self.key_key, self.ca_key


LAYOUTS = {
    layout.name: layout
    for layout in (
        Layout(
            "chart",
            "Karmada's Helm chart (charts/karmada, schedulerEstimator)",
            False,
            "karmada-cert",
            "karmada-certs",
            "/etc/karmada/pki",
            "karmada.crt",
            "karmada.key",
            "server-ca.crt",
        ),
        Layout(
            "karmadactl",
            "karmadactl addons enable karmada-scheduler-estimator (after karmadactl init)",
            True,
            "karmada-cert",
            "k8s-certs",
            "/etc/karmada/pki",
            "karmada.crt",
            "karmada.key",
            "ca.crt",
        ),
        Layout(
            "artifacts",
            "Karmada's artifacts/deploy/karmada-scheduler-estimator.yaml (hack/local-up-karmada.sh); "
            "the default of 0.1.0's manifests",
            True,
            "karmada-scheduler-estimator-cert",
            "server-cert",
            "/etc/karmada/pki/server",
            "tls.crt",
            "tls.key",
            "ca.crt",
        ),
    )
}
DEFAULT_LAYOUT = "chart"

# --- Our image's layout (see Dockerfile) ----------------------------------------------
ENTRYPOINT = "/usr/local/bin/karmada-estimator-entrypoint"
RUN_AS = 10001
NUMBA_CACHE_VOLUME_MOUNT = "/var/cache/karmada-estimator"
NUMBA_CACHE_DIR = f"{NUMBA_CACHE_VOLUME_MOUNT}/numba"

# --- Member side ----------------------------------------------------------------------
MEMBER_NAMESPACE = "karmada-scheduler-estimator"
MEMBER_ACCOUNT = COMPONENT
MEMBER_TOKEN_SECRET = f"{COMPONENT}-token"
# What the estimator reads from the member: exactly these, read-only.
MEMBER_RULES = (
    {"apiGroups": [""], "resources": ["nodes", "pods", "resourcequotas"], "verbs": ["get", "list", "watch"]},
    {"apiGroups": ["apps"], "resources": ["replicasets", "deployments"], "verbs": ["get", "list", "watch"]},
    # GPUs served through Dynamic Resource Allocation (docs/semantics.md): without these the
    # estimator still runs, counting no DRA-served devices, and says so in its log.
    {
        "apiGroups": ["resource.k8s.io"],
        "resources": ["deviceclasses", "resourceslices", "resourceclaims"],
        "verbs": ["get", "list", "watch"],
    },
)

PARTS = ("all", "host", "member")
ANTI_AFFINITY = ("required", "preferred")

# A Service name is a DNS-1035 label (at most 63 characters), and it is the longest name
# we derive from the cluster name.
_SERVICE_PREFIX = f"{COMPONENT}-"
MAX_CLUSTER_NAME = 63 - len(_SERVICE_PREFIX)
_DNS_LABEL = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
_LABEL_KEY = re.compile(r"([a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?")
_LABEL_VALUE = re.compile(r"([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)?")


def _default_image() -> str:
    try:
        version = metadata.version("karmada-accurate-estimator")
    except metadata.PackageNotFoundError:
        version = "latest"
    return f"karmada-accurate-estimator:{version}"


@dataclass(frozen=True)
class Options:
    cluster_name: str
    image: str = field(default_factory=_default_image)
    image_pull_policy: str = "IfNotPresent"
    namespace: str = HOST_NAMESPACE
    layout: str = DEFAULT_LAYOUT
    chart_labels: tuple[tuple[str, str], ...] = tuple(CHART_LABELS.items())
    member_namespace: str = MEMBER_NAMESPACE
    replicas: int = 2
    anti_affinity: str = "required"
    tls_secret: str = ""  # default: the layout's
    kubeconfig_secret: str = ""  # default: <cluster>-kubeconfig, as Karmada names it
    packing: str = "best"
    parallelism: int = 16
    max_concurrent_requests: int = 64
    max_request_bytes: int = 1024 * 1024  # not gRPC's 4 MiB: docs/operations.md, "Limits"
    # What calls in flight may hold together (+1/8 for remembered answers), well under the
    # memory limit: the member's state and the interpreter need the rest.
    request_memory_budget: str = "512Mi"
    shutdown_grace_period: int = 20
    cpu_request: str = "500m"
    memory_request: str = "512Mi"
    cpu_limit: str = "2"
    memory_limit: str = "2Gi"
    priority_class: str = ""
    service_monitor: bool = False
    log_verbosity: int = 0

    @property
    def name(self) -> str:
        return _SERVICE_PREFIX + self.cluster_name

    @property
    def tls(self) -> Layout:
        return LAYOUTS[self.layout]

    @property
    def tls_secret_name(self) -> str:
        return self.tls_secret or self.tls.tls_secret

    @property
    def kubeconfig_secret_name(self) -> str:
        return self.kubeconfig_secret or f"{self.cluster_name}-kubeconfig"

    @property
    def kubeconfig_key(self) -> str:
        # Karmada's Secret holds the kubeconfig under the key `<cluster>-kubeconfig`.
        return f"{self.cluster_name}-kubeconfig"

    @property
    def kubeconfig_path(self) -> str:
        return f"{KUBECONFIG_MOUNT}/{self.kubeconfig_key}"


class OptionsError(ValueError):
    pass


def check(options: Options) -> None:
    """Refuse options that would render objects Kubernetes rejects or a pod that never runs."""
    if not _DNS_LABEL.fullmatch(options.cluster_name) or len(options.cluster_name) > MAX_CLUSTER_NAME:
        raise OptionsError(
            f"--cluster-name {options.cluster_name!r}: must be a lower-case DNS label of at most "
            f"{MAX_CLUSTER_NAME} characters, so that Service {_SERVICE_PREFIX}<cluster> is a valid name"
        )
    for flag, value in (("--namespace", options.namespace), ("--member-namespace", options.member_namespace)):
        if not _DNS_LABEL.fullmatch(value):
            raise OptionsError(f"{flag} {value!r}: must be a lower-case DNS label")
    if options.layout not in LAYOUTS:
        raise OptionsError(f"--layout must be one of {', '.join(LAYOUTS)}")
    if options.layout == "chart":
        if not options.chart_labels:
            raise OptionsError("--chart-labels: the chart's selector needs at least one label besides cluster")
        for key, value in options.chart_labels:
            if not _LABEL_KEY.fullmatch(key) or not _LABEL_VALUE.fullmatch(value) or key == "cluster":
                raise OptionsError(
                    f"--chart-labels {key}={value}: not a label (or `cluster`, which the chart sets itself)"
                )
    if options.replicas < 1:
        raise OptionsError("--replicas must be at least 1")
    if options.anti_affinity not in ANTI_AFFINITY:
        raise OptionsError(f"--anti-affinity must be one of {', '.join(ANTI_AFFINITY)}")
    if not options.image:
        raise OptionsError("--image must not be empty")
    if options.shutdown_grace_period < 0 or options.max_concurrent_requests < 0 or options.max_request_bytes <= 0:
        raise OptionsError("--shutdown-grace-period, --max-concurrent-requests >= 0 and --max-request-bytes > 0")
    _check_memory_budget(options)


def _check_memory_budget(options: Options) -> None:
    """The request budget must be a byte quantity and leave room under the memory limit
    (Kubernetes kills the container at the limit; the budget exists to stay under it)."""
    try:
        budget = goflags.parse_byte_quantity(options.request_memory_budget)
        limit = goflags.parse_byte_quantity(options.memory_limit)
    except goflags.FlagValueError as error:
        raise OptionsError(f"--request-memory-budget / --memory-limit: {error}") from None
    if limit and (budget == 0 or budget * 9 // 8 >= limit):
        raise OptionsError(
            f"--request-memory-budget {options.request_memory_budget!r} (with 1/8 more for remembered "
            f"answers) must be above 0 and below --memory-limit {options.memory_limit!r}"
        )


# ---------------------------------------------------------------------------------------
# Host side


def labels(options: Options) -> dict[str, str]:
    """Labels on every host object: the selector of the layout (so Karmada's tooling finds
    ours as it finds its own) and the recommended app.kubernetes.io labels."""
    return {
        **selector(options),
        "cluster": options.cluster_name,
        "app.kubernetes.io/name": COMPONENT,
        "app.kubernetes.io/instance": options.name,
        "app.kubernetes.io/component": "scheduler-estimator",
        "app.kubernetes.io/part-of": "karmada",
    }


def selector(options: Options) -> dict[str, str]:
    """The Deployment's (immutable) selector, the Service's and the PodDisruptionBudget's:
    exactly the one of the install the layout names."""
    if options.tls.per_member_app_label:
        return {"app": options.name}
    return {"cluster": options.cluster_name, **dict(options.chart_labels)}


def estimator_args(options: Options) -> list[str]:
    """Flags of the estimator container: Karmada's flag names and file layout."""
    return [
        f"--cluster-name={options.cluster_name}",
        f"--kubeconfig={options.kubeconfig_path}",
        f"--server-port={GRPC_PORT}",
        f"--grpc-auth-cert-file={options.tls.tls_mount}/{options.tls.cert_key}",
        f"--grpc-auth-key-file={options.tls.tls_mount}/{options.tls.key_key}",
        f"--grpc-client-ca-file={options.tls.tls_mount}/{options.tls.ca_key}",
        # All addresses, not the pod IP only, so `kubectl port-forward` reaches them too.
        f"--health-probe-bind-address=:{HEALTH_PORT}",
        f"--metrics-bind-address=:{METRICS_PORT}",
        f"--parallelism={options.parallelism}",
        f"--packing={options.packing}",
        f"--max-concurrent-requests={options.max_concurrent_requests}",
        f"--max-request-bytes={options.max_request_bytes}",
        f"--request-memory-budget={options.request_memory_budget}",
        f"--shutdown-grace-period={options.shutdown_grace_period}",
        "--log-format=json",
        f"--v={options.log_verbosity}",
    ]


def _probe(path: str, *, initial_delay: int, period: int, failures: int) -> dict:
    return {
        "httpGet": {"path": path, "port": HEALTH_PORT, "scheme": "HTTP"},
        "initialDelaySeconds": initial_delay,
        "periodSeconds": period,
        "timeoutSeconds": 5,
        "failureThreshold": failures,
    }


def _anti_affinity(options: Options) -> dict:
    term = {"labelSelector": {"matchLabels": selector(options)}, "topologyKey": "kubernetes.io/hostname"}
    rule: dict[str, list[dict[str, Any]]]
    if options.anti_affinity == "required":
        rule = {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
    else:
        rule = {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 100, "podAffinityTerm": term}]}
    return {"podAntiAffinity": rule}


def _container(options: Options) -> dict:
    container = {
        "name": COMPONENT,
        "image": options.image,
        "imagePullPolicy": options.image_pull_policy,
        "command": [ENTRYPOINT],
        "args": estimator_args(options),
        "env": [
            # The image seeds this directory from the kernels it compiled at build time.
            {"name": "NUMBA_CACHE_DIR", "value": NUMBA_CACHE_DIR},
        ],
        "ports": [
            {"name": "grpc", "containerPort": GRPC_PORT, "protocol": "TCP"},
            {"name": "healthz", "containerPort": HEALTH_PORT, "protocol": "TCP"},
            {"name": "metrics", "containerPort": METRICS_PORT, "protocol": "TCP"},
        ],
        # /healthz: the process and its cluster-state loader are alive (restart if not).
        "livenessProbe": _probe("/healthz", initial_delay=15, period=15, failures=3),
        # /readyz: state synced, kernels compiled, not draining (take out of the Service if not).
        "readinessProbe": _probe("/readyz", initial_delay=0, period=5, failures=2),
        "resources": {
            "requests": {"cpu": options.cpu_request, "memory": options.memory_request},
            "limits": {"cpu": options.cpu_limit, "memory": options.memory_limit},
        },
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": RUN_AS,
            "runAsGroup": RUN_AS,
            "allowPrivilegeEscalation": False,
            "privileged": False,
            "readOnlyRootFilesystem": True,
            "capabilities": {"drop": ["ALL"]},
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "volumeMounts": [
            {"name": options.tls.tls_volume, "mountPath": options.tls.tls_mount, "readOnly": True},
            {"name": "member-kubeconfig", "mountPath": KUBECONFIG_MOUNT, "readOnly": True},
            {"name": "numba-cache", "mountPath": NUMBA_CACHE_VOLUME_MOUNT},
            # A client certificate and key from the kubeconfig pass through a temp file while
            # they are loaded (Python's ssl reads them from files only).
            {"name": "tmp", "mountPath": "/tmp"},
        ],
    }
    return container


def termination_grace(options: Options) -> int:
    """The kubelet waits this long after SIGTERM before SIGKILL: the drain plus a margin."""
    return options.shutdown_grace_period + 10


def deployment(options: Options) -> dict:
    pod_spec = {
        # The estimator talks to the member through its kubeconfig; it needs no token here.
        "automountServiceAccountToken": False,
        "enableServiceLinks": False,
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": RUN_AS,
            "runAsGroup": RUN_AS,
            "fsGroup": RUN_AS,
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "affinity": _anti_affinity(options),
        "terminationGracePeriodSeconds": termination_grace(options),
        "containers": [_container(options)],
        "volumes": [
            # Only the keys the estimator reads: the chart's and karmadactl's Secret also hold
            # the CA's private key and the other components' certificates.
            {
                "name": options.tls.tls_volume,
                "secret": {
                    "secretName": options.tls_secret_name,
                    "defaultMode": 0o440,
                    "items": [{"key": key, "path": key} for key in options.tls.keys],
                },
            },
            {
                "name": "member-kubeconfig",
                "secret": {
                    "secretName": options.kubeconfig_secret_name,
                    "defaultMode": 0o440,
                    "items": [{"key": options.kubeconfig_key, "path": options.kubeconfig_key}],
                },
            },
            {"name": "numba-cache", "emptyDir": {"sizeLimit": "256Mi"}},
            {"name": "tmp", "emptyDir": {"sizeLimit": "64Mi"}},
        ],
    }
    if options.priority_class:
        pod_spec["priorityClassName"] = options.priority_class
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": options.name, "namespace": options.namespace, "labels": labels(options)},
        "spec": {
            "replicas": options.replicas,
            "revisionHistoryLimit": 5,
            "selector": {"matchLabels": selector(options)},
            # Never surge: with required anti-affinity on a two-node cluster a surge pod has
            # nowhere to go. One old pod stops, its node takes the new one; the other serves.
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}},
            "template": {
                "metadata": {
                    "labels": labels(options),
                    "annotations": {
                        "prometheus.io/scrape": "true",
                        "prometheus.io/port": str(METRICS_PORT),
                        "prometheus.io/path": "/metrics",
                    },
                },
                "spec": pod_spec,
            },
        },
    }


def service(options: Options) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": options.name, "namespace": options.namespace, "labels": labels(options)},
        "spec": {
            "type": "ClusterIP",
            "selector": selector(options),
            "ports": [
                {"name": "grpc", "protocol": "TCP", "port": GRPC_PORT, "targetPort": "grpc"},
                {"name": "metrics", "protocol": "TCP", "port": METRICS_PORT, "targetPort": "metrics"},
            ],
        },
    }


def pod_disruption_budget(options: Options) -> dict:
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": {"name": options.name, "namespace": options.namespace, "labels": labels(options)},
        "spec": {
            "maxUnavailable": 1,
            "selector": {"matchLabels": selector(options)},
            # A pod that is not ready serves nobody; do not let it block a node drain.
            "unhealthyPodEvictionPolicy": "AlwaysAllow",
        },
    }


def service_monitor(options: Options) -> dict:
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "ServiceMonitor",
        "metadata": {"name": options.name, "namespace": options.namespace, "labels": labels(options)},
        "spec": {
            "selector": {"matchLabels": selector(options)},
            "namespaceSelector": {"matchNames": [options.namespace]},
            "endpoints": [{"port": "metrics", "path": "/metrics", "interval": "30s", "scheme": "http"}],
        },
    }


def host_objects(options: Options) -> list[dict]:
    objects = [deployment(options), service(options), pod_disruption_budget(options)]
    if options.service_monitor:
        objects.append(service_monitor(options))
    return objects


# ---------------------------------------------------------------------------------------
# Member side


def member_labels(options: Options) -> dict[str, str]:
    return {
        "app.kubernetes.io/name": COMPONENT,
        "app.kubernetes.io/part-of": "karmada",
        "cluster": options.cluster_name,
    }


def member_objects(options: Options) -> list[dict]:
    def meta(name: str, **extra: Any) -> dict:
        return {"name": name, "labels": member_labels(options), **extra}

    in_namespace = {"namespace": options.member_namespace}
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": meta(options.member_namespace)},
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": meta(MEMBER_ACCOUNT, **in_namespace),
            "automountServiceAccountToken": False,
        },
        {
            # A long-lived token for the kubeconfig the host-side estimator uses.
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "kubernetes.io/service-account-token",
            "metadata": meta(
                MEMBER_TOKEN_SECRET, **in_namespace, annotations={"kubernetes.io/service-account.name": MEMBER_ACCOUNT}
            ),
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": meta(COMPONENT),
            "rules": [{key: list(values) for key, values in rule.items()} for rule in MEMBER_RULES],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": meta(COMPONENT),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": COMPONENT},
            "subjects": [{"kind": "ServiceAccount", "name": MEMBER_ACCOUNT, "namespace": options.member_namespace}],
        },
    ]


# ---------------------------------------------------------------------------------------
# Output


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
