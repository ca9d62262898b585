"""Best mode: as many complete sets as we can show a placement for, never below first-fit.

Steps, cheapest first. Every candidate placement is checked by `witness._verify` before
it counts, so every answer comes with a witness, and none is above a proven bound.

1. Karmada's first-fit on a copy: the baseline.
2. An upper bound U, cheapest first: the component that stopped first-fit, alone (sum of
   its fits / replicas); then fit._bounds, one pass over the nodes: per component, sum of its fits
   / replicas; per column, sum over nodes of min(available, sum of fit x request) / what
   a set needs; replica slots per node / replicas per set). The baseline is proven
   optimal as soon as it reaches U (or `upper`): most requests end here.
3. Candidate orders, built once per call by counting sorts over the nodes where each
   component fits a replica:
   - component orders: as given; reversed; most constrained first (fewest sets it could
     reach alone, sum of fits / replicas); fewest usable nodes first;
   - node orders: least contended first (nodes fewer of the components placed after this
     one can use), then largest fit first (keeps a component on few nodes and leaves
     whole nodes to the others); or smallest fit first (best-fit).
4. Set-by-set first-fit, components as given, nodes least contended then largest fit: one
   pass that gives a count directly (the best lower bound on large, irregular clusters).
5. Packing exactly k sets in bulk: each component in turn places all of its k x replicas
   greedily over its node order (the first-fit kernel with replicas scaled by k and one
   set). Sets are interchangeable, so any aggregated placement with those totals is a
   witness for k sets. First k = U with up to three candidates (the bounds are usually
   tight), then a few bisection probes between the best witness and U with the first.
6. Small problems (up to 32 nodes and 4 components), instead of the bisection: every
   component order with both node orders, set by set and for each k from U down.

Quality against the exhaustive optimum on small members from five generators, and where
best beats first-fit on larger members: `python -m benchmarks.quality` (RESULTS.md,
"Packing quality"). With no budget limit best mode is the optimum on >= 99.5% of them.

Work budget, counted in steps, not time, so the same request always gets the same answer
(whatever the machine's load): work is node visits (`Packing.work`: every node a walk
looks at; copying the arrays for a pass, building a candidate's node orders or verifying a
witness counts _CELL_COST x components x nodes; each step also counts _STEP_OVERHEAD for
its fixed cost). Steps 4-6 may do
`budget` x first-fit's own work in this call (at least _MIN_SEARCH_WORK, so a tiny problem
can still afford its exhaustive tries); a step is started only when its predicted work
still fits: a bulk pass is bounded in advance (one walk per component, then a witness
check), a set-by-set pass is predicted by the most a set-by-set pass took so far (at
first: twice first-fit's work). The answer is first-fit's until a step improves it, so a
budget only ever trades quality for time, never correctness.

All packing runs on copies; `available` is never written.
"""

from __future__ import annotations

import itertools

import numpy as np

from ._arrays import Packing, problem, readonly
from ._arith import INT64_MAX
from ._numba import kernel
from .firstfit import karmada_first_fit, pack
from .fit import bounds, component_bound, node_fits
from .witness import _verify


# Node orders (see the module docstring).
LEAST_CONTENDED_WORST_FIT = 0
BEST_FIT = 1
# Component orders.
GIVEN, REVERSED, SCARCE, FEWEST_NODES = "given", "reversed", "scarce", "fewest nodes"
# Candidates for "exactly k sets", most successful first, and for the set-by-set pass.
BULK_CANDIDATES = (
    (SCARCE, LEAST_CONTENDED_WORST_FIT),
    (REVERSED, BEST_FIT),
    (FEWEST_NODES, LEAST_CONTENDED_WORST_FIT),
)
SET_BY_SET_CANDIDATE = (GIVEN, LEAST_CONTENDED_WORST_FIT)
# Small problems (few nodes, few components) can afford every component order with both
# node orders, set by set and for each k from the bound down: each try takes microseconds.
_SMALL_NODES = 32
_SMALL_COMPONENTS = 4
_SMALL_K_TRIES = 8

