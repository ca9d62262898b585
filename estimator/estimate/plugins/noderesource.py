"""Node resources: how many replicas / component sets the nodes can hold.

Mirrors Karmada's NodeResourceEstimator. Work that depends only on the request (columns,
request rows, node masks) is done once here; the per-node arithmetic runs in kernels over
just the columns the request needs. What depends only on the snapshot and the request's
shape (the gathered columns, the request rows and masks) is kept per snapshot, a few
entries each, so the next request of that shape on the snapshot copies instead of gathers;
a kernel that consumes `available` always gets a private copy. A component-sets answer carries an
upper bound (`Packing.bound`, in both modes), so it says whether it is proven optimal.

What depends on the request alone (columns, request rows, cache keys with their hashes) is
kept per query object (`RequestCaches.plans`, reached through the context), across
snapshots; requeststate.py declares every table kept here, with its key and bound. The arrays this module hands the
kernels are vouched for once (`kernels.vouch`: the snapshot's columns are never
negative, request rows ask for one pod each), so a request does not pay the kernels'
argument scans over every node again.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Sequence
from typing import NamedTuple, cast

import numpy as np

from estimator import kernels
from estimator.core.devices import count_once, deduct_shared
from estimator.core.model import (
    AssumedWorkload,
    Component,
    ComponentSetsQuery,
    ReplicaShape,
    ReplicasQuery,
)
from estimator.core.resources import MAX_INT32, PODS
from estimator.core.snapshot import ClusterSnapshot
from estimator.estimate.framework import Code, EstimateContext, PluginResult
from estimator.estimate.querymemo import HashedKey
from estimator.estimate.requeststate import BY_COLUMN, GATHERED, MASKS, PACKINGS
from estimator.kernels import AMOUNTS, FLAGS, REQUEST_ROWS, vouch, vouched_copy

NAME = "NodeResourceEstimator"

REASON_EMPTY_COMPONENTS = f"{NAME} received empty components list"
REASON_NO_RESOURCES = "no enough resources"


def _columns(shapes: Iterable[ReplicaShape]) -> tuple[str, ...]:
    """pods first, then every resource any shape asks for, in a stable order."""
    names = sorted({name for shape in shapes for name, _ in shape.requests})
    return (PODS, *names)


def _gather(snapshot: ClusterSnapshot, columns: Sequence[str], own: frozenset[str] | None = None) -> np.ndarray:
    """A private, contiguous copy of the requested columns; unknown resources are zeros. A
    DRA device that could serve two names the job's own components ask for (`own`, default
    all) counts for one (devices.count_once)."""
    sources = [snapshot.column(name) for name in columns]
    if None not in sources:
        # One gather into a new C-contiguous array instead of a strided copy per column.
        available = np.take(snapshot.available, cast("list[int]", sources), axis=1)
    else:
        available = np.zeros((snapshot.num_nodes, len(columns)), dtype=np.int64)
        for k, name in enumerate(columns):
            source = snapshot.column(name)
            if source is not None:
                available[:, k] = snapshot.available[:, source]
    if snapshot.dra_served:
        count_once(snapshot, columns, available, own)
    return available


def _pristine(snapshot: ClusterSnapshot, columns: tuple[str, ...], own: frozenset[str] | None = None) -> np.ndarray:
    """The gathered columns, read-only, shared by every request on this snapshot."""

    def gather() -> np.ndarray:
        array = vouch("available", _gather(snapshot, columns, own), AMOUNTS)
        array.setflags(write=False)
        return array

    key = columns if own is None or not snapshot.dra_served else (columns, own)
    return GATHERED.get(snapshot, key, gather)


def _by_column(snapshot: ClusterSnapshot, columns: tuple[str, ...], pristine: np.ndarray) -> np.ndarray | None:
    """The gathered columns (`_pristine`'s) laid out one after another, for the bound's
    passes over every node (`kernels.column_layout`), shared by every request on this
    snapshot that asks for these columns (None where that layout may not serve)."""
    return BY_COLUMN.get(snapshot, columns, lambda: kernels.column_layout(pristine))


def _request_row(shape: ReplicaShape, index: dict[str, int]) -> np.ndarray:
    row = np.zeros(len(index), dtype=np.int64)
    row[0] = 1  # every replica takes one pod slot
    for name, amount in shape.requests:
        row[index[name]] = amount
    return row


def _request_rows(components: Sequence[Component], index: dict[str, int]) -> np.ndarray:
    """`_request_row` of every component, built as lists and converted once."""
    rows = []
    for c in components:
        row = [0] * len(index)
        row[0] = 1  # every replica takes one pod slot
        for name, amount in c.shape.requests:
            row[index[name]] = amount
        rows.append(row)
    return np.array(rows, dtype=np.int64).reshape(len(rows), len(index))


def _request_arrays(components: Sequence[Component], index: dict[str, int]) -> tuple[np.ndarray, np.ndarray]:
    """(request rows, replicas), vouched for and read-only."""
    requests = vouch("requests", _request_rows(components, index), REQUEST_ROWS)
    replicas = vouch("replicas", np.array([c.replicas for c in components], dtype=np.int64), AMOUNTS)
    requests.setflags(write=False)
    replicas.setflags(write=False)
    return requests, replicas


def _claims_key(claims: tuple) -> HashedKey:
    """The key of a stack of masks: the components' claims, hashed once (a claim is a tree
    of frozen dataclasses, whose hash Python works out again at every use)."""
    return HashedKey(claims)


def _masks(snapshot: ClusterSnapshot, components: Sequence[Component], key: HashedKey | None = None) -> np.ndarray:
    """The components' node masks stacked (C x N bools), vouched for and read-only, kept per
    snapshot by the components' claims (`key`: their `_claims_key`, when the caller has it):
    a new job whose components select nodes as an earlier one's did (a new shape, the same
    selectors and tolerations) shares them."""
    if key is None:
        key = _claims_key(tuple(c.shape.claim for c in components))

    def stack() -> np.ndarray:
        masks = vouch("masks", np.stack([snapshot.node_mask(c.shape.claim) for c in components]), FLAGS)
        masks.setflags(write=False)
        return masks

    return MASKS.get(snapshot, key, stack)


class _Packing:
    """Request-side arrays for a list of components (read-only: shared, see `_packing`);
    `rows`: the (requests, replicas) pair when already built (`_Plan`); `claims`: the
    components' `_claims_key`, or `masks` themselves, when known."""

    __slots__ = ("requests", "replicas", "masks", "__weakref__")

    def __init__(
        self,
        snapshot: ClusterSnapshot,
        components: Sequence[Component],
        index: dict[str, int],
        rows: tuple[np.ndarray, np.ndarray] | None = None,
        claims: HashedKey | None = None,
        masks: np.ndarray | None = None,
    ):
        self.requests, self.replicas = rows or _request_arrays(components, index)
        self.masks = _masks(snapshot, components, claims) if masks is None else masks


