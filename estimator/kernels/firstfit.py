"""Karmada's First-Fit set packing, without Karmada's rescan from node 0 for every set.

Go (SchedulingSimulator) places one complete set at a time: components in order, each
walking the nodes from the first and taking min(remaining, fit) replicas per node, until a
component cannot be completed. We give the same answer, the same placement and the same
leftover `available`, at O(C·N·K + events) instead of O(sets·C·N·K):

- Pointers. Nodes only lose resources, so a fit never grows. Every node a component walks
  past is left with fit 0 for it (it was 0, or the component took all it could), so the
  next set may start that component's walk at the node where its last walk ended.
- Bulk repetition. If a set put each component c on a single node n_c, and every such node
  still holds t times what the set took from it (summed over the components that used it,
  in every column), the next t sets are that same set again: at set j <= t, when c comes
  up, n_c has lost at most (j-1) copies plus the earlier components of set j, so it still
  fits all replicas[c], and every node before n_c still fits 0. We apply t sets at once.
- One mover. If every component but one, m, sits on a single node that can take S more
  copies of what they put there, and m can never place on those nodes again (it fits 0
  there, may not use them, or has walked past them), then for the next S sets the others
  stay put and m packs alone. A lone component's sets are a greedy fill of its node walk
  (its fit on a node drops by exactly what it places), so m places min(S, what its walk
  holds / replicas[m]) sets' worth in one walk, and the others take that many copies.
- After a bulk step some node cannot take another copy, so the next set moves a component
  past a node, or fails; sets handled one by one are O(C·N) (in practice, a few per node
  where some component's stay ends).

The same kernel packs with other component and node orders (the best mode's candidates),
and packs k sets' worth of replicas as one set (replicas scaled by k, upper 1).
"""

from __future__ import annotations

import numpy as np

from ._arrays import Packing, problem, readonly
from ._numba import kernel

# Products of two values up to 2**31 - 1 fit in int64: multiply-and-compare then replaces a
# division on the common path.
_SMALL = 2**31 - 1
_NO_NODE_ORDER = np.zeros((0, 0), dtype=np.int64)
_NO_LENGTHS = np.zeros(0, dtype=np.int64)


