"""Side by side with Karmada's estimator, in one run, on a real kube-apiserver.

    PYTHONPATH=. .venv/bin/python -m benchmarks.side_by_side [--nodes 1000,5000,10000] [--calls 10,3,2]

Needs the peers `make e2e` builds (.e2e/bin/). The sizes grow one member: each size adds nodes
(and their pods) to the previous one, since the generator's first N nodes are the same for every
size, so the apiserver is written once up to the largest. Per member size: both estimators watch the
same apiserver; time from process start to ready; MaxAvailableComponentSets latency p50/p99
measured by Karmada's own client (estclient, one cluster per call) for each job shape; RSS
of each process after the calls. Writes the "Side by side with Karmada's estimator"
section of benchmarks/RESULTS.md and benchmarks/results/side_by_side.json.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from benchmarks.resultsmd import percentile, replace_section
from benchmarks.shapes import NAMESPACE, SHAPES
from e2e.harness import procs
from e2e.harness.versions import versions
from e2e.harness.cluster import KubeBed
from e2e.harness.estimators import karmadas, ours
from e2e.harness.large import apply_parallel, generate_large
from e2e.harness.members import MemberState
from e2e.harness.oracle import Reference
from estimator.core.model import ReplicasQuery
from e2e.harness.populate import Populator

REPO = Path(__file__).resolve().parents[1]
SHAPE_NAMES = ("pytorch-small", "pytorch-big", "ray", "flink")
SECTION = "## Side by side with Karmada's estimator"
NOTE = ("The member grows from size to size (each adds nodes and their pods to the previous one); calls each: "
        "MaxAvailableComponentSets calls per shape and estimator at that size (fewer at larger sizes, where one "
        "call of Karmada's takes minutes; p50 and p99 are computed here from every call's latency as everywhere in this file, so of two calls the p50 is their mean and the p99 just under the slower). karmada-scheduler "
        "gives up on an estimator after 3 s by default, so a Karmada figure above 3,000 ms is an answer the scheduler "
        "would not wait for. Start to ready: from process start until its health endpoint answers (ours: `/readyz`, which waits for the first list of every kind and compiled kernels; Karmada's `/healthz` answers before its informers have synced). RSS is read from /proc after the calls. With few calls per shape the p99 is close to the maximum.")


def _rss_mb(pid: int) -> float:
    text = Path(f"/proc/{pid}/status").read_text()
    return int(re.search(r"VmRSS:\s+(\d+)", text).group(1)) / 1024


def _calls(shape: str, calls: int) -> dict:
    query = SHAPES[shape][1]
    components = [{"name": c.name, "replicas": c.replicas, "replicaRequirements": {"resourceRequest": {
        n: (f"{a}m" if n == "cpu" else str(a)) for n, a in c.shape.requests}}} for c in query.components]
    return {"id": shape, "method": "MaxAvailableComponentSets", "clusters": ["member-e2e"], "each": True,
            "namespace": NAMESPACE, "components": components}


SEED = 1
# One call of Karmada's estimator for the Flink shape takes minutes at 10k nodes here.
CALL_TIMEOUT = "3600s"


def measure(bed: KubeBed, pop: Populator, work: Path, karmada_bin: Path, estclient: Path, nodes: int,
            calls: int, have: dict) -> dict:
    state = generate_large(SEED, nodes)
    # Only what the previous (smaller) size did not write: its nodes and pods are a prefix of these.
    new = MemberState(seed=SEED, nodes=state.nodes[have["nodes"]:], pods=state.pods[have["pods"]:])
    populate_s = apply_parallel(pop, new)
    have.update(nodes=len(state.nodes), pods=len(state.pods))
    dump = work / f"bench-{nodes}.json"
    pop.dump(dump)
    slots = Reference(dump).replicas(ReplicasQuery(None))
    row: dict = {"nodes": nodes, "pods": len(state.pods), "populate_s": round(populate_s, 1), "estimators": {}}
    for name, make in (("ours (best)", lambda: ours(bed.kubeconfig, work, "best", name=f"bench-ours-{nodes}")),
                       ("karmada", lambda: karmadas(karmada_bin, bed.kubeconfig, work, name=f"bench-karmada-{nodes}"))):
        est = make()
        started = time.monotonic()
        est.start(timeout=900)
        ready_s = time.monotonic() - started
        # Serving is not the same as holding the whole member: latencies are measured once
        # the free pod slots it reports equal those of the dumped objects.
        procs.wait_for(f"{est.name} holds the member", lambda: est.replicas(ReplicasQuery(None)).value == slots, 900)
        figures = {"ready_s": round(ready_s, 2), "shapes": {}}
        for shape in SHAPE_NAMES:
            report = _repeat(estclient, est.port, shape, calls)
            result = report["results"][0]
            summary = result.get("latencySummaryNs", {})
            answer = (result.get("clusters") or [{}])[0]
            latency_ms = [ns / 1e6 for ns in result.get("latencyNs") or []]  # estclient's own p50/p99 are nearest-rank
            figures["shapes"][shape] = {"p50_ms": percentile(latency_ms, 50) if latency_ms else 0.0,
                                        "p99_ms": percentile(latency_ms, 99) if latency_ms else 0.0,
                                        "count": summary.get("count", 0), "sets": answer.get("value"),
                                        "error": answer.get("error", "")}
        figures["rss_mb"] = round(_rss_mb(est.proc.pid), 1)
        est.stop()
        row["estimators"][name] = figures
    return row


def _repeat(estclient: Path, port: int, shape: str, calls: int) -> dict:
    request = {"estimators": {"member-e2e": {"address": f"127.0.0.1:{port}"}}, "timeout": CALL_TIMEOUT, "repeat": calls,
               "calls": [_calls(shape, calls)]}
    import subprocess

    done = subprocess.run([str(estclient)], input=json.dumps(request).encode(), capture_output=True, timeout=4 * 3600)
    if done.returncode != 0:
        raise RuntimeError(done.stderr.decode(errors="replace")[-2000:])
    return json.loads(done.stdout)


def write_section(rows: list[dict], command: str, karmada_version: str) -> None:
    lines = [SECTION, "", f"Written by `benchmarks/side_by_side.py`. **Date:** "
             f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M UTC}. **Machine:** {os.cpu_count()} cores shared with other "
             f"engineers' work (1-minute load average {os.getloadavg()[0]:.1f} at the end), so absolute figures are "
             "noisy; both estimators ran in the same conditions, one after the other.", "",
             f"**Command:** `{command}`", "",
             f"Both watch the same kube-apiserver (built by `make e2e`) holding the member; latencies are "
             f"MaxAvailableComponentSets calls made by Karmada's own client (`pkg/estimator/client`, Karmada "
             f"{karmada_version}) to one estimator at a time; ours runs `--packing best`.", "",
             "| nodes | shape | calls each | ours p50 / p99 ms | Karmada p50 / p99 ms | p50 ratio | sets ours / Karmada |",
             "|---|---|---|---|---|---|---|"]
    for row in rows:
        o, k = row["estimators"]["ours (best)"], row["estimators"]["karmada"]
        for shape in SHAPE_NAMES:
            a, b = o["shapes"][shape], k["shapes"][shape]
            ratio = f"{b['p50_ms'] / a['p50_ms']:.0f}x" if a["p50_ms"] else "-"
            lines.append(f"| {row['nodes']:,} | {shape} | {b['count']} | {a['p50_ms']:.2f} / {a['p99_ms']:.2f} | "
                         f"{b['p50_ms']:.1f} / {b['p99_ms']:.1f} | {ratio} | {a['sets']} / {b['sets']}"
                         f"{' (' + b['error'][:60] + ')' if b['error'] else ''} |")
    lines += ["", "| nodes | pods | start to ready: ours / Karmada | RSS: ours / Karmada (ratio) |", "|---|---|---|---|"]
    for row in rows:
        o, k = row["estimators"]["ours (best)"], row["estimators"]["karmada"]
        lines.append(f"| {row['nodes']:,} | {row['pods']:,} | {o['ready_s']:.1f} s / {k['ready_s']:.1f} s | "
                     f"{o['rss_mb']:.0f} MB / {k['rss_mb']:.0f} MB ({o['rss_mb'] / k['rss_mb']:.2f}x) |")
    lines += ["", NOTE, ""]
    replace_section(REPO / "benchmarks" / "RESULTS.md", SECTION, "\n".join(lines))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.side_by_side")
    p.add_argument("--nodes", default="1000,5000,10000", help="member sizes, increasing")
    p.add_argument("--calls", default="10,3,2",
                   help="calls per shape and estimator: one number, or one per size (Karmada is slow at 10k)")
    p.add_argument("--work", type=Path, default=REPO / ".e2e" / "bench")
    args = p.parse_args(argv)
    try:
        sizes = [int(x) for x in args.nodes.split(",") if x.strip()]
        calls_per_size = [int(x) for x in args.calls.split(",") if x.strip()]
    except ValueError:
        p.error(f"--nodes {args.nodes!r} / --calls {args.calls!r}: comma-separated whole numbers expected")
    if len(calls_per_size) == 1:
        calls_per_size *= len(sizes)
    if len(calls_per_size) != len(sizes) or min(calls_per_size, default=1) < 1:
        p.error(f"--calls {args.calls!r}: one positive number, or one per --nodes size ({len(sizes)})")
    if sizes != sorted(set(sizes)) or not sizes:
        p.error(f"--nodes {args.nodes!r}: sizes must be increasing (each size adds to the previous member)")
    v = versions()
    bin_dir = REPO / ".e2e" / "bin"
    procs.install_signal_handlers()
    import shutil

    shutil.rmtree(args.work, ignore_errors=True)
    args.work.mkdir(parents=True)
    rows = []
    try:
        bed = KubeBed(bin_dir, args.work, v["KUBERNETES_VERSION"], v["ETCD_VERSION"]).start()
        pop = Populator(bed.kubeconfig)
        pop.ensure_namespaces(("team-a", "team-b", NAMESPACE))
        have = {"nodes": 0, "pods": 0}
        for nodes, calls in zip(sizes, calls_per_size):
            rows.append(measure(bed, pop, args.work, bin_dir / f"karmada-scheduler-estimator-{v['KARMADA_VERSION']}",
                                bin_dir / f"estclient-{v['KARMADA_VERSION']}", nodes, calls, have))
            print(json.dumps(rows[-1]), flush=True)
    finally:
        procs.stop_all()
    out = REPO / "benchmarks" / "results" / "side_by_side.json"
    out.write_text(json.dumps(rows, indent=1))
    write_section(rows, "PYTHONPATH=. .venv/bin/python -m benchmarks.side_by_side " + shlex.join(sys.argv[1:] if argv is None else argv),
                  v["KARMADA_VERSION"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
