"""The host side of `karmada-estimator manifests`: per member, the objects for the cluster running
Karmada's control plane (namespace `karmada-system` by default): the estimator Deployment, the
Service `karmada-scheduler-estimator-<cluster>` on 10352 that karmada-scheduler looks up by name,
a PodDisruptionBudget, optionally a ServiceMonitor. Each object is a function of the Options
returning a dict.

The Deployment mounts two Secrets that are never rendered here (they hold credentials):
`<cluster>-kubeconfig` (the member kubeconfig, Karmada's name and key) and the gRPC certificate
Secret of the chosen layout.
"""

from __future__ import annotations

from typing import Any

from estimator.deploy.options import COMPONENT, GRPC_PORT, HEALTH_PORT, KUBECONFIG_MOUNT, METRICS_PORT, Options

# --- Our image's layout (see Dockerfile) ----------------------------------------------
ENTRYPOINT = "/usr/local/bin/karmada-estimator-entrypoint"
RUN_AS = 10001
NUMBA_CACHE_VOLUME_MOUNT = "/var/cache/karmada-estimator"
NUMBA_CACHE_DIR = f"{NUMBA_CACHE_VOLUME_MOUNT}/numba"


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
