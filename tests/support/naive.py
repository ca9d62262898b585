"""Slow, obvious reference versions of the packing kernels: the oracle the kernels must match.

Plain lists, dicts and Python integers (no overflow), one rescanning loop per rule, written
from the rules in docs/semantics.md rather than from the kernels. Never imports
estimator.kernels. Arguments may be numpy arrays or nested lists.
"""

from __future__ import annotations

INT64_MAX = 2**63 - 1


def _rows(value) -> list[list[int]]:
    return [[int(x) for x in row] for row in (value.tolist() if hasattr(value, "tolist") else value)]


def _row(value) -> list[int]:
    return [int(x) for x in (value.tolist() if hasattr(value, "tolist") else value)]


def _flags(value) -> list[list[bool]]:
    return [[bool(x) for x in row] for row in (value.tolist() if hasattr(value, "tolist") else value)]


def node_fit(free: list[int], request: list[int]) -> int:
    """How many replicas of `request` fit in `free`: min of free // request over requested columns."""
    return min(free[k] // r for k, r in enumerate(request) if r > 0)


def sum_fit(available, request, mask) -> int:
    avail, req = _rows(available), _row(request)
    flag = [bool(x) for x in (mask.tolist() if hasattr(mask, "tolist") else mask)]
    total = sum(node_fit(avail[n], req) for n in range(len(avail)) if flag[n])
    return min(total, INT64_MAX)


def first_fit(available, requests, replicas, masks, upper, order=None, node_orders=None):
    """Karmada's SchedulingSimulator, literally: every set rescans the nodes from the first.

    `order` (components in packing order) and `node_orders` (per component, the nodes it
    walks, in order) generalise it to the orders the best mode tries; by default they are
    Karmada's: components as given, all nodes by index.
    Returns (sets, placement as list of lists, available left as list of lists).
    """
    avail, reqs, reps, mask = _rows(available), _rows(requests), _row(replicas), _flags(masks)
    n_nodes = len(avail)
    order = list(range(len(reps))) if order is None else [int(c) for c in order]
    walks = [list(range(n_nodes))] * len(reps) if node_orders is None else [list(w) for w in node_orders]
    placement = [[0] * n_nodes for _ in reps]
    if all(r == 0 for r in reps):
        return upper, placement, avail
    sets = 0
    while sets < upper:
        this_set: dict[tuple[int, int], int] = {}
        complete = True
        for c in order:
            remaining = reps[c]
            for n in walks[c]:
                if remaining == 0:
                    break
                if not mask[c][n]:
                    continue
                fit = node_fit(avail[n], reqs[c])
                if fit == 0:
                    continue
                take = min(fit, remaining)
                avail[n] = [max(free - take * r, 0) for free, r in zip(avail[n], reqs[c])]
                this_set[(c, n)] = this_set.get((c, n), 0) + take
                remaining -= take
            if remaining > 0:
                complete = False
                break
        if not complete:
            break
        for (c, n), take in this_set.items():
            placement[c][n] += take
        sets += 1
    return sets, placement, avail


def verify(available, requests, replicas, masks, sets, placement) -> bool:
    avail, reqs, reps, mask = _rows(available), _rows(requests), _row(replicas), _flags(masks)
    place = _rows(placement)
    if len(place) != len(reps) or any(len(row) != len(avail) for row in place) or sets < 0:
        return False
    for c, row in enumerate(place):
        if any(x < 0 or (x > 0 and not mask[c][n]) for n, x in enumerate(row)):
            return False
        if sum(row) != sets * reps[c]:
            return False
    for n, free in enumerate(avail):
        for k, amount in enumerate(free):
            if sum(place[c][n] * reqs[c][k] for c in range(len(reps))) > amount:
                return False
    return True


def _placement_for(avail, reqs, reps, mask, k):
    """Some aggregated placement of k sets (component c gets k*reps[c] replicas), or None.

    Depth-first over (component, node, how many here), biggest first; prunes when what the
    remaining nodes can still hold is less than what is left to place, and remembers failed
    states.
    """
    comps = [c for c, r in enumerate(reps) if r > 0]
    n_nodes = len(avail)
    failed: set = set()
    place = [[0] * n_nodes for _ in reps]

    def search(ci: int, n: int, need: int, state: tuple) -> bool:
        if need == 0:
            if ci + 1 == len(comps):
                return True
            return search(ci + 1, 0, k * reps[comps[ci + 1]], state)
        key = (ci, n, need, state)
        if n == n_nodes or key in failed:
            return False
        c = comps[ci]
        room = sum(node_fit(list(state[m]), reqs[c]) for m in range(n, n_nodes) if mask[c][m])
        # Every column must still hold what is left to place, this component's and the later ones'.
        enough = all(
            need * reqs[c][col] + sum(k * reps[d] * reqs[d][col] for d in comps[ci + 1 :])
            <= sum(row[col] for row in state)
            for col in range(len(reqs[c]))
        )
        if room >= need and enough:
            fit = node_fit(list(state[n]), reqs[c]) if mask[c][n] else 0
            for take in range(min(fit, need), -1, -1):
                row = tuple(free - take * r for free, r in zip(state[n], reqs[c]))
                if search(ci, n + 1, need - take, state[:n] + (row,) + state[n + 1 :]):
                    place[c][n] = take
                    return True
        failed.add(key)
        return False

    if not comps:
        return place
    start = tuple(tuple(row) for row in avail)
    return place if search(0, 0, k * reps[comps[0]], start) else None


def exhaustive(available, requests, replicas, masks, upper):
    """The true maximum number of sets (<= upper) and a witness; for tiny clusters only."""
    avail, reqs, reps, mask = _rows(available), _rows(requests), _row(replicas), _flags(masks)
    if all(r == 0 for r in reps):
        return upper, [[0] * len(avail) for _ in reps]
    hi = upper
    for c, r in enumerate(reps):
        if r > 0:
            room = sum(node_fit(avail[n], reqs[c]) for n in range(len(avail)) if mask[c][n])
            hi = min(hi, room // r)
    # Feasibility is monotone (drop a set from k and k - 1 fit), so climb from 1: finding a
    # placement is usually quick, and only the first k that fails needs a full proof.
    best = 0, [[0] * len(avail) for _ in reps]
    for k in range(1, hi + 1):
        place = _placement_for(avail, reqs, reps, mask, k)
        if place is None:
            break
        best = k, place
    return best
