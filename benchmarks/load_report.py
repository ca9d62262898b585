"""The "## Load" section of benchmarks/RESULTS.md, written from the results of benchmarks/load.py
(one run per churn mode): every figure in it is those runs'."""

from __future__ import annotations

from pathlib import Path

from benchmarks.resultsmd import replace_section

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "RESULTS.md"
SECTION = "Load"


def _run_text(result: dict) -> list[str]:
    o, churn = result["overall"], result["churn"]
    distinct = result["distinct_answers"]
    changed = sum(1 for n in distinct.values() if n > 1)
    if result["churn_mode"] == "watch":
        title = "Watch churn (list/watch, the production path)"
        churn_text = (f"a fake API server (tests/support/fakekube.py) fed the estimator's list/watch; during the run "
                      f"{churn.get('pod_created', 0):,} pods were created and {churn.get('pod_deleted', 0):,} deleted "
                      f"on random nodes and {churn.get('node_updated', 0)} nodes relabelled")
    else:
        title = "Snapshot churn (files reloaded by SIGHUP)"
        churn_text = (f"--objects files; {churn['reloads_sent']} SIGHUP reloads during the run "
                      f"({churn['reloads_done']} logged done), each rereading the member file and a file of "
                      f"{churn['pods_per_reload']:,} new pods")
    lines = [
        f"### {title}\n",
        f"Churn: {churn_text}.\n",
        f"- **errors: {result['errors']}** of {o['calls'] + result['errors']:,} calls"
        + (f" ({result['error_kinds']})" if result["errors"] else ""),
        f"- {o['rps']:,} calls/s; latency p50 {o['p50']} ms, p90 {o['p90']} ms, **p99 {o['p99']} ms**, "
        f"max {o['max']} ms",
        f"- ready {result['ready_seconds']} s after start; alive at the end: {result['estimator_alive_at_end']}; "
        f"exit code after SIGTERM: {result['estimator_exit_code']}",
        f"- load average (1/5/15 min) at start {tuple(round(x, 1) for x in result['loadavg_start'])}, "
        f"at end {tuple(round(x, 1) for x in result['loadavg_end'])}; {result['date']}",
        "",
        "| method | calls | calls/s | p50 ms | p90 ms | p99 ms | max ms |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for method, f in result["by_method"].items():
        if f["calls"]:
            lines.append(f"| {method} | {f['calls']:,} | {f['rps']} | {f['p50']} | {f['p90']} | {f['p99']} | "
                         f"{f['max']} |")
    lines += [
        f"| all | {o['calls']:,} | {o['rps']} | {o['p50']} | {o['p90']} | {o['p99']} | {o['max']} |",
        "",
        f"Churn reached the answers: {changed} of {len(distinct)} request types saw their answer change during "
        f"the run (up to {max(distinct.values(), default=0)} distinct values; the GPU jobs' answers are bounded by "
        f"GPUs the churn pods do not use). GetUnschedulableReplicas(web/frontend) answered "
        f"{result['unschedulable_answers']} (2 pods stuck).",
        "",
    ]
    return lines


def section(results: list[dict]) -> str:
    first = results[0]
    lines = [
        f"## {SECTION}\n",
        f"One estimator process serving a {first['nodes']:,}-node member ({first['pods']:,} pods, "
        f"benchmarks/members.py seed 1) to {first['callers']} callers on one gRPC channel for "
        f"{first['seconds']:.0f} s per run, with churn. Request mix: 70% MaxAvailableComponentSets over the "
        "benchmark job shapes (a fifth of them with 2 assumed workloads), 20% MaxAvailableReplicas, 10% "
        "GetUnschedulableReplicas. Every call has a 10 s deadline; any non-OK status is an error.\n",
        f"- command: `{first['command']}`",
        f"- commit {first['commit']}; machine: {first['machine']}; {first['software']}",
        f"- estimator flags: `{first['estimator_flags']}` (as the rendered manifests), packing best",
        "- the callers (Python threads), the estimator and the churn source share the machine's cores: this "
        f"is a saturation test ({first['callers']} callers keep every core busy, so latency is mostly queueing), "
        "pessimistic for a dedicated pod; a p99 far above p50 mostly measures CPU contention (see the load "
        "averages).",
        "",
    ]
    for result in results:
        lines += _run_text(result)
    return "\n".join(lines)


def write_section(text: str, path: Path = RESULTS) -> None:
    """Replace this module's `## Load` section (or append it); leave every other section alone."""
    replace_section(path, f"## {SECTION}", text)
