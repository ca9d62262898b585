"""Small pools placed exactly: whether k sets fit at all, found by trying every way to
spread each component's k x replicas over the pool's nodes, cut short by a step budget.

Sets are interchangeable, so k sets fit exactly when each component c can put k x
replicas[c] replicas on nodes it may use without any node running out of a column: a
choice of count per component and node. `_spread` walks those choices depth first,
component by component (the caller's order, most constrained first) and node by node,
the largest count that still fits first, and backs up on a dead end:

- a node takes at most what fits of the component on what earlier components left it,
  and at least what the nodes after it cannot hold (their fits, summed once when the
  component starts: its own choices never touch another node's room);
- before a component starts, every component still to come must fit its replicas on the
  room left, alone, and each column's room must hold what all of them ask together; a
  component that cannot is a dead end without a single choice being tried.

The walk ends with a placement (FOUND), with every choice ruled out (NONE: no placement of
k sets exists, so the optimum is below k), or past `cap` steps (UNKNOWN: no answer). A
step is one count tried, or one column of one node divided by a start's checks, so a
budget in steps bounds the time (a step costs about one or two first-fit node visits,
`python -m benchmarks.search_costs`) and the same problem always gets the same answer.
Meant for pools of a few dozen nodes at most (best mode's small problems,
`best._SMALL_NODES`): the number of spreads grows exponentially with nodes and replicas;
the cap is what keeps it bounded.
"""

from __future__ import annotations

import numpy as np

from ._arith import INT64_MAX
from ._arrays import readonly
from ._numba import kernel

FOUND, NONE, UNKNOWN = 1, 0, -1


