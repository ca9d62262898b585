"""Node-level fit for kernels that hold a request in locals: up to 4 columns as scalars
r0..r3 rather than a request row (`_arith`), and one greedy walk over the nodes.

Shared by `firstfit_pair` (two components) and `firstfit_trio` (three). A member narrower
than 4 columns repeats its last column (k1..k3 = min(1..3, last)) with a request of 0,
which always fits and subtracts nothing. Compiled without numba's reference counting
(`_nrt=False`), as the kernels that inline these are (see `firstfit_pair`).
"""

from __future__ import annotations

import numpy as np

from ._numba import kernel

MAX_COLUMNS = 4  # columns held as separate locals; wider members use the general kernel
INT64_MAX = np.iinfo(np.int64).max


@kernel(inline="always", _nrt=False)
def column(requests: np.ndarray, c: int, k: int) -> int:
    """requests[c, k], 0 past the last column."""
    return requests[c, k] if k < requests.shape[1] else 0


@kernel(inline="always", _nrt=False)
def quotient(a: int, r: int) -> int:
    """a // r for a >= 0, r > 0; no division for r == 1 (pods, whole GPUs). Unsigned: no
    rounding towards minus infinity to correct for, on the steps' critical path."""
    # Both branches are an int64 to numba; numpy's stubs do not count np.int64 as an int.
    return a if r == 1 else np.int64(np.uint64(a) // np.uint64(r))  # type: ignore[return-value]


@kernel(inline="always", _nrt=False)
def fit(available: np.ndarray, p: int, k1: int, k2: int, k3: int, r0: int, r1: int, r2: int, r3: int, cap: int) -> int:
    """min(cap, copies of (r0..r3) that node p holds); columns with a request of 0 are free.
    Every requested column divides: branches on the amounts cost more than divisions."""
    f = cap
    if r0 > 0:
        f = min(f, quotient(available[p, 0], r0))
    if r1 > 0:
        f = min(f, quotient(available[p, k1], r1))
    if r2 > 0:
        f = min(f, quotient(available[p, k2], r2))
    if r3 > 0:
        f = min(f, quotient(available[p, k3], r3))
    return f


@kernel(inline="always", _nrt=False)
def multiplies(r0: int, r1: int, r2: int, r3: int) -> int:
    """The largest count that multiplies each of r0..r3 (>= 0) within int64: `walk`'s
    bound for fitting without dividing."""
    return INT64_MAX // max(r0, r1, r2, r3, 1)


@kernel(inline="always", _nrt=False)
def fit_few(
    available: np.ndarray, p: int, k1: int, k2: int, k3: int, r0: int, r1: int, r2: int, r3: int, want: int
) -> int:
    """min(want, copies of (r0..r3) node p holds) for want x each request within int64:
    a column divides only where the node holds fewer than `want` copies (last first)."""
    f = want
    if f * r3 > available[p, k3]:
        f = quotient(available[p, k3], r3)
    if f * r2 > available[p, k2]:
        f = quotient(available[p, k2], r2)
    if f * r1 > available[p, k1]:
        f = quotient(available[p, k1], r1)
    if f * r0 > available[p, 0]:
        f = quotient(available[p, 0], r0)
    return f


@kernel(inline="always", _nrt=False)
def holds(available: np.ndarray, p: int, k1: int, k2: int, k3: int, r0: int, r1: int, r2: int, r3: int) -> bool:
    """Node p holds one copy of (r0..r3)."""
    return available[p, 0] >= r0 and available[p, k1] >= r1 and available[p, k2] >= r2 and available[p, k3] >= r3


@kernel(inline="always", _nrt=False)
def sub(available: np.ndarray, p: int, k1: int, k2: int, k3: int, r0: int, r1: int, r2: int, r3: int, f: int) -> None:
    """Take f copies of (r0..r3) from node p (the last column first: k1..k3 may repeat
    the last column with a request of 0)."""
    available[p, k3] -= f * r3
    available[p, k2] -= f * r2
    available[p, k1] -= f * r1
    available[p, 0] -= f * r0


@kernel(inline="always", _nrt=False)
def walk(
    available: np.ndarray,
    masks: np.ndarray,
    c: int,
    p: int,
    want: int,
    k1: int,
    k2: int,
    k3: int,
    r0: int,
    r1: int,
    r2: int,
    r3: int,
    few: int,
    placement: np.ndarray,
) -> tuple[int, int, int]:
    """Greedy walk of c from node p placing up to `want` replicas (r0..r3: its request),
    each node taking min(what is left, what it fits). few: `multiplies(r0..r3)`, or any
    smaller bound on `want` the caller knows keeps want x request within int64.

    The last column is tested first: a GPU component walks past many nodes without GPUs,
    and each visit then ends on its first test. A node that holds one copy divides only
    where it holds fewer than `want` (`fit_few`).

    Returns (the node that completed `want`, else the node count; what is left; what it
    placed on node p).
    """
    n_nodes = available.shape[0]
    start = p
    first = 0
    while p < n_nodes:
        if (
            masks[c, p]
            and available[p, k3] >= r3
            and available[p, k2] >= r2
            and available[p, k1] >= r1
            and available[p, 0] >= r0
        ):
            if want <= few:
                f = fit_few(available, p, k1, k2, k3, r0, r1, r2, r3, want)
            else:
                f = fit(available, p, k1, k2, k3, r0, r1, r2, r3, want)
            sub(available, p, k1, k2, k3, r0, r1, r2, r3, f)
            placement[c, p] += f
            if p == start:
                first = f
            want -= f
            if want == 0:
                break
        p += 1
    return p, want, first


@kernel(inline="always", _nrt=False)
def unplace(placement: np.ndarray, c: int, start: int, took: int, end: int) -> None:
    """Take one set's share of c (its walk began at node `start`, took `took` there and
    ended at node `end`) back out of `placement`."""
    placement[c, start] -= took
    for q in range(start + 1, min(end, placement.shape[1] - 1) + 1):
        placement[c, q] = 0
