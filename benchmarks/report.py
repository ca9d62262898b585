"""benchmarks/results/latest.json -> benchmarks/RESULTS.md and the PNG plots.

    python -m benchmarks.report [--json benchmarks/results/latest.json] [--md benchmarks/RESULTS.md]

RESULTS.md is shared: this module owns the text before the first `## ` heading and the
`## Speed and accuracy` section; every other `## ` section (colleagues' "Watch churn",
"Load", ...) is kept verbatim, in place. Every figure written here comes from the JSON.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from benchmarks.resultsmd import PERCENTILE_METHOD, split_top, splice_section

REPO = Path(__file__).resolve().parents[1]
SECTION = "Speed and accuracy"
TARGET_NODES = 10_000
BIG_NODES = 50_000
PLOTS = {
    "latency": "latency_vs_nodes.png",
    "speedup": "speedup_vs_nodes.png",
    "accuracy": "accuracy.png",
    "rpc": "rpc_vs_nodes.png",
}


# --- formatting ---------------------------------------------------------------------------


def _ms(value, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.{digits}f}"


def _x(value, lower_bound: bool = False) -> str:
    if value is None:
        return "–"
    text = f"{value:,.0f}×" if value >= 10 else f"{value:.1f}×"
    return ("≥ " + text) if lower_bound else text


def _n(value) -> str:
    return "–" if value is None else f"{value:,}"


def _s(value) -> str:
    return "–" if value is None else f"{value:.2f} s"


def _table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def _record(result: dict, nodes: int, shape: str, mode: str) -> dict | None:
    for r in result["records"]:
        if r["nodes"] == nodes and r["shape"] == shape and r["mode"] == mode:
            return r
    return None


def _size(result: dict, nodes: int) -> dict | None:
    return next((s for s in result["sizes"] if s["nodes"] == nodes), None)


def _naive_cell(r: dict) -> str:
    text = _ms(r["naive_ms"])
    return f"> {text} (capped)" if not r["naive_complete"] else text


def _python_cell(r: dict) -> str:
    if r.get("python_ms") is not None:
        return _ms(r["python_ms"]) + ("" if r.get("python_complete") else " (capped)")
    if r.get("python_predicted_ms") is not None:
        return f"skipped (~{r['python_predicted_ms'] / 1e3:,.0f} s predicted)"
    return "skipped"


# --- targets --------------------------------------------------------------------------------


def targets(result: dict) -> list[dict]:
    """The targets of docs/scenario.md, each with what was measured and whether it is met."""
    shape = result["target_shape"]
    out = []

    def add(name, measured, met, where, key):
        out.append({"target": name, "measured": measured, "met": met, "where": where, "key": key})

    for mode in ("best", "first-fit"):
        r10 = _record(result, TARGET_NODES, shape, mode)
        r50 = _record(result, BIG_NODES, shape, mode)
        if r10:
            add(f"kernel p50 ≤ 0.5 ms at 10k nodes ({mode})", f"p50 {_ms(r10['kernel_ms_p50'])} ms, "
                f"p99 {_ms(r10['kernel_ms_p99'])} ms", r10["kernel_ms_p50"] <= 0.5, "docs/scenario.md", "kernel")
            add(f"≥ 200× the naive rescanning first-fit at 10k ({mode})",
                f"{_x(r10['speedup'], r10['speedup_is_lower_bound'])} ({_ms(r10['naive_ms'], 1)} ms vs "
                f"{_ms(r10['kernel_ms_p50'])} ms)", r10["speedup"] is not None and r10["speedup"] >= 200,
                "docs/scenario.md", "speedup")
            if r10.get("rpc_ms_p50") is not None:
                add(f"RPC p50 ≤ 1 ms, p99 ≤ 3 ms at 10k, 1 caller ({mode})",
                    f"p50 {_ms(r10['rpc_ms_p50'])} ms, p99 {_ms(r10['rpc_ms_p99'])} ms",
                    r10["rpc_ms_p50"] <= 1.0 and r10["rpc_ms_p99"] <= 3.0, "docs/scenario.md", "rpc")
                add(f"≥ 1,000 estimates/s with 16 callers at 10k ({mode})", f"{r10['rps']:,.0f} /s",
                    r10["rps"] >= 1000, "docs/scenario.md", "rps")
        if r50:
            add(f"kernel p50 ≤ 3 ms at 50k nodes ({mode})", f"p50 {_ms(r50['kernel_ms_p50'])} ms, "
                f"p99 {_ms(r50['kernel_ms_p99'])} ms", r50["kernel_ms_p50"] <= 3.0, "docs/scenario.md", "kernel")
    size = _size(result, TARGET_NODES)
    if size and size.get("ready_warm"):
        warm = size["ready_warm"]
        add("start-to-ready ≤ 3 s with a warm numba cache (10k nodes)",
            f"median {_s(warm['median_s'])} of {len(warm['samples_s'])} starts ({_s(warm['min_s'])} – "
            f"{_s(warm['max_s'])})", warm["median_s"] <= 3.0, "docs/scenario.md", "ready")
    acc = result["accuracy"]
    over = acc["best"]["over_promises"] + acc["first-fit"]["over_promises"]
    add("0 over-promises on the random small members (both modes, witnesses re-checked)",
        f"{over} of {acc['members']:,} × 2", over == 0, "docs/scenario.md", "accuracy")
    below = acc["best_below_first_fit"]
    add("best never below first-fit", f"{below} below", below == 0, "docs/semantics.md", "accuracy")
    return out


# --- explanations of misses -----------------------------------------------------------------

_FIXES = {
    "grpc_floor": "the Python gRPC round trip itself (the health Check, which does no estimator work, costs "
                  "this much between these two processes on this machine); a grpc.aio server, or fewer "
                  "thread hand-offs per call, lowers it; on a loaded 2-core box the client and the server also "
                  "compete for the same cores",
    "kernel": "the packing kernel (see the kernel profile)",
    "gather_columns": "copying the needed columns of every node (`noderesource._gather`) on every request; "
                      "caching the gathered array per (snapshot version, columns) and handing the kernel a copy "
                      "only where it consumes it (first-fit) removes most of it",
    "request_rows_and_masks": "building request rows and node masks per request (`noderesource._Packing`)",
    "decode_and_convert": "protobuf decode and wire -> model conversion (`convert.component_sets_query`)",
    "quota_plugin": "the ResourceQuota plugin",
    "other": "servicer bookkeeping (metrics, framework, result objects)",
}


def _rpc_explanation(result: dict, mode: str) -> str:
    r = _record(result, TARGET_NODES, result["target_shape"], mode)
    prof = (result.get("profiles") or {}).get("estimate", {}).get(mode)
    size = _size(result, TARGET_NODES)
    floor = ((size or {}).get("servers", {}).get(mode, {}).get("grpc_floor") or {})
    if not r or not prof:
        return ""
    med = prof["median_ms"]
    parts = {
        "grpc_floor": floor.get("p50_ms"),
        "decode_and_convert": med["decode_and_convert"],
        "gather_columns": med["gather_columns"],
        "request_rows_and_masks": med["request_rows_and_masks"],
        "kernel": med["kernel"],
        "quota_plugin": med["quota_plugin"],
    }
    known = sum(v for v in parts.values() if v)
    parts["other"] = max(0.0, (floor.get("p50_ms") or 0) + med["servicer_total"] - known)
    ranked = sorted(((v, k) for k, v in parts.items() if v), reverse=True)
    lines = [f"RPC p50 {_ms(r['rpc_ms_p50'])} ms ({mode}) ≈ gRPC floor {_ms(floor.get('p50_ms'))} ms + servicer "
             f"{_ms(med['servicer_total'])} ms in-process. Largest parts:"]
    for value, key in ranked[:4]:
        lines.append(f"- {_ms(value)} ms — {_FIXES[key]}")
    return "\n".join(lines)


def _ready_explanation(result: dict) -> str:
    size = _size(result, TARGET_NODES)
    if not size or not size.get("servers"):
        return ""
    warm = size["servers"].get("best", {}).get("warm", {})
    load = (result.get("profiles") or {}).get("load", {})
    imports = result["environment"].get("server_imports_s")
    median = (size.get("ready_warm") or {}).get("median_s")
    lines = [f"**Start-to-ready at 10k nodes** (median {_s(median)}). One warm start of the default (best) server: "
             f"ready {_s(warm.get('ready_s'))} = process start to state loaded {_s(warm.get('start_to_loaded_s'))} "
             f"+ kernel warm-up {_s(warm.get('kernels_s'))} (loaded from the numba cache, and only after the "
             f"load). Of the first part, a fresh interpreter importing the server's modules takes "
             f"{_s(imports)}; loading the {size['file_mb']:.0f} MB file ({size['pods']:,} pods, {size['nodes']:,} "
             f"nodes) in-process takes {_s(size.get('load_in_process_s'))}."]
    if load:
        lines.append(
            f"Inside the load: `json.loads` {_s(load['json_parse_s'])}; the rest is per-object Python in "
            f"`snapshot_source._load_file` -> `cache.upsert_pod` -> `podrequests.pod_requests`. Under cProfile "
            f"({_s(load['profiled_load_s'])}) {load.get('typing_instancecheck_share', 0):.0%} of it is "
            "`isinstance(x, Mapping)` with `Mapping` imported from `typing` (cache.py, podrequests.py, "
            "snapshot_source.py): each check goes through `typing._BaseGenericAlias.__instancecheck__` and "
            "`__subclasscheck__` (~300 ns, against ~30 ns for `isinstance(x, dict)`).\n\n"
            f"What would fix it (owner of estimator/): (0) the JSON parse itself is "
            f"{load['json_parse_s'] / max(size.get('load_in_process_s') or 1, 1e-9):.0%} of the in-process load: "
            "a faster parser (orjson parses the same bytes several times faster; a new dependency, the owner's "
            "call); (1) a `type(x) is dict` fast path, or "
            "`collections.abc.Mapping`, in those per-object checks; (2) start `kernels.warmup()` in a thread "
            "before the files are loaded instead of after `EstimatorServer.start()` (it overlaps the load); "
            "(3) parse each pod's requests once per distinct container spec (most pods of a workload share "
            "it) and skip `_describe()` formatting unless an error is raised; (4) for restarts, an `.npz` of "
            "the parsed arrays next to the snapshot file, reused when its mtime matches.")
    return "\n".join(lines)


# --- RESULTS.md -----------------------------------------------------------------------------


def _top(result: dict, md_path: Path) -> str:
    env = result["environment"]
    start, end = env["loadavg_start"], env["loadavg_end"]
    busy = max(start[0], end[0], start[1], end[1]) >= 0.5 * (env["nproc"] or 1)
    shared = (
        f"**Shared machine:** the load average was {start[0]:.2f} / {start[1]:.2f} / {start[2]:.2f} (1/5/15 min) "
        f"at the start and {end[0]:.2f} / {end[1]:.2f} / {end[2]:.2f} at the end on {env['nproc']} cores: the "
        "CPUs were shared (by the benchmark's own server and client processes, and any other work on the "
        "machine), so timings are noisy and biased upwards."
        if busy else
        f"Load average {start[0]:.2f} / {start[1]:.2f} / {start[2]:.2f} at the start and {end[0]:.2f} / "
        f"{end[1]:.2f} / {end[2]:.2f} at the end (1/5/15 min) on {env['nproc']} cores."
    )
    quick = "\n\n**Quick smoke run: tiny sizes and budgets, not the committed figures.**" if result.get("quick") else ""
    return f"""# Benchmark results

