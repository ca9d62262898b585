"""Packing quality: how good first-fit and best answers are, and what best mode costs.

    python -m benchmarks.quality            # writes the "## Packing quality" section of RESULTS.md
    python -m benchmarks.quality --quick    # smoke run, prints JSON only

Two parts, both on the public kernels (`kernels.first_fit_sets` + `kernels.set_bound`, as the
node-resource plugin calls them in first-fit mode, and `kernels.best_sets`):

1. Members from several generators (below), each against its exact optimum: small members
   by tests/support/naive.exhaustive; a job fenced by labels onto 1-8 nodes of a 500-2,000
   node member by naive.exhaustive over the fenced nodes (the only ones its components may
   use); 20-200-node members by benchmarks/optimum.py (exact, independent of the kernels,
   tested equal to naive.exhaustive). Witnesses are re-checked by tests/support/naive.verify
   on the whole member. Per mode: how often the answer is the optimum, over-promises
   (answer above the optimum, or a witness that fails: must be 0), answers below
   first-fit (must be 0), how often the answer's own bound proves it optimal, bounds
   below the optimum (must be 0), and the search's mean work (node visits after
   first-fit). Best runs with the default budget and without one.
2. "Where best matters": larger members (1,000 and 10,000 nodes) whose GPU pools come
   first in node order, with fragmented free GPUs of mixed sizes, few pod slots left on
   busy GPU nodes and a tainted pool, and jobs whose cpu-only launcher first-fit puts on
   a GPU node. Per job: how often best beats first-fit and by how much, and kernel times;
   per size, the share of the unlimited search's gain (sets above first-fit) the default
   budget finds.
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
from benchmarks.optimum import optimum as exact_optimum
from benchmarks.resultsmd import replace_section
from estimator import kernels
from estimator.estimate.framework import DEFAULT_BEST_BUDGET

from tests.support import naive  # noqa: E402  (tests/support/naive.py: the independent oracle)

REPO = Path(__file__).resolve().parents[1]
UPPER = 2**31 - 1
TARGET_NODES = 10_000  # the size where the default budget must find 90% of the unlimited search's gain
GAIN_TARGET = 0.9
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


def fenced_pool(rng):
    """A job fenced by labels (a node selector on its pool) onto 1 to 8 GPU nodes of a member
    of 500 to 2,000 nodes, the fence's nodes anywhere in node order; 1 to 4 components (a
    cpu-only launcher first, most often), each confined to the fence and, where part of the
    fence is tainted, to the part it tolerates. Every other node has room, cpu-only or GPUs
    of another pool. The seventh element: the fence, the nodes any component may use."""
    n = int(rng.integers(500, 2001))
    p = int(rng.integers(1, 9))
    c = int(rng.integers(1, 5))
    available = np.zeros((n, 4), dtype=np.int64)
    available[:, 0] = rng.integers(5, 111, size=n)
    available[:, 1] = rng.integers(2, 65, size=n)
    available[:, 2] = rng.integers(8, 257, size=n)
    available[:, 3] = np.where(rng.random(n) < 0.3, rng.choice([1, 2, 4, 8], size=n), 0)
    fence = np.sort(rng.choice(n, size=p, replace=False))
    size = rng.choice([2, 4, 8], size=p)
    free = np.array([int(rng.integers(0, s + 1)) for s in size])
    available[fence, 0] = free + rng.integers(0, 2, size=p)
    available[fence, 1] = free * rng.integers(2, 9, size=p) + rng.integers(0, 5, size=p)
    available[fence, 2] = free * rng.integers(16, 65, size=p) + rng.integers(0, 65, size=p)
    available[fence, 3] = free
    requests = np.zeros((c, 4), dtype=np.int64)
    requests[:, 0] = 1
    requests[:, 1] = rng.integers(1, 9, size=c)
    requests[:, 2] = rng.integers(2, 65, size=c)
    requests[:, 3] = rng.choice([1, 2, 4], size=c)
    replicas = rng.integers(1, 5, size=c).astype(np.int64)
    if c > 1 and rng.random() < 0.7:  # a launcher
        requests[0, 1:] = [rng.integers(1, 3), rng.integers(2, 9), 0]
        replicas[0] = 1
    tainted = rng.random(p) < 0.3
    masks = np.zeros((c, n), dtype=np.bool_)
    for k in range(c):
        masks[k, fence] = ~tainted | (rng.random() < 0.5)
    return available, requests, replicas, masks, UPPER, fence


def gpu_pools(rng):
    """Members of 20 to 200 nodes: GPU nodes of 2 to 4 sizes (1, 2, 4, 8 GPUs, partly used,
    pod slots about what their free GPUs need) among cpu-only nodes, the GPU pools first in
    node order in half of them; the pools of one or two GPU sizes tainted. Jobs of 1 to 3
    components (a cpu-only launcher first, most often), each tolerating the taint or not."""
    n = int(rng.integers(20, 201))
    sizes = np.sort(rng.choice([1, 2, 4, 8], size=int(rng.integers(2, 5)), replace=False))
    gpu_node = rng.random(n) >= rng.uniform(0.1, 0.4)
    size = np.where(gpu_node, rng.choice(sizes, size=n), 0)
    free = np.array([int(rng.integers(0, s + 1)) for s in size])
    available = np.zeros((n, 4), dtype=np.int64)
    available[:, 0] = np.where(gpu_node, free + (rng.random(n) < 0.3), rng.integers(10, 111, size=n))
    available[:, 1] = np.where(gpu_node, free * rng.choice([4, 8], size=n) + rng.integers(0, 4, size=n),
                               rng.integers(4, 65, size=n))
    available[:, 2] = np.where(gpu_node, free * 32 + rng.integers(0, 64, size=n), rng.integers(16, 257, size=n))
    available[:, 3] = free
    if rng.random() < 0.5:  # GPU pools first in node order, as their names often sort
        order = np.argsort(~gpu_node, kind="stable")
        gpu_node, size, available = gpu_node[order], size[order], available[order]
    tainted_sizes = rng.choice(sizes, size=int(rng.integers(1, min(2, len(sizes)) + 1)), replace=False)
    tainted = gpu_node & np.isin(size, tainted_sizes)
    c = int(rng.integers(1, 4))
    requests = np.zeros((c, 4), dtype=np.int64)
    requests[:, 0] = 1
    gpus = rng.choice([g for g in (1, 2, 4, 8) if g <= sizes.max()], size=c)
    launcher = c > 1 and rng.random() < 0.7
    if launcher:
        gpus[0] = 0
    requests[:, 3] = gpus
    requests[:, 1] = np.maximum(1, gpus * rng.integers(2, 5, size=c))
    requests[:, 2] = np.maximum(2, gpus * rng.integers(8, 33, size=c))
    replicas = rng.integers(1, 9, size=c).astype(np.int64)
    if launcher:
        replicas[0] = 1
    masks = np.ones((c, n), dtype=np.bool_)
    masks[rng.random(c) >= 0.4] &= ~tainted
    return available, requests, replicas, masks, UPPER


# name -> (generator, how its optimum is found): "exhaustive" (naive.exhaustive), "fenced"
# (naive.exhaustive over the nodes the generator's seventh element names), "frontier"
# (benchmarks/optimum.py).
GENERATORS = {
    "random (accuracy.py)": (lambda rng: (*random_member(rng), UPPER), "exhaustive"),
    "fragmented GPUs": (fragmented_gpus, "exhaustive"),
    "tainted pools": (tainted_pools, "exhaustive"),
    "quota-capped": (quota_capped, "exhaustive"),
    "four components": (many_components, "exhaustive"),
    "wider (6-8 nodes, 2-5 components)": (wider_members, "exhaustive"),
    "fenced pool (1-8 of 500-2,000 nodes, 1-4 components)": (fenced_pool, "fenced"),
    "GPU pools (20-200 nodes, 2-4 GPU sizes, tainted)": (gpu_pools, "frontier"),
}
MODES = {"first-fit": "ff", "best (budget 1)": DEFAULT_BEST_BUDGET, "best (no limit)": None}


def first_fit_with_bound(available, requests, replicas, masks, upper) -> kernels.Packing:
    return kernels.first_fit_bounded(available.copy(), requests, replicas, masks, upper)


def answer(mode, available, requests, replicas, masks, upper) -> kernels.Packing:
    if mode == "ff":
        return first_fit_with_bound(available, requests, replicas, masks, upper)
    return kernels.best_sets(available, requests, replicas, masks, upper, budget=mode)


def _optimum(how: str, member, answers: list) -> int:
    """The member's exact optimum (see GENERATORS); `answers`: (sets, placement) of the modes."""
    available, requests, replicas, masks, upper = member[:5]
    if how == "exhaustive":
        return naive.exhaustive(available, requests, replicas, masks, upper)[0]
    if how == "fenced":
        fence = member[5]
        assert not masks[:, np.setdiff1d(np.arange(masks.shape[1]), fence)].any()  # nothing runs outside
        return naive.exhaustive(available[fence], requests, replicas, masks[:, fence], upper)[0]
    # A placement naive.verify accepts is a lower bound the climb may start from.
    lower = max([naive.first_fit(available, requests, replicas, masks, upper)[0]]
                + [sets for sets, placement in answers
                   if naive.verify(available, requests, replicas, masks, sets, placement)])
    return exact_optimum(available, requests, replicas, masks, upper, lower)