def _packing_key(components: Sequence[Component], columns: tuple[str, ...]) -> HashedKey:
    """What a `_Packing` depends on: the requests, claims and replicas (not names,
    namespaces or priority classes)."""
    return HashedKey((columns, tuple((c.shape.requests, c.shape.claim, c.replicas) for c in components)))


def _packing(
    snapshot: ClusterSnapshot, components: Sequence[Component], columns: tuple[str, ...], index: dict[str, int]
) -> _Packing:
    """`_Packing` for these components, kept per snapshot by `_packing_key`."""
    return PACKINGS.get(snapshot, _packing_key(components, columns), lambda: _Packing(snapshot, components, index))


def _cleared_ref() -> None:
    """Called like a weak reference whose object is gone: returns None."""
    return None


class _Plan:
    """A component-sets request's snapshot-independent part: its columns, request rows and
    the keys (hashed once) of what is kept per snapshot for it: the masks by its claims,
    the bound (and best mode's eligible pool size) by its shape."""

    __slots__ = ("columns", "index", "rows", "claims", "bound_key", "pool_key", "_last")

    def __init__(self, query: ComponentSetsQuery):
        components = query.components
        shapes = [c.shape for c in components]
        if query.assumed:
            shapes += _assumed_shapes(query.assumed)
        self.columns = _columns(shapes)
        self.index = {name: k for k, name in enumerate(self.columns)}
        self.rows = _request_arrays(components, self.index)
        self.claims = _claims_key(tuple([c.shape.claim for c in components]))
        # The upper bound's key: both modes share it (the same staged relaxation reached from
        # the same first-fit answer; best mode's may be lower, proven by its exact search of a
        # small pool: still a bound for either). It holds the claims' key, whose hash is
        # known, not the claims (hashed again otherwise).
        requests, replicas = self.rows
        self.bound_key = HashedKey(("set bound", self.columns, requests.tobytes(), replicas.tobytes(), self.claims))
        self.pool_key = HashedKey(("eligible pool", self.bound_key))  # best mode's pool size, by the same shape
        # Weak references to a snapshot and to its entries for this plan (the gathered
        # columns, the masks): a plan outlives snapshots and must not keep their arrays alive.
        self._last: tuple = (_cleared_ref, _cleared_ref, _cleared_ref)

    def packing(self, snapshot: ClusterSnapshot, query: ComponentSetsQuery) -> _Packing:
        """The request arrays on `snapshot`: this plan's rows, the masks kept per snapshot."""
        return _Packing(snapshot, query.components, self.index, self.rows, self.claims)

    def arrays(self, snapshot: ClusterSnapshot, query: ComponentSetsQuery) -> tuple[np.ndarray, _Packing]:
        """(available, request arrays) on `snapshot`: the per-snapshot entries found once
        for the newest snapshot this query was asked on (swapped as one tuple: no lock)."""
        if not query.assumed:
            ref, pristine, masks = (ref() for ref in self._last)
            if ref is snapshot and pristine is not None and masks is not None:
                return pristine, _Packing(snapshot, query.components, self.index, self.rows, masks=masks)
        available = _available(snapshot, self.columns, query.assumed, self.index, [c.shape for c in query.components])
        packing = self.packing(snapshot, query)
        if not query.assumed:
            self._last = (weakref.ref(snapshot), weakref.ref(available), weakref.ref(packing.masks))
        return available, packing


