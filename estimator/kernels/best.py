"""Best mode: as many complete sets as we can show a placement for, never below first-fit.

Steps, cheapest first. Every candidate placement is checked by `witness.placement_valid` before
it counts, so every answer comes with a witness, and none is above a proven bound.

1. Karmada's first-fit on a copy: the baseline.
2. An upper bound U, the staged bound of `fit.set_bound` (both modes give the same): the
   component that stopped first-fit, alone (sum of its fits / replicas); then one pass of
   compares finding the *eligible pool*, the nodes where some component fits a replica,
   with each column's total over it / what a set needs; then, where the pool is small
   enough for it to be cheap, fit._bounds over the pool (per component, sum of its fits /
   replicas; per column, sum over nodes of min(available, sum of fit x request) / what a
   set needs; replica slots per node / replicas per set). The baseline is proven optimal
   as soon as it reaches U (or `upper`): most requests end here, and every later step
   stops as soon as a witness reaches U.
3. The search runs on the eligible pool alone (the arrays compacted to its nodes; the
   witness is placed back on the member's nodes, zero elsewhere): a job whose node
   selector picks five nodes of a thousand is searched, priced and classified (step 7)
   as the five-node problem it is.
4. Candidate orders, built once per call by counting sorts over the nodes where each
   component fits a replica:
   - component orders: as given; reversed; most constrained first (fewest sets it could
     reach alone, sum of fits / replicas); fewest usable nodes first;
   - node orders: least contended first (nodes fewer of the components placed after this
     one can use), then largest fit first (keeps a component on few nodes and leaves
     whole nodes to the others); or smallest fit first (best-fit).
5. Set-by-set first-fit, components as given, nodes least contended then largest fit: one
   pass that gives a count directly (the best lower bound on large, irregular clusters).
6. Packing exactly k sets in bulk: each component in turn places all of its k x replicas
   greedily over its node order (the first-fit kernel with replicas scaled by k and one
   set). Sets are interchangeable, so any aggregated placement with those totals is a
   witness for k sets. First k = U with up to three candidates (the bounds are usually
   tight), then a few bisection probes between the best witness and U with the first.
7. Small problems (a pool of up to 32 nodes), instead of the bisection: the exact search
   (`exact.place_exactly`: every way to spread each component's replicas over the pool,
   pruned, within a step budget), bisecting between the best witness and U. Each k it
   places is a witness; each k it rules out brings U down to k - 1, so where it finishes
   the answer is the optimum and proven (its bound is the answer). Where its steps run out
   (half of what the budget leaves, a step priced _EXACT_STEP visits; at most
   _EXACT_STEPS), up to 4 components go on with every component order with both node
   orders, set by set and for each k from U down; more components with the bisection.

Quality against the exact optimum on members from eight generators (small random ones,
jobs fenced onto 1-8 nodes of 500-2,000-node members, 20-200-node GPU members), and where
best beats first-fit on larger members: `python -m benchmarks.quality` (RESULTS.md,
"Packing quality").

Work budget, counted in steps, not time, so the same request always gets the same answer
(whatever the machine's load): work is node visits (`Packing.work`: every node a walk
looks at; copying the arrays for a pass, building a candidate's node orders, checking a
witness and finding the fits the search starts from are charged their measured cost per
component and node of the pool, _COPY_CELL, _ORDER_CELL, _WITNESS_CELL and _FITS_CELL;
each step also counts _STEP_OVERHEAD for its fixed cost). Steps 5-7 may do `budget` x
first-fit's own work over the pool (at least _MIN_SEARCH_WORK, so a tiny problem can
still afford its exhaustive tries), times `room_factor`: _ROOM_FACTOR where the bound
leaves room for _ROOM_SHARE more sets than first-fit's, else 1. No search starts, and not
even the pass that finds the fits, when its first step cannot fit; a step is started
only when its predicted work still fits: a bulk pass is bounded in advance (one walk per
component over the nodes where it fits, then a witness check), a set-by-set pass is
predicted by the most a set-by-set pass took so far (at first: twice first-fit's work).
The answer is first-fit's until a step improves it, so a budget only ever trades quality
for time, never correctness.

All packing runs on copies; `available` is never written.
"""

