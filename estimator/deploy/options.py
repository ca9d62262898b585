"""What `karmada-estimator manifests` renders from: the names Karmada's scheduler and tooling
rely on, the layouts of the Karmada installs the objects fit (`--layout`), the Options (one
member's settings) and `check`, which refuses options Kubernetes would reject.

A layout says which existing Karmada install the objects fit, so that ours can be applied over
it (a Deployment's selector is immutable) and reuse its certificates; estimator/deploy/manifests.py
describes the three.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from importlib import metadata

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

# The member side's own namespace (the objects are in estimator/deploy/memberobjects.py).
MEMBER_NAMESPACE = "karmada-scheduler-estimator"

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
