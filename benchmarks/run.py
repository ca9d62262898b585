"""The benchmark harness: speed and accuracy side by side, in one run.

    python -m benchmarks.run            # full (make bench): 1k, 5k, 10k, 50k nodes
    python -m benchmarks.run --quick    # smoke (make bench-quick): tiny sizes, short budgets

Per member size x job shape x packing mode:
- kernel latency: the public kernels (`kernels.first_fit_sets`, `kernels.best_sets`,
  wrappers and validation included) on exactly the arrays the node-resource plugin builds
  (its own `_columns`, `_gather`, `_Packing`); first-fit gets a fresh copy of `available`
  per call, made outside the timed region (it consumes it). Also the whole in-process
  plugin path (`Estimator.max_available_component_sets`: arrays + kernel + quota plugin);
- the naive rescanning first-fit (Karmada's Go loop, compiled, benchmarks/naive_rescan.py)
  over the same arrays, capped by a budget of node visits, and the plain-Python version
  where it is predicted to finish within its cap; answers cross-checked;
- end-to-end gRPC from a separate client process (benchmarks/rpc_client.py) against a real
  `karmada-estimator` process started on the member file, with 1, 4 and 16 callers;
  start-to-ready (warm numba cache, and cold: an empty NUMBA_CACHE_DIR); RSS.
Then the accuracy table (benchmarks/accuracy.py), a profile of the target case, the JSON,
RESULTS.md and the plots (benchmarks/report.py).
"""

from __future__ import annotations

import argparse
import cProfile
import gc
import io
import json
import logging
import os
import platform
import pstats
import re
import shlex
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from benchmarks import accuracy, members, naive_rescan, report
from benchmarks.progress import bar
from benchmarks.resultsmd import percentile
from benchmarks.shapes import SHAPES, TARGET_SHAPE

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results"
UPPER = 2**31 - 1
MODES = ("best", "first-fit")
SCHEMA_VERSION = 1
RECORD_FIELDS = ("nodes", "pods", "shape", "mode", "kernel_ms_p50", "kernel_ms_p99", "naive_ms", "speedup",
                 "rpc_ms_p50", "rpc_ms_p99", "rps", "rss_mb")


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
    code = "import estimator.__main__, estimator.server, estimator.state, estimator.kernels"
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


# --- timing helpers -------------------------------------------------------------------------


def _stats_ms(samples: list[float]) -> tuple[float, float]:
    values = np.asarray(samples) * 1e3
    return percentile(values, 50), percentile(values, 99)


def time_calls(fn, budget_s: float, prepare=None, min_samples: int = 20, max_samples: int = 20000) -> list[float]:
    """Wall time of fn(prepare()) per call until both the budget and min_samples are met.

    GC is off while timing (as timeit does); `prepare` runs outside the timed region.
    """
    for _ in range(3):
        fn(prepare() if prepare else None)
    samples: list[float] = []
    clock = time.perf_counter
    gc_was = gc.isenabled()
    gc.disable()
    try:
        started = clock()
        while len(samples) < max_samples and (len(samples) < min_samples or clock() - started < budget_s):
            arg = prepare() if prepare else None
            t0 = clock()
            fn(arg)
            samples.append(clock() - t0)
    finally:
        if gc_was:
            gc.enable()
    return samples


# --- in-process: kernels, plugin path, naive references ------------------------------------


def plugin_arrays(snapshot, query):
    """The arrays the node-resource plugin hands to the kernels, built by its own helpers."""
    from estimator.plugins import noderesource as nr

    columns = nr._columns([c.shape for c in query.components])
    index = {name: k for k, name in enumerate(columns)}
    available = nr._gather(snapshot, columns)
    packing = nr._Packing(snapshot, query.components, index)
    return available, packing.requests, packing.replicas, packing.masks


