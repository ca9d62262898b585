"""The targets of docs/scenario.md checked against one benchmark run, why the missed ones are
missed, and the cell formatting they share with benchmarks/report.py."""

from __future__ import annotations

import math

TARGET_NODES = 10_000
BIG_NODES = 50_000


# --- formatting ---------------------------------------------------------------------------


def fmt_ms(value, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.{digits}f}"


def fmt_x(value, lower_bound: bool = False) -> str:
    if value is None:
        return "–"
    text = f"{value:,.0f}×" if value >= 10 else f"{value:.1f}×"
    return ("≥ " + text) if lower_bound else text


def ratio_cell(value) -> str:
    return "–" if value is None else f"{value:.2f}×"


def fmt_n(value) -> str:
    return "–" if value is None else f"{value:,}"


def fmt_s(value) -> str:
    return "–" if value is None else f"{value:.2f} s"


def md_table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def find_record(result: dict, nodes: int, shape: str, mode: str) -> dict | None:
    for r in result["records"]:
        if r["nodes"] == nodes and r["shape"] == shape and r["mode"] == mode:
            return r
    return None


def find_size(result: dict, nodes: int) -> dict | None:
    return next((s for s in result["sizes"] if s["nodes"] == nodes), None)


def naive_cell(r: dict) -> str:
    text = fmt_ms(r["naive_ms"])
    return f"> {text} (capped)" if not r["naive_complete"] else text


def python_cell(r: dict) -> str:
    if r.get("python_ms") is not None:
        return fmt_ms(r["python_ms"]) + ("" if r.get("python_complete") else " (capped)")
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
        r10 = find_record(result, TARGET_NODES, shape, mode)
        r50 = find_record(result, BIG_NODES, shape, mode)
        if r10:
            add(f"kernel p50 ≤ 0.5 ms at 10k nodes ({mode})", f"p50 {fmt_ms(r10['kernel_ms_p50'])} ms, "
                f"p99 {fmt_ms(r10['kernel_ms_p99'])} ms", r10["kernel_ms_p50"] <= 0.5, "docs/scenario.md", "kernel")
            add(f"≥ 200× the naive rescanning first-fit at 10k ({mode})",
                f"{fmt_x(r10['speedup'], r10['speedup_is_lower_bound'])} ({fmt_ms(r10['naive_ms'], 1)} ms vs "
                f"{fmt_ms(r10['kernel_ms_p50'])} ms)", r10["speedup"] is not None and r10["speedup"] >= 200,
                "docs/scenario.md", "speedup")
            if r10.get("rpc_ms_p50") is not None:
                # Judged on new answers (memo miss); the repeated request (memo hit) is shown beside it.
                add(f"RPC p50 ≤ 1 ms, p99 ≤ 3 ms at 10k, 1 caller, new answer ({mode})",
                    f"p50 {fmt_ms(r10['rpc_ms_p50'])} ms, p99 {fmt_ms(r10['rpc_ms_p99'])} ms",
                    r10["rpc_ms_p50"] <= 1.0 and r10["rpc_ms_p99"] <= 3.0, "docs/scenario.md", "rpc")
                if r10.get("rpc_repeat_ms_p50") is not None:
                    add(f"RPC p50 ≤ 1 ms, p99 ≤ 3 ms at 10k, 1 caller, repeated request ({mode})",
                        f"p50 {fmt_ms(r10['rpc_repeat_ms_p50'])} ms, p99 {fmt_ms(r10['rpc_repeat_ms_p99'])} ms",
                        r10["rpc_repeat_ms_p50"] <= 1.0 and r10["rpc_repeat_ms_p99"] <= 3.0, "docs/scenario.md",
                        "rpc")
                add(f"≥ 1,000 estimates/s with 16 callers at 10k, new answers ({mode})", f"{r10['rps']:,.0f} /s",
                    r10["rps"] >= 1000, "docs/scenario.md", "rps")
    for mode in ("best", "first-fit"):
        for name in result["shapes"]:
            r10 = find_record(result, TARGET_NODES, name, mode)
            if r10 and r10.get("rpc_new_floor_ratio") is not None:
                add(f"{name}: new-job RPC p50 ≤ 2× the empty RPC at 10k, every call a shape not seen before ({mode})",
                    f"{r10['rpc_new_floor_ratio']:.2f}× (p50 {fmt_ms(r10['rpc_new_ms_p50'])} ms)",
                    r10["rpc_new_floor_ratio"] <= 2.0, "same run, empty RPC = health Check between calls", "rpc_new")
            if r10 and r10.get("rpc_floor_ratio") is not None:
                add(f"{name}: new-answer RPC p50 ≤ 2× the empty RPC at 10k ({mode})",
                    f"{r10['rpc_floor_ratio']:.2f}× (repeated request {ratio_cell(r10.get('rpc_repeat_floor_ratio'))})",
                    r10["rpc_floor_ratio"] <= 2.0, "same run, empty RPC = health Check between calls", "rpc")
                if name == shape and mode == "first-fit":
                    add(f"{name}: new-answer RPC p50 ≤ 1.5× the empty RPC at 10k ({mode})",
                        f"{r10['rpc_floor_ratio']:.2f}×", r10["rpc_floor_ratio"] <= 1.5,
                        "same run, empty RPC = health Check between calls", "rpc")
        r50 = find_record(result, BIG_NODES, shape, mode)  # this mode's, not the loop above's last
        if r50:
            add(f"kernel p50 ≤ 3 ms at 50k nodes ({mode})", f"p50 {fmt_ms(r50['kernel_ms_p50'])} ms, "
                f"p99 {fmt_ms(r50['kernel_ms_p99'])} ms", r50["kernel_ms_p50"] <= 3.0, "docs/scenario.md", "kernel")
    for nodes, limit in ((TARGET_NODES, 3.0), (50_000, 4.0)):
        size = find_size(result, nodes)
        for how, said in (("cache", "member from --objects-cache"), ("parsed", "member file parsed")):
            warm = (size or {}).get(f"ready_warm_{how}")
            if not warm:
                continue
            add(f"start-to-ready ≤ {limit:.0f} s with a warm numba cache ({nodes // 1000}k nodes, {said})",
                f"median {fmt_s(warm['median_s'])} of {len(warm['samples_s'])} starts ({fmt_s(warm['min_s'])} – "
                f"{fmt_s(warm['max_s'])})", warm["median_s"] <= limit, "docs/scenario.md", "ready")
    gain = result.get("best_gain")
    if gain:
        add(f"best mode's default budget finds ≥ 90% of the unlimited search's gain on GPU-first members at "
            f"{gain['nodes'] // 1000 if gain['nodes'] >= 1000 else gain['nodes']}{'k' if gain['nodes'] >= 1000 else ''}"
            f" nodes", f"{gain['share']:.0%} ({gain['gain_sets']:,} of {gain['gain_sets_no_limit']:,} sets above "
            f"first-fit; {gain['jobs']} jobs × {gain['seeds']} members)", gain["share"] >= 0.9,
            "issue 27; benchmarks/quality.py's where-best-matters members", "accuracy")
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
    "gather_columns": "the needed columns of every node (`noderesource._available`: kept per snapshot and "
                      "column set; first-fit then copies them, as its kernel consumes them)",
    "request_rows_and_masks": "request rows and node masks (`noderesource._packing`, kept per snapshot and shape)",
    "decode_and_convert": "protobuf decode and wire -> model conversion (`convert.component_sets_query`)",
    "quota_plugin": "the ResourceQuota plugin",
    "other": "servicer bookkeeping (metrics, framework, result objects)",
}


