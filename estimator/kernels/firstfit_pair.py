"""Karmada's first-fit for two components walking the nodes by index (Flink's jobmanager
and taskmanagers, a PyTorchJob's master and workers): the same answer, placement and
leftover as `firstfit._first_fit`, in steps per node rather than per set.

First-fit places one replica at a time, in the order A^ra B^rb A^ra B^rb ... (A, B: the
two components, ra, rb: their replicas), each on the first node, by index, that its
component may use and that still fits one. Nodes only lose resources, so the first such
node of a component never moves back: each component has a pointer (pa, pb), and every
node before it fits none of that component for the rest of the estimate. A replica only
changes the node it lands on, so the two components meet only on one node:

- pa == pb == p: the next s sets land whole on p while p holds s copies of both shares,
  s = min over columns of available // (A's share + B's share): one step. If the set
  after them still has A's share whole on p, B takes what fits on p of its share (less
  than all of it) and goes on from p + 1, never to come back; the t - 1 A's shares p
  still holds after that are sets with B's replicas streaming on from p + 1: those t
  sets are a second step. Then A fits none on p and both pointers usually meet on the
  next node: this loop, node by node, is where a sets-heavy member spends its time.
- pa < pb: B never goes back to pa, A stays on pa while it fits A's share whole:
  s = available[pa] // A's share sets have A on pa and B filling s x rb replicas greedily
  from pb on (a stream that may straddle nodes), apart from each other: one step and
  one walk. If B runs out of nodes part-way, the set it failed in leaves A's share on pa
  and B's partial replicas consumed, as Go does.
- pa > pb: the same with the roles swapped, except that B's fill must stop before pa
  (A's node): where it reaches pa the replicas of the set it did not complete are given
  back and only the sets it completed are placed.
- A node that fits none of A between pa and pb is skipped (no set changes it).
- Otherwise (after a step, the next set does not land as the step assumed) one set is
  placed by hand: A's walk, then B's, each taking min(left, fit) per node.

Every step either ends with a pointer's node no longer fitting the share that made the
step (so the next set by hand moves a pointer) or places all the sets asked for, so the
steps and sets by hand are O(nodes), whatever the number of sets, and every walk starts
at a pointer (the fill that stops before A's node walks its nodes at most twice): Flink
at 10k nodes, about 2.5 sets per node, takes about two steps per node.

Compiled without numba's reference counting (`_nrt=False`: the kernel allocates nothing):
with it, every inlined helper taking an array inside a loop paid an atomic increment and
decrement per call, which cost more than the steps themselves.

Up to 4 columns, each a separate local; narrower members repeat their last column with a
request of 0 (always fits, subtracts nothing). The node helpers on such locals and the
greedy walk are `_nodefit`'s, shared with `firstfit_trio`; the steps on a node's columns
held in locals (`_fit_in_locals`, `_store`) and the fill's give-back (`_drop`) are this kernel's own.
The steps divide each node's columns by the same few amounts (a whole set, a share of the
first component, a request of the second): those divisors become multipliers once per call
(`_arith.magic`), a multiply and a shift instead of a division (Flink at 10k nodes: 0.18 ms
instead of 0.20).
A failed set is taken back out of `placement` from where each walk started and what it
took there: past its pointer a component never placed anything.
"""

from __future__ import annotations

import numpy as np

from ._arith import divide, magic
from ._nodefit import MAX_COLUMNS, column, fit, holds, multiplies, sub, unplace, walk
from ._numba import kernel

# Replicas and requests this kernel takes: a share (replicas x request) is below 2**62, so
# two shares add up without overflow.
_FEW = 8
_FEW_REQUEST = 2**59 - 1


def pair_components(requests: np.ndarray, replicas: np.ndarray | list[int]) -> tuple[int, int] | None:
    """The two components with replicas > 0, in order, if `pair_first_fit` takes the
    problem (at most MAX_COLUMNS columns, _FEW replicas, _FEW_REQUEST per request); else None.
    `replicas` may be given as a list (the dispatch has one): Python on these tiny arrays
    costs less than numpy's reductions."""
    counts = replicas if isinstance(replicas, list) else replicas.tolist()
    active = [c for c, r in enumerate(counts) if r > 0]
    if len(active) != 2 or not 1 <= requests.shape[1] <= MAX_COLUMNS or max(counts) > _FEW:
        return None
    if max(max(row) for row in requests.tolist()) > _FEW_REQUEST:
        return None
    return active[0], active[1]


