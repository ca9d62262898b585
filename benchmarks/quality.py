"""Packing quality: how good first-fit and best answers are, and what best mode costs.

    python -m benchmarks.quality            # writes the "## Packing quality" section of RESULTS.md
    python -m benchmarks.quality --quick    # smoke run, prints JSON only

Two parts, both on the public kernels (`kernels.first_fit_sets` + `kernels.set_bound`, as the
node-resource plugin calls them in first-fit mode, and `kernels.best_sets`):

1. Small members from several generators (below), each against the exhaustive optimum
   (tests/support/naive.exhaustive; witnesses re-checked by tests/support/naive.verify, which shares no
   code with the kernels). Per mode: how often the answer is the optimum, over-promises
   (answer above the optimum, or a witness that fails: must be 0), answers below
   first-fit (must be 0), how often the answer's own bound proves it optimal, and bounds
   below the optimum (must be 0). Best runs with the default budget and without one.
2. "Where best matters": larger members (1,000 and 10,000 nodes) whose GPU pools come
   first in node order, with fragmented free GPUs of mixed sizes, few pod slots left on
   busy GPU nodes and a tainted pool, and jobs whose cpu-only launcher first-fit puts on
   a GPU node. Per job: how often best beats first-fit and by how much, and kernel times.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from benchmarks.accuracy import random_member
from benchmarks.resultsmd import replace_section
from estimator import kernels
from estimator.estimate.framework import DEFAULT_BEST_BUDGET

from tests.support import naive  # noqa: E402  (tests/support/naive.py: the independent oracle)

REPO = Path(__file__).resolve().parents[1]
UPPER = 2**31 - 1
SECTION = "## Packing quality"


# --- small members: several generators ----------------------------------------------------------


def fragmented_gpus(rng):
    """GPU nodes of mixed sizes, partly used (fragmented free GPUs), few pod slots; jobs with a
    cpu-only launcher and workers of 1, 2 or 4 GPUs."""
    n = int(rng.integers(2, 8))
    c = int(rng.integers(2, 4))
    size = rng.choice([2, 4, 8], size=n)
    available = np.zeros((n, 4), dtype=np.int64)
    available[:, 0] = rng.integers(1, 6, size=n)
    available[:, 1] = rng.integers(1, 17, size=n)
    available[:, 2] = rng.integers(4, 65, size=n)
    available[:, 3] = [int(rng.integers(0, s + 1)) for s in size]
    requests = np.zeros((c, 4), dtype=np.int64)
    requests[:, 0] = 1
    requests[:, 1] = rng.integers(1, 5, size=c)
    requests[:, 2] = rng.integers(1, 9, size=c)
    requests[0, 3] = 0  # the launcher
    requests[1:, 3] = rng.choice([1, 2, 4], size=c - 1)
    replicas = np.ones(c, dtype=np.int64)
    replicas[1:] = rng.integers(1, 4, size=c - 1)
    masks = np.ones((c, n), dtype=np.bool_)
    return available, requests, replicas, masks, UPPER


def tainted_pools(rng):
    """Nodes in two or three pools; a component may use the pools it tolerates or selects
    (node masks by pool), as taints and affinity make them."""
    n = int(rng.integers(2, 8))
    c = int(rng.integers(1, 4))
    pools = int(rng.integers(2, 4))
    pool = rng.integers(0, pools, size=n)
    available = np.zeros((n, 4), dtype=np.int64)
    available[:, 0] = rng.integers(1, 9, size=n)
    available[:, 1] = rng.integers(0, 13, size=n)
    available[:, 2] = rng.integers(0, 33, size=n)
    available[:, 3] = np.where(pool == 0, 0, rng.choice([0, 1, 2, 4], size=n))
    requests = np.zeros((c, 4), dtype=np.int64)
    requests[:, 0] = 1
    requests[:, 1] = rng.integers(0, 5, size=c)
    requests[:, 2] = rng.integers(0, 9, size=c)
    requests[:, 3] = rng.choice([0, 1, 2], size=c, p=[0.5, 0.3, 0.2])
    replicas = rng.integers(1, 4, size=c).astype(np.int64)
    allowed = rng.random((c, pools)) < 0.6
    allowed[np.arange(c), rng.integers(0, pools, size=c)] = True  # every component has a pool
    masks = allowed[:, pool]
    return available, requests, replicas, masks, UPPER


def quota_capped(rng):
    """The random generator with a cap on sets, as a ResourceQuota puts on the answer."""
    available, requests, replicas, masks = random_member(rng)
    return available, requests, replicas, masks, int(rng.integers(0, 7))


def many_components(rng):
    """Four components of one or two replicas on up to five nodes."""
    n = int(rng.integers(1, 6))
    available = np.zeros((n, 4), dtype=np.int64)
    available[:, 0] = rng.integers(1, 13, size=n)
    available[:, 1] = rng.integers(0, 25, size=n)
    available[:, 2] = rng.integers(0, 49, size=n)
    available[:, 3] = rng.choice([0, 1, 2, 4, 8], size=n)
    requests = np.zeros((4, 4), dtype=np.int64)
    requests[:, 0] = 1
    requests[:, 1] = rng.integers(0, 5, size=4)
    requests[:, 2] = rng.integers(0, 9, size=4)
    requests[:, 3] = rng.choice([0, 1, 2], size=4, p=[0.5, 0.35, 0.15])
    replicas = rng.integers(1, 3, size=4).astype(np.int64)
    masks = rng.random((4, n)) < 0.85
    return available, requests, replicas, masks, UPPER


def wider_members(rng):
    """More nodes and components than the others: 6 to 8 nodes of mixed GPU sizes (1, 2, 4 or
    8, partly used) with few pod slots, a tainted pool some components do not tolerate, 2 to 5
    components (a cpu-only one first). Nothing was tuned on it."""
    n = int(rng.integers(6, 9))
    c = int(rng.integers(2, 6))
    size = rng.choice([1, 2, 4, 8], size=n)
    available = np.zeros((n, 4), dtype=np.int64)
    available[:, 0] = rng.integers(1, 4, size=n)
    available[:, 1] = rng.integers(2, 33, size=n)
    available[:, 2] = rng.integers(4, 65, size=n)
    available[:, 3] = [int(rng.integers(0, s + 1)) for s in size]
    requests = np.zeros((c, 4), dtype=np.int64)
    requests[:, 0] = 1
    requests[:, 1] = rng.integers(1, 5, size=c)
    requests[:, 2] = rng.integers(1, 9, size=c)
    requests[1:, 3] = rng.choice([0, 1, 2], size=c - 1, p=[0.4, 0.4, 0.2])
    replicas = np.ones(c, dtype=np.int64)
    replicas[1:] = rng.integers(1, 3, size=c - 1)
    tainted = rng.random(n) < 0.3
    masks = np.ones((c, n), dtype=np.bool_)
    masks[rng.random(c) < 0.5] &= ~tainted  # components without the toleration
    return available, requests, replicas, masks, UPPER


GENERATORS = {
    "random (accuracy.py)": lambda rng: (*random_member(rng), UPPER),
    "fragmented GPUs": fragmented_gpus,
    "tainted pools": tainted_pools,
    "quota-capped": quota_capped,
    "four components": many_components,
    "wider (6-8 nodes, 2-5 components)": wider_members,
}
MODES = {"first-fit": "ff", "best (budget 1)": DEFAULT_BEST_BUDGET, "best (no limit)": None}


def first_fit_with_bound(available, requests, replicas, masks, upper) -> kernels.Packing:
    packing = kernels.first_fit_sets(available.copy(), requests, replicas, masks, upper)
    bound = kernels.set_bound(available, requests, replicas, masks, upper, reach=packing.sets, first=packing.limiting)
    return packing._replace(bound=bound)


def answer(mode, available, requests, replicas, masks, upper) -> kernels.Packing:
    if mode == "ff":
        return first_fit_with_bound(available, requests, replicas, masks, upper)
    return kernels.best_sets(available, requests, replicas, masks, upper, budget=mode)


def small_members(count: int, seed: int) -> dict:
    out = {}
    for g, (name, generate) in enumerate(GENERATORS.items()):
        rng = np.random.default_rng(seed * 1000 + g)
        stats = {label: {"optimal": 0, "over_promises": 0, "below_first_fit": 0, "proven": 0, "bound_below_optimum": 0}
                 for label in MODES}
        above = 0
        for _ in range(count):
            available, requests, replicas, masks, upper = generate(rng)
            optimum = naive.exhaustive(available, requests, replicas, masks, upper)[0]
            karmada = naive.first_fit(available, requests, replicas, masks, upper)[0]
            answers = {}
            for label, mode in MODES.items():
                p = answer(mode, available, requests, replicas, masks, upper)
                answers[label] = p.sets
                s = stats[label]
                s["optimal"] += p.sets == optimum
                s["over_promises"] += p.sets > optimum or not naive.verify(
                    available, requests, replicas, masks, p.sets, p.placement)
                s["below_first_fit"] += p.sets < karmada
                s["proven"] += p.sets >= p.bound
                s["bound_below_optimum"] += p.bound < optimum
            above += answers["best (budget 1)"] > answers["first-fit"]
        for s in stats.values():
            s["optimal_rate"] = s["optimal"] / count
            s["proven_rate"] = s["proven"] / count
        out[name] = {"members": count, "modes": stats, "best_above_first_fit": above}
    return out


# --- larger members where best matters ---------------------------------------------------------

# Columns: pods, cpu (millicores), memory (MiB), gpu.
JOBS = {
    "launcher + 4 x 2-GPU workers": ([[1, 1000, 2048, 0], [1, 8000, 32768, 2]], [1, 4]),
    "launcher + 2 x 4-GPU trainers + 1-GPU evaluator": (
        [[1, 1000, 2048, 0], [1, 16000, 65536, 4], [1, 4000, 16384, 1]], [1, 2, 1]),
    "launcher + 8 x 1-GPU workers": ([[1, 500, 1024, 0], [1, 4000, 16384, 1]], [1, 8]),
}


def gpu_first_member(n_nodes: int, rng):
    """(available, tainted): GPU pools first in node order (names sort that way), then cpu nodes.

    60% GPU nodes (8- and 4-GPU, used to a random level, so free GPUs are fragmented), the
    last quarter of them a tainted inference pool. A GPU node's pod slots and cpu left are about
    what its free GPUs need (its many small pods used the rest): a launcher placed there
    strands GPUs.
    """
    n_gpu = int(n_nodes * 0.6)
    available = np.zeros((n_nodes, 4), dtype=np.int64)
    size = rng.choice([4, 8], size=n_gpu)
    free = np.array([int(rng.integers(0, s + 1)) for s in size])
    available[:n_gpu, 0] = free + (rng.random(n_gpu) < 0.2)
    available[:n_gpu, 1] = free * rng.integers(4000, 6000, size=n_gpu) + rng.integers(0, 1000, size=n_gpu)
    available[:n_gpu, 2] = (free * 32 + rng.integers(8, 64, size=n_gpu)) * 1024
    available[:n_gpu, 3] = free
    available[n_gpu:, 0] = rng.integers(10, 110, size=n_nodes - n_gpu)
    available[n_gpu:, 1] = rng.integers(4000, 64000, size=n_nodes - n_gpu)
    available[n_gpu:, 2] = rng.integers(16, 256, size=n_nodes - n_gpu) * 1024
    tainted = np.zeros(n_nodes, dtype=np.bool_)
    tainted[n_gpu * 3 // 4 : n_gpu] = True  # the inference pool: its names sort after the training pools
    return available, tainted


def gpu_first_case(job: str, n_nodes: int, rng) -> tuple[np.ndarray, ...]:
    """(available, requests, replicas, masks) of `job` on a `gpu_first_member`: only the
    launcher (component 0) tolerates the inference pool's taint."""
    rows, reps = JOBS[job]
    available, tainted = gpu_first_member(n_nodes, rng)
    masks = np.ones((len(reps), n_nodes), dtype=np.bool_)
    masks[1:, tainted] = False
    return available, np.array(rows, dtype=np.int64), np.array(reps, dtype=np.int64), masks


