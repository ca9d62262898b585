"""The exact optimum of members too large for tests/support/naive.exhaustive (20-200 nodes).

    optimum(available, requests, replicas, masks, upper, lower=0) -> int

Plain Python, written from the rules in docs/semantics.md, sharing no code with
estimator.kernels (as tests/support/naive.py; tests/bench/test_optimum.py holds it equal to
naive.exhaustive on small members). Per node, the *mixes* a node can hold: every vector x
(replicas of each component on that node, where its mask allows) whose summed requests fit
the node in every column, keeping only the maximal ones. Then:

1. an upper bound from those mixes: for every subset S of the components, the most
   replicas of S any mix puts on a node, summed over nodes, // the replicas of S a set
   needs; for every column, the most of it any mix uses on a node, summed, // a set's
   demand. Each drops constraints of the packing, so none is below the optimum;
2. k sets are feasible iff some choice of one mix per node places k x replicas[c] of every
   component: a walk over the nodes keeping the Pareto frontier of what is placed so far
   (capped at the target; more placed never hurts), pruned where the remaining nodes
   cannot hold what is missing (the same subset and column sums over the suffix).

The optimum is found by climbing from `lower` (a certified lower bound: a placement
`naive.verify` accepted) while k + 1 is feasible, up to the bound. Exact, exponential in
the number of components only through the frontier: fine for the few components of a job.
"""

from __future__ import annotations

import itertools

import numpy as np


def _rows(value) -> list[list[int]]:
    return [[int(x) for x in row] for row in (value.tolist() if hasattr(value, "tolist") else value)]


def _fit(free: list[int], request: list[int]) -> int:
    return min(free[k] // r for k, r in enumerate(request) if r > 0)


def _mixes(free: list[int], requests: list[list[int]], allowed: list[bool], caps: list[int]) -> list[tuple]:
    """The maximal vectors of replicas (one count per component) that fit together in `free`."""
    out: list[tuple] = []

    def walk(i: int, left: list[int], mix: list[int]) -> None:
        if i == len(requests):
            out.append(tuple(mix))
            return
        most = min(_fit(left, requests[i]) if allowed[i] else 0, caps[i])
        for take in range(most, -1, -1):
            walk(i + 1, [f - take * r for f, r in zip(left, requests[i])], mix + [take])

    walk(0, free, [])
    return sorted(_maximal(out), key=sum, reverse=True)


def _maximal(points) -> set:
    """The points no other point dominates (>= in every coordinate)."""
    points = set(points)
    if len(points) <= 1:
        return points
    arr = np.array(sorted(points, key=sum, reverse=True), dtype=np.int64)
    keep = np.ones(len(arr), dtype=bool)
    block = 512
    for start in range(0, len(arr), block):
        chunk = arr[start:start + block]
        others = arr[: start + len(chunk)][keep[: start + len(chunk)]]
        dominates = (others[None, :, :] >= chunk[:, None, :]).all(axis=2)
        same = (others[None, :, :] == chunk[:, None, :]).all(axis=2)
        keep[start:start + len(chunk)] &= ~(dominates & ~same).any(axis=1)
    return set(map(tuple, arr[keep].tolist()))


class _Member:
    def __init__(self, available, requests, replicas, masks, caps: list[int]):
        avail, reqs, mask = _rows(available), _rows(requests), _rows(masks)
        reps = [int(x) for x in (replicas.tolist() if hasattr(replicas, "tolist") else replicas)]
        self.comps = [c for c, r in enumerate(reps) if r > 0]
        self.reps = [reps[c] for c in self.comps]
        self.reqs = [reqs[c] for c in self.comps]
        self.columns = len(avail[0]) if avail else 0
        self.mixes = [_mixes(row, self.reqs, [bool(mask[c][n]) for c in self.comps], caps)
                      for n, row in enumerate(avail)]
        self.mixes = [m for m in self.mixes if any(m)]  # nodes that hold nothing drop out
        count = len(self.comps)
        self.subsets = [s for size in range(1, count + 1) for s in itertools.combinations(range(count), size)]
        # Per node: most replicas of each subset together, most of each column used.
        self.caps = [[max(sum(mix[j] for j in s) for mix in mixes) for s in self.subsets]
                     + [max(sum(mix[j] * self.reqs[j][k] for j in range(count)) for mix in mixes)
                        for k in range(self.columns)] for mixes in self.mixes]

    def bound(self, upper: int) -> int:
        best = upper
        totals = [sum(caps[i] for caps in self.caps) for i in range(len(self.subsets) + self.columns)]
        for i, s in enumerate(self.subsets):
            best = min(best, totals[i] // sum(self.reps[j] for j in s))
        for k in range(self.columns):
            demand = sum(r * req[k] for r, req in zip(self.reps, self.reqs))
            if demand:
                best = min(best, totals[len(self.subsets) + k] // demand)
        return best

    def feasible(self, k: int) -> bool:
        target = tuple(k * r for r in self.reps)
        count = len(target)
        width = len(self.subsets) + self.columns
        suffix = [[0] * width for _ in range(len(self.mixes) + 1)]
        for n in range(len(self.mixes) - 1, -1, -1):
            suffix[n] = [a + b for a, b in zip(suffix[n + 1], self.caps[n])]

        def can_finish(placed: tuple, n: int) -> bool:
            need = [t - p for t, p in zip(target, placed)]
            rest = suffix[n]
            for i, s in enumerate(self.subsets):
                if sum(need[j] for j in s) > rest[i]:
                    return False
            for kk in range(self.columns):
                if sum(need[j] * self.reqs[j][kk] for j in range(count)) > rest[len(self.subsets) + kk]:
                    return False
            return True

        start = tuple(0 for _ in target)
        if start == target:
            return True
        if not can_finish(start, 0):
            return False
        frontier = {start}
        for n, mixes in enumerate(self.mixes):
            grown = set()
            for placed in frontier:
                for mix in mixes:
                    after = tuple(min(p + x, t) for p, x, t in zip(placed, mix, target))
                    if after == target:
                        return True
                    if after not in grown and can_finish(after, n + 1):
                        grown.add(after)
            frontier = _maximal(grown)
            if not frontier:
                return False
        return False


def optimum(available, requests, replicas, masks, upper: int, lower: int = 0) -> int:
    """The most complete sets (<= upper) any placement reaches; `lower` must be feasible."""
    reps = [int(x) for x in (replicas.tolist() if hasattr(replicas, "tolist") else replicas)]
    if not any(reps):
        return upper
    room = upper
    avail, reqs, mask = _rows(available), _rows(requests), _rows(masks)
    for c, r in enumerate(reps):
        if r > 0:
            room = min(room, sum(_fit(avail[n], reqs[c]) for n in range(len(avail)) if mask[c][n]) // r)
    caps = [room * r for r in reps if r > 0]
    member = _Member(available, requests, replicas, masks, caps)
    high = member.bound(room)
    k = min(lower, high)
    while k < high and member.feasible(k + 1):
        k += 1
    return k