def calibrate_naive() -> dict:
    """Node visits per second of the compiled rescan, and how much slower plain Python is."""
    rng = np.random.default_rng(0)
    n = 400
    available = np.zeros((n, 3), dtype=np.int64)
    available[:, 0] = 110
    available[:, 1] = 64_000
    available[n // 2 :, 2] = rng.integers(0, 5, size=n - n // 2)
    requests = np.array([[1, 1000, 0], [1, 2000, 1]], dtype=np.int64)
    replicas = np.array([1, 2], dtype=np.int64)
    masks = np.ones((2, n), dtype=np.bool_)
    compiled = min((naive_rescan.compiled_first_fit(available, requests, replicas, masks, UPPER, 10**12)
                    for _ in range(5)), key=lambda r: r.seconds)
    python = naive_rescan.python_first_fit(available, requests, replicas, masks, UPPER, 30.0)
    assert compiled.sets == python.sets and compiled.complete and python.complete
    return {
        "compiled_visits_per_s": compiled.visits / compiled.seconds,
        "python_over_compiled": python.seconds / compiled.seconds,
    }


def measure_case(snapshot, shape: str, args, calibration: dict, verify_naive) -> list[dict]:
    """Kernel, plugin-path and naive figures for one member x shape, one record per mode."""
    from estimator import kernels
    from estimator.estimate import Estimator

    query = SHAPES[shape][1]
    available, requests, replicas, masks = plugin_arrays(snapshot, query)
    first_fit = kernels.first_fit_sets(available.copy(), requests, replicas, masks, UPPER)
    best = kernels.best_sets(available, requests, replicas, masks, UPPER)
    # Independent checks at scale: best >= first-fit, and both witnesses hold (tests/naive.verify).
    checks = {
        "best_ge_first_fit": best.sets >= first_fit.sets,
        "best_witness_ok": bool(verify_naive(available, requests, replicas, masks, best.sets, best.placement)),
        "first_fit_witness_ok": bool(verify_naive(available, requests, replicas, masks, first_fit.sets,
                                                  first_fit.placement)),
    }
    # The naive rescans: several runs when quick, one when slow.
    budget = int(args.naive_cap * calibration["compiled_visits_per_s"])
    runs = []
    while True:
        runs.append(naive_rescan.compiled_first_fit(available, requests, replicas, masks, UPPER, budget))
        if not runs[-1].complete or len(runs) >= 5 or sum(r.seconds for r in runs) > 0.5:
            break
    naive = sorted(runs, key=lambda r: r.seconds)[len(runs) // 2]
    predicted_python = naive.seconds * calibration["python_over_compiled"]
    python = None
    if naive.complete and predicted_python <= args.python_cap:
        python = naive_rescan.python_first_fit(available, requests, replicas, masks, UPPER, args.python_cap)
    if naive.complete:
        checks["naive_equals_first_fit"] = naive.sets == first_fit.sets
    if python is not None and python.complete:
        checks["python_equals_first_fit"] = python.sets == first_fit.sets

    records = []
    for mode in MODES:
        if mode == "first-fit":
            kernel = lambda a: kernels.first_fit_sets(a, requests, replicas, masks, UPPER)  # noqa: E731
            samples = time_calls(kernel, args.kernel_seconds, prepare=available.copy)
            sets = first_fit.sets
        else:
            kernel = lambda _: kernels.best_sets(available, requests, replicas, masks, UPPER)  # noqa: E731
            samples = time_calls(kernel, args.kernel_seconds)
            sets = best.sets
        estimator = Estimator(lambda: snapshot, packing=mode)
        answer = estimator.max_available_component_sets(query).sets
        plugin = time_calls(lambda _: estimator.max_available_component_sets(query), args.kernel_seconds / 2)
        p50, p99 = _stats_ms(samples)
        plugin_p50, plugin_p99 = _stats_ms(plugin)
        naive_ms = naive.seconds * 1e3
        records.append({
            "nodes": snapshot.num_nodes,
            "shape": shape,
            "mode": mode,
            "sets": sets,
            "answer": answer,
            "kernel_ms_p50": p50,
            "kernel_ms_p99": p99,
            "kernel_samples": len(samples),
            "plugin_ms_p50": plugin_p50,
            "plugin_ms_p99": plugin_p99,
            "naive_ms": naive_ms,
            "naive_sets": naive.sets,
            "naive_complete": naive.complete,
            "naive_node_visits": naive.visits,
            "speedup": naive_ms / p50 if p50 > 0 else None,
            "speedup_is_lower_bound": not naive.complete,
            "python_ms": python.seconds * 1e3 if python is not None else None,
            "python_complete": python.complete if python is not None else None,
            "python_predicted_ms": predicted_python * 1e3 if naive.complete else None,
            "python_speedup": (python.seconds * 1e3 / p50) if python is not None and python.complete else None,
            "checks": checks,
        })
    return records


# --- server processes -----------------------------------------------------------------------


# klog's header (`I1201 20:48:43.123456 12345 server.py:88] ...`, local time, no year).
_LOG_TIME = re.compile(r"^[IWEF](\d{4} \d\d:\d\d:\d\d\.\d{6}) ")


def _klog_stamp(text: str, now: float | None = None) -> float:
    """Epoch seconds of a klog header time; the year is the one that puts it nearest to now."""
    now = time.time() if now is None else now
    year = datetime.fromtimestamp(now).year
    stamps = [datetime.strptime(f"{y}{text}", "%Y%m%d %H:%M:%S.%f").timestamp() for y in (year - 1, year)]
    return min(stamps, key=lambda s: abs(s - now))


def _log_times(text: str) -> dict:
    """Seconds since the epoch of the start-up milestones in a text-format server log."""
    out = {}
    for line in text.splitlines():
        match = _LOG_TIME.match(line)
        if not match:
            continue
        stamp = _klog_stamp(match.group(1))
        if "loaded" in line and "nodes from" in line and "loaded" not in out:
            out["loaded"] = stamp
        elif "listening on port" in line:
            out.setdefault("listening", stamp)
        elif "kernels ready in" in line:
            out["kernels_ready"] = stamp
            out["kernels_seconds"] = float(re.search(r"kernels ready in ([0-9.]+)s", line).group(1))
        elif "readiness changed: ready" in line:
            out.setdefault("ready", stamp)
    return out


def _rss(pid: int) -> dict:
    fields = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(("VmRSS:", "VmHWM:")):
                fields[line.split(":")[0]] = int(line.split()[1]) / 1024
    except OSError:
        pass
    return {"rss_mb": fields.get("VmRSS"), "rss_peak_mb": fields.get("VmHWM")}


class Server:
    """A real `karmada-estimator` process on one member file (scheduler_client.launch)."""

    def __init__(self, member: str, path: Path, mode: str, cache_dir: str, log_dir: Path):
        from scheduler_client.launch import LocalEstimator

        self.est = LocalEstimator(member, [path], packing=mode)
        self.log_path = log_dir / f"{member}-{mode}-{Path(cache_dir).name}.log"
        self.cache_dir = cache_dir

    def start(self, timeout: float = 600.0) -> dict:
        import grpc
        from grpc_health.v1 import health_pb2, health_pb2_grpc

        env = dict(os.environ, NUMBA_CACHE_DIR=self.cache_dir)
        log = self.log_path.open("w")
        # One channel, reconnecting every 20-50 ms while the port is closed: cheap polling that
        # takes little CPU from the starting server on a 2-core machine.
        channel = grpc.insecure_channel(self.est.address, options=[
            ("grpc.initial_reconnect_backoff_ms", 20), ("grpc.min_reconnect_backoff_ms", 20),
            ("grpc.max_reconnect_backoff_ms", 50)])
        health = health_pb2_grpc.HealthStub(channel)
        wall0 = time.time()
        t0 = time.perf_counter()
        self.est.process = subprocess.Popen(self.est.command(), stdout=log, stderr=log, env=env, cwd=REPO)
        deadline = t0 + timeout
        try:
            while True:
                if self.est.process.poll() is not None:
                    raise RuntimeError(f"estimator exited with {self.est.process.returncode}; log: {self.log_path}\n"
                                       + self.log_path.read_text()[-3000:])
                try:
                    reply = health.Check(health_pb2.HealthCheckRequest(), timeout=0.25, wait_for_ready=True)
                    if reply.status == health_pb2.HealthCheckResponse.SERVING:
                        break
                    time.sleep(0.02)
                except grpc.RpcError:
                    pass
                if time.perf_counter() > deadline:
                    self.stop()
                    raise TimeoutError(f"estimator not ready in {timeout}s; log: {self.log_path}")
        finally:
            channel.close()
        ready = time.perf_counter() - t0
        time.sleep(0.05)
        marks = _log_times(self.log_path.read_text())
        phases = {"ready_s": ready}
        if "loaded" in marks:
            phases["start_to_loaded_s"] = marks["loaded"] - wall0  # interpreter + imports + load
        if "kernels_seconds" in marks:
            phases["kernels_s"] = marks["kernels_seconds"]
        return phases

    @property
    def address(self) -> str:
        return self.est.address

    def rss(self) -> dict:
        return _rss(self.est.process.pid)

    def stop(self) -> None:
        self.est.stop()


def rpc_runs(server: Server, member: str, shapes, args) -> dict:
    """One client process, every shape x concurrency, plus the health-check floor."""
    from estimator.pb import estimator_pb2  # noqa: F401  (loaded for wire below)
    from grpc_health.v1 import health_pb2
    from scheduler_client.wire import component_sets_request

    runs = []
    for shape in shapes:
        request = component_sets_request(member, SHAPES[shape][1]).SerializeToString().hex()
        for c in args.concurrency:
            runs.append({"key": f"{shape}/{c}", "request_hex": request, "concurrency": c,
                         "seconds": args.rpc_seconds, "warmup_calls": 20})
    plan = {"address": server.address, "runs": runs,
            "floor": {"request_hex": health_pb2.HealthCheckRequest().SerializeToString().hex(),
                      "seconds": args.rpc_seconds}}
    out = subprocess.run([sys.executable, "-m", "benchmarks.rpc_client"], input=json.dumps(plan),
                         capture_output=True, text=True, cwd=REPO, timeout=600 + 10 * len(runs) * args.rpc_seconds)
    if out.returncode != 0:
        raise RuntimeError(f"rpc client failed ({out.returncode}):\n{out.stderr[-3000:]}")
    data = json.loads(out.stdout)
    return {r["key"]: r for r in data["results"]} | {"floor": data.get("floor")}


def _short_paths(line: str) -> str:
    """cProfile lines with repository, site-packages and stdlib prefixes dropped."""
    line = line.replace(str(REPO) + "/", "")
    return re.sub(r"\S*/(site-packages|lib/python3\.\d+)/", "", line)


# --- profile of the target case -------------------------------------------------------------


def profile_target(snapshot, member: str, mode: str, top: int = 14) -> dict:
    """Where one in-process estimate spends its time (the RPC minus the gRPC transport)."""
    from estimator import convert, kernels
    from estimator.estimate import Estimator
    from estimator.logsetup import REQUEST_LOGGER
    from estimator.metrics import EstimatorMetrics
    from estimator.pb import estimator_pb2
    from estimator.plugins import noderesource as nr
    from estimator.plugins.resourcequota import ResourceQuotaPlugin
    from estimator.framework import EstimateContext
    from estimator.servicer import EstimatorServicer
    from scheduler_client.wire import component_sets_request

    logging.getLogger(REQUEST_LOGGER).setLevel(logging.WARNING)  # as the server at --v 0
    query = SHAPES[TARGET_SHAPE][1]
    estimator = Estimator(lambda: snapshot, packing=mode)
    servicer = EstimatorServicer(member, estimator, EstimatorMetrics())
    raw = component_sets_request(member, query).SerializeToString()

    class _Context:
        def invocation_metadata(self):
            return (("object", "kind=PyTorchJob, name=ml-team/bench"),)

        def abort(self, code, message):
            raise RuntimeError(f"{code}: {message}")

    context = _Context()

    def whole(_):
        request = estimator_pb2.MaxAvailableComponentSetsRequest.FromString(raw)
        return servicer.MaxAvailableComponentSets(request, context).SerializeToString()

    available, requests, replicas, masks = plugin_arrays(snapshot, query)
    columns = nr._columns([c.shape for c in query.components])
    index = {name: k for k, name in enumerate(columns)}
    if mode == "first-fit":
        kernel = (lambda a: kernels.first_fit_sets(a, requests, replicas, masks, UPPER), available.copy)
    else:
        kernel = (lambda _: kernels.best_sets(available, requests, replicas, masks, UPPER), None)
    quota = ResourceQuotaPlugin()
    ctx = EstimateContext(snapshot, mode)
    parts = {
        "servicer_total": (whole, None),
        "decode_and_convert": (lambda _: convert.component_sets_query(
            estimator_pb2.MaxAvailableComponentSetsRequest.FromString(raw)), None),
        "estimate_total": (lambda _: estimator.max_available_component_sets(query), None),
        "gather_columns": (lambda _: nr._gather(snapshot, columns), None),
        "request_rows_and_masks": (lambda _: nr._Packing(snapshot, query.components, index), None),
        "kernel": kernel,
        "quota_plugin": (lambda _: quota.estimate_components(ctx, query), None),
    }
    breakdown = {}
    for name, (fn, prepare) in parts.items():
        breakdown[name] = _stats_ms(time_calls(fn, 0.4, prepare=prepare))[0]
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(2000):
        whole(None)
    profiler.disable()
    stream = io.StringIO()
    stats = pstats.Stats(profiler, stream=stream)
    stats.sort_stats("tottime").print_stats(top)
    text = stream.getvalue()
    lines = [line.rstrip() for line in text.splitlines() if line.strip()]
    start = next((i for i, line in enumerate(lines) if line.lstrip().startswith("ncalls")), 0)
    table = [_short_paths(line) for line in lines[start:]]
    return {"nodes": snapshot.num_nodes, "shape": TARGET_SHAPE, "mode": mode, "median_ms": breakdown,
            "cprofile_calls": 2000, "cprofile_top_by_tottime": table}


def profile_load(path: Path, top: int = 12) -> dict:
    """Where loading a member file goes (the bulk of start-to-ready on big members)."""
    from estimator.snapshot_source import load_snapshot

    started = time.perf_counter()
    text = path.read_text()
    read_s = time.perf_counter() - started
    started = time.perf_counter()
    json.loads(text)
    parse_s = time.perf_counter() - started
    del text
    profiler = cProfile.Profile()
    started = time.perf_counter()
    profiler.enable()
    load_snapshot([path]).snapshot()
    profiler.disable()
    profiled_s = time.perf_counter() - started
    stream = io.StringIO()
    stats = pstats.Stats(profiler, stream=stream)
    stats.sort_stats("tottime").print_stats(top)
    lines = [line.rstrip() for line in stream.getvalue().splitlines() if line.strip()]
    start = next((i for i, line in enumerate(lines) if line.lstrip().startswith("ncalls")), 0)
    table = [_short_paths(line) for line in lines[start:]]
    # isinstance(x, typing.Mapping) goes through typing's __instancecheck__: its cumulative time.
    typing_s = sum(ct for (file, _, func), (_, _, _, ct, _) in stats.stats.items()
                   if file.endswith("typing.py") and func == "__instancecheck__")
    return {"file": path.name, "read_s": read_s, "json_parse_s": parse_s, "profiled_load_s": profiled_s,
            "typing_instancecheck_s": typing_s, "typing_instancecheck_share": typing_s / profiled_s,
            "cprofile_top_by_tottime": table}


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
    from estimator.snapshot_source import load_snapshot

    from tests import naive as naive_oracle

    kernels.warmup()
    naive_rescan.warm_compiled()
    calibration = calibrate_naive()

    records: list[dict] = []
    sizes: list[dict] = []
    profiles: dict = {}
    log_dir = Path(tempfile.mkdtemp(prefix="bench-logs-"))
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
        snapshot = load_snapshot([path]).snapshot()
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
                server = Server(spec.name, path, mode, warm_cache, log_dir)
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
                    per = {str(c): results[f"{record['shape']}/{c}"] for c in args.concurrency}
                    one, most = per[str(min(args.concurrency))], per[str(max(args.concurrency))]
                    record["rpc"] = per
                    record["rpc_ms_p50"], record["rpc_ms_p99"] = one["p50_ms"], one["p99_ms"]
                    record["rps"] = most["rps"]
                    record["rpc_answer"] = one["max_sets"]
                    record["rss_mb"] = memory["rss_mb"]
                progress.update(1)
            samples = [size["servers"][mode]["warm"]["ready_s"] for mode in MODES]
            for i in range(args.warm_starts if n <= 10_000 else min(args.warm_starts, 1)):
                progress.set_postfix_str(f"{n} nodes: warm start {i + 1}")
                server = Server(spec.name, path, "best", warm_cache, log_dir)
                try:
                    samples.append(server.start()["ready_s"])
                finally:
                    server.stop()
            size["ready_warm"] = {"samples_s": samples, "median_s": float(np.median(samples)),
                                  "min_s": min(samples), "max_s": max(samples)}
            for record in size_records:
                record["ready_warm_s"] = size["ready_warm"]["median_s"]
            if not args.no_cold:
                progress.set_postfix_str(f"{n} nodes: cold start")
                with tempfile.TemporaryDirectory(prefix="numba-cold-") as cold:
                    server = Server(spec.name, path, "best", cold, log_dir)
                    try:
                        size["servers"]["cold"] = server.start()
                    finally:
                        server.stop()
                progress.update(1)
        for record in size_records:
            for key in ("rpc_ms_p50", "rpc_ms_p99", "rps", "rss_mb"):
                record.setdefault(key, None)
            record["ready_cold_s"] = (size.get("servers", {}).get("cold") or {}).get("ready_s")
        records.extend(size_records)
        sizes.append(size)
    progress.close()

    acc_bar = bar(args.accuracy, "accuracy", show)
    acc = accuracy.run(args.accuracy, progress=lambda i: acc_bar.update(1))
    acc_bar.close()

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
        "profiles": profiles,
        "failed_checks": [
            f"{r['nodes']}/{r['shape']}/{r['mode']}: {name}"
            for r in records for name, ok in r["checks"].items() if not ok
        ] + [f"{r['nodes']}/{r['shape']}/{r['mode']}: rpc answer {r['rpc_answer']} != in-process {r['answer']}"
             for r in records if r.get("rpc_answer") is not None and r["rpc_answer"] != r["answer"]],
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