<!-- The text down to the first "## " heading and the "## {SECTION}" section are generated by
benchmarks/report.py from benchmarks/results/latest.json (`make bench`). Other "## " sections belong
to their authors and are preserved verbatim when this file is regenerated. -->

- **Command:** `{env['command']}`
- **Date:** {env['date']} (total wall time {env['wall_s'] / 60:.1f} min)
- **Machine:** {env['nproc']} cores (nproc), {env['cpu_model']}, {env['memory_gb']} GB RAM; Python {env['python']},
  numpy {env['numpy']}, numba {env['numba']}, grpcio {env['grpcio']}
- **Code:** commit `{env['git_commit']}` ({env['git_dirty_files']} tracked files modified in the work tree at run time)
- **Percentiles:** {PERCENTILE_METHOD}.

{shared}{quick}

"""


def _section(result: dict, plot_prefix: str) -> str:
    shape = result["target_shape"]
    sizes = sorted({r["nodes"] for r in result["records"]})
    out = [f"## {SECTION}\n"]
    out.append("Generated from `benchmarks/results/latest.json`; the run printed the same figures. "
               "Method and definitions are at the end of this section.\n")

    # Targets.
    rows = [[t["target"], t["measured"], "met" if t["met"] else "**MISSED**", t["where"]] for t in targets(result)]
    out.append("### Targets\n")
    out.append(_table(["target", "measured", "verdict", "from"], rows) + "\n")
    missed = {t["key"] for t in targets(result) if not t["met"]}
    if missed:
        out.append("Why the missed targets are missed, and what would fix them, is under *Profiles* below.\n")

    # Key figures.
    out.append(f"### Key figures: {shape} ({result['shapes'].get(shape, '')})\n")
    rows = []
    for n in sizes:
        size = _size(result, n) or {}
        for mode in ("best", "first-fit"):
            r = _record(result, n, shape, mode)
            if not r:
                continue
            rows.append([
                _n(n), _n(r["pods"]), mode, _n(r["sets"]),
                _ms(r["kernel_ms_p50"]), _ms(r["kernel_ms_p99"]), _ms(r["plugin_ms_p50"]),
                _naive_cell(r), _x(r["speedup"], r["speedup_is_lower_bound"]), _python_cell(r),
                _ms(r.get("rpc_ms_p50")), _ms(r.get("rpc_ms_p99")),
                "–" if r.get("rps") is None else f"{r['rps']:,.0f}",
                _ms(r.get("rss_mb"), 0), _s(r.get("ready_warm_s")), _s(r.get("ready_cold_s")),
            ])
    out.append(_table(["nodes", "pods", "mode", "sets", "kernel p50 ms", "kernel p99 ms", "plugin path p50 ms",
                       "naive rescan ms", "speedup", "plain-Python rescan ms", "RPC p50 ms (1 caller)",
                       "RPC p99 ms (1 caller)", "estimates/s (16 callers)", "server RSS MB", "ready (warm)",
                       "ready (cold)"], rows) + "\n")

    # Accuracy.
    acc = result["accuracy"]
    out.append(f"### Accuracy on {acc['members']:,} random small members (≤ {acc['max_nodes']} nodes, "
               f"≤ {acc['max_components']} components)\n")
    rows = []
    for mode in ("first-fit", "best"):
        a = acc[mode]
        rows.append([mode, f"{a['optimal']:,} ({a['optimal_rate']:.2%})", f"{a['optimal_rate_nonzero']:.2%}",
                     f"{a['mean_gap_sets']:.4f}", f"{a['mean_relative_gap']:.2%}", str(a["max_gap_sets"]),
                     f"**{a['over_promises']}**", f"{a['witnesses_checked']:,}"])
    out.append(_table(["mode", "reaches the exhaustive optimum", "… of members with optimum > 0",
                       "mean gap (sets)", "mean relative gap (optimum > 0)", "max gap", "over-promises",
                       "witnesses re-checked"], rows) + "\n")
    hist = acc["optimum_histogram"]
    out.append(f"Optimum distribution: " + ", ".join(f"{k} sets: {v:,}" for k, v in hist.items())
               + f". First-fit equals Karmada's rescan (tests/naive.first_fit) on all but "
               f"{acc['parity_mismatches']} members; best is above first-fit on {acc['best_above_first_fit']:,} "
               f"and below it on {acc['best_below_first_fit']}.\n")

    # Plots.
    out.append("### Plots\n")
    if result.get("plots"):
        for key, title in (("latency", "Kernel latency vs nodes (log-log), per mode, with the naive references"),
                           ("speedup", "Speedup over the naive rescanning first-fit vs nodes"),
                           ("rpc", "End-to-end gRPC latency and throughput vs nodes"),
                           ("accuracy", "Accuracy against the exhaustive optimum")):
            if key in result["plots"]:
                out.append(f"![{title}]({plot_prefix}{result['plots'][key]})\n")
    else:
        out.append("Plots were not drawn (matplotlib missing: `make bench` installs the `bench` extra).\n")

    # All cases.
    out.append("### Every case\n")
    rows = []
    for r in sorted(result["records"], key=lambda r: (r["shape"], r["nodes"], r["mode"])):
        rpc = r.get("rpc") or {}
        rows.append([r["shape"], _n(r["nodes"]), r["mode"], _n(r["sets"]), _ms(r["kernel_ms_p50"]),
                     _ms(r["kernel_ms_p99"]), _ms(r["plugin_ms_p50"]), _naive_cell(r),
                     _x(r["speedup"], r["speedup_is_lower_bound"]), _python_cell(r),
                     " / ".join(f"{_ms(rpc[c]['p50_ms'])}, {_ms(rpc[c]['p99_ms'])}" for c in rpc) or "–",
                     " / ".join(f"{rpc[c]['rps']:,.0f}" for c in rpc) or "–"])
    conc = next((list((r.get("rpc") or {}).keys()) for r in result["records"] if r.get("rpc")), [])
    out.append(_table(["shape", "nodes", "mode", "sets", "kernel p50", "kernel p99", "plugin p50", "naive ms",
                       "speedup", "plain-Python ms", f"RPC p50, p99 ms ({' / '.join(conc)} callers)",
                       f"estimates/s ({' / '.join(conc)} callers)"], rows) + "\n")
    out.append("Shapes: " + "; ".join(f"**{k}**: {v}" for k, v in result["shapes"].items()) + ".\n")

    # Start-up and memory.
    out.append("### Start-to-ready and memory\n")
    rows = []
    for size in result["sizes"]:
        servers = size.get("servers") or {}
        for mode in ("best", "first-fit", "cold"):
            s = servers.get(mode)
            if not s:
                continue
            phases = s.get("warm", s)
            rows.append([_n(size["nodes"]), _n(size["pods"]), f"{size['file_mb']:.0f}",
                         "cold (empty numba cache), best" if mode == "cold" else f"warm, {mode}",
                         _s(phases.get("ready_s")), _s(phases.get("start_to_loaded_s")), _s(phases.get("kernels_s")),
                         _ms(s.get("rss_mb"), 0), _ms(s.get("rss_peak_mb"), 0),
                         _ms((s.get("grpc_floor") or {}).get("p50_ms"))])
        warm = size.get("ready_warm")
        if warm:
            rows.append([_n(size["nodes"]), _n(size["pods"]), f"{size['file_mb']:.0f}",
                         f"**warm: median of {len(warm['samples_s'])} starts**",
                         f"**{_s(warm['median_s'])}** ({_s(warm['min_s'])} – {_s(warm['max_s'])})",
                         "", "", "", "", ""])
    if rows:
        out.append(_table(["nodes", "pods", "file MB", "start", "ready", "start → state loaded", "kernel warm-up",
                           "RSS MB (after RPCs)", "peak RSS MB", "gRPC floor p50 ms"], rows) + "\n")
        rows = [[_n(size["nodes"]), _s(size.get("load_in_process_s")),
                 _ms((size.get("gc") or {}).get("baseline_ms"), 1), _ms((size.get("gc") or {}).get("loaded_ms"), 1),
                 _ms((size.get("gc") or {}).get("after_freeze_ms"), 2)] for size in result["sizes"]]
        out.append(_table(["nodes", "load in-process (harness)", "full GC, fresh process, no member (ms)",
                           "full GC with the member loaded (ms)", "same after gc.freeze() (ms)"], rows) + "\n")
        out.append("*ready*: from spawning `python -m estimator --snapshot FILE` to the gRPC health service "
                   "answering SERVING. *start → state loaded* and *kernel warm-up* come from the server's own log. "
                   "*gRPC floor*: the health Check round trip from the same client process, no estimator work. "
                   f"A fresh interpreter importing the server's modules takes "
                   f"{_s(result['environment'].get('server_imports_s'))}. A full garbage collection walks every "
                   "tracked object the process holds (measured by `benchmarks/gcpause.py` in a fresh process that "
                   "loads the member as the server does); a request that triggers a generation-2 collection waits "
                   "that long, a candidate for RPC p99 spikes on big members. `gc.freeze()` after loading takes "
                   "the loaded objects out of every later collection.\n")

    # Profiles.
    profiles = result.get("profiles") or {}
    out.append("### Profiles\n")
    for mode in ("best", "first-fit"):
        prof = (profiles.get("estimate") or {}).get(mode)
        if not prof:
            continue
        med = prof["median_ms"]
        out.append(f"**One in-process estimate, {prof['shape']}, {prof['nodes']:,} nodes, {mode}** (median ms per "
                   "call; the parts are timed on their own):\n")
        out.append(_table(["part", "ms"], [[k.replace("_", " "), _ms(v)] for k, v in med.items()]) + "\n")
        if "rpc" in missed or "rps" in missed:
            text = _rpc_explanation(result, mode)
            if text:
                out.append(text + "\n")
        out.append(f"<details><summary>cProfile of {prof['cprofile_calls']:,} servicer calls ({mode}), "
                   "top by own time</summary>\n\n```\n" + "\n".join(prof["cprofile_top_by_tottime"])
                   + "\n```\n</details>\n")
    if "rps" in missed:
        r = next((x for x in result["records"] if x["nodes"] == TARGET_NODES and x["shape"] == shape
                  and x.get("rps")), None)
        if r:
            nproc = result["environment"]["nproc"]
            out.append(f"Throughput: {r['rps']:,.0f} estimates/s with 16 callers is {1e3 / r['rps']:.2f} ms of "
                       f"wall time per estimate on {nproc} cores shared by the server, the client process and other "
                       "load; the servicer holds the GIL for the Python parts of every call (everything in the "
                       "table above except the kernel, which runs with nogil), so one server process serves "
                       "calls mostly one at a time. Fixes: shrink the Python per call (above), release the GIL "
                       "around more of it, or run several server processes behind one port (SO_REUSEPORT).\n")
    if "ready" in missed:
        out.append(_ready_explanation(result) + "\n")
    load = profiles.get("load")
    if load:
        out.append(f"<details><summary>cProfile of loading {load['file']}, top by own time</summary>\n\n```\n"
                   + "\n".join(load["cprofile_top_by_tottime"]) + "\n```\n</details>\n")
    if "kernel" in missed or "speedup" in missed:
        out.append("Kernel misses: compare *kernel* with *plugin path* above; the kernel figure includes the "
                   "Python wrapper's validation of every array (shape, dtype, sign checks, `np.all` over the "
                   "request column) and, for best mode, its copies and candidate orders.\n")

    # Checks.
    out.append("### Cross-checks in this run\n")
    failed = result.get("failed_checks") or []
    if failed:
        out.append("**FAILED:**\n\n" + "\n".join(f"- {f}" for f in failed) + "\n")
    else:
        n_cases = len(result["records"]) // 2
        out.append(f"All passed on the {n_cases} member × shape cases: best ≥ first-fit; both witnesses verified by "
                   "tests/naive.verify; first-fit = the compiled naive rescan wherever it finished (and = the "
                   "plain-Python rescan where that ran); the answer over gRPC = the in-process answer.\n")

    # Method.
    calib = result["calibration"]
    settings = result["settings"]
    out.append("### Method\n")
    out.append(f"""- **Members**: `benchmarks/members.py`, seeded (seed {settings['seed']}, utilisation
  {settings['utilisation']}); kubectl-style `v1 List` JSON files under `benchmarks/data/` (gitignored, regenerated
  identically). Pools: CPU-only 40%, 4-GPU 28%, 8-GPU 20%, a tainted 4-GPU inference pool 12%, 3 tainted
  control-plane nodes, 3% cordoned, five zones in two regions; pods fill each node to its own utilisation
  (Beta, mean 0.65) with 1/2/4-GPU pods, so free GPUs are fragmented.