def _deduct_assumed(
    snapshot: ClusterSnapshot,
    available: np.ndarray,
    assumed: Sequence[AssumedWorkload],
    columns: tuple[str, ...],
    index: dict[str, int],
) -> None:
    """Place each in-flight workload once with first-fit and keep what it consumed.

    One that does not fit keeps its partial consumption, as in Go: its pods are probably
    already bound and counted.
    """
    for workload in assumed:
        if not workload.components:
            continue
        arrays = _packing(snapshot, workload.components, columns, index)
        before = available.copy() if snapshot.dra_served else None
        kernels.first_fit_sets(available, arrays.requests, arrays.replicas, arrays.masks, 1)
        if before is not None:  # devices it took may be ones other DRA-served names needed
            deduct_shared(snapshot, columns, before, available)


def _available(
    snapshot: ClusterSnapshot,
    columns: tuple[str, ...],
    assumed: Sequence[AssumedWorkload],
    index: dict[str, int],
    own: Iterable[ReplicaShape] = (),
) -> np.ndarray:
    """What the request may use: the snapshot's columns (read-only, shared), less what the
    in-flight workloads take (then a private array). `own`: the job's own shapes (whose DRA
    names contest devices, devices.count_once)."""
    if not any(w.components for w in assumed):
        return _pristine(snapshot, columns)
    pristine = _pristine(snapshot, columns, frozenset(name for shape in own for name, _ in shape.requests))
    available = vouched_copy(pristine)  # first-fit only consumes it down to zero
    _deduct_assumed(snapshot, available, assumed, columns, index)
    available.setflags(write=False)
    return available


def _assumed_shapes(assumed: Sequence[AssumedWorkload]) -> list[ReplicaShape]:
    return [c.shape for w in assumed for c in w.components]


def _best_with_bound(
    snapshot: ClusterSnapshot,
    available: np.ndarray,
    arrays: _Packing,
    query: ComponentSetsQuery,
    key: HashedKey,
    pool_key: HashedKey,
    budget: float | None,
    columns: tuple[str, ...],
) -> kernels.Packing:
    """Best mode, reusing the bound (`key`: `_Plan.bound_key`) worked out for this snapshot
    and shape (either mode), and the size of its eligible pool (best mode's, `pool_key`).
    `columns`: the plan's (whose layout by column a new shape's bound reads)."""
    if query.assumed:
        return kernels.best_sets(available, arrays.requests, arrays.replicas, arrays.masks, MAX_INT32, budget=budget)
    known = cast("int | None", snapshot.peek_derived(key))
    packing = kernels.best_sets(
        available,
        arrays.requests,
        arrays.replicas,
        arrays.masks,
        MAX_INT32,
        budget=budget,
        known_bound=known,
        known_pool=None if known is None else cast("int | None", snapshot.peek_derived(pool_key)),
        by_column=None if known is not None else _by_column(snapshot, columns, available),
    )
    if known is None:
        snapshot.derived(key, lambda: packing.bound)
    if packing.pool >= 0:
        snapshot.derived(pool_key, lambda: packing.pool)
    return packing


