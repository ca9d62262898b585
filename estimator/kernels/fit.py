"""Per-node fit ("MaxDivided"), MaxAvailableReplicas, and the upper bound on sets.

fit(n, request) = min over k with request[k] > 0 of available[n, k] // request[k]. Column 0
is pods and every request asks for one pod, so the fit is bounded by the pod slots left.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ._arith import INT64_MAX, capped_quotient, divide, magic, row_fit
from ._arrays import amounts, check_available, check_request_rows, flags, problem, readonly
from ._numba import kernel


@kernel(inline="always")
def _node_fit(available: np.ndarray, n: int, request: np.ndarray) -> int:
    return row_fit(available, n, request, INT64_MAX)


@kernel(inline="always")
def _masked_fit(available: np.ndarray, n: int, requests: np.ndarray, masks: np.ndarray, c: int) -> int:
    """Fit of one replica of component c on node n; 0 where c may not run."""
    return _node_fit(available, n, requests[c]) if masks[c, n] else 0


def magics_buffer(columns: int) -> np.ndarray:
    """The `magics` scratch of `_sum_fit` for requests of `columns` columns."""
    return np.empty((2, columns), dtype=np.uint64)


@kernel(inline="always")
def _magics(request: np.ndarray, magics: np.ndarray) -> None:
    """magics[0, k], magics[1, k] = `magic(request[k])` (one pass divides every node by the
    same amounts). `magics`: uint64 [2, K], the caller's (`magics_buffer`): no kernel
    allocates, so loading them from the cache does not import numba's array implementations."""
    for k in range(request.shape[0]):
        magics[0, k], magics[1, k] = magic(request[k])


@kernel(inline="always")
def _fit_dividing_by_magic(available: np.ndarray, n: int, request: np.ndarray, magics: np.ndarray) -> int:
    """`_node_fit` with every division a multiply (`_magics(request, magics)`): a pass over
    every node divides each by the same amounts."""
    f = INT64_MAX
    for j in range(available.shape[1]):
        k = available.shape[1] - 1 - j  # last column first, as `row_fit`
        r = request[k]
        if r > 0:
            a = available[n, k]
            if a < r:
                return 0
            f = min(f, divide(a, r, magics[0, k], magics[1, k]))
    return f


@kernel
def _sum_fit(available: np.ndarray, request: np.ndarray, mask: np.ndarray, magics: np.ndarray) -> int:
    _magics(request, magics)
    total = 0
    for n in range(available.shape[0]):
        if mask[n]:
            f = _fit_dividing_by_magic(available, n, request, magics)
            if f > INT64_MAX - total:
                return INT64_MAX
            total += f
    return total


@kernel
def _add(total: int, amount: int) -> int:
    """total + amount for non-negative values, saturating at INT64_MAX (read as "unknown")."""
    return INT64_MAX if amount > INT64_MAX - total else total + amount


@kernel
def _demand(requests: np.ndarray, replicas: np.ndarray, k: int) -> int:
    """What one set needs of column k, saturating at INT64_MAX."""
    total = 0
    for c in range(requests.shape[0]):
        r = requests[c, k]
        if r > 0 and replicas[c] > 0:
            total = INT64_MAX if replicas[c] > (INT64_MAX - total) // r else total + replicas[c] * r
    return total


