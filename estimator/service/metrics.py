"""Prometheus metrics under Karmada's names, so existing dashboards keep working."""

from __future__ import annotations

import bisect
import itertools
import threading
import time
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import prometheus_client
from prometheus_client import CollectorRegistry, Gauge
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.utils import floatToGoString

from estimator.service.buildinfo import build_info

if TYPE_CHECKING:
    from estimator.cluster.sources import ClusterState

prometheus_client.disable_created_metrics()

SUBSYSTEM = "karmada_scheduler_estimator"
BUILD_LABELS = tuple(build_info())  # karmada_build_info's labels: Karmada's pkg/version names


TYPE_MAX_AVAILABLE_REPLICAS = "MaxAvailableReplicas"
TYPE_MAX_AVAILABLE_COMPONENT_SETS = "MaxAvailableComponentSets"
TYPE_GET_UNSCHEDULABLE_REPLICAS = "GetUnschedulableReplicas"

STEP_TOTAL = "Total"

EXTENSION_REPLICAS = "estimate_replicas"
EXTENSION_COMPONENTS = "estimate_components"

# Karmada's buckets start at 1 ms; ours answer in well under that, so finer buckets are
# prepended (histogram_quantile over the Go buckets still works).
_ALGORITHM_BUCKETS = (0.0001, 0.00025, 0.0005) + tuple(0.001 * 2**i for i in range(10))


class _Family:
    """A counter (bounds None) or histogram exported by `_RequestPathMetrics`."""

    __slots__ = ("name", "doc", "labels", "bounds")

    def __init__(self, name: str, doc: str, labels: tuple[str, ...], bounds: tuple[float, ...] | None = None):
        self.name, self.doc, self.labels, self.bounds = name, doc, labels, bounds


def _cell_in(store: dict, family: _Family, labels: tuple[str, ...]) -> list:
    cell = store.get((family, labels))
    if cell is None:
        cell = store[(family, labels)] = [0] * (1 if family.bounds is None else len(family.bounds) + 2)
    return cell


def _observe_in(store: dict, family: _Family, value: float, labels: tuple[str, ...]) -> None:
    cell = _cell_in(store, family, labels)
    # The first bucket with value <= bound. Histograms only, so bounds is set (no assert on the request path).
    cell[bisect.bisect_left(family.bounds, value)] += 1  # type: ignore[arg-type]
    cell[-1] += value


class _RequestPathMetrics:
    """Counters and histograms observed on the request path, as prometheus_client's would
    export them, at a fraction of the cost: each serving thread adds to its own plain
    lists (no lock, no label lookup, no per-bucket object), and a scrape sums the threads.
    A cell is [count per bucket..., count above the last bound, sum] (a counter: [value])."""

    def __init__(self) -> None:
        self._local = threading.local()
        self._stores: list[dict] = []  # one per thread that observed; kept when the thread ends
        self._lock = threading.Lock()  # only for a thread's first observation
        self.families: list[_Family] = []

    def family(self, name: str, doc: str, labels: list[str], bounds: tuple[float, ...] | None = None) -> _Family:
        family = _Family(name, doc, tuple(labels), None if bounds is None else tuple(sorted(bounds)))
        self.families.append(family)
        return family

    def store(self) -> dict:
        """This thread's cells, by (family, labels)."""
        try:
            return self._local.store
        except AttributeError:
            store = self._local.store = {}
            with self._lock:
                self._stores.append(store)
            return store

    def inc(self, family: _Family, *labels: str) -> None:
        _cell_in(self.store(), family, labels)[0] += 1

    def describe(self) -> list[Metric]:
        return []

    def collect(self) -> Iterator[Metric]:
        totals: dict[tuple, list] = {}
        for store in list(self._stores):
            for key, cell in store.copy().items():  # copies: another thread may be adding
                cell = list(cell)
                total = totals.get(key)
                if total is None:
                    totals[key] = cell
                else:
                    for i, value in enumerate(cell):
                        total[i] += value
        for family in self.families:
            cells = sorted((labels, cell) for (f, labels), cell in totals.items() if f is family)
            if family.bounds is None:
                counter = CounterMetricFamily(family.name, family.doc, labels=family.labels)
                for labels, cell in cells:
                    counter.add_metric(labels, cell[0])
                yield counter
            else:
                histogram = HistogramMetricFamily(family.name, family.doc, labels=family.labels)
                edges = [floatToGoString(b) for b in family.bounds] + ["+Inf"]
                for labels, cell in cells:
                    histogram.add_metric(
                        labels, list(zip(edges, itertools.accumulate(cell[:-1]), strict=True)), cell[-1]
                    )
                yield histogram


