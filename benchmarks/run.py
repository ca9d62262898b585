"""The benchmark harness: speed and accuracy side by side, in one run.

    python -m benchmarks.run            # full (make bench): 1k, 5k, 10k, 50k nodes
    python -m benchmarks.run --quick    # smoke (make bench-quick): tiny sizes, short budgets

Per member size x job shape x packing mode:
- kernel latency: the public kernels (`kernels.first_fit_sets`, `kernels.best_sets`,
  wrappers and validation included) on exactly the arrays the node-resource plugin builds
  (its public `noderesource.kernel_inputs`); first-fit gets a fresh copy of `available`
  per call, made outside the timed region (it consumes it). Also the whole in-process
  plugin path (`Estimator.max_available_component_sets`: arrays + kernel + quota plugin);
- the naive rescanning first-fit (Karmada's Go loop, compiled, benchmarks/naive_rescan.py)
  over the same arrays, capped by a budget of node visits, and the plain-Python version
  where it is predicted to finish within its cap; answers cross-checked;
- end-to-end gRPC from a separate client process (benchmarks/rpc_client.py) against a real
  `karmada-estimator` process started on the member file, with 1, 4 and 16 callers;
  start-to-ready (warm numba cache, and cold: an empty NUMBA_CACHE_DIR); RSS.
Then the accuracy table (benchmarks/accuracy.py), a profile of the target case, the JSON,
RESULTS.md and the plots (benchmarks/report.py). The in-process measurements are in
benchmarks/run_measure.py, the server processes in benchmarks/run_server.py.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from benchmarks import accuracy, members, naive_rescan, quality, report
from benchmarks.progress import bar
from benchmarks.run_measure import MODES, calibrate_naive, measure_case, profile_load, profile_target
from benchmarks.run_measure import plugin_arrays  # noqa: F401  still imported from here by kernel_shapes
from benchmarks.run_server import Server, rpc_runs  # Server: also imported from here by startup
from benchmarks.shapes import SHAPES, TARGET_SHAPE

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"
SCHEMA_VERSION = 1
RECORD_FIELDS = ("nodes", "pods", "shape", "mode", "kernel_ms_p50", "kernel_ms_p99", "naive_ms", "speedup",
                 "rpc_ms_p50", "rpc_ms_p99", "rps", "rpc_repeat_ms_p50", "rpc_repeat_ms_p99", "rps_repeat",
                 "rpc_floor_ratio", "rpc_repeat_floor_ratio", "rpc_new_ms_p50", "rpc_new_floor_ratio", "rss_mb")


# --- settings -----------------------------------------------------------------------------


def parse_args(argv):
    p = argparse.ArgumentParser(prog="python -m benchmarks.run", description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="smoke run: small sizes, short budgets (make bench-quick)")
    p.add_argument("--sizes", type=int, nargs="+", help="member sizes in nodes")
    p.add_argument("--shapes", nargs="+", choices=list(SHAPES), help="job shapes (default: all)")
    p.add_argument("--seed", type=int, default=1, help="member generator seed")
    p.add_argument("--utilisation", type=float, default=0.65)
    p.add_argument("--accuracy", type=int, help="random small members for the accuracy table")
    p.add_argument("--kernel-seconds", type=float, help="timing budget per kernel case")
    p.add_argument("--naive-cap", type=float, help="seconds the compiled naive rescan may run per case")
    p.add_argument("--python-cap", type=float, help="seconds the plain-Python rescan may run per case")
    p.add_argument("--rpc-seconds", type=float, help="measured seconds per RPC run")
    p.add_argument("--concurrency", type=int, nargs="+", default=[1, 4, 16])
    p.add_argument("--no-rpc", action="store_true", help="skip server processes (kernels and accuracy only)")
    p.add_argument("--no-cold", action="store_true", help="skip the cold-cache start-to-ready measurement")
    p.add_argument("--warm-starts", type=int, help="extra warm starts per size (beyond the two RPC servers; "
                                                   "1 at sizes above 10k)")
    p.add_argument("--parsed-starts", type=int, help="extra starts per size that parse the member file "
                                                     "(--objects-cache off), beside the first RPC server's")
    p.add_argument("--data-dir", type=Path, default=members.DATA_DIR, help="where member files are (re)generated")
    p.add_argument("--out", type=Path, help="output directory (default results/, or results/quick/ with --quick)")
    p.add_argument("--no-report", action="store_true", help="write the JSON only")
    p.add_argument("--no-progress", action="store_true")
    args = p.parse_args(argv)
    quick = args.quick
    defaults = {
        "sizes": [300, 1000] if quick else [1000, 5000, 10000, 50000],
        "shapes": list(SHAPES),
        "accuracy": 300 if quick else 10000,
        "kernel_seconds": 0.15 if quick else 1.0,
        "naive_cap": 1.0 if quick else 15.0,
        "python_cap": 0.5 if quick else 10.0,
        "rpc_seconds": 0.1 if quick else 1.5,
        "warm_starts": 0 if quick else 3,
        "parsed_starts": 0 if quick else 2,
        "out": RESULTS / "quick" if quick else RESULTS,
    }
    for key, value in defaults.items():
        if getattr(args, key) is None:
            setattr(args, key, value)
    args.no_cold = args.no_cold or quick
    return args


# --- environment ----------------------------------------------------------------------------


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _git(*args: str) -> str:
    try:
        return subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def _import_seconds() -> float:
    """Wall time of a fresh interpreter importing what the server imports (median of 3)."""
    code = "import estimator.__main__, estimator.service.server, estimator.cluster.filestate, estimator.kernels"
    times = []
    for _ in range(3):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], cwd=REPO, check=True)
        times.append(time.perf_counter() - started)
    return float(np.median(times))


def environment(argv) -> dict:
    import grpc
    import numba

    command = os.environ.get("BENCH_COMMAND") or " ".join(
        ["python -m benchmarks.run", *map(shlex.quote, argv)]
    )
    return {
        "command": command,
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
        "nproc": os.cpu_count(),
        "cpu_model": _cpu_model(),
        "memory_gb": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "numba": numba.__version__,
        "grpcio": grpc.__version__,
        "git_commit": _git("rev-parse", "--short", "HEAD"),
        "git_dirty_files": len([line for line in _git("status", "--porcelain", "--untracked-files=no").splitlines() if line]),
        "numba_cache_dir": os.environ.get("NUMBA_CACHE_DIR", ""),
        "loadavg_start": list(os.getloadavg()),
        "server_imports_s": _import_seconds(),
    }


def measure_best_gain(nodes: int, seeds: int) -> dict:
    """The share of the unlimited search's gain (sets above first-fit) best mode's default
    budget finds on benchmarks.quality's GPU-first members of `nodes` nodes, every job."""
    matters = quality.where_best_matters([nodes], seeds, repeat=1)
    share = quality.gain_share(matters)[nodes]
    return {"nodes": nodes, "seeds": seeds, "jobs": len(matters), **share,
            "per_job": {job: {k: sizes[nodes][k] for k in ("gain_sets", "gain_sets_no_limit", "members")}
                        for job, sizes in matters.items()}}