@kernel
def _bound(supply: int, demand: int, bound: int) -> int:
    """min(bound, supply // demand), skipping what saturation makes unknown."""
    if demand == 0 or supply == INT64_MAX:
        return bound  # nothing needed, or too much to count: no bound from here
    if demand == INT64_MAX:
        return 0  # a set needs more than int64 holds, and there is less
    return min(bound, supply // demand)


@kernel
def _bounds(
    available: np.ndarray,
    requests: np.ndarray,
    replicas: np.ndarray,
    masks: np.ndarray,
    upper: int,
    fits: np.ndarray,
    sums: np.ndarray,
) -> int:
    """fits[c, n] = fit of one replica of c on n (0 where c may not run), and an upper
    bound on the complete sets any placement can reach, in one pass over the nodes.

    Relaxations (each drops a constraint of the packing, so none is below the optimum):
    - per component: floor(sum of its per-node fits / replicas);
    - per column k, jointly: a node gives a set at most min(available[n, k], sum over c
      of fit(c, n) * requests[c, k]); a set needs sum over c of replicas[c] * requests[c, k];
    - replica slots: a node holds at most available[n, k] // (smallest request for k)
      replicas in any column k that every component fitting there asks for (pods always),
      and a set has sum(replicas) replicas; this one sees 3 + 3 cpu not sharing 5 cpu.
    """
    n_comp, n_cols = requests.shape
    # One int64 scratch of the caller's (`bounds`), n_comp + n_cols + 3 long: the per-component
    # fit sums, the per-column supply, and three scalars, which accumulate in it so that
    # `_add` always sees int64, never a literal 0.
    sums[: n_comp + n_cols + 3] = 0
    fit_sums = sums[:n_comp]
    supply = sums[n_comp : n_comp + n_cols]
    slots = sums[n_comp + n_cols : n_comp + n_cols + 1]
    per_set = sums[n_comp + n_cols + 1 : n_comp + n_cols + 2]
    fitting = sums[n_comp + n_cols + 2 : n_comp + n_cols + 3]
    for c in range(n_comp):
        per_set[0] = _add(per_set[0], replicas[c])
    for n in range(available.shape[0]):
        fitting[0] = 0
        any_fit = False
        for c in range(n_comp):
            f = _masked_fit(available, n, requests, masks, c)
            fits[c, n] = f
            if replicas[c] > 0 and f > 0:
                fit_sums[c] = _add(fit_sums[c], f)
                fitting[0] = _add(fitting[0], f)
                any_fit = True
        if not any_fit:
            continue
        node_slots = fitting[0]
        for k in range(n_cols):
            usable = 0
            smallest = INT64_MAX  # smallest request for k among components fitting on n
            for c in range(n_comp):
                if replicas[c] > 0 and fits[c, n] > 0:
                    r = requests[c, k]
                    smallest = min(smallest, r) if r > 0 else 0
                    # fits[c, n] <= available[n, k] // r: no overflow.
                    part = fits[c, n] * r
                    usable = INT64_MAX if part > INT64_MAX - usable else usable + part
            supply[k] = _add(supply[k], min(usable, available[n, k]))
            if 0 < smallest < INT64_MAX and node_slots > 0:
                node_slots = capped_quotient(node_slots, available[n, k], smallest)
        slots[0] = _add(slots[0], node_slots)
    bound = upper
    for c in range(n_comp):
        if replicas[c] > 0:
            bound = _bound(fit_sums[c], replicas[c], bound)
    for k in range(n_cols):
        bound = _bound(supply[k], _demand(requests, replicas, k), bound)
    return _bound(slots[0], per_set[0], bound)


@kernel
def _fits(available: np.ndarray, requests: np.ndarray, masks: np.ndarray, fits: np.ndarray) -> None:
    """fits[c, n] as `_bounds` fills it, without the relaxations (a bound already known)."""
    for n in range(available.shape[0]):
        for c in range(requests.shape[0]):
            fits[c, n] = _masked_fit(available, n, requests, masks, c)


def node_fits(available: np.ndarray, requests: np.ndarray, replicas: np.ndarray, masks: np.ndarray) -> np.ndarray:
    """The `fits` of `bounds` on validated arrays, for a caller that has the bound already:
    the same pass without the per-column and slot sums (a third of its time: 0.10 against
    0.30 ms at 10k nodes, two components)."""
    fits = np.empty(masks.shape, dtype=np.int64)
    if not replicas.any():
        fits[:] = 0
    else:
        _fits(available, requests, masks, fits)
    return readonly(fits)


def bounds(
    available: np.ndarray, requests: np.ndarray, replicas: np.ndarray, masks: np.ndarray, upper: int
) -> tuple[int, np.ndarray]:
    """(bound, fits) on validated arrays: see `_bounds`. All replicas 0: every set is empty."""
    fits = np.empty(masks.shape, dtype=np.int64)
    if not replicas.any():
        fits[:] = 0
        return upper, readonly(fits)
    sums = np.empty(requests.shape[0] + requests.shape[1] + 3, dtype=np.int64)
    bound = int(_bounds(available, requests, replicas, masks, upper, fits, sums))
    return bound, readonly(fits)


def component_bound(
    available: np.ndarray, requests: np.ndarray, replicas: np.ndarray, masks: np.ndarray, c: int, upper: int
) -> int:
    """min(upper, sum of c's fits // replicas[c]): one fit per node, the cheapest relaxation."""
    if c < 0 or replicas[c] == 0:
        return upper
    return min(
        upper, int(_sum_fit(available, requests[c], masks[c], magics_buffer(requests.shape[1]))) // int(replicas[c])
    )


def first_fit_bound(
    available: np.ndarray,
    requests: np.ndarray,
    replicas: np.ndarray,
    masks: np.ndarray,
    upper: int,
    sets: int,
    limiting: int,
) -> int:
    """`component_bound` of first-fit's limiting component, given first-fit's answer on these
    very arrays (`sets` complete, stopped by `limiting`): where that component is the only
    one with replicas, no pass over the nodes. First-fit then fills the nodes in order, each
    to its fit (taking replicas from a node lowers its fit by as many), so the set that
    fails has placed, with the complete ones, exactly the sum of the fits: sets == that
    sum // replicas, the bound itself (no saturation: the sum is below (sets + 1) x
    replicas, checked to fit in int64)."""
    if limiting >= 0 and sets < upper:
        counts = replicas.tolist()
        r = counts[limiting]
        if r > 0 and (sets + 1) * r <= INT64_MAX and sum(1 for count in counts if count > 0) == 1:
            return sets
    return component_bound(available, requests, replicas, masks, limiting, upper)


@kernel
def _pool_pass(
    available: np.ndarray,
    requests: np.ndarray,
    replicas: np.ndarray,
    masks: np.ndarray,
    usable: np.ndarray,
    totals: np.ndarray,
) -> int:
    """The eligible pool's count, in one pass over the nodes: usable[n] = node n is in it
    (some component with replicas fits a replica there: mask set, every requested column
    holds one request, compared, not divided); totals[k] = sum of available[n, k] over
    the pool (saturating)."""
    n_comp, n_cols = requests.shape
    count = 0
    totals[:] = 0
    for n in range(available.shape[0]):
        fits = False
        for c in range(n_comp):
            if replicas[c] > 0 and masks[c, n]:
                fits = True
                for k in range(n_cols):
                    if available[n, k] < requests[c, k]:
                        fits = False
                        break
                if fits:
                    break
        usable[n] = fits
        if fits:
            count += 1
            for k in range(n_cols):
                totals[k] = _add(totals[k], available[n, k])
    return count


# Column by column. The node-by-node passes above read a node's columns together, as the
# packing kernels need them; the bound's two passes over every node (`_sum_fit` of one
# component, `_pool_pass`) instead run on the columns laid out one after another
# (`by_column`, int64 [K, N]), one column at a time, which the compiler turns into vector
# instructions (several times faster: CHANGELOG). The layout itself (`column_layout`) is
# kept per snapshot by the node-resource plugin. Division has no vector instruction: a
# column divides through a float estimate of each quotient corrected by one either way,
# exact while every amount and request is below COLUMNAR_LIMIT (the estimate is then off
# by less than one); `_columnar` checks that, and that each column's total stays below
# 2**62 (so no sum of it saturates). Anything larger takes the node-by-node passes.
COLUMNAR_LIMIT = 2**50
_COLUMN_TOTAL_LIMIT = 2**62


# A column's total is checked every this many nodes: each adds less than COLUMNAR_LIMIT, so
# a total below 2**62 before a chunk cannot pass int64's maximum within it.
_CHUNK = 4096


@kernel
def _columnar(by_column: np.ndarray) -> bool:
    """Whether the column passes may run on `by_column`: every amount below COLUMNAR_LIMIT
    and each column's total below 2**62 (a pass over contiguous columns, vectorised)."""
    n_cols, n_nodes = by_column.shape
    for k in range(n_cols):
        column = by_column[k]
        total = 0
        for start in range(0, n_nodes, _CHUNK):
            chunk = column[start : start + _CHUNK]  # a loop from 0: the compiler vectorises it
            largest = 0
            for n in range(chunk.shape[0]):
                largest = max(largest, chunk[n])
                total += chunk[n]  # wraps only past a large amount, refused below
            if largest >= COLUMNAR_LIMIT or total >= _COLUMN_TOTAL_LIMIT:
                return False
    return True


def column_layout(available: np.ndarray) -> np.ndarray | None:
    """`available`'s columns one after another (int64 [K, N], read-only) for the bound's
    column passes, or None where those may not run on it (`_columnar`)."""
    return validated_layout(check_available(available, in_place=False))


def validated_layout(available: np.ndarray) -> np.ndarray | None:
    """`column_layout` of a validated `available`."""
    by_column = readonly(np.ascontiguousarray(available.T))
    return by_column if _columnar(by_column) else None


@kernel
def _columnar_requests(requests: np.ndarray) -> bool:
    """Every request below COLUMNAR_LIMIT (the column passes' exact division)."""
    for c in range(requests.shape[0]):
        for k in range(requests.shape[1]):
            if requests[c, k] >= COLUMNAR_LIMIT:
                return False
    return True


@kernel(inline="always")
def _estimated_quotient(x: int, r: int, inverse: float) -> int:
    """x // r for 0 <= x < COLUMNAR_LIMIT, 1 <= r < COLUMNAR_LIMIT, inverse = 1.0 / r: the
    float product is within a quarter of x / r (x is exact in a double, each of the two
    roundings adds at most 2**-53 relative to a quotient below 2**50), so its truncation is
    the quotient or one off it, and one integer test each way corrects it (products below
    2**52: no overflow). Branch-free, so a loop of it vectorises."""
    q = int(x * inverse)
    q -= int(q * r > x)
    q += int((q + 1) * r <= x)
    return q


@kernel
def _column_fit_sum(by_column: np.ndarray, request: np.ndarray, mask: np.ndarray, fits: np.ndarray) -> int:
    """`_sum_fit` on `by_column` (`column_layout`'s), for a request below
    COLUMNAR_LIMIT asking one pod (column 0: so every fit is at most the node's pods and
    the sum at most that column's total, below 2**62). fits: int64 [N] scratch."""
    n_cols, n_nodes = by_column.shape
    pods = by_column[0]
    for n in range(n_nodes):
        fits[n] = pods[n]  # one pod per replica: request[0] == 1
    for k in range(1, n_cols):
        r = request[k]
        if r > 0:
            inverse = 1.0 / r
            column = by_column[k]
            for n in range(n_nodes):
                fits[n] = min(fits[n], _estimated_quotient(column[n], r, inverse))
    total = 0
    for n in range(n_nodes):
        total += fits[n] * int(mask[n])
    return total


@kernel
def _column_pool(
    by_column: np.ndarray,
    requests: np.ndarray,
    replicas: np.ndarray,
    masks: np.ndarray,
    fits: np.ndarray,
    usable: np.ndarray,
    totals: np.ndarray,
) -> int:
    """`_pool_pass` on `by_column` (`column_layout`'s: no total saturates). fits: bool [N]
    scratch."""
    n_comp, n_cols = requests.shape
    n_nodes = by_column.shape[1]
    for n in range(n_nodes):
        usable[n] = False
    for c in range(n_comp):
        if replicas[c] > 0:
            mask = masks[c]
            for n in range(n_nodes):
                fits[n] = mask[n]
            for k in range(n_cols):
                r = requests[c, k]
                if r > 0:
                    column = by_column[k]
                    for n in range(n_nodes):
                        fits[n] &= column[n] >= r
            for n in range(n_nodes):
                usable[n] |= fits[n]
    count = 0
    for n in range(n_nodes):
        count += int(usable[n])
    for k in range(n_cols):
        column = by_column[k]
        total = 0
        for n in range(n_nodes):
            total += column[n] * int(usable[n])
        totals[k] = total
    return count


# The passes `firstfit.staged_first_fit` runs after first-fit in the same kernel call.
fit_sum = _sum_fit
pool_pass = _pool_pass
columnar_requests = _columnar_requests
column_fit_sum = _column_fit_sum
column_pool = _column_pool


@kernel
def column_bound(totals: np.ndarray, requests: np.ndarray, replicas: np.ndarray, bound: int) -> int:
    """min(bound, over columns k: what the pool has of k // what a set needs of k)."""
    for k in range(requests.shape[1]):
        bound = _bound(totals[k], _demand(requests, replicas, k), bound)
    return bound


class Pool(NamedTuple):
    """The nodes a request can use at all (`_pool_pass`), and the bound their column totals give."""

    usable: np.ndarray  # bool[N]: the node is in the pool
    count: int  # type: ignore[assignment]  # the field shadows tuple.count (no caller counts)
    whole: bool  # every node is eligible (no compaction needed)
    bound: int  # min(the bound passed in, the column totals' bound)

    @property
    def nodes(self) -> np.ndarray:
        """int64[count]: the eligible node indices, ascending (worked out when asked: most
        requests only need the count and the bound)."""
        return np.flatnonzero(self.usable)


def pool_bound(totals: np.ndarray, requests: np.ndarray, replicas: np.ndarray, bound: int) -> int:
    """min(`bound`, the column totals' bound) for the totals of an eligible pool. `totals`
    writable, as `firstfit._staged_first_fit` passes its own: one compiled signature."""
    return int(column_bound(totals, requests, replicas, bound))


def eligible_pool(
    available: np.ndarray, requests: np.ndarray, replicas: np.ndarray, masks: np.ndarray, bound: int
) -> Pool:
    """The eligible pool (`_pool_pass`) on validated arrays, with the column-total
    relaxation (each column's supply over the pool // each set's demand) folded into `bound`."""
    n_nodes = available.shape[0]
    usable = np.empty(n_nodes, dtype=np.bool_)
    totals = np.empty(available.shape[1], dtype=np.int64)
    count = _pool_pass(available, requests, replicas, masks, usable, totals)
    return Pool(usable, count, count == n_nodes, pool_bound(totals, requests, replicas, bound))


def compact(pool: Pool, available: np.ndarray, masks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(available, masks) on the pool's nodes only, read-only (the arrays themselves when
    the pool is every node)."""
    if pool.whole:
        return available, masks
    nodes = pool.nodes
    return readonly(np.take(available, nodes, axis=0)), readonly(np.take(masks, nodes, axis=1))


# The full pass (`bounds`) is run for the staged bound when it costs at most this, in
# first-fit node visits (kernels.best._MIN_SEARCH_WORK, the search's floor): on a large pool
# the component and column bounds stand alone, so a new request shape on a 10k-node member
# pays two cheap passes, not the full one (`python -m benchmarks.search_costs` measures
# the full pass's cost per component and node, priced at BOUNDS_CELL).
FULL_PASS_WORK = 20_000
BOUNDS_CELL = 3.5


def full_pass_affordable(n_comp: int, pool_count: int) -> bool:
    return n_comp * pool_count * BOUNDS_CELL <= FULL_PASS_WORK


def staged_bound(
    available: np.ndarray,
    requests: np.ndarray,
    replicas: np.ndarray,
    masks: np.ndarray,
    upper: int,
    reach: int,
    first: int,
    first_fit: bool = False,
) -> int:
    """`set_bound` on validated arrays."""
    if first_fit:
        bound = first_fit_bound(available, requests, replicas, masks, upper, reach, first)
    else:
        bound = component_bound(available, requests, replicas, masks, first, upper)
    if bound <= reach:
        return bound
    if not replicas.any():
        return upper
    pool = eligible_pool(available, requests, replicas, masks, bound)
    if pool.bound <= reach:
        return pool.bound
    return full_stage(available, requests, replicas, masks, upper, pool)


def full_stage(
    available: np.ndarray, requests: np.ndarray, replicas: np.ndarray, masks: np.ndarray, upper: int, pool: Pool
) -> int:
    """The staged bound's last stage after the pool's (whose bound is `pool.bound`): the
    full pass of `_bounds` over the pool where it is small enough (`full_pass_affordable`)."""
    if not full_pass_affordable(requests.shape[0], pool.count):
        return pool.bound
    pool_available, pool_masks = compact(pool, available, masks)
    return min(pool.bound, bounds(pool_available, requests, replicas, pool_masks, upper)[0])


def set_bound(
    available: object,
    requests: object,
    replicas: object,
    masks: object,
    upper: object,
    reach: int = -1,
    first: int = -1,
    *,
    first_fit: bool = False,
) -> int:
    """An upper bound on the complete sets any placement reaches (<= upper).

    Cheapest first, stopping as soon as it comes down to `reach` (an answer already shown
    feasible, so no bound is below it): component `first` alone (e.g. `Packing.limiting`);
    then one pass of compares finding the eligible pool (nodes where some component fits a
    replica) and each column's total over it per set's demand; then, where the pool is
    small enough (`full_pass_affordable`), the full pass of `_bounds` over the pool.

    `first_fit`: the caller promises `reach` and `first` are `first_fit_sets`' sets and
    limiting component on these very arrays; a job of one component (with replicas) then
    needs no pass at all (`first_fit_bound`). The bound is the same either way.
    """
    p = problem(available, requests, replicas, masks, upper, in_place=False)
    if not -1 <= first < p.replicas.shape[0]:
        raise ValueError(f"first must be -1 or a component index, got {first}")
    return staged_bound(p.available, p.requests, p.replicas, p.masks, p.upper, reach, first, first_fit)


def sum_fit(available: np.ndarray, request: np.ndarray, mask: np.ndarray) -> int:
    """MaxAvailableReplicas: sum over nodes with mask[n] of the fit of `request` (int64-saturating)."""
    avail = check_available(available, in_place=False)
    row = amounts("request", request, 1)
    check_request_rows(row, avail.shape[1])
    flag = flags("mask", mask, 1)
    if flag.shape != (avail.shape[0],):
        raise ValueError(f"mask has shape {flag.shape}, expected ({avail.shape[0]},) (one per node)")
    return int(_sum_fit(readonly(avail), readonly(row), readonly(flag), magics_buffer(row.shape[0])))
