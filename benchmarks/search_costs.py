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
launcher + 8 x 1-GPU workers job.
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

    parser = argparse.ArgumentParser(prog="python -m benchmarks.search_costs", description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=10_000, help="benchmark member size for the job shapes")
    parser.add_argument("--gpu-nodes", type=int, nargs="+", default=[1000, 10_000], help="GPU-first member sizes")
    parser.add_argument("--repeat", type=int, default=200)
    args = parser.parse_args(argv)
    kernels.warmup()
    cases = {f"{shape} {args.nodes:,}": arrays for shape, arrays in shape_arrays(args.nodes).items()}
    for n in args.gpu_nodes:
        cases[f"GPU-first {n:,}, {GPU_JOB}"] = gpu_first_case(GPU_JOB, n, np.random.default_rng(n))
    worst = {}
    price = prices()
    print("first-fit node visits per component and node; prices: "
          + ", ".join(f"{op} {value:g}" for op, value in price.items()))
    for name, arrays in cases.items():
        costs = step_costs(*arrays, repeat=args.repeat)
        cells = costs["visits_per_cell"]
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
