"""Kernel micro-benchmark: first-fit and best mode on every job shape, side by side.

    python -m benchmarks.kernel_shapes                   # 10k and 50k nodes
    python -m benchmarks.kernel_shapes --nodes 10000 --repeat 200
    python -m benchmarks.kernel_shapes --write   # also writes its section of RESULTS.md

The arrays are exactly what the node-resource plugin hands the kernels
(`benchmarks.run.plugin_arrays` on the seeded member of `benchmarks.members`); they are
cached next to the member file (benchmarks/data/, never committed), so a second run skips
the slow load. Times are this thread's CPU time per call (`time.thread_time`), which other
work on a shared machine disturbs far less than wall time; p50 and the minimum over
`--repeat` calls, the kernels called in turn, call by call, first-fit getting a fresh copy
of `available` per call outside the timed region. The arrays are vouched for once, as the
plugin's are (`kernels.vouch`), so each call skips the scans over every node, as in the
server. Also first-fit with its bound
(`first_fit_bounded`, what the plugin runs in first-fit mode on a shape's first request:
both modes then answer with a bound), sets, best's bound and work (node visits), best /
bounded first-fit, and best with the bound cached (what the plugin runs from the second
request of a shape on a snapshot on, where first-fit mode runs first-fit alone) / first-fit.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from benchmarks import members
from benchmarks.resultsmd import replace_section
from benchmarks.shapes import SHAPES

UPPER = 2**31 - 1
SECTION = "## Kernels per job shape"
_FIELDS = ("available", "requests", "replicas", "masks")


def shape_arrays(n_nodes: int, seed: int = 1) -> dict[str, tuple[np.ndarray, ...]]:
    """{shape: (available, requests, replicas, masks)} for the seeded member of n_nodes,
    vouched for as the node-resource plugin's arrays are (the kernels skip their scans)."""
    from estimator import kernels

    roles = (kernels.AMOUNTS, kernels.REQUEST_ROWS, kernels.AMOUNTS, kernels.FLAGS)
    return {shape: tuple(kernels.vouch(f, np.ascontiguousarray(a), role) for f, a, role in zip(_FIELDS, arrays, roles))
            for shape, arrays in _shape_arrays(n_nodes, seed).items()}


def _shape_arrays(n_nodes: int, seed: int) -> dict[str, tuple[np.ndarray, ...]]:
    spec = members.MemberSpec(n_nodes, seed)
    cache = spec.path().with_suffix(".arrays.npz")
    if cache.exists():
        with np.load(cache) as data:
            return {shape: tuple(data[f"{shape}/{f}"] for f in _FIELDS) for shape in SHAPES}
    from benchmarks.run import plugin_arrays
    from estimator.cluster.files import load_object_files

    path, _ = members.ensure(spec)
    snapshot = load_object_files([path], state_cache=None).snapshot()
    out = {shape: plugin_arrays(snapshot, query) for shape, (_, query) in SHAPES.items()}
    np.savez(cache, **{f"{shape}/{f}": a for shape, arrays in out.items() for f, a in zip(_FIELDS, arrays)})
    return out


def _cpu_ms(calls: dict, repeat: int) -> dict[str, tuple[float, float]]:
    """{name: (p50 ms, min ms)} of this thread's CPU time per call, the calls interleaved
    call by call (so a burst of load on the shared machine hits every kernel alike).
    Each call is (prepare, fn): fn(prepare()) is timed, prepare() is not."""
    samples: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(repeat):
        for name, (prepare, fn) in calls.items():
            arg = prepare()
            started = time.thread_time()
            fn(arg)
            samples[name].append(time.thread_time() - started)
    return {name: (float(np.median(v) * 1e3), float(np.min(v) * 1e3)) for name, v in samples.items()}