def rpc_explanation(result: dict, mode: str) -> str:
    r = find_record(result, TARGET_NODES, result["target_shape"], mode)
    prof = (result.get("profiles") or {}).get("estimate", {}).get(mode)
    size = find_size(result, TARGET_NODES)
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
    lines = [f"New-answer RPC p50 {fmt_ms(r['rpc_ms_p50'])} ms ({mode}) ≈ gRPC floor {fmt_ms(floor.get('p50_ms'))} ms + servicer "
             f"{fmt_ms(med['servicer_total'])} ms in-process. Largest parts:"]
    for value, key in ranked[:4]:
        lines.append(f"- {fmt_ms(value)} ms — {_FIXES[key]}")
    return "\n".join(lines)


def ready_explanation(result: dict) -> str:
    size = find_size(result, TARGET_NODES)
    if not size or not size.get("servers"):
        return ""
    warm = size["servers"].get("best", {}).get("warm", {})
    load = (result.get("profiles") or {}).get("load", {})
    imports = result["environment"].get("server_imports_s")
    cached = (size.get("ready_warm_cache") or {}).get("median_s")
    parsed = (size.get("ready_warm_parsed") or {}).get("median_s")
    lines = [f"**Start-to-ready at 10k nodes**: median {fmt_s(parsed)} when the member file is parsed, "
             f"{fmt_s(cached)} when its parsed state is read back from `--objects-cache` (later starts on the "
             f"same unchanged file). One warm start of the default (best) server "
             f"({'member parsed' if warm.get('objects') == 'parsed' else 'member from the cache'}): "
             f"ready {fmt_s(warm.get('ready_s'))} = process start to state loaded {fmt_s(warm.get('start_to_loaded_s'))} "
             f"+ kernel warm-up {fmt_s(warm.get('kernels_s'))} after it (loaded from the numba cache; a member "
             f"file read on two cores has them loaded while its second part is read). Of the first part, a fresh "
             f"interpreter importing the server's modules takes "
             f"{fmt_s(imports)}; parsing the {size['file_mb']:.0f} MB file ({size['pods']:,} pods, {size['nodes']:,} "
             f"nodes) in-process takes {fmt_s(size.get('load_in_process_s'))}."]
    if load:
        lines.append(
            f"Inside the parse: `json.loads` of the whole text {fmt_s(load['json_parse_s'])} (the loader reads "
            "slices of items instead); the rest is per-object Python (records, pod requests, the cache's "
            f"tables); cProfile's view ({fmt_s(load['profiled_load_s'])} profiled) is in benchmarks/results/latest.json.")
    return "\n".join(lines)