def _kernel_ms(fn, repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - started)
    return float(np.median(samples) * 1e3)


def where_best_matters(sizes, seeds: int, repeat: int) -> dict:
    out = {}
    for job in JOBS:
        per_size = {}
        for n_nodes in sizes:
            rows_out = []
            for seed in range(seeds):
                available, requests, replicas, masks = gpu_first_case(
                    job, n_nodes, np.random.default_rng(seed * 7919 + n_nodes))
                ff = first_fit_with_bound(available, requests, replicas, masks, UPPER)
                best = kernels.best_sets(available, requests, replicas, masks, UPPER, budget=DEFAULT_BEST_BUDGET)
                full = kernels.best_sets(available, requests, replicas, masks, UPPER, budget=None)
                assert ff.sets <= best.sets <= full.sets <= full.bound
                rows_out.append({
                    "first_fit": ff.sets, "best": best.sets, "best_no_limit": full.sets, "bound": full.bound,
                    "ff_ms": _kernel_ms(lambda: first_fit_with_bound(available, requests, replicas, masks, UPPER),
                                        repeat),
                    "best_ms": _kernel_ms(lambda: kernels.best_sets(available, requests, replicas, masks, UPPER,
                                                                    budget=DEFAULT_BEST_BUDGET), repeat),
                    "best_no_limit_ms": _kernel_ms(lambda: kernels.best_sets(available, requests, replicas, masks,
                                                                             UPPER, budget=None), repeat),
                })
            gain = [(r["best"] - r["first_fit"]) / max(r["first_fit"], 1) for r in rows_out]
            gain_full = [(r["best_no_limit"] - r["first_fit"]) / max(r["first_fit"], 1) for r in rows_out]
            per_size[n_nodes] = {
                "members": seeds,
                "best_above_first_fit": sum(r["best"] > r["first_fit"] for r in rows_out),
                "best_no_limit_above_first_fit": sum(r["best_no_limit"] > r["first_fit"] for r in rows_out),
                "median_gain": float(np.median(gain)),
                "max_gain": float(np.max(gain)),
                "median_gain_no_limit": float(np.median(gain_full)),
                "proven_first_fit": sum(r["first_fit"] >= r["bound"] for r in rows_out),
                "proven_best_no_limit": sum(r["best_no_limit"] >= r["bound"] for r in rows_out),
                "ff_ms_p50": float(np.median([r["ff_ms"] for r in rows_out])),
                "best_ms_p50": float(np.median([r["best_ms"] for r in rows_out])),
                "best_no_limit_ms_p50": float(np.median([r["best_no_limit_ms"] for r in rows_out])),
                "rows": rows_out,
            }
        out[job] = per_size
    return out


