"""What the request path keeps between requests: every cache, its key, bound and invalidation.

As kube-scheduler's CycleState and Karmada's ComponentEstimationContext: what estimates work
out and reuse travels in one object, `RequestCaches`, held by the `Estimator` and handed to
the plugins in `EstimateContext.caches` (framework.py), instead of module-level dicts. The
values that live exactly as long as a snapshot are kept on the snapshot
(`ClusterSnapshot.derived`, read back with `peek_derived`); their tables are declared here
too (`SnapshotTable`), so this module is the one place that says what is kept.

Kept by `RequestCaches` (one per Estimator; a bare `EstimateContext` gets a fresh one):
- `answers` (AnswerMemo): key the query's value (`querymemo.HashedKey`); bound 16 answers and
  64 MiB (`memo_bytes`; a placement is 8 B per component and node); goes when another snapshot
  is asked about (the snapshot is held weakly).
- `asked` (estimate.py `_Asked`: memo key, size, names): key the query object's identity;
  bound 256 entries, only queries of <= 64 components and ~16 KB of strings; goes when the
  query object is garbage-collected.
- `plans` (noderesource.py `_Plan`: columns, request rows, keys): the same key, bound, lifetime.
- `set_demand` (resourcequota.py: one set's demand): the same key, bound, lifetime.

Kept on each snapshot, so gone with it (the next watch event or reload); a query too large to
keep (querymemo.kept) is estimated on `snapshot.detached()`, so nothing of it stays:
- `GATHERED` (noderesource): the gathered columns by column names (+ the job's own DRA names
  when in-flight workloads are deducted); 8 entries (N x K int64, a kept query's <= 2^19 cells).
- `BY_COLUMN` (noderesource): the same columns laid out one after another (`kernels.column_layout`,
  for the bound's column passes) by column names; 8 entries (K x N int64), or None where the
  layout may not serve (an amount too large for its passes: the node-by-node passes run).
- `MASKS` (noderesource): stacked node masks by the components' claims (hashed once per
  plan); 64 entries (C x N bools).
- `PACKINGS` (noderesource): an in-flight workload's request rows, replicas and masks by
  columns and, per component, (requests, claim, replicas); 64 entries. (A query's own rows
  are its plan's, its masks `MASKS`'.)
- `ClusterSnapshot.derived`: the set bound (by `_Plan.bound_key`) and eligible pool size
  (noderesource), the quotas' free amounts (resourcequota, by namespace); 1024 keys, then emptied.
- `ClusterSnapshot.node_mask`: a mask per claim; 4096 masks and 32 MiB, then emptied.
- `_Plan._last` (noderesource): per plan, weak references to the newest snapshot it ran on and
  that snapshot's entries for it (gathered columns, masks); one, replaced by the next snapshot.

Module-level caches that stay where they are (they belong to layers this object cannot reach):
- `kernels/_arrays.py` `_VOUCHED`: id(array) -> (weakref, role) of arrays vouched for; the
  kernels import no estimator module, so they cannot hold this object. Unbounded by count, but
  an entry goes when its array is garbage-collected (the arrays are the entries above).
- `kernels/firstfit.py` `_SCRATCH`: a `threading.local` node mark per thread (8 B per node,
  grown to the largest member, never shrunk); per-thread so workers never share it.
- `service/convert.py`: `_converted` (request bytes -> query; lru 512 entries of <= 4 KB and
  <= 64 components), `_claims` (a node claim's bytes -> the claim and the entries it counts;
  256 entries of <= 1 KB, oldest first), `_decoded_quantity` and `_quantity_texts` (lru 4096
  each, keys <= 128 B), `is_counted` (lru 1024 names); never invalidated (pure functions of
  their keys). The service layer sits above `estimate/`; the conversion memo is what makes a repeated request the same
  query object, the identity the per-query caches above are keyed on.
- core's pure parse caches on the path (`resources.quantity_to_int` 8192,
  `filters` requirement checks 4096, `resourcequota.is_extended` 1024): lru, never invalidated.

Thread safety: no locks here (estimate/ starts and takes none, except the snapshot's own for
its masks and derived values). Every cache is a dict swapped or updated in single steps the GIL
makes atomic; racing requests may compute one value twice and briefly hold a few entries past a
bound. docs/architecture.md "State and caches" has this table for the whole process.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any, TypeVar

from estimator.core.snapshot import ClusterSnapshot
from estimator.estimate.querymemo import DEFAULT_SIZE, KEPT_MAX_COMPONENTS, KEPT_MAX_QUERY_BYTES, IdentityMemo

T = TypeVar("T")

# Answers kept per snapshot, and the bytes they may hold together: a component-set answer
# holds its placement (int64 per component and node, 240 KB for a 3-component job on 10k
# nodes; a kept query's at most 8 MB, querymemo.KEPT_MAX_CELLS).
ANSWERS_PER_SNAPSHOT = 16
DEFAULT_MEMO_BYTES = 64 << 20
_ANSWER_OVERHEAD = 1024  # an answer's objects besides its placement


def answer_bytes(answer: Any) -> int:
    """What a remembered answer (a FrameworkResult) holds: its placements and some overhead."""
    size = _ANSWER_OVERHEAD
    for result in answer.results.values():
        placement = getattr(result.detail, "placement", None)
        size += getattr(placement, "nbytes", 0)
    return size


class AnswerMemo:
    """Answers for the newest snapshot asked about, by request; the oldest go first past
    `size` answers or `max_bytes` bytes (an answer larger than that is not kept). It holds
    the snapshot weakly (an answer never refers to it), so a replaced snapshot is freed as
    soon as the cache lets go of it. No lock (the core starts no threads and takes none):
    (snapshot, answers) is swapped as one tuple, and under concurrent puts the memo may
    briefly hold a few answers more than its bounds."""

    def __init__(self, size: int = ANSWERS_PER_SNAPSHOT, max_bytes: int = DEFAULT_MEMO_BYTES):
        self._size = size
        self._max_bytes = max_bytes
        self._state: tuple = (None, {})  # (weakref.ref to the snapshot, {key: (answer, bytes)})

    def get(self, snapshot: ClusterSnapshot, key: Hashable) -> Any:
        ref, answers = self._state
        if ref is None or ref() is not snapshot:
            return None
        entry = answers.get(key)
        return None if entry is None else entry[0]

    def put(self, snapshot: ClusterSnapshot, key: Hashable, answer: Any) -> None:
        cost = answer_bytes(answer)
        if cost > self._max_bytes:
            return
        ref, answers = self._state
        if ref is None or ref() is not snapshot:
            answers = {}
            self._state = (weakref.ref(snapshot), answers)
        # Summed afresh (at most `size` entries), so racing puts cannot make a count drift.
        while answers and (
            len(answers) >= self._size or sum(entry[1] for entry in list(answers.values())) + cost > self._max_bytes
        ):
            try:
                answers.pop(next(iter(answers)), None)
            except (StopIteration, RuntimeError):  # emptied or changed by another request meanwhile
                break
        answers[key] = (answer, cost)

    def held_bytes(self) -> int:
        return sum(entry[1] for entry in list(self._state[1].values()))


def _small_query(asked: Any) -> bool:
    """Query facts are kept only for small queries: the entry holds its query (the key)."""
    return asked.components <= KEPT_MAX_COMPONENTS and asked.bytes <= KEPT_MAX_QUERY_BYTES


class RequestCaches:
    """The caches of the request path that outlive one request (see the module docstring
    for each one's key, bound and invalidation). `query_entries`: entries of each per-query
    memo (0: nothing kept per query object)."""

    def __init__(self, memo_bytes: int = DEFAULT_MEMO_BYTES, query_entries: int = DEFAULT_SIZE):
        # Answers by request value, for the newest snapshot only.
        self.answers = AnswerMemo(ANSWERS_PER_SNAPSHOT, memo_bytes)
        # By query object (the service hands repeats of a request the same converted object):
        # the query's memo key, size and reported names (estimate.py `_Asked`) ...
        self.asked: IdentityMemo[Any] = IdentityMemo(size=query_entries, admit=_small_query)
        # ... the node-resource plugin's snapshot-independent plan (noderesource.py `_Plan`) ...
        self.plans: IdentityMemo[Any] = IdentityMemo(size=query_entries)
        # ... and the quota plugin's whole-set demand (resourcequota.py).
        self.set_demand: IdentityMemo[Any] = IdentityMemo(size=query_entries)

    def memo_bytes(self) -> int:
        """Bytes the remembered answers hold now."""
        return self.answers.held_bytes()


_MISSING = object()  # no entry in a SnapshotTable (None may be one)


@dataclass(frozen=True)
class SnapshotTable:
    """A small table kept on a snapshot (in `ClusterSnapshot.derived`), the oldest entry
    going first past `entries`: a caller sending ever new resource names or shapes cannot
    grow the snapshot's memory. It goes with the snapshot. No lock: concurrent requests may
    compute one value twice."""

    name: str
    entries: int

    def entries_on(self, snapshot: ClusterSnapshot) -> dict:
        """The table's dict on `snapshot` (made empty on first use)."""
        return snapshot.derived((__name__, self.name), dict)

    def get(self, snapshot: ClusterSnapshot, key: Hashable, compute: Callable[[], T]) -> T:
        """The value kept for `key` on `snapshot`, else `compute()`, kept (None too: a value
        that is None is known, not missing)."""
        table: dict[Hashable, Any] = snapshot.derived((__name__, self.name), dict)
        value = table.get(key, _MISSING)
        if value is _MISSING:
            value = compute()
            while len(table) >= self.entries:
                try:
                    table.pop(next(iter(table)), None)
                except (StopIteration, RuntimeError):  # emptied or changed by another request meanwhile
                    break
            table[key] = value
        return value


# The node-resource plugin's per-snapshot tables. GATHERED: the gathered columns (N x K
# int64, 400 KB for 5 columns at 10k nodes), read-only; BY_COLUMN: the same transposed
# (the bound's column passes read it), as much again; MASKS: stacked node masks (C x N
# bools) by claims; PACKINGS: an in-flight workload's request rows, replicas and masks.
GATHERED = SnapshotTable("gathered", 8)
BY_COLUMN = SnapshotTable("by column", 8)
MASKS = SnapshotTable("masks", 64)
PACKINGS = SnapshotTable("packing", 64)
