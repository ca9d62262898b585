"""What a best-mode search step really costs, in first-fit node visits per component and node.

    python -m benchmarks.search_costs                      # 10k-node shapes, GPU-first 1k and 10k
    python -m benchmarks.search_costs --nodes 10000 --gpu-nodes 1000

Best mode's budget counts work in first-fit node visits (`Packing.work`), and prices each
operation of its search per component and node of the eligible pool: an array copy
(`best._COPY_CELL`), a candidate's node-order build (`_ORDER_CELL`), a witness check
(`_WITNESS_CELL`) and the fits the search starts from (`_FITS_CELL`); the staged bound runs
its full pass only where that costs at most `fit.FULL_PASS_WORK` at `fit.BOUNDS_CELL` per
component and node. This times those operations and first-fit itself on the same arrays
(median CPU time of this thread over `--repeat` calls, the operations taken in turn call by
call, so load on a shared machine disturbs them alike) and prints each operation's cost
divided by (first-fit's time per visit x components x nodes), beside its price: a price
below a measured cost would let a budget overrun its time. Also shown, unpriced: the
eligible-pool pass (`fit.eligible_pool`), which every request past the component bound
pays. Arrays: the node-resource plugin's for the benchmark member's job shapes
(`kernel_shapes.shape_arrays`), and the GPU-first members of `benchmarks.quality` with the
launcher + 8 x 1-GPU workers job. The exact search's step (`best._EXACT_STEP`, per step)
is timed on fenced pools (`exact_step_ns`) and divided by each case's first-fit time per
visit.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

UPPER = 2**31 - 1
GPU_JOB = "launcher + 8 x 1-GPU workers"


def prices() -> dict[str, float]:
    """Each priced operation's price, in first-fit visits per component and node."""
    from estimator.kernels import best, fit

    return {"copy": best._COPY_CELL, "node orders": best._ORDER_CELL, "witness": best._WITNESS_CELL,
            "fits": best._FITS_CELL, "full bound pass": fit.BOUNDS_CELL}


# The exact search's step (`best._EXACT_STEP`) is priced per step, not per cell: it is timed
# on the small pools it runs on, proving one set more than best mode's answer impossible
# (benchmarks.quality's fenced pools; only proofs of at least this many steps, which the
# clock can time).
EXACT_MIN_STEPS = 1000


def exact_step_ns(members: int, seed: int = 5) -> tuple[float, int]:
    """(median CPU ns per step of `exact.place_exactly`, proofs timed) over fenced pools."""
    import time

    from benchmarks.quality import fenced_pool
    from estimator import kernels
    from estimator.kernels import exact

    rng = np.random.default_rng(seed)
    per_step = []
    for _ in range(members):
        available, requests, replicas, masks, upper, fence = fenced_pool(rng)
        available, masks = np.ascontiguousarray(available[fence]), np.ascontiguousarray(masks[:, fence])
        sets = kernels.best_sets(available, requests, replicas, masks, upper, budget=None).sets
        order = np.arange(requests.shape[0], dtype=np.int64)
        _, steps, _ = exact.place_exactly(available, requests, replicas, masks, sets + 1, order, 10**7)
        if steps < EXACT_MIN_STEPS:
            continue
        times = []
        for _ in range(5):
            started = time.thread_time()
            exact.place_exactly(available, requests, replicas, masks, sets + 1, order, 10**7)
            times.append(time.thread_time() - started)
        per_step.append(float(np.median(times)) / steps * 1e9)
    if not per_step:
        raise RuntimeError(f"no proof of {EXACT_MIN_STEPS:,} steps or more among {members:,} fenced pools: time more")
    return float(np.median(per_step)), len(per_step)


def _interleaved_cpu_ms(calls: dict, repeat: int) -> dict[str, float]:
    """{name: median ms} of this thread's CPU time per call, the calls taken in turn, call by
    call, so a burst of load on a shared machine hits every operation alike."""
    import time

    samples: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(repeat):
        for name, fn in calls.items():
            started = time.thread_time()
            fn()
            samples[name].append(time.thread_time() - started)
    return {name: float(np.median(v) * 1e3) for name, v in samples.items()}