@kernel(inline="always", _nrt=False)
def _magics(r0: int, r1: int, r2: int, r3: int) -> tuple[np.uint64, ...]:
    """`magic` of each of r0..r3 (the kernel's fixed divisors: a share, a request)."""
    m0, s0 = magic(r0)
    m1, s1 = magic(r1)
    m2, s2 = magic(r2)
    m3, s3 = magic(r3)
    return m0, s0, m1, s1, m2, s2, m3, s3


@kernel(inline="always", _nrt=False)
def _fit_in_locals(
    x0: int,
    x1: int,
    x2: int,
    x3: int,
    r0: int,
    r1: int,
    r2: int,
    r3: int,
    magics: tuple[np.uint64, ...],
    cap: int,
) -> int:
    """`fit` on a node's columns held in locals, dividing by multiplication: magics =
    `_magics(r0, r1, r2, r3)`."""
    m0, s0, m1, s1, m2, s2, m3, s3 = magics
    f = cap
    if r0 > 0:
        f = min(f, divide(x0, r0, m0, s0))
    if r1 > 0:
        f = min(f, divide(x1, r1, m1, s1))
    if r2 > 0:
        f = min(f, divide(x2, r2, m2, s2))
    if r3 > 0:
        f = min(f, divide(x3, r3, m3, s3))
    return f


@kernel(inline="always", _nrt=False)
def _store(available: np.ndarray, p: int, k1: int, k2: int, k3: int, x0: int, x1: int, x2: int, x3: int) -> None:
    """Write a node's columns back (the last first: k1..k3 may repeat the last column,
    whose repeats hold its value as read, a request of 0 never changing them)."""
    available[p, k3] = x3
    available[p, k2] = x2
    available[p, k1] = x1
    available[p, 0] = x0


@kernel(inline="always", _nrt=False)
def _drop(
    available: np.ndarray,
    placement: np.ndarray,
    c: int,
    start: int,
    end: int,
    extra: int,
    k1: int,
    k2: int,
    k3: int,
    r0: int,
    r1: int,
    r2: int,
    r3: int,
    give_back: bool,
) -> int:
    """Take the last `extra` replicas of a fill of c (from node `start` to node `end`; at
    most what it placed, so the walk back never reaches what was there before it) back out
    of `placement`, and out of `available` too if `give_back`. Returns the last node that
    still holds one of the fill's replicas (`start` if none)."""
    q = end
    while extra > 0:
        drop = min(placement[c, q], extra)
        if drop > 0:
            placement[c, q] -= drop
            if give_back:
                sub(available, q, k1, k2, k3, r0, r1, r2, r3, -drop)
            extra -= drop
        if extra > 0:
            q -= 1
    while q > start and placement[c, q] == 0:
        q -= 1
    return q


