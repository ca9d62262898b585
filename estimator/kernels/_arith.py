"""The node-fit arithmetic every kernel shares, and its constants, in one place.

fit(n, request) = min over columns k with request[k] > 0 of available[n, k] // request[k].
int64 division is the slowest instruction on the kernels' hot paths, so `capped_quotient`
divides only where it must: most requests ask for 1 unit of a column (pods, GPUs), and a
product that cannot overflow int64 decides min(cap, a // r) by one multiply-and-compare.
Where a pass divides by the same request on every node, `magic` turns the divisor into a
multiplier once and `divide` divides by one multiply and one shift (exact, see `magic`).

Kernels in other modules call these directly: the on-disk cache directory is keyed by a
hash of every kernel source (`_numba`), so an edit here recompiles every caller.
"""

from __future__ import annotations

import numpy as np

from ._numba import kernel, mulhi

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


_U1 = np.uint64(1)


@kernel(inline="always")
def magic(d: int) -> tuple:
    """(m, s) with a // d == mulhi(a, m) >> s for every 0 <= a < 2**63, for 2 <= d < 2**63
    (d = 1: `divide` needs none; (0, 0) is returned for d < 2). Granlund and Montgomery's
    round-up method ("Division by invariant integers using multiplication", 1994, thm 4.2)
    for 63-bit dividends: with l = ceil(log2 d), m = ceil(2**(63 + l) / d) gives
    2**(63 + l) <= m * d < 2**(63 + l) + 2**l, hence floor(a / d) = floor(m * a / 2**(63 + l))
    for a < 2**63, and m < 2**64 as d > 2**(l - 1). m is found by long division of
    2**(l - 1) * 2**64 by d (the remainder stays below d < 2**63, so doubling it fits)."""
    if d < 2:
        return np.uint64(0), np.uint64(0)
    ud = np.uint64(d)
    bits = 1  # l
    while (_U1 << np.uint64(bits)) < ud:
        bits += 1
    rem = _U1 << np.uint64(bits - 1)
    q = np.uint64(0)
    for _ in range(64):
        rem = rem << _U1
        q = q << _U1
        if rem >= ud:
            rem -= ud
            q |= _U1
    if rem != 0:
        q += _U1
    return q, np.uint64(bits - 1)


@kernel(inline="always")
def divide(a: int, d: int, m: np.uint64, s: np.uint64) -> int:
    """a // d for 0 <= a < 2**63 and d >= 1, (m, s) = magic(d)."""
    if d == 1:
        return a
    return int(np.int64(mulhi(np.uint64(a), m) >> s))