def step_costs(available, requests, replicas, masks, repeat: int) -> dict:
    """Each search operation's cost per component and node, in first-fit node visits."""
    from estimator import kernels
    from estimator.kernels import best, fit
    from estimator.kernels._arrays import problem, readonly
    from estimator.kernels.witness import placement_valid

    p = problem(available, requests, replicas, masks, UPPER, in_place=False)
    ff = kernels.first_fit_sets(available.copy(), requests, replicas, masks, UPPER)
    fits = fit.node_fits(p.available, p.requests, p.replicas, p.masks)
    order = readonly(best._component_order(best.SCARCE, p.replicas, fits))
    node_order = np.empty(fits.shape, dtype=np.int64)
    lengths = np.empty(fits.shape[0], dtype=np.int64)
    buckets = best.fit_buckets(fits)
    placement = readonly(ff.placement)
    timed = _interleaved_cpu_ms({
        "first-fit": lambda: kernels.first_fit_sets(available.copy(), requests, replicas, masks, UPPER),
        "copy": lambda: p.available.copy(),
        "node orders": lambda: best._node_orders(fits, p.replicas, order, best.LEAST_CONTENDED_WORST_FIT, buckets,
                                                 node_order, lengths, best._order_scratch(fits.shape[1], buckets)),
        "witness": lambda: placement_valid(p.available, p.requests, p.replicas, p.masks, ff.sets, placement),
        "fits": lambda: fit.node_fits(p.available, p.requests, p.replicas, p.masks),
        "full bound pass": lambda: fit.bounds(p.available, p.requests, p.replicas, p.masks, UPPER),
        "eligible pool (unpriced)": lambda: fit.eligible_pool(p.available, p.requests, p.replicas, p.masks, UPPER),
    }, repeat)
    ff_ms = timed.pop("first-fit")
    per_cell = ff_ms / max(ff.work, 1) * fits.shape[0] * fits.shape[1]
    return {"first_fit_ms": ff_ms, "first_fit_work": ff.work, "visits_per_cell": {k: v / per_cell
                                                                                   for k, v in timed.items()}}


def main(argv: list[str] | None = None) -> int:
    from benchmarks.kernel_shapes import shape_arrays
    from benchmarks.quality import gpu_first_case
    from estimator import kernels
    from estimator.kernels import best

    parser = argparse.ArgumentParser(prog="python -m benchmarks.search_costs", description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=10_000, help="benchmark member size for the job shapes")
    parser.add_argument("--gpu-nodes", type=int, nargs="+", default=[1000, 10_000], help="GPU-first member sizes")
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--exact-members", type=int, default=3000, help="fenced pools the exact search is timed on")
    args = parser.parse_args(argv)
    kernels.warmup()
    cases = {f"{shape} {args.nodes:,}": arrays for shape, arrays in shape_arrays(args.nodes).items()}
    for n in args.gpu_nodes:
        cases[f"GPU-first {n:,}, {GPU_JOB}"] = gpu_first_case(GPU_JOB, n, np.random.default_rng(n))
    worst = {}
    price = prices() | {"exact step": best._EXACT_STEP}
    step_ns, proofs = exact_step_ns(args.exact_members)
    print("first-fit node visits per component and node (the exact search's: per step); prices: "
          + ", ".join(f"{op} {value:g}" for op, value in price.items()))
    print(f"exact search: {step_ns:.2f} ns per step (CPU, median of {proofs} proofs of {EXACT_MIN_STEPS:,} steps "
          f"or more on {args.exact_members:,} fenced pools)")
    for name, arrays in cases.items():
        costs = step_costs(*arrays, repeat=args.repeat)
        cells = costs["visits_per_cell"]
        cells["exact step"] = step_ns * 1e-6 / (costs["first_fit_ms"] / max(costs["first_fit_work"], 1))
        for op, value in cells.items():
            worst[op] = max(worst.get(op, 0.0), value)
        print(f"{name}: first-fit {costs['first_fit_ms']:.3f} ms, {costs['first_fit_work']:,} visits; "
              + ", ".join(f"{op} {value:.2f}" for op, value in cells.items()))
    over = [op for op, value in worst.items() if op in price and value > price[op]]
    print("most: " + ", ".join(f"{op} {value:.2f}" for op, value in worst.items())
          + (f"  ABOVE the price: {', '.join(over)}" if over else ""))
    return 1 if over else 0


if __name__ == "__main__":
    sys.exit(main())