# Counting-sort buckets: larger fits, and more than 7 contenders, share the last one (the
# order is a heuristic only).
_FIT_BUCKETS = 1024
_CONTENTION_LEVELS = 8
# Probes after k = U, and how many candidates each tries: bounds the worst case.
_MAX_PROBES = 6
_BISECTION_CANDIDATES = 1
# A small problem's first-fit visits a few dozen nodes; its search may still do this much
# work (measured: about 0.3 ms, a fraction of an empty gRPC call, so the request stays
# within twice first-fit's latency)...
_MIN_SEARCH_WORK = 20_000
# ...where each step also pays for its Python wrapper (~10 us, ~400 node visits)...
_STEP_OVERHEAD = 400
# ...and, per component and node, for each of copying the arrays, building a candidate's
# node orders and checking a witness. In first-fit node visits per component and node
# (`python -m benchmarks.search_costs`: the benchmark member's shapes at 10k nodes and
# GPU-first members at 1k and 10k) they cost copy 0.04-0.09, node orders 0.23-0.51 and
# witness 0.47-1.39; each is charged 2, so a step is never under-priced and the budget
# stays a bound on time.
_CELL_COST = 2


def fit_buckets(fits: np.ndarray) -> int:
    """The `buckets` argument of `_node_orders` for these fits."""
    return int(min(_FIT_BUCKETS, fits.max(initial=0) + 1))


@kernel
def _node_orders(
    fits: np.ndarray, replicas: np.ndarray, order: np.ndarray, kind: int, buckets: int, node_order: np.ndarray,
    lengths: np.ndarray,
) -> None:
    """node_order[c, :lengths[c]]: the nodes where c fits a replica, arranged by `kind`.

    A stable counting sort on key = contention * buckets + fit bucket, where contention is
    how many components after c in `order` fit on the node (LEAST_CONTENDED_WORST_FIT
    only) and the fit bucket is min(fit, buckets - 1), reversed for largest fit first.
    `buckets` (at most _FIT_BUCKETS) is one above the largest fit, so small problems do not
    pay for a thousand empty buckets.
    """
    n_comp = order.shape[0]
    n_nodes = fits.shape[1]
    by_contention = kind == LEAST_CONTENDED_WORST_FIT
    largest_first = kind == LEAST_CONTENDED_WORST_FIT
    contention = np.zeros(n_nodes, np.int64)  # components after the current one that fit there
    keys = np.empty(n_nodes, np.int64)
    starts = np.empty(_CONTENTION_LEVELS * buckets + 1, np.int64)
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
                    key = min(contention[n], _CONTENTION_LEVELS - 1) * buckets
                bucket = min(f, buckets - 1)
                key += buckets - 1 - bucket if largest_first else bucket
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


def _component_order(name: str, replicas: np.ndarray, fits: np.ndarray) -> np.ndarray:
    given = np.arange(replicas.shape[0], dtype=np.int64)
    if name == GIVEN:
        return given
    if name == REVERSED:
        return given[::-1].copy()
    if name == SCARCE:
        # Fewest sets reachable alone first; floats only rank, capacity stays integer.
        key = fits.sum(axis=1, dtype=np.float64) / np.maximum(replicas, 1)
    else:
        key = np.count_nonzero(fits, axis=1)
    return np.argsort(key, kind="stable").astype(np.int64)