# --- RESULTS.md ------------------------------------------------------------------------------------


def section_text(r: dict) -> str:
    m = r["machine"]
    lines = [
        SECTION,
        "",
        f"Written by `benchmarks/quality.py`. **Date:** {r['date']}. **Command:** `{r['command']}`. "
        f"**Machine:** {m['nproc']} cores, Python {m['python']}; 1-minute load average {m['load_avg_1m']} at the "
        "start (shared machine: times are noisy and biased upwards; the counts are exact).",
        "",
        "**Small members, several generators**, each answer against the exhaustive optimum "
        f"({r['small_members_per_generator']} members per generator). *optimal*: answer = optimum; *proven*: the "
        "answer's own upper bound equals it; *over-promises* (answer above the optimum or a witness that fails "
        "tests/support/naive.verify), *below first-fit* and *bound below optimum* must all be 0. *budget 1*: the "
        "search after first-fit may do first-fit's own work again (at least a small floor), counted in node visits, "
        "so every answer here is the same on every run.",
        "",
        "| generator | mode | optimal | proven by its bound | over-promises | below first-fit | bound below optimum |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, g in r["small"].items():
        for label, s in g["modes"].items():
            lines.append(f"| {name} | {label} | {s['optimal_rate']:.2%} | {s['proven_rate']:.2%} | "
                         f"{s['over_promises']} | {s['below_first_fit']} | {s['bound_below_optimum']} |")
    lines += [
        "",
        "**Where best matters**: members whose GPU pools come first in node order (60% GPU nodes of 4 and 8 GPUs, "
        "free GPUs fragmented, pod slots and cpu left about what the free GPUs need, the last quarter a pool "
        "tainted for the workers), "
        f"{r['seeds']} seeds per size. Gains are (best - first-fit) / first-fit per member; times are the kernel "
        "median per member (first-fit includes its bound), then the median over members.",
        "",
        "| job | nodes | best (budget 1) > first-fit | median / max gain | no-limit best > first-fit | "
        "median gain (no limit) | first-fit proven | no-limit best proven | first-fit ms | best ms | "
        "no-limit best ms |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for job, sizes in r["matters"].items():
        for n, s in sizes.items():
            lines.append(
                f"| {job} | {int(n):,} | {s['best_above_first_fit']}/{s['members']} | {s['median_gain']:.1%} / "
                f"{s['max_gain']:.1%} | {s['best_no_limit_above_first_fit']}/{s['members']} | "
                f"{s['median_gain_no_limit']:.1%} | {s['proven_first_fit']}/{s['members']} | "
                f"{s['proven_best_no_limit']}/{s['members']} | {s['ff_ms_p50']:.3f} | {s['best_ms_p50']:.3f} | "
                f"{s['best_no_limit_ms_p50']:.3f} |")
    return "\n".join(lines) + "\n"


def write_section(path: Path, text: str) -> None:
    replace_section(path, SECTION, text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.quality", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: few members, small sizes, prints JSON only")
    parser.add_argument("--members", type=int, help="small members per generator (default 1000; quick 60)")
    parser.add_argument("--sizes", type=int, nargs="+", help="node counts for the larger members")
    parser.add_argument("--seeds", type=int, help="larger members per size and job (default 10; quick 2)")
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--no-write", action="store_true", help="do not update benchmarks/RESULTS.md")
    args = parser.parse_args(argv)
    members = args.members or (60 if args.quick else 1000)
    sizes = args.sizes or ([300] if args.quick else [1000, 10000])
    seeds = args.seeds or (2 if args.quick else 10)
    kernels.warmup()
    result = {
        "command": os.environ.get("BENCH_COMMAND") or " ".join(["python -m benchmarks.quality", *(argv or sys.argv[1:])]),
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
        "machine": {"nproc": os.cpu_count(), "python": platform.python_version(),
                    "load_avg_1m": round(os.getloadavg()[0], 2)},
        "small_members_per_generator": members,
        "seeds": seeds,
        "small": small_members(members, args.seed),
        "matters": where_best_matters(sizes, seeds, repeat=3 if args.quick else 7),
    }
    print(json.dumps({k: v for k, v in result.items() if k != "matters"} | {
        "matters": {job: {n: {k: v for k, v in s.items() if k != "rows"} for n, s in sizes.items()}
                    for job, sizes in result["matters"].items()}}, indent=1))
    if not args.quick and not args.no_write:
        write_section(REPO / "benchmarks" / "RESULTS.md", section_text(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
