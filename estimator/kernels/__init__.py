"""Packing kernels (numba): per-node fit, Karmada's first-fit, best-mode packing, witness check.

Flat arrays only, C-contiguous: int64 amounts (cpu in millicores, everything else in whole
units), bool masks. Column 0 of every resource axis is `pods`: available[:, 0] is the pod
slots left on a node and every request row asks for exactly 1 pod. Masks say which nodes a
component may use (filters already applied).

    sum_fit(available[N,K], request[K], mask[N]) -> int
    first_fit_sets(available[N,K], requests[C,K], replicas[C], masks[C,N], upper) -> Packing
    first_fit_bounded(same) -> Packing (first_fit_sets, with .bound from set_bound)
    first_fit_with_bound(same, by_column=None) -> Packing (first_fit_bounded on a copy: `available` untouched; one call)
    best_sets(available, requests, replicas, masks, upper, budget=None, by_column=None) -> Packing (with .bound, .pool)
    column_layout(available[N,K]) -> int64[K,N] or None (kept by a caller and passed to the two
        above as by_column=: the bound's passes then run column by column; None: they may not)
    set_bound(available, requests, replicas, masks, upper) -> int (no placement reaches more; staged)
    verify_placement(available, requests, replicas, masks, sets, placement[C,N]) -> bool
    warmup() -> None
    seal() -> int (after warmup, in a process that compiles no more kernels)

The wrappers check shapes, dtypes and signs (ValueError) and widen narrower integer
arrays; `first_fit_sets` consumes `available` in place, so it must already be a writable
int64 C-contiguous array.
"""

from __future__ import annotations

import sys

import numpy as np

from ._arrays import AMOUNTS, FLAGS, REQUEST_ROWS, Packing, vouch, vouched_copy
from ._numba import cache_note, loading_from_cache_only, release_linking_modules
from .best import best_sets
from .exact import place_exactly
from .firstfit import first_fit_bounded, first_fit_sets, first_fit_with_bound
from .fit import column_layout, set_bound, sum_fit
from .witness import verify_placement

__all__ = [
    "AMOUNTS",
    "FLAGS",
    "Packing",
    "REQUEST_ROWS",
    "best_sets",
    "cache_note",
    "column_layout",
    "first_fit_bounded",
    "first_fit_sets",
    "first_fit_with_bound",
    "set_bound",
    "sum_fit",
    "verify_placement",
    "vouch",
    "vouched_copy",
    "seal",
    "warmup",
]


def warmup() -> None:
    """Compile every kernel (or load it from numba's on-disk cache) with production dtypes.

    Runs each public entry point on a tiny problem that reaches every kernel, including
    the best-mode search (first-fit is not optimal on it) and the two- and three-component
    first-fit kernels. Cached kernels are loaded without the rest of numba's
    implementations (`loading_from_cache_only`).
    """
    with loading_from_cache_only():
        _run_every_kernel()


def seal() -> int:
    """After `warmup()`, in a process that will compile no more kernels (the server started
    from its command line): drop what only a later compilation needs and refuse one
    (`_numba.release_linking_modules`). Returns the LLVM modules dropped."""
    # Every module of this package that is loaded (a kernel module added later is included);
    # a kernel is a numba dispatcher (it has `overloads`), one imported by several modules once.
    modules = [m for name, m in list(sys.modules.items()) if name.startswith(__name__ + ".")]
    dispatchers = {id(v): v for module in modules for v in vars(module).values() if hasattr(v, "overloads")}
    return release_linking_modules(dispatchers.values())


def _run_every_kernel() -> None:
    # Two nodes: [pods, cpu, gpu]. A cpu-only master first in order would take node 0's
    # only pod slot, which the gpu worker needs.
    available = np.array([[1, 4, 1], [1, 4, 0]], dtype=np.int64)
    requests = np.array([[1, 1, 0], [1, 1, 1]], dtype=np.int64)
    replicas = np.array([1, 1], dtype=np.int64)
    masks = np.ones((2, 2), dtype=np.bool_)
    sum_fit(available, requests[0], masks[0])
    set_bound(available, requests, replicas, masks, 4)
    packing = best_sets(available, requests, replicas, masks, 4)
    best_sets(available, requests, replicas, masks, 4, known_bound=packing.bound)  # the fits-only pass
    verify_placement(available, requests, replicas, masks, packing.sets, packing.placement)
    first_fit_sets(available.copy(), requests, replicas, masks, 4)
    first_fit_with_bound(available, requests, replicas, masks, 4)
    # Best mode's exact search on small problems (`exact`), which the search above settles
    # without: 2 sets are 1 more than fit.
    place_exactly(available, requests, replicas, masks, 2, np.arange(2, dtype=np.int64), 1_000)
    # Three components (a Ray-like head, cpu and gpu group): `firstfit_trio`.
    first_fit_sets(
        available.copy(),
        np.vstack([requests, requests[1]]),
        np.ones(3, dtype=np.int64),
        np.ones((3, 2), dtype=np.bool_),
        4,
    )
