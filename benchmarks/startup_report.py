"""The RESULTS.md section of benchmarks/startup.py, written from one run's results
(benchmarks/results/startup.json): tables, and verdicts against the targets."""

from __future__ import annotations

import os
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


SECTION = "## Start-up and memory"
KARMADA_RSS_1K_MB = 68  # Karmada's Go estimator at 1k nodes, measured outside this repository


def _f(value, digits=1) -> str:
    return "–" if value is None else f"{value:,.{digits}f}"


def _kinds(size: dict) -> list[tuple[str, str]]:
    """(kind, words) of the starts a size ran: the member file parsed (`--objects-cache off`),
    parsed and its state saved to a fresh --objects-cache, or read from it (runs before the
    cache existed parsed every time)."""
    kinds = {s.get("objects", "parsed") for s in size["starts"]}
    return [(k, w) for k, w in (("parsed", "member file parsed"), ("saved", "member file parsed, state saved"),
                                ("cache", "member from --objects-cache")) if k in kinds]


def _verdicts(result: dict) -> list[str]:
    """The goals, each with the figure that decides it (CPU/2 bounds wall time on two idle cores)."""
    out = []
    demo = {run["case"]: run for run in result.get("demo") or []}
    after = next((r for c, r in demo.items() if c.startswith("after `make install`")), None)
    if after:
        out.append(f"- demo tables ≤ 15 s after installing: the demo and its six estimators took "
                   f"{after['cpu_s']:.1f} CPU-s (≥ {after['cpu_s'] / 2:.1f} s on two idle cores); "
                   f"{after['tables_s']:.1f} s to tables here at load "
                   f"{after['load_before'].split(' / ')[0]}-{after['load_after'].split(' / ')[0]}")
    once = next((r for c, r in demo.items() if "compiles once" in c), None)
    each = next((r for c, r in demo.items() if "every estimator" in c), None)
    if once and each:
        out.append(f"- stale cache: compiling once costs {once['cpu_s']:.1f} CPU-s, every estimator compiling "
                   f"{each['cpu_s']:.1f} ({each['cpu_s'] / once['cpu_s']:.1f}x)")
    for size in result.get("sizes") or []:
        for how, said in _kinds(size):
            first = next(s for s in size["starts"] if s.get("objects", "parsed") == how)
            st = first.get("status_mb") or {}
            agg = size.get("by_objects", {}).get(how, size)
            if size["nodes"] == 1000 and st:
                verdict = "met" if st["VmRSS"] <= 2 * KARMADA_RSS_1K_MB else "not met"
                out.append(f"- RSS within 2x of Karmada's {KARMADA_RSS_1K_MB} MB at 1k nodes ({said}): "
                           f"{st['VmRSS']:.0f} MB ({st['VmRSS'] / KARMADA_RSS_1K_MB:.1f}x): {verdict}")
            if size["nodes"] == 50000:
                rss = (f"RSS ≤ 800 MB: {st['VmRSS']:,.0f} MB, {'met' if st['VmRSS'] <= 800 else 'not met'}; "
                       if st else "")
                out.append(f"- 50k nodes ({said}): {rss}warm ready ≤ 4 s: {agg['cpu_median_s']:.1f} CPU-s to "
                           f"ready, {agg['ready_median_s']:.1f} s here: "
                           f"{'met' if agg['ready_median_s'] <= 4 else 'not met'}")
            if size["nodes"] == 10000:
                out.append(f"- 10k nodes ({said}), warm ready ≤ 3 s (docs/scenario.md): {agg['cpu_median_s']:.1f} CPU-s "
                           f"to ready, {agg['ready_median_s']:.1f} s here: {'met' if agg['ready_median_s'] <= 3 else 'not met'}")
    for row in result.get("watch") or []:
        rss = row["status_mb"].get("VmRSS")
        if row["nodes"] == 1000 and rss:
            out.append(f"- watch mode (`--kubeconfig`, fake API server) at 1k nodes: {rss:.0f} MB, "
                       f"{rss / KARMADA_RSS_1K_MB:.1f}x Karmada's {KARMADA_RSS_1K_MB} MB: "
                       f"{'met' if rss <= 2 * KARMADA_RSS_1K_MB else 'not met'}")
    return (["**Goals**:", ""] + out + [""]) if out else []


