"""Best mode: as many complete sets as we can show a placement for, never below first-fit.

Steps, cheapest first; every candidate placement is checked by `witness._verify` before
it counts, so the answer is always backed by a witness:

1. Karmada's first-fit on a copy: the baseline, and the answer when it already reaches
   the upper bound of step 2 (then it is proven optimal).
2. An upper bound U (fit._set_bound): per component, floor(sum of its per-node fits /
   replicas); per resource, what the nodes can give the set jointly / what a set needs;
   and `upper`.
3. Candidate orders. Component orders: as given; most constrained first (fewest sets the
   component could reach alone, sum of fits / replicas). Node orders per component, over
   the nodes where it fits at least one replica: Karmada's (by index); nodes that no
   later component can use first ("exclusive first", so a cheap component does not take
   the slots a scarce one needs); ascending fit (best-fit: small holes first, big nodes
   kept for later); exclusive first then ascending fit.
4. For each candidate order, set-by-set first-fit with that order (one pass, gives a
   count directly).
5. If still below U: search k in (best, U] — U first, then bisection, a bounded number of
   probes — packing exactly k sets in bulk: each component in turn places all of its
   k × replicas over its node order, greedily. Sets are interchangeable, so any aggregated
   placement with those totals is a valid witness.

All packing runs on copies; `available` is never written.
"""

from __future__ import annotations

import numpy as np

from ._arrays import Packing, problem, readonly
from ._numba import kernel
from .firstfit import karmada_first_fit, pack
from .fit import _fit_table, _set_bound
from .witness import _verify

INT64_MAX = np.iinfo(np.int64).max

# Node orders (see the module docstring).
BY_INDEX = 0
LEAST_CONTENDED = 1
BEST_FIT = 2
LEAST_CONTENDED_BEST_FIT = 3

# Fits above this share the last bucket of the counting sort (order is a heuristic only).
_FIT_BUCKETS = 1024
_MAX_PROBES = 12


@kernel
def _node_orders(
    fits: np.ndarray, replicas: np.ndarray, order: np.ndarray, kind: int, node_order: np.ndarray, lengths: np.ndarray
) -> None:
    """node_order[c, :lengths[c]]: the nodes where c fits a replica, arranged by `kind`.

    A stable counting sort on key = contention * buckets + fit bucket, where contention is
    how many later components fit on the node (with the CONTENDED kinds) and the fit
    bucket is min(fit, buckets - 1) (with the BEST_FIT kinds).
    """
    n_comp = order.shape[0]
    n_nodes = fits.shape[1]
    by_contention = kind == LEAST_CONTENDED or kind == LEAST_CONTENDED_BEST_FIT
    by_fit = kind == BEST_FIT or kind == LEAST_CONTENDED_BEST_FIT
    contention = np.zeros(n_nodes, np.int64)  # components after the current one that fit there
    keys = np.empty(n_nodes, np.int64)
    starts = np.empty((n_comp + 1) * _FIT_BUCKETS + 1, np.int64)
    for i in range(n_comp - 1, -1, -1):
        c = order[i]
        starts[:] = 0
        length = 0
        for n in range(n_nodes):
            f = fits[c, n]
            key = -1
            if f > 0:
                key = 0
                if by_contention:
                    key = contention[n] * _FIT_BUCKETS
                if by_fit:
                    key += min(f, _FIT_BUCKETS - 1)
                starts[key + 1] += 1
                length += 1
            keys[n] = key
        lengths[c] = length
        for b in range(1, starts.shape[0]):
            starts[b] += starts[b - 1]
        for n in range(n_nodes):
            key = keys[n]
            if key >= 0:
                node_order[c, starts[key]] = n
                starts[key] += 1
        if replicas[c] > 0:
            for n in range(n_nodes):
                if fits[c, n] > 0:
                    contention[n] += 1


class _Search:
    """Candidate packings for one best_sets call; keeps the best verified one."""

    def __init__(self, available, requests, replicas, masks, fits, bound, baseline: Packing):
        self.available, self.requests, self.replicas, self.masks = available, requests, replicas, masks
        self.fits, self.bound, self.best = fits, bound, baseline
        n_comp = replicas.shape[0]
        given = np.arange(n_comp, dtype=np.int64)
        # Fewest sets reachable alone first; float only ranks, capacity stays integer.
        alone = fits.sum(axis=1, dtype=np.float64) / np.maximum(replicas, 1)
        scarce = np.argsort(alone, kind="stable").astype(np.int64)
        self.candidates = [
            (scarce, LEAST_CONTENDED_BEST_FIT),
            (given, LEAST_CONTENDED),
            (scarce, BEST_FIT),
            (given, BEST_FIT),
        ]
        self._orders: dict = {}

    def _node_order(self, order, kind):
        key = (order.tobytes(), kind)
        if key not in self._orders:
            node_order = np.empty(self.fits.shape, dtype=np.int64)
            lengths = np.empty(self.fits.shape[0], dtype=np.int64)
            _node_orders(self.fits, self.replicas, readonly(order), kind, node_order, lengths)
            self._orders[key] = (node_order, lengths)
        return self._orders[key]

    def _offer(self, sets, placement) -> bool:
        if sets > self.best.sets and _verify(
            self.available, self.requests, self.replicas, self.masks, sets, readonly(placement)
        ):
            self.best = Packing(int(sets), placement)
            return True
        return False

    def _exactly(self, k: int) -> bool:
        """Try to place k sets in bulk with each candidate order."""
        if k > INT64_MAX // max(int(self.replicas.max()), 1):
            return False
        scaled = self.replicas * k
        for order, kind in self.candidates:
            node_order, lengths = self._node_order(order, kind)
            got = pack(self.available.copy(), self.requests, scaled, self.masks, order, node_order, lengths, 1)
            if got.sets == 1 and self._offer(k, got.placement):
                return True
        return False

    def run(self) -> Packing:
        for order, kind in self.candidates:
            node_order, lengths = self._node_order(order, kind)
            got = pack(self.available.copy(), self.requests, self.replicas, self.masks, order, node_order, lengths, self.bound)
            self._offer(got.sets, got.placement)
            if self.best.sets >= self.bound:
                return self.best
        low, high = self.best.sets, self.bound  # low has a witness; nothing above high can
        if self._exactly(high):  # the bound is often tight: try it first
            return self.best
        high -= 1
        for _ in range(_MAX_PROBES - 1):
            if low >= high:
                break
            mid = (low + high + 1) // 2
            if self._exactly(mid):
                low = mid
            else:
                high = mid - 1
        return self.best


def best_sets(available, requests, replicas, masks, upper) -> Packing:
    """The most complete sets we can show a placement for: >= first_fit_sets, <= upper.

    Does not modify `available`. The returned placement passes `verify_placement`.
    """
    p = problem(available, requests, replicas, masks, upper, in_place=False)
    baseline = karmada_first_fit(p.available.copy(), p.requests, p.replicas, p.masks, p.upper)
    if baseline.sets >= p.upper:
        return baseline
    fits = np.empty(p.masks.shape, dtype=np.int64)
    _fit_table(p.available, p.requests, p.masks, fits)
    fits = readonly(fits)
    bound = int(_set_bound(p.available, p.requests, p.replicas, fits, p.upper))
    if baseline.sets >= bound:
        return baseline
    return _Search(p.available, p.requests, p.replicas, p.masks, fits, bound, baseline).run()
