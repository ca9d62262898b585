"""The e2e fault timing and table (e2e/harness/faultmeasure.py), without an apiserver.

The clock is fake: time moves only when the loop sleeps, so the figures are exact.
"""

from __future__ import annotations

import prometheus_client
import pytest

from e2e.harness.faultmeasure import PREFIX, Row, Timing, counters, failures, labelled, row_markdown, table, time_fault
from estimator.service.metrics import WatchCollector


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


class _State:
    """What WatchCollector reads: per-kind counters as WatchClusterState.stats() gives them."""

    def __init__(self, **pod):
        base = {"synced": True, "resource_version": "7", "events": 40, "bookmarks": 3, "lists": 1, "list_pages": 1,
                "relists_gone": 0, "deleted_by_relist": 0, "malformed": 0, "saturated": 0,
                "throttled_seconds": 0.5, "errors": {}, "seconds_since_contact": 1.0}
        self.kinds = {"Node": dict(base, errors={"silent": 1}), "Pod": dict(base, **pod)}

    def stats(self):
        return self.kinds


def _exposition(state) -> str:
    registry = prometheus_client.CollectorRegistry()
    registry.register(WatchCollector(state))
    return prometheus_client.generate_latest(registry).decode()


def test_failures_are_read_from_the_estimators_own_exposition():
    # Node: 1 silent watch; Pod: 2 errors (1 + 1 reasons), 1 relist after 410, 3 malformed, 4 saturated.
    text = _exposition(_State(errors={"gone": 1, "connect": 1}, relists_gone=1, malformed=3, saturated=4))
    assert failures(text) == 1 + 2 + 1 + 3 + 4
    # Events, bookmarks and lists are not failures.
    assert failures(_exposition(_State(events=10_000, lists=9))) == 1
    assert counters(text)["karmada_scheduler_estimator_watch_events_total"] == 80


def test_watch_errors_by_reason():
    text = _exposition(_State(errors={"gone": 2, "silent": 3}))
    # Node's one silent watch and Pod's three add up; kinds are summed away.
    assert labelled(text, PREFIX + "errors_total", "reason") == {"silent": 4.0, "gone": 2.0}
    assert labelled(text, PREFIX + "no_such_metric", "reason") == {}


def test_a_line_that_is_not_a_sample_is_an_error():
    with pytest.raises(ValueError, match="not a Prometheus sample"):
        counters("{broken} 1\n")


def test_detection_and_convergence_are_timed_from_the_injection():
    clock = Clock()
    failed = [0.0]
    box: dict = {}

    def inject(since):
        box["since"] = since

    def probe_failures():
        if clock.now >= 103.0:  # the estimator notices 3 s after the injection
            failed[0] = 1.0
        return failed[0]

    def differences():
        if clock.now < 101.0:
            return None  # no reference yet (changes still being made)
        return ["sets[0] live 3 snapshot 2"] if clock.now < 105.0 else []

    timing = time_fault(inject, probe_failures, differences, 60, clock=clock, sleep=clock.sleep, every=0.5)
    assert timing.detected == 3.0 and timing.converged == 5.0 and timing.differences == []
    assert box["since"]() == 5.0


def test_a_fault_that_never_converges_reports_what_still_differs():
    clock = Clock()
    timing = time_fault(lambda since: None, lambda: 0.0, lambda: ["replicas[1] live 4 snapshot 3"], 10,
                        clock=clock, sleep=clock.sleep, every=1.0)
    assert timing.converged is None and timing.detected is None
    assert timing.differences == ["replicas[1] live 4 snapshot 3"]
    assert clock.now == 110.0  # gave up at the limit


def test_a_failure_counted_with_the_convergence_is_still_detected():
    clock = Clock()
    calls = [0]

    def probe_failures():
        calls[0] += 1
        return 0.0 if calls[0] <= 2 else 1.0  # before; first poll; then the final check

    timing = time_fault(lambda since: None, probe_failures, lambda: [], 10, clock=clock, sleep=clock.sleep)
    assert timing.converged == 0.0 and timing.detected == 0.0


def test_rows_say_what_was_measured():
    restart = Row("kill -9", Timing(detected=0.4, converged=12.34, back=9.0), True, True)
    churn = Row("churn", Timing(converged=0.3), False, True)
    dead = Row("dead link", Timing(detected=None, converged=None, differences=["x"]), True, None)
    assert row_markdown(restart) == "| kill -9 | real | 0.4 s | 12.3 s (3.3 s after it came back) | yes | yes |"
    assert row_markdown(churn) == "| churn | real | n/a (ordinary events, nothing fails) | 0.3 s | yes | yes |"
    assert row_markdown(dead) == "| dead link | real | never | never | no | not compared (did not converge) |"
    lines = table([restart, churn, dead]).splitlines()
    assert lines[0].count("|") == lines[1].count("|") == lines[2].count("|") == 7
    assert len(lines) == 5


def test_karmada_disagreement_is_a_no():
    assert row_markdown(Row("hostile", Timing(detected=0.1, converged=0.2), True, False)).endswith("| yes | no |")