from __future__ import annotations

import itertools
import math
from typing import TYPE_CHECKING

import numpy as np

from ._arith import INT64_MAX
from ._arrays import Packing, problem, readonly
from ._numba import kernel
from .exact import FOUND, NONE, place_exactly
from .firstfit import karmada_first_fit, pack, staged_first_fit
from .fit import bounds, compact, eligible_pool, full_pass_affordable, node_fits
from .witness import placement_valid

if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import TypeAlias

    # A candidate's component order: its name (GIVEN, ...), or the order itself.
    _OrderName: TypeAlias = str | tuple[int, ...]

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
# The exact search on a small problem (`_Search._prove`) may take this many steps at most,
# and half of what the budget leaves when there is one. A step (`exact`) costs about this
# many first-fit node visits (`python -m benchmarks.search_costs`, as the prices below).
_EXACT_STEPS = 2_000_000
_EXACT_STEP = 2

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
# ...and, per component and node of the eligible pool, for copying the arrays, building a
# candidate's node orders, checking a witness and finding the fits the search starts from.
# In first-fit node visits per component and node, from `python -m benchmarks.search_costs`
# (the benchmark member's shapes at 10k nodes, GPU-first members at 1k and 10k): each price
# is the most measured, rounded up, so a step is not under-priced and the budget stays a
# bound on time. A walk is charged what it visited (`Packing.work`) and predicted at one
# visit per node where its component fits.
_COPY_CELL = 0.25
_ORDER_CELL = 0.75
_WITNESS_CELL = 1.25
_FITS_CELL = 1.25
# Where the bound leaves room for _ROOM_SHARE more sets than first-fit placed, the search may
# spend _ROOM_FACTOR times its allowance. Measured at 10k nodes: a GPU-first member, where
# first-fit's launcher strands GPUs, leaves 6% and needs about 4 x first-fit's work for the
# one bulk step that finds them; the benchmark member's Flink job leaves 1.6% (cpu-bound
# sets) and no search finds more there, so it keeps the plain allowance, which no step fits.
_ROOM_SHARE = 0.03
_ROOM_FACTOR = 8


def fit_buckets(fits: np.ndarray) -> int:
    """The `buckets` argument of `_node_orders` for these fits."""
    return int(min(_FIT_BUCKETS, fits.max(initial=0) + 1))


def _order_scratch(n_nodes: int, buckets: int) -> np.ndarray:
    """The `scratch` of `_node_orders`: contention and keys per node, the bucket starts."""
    return np.empty(2 * n_nodes + _CONTENTION_LEVELS * buckets + 1, dtype=np.int64)