@kernel(inline="always")
def _fit(capacity: np.ndarray, requests: np.ndarray, c: int, n: int) -> int:
    """Replicas of component c that node n's room holds (every request row asks for a pod,
    so column 0 bounds it)."""
    f = capacity[n, 0] // requests[c, 0]
    for k in range(1, capacity.shape[1]):
        r = requests[c, k]
        if r > 0:
            f = min(f, capacity[n, k] // r)
    return f


@kernel(inline="always")
def _saturating_add(total: int, x: int) -> int:
    """total + x for 0 <= both, INT64_MAX where the sum would pass it."""
    return INT64_MAX if x > INT64_MAX - total else total + x


@kernel(inline="always")
def _saturating_product(x: int, r: int) -> int:
    """x * r for 0 <= both, INT64_MAX where the product would pass it."""
    return INT64_MAX if r > 0 and x > INT64_MAX // r else x * r


@kernel
def _start(
    capacity: np.ndarray,
    requests: np.ndarray,
    demand: np.ndarray,
    masks: np.ndarray,
    order: np.ndarray,
    pos: int,
    fits: np.ndarray,
    suffix: np.ndarray,
) -> int:
    """Before the component at `pos` starts: its fits per node (`fits[pos]`) and what the
    nodes from each one on hold (`suffix[pos]`). Returns the steps taken (nodes looked at),
    negated where the room left is a dead end (see the module's doc)."""
    n_nodes = capacity.shape[0]
    steps = 0
    for q in range(pos, order.shape[0]):
        c = order[q]
        total = 0
        for n in range(n_nodes):
            f = _fit(capacity, requests, c, n) if masks[c, n] else 0
            if q == pos:
                fits[pos, n] = f
            total = _saturating_add(total, f)
        steps += n_nodes * capacity.shape[1]  # a division per column and node
        if total < demand[c]:
            return -steps
    suffix[pos, n_nodes] = 0
    for n in range(n_nodes - 1, -1, -1):
        suffix[pos, n] = _saturating_add(suffix[pos, n + 1], fits[pos, n])
    # Each column's room against what the components still to come ask together; sums past
    # int64 saturate, and a saturated room proves nothing.
    for k in range(capacity.shape[1]):
        room = 0
        for n in range(n_nodes):
            room = _saturating_add(room, capacity[n, k])
        need = 0
        for q in range(pos, order.shape[0]):
            c = order[q]
            need = _saturating_add(need, _saturating_product(demand[c], requests[c, k]))
        if room < need:
            return -steps
    return steps


@kernel
def _spread(
    available: np.ndarray,
    requests: np.ndarray,
    demand: np.ndarray,
    masks: np.ndarray,
    order: np.ndarray,
    cap: int,
    capacity: np.ndarray,
    placement: np.ndarray,
    fits: np.ndarray,
    suffix: np.ndarray,
    chosen: np.ndarray,
    least: np.ndarray,
    left: np.ndarray,
    info: np.ndarray,
) -> int:
    """FOUND, NONE or UNKNOWN (module doc) for placing demand[c] replicas of each component
    in `order` (the others place none); on FOUND `placement` holds the counts. info[0]: the
    steps taken. Scratch, the caller's: `capacity` like `available`; `fits` [P, N] and
    `suffix` [P, N + 1] (P = len(order)); `chosen`, `least` [P x N]; `left` [P]."""
    n_nodes, n_cols = available.shape
    # Loops, not slice assignments: those pull in numba's array implementations (`_numba`).
    for n in range(n_nodes):
        for k in range(n_cols):
            capacity[n, k] = available[n, k]
        for c in range(placement.shape[0]):
            placement[c, n] = 0
    levels = order.shape[0] * n_nodes
    level = 0
    forward = True
    steps = 0
    while True:
        if level < 0:
            info[0] = steps
            return NONE
        if forward and level == levels:
            info[0] = steps
            return FOUND
        pos = level // n_nodes
        n = level - pos * n_nodes
        c = order[pos]
        if forward:
            if n == 0:
                looked = _start(capacity, requests, demand, masks, order, pos, fits, suffix)
                steps += abs(looked)
                if steps > cap:
                    info[0] = steps
                    return UNKNOWN
                if looked < 0:
                    level -= 1
                    forward = False
                    continue
                left[pos] = demand[c]
            least[level] = max(0, left[pos] - suffix[pos, n + 1])
            x = min(left[pos], fits[pos, n])
            if least[level] > x:
                level -= 1
                forward = False
                continue
        else:
            x = chosen[level]
            for k in range(capacity.shape[1]):
                capacity[n, k] += x * requests[c, k]
            left[pos] += x
            placement[c, n] = 0
            x -= 1
            if x < least[level]:
                level -= 1
                continue
        steps += 1
        if steps > cap:
            info[0] = steps
            return UNKNOWN
        for k in range(capacity.shape[1]):
            capacity[n, k] -= x * requests[c, k]  # x fits: no overflow, nothing below 0
        left[pos] -= x
        placement[c, n] = x
        chosen[level] = x
        level += 1
        forward = True


def place_exactly(
    available: np.ndarray,
    requests: np.ndarray,
    replicas: np.ndarray,
    masks: np.ndarray,
    sets: int,
    order: np.ndarray,
    cap: int,
) -> tuple[int, int, np.ndarray]:
    """(FOUND, NONE or UNKNOWN, steps taken, placement of `sets` sets where FOUND) on
    validated arrays (`_arrays.problem`'s), searching components in `order` (those with
    replicas; the others place none). It stops at the first step past `cap` (>= 0): one
    count tried, or a start's checks (at most len(order) x nodes x columns steps), may pass it.
    UNKNOWN without a step where sets x replicas passes int64."""
    n_comp, n_nodes = masks.shape
    placement = np.zeros((n_comp, n_nodes), dtype=np.int64)
    if sets > INT64_MAX // max(int(replicas.max(initial=0)), 1):
        return UNKNOWN, 0, placement
    demand = replicas * sets
    order = np.array([c for c in order.tolist() if replicas[c] > 0], dtype=np.int64)
    width = order.shape[0]
    if n_nodes == 0:
        return (NONE if width else FOUND), 0, placement
    info = np.zeros(1, dtype=np.int64)
    status = _spread(
        readonly(available),
        readonly(requests),
        readonly(demand),
        readonly(masks),
        readonly(order),
        cap,
        np.empty(available.shape, dtype=np.int64),
        placement,
        np.empty((width, n_nodes), dtype=np.int64),
        np.empty((width, n_nodes + 1), dtype=np.int64),
        np.empty(width * n_nodes, dtype=np.int64),
        np.empty(width * n_nodes, dtype=np.int64),
        np.empty(width, dtype=np.int64),
        info,
    )
    return int(status), int(info[0]), placement
