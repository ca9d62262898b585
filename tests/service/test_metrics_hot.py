"""The request-path metrics (per-thread cells summed at scrape) export what
prometheus_client's own Counter and Histogram export for the same observations."""

from __future__ import annotations

import threading

import pytest
from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from estimator.service import metrics as m


def samples(page: str) -> dict:
    out = {}
    for family in text_string_to_metric_families(page):
        for sample in family.samples:
            out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


def reference(metrics: m.EstimatorMetrics):
    """prometheus_client metrics declared as ours are (names, labels, buckets)."""
    registry = CollectorRegistry()
    made = {}
    for family in metrics.hot.families:
        if family.bounds is None:
            made[family] = Counter(family.name, family.doc, family.labels, registry=registry)
        else:
            made[family] = Histogram(family.name, family.doc, family.labels, buckets=family.bounds, registry=registry)
    return registry, made


def test_per_thread_cells_export_what_prometheus_client_exports():
    ours = m.EstimatorMetrics()
    registry, theirs = reference(ours)
    values = [0.0, 1e-05, 1.5e-05, 0.00009, 0.0001, 0.00025, 0.0007, 0.3, 7.0, 1e9]  # bucket edges included

    def work(k: int) -> None:
        for i in range(300):
            value = values[(i + k) % len(values)]
            durations = {"NodeResourceEstimator": value, "ResourceQuotaEstimator": value / 3}
            ours.observe_plugins(m.EXTENSION_COMPONENTS, durations)
            theirs[ours.extension_point_duration].labels(m.EXTENSION_COMPONENTS).observe(sum(durations.values()))
            for plugin, seconds in durations.items():
                theirs[ours.plugin_duration].labels(plugin, m.EXTENSION_COMPONENTS).observe(seconds)
            sets, bound = i % 5, (None if i % 7 == 0 else 4)
            ours.observe_optimality("best", sets, bound)
            optimality = "unknown" if bound is None else ("proven" if sets >= bound else "unproven")
            theirs[ours.sets_answers].labels("best", optimality).inc()
            if optimality == "unproven":
                theirs[ours.sets_bound_gap].labels("best").observe((bound - sets) / bound)
            ours.hot.inc(ours.requests, "success", m.TYPE_MAX_AVAILABLE_REPLICAS)
            theirs[ours.requests].labels("success", m.TYPE_MAX_AVAILABLE_REPLICAS).inc()

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    got, want = samples(ours.exposition().decode()), samples(generate_latest(registry).decode())
    assert got.keys() >= want.keys()
    for key, value in want.items():
        assert got[key] == pytest.approx(value, rel=1e-9), key


def test_request_latency_lands_in_the_total_step_of_its_result():
    ours = m.EstimatorMetrics()
    ours.observe_request(m.TYPE_MAX_AVAILABLE_COMPONENT_SETS, False, started=0.0)  # "started" long ago
    got = samples(ours.exposition().decode())
    name = "karmada_scheduler_estimator_estimating_algorithm_duration_seconds"
    labels = (("result", "error"), ("step", "Total"), ("type", m.TYPE_MAX_AVAILABLE_COMPONENT_SETS))
    assert got[(f"{name}_count", labels)] == 1
    assert got[(f"{name}_bucket", tuple(sorted(labels + (("le", "+Inf"),))))] == 1
    assert got[(f"{name}_bucket", tuple(sorted(labels + (("le", "0.512"),))))] == 0
    assert got[("karmada_scheduler_estimator_estimating_request_total",
                (("result", "error"), ("type", m.TYPE_MAX_AVAILABLE_COMPONENT_SETS)))] == 1