# --- the run --------------------------------------------------------------------------------


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parse_args(argv)
    show = not args.no_progress
    args.out.mkdir(parents=True, exist_ok=True)
    env = environment(argv)
    wall_started = time.perf_counter()
    print(f"benchmark: sizes {args.sizes}, shapes {len(args.shapes)}, accuracy {args.accuracy} members, "
          f"load average {env['loadavg_start'][0]:.2f}", file=sys.stderr)

    from estimator import kernels
    from estimator.cluster.files import load_object_files

    from tests.support import naive as naive_oracle

    kernels.warmup()
    naive_rescan.warm_compiled()
    calibration = calibrate_naive()

    records: list[dict] = []
    sizes: list[dict] = []
    profiles: dict = {}
    log_dir = Path(tempfile.mkdtemp(prefix="bench-logs-"))
    # The servers' --objects-cache, empty at first: each size's first start parses its member
    # file (and saves the entry), the later ones read the entry; each start's log says which.
    objects_cache = str(log_dir / "objects-cache")
    warm_cache = os.environ.get("NUMBA_CACHE_DIR") or str(REPO / ".numba_cache")
    target_size = max((n for n in args.sizes if n <= 10_000), default=min(args.sizes))
    steps = len(args.sizes) * (len(args.shapes) + (0 if args.no_rpc else len(MODES) + (0 if args.no_cold else 1)))
    progress = bar(steps, "speed", show)
    for n in args.sizes:
        spec = members.MemberSpec(n, args.seed, args.utilisation)
        started = time.perf_counter()
        progress.set_postfix_str(f"{n} nodes: generating")
        path, stats = members.ensure(spec, data_dir=args.data_dir)
        generate_s = time.perf_counter() - started
        progress.set_postfix_str(f"{n} nodes: loading")
        started = time.perf_counter()
        snapshot = load_object_files([path], state_cache=None).snapshot()  # the parse itself
        load_s = time.perf_counter() - started
        size = {"nodes": n, "pods": stats["pods"], "member": spec.name, "file": path.name,
                "file_mb": path.stat().st_size / 2**20, "generate_or_reuse_s": generate_s, "load_in_process_s": load_s,
                "member_stats": stats}
        if not args.quick:
            progress.set_postfix_str(f"{n} nodes: GC pause probe")
            probe = subprocess.run([sys.executable, "-m", "benchmarks.gcpause", str(path)], cwd=REPO,
                                   capture_output=True, text=True, timeout=900)
            size["gc"] = json.loads(probe.stdout) if probe.returncode == 0 else {"error": probe.stderr[-500:]}
        size_records = []
        for shape in args.shapes:
            progress.set_postfix_str(f"{n} nodes: {shape}")
            for record in measure_case(snapshot, shape, args, calibration, naive_oracle.verify):
                record["pods"] = stats["pods"]
                size_records.append(record)
            progress.update(1)
        if n == target_size:
            profiles["estimate"] = {mode: profile_target(snapshot, spec.name, mode) for mode in MODES}
            profiles["load"] = profile_load(path)
        del snapshot
        gc.collect()
        if not args.no_rpc:
            size["servers"] = {}
            for mode in MODES:
                progress.set_postfix_str(f"{n} nodes: server ({mode})")
                server = Server(spec.name, path, mode, warm_cache, log_dir, objects_cache)
                phases = server.start()
                try:
                    results = rpc_runs(server, spec.name, args.shapes, args)
                    memory = server.rss()
                finally:
                    server.stop()
                size["servers"][mode] = {"warm": phases, **memory, "grpc_floor": results.get("floor")}
                for record in size_records:
                    if record["mode"] != mode:
                        continue
                    # rpc*: the new-answer path (memo miss), what a changing cluster costs;
                    # rpc_repeat*: one request repeated on one snapshot (memo hit).
                    for suffix, tail in (("", ""), ("_repeat", "/repeat")):
                        per = {str(c): results[f"{record['shape']}/{c}{tail}"] for c in args.concurrency}
                        one, most = per[str(min(args.concurrency))], per[str(max(args.concurrency))]
                        record["rpc" + suffix] = per
                        record[f"rpc{suffix}_ms_p50"], record[f"rpc{suffix}_ms_p99"] = one["p50_ms"], one["p99_ms"]
                        record["rps" + suffix] = most["rps"]
                        record["rpc_answer" + suffix] = one["max_sets"]
                    # rpc_new*: a new job, every timed call a shape the server has not seen.
                    new = results.get(f"{record['shape']}/1/new-shape")
                    if new:
                        record["rpc_new"] = new
                        record["rpc_new_ms_p50"], record["rpc_new_ms_p99"] = new["p50_ms"], new["p99_ms"]
                        if new.get("floor_p50_ms"):
                            record["rpc_new_floor_ratio"] = new["p50_ms"] / new["floor_p50_ms"]
                    record["rpc_variant_mismatches"] = sum(r["variant_mismatches"] for r in record["rpc"].values())
                    # Each one-caller run's own health Checks, sent between its calls.
                    for suffix in ("", "_repeat"):
                        floor_p50 = record["rpc" + suffix][str(min(args.concurrency))].get("floor_p50_ms")
                        if floor_p50:
                            record[f"rpc{suffix}_floor_ratio"] = record[f"rpc{suffix}_ms_p50"] / floor_p50
                    record["rss_mb"] = memory["rss_mb"]
                progress.update(1)
            starts = [size["servers"][mode]["warm"] for mode in MODES]
            for i in range(args.warm_starts if n <= 10_000 else min(args.warm_starts, 1)):
                progress.set_postfix_str(f"{n} nodes: warm start {i + 1}")
                server = Server(spec.name, path, "best", warm_cache, log_dir, objects_cache)
                try:
                    starts.append(server.start())
                finally:
                    server.stop()
            # One parsed start near a target is a coin toss on a shared machine: a few more,
            # each parsing the file without writing an entry (the first server also saved one).
            for i in range(args.parsed_starts):
                progress.set_postfix_str(f"{n} nodes: parsed start {i + 1}")
                server = Server(spec.name, path, "best", warm_cache, log_dir, "off")
                try:
                    starts.append(server.start())
                finally:
                    server.stop()
            # Warm numba cache; split by what the start did with the member file.
            for how in ("cache", "parsed"):
                samples = [s["ready_s"] for s in starts if s.get("objects") == how]
                if samples:
                    size[f"ready_warm_{how}"] = {"samples_s": samples, "median_s": float(np.median(samples)),
                                                 "min_s": min(samples), "max_s": max(samples)}
            size["ready_warm"] = size.get("ready_warm_cache") or size.get("ready_warm_parsed")
            for record in size_records:
                record["ready_warm_s"] = size["ready_warm"]["median_s"]
            if not args.no_cold:
                progress.set_postfix_str(f"{n} nodes: cold start")
                with tempfile.TemporaryDirectory(prefix="numba-cold-") as cold:
                    server = Server(spec.name, path, "best", cold, log_dir, objects_cache)
                    try:
                        size["servers"]["cold"] = server.start()
                    finally:
                        server.stop()
                progress.update(1)
        for record in size_records:
            for key in ("rpc_ms_p50", "rpc_ms_p99", "rps", "rpc_repeat_ms_p50", "rpc_repeat_ms_p99", "rps_repeat",
                        "rpc_floor_ratio", "rpc_repeat_floor_ratio", "rpc_new_ms_p50", "rpc_new_ms_p99",
                        "rpc_new_floor_ratio", "rss_mb"):
                record.setdefault(key, None)
            record["ready_cold_s"] = (size.get("servers", {}).get("cold") or {}).get("ready_s")
        records.extend(size_records)
        sizes.append(size)
    progress.close()

    acc_bar = bar(args.accuracy, "accuracy", show)
    acc = accuracy.run(args.accuracy, progress=lambda i: acc_bar.update(1))
    acc_bar.close()
    best_gain = measure_best_gain(300 if args.quick else quality.TARGET_NODES, 2 if args.quick else 10)

    env["loadavg_end"] = list(os.getloadavg())
    env["wall_s"] = time.perf_counter() - wall_started
    result = {
        "schema": SCHEMA_VERSION,
        "quick": args.quick,
        "environment": env,
        "settings": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
        "calibration": calibration,
        "shapes": {name: desc for name, (desc, _) in SHAPES.items() if name in args.shapes},
        "target_shape": TARGET_SHAPE,
        "sizes": sizes,
        "records": records,
        "accuracy": acc,
        "best_gain": best_gain,
        "profiles": profiles,
        "failed_checks": [
            f"{r['nodes']}/{r['shape']}/{r['mode']}: {name}"
            for r in records for name, ok in r["checks"].items() if not ok
        ] + [f"{r['nodes']}/{r['shape']}/{r['mode']}: rpc answer {r['rpc_answer']} != in-process {r['answer']}"
             for r in records if r.get("rpc_answer") is not None and r["rpc_answer"] != r["answer"]]
          + [f"{r['nodes']}/{r['shape']}/{r['mode']}: rpc repeat answer {r['rpc_answer_repeat']} != in-process {r['answer']}"
             for r in records if r.get("rpc_answer_repeat") is not None and r["rpc_answer_repeat"] != r["answer"]]
          + [f"{r['nodes']}/{r['shape']}/{r['mode']}: {r['rpc_variant_mismatches']} request variants got another answer"
             for r in records if r.get("rpc_variant_mismatches")],
    }
    out_json = args.out / "latest.json"
    tmp = out_json.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(result, indent=1, default=float) + "\n")
    tmp.replace(out_json)
    print(f"wrote {out_json}", file=sys.stderr)
    if not args.no_report:
        md = REPO / "benchmarks" / "RESULTS.md" if not args.quick and args.out == RESULTS else args.out / "RESULTS.md"
        report.write(result, md, args.out)  # adds result["plots"]
        tmp.write_text(json.dumps(result, indent=1, default=float) + "\n")
        tmp.replace(out_json)
        print(f"wrote {md} and plots in {args.out}", file=sys.stderr)
    print(report.summary_table(result))
    if result["failed_checks"]:
        print("FAILED CHECKS:\n  " + "\n  ".join(result["failed_checks"]), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