class _Search:
    """Candidate packings for one best_sets call; keeps the best verified one.

    Work is counted as the module docstring says; `allowance` None means no limit.
    """

    def __init__(self, available, requests, replicas, masks, fits, bound, baseline: Packing, allowance=None,
                 first_fit_work: int = 0):
        self.available, self.requests, self.replicas, self.masks = available, requests, replicas, masks
        self.fits, self.bound, self.best = fits, bound, baseline
        self._orders: dict = {}
        self._allowance = allowance
        self.work = 0  # done by the search so far
        # A set-by-set pass's work is not known in advance: the most one took so far, at
        # first twice first-fit's (per-component walks cost about that).
        self._set_by_set_guess = 2 * first_fit_work
        n_comp, n_nodes = fits.shape
        self._buckets = fit_buckets(fits)
        # Copying the arrays for a pass, a witness check, or building one candidate's node orders.
        self._cells = n_comp * n_nodes * _CELL_COST
        self.steps = 0
        self.stopped = False  # the budget ended the search early

    def _afford(self, predicted: int) -> bool:
        """May a step predicted to do this much work start? (Refusing one ends the search.)"""
        if self._allowance is not None and self.work + predicted + _STEP_OVERHEAD > self._allowance:
            self.stopped = True
        return not self.stopped

    def _charge(self, work: int) -> None:
        self.work += work + _STEP_OVERHEAD
        self.steps += 1

    def _candidate(self, name, kind: int):
        """name: a component order's name, or the order itself (a tuple of indices)."""
        key = (name, kind)
        if key not in self._orders:
            if isinstance(name, tuple):
                order = np.array(name, dtype=np.int64)
            else:
                order = _component_order(name, self.replicas, self.fits)
            node_order = np.empty(self.fits.shape, dtype=np.int64)
            lengths = np.empty(self.fits.shape[0], dtype=np.int64)
            _node_orders(self.fits, self.replicas, readonly(order), kind, self._buckets, node_order, lengths)
            self.work += self._cells + self.fits.shape[0] * _CONTENTION_LEVELS * self._buckets
            self._orders[key] = (order, node_order, lengths)
        return self._orders[key]

    def _order_cost(self, name, kind: int) -> int:
        """Work to build a candidate's node orders, 0 once built."""
        if (name, kind) in self._orders:
            return 0
        return self._cells + self.fits.shape[0] * _CONTENTION_LEVELS * self._buckets

    def _offer(self, sets: int, placement: np.ndarray) -> bool:
        if sets > self.best.sets:
            self.work += self._cells
            if _verify(self.available, self.requests, self.replicas, self.masks, sets, readonly(placement)):
                self.best = Packing(int(sets), placement)
                return True
        return False

    def _set_by_set(self, name, kind: int) -> None:
        if not self._afford(self._order_cost(name, kind) + self._set_by_set_guess + 2 * self._cells):
            return
        order, node_order, lengths = self._candidate(name, kind)
        available = self.available.copy()
        got = pack(available, self.requests, self.replicas, self.masks, order, node_order, lengths, self.bound)
        self._charge(got.work + self._cells)
        self._set_by_set_guess = max(self._set_by_set_guess, got.work)
        self._offer(got.sets, got.placement)

    def _exactly_with(self, k: int, name, kind: int) -> bool:
        # Copies, one walk per component over its node order, the witness check: known in advance.
        if not self._afford(self._order_cost(name, kind) + 3 * self._cells):
            return False
        order, node_order, lengths = self._candidate(name, kind)
        got = pack(self.available.copy(), self.requests, self.replicas * k, self.masks, order, node_order, lengths, 1)
        self._charge(got.work + self._cells)
        return got.sets == 1 and self._offer(k, got.placement)

    def _exactly(self, k: int, candidates) -> bool:
        """Place k sets in bulk with the first candidate order that manages it (in budget)."""
        if k > INT64_MAX // max(int(self.replicas.max()), 1):
            return False
        for name, kind in candidates:
            if self.stopped:
                return False
            if self._exactly_with(k, name, kind):
                return True
        return False

    def run(self) -> Packing:
        # Bulk at the bound first: a bulk pass is cheaper than a set-by-set one on sets-heavy
        # problems, and reaching the bound ends the search with a proven optimum.
        if self._exactly(self.bound, BULK_CANDIDATES[:1]):
            return self.best
        self._set_by_set(*SET_BY_SET_CANDIDATE)
        if self.best.sets >= self.bound or self._exactly(self.bound, BULK_CANDIDATES[1:]):
            return self.best
        n_comp, n_nodes = self.fits.shape
        if n_nodes <= _SMALL_NODES and n_comp <= _SMALL_COMPONENTS:
            self._everything()
            return self.best
        low, high = self.best.sets, self.bound - 1  # low has a witness; high is the next hope
        for _ in range(_MAX_PROBES):
            if low >= high or self.stopped:
                break
            mid = (low + high + 1) // 2
            if self._exactly(mid, BULK_CANDIDATES[:_BISECTION_CANDIDATES]):
                low = mid
            elif not self.stopped:
                high = mid - 1
        return self.best

    def _everything(self) -> None:
        """Every component order with both node orders: set by set, then exactly k sets for
        k from the bound down (the first that works is the most this search finds)."""
        candidates = [(order, kind) for order in itertools.permutations(range(self.fits.shape[0]))
                      for kind in (LEAST_CONTENDED_WORST_FIT, BEST_FIT)]
        for order, kind in candidates:
            if self.best.sets >= self.bound or self.stopped:
                return
            self._set_by_set(order, kind)
        for k in range(self.bound, max(self.best.sets, self.bound - _SMALL_K_TRIES), -1):
            if k <= self.best.sets or self.stopped or self._exactly(k, candidates):
                return


