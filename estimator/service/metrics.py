"""Prometheus metrics under Karmada's names, so existing dashboards keep working."""

from __future__ import annotations

import time

import prometheus_client
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

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
        # Live-cache staleness bound (--max-staleness).
        self.cache_stale = Gauge(f"{SUBSYSTEM}_cache_stale", "1 while the cluster state is older than "
                                 "--max-staleness (readiness then fails); 0 otherwise or when unset.",
                                 registry=self.registry)
        # How good component-set answers are: each comes with an upper bound (the fraction
        # proven optimal is answers{optimality="proven"} / all answers).
        self.sets_answers = Counter(f"{SUBSYSTEM}_component_sets_answers_total", "Component-set answers by "
                                    "packing mode and whether their upper bound proves them optimal "
                                    "(proven, unproven, unknown).", ["packing", "optimality"],
                                    registry=self.registry)
        self.sets_bound_gap = Histogram(f"{SUBSYSTEM}_component_sets_bound_gap_ratio", "For answers not proven "
                                        "optimal: (upper bound - answer) / upper bound, the most they may miss.",
                                        ["packing"], buckets=(0.001, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0),
                                        registry=self.registry)
        # Label children resolved once: labels() costs a lock and a tuple build per call,
        # several times per request.
        self._children: dict[tuple, object] = {}

    def _child(self, metric, *labels):
        key = (id(metric), labels)
        child = self._children.get(key)
        if child is None:
            child = self._children.setdefault(key, metric.labels(*labels))
        return child

    def observe_optimality(self, packing: str, sets: int, bound: int | None) -> None:
        if bound is None:
            self._child(self.sets_answers, packing, "unknown").inc()
        elif sets >= bound:
            self._child(self.sets_answers, packing, "proven").inc()
        else:
            self._child(self.sets_answers, packing, "unproven").inc()
            self._child(self.sets_bound_gap, packing).observe((bound - sets) / bound)

    def observe_request(self, kind: str, ok: bool, started: float) -> None:
        result = "success" if ok else "error"
        self._child(self.requests, result, kind).inc()
        self._child(self.algorithm_latency, result, kind, STEP_TOTAL).observe(time.perf_counter() - started)

    def observe_plugins(self, extension: str, durations: dict[str, float]) -> None:
        self._child(self.extension_point_duration, extension).observe(sum(durations.values()))
        for plugin, seconds in durations.items():
            self._child(self.plugin_duration, plugin, extension).observe(seconds)

    def register_state(self, state) -> None:
        """Export the list/watch counters of a state that keeps them (WatchClusterState.stats())."""
        if callable(getattr(state, "stats", None)):
            self.registry.register(WatchCollector(state))

    def exposition(self) -> bytes:
        return prometheus_client.generate_latest(self.registry)


class WatchCollector:
    """Per-kind list/watch counters, read from the state at scrape time (no locks on the
    event path: the reflector threads only bump plain ints)."""

    def __init__(self, state) -> None:
        self._state = state

    def describe(self):
        return []

    def collect(self):
        stats = self._state.stats()
        families = {
            "events": CounterMetricFamily(f"{SUBSYSTEM}_watch_events", "Watch events applied (bookmarks included).",
                                          labels=["kind"]),
            "bookmarks": CounterMetricFamily(f"{SUBSYSTEM}_watch_bookmarks", "Watch bookmarks received.",
                                             labels=["kind"]),
            "lists": CounterMetricFamily(f"{SUBSYSTEM}_watch_lists", "Complete (paginated) lists, initial sync "
                                         "included.", labels=["kind"]),
            "relists_gone": CounterMetricFamily(f"{SUBSYSTEM}_watch_relists_gone", "Relists forced by 410 Gone.",
                                                labels=["kind"]),
            "deleted_by_relist": CounterMetricFamily(f"{SUBSYSTEM}_watch_relist_deletions", "Objects a relist "
                                                     "removed because the API server no longer had them.",
                                                     labels=["kind"]),
            "malformed": CounterMetricFamily(f"{SUBSYSTEM}_watch_malformed_objects", "Objects skipped as "
                                             "malformed.", labels=["kind"]),
            "saturated": CounterMetricFamily(f"{SUBSYSTEM}_watch_saturated_objects", "Objects applied with a "
                                             "request sum beyond int64, counted as int64 max.", labels=["kind"]),
            "throttled_seconds": CounterMetricFamily(f"{SUBSYSTEM}_watch_throttled_seconds", "Seconds requests "
                                                     "waited for the --kube-api-qps/--kube-api-burst token bucket.",
                                                     labels=["kind"]),
        }
        errors = CounterMetricFamily(f"{SUBSYSTEM}_watch_errors", "List/watch failures by reason.",
                                     labels=["kind", "reason"])
        synced = GaugeMetricFamily(f"{SUBSYSTEM}_watch_synced", "1 once the kind has been listed.", labels=["kind"])
        contact = GaugeMetricFamily(f"{SUBSYSTEM}_watch_seconds_since_contact", "Seconds since the last list, "
                                    "watch open, event or bookmark of the kind.", labels=["kind"])
        for kind, kind_stats in stats.items():
            for key, family in families.items():
                family.add_metric([kind], kind_stats[key])
            for reason, count in kind_stats["errors"].items():
                errors.add_metric([kind, reason], count)
            synced.add_metric([kind], 1 if kind_stats["synced"] else 0)
            contact.add_metric([kind], kind_stats["seconds_since_contact"])
        yield from families.values()
        yield from (errors, synced, contact)
