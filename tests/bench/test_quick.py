"""The benchmark harness runs end to end on tiny sizes and writes the documented JSON.

Smoke only: real estimator processes and a separate client process, but no timing is
ever asserted (the machine may be loaded); only the schema, the cross-checks and that
RESULTS.md keeps other people's sections.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import report
from benchmarks.run import RECORD_FIELDS
from estimator.estimate.estimate import ANSWERS_PER_SNAPSHOT

REPO = Path(__file__).resolve().parents[2]

SIZES = (40, 90)
SHAPES = ("pytorch-small", "affinity-tolerations")
MODES = ("best", "first-fit")


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench")
    command = [
        sys.executable, "-m", "benchmarks.run", "--quick", "--no-progress",
        "--sizes", *map(str, SIZES), "--shapes", *SHAPES, "--accuracy", "40",
        "--kernel-seconds", "0.02", "--naive-cap", "0.2", "--python-cap", "0.1",
        "--rpc-seconds", "0.05", "--concurrency", "1", "4",
        "--out", str(out), "--data-dir", str(out / "data"),
    ]  # fmt: skip
    # A hang guard only: the harness compiles its naive-rescan kernels on a stale cache (~1 min
    # under load) and the run took 86 s on half a loaded core; nothing here is timed.
    done = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=900, env=os.environ.copy())
    assert done.returncode == 0, done.stderr[-4000:]
    return out, json.loads((out / "latest.json").read_text()), done.stdout


def test_one_record_per_size_shape_and_mode_with_every_documented_field(quick_run):
    _, result, _ = quick_run
    keys = {(r["nodes"], r["shape"], r["mode"]) for r in result["records"]}
    assert keys == {(n, s, m) for n in SIZES for s in SHAPES for m in MODES}
    for record in result["records"]:
        assert set(RECORD_FIELDS) <= record.keys()
        for field in ("kernel_ms_p50", "kernel_ms_p99", "naive_ms", "rpc_ms_p50", "rpc_ms_p99", "rps", "rss_mb"):
            assert isinstance(record[field], (int, float)) and record[field] >= 0, field
        assert record["kernel_ms_p99"] >= record["kernel_ms_p50"]
        assert record["pods"] > record["nodes"]
        assert set(record["rpc"]) == set(record["rpc_repeat"]) == {"1", "4"}
        for field in ("rpc_repeat_ms_p50", "rpc_repeat_ms_p99", "rps_repeat", "rpc_floor_ratio",
                      "rpc_repeat_floor_ratio"):
            assert isinstance(record[field], float) and record[field] > 0, field
        # The ratios divide by health Checks sent between the one-caller run's own calls.
        for suffix in ("", "_repeat"):
            runs = record["rpc" + suffix]
            assert runs["1"]["floor_p50_ms"] > 0 and runs["4"]["floor_p50_ms"] is None
            assert record[f"rpc{suffix}_floor_ratio"] == record[f"rpc{suffix}_ms_p50"] / runs["1"]["floor_p50_ms"]
        # The new-answer runs cycled through more request variants than the answer memo holds.
        assert all(run["variants"] > ANSWERS_PER_SNAPSHOT * int(c) for c, run in record["rpc"].items())
        assert all(run["variants"] == 1 for run in record["rpc_repeat"].values())
        # The new-job run sent every timed call once, a shape the server had not answered.
        new = record["rpc_new"]
        assert new["calls"] <= new["variants"] and new["variant_mismatches"] == 0
        assert record["rpc_new_floor_ratio"] == record["rpc_new_ms_p50"] / new["floor_p50_ms"]
        assert record["plugin_new_ms_p50"] > 0


def test_answers_agree_across_kernel_naive_and_grpc(quick_run):
    _, result, _ = quick_run
    assert result["failed_checks"] == []
    for record in result["records"]:
        assert record["rpc_answer"] == record["rpc_answer_repeat"] == record["answer"] == record["sets"]
        assert record["rpc_variant_mismatches"] == 0
        if record["mode"] == "first-fit" and record["naive_complete"]:
            assert record["naive_sets"] == record["sets"]


def test_run_records_machine_load_and_accuracy(quick_run):
    _, result, _ = quick_run
    env = result["environment"]
    for key in ("command", "date", "nproc", "cpu_model", "loadavg_start", "loadavg_end"):
        assert env[key] not in (None, ""), key
    assert len(env["loadavg_start"]) == len(env["loadavg_end"]) == 3
    acc = result["accuracy"]
    assert acc["members"] == 40
    for mode in MODES:
        assert acc[mode]["over_promises"] == 0
        assert acc[mode]["witnesses_checked"] == 40
        assert 0.0 <= acc[mode]["optimal_rate"] <= 1.0
    gain = result["best_gain"]  # the default budget's share of the unlimited search's gain, GPU-first members
    assert gain["gain_sets"] <= gain["gain_sets_no_limit"] and 0.0 <= gain["share"] <= 1.0
    for size in result["sizes"]:
        assert set(size["servers"]) >= set(MODES)
        assert size["servers"]["best"]["warm"]["ready_s"] > 0
        # Tiny member files are below the state cache's threshold: every start parsed them.
        assert {size["servers"][m]["warm"]["objects"] for m in MODES} == {"parsed"}
        assert size["ready_warm"] == size["ready_warm_parsed"] and "ready_warm_cache" not in size


def test_results_md_is_written_and_the_run_prints_the_key_rows(quick_run):
    out, result, stdout = quick_run
    text = (out / "RESULTS.md").read_text()
    assert "## Speed and accuracy" in text and result["environment"]["cpu_model"] in text
    assert "pytorch-small:" in stdout and "accuracy (40 members)" in stdout


def test_regenerating_results_md_keeps_other_sections_verbatim(quick_run):
    _, result, _ = quick_run
    theirs = (
        "## Watch churn\n\nEvents/s: 12,345 (made by someone else)\n\n```\n## not a heading in code\n```\n\n"
        "## Load\n\n| a | b |\n|---|---|\n| 1 | 2 |\n"
    )
    existing = "# Old title\n\nold top\n\n## Speed and accuracy\n\nold figures\n\n" + theirs
    text = report.render(result, existing, "")
    assert "old figures" not in text and "old top" not in text
    assert theirs in text
    assert text.index("## Speed and accuracy") < text.index("## Watch churn") < text.index("## Load")
    assert report.render(result, text, "") == text  # stable when run again
