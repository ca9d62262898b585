"""Karmada's first-fit for two components walking the nodes by index (Flink's jobmanager
and taskmanagers, a PyTorchJob's master and workers): the same answer, placement and
leftover as `firstfit._first_fit`, for a lower cost per set.

On sets-heavy members most sets differ from the one before (a few sets per node, the
second component spilling onto the next node while the first stays behind), so placing
runs of sets in one step saves little: the cost is in the set by hand, and that is what
this kernel makes cheap.

- Up to 4 columns, each a separate local: a component's whole share of a set (replicas x
  request, worked out once) is compared with the node under its pointer and subtracted,
  with no division and no loop over columns. Narrower members repeat their last column
  with a request of 0 (always fits, subtracts nothing).
- Where the share does not fit whole, the component walks on as `firstfit._fill` does,
  counting what fits on a node by comparisons, not division: the kernel takes only
  components of at most _FEW replicas with requests of at most _FEW_REQUEST.
- Steps of several sets, in separate functions (they are rare, and the loop stays small):
  * both on the pointers' nodes: once three sets in a row fit whole there, the sets that
    still fit there are placed at once (one division per column; both components on one
    node need their two shares together, on two nodes each its own share);
  * the first component fits whole on a node behind the second's pointer, which the
    second never walks again: the sets it still fits there are placed at once, the second
    filling their share in one walk (a master on node 0 while its workers cross the
    GPU nodes). Where such steps come out small (a jobmanager in the holes behind its
    taskmanagers) they are tried only every 2nd, 4th, ... 64th time, as in `firstfit`.
- A failed set is taken back out of `placement` from where each walk started and what it
  took there: past its pointer a component never placed anything.
"""

from __future__ import annotations

import numpy as np

from ._arith import take
from ._numba import kernel

MAX_COLUMNS = 4  # columns held as separate locals; wider members use the general kernel
# Replicas and requests this kernel takes: _FEW x a request stays in int64, and a share
# (replicas x request) is below 2**62, so two shares add up without overflow.
_FEW = 8
_FEW_REQUEST = 2**59 - 1
_RUN = 3  # sets in a row that fit whole before a step places the rest there at once
_WORTH_IT = 4  # a step of the first component behind the second worth trying again at once
_MAX_BACKOFF = 63


def pair_components(requests: np.ndarray, replicas: np.ndarray) -> tuple[int, int] | None:
    """The two components with replicas > 0, in order, if `pair_first_fit` takes the
    problem (at most MAX_COLUMNS columns, _FEW replicas, _FEW_REQUEST per request); else None."""
    counts = replicas.tolist()
    active = [c for c, r in enumerate(counts) if r > 0]
    if len(active) != 2 or not 1 <= requests.shape[1] <= MAX_COLUMNS or max(counts) > _FEW:
        return None
    if int(requests.max()) > _FEW_REQUEST:
        return None
    return active[0], active[1]


@kernel(inline="always")
def _column(requests: np.ndarray, c: int, k: int) -> int:
    """requests[c, k], 0 past the last column."""
    return requests[c, k] if k < requests.shape[1] else 0


@kernel(inline="always")
def _walk(available, masks, c, p, want, k1, k2, k3, r0, r1, r2, r3, placement):
    """Greedy walk of c from node p placing up to `want` replicas (r0..r3: its request in
    columns 0, k1, k2, k3).

    Returns (the node that completed `want`, else the node count; what is left; what it
    placed on node p).
    """
    n_nodes = available.shape[0]
    start = p
    first = 0
    while p < n_nodes:
        if masks[c, p]:
            f = 0
            while (f < want and available[p, 0] >= (f + 1) * r0 and available[p, k1] >= (f + 1) * r1
                   and available[p, k2] >= (f + 1) * r2 and available[p, k3] >= (f + 1) * r3):
                f += 1
            if f > 0:
                available[p, k3] -= f * r3
                available[p, k2] -= f * r2
                available[p, k1] -= f * r1
                available[p, 0] -= f * r0
                placement[c, p] += f
                if p == start:
                    first = f
                want -= f
                if want == 0:
                    break
        p += 1
    return p, want, first