- **Kernel** figures time the public kernels (`estimator.kernels.first_fit_sets` / `best_sets`, validation
  included) on the arrays the node-resource plugin builds with its own helpers (`_columns`, `_gather`,
  `_Packing`); first-fit gets a fresh copy of `available` per call, made outside the timed region. **Plugin path**
  is `Estimator.max_available_component_sets` in-process (arrays + kernel + quota plugin). Budget
  {settings['kernel_seconds']} s and ≥ 20 calls per case, GC off while timing.
- **Naive rescan** (`benchmarks/naive_rescan.py`): Karmada's `SchedulingSimulator.SimulateScheduling`, line for
  line — every set walks every node from the first — compiled with numba over the same arrays. It is generous to
  Go: masks precomputed (Go evaluates affinity and tolerations per node visit), flat int64 rows instead of
  ResourceList maps. Capped at {settings['naive_cap']} s of node visits (calibrated at
  {calib['compiled_visits_per_s'] / 1e6:,.0f} M visits/s); a capped run gives a lower bound (≥) on the speedup.
  The plain-Python version runs only where predicted to finish within {settings['python_cap']} s (it is
  ~{calib['python_over_compiled']:,.0f}× slower than the compiled one). **Speedup** = naive ms / kernel p50 ms of
  the row's mode.