def small_members(count: int, seed: int, generators: dict | None = None) -> dict:
    out = {}
    for g, (name, (generate, how)) in enumerate((generators or GENERATORS).items()):
        rng = np.random.default_rng(seed * 1000 + g)
        stats = {label: {"optimal": 0, "over_promises": 0, "below_first_fit": 0, "proven": 0, "bound_below_optimum": 0,
                         "search_work": 0} for label in MODES}
        above = 0
        for _ in range(count):
            member = generate(rng)
            available, requests, replicas, masks, upper = member[:5]
            answers = {label: answer(mode, available, requests, replicas, masks, upper) for label, mode in MODES.items()}
            optimum = _optimum(how, member, [(p.sets, p.placement) for p in answers.values()])
            fence = member[5] if how == "fenced" else slice(None)
            karmada = naive.first_fit(available[fence], requests, replicas, masks[:, fence], upper)[0]
            first_fit_work = answers["first-fit"].work
            for label, p in answers.items():
                s = stats[label]
                s["optimal"] += p.sets == optimum
                s["over_promises"] += p.sets > optimum or not naive.verify(
                    available, requests, replicas, masks, p.sets, p.placement)
                s["below_first_fit"] += p.sets < karmada
                s["proven"] += p.sets >= p.bound
                s["bound_below_optimum"] += p.bound < optimum
                s["search_work"] += max(p.work - first_fit_work, 0) if label != "first-fit" else 0
            above += answers["best (budget 1)"].sets > answers["first-fit"].sets
        for label, s in stats.items():
            s["optimal_rate"] = s["optimal"] / count
            s["proven_rate"] = s["proven"] / count
            s["mean_search_work"] = s.pop("search_work") / count if label != "first-fit" else None
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
            found = sum(r["best"] - r["first_fit"] for r in rows_out)
            possible = sum(r["best_no_limit"] - r["first_fit"] for r in rows_out)
            gain = [(r["best"] - r["first_fit"]) / max(r["first_fit"], 1) for r in rows_out]
            gain_full = [(r["best_no_limit"] - r["first_fit"]) / max(r["first_fit"], 1) for r in rows_out]
            per_size[n_nodes] = {
                "members": seeds,
                "gain_sets": found,
                "gain_sets_no_limit": possible,
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


def gain_share(matters: dict) -> dict[int, dict]:
    """Per size: the sets above first-fit the default budget finds, over every job and
    member, as a share of what the unlimited search finds (1.0 where neither finds any)."""
    out: dict[int, dict] = {}
    for sizes in matters.values():
        for n, s in sizes.items():
            t = out.setdefault(int(n), {"gain_sets": 0, "gain_sets_no_limit": 0})
            t["gain_sets"] += s["gain_sets"]
            t["gain_sets_no_limit"] += s["gain_sets_no_limit"]
    for t in out.values():
        t["share"] = t["gain_sets"] / t["gain_sets_no_limit"] if t["gain_sets_no_limit"] else 1.0
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
        "**Members from several generators**, each answer against the exact optimum "
        f"({r['small_members_per_generator']} members per generator): tests/support/naive.exhaustive, over the "
        "fence's nodes for a fenced pool, and benchmarks/optimum.py for the 20-200-node members. *optimal*: answer = "
        "optimum; *proven*: the answer's own upper bound equals it; *over-promises* (answer above the optimum or a "
        "witness that fails tests/support/naive.verify on the whole member), *below first-fit* and *bound below "
        "optimum* must all be 0. *budget 1*: the search after first-fit may do first-fit's own work again over the "
        "eligible pool (at least a floor of 20,000 node visits), more where the bound leaves room (`best.room_factor`), "
        "counted in node visits, so every answer here is the same on every run. *mean search work*: node visits "
        "after first-fit's own, per member.",
        "",
        "| generator | mode | optimal | proven by its bound | over-promises | below first-fit | bound below optimum "
        "| mean search work (node visits) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, g in r["small"].items():
        for label, s in g["modes"].items():
            work = "–" if s.get("mean_search_work") is None else f"{s['mean_search_work']:,.0f}"
            lines.append(f"| {name} | {label} | {s['optimal_rate']:.2%} | {s['proven_rate']:.2%} | "
                         f"{s['over_promises']} | {s['below_first_fit']} | {s['bound_below_optimum']} | {work} |")
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
    shares = gain_share(r["matters"])
    lines += ["", "**Gain found at the default budget**: sets above first-fit that best (budget 1) finds, over every "
              "job and seed, as a share of what the unlimited search finds: " + "; ".join(
                  f"{n:,} nodes {t['share']:.0%} ({t['gain_sets']:,} of {t['gain_sets_no_limit']:,} sets)"
                  for n, t in sorted(shares.items())) + "."]
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
    result["gain_share"] = gain_share(result["matters"])
    print(json.dumps({k: v for k, v in result.items() if k != "matters"} | {
        "matters": {job: {n: {k: v for k, v in s.items() if k != "rows"} for n, s in sizes.items()}
                    for job, sizes in result["matters"].items()}}, indent=1))
    if not args.quick and not args.no_write:
        write_section(REPO / "benchmarks" / "RESULTS.md", section_text(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
