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
same reason). Each component's share, pointer and what its walk began with are locals,
the three turns of a set written out (`_turn`): kept in a small array, they were reloaded
from memory on every turn (Ray at 10k nodes, with the copy it packs: 0.078 ms instead of
0.086).
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
    """The kernel's scratch (unused: every component's state is in locals; kept for the
    call's signature)."""
    return _NO_SCRATCH


_NO_SCRATCH = np.zeros((COMPONENTS, 8), dtype=np.int64)


@kernel(inline="always", _nrt=False)
def _turn(
    available: np.ndarray,
    requests: np.ndarray,
    replicas: np.ndarray,
    masks: np.ndarray,
    c: int,
    p: int,
    n_nodes: int,
    k1: int,
    k2: int,
    k3: int,
    w0: int,
    w1: int,
    w2: int,
    w3: int,
    placement: np.ndarray,
) -> tuple[int, int, int, bool]:
    """Component c's share of one set from its pointer p (w0..w3: the share, replicas x
    request): whole on p if p holds it, else a walk. Returns (the pointer after it, what is
    left, what it took on p, whether it went whole on p)."""
    if p < n_nodes and masks[c, p] and holds(available, p, k1, k2, k3, w0, w1, w2, w3):
        sub(available, p, k1, k2, k3, w0, w1, w2, w3, 1)
        placement[c, p] += replicas[c]
        return p, 0, replicas[c], True
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
    return q, left, took, False


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
    `firstfit_pair` does. rows: `scratch()` (unused)."""
    n_nodes, n_cols = available.shape
    last = n_cols - 1
    k1, k2, k3 = min(1, last), min(2, last), min(3, last)
    ra, rb, rc = replicas[c0], replicas[c1], replicas[c2]
    a0, a1, a2, a3 = (
        ra * column(requests, c0, 0),
        ra * column(requests, c0, 1),
        ra * column(requests, c0, 2),
        ra * column(requests, c0, 3),
    )
    b0, b1, b2, b3 = (
        rb * column(requests, c1, 0),
        rb * column(requests, c1, 1),
        rb * column(requests, c1, 2),
        rb * column(requests, c1, 3),
    )
    g0, g1, g2, g3 = (
        rc * column(requests, c2, 0),
        rc * column(requests, c2, 1),
        rc * column(requests, c2, 2),
        rc * column(requests, c2, 3),
    )
    pa = pb = pc = 0
    sets = 0
    work = 0
    while sets < upper:
        sa = pa
        pa, left, took_a, whole_a = _turn(
            available, requests, replicas, masks, c0, pa, n_nodes, k1, k2, k3, a0, a1, a2, a3, placement
        )
        work += pa - sa
        if left > 0:
            unplace(placement, c0, sa, took_a, pa)
            info[0] = c0
            info[1] += work + 1
            return sets
        sb = pb
        pb, left, took_b, whole_b = _turn(
            available, requests, replicas, masks, c1, pb, n_nodes, k1, k2, k3, b0, b1, b2, b3, placement
        )
        work += pb - sb
        if left > 0:
            unplace(placement, c0, sa, took_a, pa)
            unplace(placement, c1, sb, took_b, pb)
            info[0] = c1
            info[1] += work + 2
            return sets
        sc = pc
        pc, left, took_c, whole_c = _turn(
            available, requests, replicas, masks, c2, pc, n_nodes, k1, k2, k3, g0, g1, g2, g3, placement
        )
        work += pc - sc
        if left > 0:
            unplace(placement, c0, sa, took_a, pa)
            unplace(placement, c1, sb, took_b, pb)
            unplace(placement, c2, sc, took_c, pc)
            info[0] = c2
            info[1] += work + 3
            return sets
        work += COMPONENTS
        sets += 1
        if not (whole_a and whole_b and whole_c) or sets >= upper:
            continue
        # Every share whole on its pointer's node: s more sets the same, s bounded on each
        # node (first holder only) by the shares of all components there.
        s = upper - sets
        d0, d1, d2, d3 = a0, a1, a2, a3
        if pb == pa:
            d0, d1, d2, d3 = d0 + b0, d1 + b1, d2 + b2, d3 + b3
        if pc == pa:
            d0, d1, d2, d3 = d0 + g0, d1 + g1, d2 + g2, d3 + g3
        s = fit(available, pa, k1, k2, k3, d0, d1, d2, d3, s)
        if pb != pa:
            d0, d1, d2, d3 = b0, b1, b2, b3
            if pc == pb:
                d0, d1, d2, d3 = d0 + g0, d1 + g1, d2 + g2, d3 + g3
            s = fit(available, pb, k1, k2, k3, d0, d1, d2, d3, s)
        if pc != pa and pc != pb:
            s = fit(available, pc, k1, k2, k3, g0, g1, g2, g3, s)
        work += COMPONENTS
        if s > 0:
            sub(available, pa, k1, k2, k3, a0, a1, a2, a3, s)
            placement[c0, pa] += s * ra
            sub(available, pb, k1, k2, k3, b0, b1, b2, b3, s)
            placement[c1, pb] += s * rb
            sub(available, pc, k1, k2, k3, g0, g1, g2, g3, s)
            placement[c2, pc] += s * rc
            sets += s
    info[1] += work
    return sets