class EstimatorMetrics:
    """One registry per server, so tests can run several servers in one process."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        # What Karmada's components export besides their own: the process, the runtime, the build.
        prometheus_client.ProcessCollector(registry=self.registry)
        prometheus_client.PlatformCollector(registry=self.registry)
        prometheus_client.GCCollector(registry=self.registry)
        build = Gauge(
            "karmada_build_info",
            "The estimator's build, as Karmada's components label theirs.",
            BUILD_LABELS,
            registry=self.registry,
        )
        build.labels(**build_info()).set(1)
        self.hot = hot = _RequestPathMetrics()
        self.requests = hot.family(
            f"{SUBSYSTEM}_estimating_request_total", "Number of scheduler estimator requests", ["result", "type"]
        )
        self.algorithm_latency = hot.family(
            f"{SUBSYSTEM}_estimating_algorithm_duration_seconds",
            "Estimating algorithm latency in seconds for each step",
            ["result", "type", "step"],
            bounds=_ALGORITHM_BUCKETS,
        )
        self.extension_point_duration = hot.family(
            f"{SUBSYSTEM}_estimating_plugin_extension_point_duration_seconds",
            "Latency for running all plugins of a specific extension point.",
            ["estimating_plugin_extension_point"],
            bounds=tuple(0.0001 * 2**i for i in range(12)),
        )
        self.plugin_duration = hot.family(
            f"{SUBSYSTEM}_estimating_plugin_execution_duration_seconds",
            "Duration for running a plugin at a specific extension point.",
            ["estimating_plugin", "estimating_plugin_extension_point"],
            bounds=tuple(0.00001 * 1.5**i for i in range(20)),
        )
        self.cache_staleness = Gauge(
            f"{SUBSYSTEM}_cache_staleness_seconds",
            "Seconds since the cluster state last changed or was confirmed current.",
            registry=self.registry,
        )
        self.nodes = Gauge(f"{SUBSYSTEM}_cache_nodes", "Nodes in the cluster state.", registry=self.registry)
        self.ready = Gauge(f"{SUBSYSTEM}_ready", "1 when the estimator serves estimates.", registry=self.registry)
        # Live-cache staleness bound (--max-staleness).
        self.cache_stale = Gauge(
            f"{SUBSYSTEM}_cache_stale",
            "1 while the cluster state is older than "
            "--max-staleness (readiness then fails); 0 otherwise or when unset.",
            registry=self.registry,
        )
        # How good component-set answers are: each comes with an upper bound (the fraction
        # proven optimal is answers{optimality="proven"} / all answers).
        self.sets_answers = hot.family(
            f"{SUBSYSTEM}_component_sets_answers_total",
            "Component-set answers by "
            "packing mode and whether their upper bound proves them optimal "
            "(proven, unproven, unknown).",
            ["packing", "optimality"],
        )
        self.sets_bound_gap = hot.family(
            f"{SUBSYSTEM}_component_sets_bound_gap_ratio",
            "For answers not proven optimal: (upper bound - answer) / upper bound, the most they may miss.",
            ["packing"],
            bounds=(0.001, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0),
        )
        self.registry.register(hot)

    # Each observation below writes into one thread's cells (`store`): an answer's several
    # observations then look the cells up once (observe_sets_answer).

    def _optimality_in(self, store: dict, packing: str, sets: int, bound: int | None) -> None:
        if bound is None:
            _cell_in(store, self.sets_answers, (packing, "unknown"))[0] += 1
        elif sets >= bound:
            _cell_in(store, self.sets_answers, (packing, "proven"))[0] += 1
        else:
            _cell_in(store, self.sets_answers, (packing, "unproven"))[0] += 1
            _observe_in(store, self.sets_bound_gap, (bound - sets) / bound, (packing,))

    def _request_in(self, store: dict, kind: str, ok: bool, started: float) -> None:
        result = "success" if ok else "error"
        _cell_in(store, self.requests, (result, kind))[0] += 1
        _observe_in(store, self.algorithm_latency, time.perf_counter() - started, (result, kind, STEP_TOTAL))

    def _plugins_in(self, store: dict, extension: str, durations: dict[str, float]) -> None:
        _observe_in(store, self.extension_point_duration, sum(durations.values()), (extension,))
        for plugin, seconds in durations.items():
            _observe_in(store, self.plugin_duration, seconds, (plugin, extension))

    def observe_optimality(self, packing: str, sets: int, bound: int | None) -> None:
        self._optimality_in(self.hot.store(), packing, sets, bound)

    def observe_request(self, kind: str, ok: bool, started: float) -> None:
        self._request_in(self.hot.store(), kind, ok, started)

    def observe_plugins(self, extension: str, durations: dict[str, float]) -> None:
        self._plugins_in(self.hot.store(), extension, durations)

    def observe_sets_answer(
        self, packing: str, sets: int, bound: int | None, durations: dict[str, float] | None, started: float
    ) -> None:
        """A component-set answer's metrics: observe_plugins (when plugins ran: `durations`),
        observe_optimality and observe_request(success), with one look-up of this thread's cells."""
        store = self.hot.store()
        if durations:
            self._plugins_in(store, EXTENSION_COMPONENTS, durations)
        self._optimality_in(store, packing, sets, bound)
        self._request_in(store, TYPE_MAX_AVAILABLE_COMPONENT_SETS, True, started)

    def register_state(self, state: ClusterState) -> None:
        """Export the list/watch counters of a state that keeps them (WatchClusterState.stats())."""
        if isinstance(state, WatchStats):
            self.registry.register(WatchCollector(state))

    def exposition(self) -> bytes:
        return prometheus_client.generate_latest(self.registry)


