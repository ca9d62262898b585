"""The node-fit arithmetic every kernel shares, and its constants, in one place.

fit(n, request) = min over columns k with request[k] > 0 of available[n, k] // request[k].
int64 division is the slowest instruction on the kernels' hot paths, so `capped_quotient`
divides only where it must: most requests ask for 1 unit of a column (pods, GPUs), and a
product that cannot overflow int64 decides min(cap, a // r) by one multiply-and-compare.

Kernels in other modules call these directly: the on-disk cache directory is keyed by a
hash of every kernel source (`_numba`), so an edit here recompiles every caller.
"""

from __future__ import annotations

import numpy as np

from ._numba import kernel

INT64_MAX = np.iinfo(np.int64).max
# Two values up to 2**31 - 1 multiply without overflowing int64...
SMALL = 2**31 - 1
# ...and so do one below 2**16 and one below 2**47 (memory in bytes exceeds 2**31; a cap
# bounded by pod slots stays below 2**16).
FEW, HUGE = 2**16, 2**47


@kernel(inline="always")
def capped_quotient(cap: int, a: int, r: int) -> int:
    """min(cap, a // r) for cap >= 0, a >= 0, r > 0, without dividing when cap * r <= a."""
    if r == 1:
        return min(cap, a)
    if (cap > SMALL or r > SMALL) and (cap >= FEW or r >= HUGE):
        return min(cap, a // r)
    if cap * r > a:
        return a // r
    return cap


@kernel(inline="always")
def row_fit(available: np.ndarray, n: int, request: np.ndarray, cap: int) -> int:
    """min(cap, fit of `request` on node n); 0 as soon as a column cannot hold one unit."""
    f = cap
    # Last column first: the extended resources (GPUs) come after pods, cpu and memory,
    # and most nodes a GPU component walks past have none, so their visit ends at once.
    for j in range(available.shape[1]):
        k = available.shape[1] - 1 - j
        r = request[k]
        if r > 0:
            a = available[n, k]
            if a < r:
                return 0
            f = capped_quotient(f, a, r)
    return f


@kernel(inline="always")
def take(available: np.ndarray, requests: np.ndarray, c: int, n: int, want: int) -> int:
    """min(want, fit of one replica of component c on node n): `row_fit` on requests[c]."""
    return row_fit(available, n, requests[c], want)