@kernel(inline="always")
def _fill(available, requests, masks, c, p, want, placement):
    """`_walk` for any `want`, with the shared fit arithmetic (a step's walk wants many)."""
    n_nodes, n_cols = available.shape
    while p < n_nodes:
        if masks[c, p]:
            f = take(available, requests, c, p, want)
            if f > 0:
                for k in range(n_cols):
                    available[p, k] -= f * requests[c, k]
                placement[c, p] += f
                want -= f
                if want == 0:
                    break
        p += 1
    return p, want


@kernel(inline="always")
def _unplace(placement: np.ndarray, c: int, start: int, took: int, end: int) -> None:
    """Take one set's share of c (its walk began at node `start`, took `took` there and
    ended at node `end`) back out of `placement`."""
    placement[c, start] -= took
    for q in range(start + 1, min(end, placement.shape[1] - 1) + 1):
        placement[c, q] = 0


@kernel
def _stay_step(available, requests, placement, first, second, ra, rb, pa, pb, most):
    """Place the sets (at most `most`) that still fit whole on both pointers' nodes; how many."""
    n_cols = available.shape[1]
    s = most
    if pa == pb:
        for k in range(n_cols):
            d = requests[first, k] * ra + requests[second, k] * rb
            if d > 0:
                s = min(s, available[pa, k] // d)
    else:
        for k in range(n_cols):
            if requests[first, k] > 0:
                s = min(s, available[pa, k] // (requests[first, k] * ra))
            if requests[second, k] > 0:
                s = min(s, available[pb, k] // (requests[second, k] * rb))
    if s > 0:
        for k in range(n_cols):
            available[pa, k] -= s * requests[first, k] * ra
            available[pb, k] -= s * requests[second, k] * rb
        placement[first, pa] += s * ra
        placement[second, pb] += s * rb
    return s


@kernel
def _behind_step(available, requests, masks, placement, first, second, ra, rb, pa, pb, most, pointer):
    """The first component fits whole on node pa < pb, which the second never walks again:
    place the sets (at most `most`) it still fits there, the second filling their share
    from pb in one walk. Returns (sets completed, whether the last one failed);
    pointer[0] is the second's pointer after it.

    A walk that runs out of nodes completes fewer sets: the failing set's share of the
    first stays consumed on pa (as in Go), the sets after it never happen, and the second's
    replicas of the failing set are taken back out of `placement` (not `available`).
    """
    n_cols = available.shape[1]
    s = most
    for k in range(n_cols):
        if requests[first, k] > 0:
            s = min(s, available[pa, k] // (requests[first, k] * ra))
    if s <= 0:
        pointer[0] = pb
        return 0, False
    before = placement[second, pb]
    want = s * rb
    p, left = _fill(available, requests, masks, second, pb, want, placement)
    placed = want - left
    done = placed // rb
    if left == 0:
        pointer[0] = p
        failed = False
        taken = s  # sets whose first share was placed
    else:
        # The set after the `done` complete ones failed: drop its replicas of the second
        # from `placement`, walking back from the last node.
        extra = placed - done * rb
        q = min(p, available.shape[0] - 1)
        while extra > 0:
            here = placement[second, q] - (before if q == pb else 0)
            drop = min(here, extra)
            placement[second, q] -= drop
            extra -= drop
            q -= 1
        pointer[0] = p
        failed = True
        taken = done + 1
    for k in range(n_cols):
        available[pa, k] -= taken * requests[first, k] * ra
    placement[first, pa] += done * ra
    return done, failed


@kernel
def pair_first_fit(
    available: np.ndarray,
    requests: np.ndarray,
    replicas: np.ndarray,
    masks: np.ndarray,
    first: int,
    second: int,
    upper: int,
    placement: np.ndarray,
    info: np.ndarray,
) -> int:
    """`firstfit._first_fit` for the order (first, second) and walks by node index, on a
    problem `eligible` takes with at least one node: same arguments and results (rows of
    `placement` of other components stay 0). info[1] counts node visits as there: one per
    component for a set placed where the pointers stand, 2 per step of several sets plus
    its walk."""
    n_nodes, n_cols = available.shape
    last = n_cols - 1
    k1, k2, k3 = min(1, last), min(2, last), min(3, last)
    ra, rb = replicas[first], replicas[second]
    a0, a1, a2, a3 = (_column(requests, first, 0), _column(requests, first, 1), _column(requests, first, 2),
                      _column(requests, first, 3))
    b0, b1, b2, b3 = (_column(requests, second, 0), _column(requests, second, 1), _column(requests, second, 2),
                      _column(requests, second, 3))
    wa0, wa1, wa2, wa3 = ra * a0, ra * a1, ra * a2, ra * a3
    wb0, wb1, wb2, wb3 = rb * b0, rb * b1, rb * b2, rb * b3
    pointer = np.zeros(1, np.int64)
    pa = 0
    pb = 0
    run = 0
    wait = 0
    backoff = 0
    sets = 0
    stepped = 0  # sets placed by steps of several sets
    work = 0  # node visits but the one per component of each set by hand (added at the end)
    while sets < upper:
        start_a = pa
        if (masks[first, pa] and available[pa, 0] >= wa0 and available[pa, k1] >= wa1
                and available[pa, k2] >= wa2 and available[pa, k3] >= wa3):
            if pa < pb and wait == 0:
                got, failed = _behind_step(available, requests, masks, placement, first, second, ra, rb, pa, pb,
                                           upper - sets, pointer)
                work += pointer[0] - pb + 3
                pb = pointer[0]
                sets += got
                stepped += got
                if failed:
                    info[0] = second
                    info[1] += work + 2 * (sets - stepped)
                    return sets
                backoff = 0 if got >= _WORTH_IT else min(2 * backoff + 1, _MAX_BACKOFF)
                wait = backoff
                run = 0
                continue
            if pa < pb:
                wait -= 1
            available[pa, k3] -= wa3
            available[pa, k2] -= wa2
            available[pa, k1] -= wa1
            available[pa, 0] -= wa0
            placement[first, pa] += ra
            took_a = ra
            fast = True
        else:
            pa, left, took_a = _walk(available, masks, first, pa, ra, k1, k2, k3, a0, a1, a2, a3, placement)
            work += pa - start_a
            if left > 0:
                _unplace(placement, first, start_a, took_a, pa)
                info[0] = first
                info[1] += work + 2 * (sets - stepped) + 1
                return sets
            fast = False
        if (masks[second, pb] and available[pb, 0] >= wb0 and available[pb, k1] >= wb1
                and available[pb, k2] >= wb2 and available[pb, k3] >= wb3):
            available[pb, k3] -= wb3
            available[pb, k2] -= wb2
            available[pb, k1] -= wb1
            available[pb, 0] -= wb0
            placement[second, pb] += rb
        else:
            start_b = pb
            pb, left, took_b = _walk(available, masks, second, pb, rb, k1, k2, k3, b0, b1, b2, b3, placement)
            work += pb - start_b
            if left > 0:
                _unplace(placement, second, start_b, took_b, pb)
                _unplace(placement, first, start_a, took_a, pa)
                info[0] = second
                info[1] += work + 2 * (sets - stepped) + 2
                return sets
            fast = False
        sets += 1
        run = run + 1 if fast else 0
        if run >= _RUN and sets < upper:
            got = _stay_step(available, requests, placement, first, second, ra, rb, pa, pb, upper - sets)
            sets += got
            stepped += got
            work += 2
            run = 0
    info[1] += work + 2 * (sets - stepped)
    return sets