def measure(n_nodes: int, repeat: int, budget: float | None) -> list[dict]:
    from estimator import kernels

    rows = []
    for shape, (available, requests, replicas, masks) in shape_arrays(n_nodes).items():
        first_fit = kernels.first_fit_sets(available.copy(), requests, replicas, masks, UPPER)
        # The columns laid out one after another, as the plugin keeps them per snapshot.
        layout = kernels.column_layout(available)
        best = kernels.best_sets(available, requests, replicas, masks, UPPER, budget=budget, by_column=layout)
        nothing = lambda: None  # noqa: E731
        ms = _cpu_ms({
            "first_fit": (lambda: kernels.vouched_copy(available), lambda a: kernels.first_fit_sets(a, requests, replicas, masks, UPPER)),
            "bounded": (lambda: kernels.vouched_copy(available), lambda a: kernels.first_fit_bounded(a, requests, replicas, masks, UPPER)),
            "best": (nothing, lambda _: kernels.best_sets(available, requests, replicas, masks, UPPER, budget=budget,
                                                          by_column=layout)),
            # What the plugin runs in best mode from the second request of a shape on a
            # snapshot on: the bound is cached per snapshot and shape, as in first-fit mode.
            "best_cached": (nothing, lambda _: kernels.best_sets(available, requests, replicas, masks, UPPER,
                                                                 budget=budget, known_bound=best.bound)),
        }, repeat)
        rows.append({"nodes": n_nodes, "shape": shape, "first_fit_sets": first_fit.sets, "best_sets": best.sets,
                     "bound": best.bound, "first_fit_work": first_fit.work, "best_work": best.work,
                     "first_fit_ms_p50": ms["first_fit"][0], "first_fit_ms_min": ms["first_fit"][1],
                     "bounded_ms_p50": ms["bounded"][0], "best_ms_p50": ms["best"][0], "best_ms_min": ms["best"][1],
                     "best_cached_ms_p50": ms["best_cached"][0]})
    return rows


def write_section(path: Path, text: str) -> None:
    replace_section(path, SECTION, text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.kernel_shapes", description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[10000, 50000])
    parser.add_argument("--repeat", type=int, default=100, help="calls per kernel and shape")
    parser.add_argument("--budget", type=float, default=1.0, help="best mode's budget (inf: no limit)")
    parser.add_argument("--write", action="store_true", help="also write the table into benchmarks/RESULTS.md")
    args = parser.parse_args(argv)
    from estimator import kernels

    kernels.warmup()
    budget = None if args.budget == float("inf") else args.budget
    load = os.getloadavg()[0]
    table = ["| nodes | shape | first-fit sets | best sets | bound | first-fit ms p50 (min) | first-fit + bound ms p50 "
             "| best ms p50 (min) | best / first-fit + bound | best, bound cached, ms p50 | best cached / first-fit "
             "| work first-fit / best |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    print("\n".join(table))
    for n in args.nodes:
        for r in measure(n, args.repeat, budget):
            table.append(
                f"| {n:,} | {r['shape']} | {r['first_fit_sets']:,} | {r['best_sets']:,} | {r['bound']:,} | "
                f"{r['first_fit_ms_p50']:.3f} ({r['first_fit_ms_min']:.3f}) | {r['bounded_ms_p50']:.3f} | "
                f"{r['best_ms_p50']:.3f} ({r['best_ms_min']:.3f}) | "
                f"{r['best_ms_p50'] / max(r['bounded_ms_p50'], 1e-9):.2f}x | {r['best_cached_ms_p50']:.3f} | "
                f"{r['best_cached_ms_p50'] / max(r['first_fit_ms_p50'], 1e-9):.2f}x | "
                f"{r['first_fit_work']:,} / {r['best_work']:,} |")
            print(table[-1], flush=True)
    if args.write:
        command = " ".join(["python -m benchmarks.kernel_shapes", *(argv if argv is not None else sys.argv[1:])])
        date = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        text = "\n".join([
            SECTION, "",
            f"Written by `benchmarks/kernel_shapes.py`. **Command:** `{command}`. **Date:** {date}. **Machine:** "
            f"{os.cpu_count()} cores, Python {platform.python_version()}, 1-minute load average {load:.1f} at the "
            "start (shared: times are this thread's CPU time per call, which load disturbs less than wall time, but "
            "still upwards). Best mode with budget "
            f"{args.budget:g}: its search may do that many times first-fit's work, in node visits. *first-fit + "
            "bound* is what the plugin runs in first-fit mode; *work* is node visits (`Packing.work`), exact and "
            "the same on every run.", "", *table, ""])
        write_section(Path(__file__).resolve().parent / "RESULTS.md", text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