def write_section(result: dict) -> str:
    lines = [SECTION, "",
             f"Written by `benchmarks/startup.py`. **Machine:** {os.cpu_count()} cores shared with other engineers' "
             "work; the load average (1/5/15 min) is given beside each figure: wall times are inflated by it (a "
             "process gets roughly cores / load of a CPU), CPU seconds less so, though contention inflates them "
             "too (a warm 1k-node start: ~2 CPU-s here, 0.62 s wall on the idle machine of *Speed and accuracy*).", ""]

    def run_by(part: str) -> str:
        meta = result.get("meta", {}).get(part, {})
        return f"(`{meta.get('command')}`, {meta.get('date')}, commit `{meta.get('commit')}`)"

    lines += _verdicts(result)
    demo = result.get("demo")
    if demo:
        lines += ["**`make demo` on a fresh machine**: each case has its own NUMBA_CACHE_DIR, empty at first; "
                  "*to tables*: from spawning the demo to its first table; CPU: the demo and its six estimators, "
                  "user + sys " + run_by("demo") + ":", "",
                  "| case | command | to tables | total | CPU s | load before → after |", "|---|---|---|---|---|---|"]
        for run in demo:
            lines.append(f"| {run['case']} | `{run['command']}` | {_f(run['tables_s'])} s | {_f(run['total_s'])} s | "
                         f"{_f(run['cpu_s'])} | {run['load_before']} → {run['load_after']} |")
        lines.append("")
    sizes = result.get("sizes") or []
    if sizes:
        lines += ["**Warm start-to-ready and memory** (`--packing best`, warm kernel cache; ready = spawn to gRPC "
                  "health SERVING, as in *Speed and accuracy*; memory from /proc/PID/status after 20 estimates; "
                  "*LLVM released*: clean pages of llvmlite's library the server drops after warm-up, so RSS "
                  "before that step was RSS + released) " + run_by("sizes") + ":", "",
                  "| nodes | pods | file MB | member | ready, median (all) | CPU s to ready | load | VmRSS MB "
                  "| anon / file MB | peak (VmHWM) MB | LLVM released MB |", "|---|---|---|---|---|---|---|---|---|---|---|"]
        for size in sizes:
            for how, said in _kinds(size):
                runs = [s for s in size["starts"] if s.get("objects", "parsed") == how]
                first = runs[0]
                st = first.get("status_mb", {})
                agg = size.get("by_objects", {}).get(how, size)
                lines.append(
                    f"| {size['nodes']:,} | {size['pods']:,} | {size['file_mb']:.0f} | {said} | "
                    f"{agg['ready_median_s']:.2f} s ({', '.join(format(s['ready_s'], '.1f') for s in runs)}) | "
                    f"{agg['cpu_median_s']:.2f} | {first['load']} | {_f(st.get('VmRSS'), 0)} | "
                    f"{_f(st.get('RssAnon'), 0)} / {_f(st.get('RssFile'), 0)} | {_f(st.get('VmHWM'), 0)} | "
                    f"{_f(first.get('llvm_released_mb'), 0)} |")
        small = next((s for s in sizes if s["nodes"] == 1000), None)
        if small and small["starts"][0].get("status_mb"):
            rss = small["starts"][0]["status_mb"]["VmRSS"]
            lines += ["", f"At 1,000 nodes: {rss:.0f} MB, {rss / KARMADA_RSS_1K_MB:.1f}x the {KARMADA_RSS_1K_MB} MB "
                          "of Karmada's Go estimator on a 1k-node member (measured outside this repository; "
                          "`benchmarks/side_by_side.py` measures both on `make e2e`'s apiserver)."]
        lines.append("")
    watch = result.get("watch") or []
    if watch:
        lines += ["**Watch mode** (`--kubeconfig` against the fake API server of tests/support/fakekube.py in the "
                  "benchmark's process, 9 pods per node; ready = spawn to /readyz 200; memory 2 s later) "
                  + run_by("watch") + ":", "",
                  "| nodes | pods | ready | CPU s to ready | load | VmRSS MB | anon / file MB | peak (VmHWM) MB |",
                  "|---|---|---|---|---|---|---|---|"]
        for row in watch:
            st = row["status_mb"]
            lines.append(f"| {row['nodes']:,} | {row['pods']:,} | {row['ready_s']:.2f} s | {row['cpu_at_ready_s']:.2f} "
                         f"| {row['load']} | {_f(st.get('VmRSS'), 0)} | {_f(st.get('RssAnon'), 0)} / "
                         f"{_f(st.get('RssFile'), 0)} | {_f(st.get('VmHWM'), 0)} |")
        lines.append("")
    loader = result.get("loader") or []
    if loader:
        lines += ["**Where a big member's memory goes: the loader's heap** " + run_by("loader") + ". One "
                  "interpreter with the server's imports loads the member file as `--objects` does; *anon growth*: "
                  "RssAnon after the load (and malloc_trim) minus before. Parsed whole, the document's freed memory "
                  "stays pinned by the few strings each kept record shares with it; parsed about a megabyte of items "
                  "at a time (estimator/cluster/jsonitems.py), each slice reuses the last one's memory:", "",
                  "| nodes | pods | loader | anon growth MB | RSS MB | peak MB | load s (CPU s) | load |",
                  "|---|---|---|---|---|---|---|---|"]
        for row in loader:
            lines.append(f"| {row['nodes']:,} | {row['pods']:,} | {row['variant']} | {row['anon_growth_mb']:,.0f} | "
                         f"{row['rss_mb']:,.0f} | {row['peak_mb']:,.0f} | {row['load_s']:.1f} "
                         f"({row['load_cpu_s']:.1f}) | {row['load']} |")
        lines.append("")
    steps = result.get("imports") or []
    if steps:
        lines += ["**Where the memory of a fresh estimator goes** (one interpreter importing the server's "
                  "dependencies in this order; VmRSS after each step; `kernels.warmup()` loads the compiled "
                  "kernels from the warm cache; *release* drops LLVM's clean library pages and `kernels.seal()` the kernels' "
                  "linking modules, as the server started from its command line does) "
                  + run_by("imports") + ":", "",
                  "| step | VmRSS MB | + MB | anon / file MB | s |", "|---|---|---|---|---|"]
        previous = None
        for step in steps:
            if "VmRSS" not in step:
                continue
            delta = "" if previous is None else f"{step['VmRSS'] - previous:+.1f}"
            name = {"WARMUP": "kernels.warmup()", "RELEASE": "release LLVM pages",
                    "SEAL": "kernels.seal() (and malloc_trim)"}.get(step["step"], step["step"])
            lines.append(f"| {name} | {step['VmRSS']:.1f} | {delta} | {step['RssAnon']:.1f} / {step['RssFile']:.1f} "
                         f"| {_f(step.get('s'), 2)} |")
            previous = step["VmRSS"]
        kube = next((s["value"] for s in steps if s["step"] == "kubernetes loaded"), None)
        lines += ["", f"The kubernetes client is {'loaded' if kube else 'not loaded'} by these imports: "
                      "`--objects` never imports it (only `--kubeconfig` does, through estimator/cluster/watch)."]
        lines.append("")
    text_path = REPO / "benchmarks" / "RESULTS.md"
    text = text_path.read_text()
    section = "\n".join(lines)
    if SECTION in text:
        start = text.index(SECTION)
        nxt = text.find("\n## ", start + len(SECTION))
        text = text[:start] + section.rstrip("\n") + ("\n\n" + text[nxt + 1:] if nxt >= 0 else "\n")
    else:
        text = text.rstrip("\n") + "\n\n" + section
    text_path.write_text(text)
    return section
