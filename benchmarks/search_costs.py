"""What a best-mode search step really costs, in first-fit node visits per component and node.

    python -m benchmarks.search_costs                      # 10k-node shapes, GPU-first 1k and 10k
    python -m benchmarks.search_costs --nodes 10000 --gpu-nodes 1000

Best mode's budget counts work in first-fit node visits (`Packing.work`), and prices each
array copy, candidate node-order build and witness check of its search at
`best._CELL_COST` visits per component and node. This times those three operations and
first-fit itself on the same arrays (median wall time of `--repeat` calls, one thread) and
prints each operation's cost divided by (first-fit's time per visit x components x nodes),
beside the price the search charges: a price below a measured cost would let a budget
overrun its time. Arrays: the node-resource plugin's for the benchmark member's job shapes
(`kernel_shapes.shape_arrays`), and the GPU-first members of `benchmarks.quality` with the
launcher + 8 x 1-GPU workers job.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

UPPER = 2**31 - 1
GPU_JOB = "launcher + 8 x 1-GPU workers"


def step_costs(available, requests, replicas, masks, repeat: int) -> dict:
    """Each search operation's cost per component and node, in first-fit node visits."""
    from benchmarks.quality import _kernel_ms
    from estimator import kernels
    from estimator.kernels import best, fit
    from estimator.kernels._arrays import problem, readonly
    from estimator.kernels.witness import _verify

    p = problem(available, requests, replicas, masks, UPPER, in_place=False)
    ff = kernels.first_fit_sets(available.copy(), requests, replicas, masks, UPPER)
    ff_ms = _kernel_ms(lambda: kernels.first_fit_sets(available.copy(), requests, replicas, masks, UPPER), repeat)
    fits = fit.node_fits(p.available, p.requests, p.replicas, p.masks)
    order = readonly(best._component_order(best.SCARCE, p.replicas, fits))
    node_order = np.empty(fits.shape, dtype=np.int64)
    lengths = np.empty(fits.shape[0], dtype=np.int64)
    buckets = best.fit_buckets(fits)
    placement = readonly(ff.placement)
    timed = {
        "copy": _kernel_ms(lambda: p.available.copy(), repeat),
        "node orders": _kernel_ms(lambda: best._node_orders(fits, p.replicas, order, best.LEAST_CONTENDED_WORST_FIT,
                                                             buckets, node_order, lengths), repeat),
        "witness": _kernel_ms(lambda: _verify(p.available, p.requests, p.replicas, p.masks, ff.sets, placement),
                              repeat),
    }
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
    args = parser.parse_args(argv)
    kernels.warmup()
    cases = {f"{shape} {args.nodes:,}": arrays for shape, arrays in shape_arrays(args.nodes).items()}
    for n in args.gpu_nodes:
        cases[f"GPU-first {n:,}, {GPU_JOB}"] = gpu_first_case(GPU_JOB, n, np.random.default_rng(n))
    worst = {}
    print(f"first-fit node visits per component and node; the search charges {best._CELL_COST} for each")
    for name, arrays in cases.items():
        costs = step_costs(*arrays, repeat=args.repeat)
        cells = costs["visits_per_cell"]
        for op, value in cells.items():
            worst[op] = max(worst.get(op, 0.0), value)
        print(f"{name}: first-fit {costs['first_fit_ms']:.3f} ms, {costs['first_fit_work']:,} visits; "
              + ", ".join(f"{op} {value:.2f}" for op, value in cells.items()))
    print("most: " + ", ".join(f"{op} {value:.2f}" for op, value in worst.items())
          + ("" if max(worst.values()) <= best._CELL_COST else f"  ABOVE the price {best._CELL_COST}"))
    return 0 if max(worst.values()) <= best._CELL_COST else 1


if __name__ == "__main__":
    sys.exit(main())
