"""One component-set answer's metrics in one call (`observe_sets_answer`) export what
prometheus_client's own Counter and Histogram export for the same observations."""

from __future__ import annotations

import pytest
from prometheus_client import generate_latest

from estimator.service import metrics as m
from tests.service.test_metrics_hot import reference, samples

LATENCY = "karmada_scheduler_estimator_estimating_algorithm_duration_seconds"


@pytest.mark.parametrize("packing", ["best", "first-fit"])
def test_one_call_exports_the_plugins_the_optimality_and_the_request(packing):
    ours = m.EstimatorMetrics()
    registry, theirs = reference(ours)
    cases = [(5, 5, {"NodeResourceEstimator": 0.0003, "ResourceQuotaEstimator": 1.5e-05}),
             (3, 4, {"NodeResourceEstimator": 0.0001, "ResourceQuotaEstimator": 0.0}),
             (3, None, {"NodeResourceEstimator": 7.0}),
             (0, 9, None),  # a remembered answer: no plugin ran
             (2, 2, {})]
    for sets, bound, durations in cases:
        ours.observe_sets_answer(packing, sets, bound, durations, started=0.0)
        if durations:
            theirs[ours.extension_point_duration].labels(m.EXTENSION_COMPONENTS).observe(sum(durations.values()))
            for plugin, seconds in durations.items():
                theirs[ours.plugin_duration].labels(plugin, m.EXTENSION_COMPONENTS).observe(seconds)
        optimality = "unknown" if bound is None else ("proven" if sets >= bound else "unproven")
        theirs[ours.sets_answers].labels(packing, optimality).inc()
        if optimality == "unproven":
            theirs[ours.sets_bound_gap].labels(packing).observe((bound - sets) / bound)
        theirs[ours.requests].labels("success", m.TYPE_MAX_AVAILABLE_COMPONENT_SETS).inc()
    got, want = samples(ours.exposition().decode()), samples(generate_latest(registry).decode())
    assert got.keys() >= want.keys()
    for key, value in want.items():
        assert got[key] == pytest.approx(value, rel=1e-9), key
    # The request latency (not comparable: measured at the call) lands in the success total step.
    labels = (("result", "success"), ("step", "Total"), ("type", m.TYPE_MAX_AVAILABLE_COMPONENT_SETS))
    assert got[(f"{LATENCY}_count", labels)] == len(cases)
    assert got[(f"{LATENCY}_bucket", tuple(sorted(labels + (("le", "0.512"),))))] == 0  # started long ago