def _least_step(masks: np.ndarray) -> int:
    """A lower bound on the predicted work of the search's first step: any step first
    builds a candidate's node orders and copies the arrays (and checks a witness), at least
    three cells per component and node (`_Search._exactly_with`, `_Search._set_by_set`)."""
    return 3 * masks.shape[0] * masks.shape[1] * _CELL_COST + _STEP_OVERHEAD


def best_sets(available, requests, replicas, masks, upper, budget: float | None = None,
              known_bound: int | None = None) -> Packing:
    """The most complete sets we can show a placement for: >= first_fit_sets, <= upper.

    `budget`: None searches without a limit; a number b >= 0 lets the search after
    first-fit do b x first-fit's own work in this call, counted in node visits (module
    docstring), so the answer does not depend on timing. The result's `bound` is an upper
    bound on what any placement reaches; `work` what first-fit and the search did. Does
    not modify `available`; the returned placement passes `verify_placement`.

    `known_bound`: this bound, from an earlier call on the same arrays (the caller keys it
    by snapshot and request shape), instead of working it out again. It is the same value
    `set_bound(..., reach=first-fit's sets, first=first-fit's limiting component)` gives,
    which is how this function computes it too; a request whose first-fit answer reaches
    it then costs one first-fit pass.
    """
    if budget is not None and not (budget >= 0):  # also refuses NaN
        raise ValueError(f"budget must be None or a number >= 0, got {budget!r}")
    p = problem(available, requests, replicas, masks, upper, in_place=False)
    baseline = karmada_first_fit(p.available.copy(), p.requests, p.replicas, p.masks, p.upper)
    if baseline.sets >= p.upper:
        return baseline._replace(bound=p.upper)
    if known_bound is not None:
        if not baseline.sets <= known_bound <= p.upper:
            raise ValueError(f"known_bound must lie between first-fit's {baseline.sets} sets and upper "
                             f"{p.upper}, got {known_bound!r}")
        if baseline.sets >= known_bound:
            return baseline._replace(bound=int(known_bound))
        quick = int(known_bound)
    else:
        quick = component_bound(p.available, p.requests, p.replicas, p.masks, baseline.limiting, p.upper)
        if baseline.sets >= quick:
            return baseline._replace(bound=quick)
    allowance = None if budget is None else budget * max(baseline.work, _MIN_SEARCH_WORK)
    if known_bound is not None and (budget == 0 or (allowance is not None and allowance < _least_step(p.masks))):
        # The search would stop before its first step, so the pass that finds the fits it
        # needs is skipped too: same answer, same work.
        return baseline._replace(bound=int(known_bound))
    if known_bound is not None:
        # A known bound above first-fit's answer is the staged bound's full pass, min(the
        # component bound, the relaxations), so `bounds(..., quick)` would give it back
        # unchanged: only the fits are still needed.
        bound, fits = quick, node_fits(p.available, p.requests, p.replicas, p.masks)
    else:
        bound, fits = bounds(p.available, p.requests, p.replicas, p.masks, quick)
    if baseline.sets >= bound or budget == 0:
        return baseline._replace(bound=bound)
    search = _Search(p.available, p.requests, p.replicas, p.masks, fits, bound, baseline, allowance, baseline.work)
    found = search.run()
    return found._replace(bound=bound, work=baseline.work + search.work)