@kernel
def _node_orders(
    fits: np.ndarray,
    replicas: np.ndarray,
    order: np.ndarray,
    kind: int,
    buckets: int,
    node_order: np.ndarray,
    lengths: np.ndarray,
    scratch: np.ndarray,
) -> None:
    """node_order[c, :lengths[c]]: the nodes where c fits a replica, arranged by `kind`.

    A stable counting sort on key = contention * buckets + fit bucket, where contention is
    how many components after c in `order` fit on the node (LEAST_CONTENDED_WORST_FIT
    only) and the fit bucket is min(fit, buckets - 1), reversed for largest fit first.
    `buckets` (at most _FIT_BUCKETS) is one above the largest fit, so small problems do not
    pay for a thousand empty buckets. `scratch`: int64, `_order_scratch` long, the caller's.
    """
    n_comp = order.shape[0]
    n_nodes = fits.shape[1]
    by_contention = kind == LEAST_CONTENDED_WORST_FIT
    largest_first = kind == LEAST_CONTENDED_WORST_FIT
    contention = scratch[:n_nodes]  # components after the current one that fit there
    keys = scratch[n_nodes : 2 * n_nodes]
    starts = scratch[2 * n_nodes : 2 * n_nodes + _CONTENTION_LEVELS * buckets + 1]
    contention[:] = 0
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

    def __init__(
        self,
        available: np.ndarray,
        requests: np.ndarray,
        replicas: np.ndarray,
        masks: np.ndarray,
        fits: np.ndarray,
        bound: int,
        baseline: Packing,
        allowance: float | None = None,
        first_fit_work: int = 0,
        work: int = 0,
    ) -> None:
        self.available, self.requests, self.replicas, self.masks = available, requests, replicas, masks
        self.fits, self.bound, self.best = fits, bound, baseline
        self._orders: dict = {}
        self._allowance = allowance
        self.work = work  # done by the search so far (the fits it starts from)
        # A set-by-set pass's work is not known in advance: the most one took so far, at
        # first twice first-fit's (per-component walks cost about that).
        self._set_by_set_guess = 2 * first_fit_work
        n_comp, n_nodes = fits.shape
        self._buckets = fit_buckets(fits)
        cells = n_comp * n_nodes
        self._copy = _price(cells, _COPY_CELL)
        self._witness = _price(cells, _WITNESS_CELL)
        self._order = _price(cells, _ORDER_CELL) + n_comp * _CONTENTION_LEVELS * self._buckets
        self._walk = int(np.count_nonzero(fits))  # a bulk pass walks each component's nodes once
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

    def _candidate(self, name: _OrderName, kind: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """name: a component order's name, or the order itself (a tuple of indices)."""
        key = (name, kind)
        if key not in self._orders:
            if isinstance(name, tuple):
                order = np.array(name, dtype=np.int64)
            else:
                order = _component_order(name, self.replicas, self.fits)
            node_order = np.empty(self.fits.shape, dtype=np.int64)
            lengths = np.empty(self.fits.shape[0], dtype=np.int64)
            scratch = _order_scratch(self.fits.shape[1], self._buckets)
            _node_orders(self.fits, self.replicas, readonly(order), kind, self._buckets, node_order, lengths, scratch)
            self.work += self._order
            self._orders[key] = (order, node_order, lengths)
        return self._orders[key]

    def _order_cost(self, name: _OrderName, kind: int) -> int:
        """Work to build a candidate's node orders, 0 once built."""
        if (name, kind) in self._orders:
            return 0
        return self._order

    def _offer(self, sets: int, placement: np.ndarray) -> bool:
        if sets > self.best.sets:
            self.work += self._witness
            if placement_valid(self.available, self.requests, self.replicas, self.masks, sets, readonly(placement)):
                self.best = Packing(int(sets), placement)
                return True
        return False

    def _set_by_set(self, name: _OrderName, kind: int) -> None:
        if not self._afford(self._order_cost(name, kind) + self._set_by_set_guess + self._copy + self._witness):
            return
        order, node_order, lengths = self._candidate(name, kind)
        available = self.available.copy()
        got = pack(available, self.requests, self.replicas, self.masks, order, node_order, lengths, self.bound)
        self._charge(got.work + self._copy)
        self._set_by_set_guess = max(self._set_by_set_guess, got.work)
        self._offer(got.sets, got.placement)

    def _exactly_with(self, k: int, name: _OrderName, kind: int) -> bool:
        # Copies, one walk per component over its node order, the witness check: known in advance.
        if not self._afford(self._order_cost(name, kind) + self._copy + self._walk + self._witness):
            return False
        order, node_order, lengths = self._candidate(name, kind)
        got = pack(self.available.copy(), self.requests, self.replicas * k, self.masks, order, node_order, lengths, 1)
        self._charge(got.work + self._copy)
        return got.sets == 1 and self._offer(k, got.placement)

    def _exactly(self, k: int, candidates: Iterable[tuple[_OrderName, int]]) -> bool:
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
        if n_nodes <= _SMALL_NODES and self._prove():
            return self.best
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

    def _prove(self) -> bool:
        """The exact search (`exact.place_exactly`), bisecting between the best witness and
        the bound: every k it places is a witness, every k it rules out brings the bound
        down to k - 1. True when that settles the answer (the best witness reaches the
        bound, now proven), False when its steps ran out first."""
        order = _component_order(SCARCE, self.replicas, self.fits)
        limit = None if self._allowance is None else self.work + (self._allowance - self.work) / 2
        spent = 0
        low, high = self.best.sets, self.bound  # low has a witness; no placement passes high
        while low < high:
            cap = _EXACT_STEPS - spent
            if limit is not None:
                left = limit - self.work - self._copy - self._witness - _STEP_OVERHEAD
                cap = min(cap, math.floor(left / _EXACT_STEP))
            if cap <= 0:
                return False
            k = (low + high + 1) // 2
            status, steps, placement = place_exactly(
                self.available, self.requests, self.replicas, self.masks, k, order, cap
            )
            spent += steps
            self._charge(steps * _EXACT_STEP + self._copy)
            if status == NONE:
                high = self.bound = k - 1
            elif status == FOUND and self._offer(k, placement):
                low = k
            else:
                return False
        return True

    def _everything(self) -> None:
        """Every component order with both node orders: set by set, then exactly k sets for
        k from the bound down (the first that works is the most this search finds)."""
        candidates = [
            (order, kind)
            for order in itertools.permutations(range(self.fits.shape[0]))
            for kind in (LEAST_CONTENDED_WORST_FIT, BEST_FIT)
        ]
        for order, kind in candidates:
            if self.best.sets >= self.bound or self.stopped:
                return
            self._set_by_set(order, kind)
        for k in range(self.bound, max(self.best.sets, self.bound - _SMALL_K_TRIES), -1):
            if k <= self.best.sets or self.stopped or self._exactly(k, candidates):
                return


def _price(cells: int, per_cell: float) -> int:
    return math.ceil(cells * per_cell)


def _least_step(n_comp: int, n_nodes: int) -> int:
    """A lower bound on the predicted work of the search's first step, the fits it starts
    from included: any step first builds a candidate's node orders, copies the arrays and
    checks a witness (`_Search._exactly_with`, `_Search._set_by_set`)."""
    cells = n_comp * n_nodes
    return (
        _price(cells, _FITS_CELL)
        + _price(cells, _ORDER_CELL)
        + n_comp * _CONTENTION_LEVELS
        + _price(cells, _COPY_CELL)
        + _price(cells, _WITNESS_CELL)
        + _STEP_OVERHEAD
    )


def room_factor(bound: int, sets: int) -> int:
    """How many times the budget the search may spend: _ROOM_FACTOR where the bound leaves
    room for at least _ROOM_SHARE more sets than first-fit's answer, else 1."""
    return _ROOM_FACTOR if bound - sets >= _ROOM_SHARE * max(sets, 1) else 1


def best_sets(
    available: object,
    requests: object,
    replicas: object,
    masks: object,
    upper: object,
    budget: float | None = None,
    known_bound: int | None = None,
    known_pool: int | None = None,
    by_column: np.ndarray | None = None,
) -> Packing:
    """The most complete sets we can show a placement for: >= first_fit_sets, <= upper.

    `budget`: None searches without a limit; a number b >= 0 lets the search after
    first-fit do b x first-fit's own work on the eligible pool (at least _MIN_SEARCH_WORK),
    times `room_factor`, counted in node visits (module docstring), so the answer does not
    depend on timing. The result's `bound` is an upper bound on what any placement
    reaches, `fit.set_bound`'s staged bound; `work` what first-fit and the search did.
    Does not modify `available`; the returned placement passes `verify_placement`.

    The search runs on the eligible pool only (`fit.eligible_pool`: nodes where some
    component fits a replica), so it is priced, budgeted and classified (the small-problem
    path) by the nodes the request can use, and a member padded with nodes no component
    can use gets the answer of its bare pool.

    `known_bound`: this bound, from an earlier call on the same arrays (the caller keys it
    by snapshot and request shape), instead of working it out again. It is the value
    `set_bound(..., reach=first-fit's sets, first=first-fit's limiting component)` gives,
    which is how this function computes it too, or the lower one this function returned
    (the exact search of a small pool proves it); a request whose first-fit answer reaches
    it then costs one first-fit pass. `known_pool`: with it, the result's `pool` of such a
    call (the eligible pool's size); a request whose search could not afford a step then
    costs one first-fit pass too. `by_column`: `column_layout(available)`, if the caller
    keeps it (the bound's column passes run on it).
    """
    if budget is not None and not (budget >= 0):  # also refuses NaN
        raise ValueError(f"budget must be None or a number >= 0, got {budget!r}")
    p = problem(available, requests, replicas, masks, upper, in_place=False)
    # First-fit on a copy and, for a bound not known, the bound's first stages in the same
    # call: the limiting component's, then the eligible pool's column totals.
    baseline, pool = staged_first_fit(
        p.available, p.requests, p.replicas, p.masks, p.upper, known_bound is None, by_column
    )
    if baseline.sets >= p.upper:
        return baseline._replace(bound=p.upper)
    n_comp = p.requests.shape[0]
    if known_bound is not None:
        if not baseline.sets <= known_bound <= p.upper:
            raise ValueError(
                f"known_bound must lie between first-fit's {baseline.sets} sets and upper "
                f"{p.upper}, got {known_bound!r}"
            )
        bound = int(known_bound)
        if baseline.sets >= bound:
            return baseline._replace(bound=bound)
        # What the search would cost at least, and the most it may spend: by the pool, and
        # by first-fit's work over the whole member, which is at least its work over the pool.
        most = (
            None
            if budget is None
            else budget * max(baseline.work, _MIN_SEARCH_WORK) * room_factor(bound, baseline.sets)
        )
        if known_pool is not None and most is not None and most < _least_step(n_comp, known_pool):
            return baseline._replace(bound=bound, pool=known_pool)
        pool = eligible_pool(p.available, p.requests, p.replicas, p.masks, bound)
        baseline = baseline._replace(pool=pool.count)
        full = False
    else:
        bound = baseline.bound  # the limiting component's, or the pool's column totals'
        if pool is None:  # first-fit reaches the limiting component's bound
            return baseline
        full = full_pass_affordable(n_comp, pool.count)
        if baseline.sets >= bound or (budget == 0 and not full):
            return baseline
        most = (
            None
            if budget is None
            else budget * max(baseline.work, _MIN_SEARCH_WORK) * room_factor(bound, baseline.sets)
        )
    least = _least_step(n_comp, pool.count)
    if most is not None and not full and most < least:
        return baseline._replace(bound=bound)
    pool_available, pool_masks = compact(pool, p.available, p.masks)
    fits = None
    if full:
        # The staged bound's last pass, cheap on a small pool; its fits serve the search.
        full_bound, fits = bounds(pool_available, p.requests, p.replicas, pool_masks, p.upper)
        bound = min(bound, full_bound)
        if baseline.sets >= bound or budget == 0:
            return baseline._replace(bound=bound)
    # First-fit over the pool: the same sets and placement (no node outside it ever takes a
    # replica), and the work the budget is counted in.
    pool_baseline = baseline
    if not pool.whole:
        pool_baseline = karmada_first_fit(pool_available.copy(), p.requests, p.replicas, pool_masks, p.upper)
        if pool_baseline.sets != baseline.sets:  # cannot happen; first-fit's answer stands
            return baseline._replace(bound=bound)
    allowance = None
    if budget is not None:
        allowance = budget * max(pool_baseline.work, _MIN_SEARCH_WORK) * room_factor(bound, baseline.sets)
        if allowance < least:
            return baseline._replace(bound=bound)
    if fits is None:
        fits = node_fits(pool_available, p.requests, p.replicas, pool_masks)
    search = _Search(
        pool_available,
        p.requests,
        p.replicas,
        pool_masks,
        fits,
        bound,
        pool_baseline,
        allowance,
        pool_baseline.work,
        work=_price(n_comp * pool.count, _FITS_CELL),
    )
    found = search.run()
    bound = search.bound  # the exact search may prove a lower one
    work = baseline.work + (0 if pool.whole else pool_baseline.work) + search.work
    if found is pool_baseline:
        return baseline._replace(bound=bound, work=work)
    placement = found.placement
    if not pool.whole:
        placement = np.zeros(p.masks.shape, dtype=np.int64)
        placement[:, pool.nodes] = found.placement
    return Packing(found.sets, placement, bound, -1, work, pool.count)