def _first_fit_with_bound(
    snapshot: ClusterSnapshot,
    available: np.ndarray,
    arrays: _Packing,
    query: ComponentSetsQuery,
    key: HashedKey,
    columns: tuple[str, ...],
) -> kernels.Packing:
    """First-fit's answer, always computed, with its upper bound, worked out once per
    snapshot and request shape: the scheduler asks the same shapes again and again, and the
    bound (a pass over every node) cost as much as a small job's packing. A shape not seen
    on this snapshot gets both in one kernel call (`kernels.first_fit_with_bound`). In-flight
    (assumed) workloads change what is available, so those requests are not shared."""
    if query.assumed:
        return kernels.first_fit_bounded(
            vouched_copy(available), arrays.requests, arrays.replicas, arrays.masks, MAX_INT32
        )
    known = cast("int | None", snapshot.peek_derived(key))
    if known is not None:
        packing = kernels.first_fit_sets(
            vouched_copy(available), arrays.requests, arrays.replicas, arrays.masks, MAX_INT32
        )
        return packing._replace(bound=known)
    # With no in-flight workloads the bound reads the snapshot's untouched columns.
    packing = kernels.first_fit_with_bound(
        available, arrays.requests, arrays.replicas, arrays.masks, MAX_INT32, _by_column(snapshot, columns, available)
    )
    return packing._replace(bound=snapshot.derived(key, lambda: packing.bound))


class KernelInputs(NamedTuple):
    """What the packing kernels get for a component-set query on a snapshot."""

    available: np.ndarray  # int64 [N, K]: the needed columns, less what in-flight workloads take
    requests: np.ndarray  # int64 [C, K]: one replica of each component (column 0: one pod)
    replicas: np.ndarray  # int64 [C]: replicas per set
    masks: np.ndarray  # bool [C, N]: the nodes each component may use
    upper: int  # the most sets worth packing (the plugin's: int32's maximum)
    columns: tuple[str, ...]  # the K column names: pods, then every resource named, sorted


def kernel_inputs(snapshot: ClusterSnapshot, query: ComponentSetsQuery, vouched: bool = False) -> KernelInputs:
    """The kernels' arrays for `query` on `snapshot`, as the plugin builds them (columns,
    request rows, masks; in-flight workloads deducted with first-fit), but built afresh:
    private, writable, kept nowhere. `vouched`: vouch for them as the plugin does
    (`kernels.vouch`), so the kernels skip their scans over every value."""
    columns = _columns([c.shape for c in query.components] + _assumed_shapes(query.assumed))
    index = {name: k for k, name in enumerate(columns)}
    own = frozenset(name for c in query.components for name, _ in c.shape.requests)
    available = _gather(snapshot, columns, own if any(w.components for w in query.assumed) else None)
    for workload in query.assumed:
        if workload.components:
            before = available.copy() if snapshot.dra_served else None
            kernels.first_fit_sets(
                available,
                _request_rows(workload.components, index),
                np.array([c.replicas for c in workload.components], dtype=np.int64),
                np.stack([snapshot.node_mask(c.shape.claim) for c in workload.components]),
                1,
            )
            if before is not None:
                deduct_shared(snapshot, columns, before, available)
    requests = _request_rows(query.components, index)
    replicas = np.array([c.replicas for c in query.components], dtype=np.int64)
    masks = np.stack([snapshot.node_mask(c.shape.claim) for c in query.components]).reshape(-1, snapshot.num_nodes)
    if vouched:
        vouch("available", available, AMOUNTS)
        vouch("requests", requests, REQUEST_ROWS)
        vouch("replicas", replicas, AMOUNTS)
        vouch("masks", masks, FLAGS)
    return KernelInputs(available, requests, replicas, masks, MAX_INT32, columns)


class NodeResourcePlugin:
    NAME = NAME

    def estimate_replicas(self, ctx: EstimateContext, query: ReplicasQuery) -> PluginResult:
        snapshot = ctx.snapshot
        shape = query.shape or ReplicaShape()
        columns = _columns([shape, *_assumed_shapes(query.assumed)])
        index = {name: k for k, name in enumerate(columns)}
        available = _available(snapshot, columns, query.assumed, index, [shape])
        total = kernels.sum_fit(available, _request_row(shape, index), snapshot.node_mask(shape.claim))
        return PluginResult(min(total, MAX_INT32))

    def estimate_components(self, ctx: EstimateContext, query: ComponentSetsQuery) -> PluginResult:
        if not query.components:
            return PluginResult.noop(REASON_EMPTY_COMPONENTS)
        snapshot = ctx.snapshot
        plan = ctx.caches.plans.get(query, _Plan)
        available, arrays = plan.arrays(snapshot, query)
        if ctx.packing == "first-fit":
            packing = _first_fit_with_bound(snapshot, available, arrays, query, plan.bound_key, plan.columns)
        else:
            packing = _best_with_bound(
                snapshot, available, arrays, query, plan.bound_key, plan.pool_key, ctx.best_budget, plan.columns
            )
        if packing.sets == 0:
            return PluginResult(0, Code.UNSCHEDULABLE, REASON_NO_RESOURCES, detail=packing)
        return PluginResult(packing.sets, detail=packing)