@kernel
def _take(available: np.ndarray, requests: np.ndarray, c: int, n: int, want: int) -> int:
    """min(want, fit of one replica of c on n).

    Divides only in a column that binds and asks for more than 1 unit: int64 division is
    the slowest instruction on this path.
    """
    f = want
    for k in range(available.shape[1]):
        r = requests[c, k]
        if r > 0:
            a = available[n, k]
            if a < r:
                return 0
            if r == 1:
                f = min(f, a)
            elif f > _SMALL or r > _SMALL:
                f = min(f, a // r)
            elif f * r > a:
                f = a // r
    return f


@kernel
def _groups(
    available: np.ndarray,
    requests: np.ndarray,
    replicas: np.ndarray,
    order: np.ndarray,
    single: np.ndarray,
    skip: int,
    demand: np.ndarray,
    limit: int,
) -> int:
    """Group the components placed on a single node (single[c] >= 0), leaving out `skip`.

    For the first component of each group (in `order`), demand[i] = what one set takes from
    its node; other positions get demand[i, 0] = -1. Returns how many more sets every
    group's node can give, capped at `limit`.
    """
    n_comp, n_cols = order.shape[0], available.shape[1]
    smallest = limit
    for i in range(n_comp):
        c = order[i]
        n = single[c]
        demand[i, 0] = -1
        if n < 0 or c == skip:
            continue
        leader = True
        for j in range(i):
            if single[order[j]] == n and order[j] != skip:
                leader = False
                break
        if not leader:
            continue
        t = limit
        for k in range(n_cols):
            # What the last set took from n in column k was subtracted from a
            # non-negative int64, so this sum fits in int64.
            d = 0
            for j in range(i, n_comp):
                cj = order[j]
                if single[cj] == n and cj != skip:
                    d += replicas[cj] * requests[cj, k]
            demand[i, k] = d
            if d > 0:
                a = available[n, k]
                if d == 1:
                    t = min(t, a)
                elif t > _SMALL or d > _SMALL:
                    t = min(t, a // d)
                elif t * d > a:
                    t = a // d
        smallest = min(smallest, t)
    return smallest


@kernel
def _apply_groups(
    available: np.ndarray,
    replicas: np.ndarray,
    order: np.ndarray,
    single: np.ndarray,
    skip: int,
    demand: np.ndarray,
    t: int,
    placement: np.ndarray,
) -> None:
    """Take t more copies of the grouped components' share (see `_groups`)."""
    for i in range(order.shape[0]):
        c = order[i]
        n = single[c]
        if n < 0 or c == skip:
            continue
        placement[c, n] += t * replicas[c]
        if demand[i, 0] >= 0:
            for k in range(available.shape[1]):
                available[n, k] -= t * demand[i, k]


@kernel
def _blocked(
    available: np.ndarray, requests: np.ndarray, replicas: np.ndarray, order: np.ndarray, single: np.ndarray, skip: int
) -> tuple[int, int]:
    """How many components on a single node (other than `skip`) no longer fit their own
    share there, and the last of them (-1 if none). A cheap test before `_groups`."""
    count = 0
    last = -1
    for i in range(order.shape[0]):
        c = order[i]
        n = single[c]
        if n >= 0 and c != skip and _take(available, requests, c, n, replicas[c]) < replicas[c]:
            count += 1
            last = c
    return count, last


@kernel
def _count_blocked(
    available: np.ndarray, requests: np.ndarray, replicas: np.ndarray, order: np.ndarray, single: np.ndarray
) -> int:
    return _blocked(available, requests, replicas, order, single, requests.shape[0])[0]


@kernel
def _fill_mover(
    available: np.ndarray,
    requests: np.ndarray,
    replicas: np.ndarray,
    masks: np.ndarray,
    order: np.ndarray,
    node_order: np.ndarray,
    lengths: np.ndarray,
    pointer: np.ndarray,
    single: np.ndarray,
    demand: np.ndarray,
    limit: int,
    placement: np.ndarray,
) -> tuple[int, bool]:
    """The one-mover step (module docstring): (sets placed, whether packing has ended)."""
    n_comp = order.shape[0]
    ordered = node_order.shape[0] > 0
    none = requests.shape[0]  # no component has this index
    mover = none
    for i in range(n_comp):
        c = order[i]
        if replicas[c] > 0 and single[c] == -2:
            if mover != none:
                return 0, False
            mover = c
    blocked, last_blocked = _blocked(available, requests, replicas, order, single, mover)
    if mover == none:
        # Every component sat on one node: the mover is the one whose node is full. (A
        # full node shared by components that each still fit alone has two candidates.)
        if blocked != 1:
            return 0, False
        mover = last_blocked
    elif blocked > 0:
        return 0, False  # a component that must stay cannot
    if replicas[mover] > _SMALL:
        return 0, False
    r_m = replicas[mover]
    stay = _groups(available, requests, replicas, order, single, mover, demand, limit)
    if stay <= 0:
        return 0, False
    for i in range(n_comp):
        c = order[i]
        n = single[c]
        if c == mover or n < 0:
            continue
        if ((not ordered) and n < pointer[mover]) or not masks[mover, n]:
            continue  # walked past, or not allowed
        for k in range(available.shape[1]):
            if requests[mover, k] > available[n, k]:
                break
        else:
            return 0, False  # the mover could still land on a node the others use
    length = lengths[mover] if ordered else available.shape[0]
    start = pointer[mover]
    before = placement[mover, node_order[mover, start] if ordered else start] if start < length else 0
    want = stay * r_m
    remaining = want
    p = start
    while p < length:
        n = node_order[mover, p] if ordered else p
        if masks[mover, n]:
            f = _take(available, requests, mover, n, remaining)
            if f > 0:
                for k in range(available.shape[1]):
                    available[n, k] -= f * requests[mover, k]
                placement[mover, n] += f
                remaining -= f
                if remaining == 0:
                    break
        p += 1
    pointer[mover] = p
    sets = (want - remaining) // r_m
    if remaining == 0:
        _apply_groups(available, replicas, order, single, mover, demand, sets, placement)
        return sets, False
    # The mover ran out: `sets` sets completed, then the next one failed in the mover after
    # the components before it had placed theirs (that consumption stays, as in Go).
    # `placement` keeps complete sets only: drop the failed set's tail from the walk's end.
    extra = want - remaining - sets * r_m
    p = min(p, length - 1)
    while extra > 0:
        n = node_order[mover, p] if ordered else p
        here = placement[mover, n] - (before if p == start else 0)
        drop = min(here, extra)
        placement[mover, n] -= drop
        extra -= drop
        p -= 1
    _apply_groups(available, replicas, order, single, mover, demand, sets, placement)
    for i in range(n_comp):
        c = order[i]
        if c == mover:
            break
        n = single[c]
        if n >= 0:
            for k in range(available.shape[1]):
                available[n, k] -= replicas[c] * requests[c, k]
    return sets, True


@kernel
def _unplace(
    replicas: np.ndarray,
    order: np.ndarray,
    node_order: np.ndarray,
    lengths: np.ndarray,
    last: int,
    start_at: np.ndarray,
    start_held: np.ndarray,
    pointer: np.ndarray,
    placement: np.ndarray,
) -> None:
    """Take the set in progress (components order[:last + 1]) back out of `placement`."""
    ordered = node_order.shape[0] > 0
    for i in range(last + 1):
        c = order[i]
        if replicas[c] == 0:
            continue  # placed nothing; its start_at is stale
        end = min(pointer[c], (lengths[c] if ordered else placement.shape[1]) - 1)
        for p in range(start_at[c], end + 1):
            n = node_order[c, p] if ordered else p
            placement[c, n] = start_held[c] if p == start_at[c] else 0


@kernel
def _first_fit(
    available: np.ndarray,
    requests: np.ndarray,
    replicas: np.ndarray,
    masks: np.ndarray,
    order: np.ndarray,
    node_order: np.ndarray,
    lengths: np.ndarray,
    upper: int,
    placement: np.ndarray,
) -> int:
    """Pack sets until one fails or `upper` are placed; return how many were complete.

    order: components in packing order. node_order[c, :lengths[c]]: the nodes component c
    walks, in order; with zero rows, every component walks all nodes by index.
    Consumes `available`; adds complete sets only to `placement` (zeroed by the caller).
    """
    n_req, n_cols = requests.shape
    n_nodes = available.shape[0]
    n_comp = order.shape[0]
    ordered = node_order.shape[0] > 0
    pointer = np.zeros(n_req, np.int64)
    single = np.empty(n_req, np.int64)  # node holding all of c in this set; -1 none; -2 several
    # Where each component's walk started in the set in progress, and what `placement`
    # held there, to take a set that fails back out of `placement` (complete sets only).
    # Past its pointer a component has placed nothing, so those entries were 0.
    start_at = np.zeros(n_req, np.int64)
    start_held = np.zeros(n_req, np.int64)
    demand = np.empty((n_comp, n_cols), np.int64)
    no_skip = n_req  # no component has this index (a variable, not a literal -1, so the
    # helpers compile once)
    sets = 0
    while sets < upper:
        spread = 0  # components this set placed over several nodes
        for i in range(n_comp):
            c = order[i]
            remaining = replicas[c]
            single[c] = -1
            if remaining == 0:
                continue
            length = lengths[c] if ordered else n_nodes
            p = pointer[c]
            start_at[c] = p
            if p < length:
                start_held[c] = placement[c, node_order[c, p] if ordered else p]
            used = 0
            while p < length:
                n = node_order[c, p] if ordered else p
                if masks[c, n]:
                    f = _take(available, requests, c, n, remaining)
                    if f > 0:
                        for k in range(n_cols):
                            available[n, k] -= f * requests[c, k]
                        placement[c, n] += f
                        single[c] = n
                        used += 1
                        remaining -= f
                        if remaining == 0:
                            break  # this node may fit more: the next walk starts here
                p += 1
            pointer[c] = p
            if remaining > 0:
                # The partial set's consumption stays in `available`, as in Go.
                _unplace(replicas, order, node_order, lengths, i, start_at, start_held, pointer, placement)
                return sets
            if used > 1:
                single[c] = -2
                spread += 1
        sets += 1
        # Cheap tests first: calls with a dozen array arguments cost more than a set.
        blocked = _count_blocked(available, requests, replicas, order, single)
        if spread == 0 and blocked == 0 and sets < upper:
            t = _groups(available, requests, replicas, order, single, no_skip, demand, upper - sets)
            if t > 0:
                _apply_groups(available, replicas, order, single, no_skip, demand, t, placement)
                sets += t
                blocked = _count_blocked(available, requests, replicas, order, single)
        if sets < upper and blocked + spread <= 1:
            more, ended = _fill_mover(
                available, requests, replicas, masks, order, node_order, lengths,
                pointer, single, demand, upper - sets, placement,
            )  # fmt: skip
            sets += more
            if ended:
                return sets
    return sets


def pack(available, requests, replicas, masks, order, node_order, lengths, upper) -> Packing:
    """`_first_fit` on already-validated arrays (consumes `available`)."""
    placement = np.zeros(masks.shape, dtype=np.int64)
    sets = _first_fit(
        available,
        readonly(requests),
        readonly(replicas),
        readonly(masks),
        readonly(order),
        readonly(node_order),
        readonly(lengths),
        upper,
        placement,
    )
    return Packing(int(sets), placement)


def karmada_first_fit(available, requests, replicas, masks, upper) -> Packing:
    """Karmada's order (components as given, nodes by index) on validated arrays."""
    if not replicas.any():
        # Every set is empty and "fits"; Go would loop to its bound, we answer it directly.
        return Packing(upper, np.zeros(masks.shape, dtype=np.int64))
    order = np.arange(replicas.shape[0], dtype=np.int64)
    return pack(available, requests, replicas, masks, order, _NO_NODE_ORDER, _NO_LENGTHS, upper)


def first_fit_sets(available, requests, replicas, masks, upper) -> Packing:
    """Karmada's First-Fit: complete sets placed one after another, exactly as Go does.

    MUTATES `available` (int64[N, K], C-contiguous, writable): the consumption of every
    complete set, and of a set that failed part-way, stays in it. `placement` counts the
    complete sets only. All replicas 0: `Packing(upper, zeros)`.
    """
    p = problem(available, requests, replicas, masks, upper, in_place=True)
    return karmada_first_fit(p.available, p.requests, p.replicas, p.masks, p.upper)
