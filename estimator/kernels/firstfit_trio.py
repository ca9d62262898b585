"""Karmada's first-fit for three components walking the nodes by index (a RayCluster's
head, cpu group and gpu group): the same answer, placement and leftover as
`firstfit._first_fit`, with a cheaper set by hand.

Sets of such jobs rarely repeat: the small head and cpu group share the first nodes that
still fit them, moving on every set or two, while the gpu group's two replicas land on two
GPU nodes a few nodes apart. So the general kernel's bulk steps almost never apply (Ray at
10k nodes: the same time with them switched off) and its cost is the sets by hand, each
visit a loop over a request row. Here every component's request and share (replicas x
request) sit in locals for its walk, up to 4 columns (`_nodefit`'s node helpers and walk,
shared with `firstfit_pair`):

- Pointers, as in `firstfit`: nodes only lose resources, so each component's walk starts
  where its last one ended, and the nodes before it fit none of it for good.
- A walk divides only on a node that holds fewer than the replicas it still wants: Ray
  at 10k, 0.10 ms instead of 0.15. want <= _FEW and requests up to _FEW_REQUEST keep
  want x request in int64 on every walk, so the walk's bound is INT64_MAX (its dividing
  branch for larger wants then compiles away).
- A walk whose pointer's node holds the component's whole share takes it there in one
  test and one subtraction, and the pointer stays (the node may fit more).
- When all three took their share whole on their pointers' nodes, the next s sets land
  the same way while each of those nodes holds s copies of what the set took from it
  (the shares of every component on it, summed): one step, as `firstfit`'s stationary
  components. Otherwise the next set is by hand.
- A set that fails part-way leaves its consumption in `available` (as Go does) and is
  taken back out of `placement` from where each walk began and what it took there.

Compiled without numba's reference counting (`_nrt=False`, as `firstfit_pair`, for the
same reason): the caller passes the small scratch array.
"""

from __future__ import annotations

import numpy as np

from ._nodefit import INT64_MAX, MAX_COLUMNS, column, fit, holds, sub, unplace, walk
from ._numba import kernel

COMPONENTS = 3
# Replicas and requests this kernel takes: a share (at most _FEW x a request) is at most
# 2**61, so three shares add up without overflowing int64.
_FEW = 8
_FEW_REQUEST = 2**58
# Columns of the scratch rows: the share (0-3), the pointer, where the set's walk began,
# what it took there.
_POINTER, _START, _TOOK = 4, 5, 6


def trio_components(requests: np.ndarray, counts: list[int]) -> tuple[int, int, int] | None:
    """The three components with replicas > 0, in order, if `trio_first_fit` takes the
    problem (exactly three, 1..MAX_COLUMNS columns, at most _FEW replicas, requests up to
    _FEW_REQUEST); else None. `counts`: the replicas as a list."""
    active = [c for c, r in enumerate(counts) if r > 0]
    if len(active) != COMPONENTS or not 1 <= requests.shape[1] <= MAX_COLUMNS or max(counts) > _FEW:
        return None
    if max(max(row) for row in requests.tolist()) > _FEW_REQUEST:
        return None
    return active[0], active[1], active[2]


def scratch() -> np.ndarray:
    """The kernel's scratch rows (any content)."""
    return np.empty((COMPONENTS, 8), dtype=np.int64)


@kernel(inline="always", _nrt=False)
def _nth(i, c0, c1, c2):
    return c0 if i == 0 else (c1 if i == 1 else c2)


@kernel(_nrt=False)
def trio_first_fit(
    available: np.ndarray,
    requests: np.ndarray,
    replicas: np.ndarray,
    masks: np.ndarray,
    c0: int,
    c1: int,
    c2: int,
    upper: int,
    placement: np.ndarray,
    info: np.ndarray,
    rows: np.ndarray,
) -> int:
    """`firstfit._first_fit` for the order (c0, c1, c2) and walks by node index, on a
    problem `trio_components` takes with at least one node: same arguments and results
    (rows of `placement` of other components stay 0). info[1] counts node visits as
    `firstfit_pair` does. rows: `scratch()`."""
    n_nodes, n_cols = available.shape
    last = n_cols - 1
    k1, k2, k3 = min(1, last), min(2, last), min(3, last)
    for i in range(COMPONENTS):
        c = _nth(i, c0, c1, c2)
        for k in range(MAX_COLUMNS):
            rows[i, k] = replicas[c] * column(requests, c, k)
        rows[i, _POINTER] = 0
    sets = 0
    work = 0
    while sets < upper:
        whole = 0
        for i in range(COMPONENTS):
            c = _nth(i, c0, c1, c2)
            p = rows[i, _POINTER]
            rows[i, _START] = p
            if (
                p < n_nodes
                and masks[c, p]
                and holds(available, p, k1, k2, k3, rows[i, 0], rows[i, 1], rows[i, 2], rows[i, 3])
            ):
                sub(available, p, k1, k2, k3, rows[i, 0], rows[i, 1], rows[i, 2], rows[i, 3], 1)
                placement[c, p] += replicas[c]
                rows[i, _TOOK] = replicas[c]
                whole += 1
                continue
            q, left, took = walk(
                available,
                masks,
                c,
                p,
                replicas[c],
                k1,
                k2,
                k3,
                column(requests, c, 0),
                column(requests, c, 1),
                column(requests, c, 2),
                column(requests, c, 3),
                INT64_MAX,
                placement,
            )
            rows[i, _POINTER] = q
            rows[i, _TOOK] = took
            work += q - p
            if left > 0:
                for j in range(i + 1):
                    unplace(placement, _nth(j, c0, c1, c2), rows[j, _START], rows[j, _TOOK], rows[j, _POINTER])
                info[0] = c
                info[1] += work + i + 1
                return sets
        work += COMPONENTS
        sets += 1
        if whole < COMPONENTS or sets >= upper:
            continue
        # Every share whole on its pointer's node: s more sets the same, s bounded on each
        # node (first holder only) by the shares of all components there.
        s = upper - sets
        for i in range(COMPONENTS):
            p = rows[i, _POINTER]
            if i > 0 and rows[0, _POINTER] == p or i > 1 and rows[1, _POINTER] == p:
                continue
            d0 = d1 = d2 = d3 = 0
            for j in range(i, COMPONENTS):
                if rows[j, _POINTER] == p:
                    d0, d1, d2, d3 = d0 + rows[j, 0], d1 + rows[j, 1], d2 + rows[j, 2], d3 + rows[j, 3]
            s = fit(available, p, k1, k2, k3, d0, d1, d2, d3, s)
        work += COMPONENTS
        if s > 0:
            for i in range(COMPONENTS):
                c = _nth(i, c0, c1, c2)
                p = rows[i, _POINTER]
                sub(available, p, k1, k2, k3, rows[i, 0], rows[i, 1], rows[i, 2], rows[i, 3], s)
                placement[c, p] += s * replicas[c]
            sets += s
    info[1] += work
    return sets