@runtime_checkable
class WatchStats(Protocol):
    """A state that keeps list/watch counters: per kind, its counters by name (WatchClusterState.stats())."""

    def stats(self) -> Mapping[str, Mapping[str, Any]]: ...  # Any: counts, seconds, flags, errors by reason


class WatchCollector:
    """Per-kind list/watch counters, read from the state at scrape time (no locks on the
    event path: the reflector threads only bump plain ints)."""

    def __init__(self, state: WatchStats) -> None:
        self._state = state

    def describe(self) -> list[Metric]:
        return []

    def collect(self) -> Iterator[Metric]:
        stats = self._state.stats()
        families = {
            "events": CounterMetricFamily(
                f"{SUBSYSTEM}_watch_events", "Watch events applied (bookmarks included).", labels=["kind"]
            ),
            "bookmarks": CounterMetricFamily(
                f"{SUBSYSTEM}_watch_bookmarks", "Watch bookmarks received.", labels=["kind"]
            ),
            "lists": CounterMetricFamily(
                f"{SUBSYSTEM}_watch_lists", "Complete (paginated) lists, initial sync included.", labels=["kind"]
            ),
            "relists_gone": CounterMetricFamily(
                f"{SUBSYSTEM}_watch_relists_gone", "Relists forced by 410 Gone.", labels=["kind"]
            ),
            "deleted_by_relist": CounterMetricFamily(
                f"{SUBSYSTEM}_watch_relist_deletions",
                "Objects a relist removed because the API server no longer had them.",
                labels=["kind"],
            ),
            "malformed": CounterMetricFamily(
                f"{SUBSYSTEM}_watch_malformed_objects", "Objects skipped as malformed.", labels=["kind"]
            ),
            "saturated": CounterMetricFamily(
                f"{SUBSYSTEM}_watch_saturated_objects",
                "Objects applied with a request sum beyond int64, counted as int64 max.",
                labels=["kind"],
            ),
            "throttled_seconds": CounterMetricFamily(
                f"{SUBSYSTEM}_watch_throttled_seconds",
                "Seconds requests waited for the --kube-api-qps/--kube-api-burst token bucket.",
                labels=["kind"],
            ),
        }
        errors = CounterMetricFamily(
            f"{SUBSYSTEM}_watch_errors", "List/watch failures by reason.", labels=["kind", "reason"]
        )
        synced = GaugeMetricFamily(f"{SUBSYSTEM}_watch_synced", "1 once the kind has been listed.", labels=["kind"])
        contact = GaugeMetricFamily(
            f"{SUBSYSTEM}_watch_seconds_since_contact",
            "Seconds since the last list, watch open, event or bookmark of the kind.",
            labels=["kind"],
        )
        for kind, kind_stats in stats.items():
            for key, family in families.items():
                family.add_metric([kind], kind_stats[key])
            for reason, count in kind_stats["errors"].items():
                errors.add_metric([kind, reason], count)
            synced.add_metric([kind], 1 if kind_stats["synced"] else 0)
            contact.add_metric([kind], kind_stats["seconds_since_contact"])
        yield from families.values()
        yield from (errors, synced, contact)
