"""The hostile soak's smoke run (benchmarks/soak.py --quick): a few seconds of every hostile
request shape against a small member while well-formed calls go on. Behaviour only, nothing
timed: the estimator lives, answers every well-formed call and every health check (within
a generous deadline), refuses what it must with the right codes, and stays within its
memory budget + 300 MB."""

from __future__ import annotations

from benchmarks import soak


def test_a_quick_soak_keeps_the_estimator_alive_answering_and_within_its_memory():
    figures = soak.run(["--quick", "--budget-mb", "256"])
    assert figures["server_alive"]
    assert figures["health_ok"] > 0 and figures["health_failed"] == 0
    assert figures["wellformed_calls"] > 0 and figures["wellformed_failures"] == {}
    assert figures["peak_rss_mb"] <= figures["budget_mb"] + soak.RSS_MARGIN_MB
    codes = figures["hostile"]
    for refused in ("name-3.9MB", "operator-3MB", "newline-cluster", "undecodable"):
        assert {key.split()[1] for key in codes if key.startswith(refused + " ")} <= {
            "INVALID_ARGUMENT", "RESOURCE_EXHAUSTED"}, codes
    assert any(key.endswith(" OK") for key in codes), "valid hostile requests are answered when they fit"
    assert not any(key.endswith((" INTERNAL", " UNKNOWN", " UNAVAILABLE")) for key in codes), codes
    assert figures["missed"] == []