- **RPC**: a real `karmada-estimator` process per size and mode (`scheduler_client.launch.LocalEstimator`
  command line, snapshot file, default flags), a separate client process (`benchmarks/rpc_client.py`) sending
  pre-serialised `MaxAvailableComponentSetsRequest`s (built by `scheduler_client.wire`) with 1, 4 and 16
  threads for {settings['rpc_seconds']} s each after 20 warm-up calls. *Cold* start uses an empty
  `NUMBA_CACHE_DIR`, *warm* the repository's `.numba_cache`. RSS from `/proc/PID/status` after the RPC runs.
- **Accuracy** (`benchmarks/accuracy.py`): random members over [pods, cpu, memory, gpu] with 1-8 nodes, 1-3
  components, random masks; exhaustive optimum from `tests/naive.exhaustive`; both modes' witnesses re-checked
  by `tests/naive.verify`; an answer above the optimum or an invalid witness is an over-promise.
""")
    return "\n".join(out)


def render(result: dict, existing: str, plot_prefix: str) -> str:
    """RESULTS.md with this module's top text and section; a new section goes first."""
    _, rest = split_top(existing)
    rest = splice_section(rest, f"## {SECTION}", _section(result, plot_prefix), first_if_missing=True)
    return _top(result, Path()) + rest.rstrip("\n") + "\n"


