"""In-process measurements for benchmarks.run: timing loops, the kernels and plugin path on the
plugin's own arrays, the naive references, and profiles of the target case and of loading."""

from __future__ import annotations

import cProfile
import gc
import itertools
import io
import json
import logging
import pstats
import re
import time
from pathlib import Path

import numpy as np

from benchmarks import naive_rescan
from benchmarks.resultsmd import percentile
from benchmarks.shapes import SHAPES, TARGET_SHAPE

REPO = Path(__file__).resolve().parents[1]
UPPER = 2**31 - 1
MODES = ("best", "first-fit")


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
    """The arrays the node-resource plugin hands to the kernels (its public `kernel_inputs`)."""
    from estimator.estimate.plugins import noderesource as nr

    inputs = nr.kernel_inputs(snapshot, query, vouched=True)  # vouched for, as the plugin does
    return inputs.available, inputs.requests, inputs.replicas, inputs.masks


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
    from estimator.estimate.estimate import Estimator

    query = SHAPES[shape][1]
    available, requests, replicas, masks = plugin_arrays(snapshot, query)
    first_fit = kernels.first_fit_sets(available.copy(), requests, replicas, masks, UPPER)
    layout = kernels.column_layout(available)  # kept per snapshot by the plugin
    best = kernels.best_sets(available, requests, replicas, masks, UPPER, by_column=layout)
    # Independent checks at scale: best >= first-fit, and both witnesses hold (tests/support/naive.verify).
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
            samples = time_calls(kernel, args.kernel_seconds, prepare=lambda: kernels.vouched_copy(available))
            sets = first_fit.sets
        else:
            kernel = lambda _: kernels.best_sets(available, requests, replicas, masks, UPPER, by_column=layout)  # noqa: E731
            samples = time_calls(kernel, args.kernel_seconds)
            sets = best.sets
        estimator = Estimator(lambda: snapshot, packing=mode)
        answer = estimator.max_available_component_sets(query).sets
        # New answers: more variants than the answer memo holds, so every timed call runs the plugins.
        variants, turn = memo_variants(query), itertools.count()
        plugin = time_calls(lambda _: estimator.max_available_component_sets(variants[next(turn) % len(variants)]),
                            args.kernel_seconds / 2)
        # A new job: every call a shape this estimator has not seen (nothing kept for it).
        fresh = itertools.count(1)
        plugin_new = time_calls(lambda q: estimator.max_available_component_sets(q), args.kernel_seconds / 2,
                                prepare=lambda: new_shape(query, next(fresh)))
        p50, p99 = _stats_ms(samples)
        plugin_p50, plugin_p99 = _stats_ms(plugin)
        plugin_new_p50, _ = _stats_ms(plugin_new)
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
            "plugin_new_ms_p50": plugin_new_p50,
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


# --- profiles of the target case and of loading --------------------------------------------


def _short_paths(line: str) -> str:
    """cProfile lines with repository, site-packages and stdlib prefixes dropped."""
    line = line.replace(str(REPO) + "/", "")
    return re.sub(r"\S*/(site-packages|lib/python3\.\d+)/", "", line)


# --- profile of the target case -------------------------------------------------------------


def new_shape(query, i: int):
    """`query` asking for i more bytes of memory in every component (as
    run_server.new_shape_variants, on the model side): a shape not seen before."""
    from dataclasses import replace

    return replace(query, components=tuple(
        replace(c, shape=replace(c.shape, requests=tuple((name, amount + i if name == "memory" else amount)
                                                         for name, amount in c.shape.requests)))
        for c in query.components))


def memo_variants(query) -> list:
    """`query` in more variants than the answer memo holds, differing only in the components'
    priority class (as run_server.new_answer_variants, on the model side)."""
    from dataclasses import replace

    from benchmarks.run_server import VARIANTS_PER_CALLER

    return [replace(query, components=tuple(replace(c, shape=replace(c.shape, priority_class=f"bench-variant-{i}"))
                                            for c in query.components))
            for i in range(VARIANTS_PER_CALLER)]


def profile_target(snapshot, member: str, mode: str, top: int = 14) -> dict:
    """Where one in-process estimate spends its time (the RPC minus the gRPC transport)."""
    from estimator import kernels
    from estimator.estimate.estimate import Estimator
    from estimator.estimate.framework import EstimateContext
    from estimator.estimate.plugins import noderesource as nr
    from estimator.estimate.plugins.resourcequota import ResourceQuotaPlugin
    from estimator.pb import estimator_pb2
    from estimator.service import convert
    from estimator.service.logsetup import REQUEST_LOGGER
    from estimator.service.metrics import EstimatorMetrics
    from estimator.service.servicer import EstimatorServicer
    from scheduler_client.wire import component_sets_request

    logging.getLogger(REQUEST_LOGGER).setLevel(logging.WARNING)  # as the server at --v 0
    query = SHAPES[TARGET_SHAPE][1]
    estimator = Estimator(lambda: snapshot, packing=mode)
    servicer = EstimatorServicer(member, estimator, EstimatorMetrics())
    base = component_sets_request(member, query)
    raw = base.SerializeToString()
    # The totals time new answers, as the RPC's headline figure: the same job in more
    # variants than the answer memo holds (see run_server.new_answer_variants).
    from benchmarks.run_server import new_answer_variants
    variants = [bytes.fromhex(h) for h in new_answer_variants(base, 1)]
    queries = [convert.component_sets_query(estimator_pb2.MaxAvailableComponentSetsRequest.FromString(v))
               for v in variants]
    turn = itertools.count()

    class _Context:
        def invocation_metadata(self):
            return (("object", "kind=PyTorchJob, name=ml-team/bench"),)

        def abort(self, code, message):
            raise RuntimeError(f"{code}: {message}")

        def set_trailing_metadata(self, metadata):  # the certificate trailers (issue 27)
            pass

    context = _Context()

    def whole(_):
        request = estimator_pb2.MaxAvailableComponentSetsRequest.FromString(variants[next(turn) % len(variants)])
        return servicer.MaxAvailableComponentSets(request, context).SerializeToString()

    available, requests, replicas, masks = plugin_arrays(snapshot, query)
    columns = nr.kernel_inputs(snapshot, query).columns
    index = {name: k for k, name in enumerate(columns)}
    if mode == "first-fit":
        kernel = (lambda a: kernels.first_fit_sets(a, requests, replicas, masks, UPPER),
                  lambda: kernels.vouched_copy(available))
    else:
        layout = kernels.column_layout(available)  # kept per snapshot by the plugin
        kernel = (lambda _: kernels.best_sets(available, requests, replicas, masks, UPPER, by_column=layout), None)
    quota = ResourceQuotaPlugin()
    ctx = EstimateContext(snapshot, mode)
    parts = {
        "servicer_total": (whole, None),
        "decode_and_convert": (lambda _: convert.component_sets_query(
            estimator_pb2.MaxAvailableComponentSetsRequest.FromString(raw)), None),
        "estimate_total": (lambda _: estimator.max_available_component_sets(queries[next(turn) % len(queries)]),
                           None),
        # What a request pays for its columns (and first-fit's private copy) and request arrays
        # once the snapshot keeps them (the first request of a shape on a snapshot builds them).
        "gather_columns": ((lambda _: nr._available(snapshot, columns, (), index).copy()) if mode == "first-fit"
                           else (lambda _: nr._available(snapshot, columns, (), index)), None),
        "request_rows_and_masks": (lambda _: nr._packing(snapshot, query.components, columns, index), None),
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
    from estimator.cluster.files import load_object_files

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
    load_object_files([path], state_cache=None).snapshot()  # the parse, not a state-cache read
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