@kernel(_nrt=False)
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
    problem `pair_components` takes with at least one node: same arguments and results
    (rows of `placement` of other components stay 0). info[1] counts node visits: every
    node a walk or a skip looks at, and one per component for each step or set by hand.

    Longer than 100 lines on purpose (issue 30 allows this one): its state is ~30 integer
    locals (columns, shares, pointers) the compiler keeps in registers. A trial split of its
    three set-at-a-time branches into `inline="always"` kernels (locals passed as tuples;
    numba's inliner refuses that many plain arguments) left it at 125 lines and made the
    flink job (2 x 6 replicas) on the 10k-node benchmark member slower, same run, medians of
    60 calls: 200 -> 212-217 us (+6-9%); the other two-component shapes unchanged."""
    n_nodes, n_cols = available.shape
    last = n_cols - 1
    k1, k2, k3 = min(1, last), min(2, last), min(3, last)
    ra, rb = replicas[first], replicas[second]
    a0, a1, a2, a3 = (
        column(requests, first, 0),
        column(requests, first, 1),
        column(requests, first, 2),
        column(requests, first, 3),
    )
    b0, b1, b2, b3 = (
        column(requests, second, 0),
        column(requests, second, 1),
        column(requests, second, 2),
        column(requests, second, 3),
    )
    wa0, wa1, wa2, wa3 = ra * a0, ra * a1, ra * a2, ra * a3  # A's share of one set
    wb0, wb1, wb2, wb3 = rb * b0, rb * b1, rb * b2, rb * b3
    d0, d1, d2, d3 = wa0 + wb0, wa1 + wb1, wa2 + wb2, wa3 + wb3  # one whole set on one node
    few_a, few_b = multiplies(a0, a1, a2, a3), multiplies(b0, b1, b2, b3)  # `walk`'s bounds
    # The node-by-node steps divide by these on every node: multipliers, found once.
    by_set, by_b, by_share_a = _magics(d0, d1, d2, d3), _magics(b0, b1, b2, b3), _magics(wa0, wa1, wa2, wa3)
    pa = 0
    pb = 0
    sets = 0
    work = 0
    while sets < upper:
        if pa == pb:
            # Node by node while both pointers stay together (a sets-heavy member's usual
            # state): the sets that land whole on p, then the set where B spills on.
            by_hand = True
            carried = False  # node p's columns are already in x0..x3 (B's spill just left them)
            x0 = x1 = x2 = x3 = 0
            while pa < n_nodes and masks[first, pa] and masks[second, pa]:
                p = pa
                # Node p's columns in locals: stores to `placement` would otherwise make
                # the compiler reload them between every step.
                if not carried:
                    x0, x1, x2, x3 = available[p, 0], available[p, k1], available[p, k2], available[p, k3]
                s = _fit_in_locals(x0, x1, x2, x3, d0, d1, d2, d3, by_set, upper - sets)
                x0, x1, x2, x3 = x0 - s * d0, x1 - s * d1, x2 - s * d2, x3 - s * d3
                placement[first, p] += s * ra
                placement[second, p] += s * rb
                sets += s
                work += 2
                if sets >= upper:
                    _store(available, p, k1, k2, k3, x0, x1, x2, x3)
                    by_hand = False
                    break
                if not (p + 1 < n_nodes and x0 >= wa0 and x1 >= wa1 and x2 >= wa2 and x3 >= wa3):
                    _store(available, p, k1, k2, k3, x0, x1, x2, x3)
                    break
                # The next set's share of A still lands on p but B's does not whole: B
                # takes what fits on p (its last replicas there) and goes on from p + 1;
                # then A's shares that still fit on p are sets with B's replicas from
                # p + 1 on. Both in one step, t sets in all.
                x0, x1, x2, x3 = x0 - wa0, x1 - wa1, x2 - wa2, x3 - wa3
                fb = _fit_in_locals(x0, x1, x2, x3, b0, b1, b2, b3, by_b, rb - 1)
                x0, x1, x2, x3 = x0 - fb * b0, x1 - fb * b1, x2 - fb * b2, x3 - fb * b3
                placement[second, p] += fb
                t1 = _fit_in_locals(x0, x1, x2, x3, wa0, wa1, wa2, wa3, by_share_a, upper - sets - 1)
                x0, x1, x2, x3 = x0 - t1 * wa0, x1 - t1 * wa1, x2 - t1 * wa2, x3 - t1 * wa3
                _store(available, p, k1, k2, k3, x0, x1, x2, x3)
                t = 1 + t1
                want = t * rb - fb
                q = p + 1
                y0, y1, y2, y3 = available[q, 0], available[q, k1], available[q, k2], available[q, k3]
                carried = False
                if (
                    want <= few_b
                    and masks[second, q]
                    and y0 >= want * b0
                    and y1 >= want * b1
                    and y2 >= want * b2
                    and y3 >= want * b3
                ):
                    # All of it on p + 1, whose columns the next step starts from.
                    x0, x1, x2, x3 = y0 - want * b0, y1 - want * b1, y2 - want * b2, y3 - want * b3
                    _store(available, q, k1, k2, k3, x0, x1, x2, x3)
                    carried = True
                    placement[second, q] += want
                    left = 0
                else:
                    q, left, _ = walk(available, masks, second, q, want, k1, k2, k3, b0, b1, b2, b3, few_b, placement)
                work += q - p + 2
                if left > 0:
                    placed = fb + want - left
                    done = placed // rb
                    _drop(
                        available,
                        placement,
                        second,
                        p,
                        n_nodes - 1,
                        placed - done * rb,
                        k1,
                        k2,
                        k3,
                        b0,
                        b1,
                        b2,
                        b3,
                        False,
                    )
                    # Sets after the failing one never happen: their shares of A go back.
                    sub(available, p, k1, k2, k3, wa0, wa1, wa2, wa3, done + 1 - t)
                    placement[first, p] += done * ra
                    info[0] = second
                    info[1] += work
                    return sets + done
                placement[first, p] += t * ra
                pb = q
                sets += t
                by_hand = False
                if sets >= upper or q != p + 1 or holds(available, p, k1, k2, k3, a0, a1, a2, a3):
                    break  # A stays behind B (or done): the general steps
                pa = q  # A fits none on p: both pointers on q
            if not by_hand:
                continue
        elif pa < pb:
            while pa < pb and not (masks[first, pa] and holds(available, pa, k1, k2, k3, a0, a1, a2, a3)):
                pa += 1  # fits no replica of A: no set ever places one there
                work += 1
            if pa == pb:
                continue
            s = fit(available, pa, k1, k2, k3, wa0, wa1, wa2, wa3, upper - sets)
            if s > 0:
                # A's share of s sets on pa, B's replicas for them filled from pb on.
                want = s * rb
                p, left, _ = walk(available, masks, second, pb, want, k1, k2, k3, b0, b1, b2, b3, few_b, placement)
                work += p - pb + 2
                if left == 0:
                    pb = p
                    sub(available, pa, k1, k2, k3, wa0, wa1, wa2, wa3, s)
                    placement[first, pa] += s * ra
                    sets += s
                    continue
                # B ran out of nodes in set `done`: that set's share of A stays consumed
                # on pa, its replicas of B in `available` but not in `placement`.
                placed = want - left
                done = placed // rb
                _drop(
                    available, placement, second, pb, n_nodes - 1, placed - done * rb, k1, k2, k3, b0, b1, b2, b3, False
                )
                sub(available, pa, k1, k2, k3, wa0, wa1, wa2, wa3, done + 1)
                placement[first, pa] += done * ra
                info[0] = second
                info[1] += work
                return sets + done
        elif pa < n_nodes and masks[first, pa]:  # (pa < n_nodes always: A's walk fails at the end)
            s = fit(available, pa, k1, k2, k3, wa0, wa1, wa2, wa3, upper - sets)
            if s > 0:
                # A's share of s sets on pa; B's filled from pb, but only on nodes before
                # pa: replicas of a set it cannot complete there are given back.
                want = s * rb
                p = pb
                left = want
                while p < pa:
                    if masks[second, p]:
                        f = fit(available, p, k1, k2, k3, b0, b1, b2, b3, left)
                        if f > 0:
                            sub(available, p, k1, k2, k3, b0, b1, b2, b3, f)
                            placement[second, p] += f
                            left -= f
                            if left == 0:
                                break
                    p += 1
                work += p - pb + 2
                if left > 0:
                    done = (want - left) // rb
                    p = _drop(
                        available,
                        placement,
                        second,
                        pb,
                        min(p, pa - 1),
                        want - left - done * rb,
                        k1,
                        k2,
                        k3,
                        b0,
                        b1,
                        b2,
                        b3,
                        True,
                    )
                    s = done
                pb = p
                if s > 0:
                    sub(available, pa, k1, k2, k3, wa0, wa1, wa2, wa3, s)
                    placement[first, pa] += s * ra
                    sets += s
                    continue
        # One set by hand: A's walk, then B's.
        start_a = pa
        if pa < n_nodes and masks[first, pa] and holds(available, pa, k1, k2, k3, wa0, wa1, wa2, wa3):
            sub(available, pa, k1, k2, k3, wa0, wa1, wa2, wa3, 1)
            placement[first, pa] += ra
            took_a = ra
        else:
            pa, left, took_a = walk(available, masks, first, pa, ra, k1, k2, k3, a0, a1, a2, a3, few_a, placement)
            work += pa - start_a
            if left > 0:
                unplace(placement, first, start_a, took_a, pa)
                info[0] = first
                info[1] += work + 1
                return sets
        start_b = pb
        if pb < n_nodes and masks[second, pb] and holds(available, pb, k1, k2, k3, wb0, wb1, wb2, wb3):
            sub(available, pb, k1, k2, k3, wb0, wb1, wb2, wb3, 1)
            placement[second, pb] += rb
        else:
            pb, left, took_b = walk(available, masks, second, pb, rb, k1, k2, k3, b0, b1, b2, b3, few_b, placement)
            work += pb - start_b
            if left > 0:
                unplace(placement, second, start_b, took_b, pb)
                unplace(placement, first, start_a, took_a, pa)
                info[0] = second
                info[1] += work + 2
                return sets
        work += 2
        sets += 1
    info[1] += work
    return sets