# --- plots ----------------------------------------------------------------------------------


def plot(result: dict, out_dir: Path) -> dict:
    """Draw the PNGs; returns {key: file name} (empty when matplotlib is missing)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib not installed: no plots (pip install -e '.[bench]')", file=sys.stderr)
        return {}
    out_dir.mkdir(parents=True, exist_ok=True)
    records = result["records"]
    shapes = list(result["shapes"])
    sizes = sorted({r["nodes"] for r in records})
    colors = {"best": "tab:blue", "first-fit": "tab:orange", "naive": "tab:red", "python": "tab:gray"}
    files = {}

    def series(shape, mode, key):
        xs, ys = [], []
        for n in sizes:
            r = _record(result, n, shape, mode)
            if r and r.get(key) is not None:
                xs.append(n)
                ys.append(r[key])
        return xs, ys

    # Latency vs nodes, one panel per shape.
    cols = 3
    rows = math.ceil(len(shapes) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5 * cols, 4 * rows), squeeze=False)
    for ax, shape in zip(axes.flat, shapes):
        for mode in ("best", "first-fit"):
            xs, ys = series(shape, mode, "kernel_ms_p50")
            _, p99 = series(shape, mode, "kernel_ms_p99")
            ax.plot(xs, ys, "o-", color=colors[mode], label=f"{mode} kernel p50")
            ax.plot(xs, p99, "x:", color=colors[mode], alpha=0.7, label=f"{mode} kernel p99")
        xs, ys = series(shape, "first-fit", "naive_ms")
        capped = [not _record(result, n, shape, "first-fit")["naive_complete"] for n in xs]
        ax.plot(xs, ys, "s-", color=colors["naive"], label="naive rescan (compiled)")
        for x, y, c in zip(xs, ys, capped):
            if c:
                ax.annotate("capped", (x, y), textcoords="offset points", xytext=(-10, 6), fontsize=7)
        xs, ys = series(shape, "first-fit", "python_ms")
        if xs:
            ax.plot(xs, ys, "d--", color=colors["python"], label="naive rescan (plain Python)")
        if shape == result["target_shape"]:
            ax.plot([TARGET_NODES, BIG_NODES], [0.5, 3.0], "k*", markersize=10, label="targets")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(shape)
        ax.set_xlabel("nodes")
        ax.set_ylabel("ms per estimate")
        ax.grid(True, which="both", alpha=0.3)
    for ax in list(axes.flat)[len(shapes):]:
        ax.axis("off")
    axes.flat[0].legend(fontsize=7)
    fig.suptitle("Kernel latency vs nodes (log-log)")
    fig.tight_layout()
    fig.savefig(out_dir / PLOTS["latency"], dpi=90)
    plt.close(fig)
    files["latency"] = PLOTS["latency"]

    # Speedup vs nodes.
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for ax, mode in zip(axes, ("first-fit", "best")):
        for shape in shapes:
            xs, ys = series(shape, mode, "speedup")
            ax.plot(xs, ys, "o-", label=shape)
        ax.axhline(200, color="k", linestyle="--", linewidth=1, label="200× target")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(f"{mode}: naive rescan ms / kernel p50 ms")
        ax.set_xlabel("nodes")
        ax.set_ylabel("speedup")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out_dir / PLOTS["speedup"], dpi=90)
    plt.close(fig)
    files["speedup"] = PLOTS["speedup"]

    # RPC vs nodes (target shape).
    shape = result["target_shape"]
    if any(r.get("rpc") for r in records):
        fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
        for mode, style in (("best", "-"), ("first-fit", "--")):
            conc = sorted({int(c) for r in records if r.get("rpc") for c in r["rpc"]})
            for c in conc:
                xs, p50, rps = [], [], []
                for n in sizes:
                    r = _record(result, n, shape, mode)
                    if r and r.get("rpc") and str(c) in r["rpc"]:
                        xs.append(n)
                        p50.append(r["rpc"][str(c)]["p50_ms"])
                        rps.append(r["rpc"][str(c)]["rps"])
                axes[0].plot(xs, p50, "o" + style, label=f"{mode}, {c} caller(s)")
                axes[1].plot(xs, rps, "o" + style, label=f"{mode}, {c} caller(s)")
        axes[0].axhline(1.0, color="k", linestyle=":", linewidth=1, label="1 ms target (1 caller)")
        axes[1].axhline(1000, color="k", linestyle=":", linewidth=1, label="1,000/s target (16 callers)")
        for ax, title, label in ((axes[0], f"RPC p50 latency, {shape}", "ms"),
                                 (axes[1], f"throughput, {shape}", "estimates/s")):
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_title(title)
            ax.set_xlabel("nodes")
            ax.set_ylabel(label)
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(out_dir / PLOTS["rpc"], dpi=90)
        plt.close(fig)
        files["rpc"] = PLOTS["rpc"]

    # Accuracy bars.
    acc = result["accuracy"]
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    modes = ("first-fit", "best")
    labels = ["all members", "members with optimum > 0"]
    width = 0.35
    for i, mode in enumerate(modes):
        values = [acc[mode]["optimal_rate"] * 100, acc[mode]["optimal_rate_nonzero"] * 100]
        bars = axes[0].bar([j + i * width for j in range(2)], values, width, label=mode, color=colors[mode])
        for b, v in zip(bars, values):
            axes[0].annotate(f"{v:.1f}%", (b.get_x() + b.get_width() / 2, v), ha="center", va="bottom", fontsize=8)
    axes[0].set_xticks([j + width / 2 for j in range(2)], labels)
    axes[0].set_ylabel("% reaching the exhaustive optimum")
    axes[0].set_ylim(0, 105)
    axes[0].set_title(f"{acc['members']:,} random members; over-promises: first-fit "
                      f"{acc['first-fit']['over_promises']}, best {acc['best']['over_promises']}")
    axes[0].legend()
    keys = list(acc["best"]["gap_histogram"])
    for i, mode in enumerate(modes):
        values = [acc[mode]["gap_histogram"][k] for k in keys]
        axes[1].bar([j + i * width for j in range(len(keys))], values, width, label=mode, color=colors[mode])
    axes[1].set_xticks([j + width / 2 for j in range(len(keys))], [f"gap {k}" for k in keys])
    axes[1].set_yscale("log")
    axes[1].set_ylabel("members")
    axes[1].set_title("sets below the optimum")
    axes[1].legend()
    fig.tight_layout()
    fig.savefig(out_dir / PLOTS["accuracy"], dpi=90)
    plt.close(fig)
    files["accuracy"] = PLOTS["accuracy"]
    return files


# --- entry points ---------------------------------------------------------------------------


def write(result: dict, md_path: Path, plot_dir: Path) -> None:
    result["plots"] = plot(result, plot_dir)
    try:
        prefix = str(plot_dir.resolve().relative_to(md_path.parent.resolve()))
        prefix = "" if prefix == "." else prefix + "/"
    except ValueError:
        prefix = str(plot_dir.resolve()) + "/"
    existing = md_path.read_text() if md_path.exists() else ""
    text = render(result, existing, prefix)
    tmp = md_path.with_suffix(".md.tmp")
    tmp.write_text(text)
    tmp.replace(md_path)


def summary_table(result: dict) -> str:
    """The key rows, as the run prints them (plain text)."""
    shape = result["target_shape"]
    head = (f"{'nodes':>7} {'mode':>9} {'sets':>7} {'k.p50':>8} {'k.p99':>8} {'naive ms':>10} {'speedup':>9} "
            f"{'rpc.p50':>8} {'rpc.p99':>8} {'rps@16':>7} {'rssMB':>6} {'warm':>6} {'cold':>6}")
    lines = [f"{shape}:", head]
    for r in sorted((r for r in result["records"] if r["shape"] == shape), key=lambda r: (r["nodes"], r["mode"])):
        def f(v, fmt):
            return "-" if v is None else format(v, fmt)
        lines.append(f"{r['nodes']:>7} {r['mode']:>9} {r['sets']:>7} {r['kernel_ms_p50']:>8.3f} "
                     f"{r['kernel_ms_p99']:>8.3f} {r['naive_ms']:>10.1f} "
                     f"{('>=' if r['speedup_is_lower_bound'] else '') + f(r['speedup'], '.0f'):>9} "
                     f"{f(r.get('rpc_ms_p50'), '.3f'):>8} {f(r.get('rpc_ms_p99'), '.3f'):>8} "
                     f"{f(r.get('rps'), '.0f'):>7} {f(r.get('rss_mb'), '.0f'):>6} "
                     f"{f(r.get('ready_warm_s'), '.2f'):>6} {f(r.get('ready_cold_s'), '.2f'):>6}")
    acc = result["accuracy"]
    lines.append(f"accuracy ({acc['members']} members): " + "; ".join(
        f"{m} optimal {acc[m]['optimal_rate']:.2%}, mean gap {acc[m]['mean_gap_sets']:.4f}, "
        f"over-promises {acc[m]['over_promises']}" for m in ("first-fit", "best")))
    lines.append("targets: " + "; ".join(f"{t['target']}: {'met' if t['met'] else 'MISSED'} ({t['measured']})"
                                         for t in targets(result)))
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, default=REPO / "benchmarks" / "results" / "latest.json")
    parser.add_argument("--md", type=Path, default=REPO / "benchmarks" / "RESULTS.md")
    args = parser.parse_args(argv)
    result = json.loads(args.json.read_text())
    write(result, args.md, args.json.parent)
    print(summary_table(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
