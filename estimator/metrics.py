"""Prometheus metrics under Karmada's names, so existing dashboards keep working."""

from __future__ import annotations

import time

import prometheus_client
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

prometheus_client.disable_created_metrics()

SUBSYSTEM = "karmada_scheduler_estimator"

TYPE_MAX_AVAILABLE_REPLICAS = "MaxAvailableReplicas"
TYPE_MAX_AVAILABLE_COMPONENT_SETS = "MaxAvailableComponentSets"
TYPE_GET_UNSCHEDULABLE_REPLICAS = "GetUnschedulableReplicas"

STEP_TOTAL = "Total"
STEP_SNAPSHOT = "Snapshot"
STEP_ESTIMATE = "Estimate"

EXTENSION_REPLICAS = "estimate_replicas"
EXTENSION_COMPONENTS = "estimate_components"

# Karmada's buckets start at 1 ms; ours answer in well under that, so finer buckets are
# prepended (histogram_quantile over the Go buckets still works).
_ALGORITHM_BUCKETS = (0.0001, 0.00025, 0.0005) + tuple(0.001 * 2**i for i in range(10))


class EstimatorMetrics:
    """One registry per server, so tests can run several servers in one process."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        self.requests = Counter(
            f"{SUBSYSTEM}_estimating_request_total",
            "Number of scheduler estimator requests",
            ["result", "type"],
            registry=self.registry,
        )
        self.algorithm_latency = Histogram(
            f"{SUBSYSTEM}_estimating_algorithm_duration_seconds",
            "Estimating algorithm latency in seconds for each step",
            ["result", "type", "step"],
            buckets=_ALGORITHM_BUCKETS,
            registry=self.registry,
        )
        self.extension_point_duration = Histogram(
            f"{SUBSYSTEM}_estimating_plugin_extension_point_duration_seconds",
            "Latency for running all plugins of a specific extension point.",
            ["estimating_plugin_extension_point"],
            buckets=tuple(0.0001 * 2**i for i in range(12)),
            registry=self.registry,
        )
        self.plugin_duration = Histogram(
            f"{SUBSYSTEM}_estimating_plugin_execution_duration_seconds",
            "Duration for running a plugin at a specific extension point.",
            ["estimating_plugin", "estimating_plugin_extension_point"],
            buckets=tuple(0.00001 * 1.5**i for i in range(20)),
            registry=self.registry,
        )
        self.cache_staleness = Gauge(
            f"{SUBSYSTEM}_cache_staleness_seconds",
            "Seconds since the cluster state last changed or was confirmed current.",
            registry=self.registry,
        )
        self.nodes = Gauge(f"{SUBSYSTEM}_cache_nodes", "Nodes in the cluster state.", registry=self.registry)
        self.ready = Gauge(f"{SUBSYSTEM}_ready", "1 when the estimator serves estimates.", registry=self.registry)

    def observe_request(self, kind: str, ok: bool, started: float) -> None:
        result = "success" if ok else "error"
        self.requests.labels(result, kind).inc()
        self.algorithm_latency.labels(result, kind, STEP_TOTAL).observe(time.perf_counter() - started)

    def observe_plugins(self, extension: str, durations: dict[str, float]) -> None:
        self.extension_point_duration.labels(extension).observe(sum(durations.values()))
        for plugin, seconds in durations.items():
            self.plugin_duration.labels(plugin, extension).observe(seconds)

    def exposition(self) -> bytes:
        return prometheus_client.generate_latest(self.registry)
