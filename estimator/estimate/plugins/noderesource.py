"""Node resources: how many replicas / component sets the nodes can hold.

Mirrors Karmada's NodeResourceEstimator. Work that depends only on the request (columns,
request rows, node masks) is done once here; the per-node arithmetic runs in kernels over
a private copy of just the columns the request needs. A component-sets answer carries an
upper bound (`Packing.bound`, in both modes), so it says whether it is proven optimal.
"""

from __future__ import annotations

from typing import Iterable, Sequence

import numpy as np

from estimator import kernels
from estimator.core.model import AssumedWorkload, Component, ComponentSetsQuery, ReplicaShape, ReplicasQuery
from estimator.core.resources import MAX_INT32, PODS
from estimator.core.snapshot import ClusterSnapshot
from estimator.estimate.framework import Code, EstimateContext, PluginResult

NAME = "NodeResourceEstimator"

REASON_EMPTY_COMPONENTS = f"{NAME} received empty components list"
REASON_NO_RESOURCES = "no enough resources"

PACKING_MODES = ("best", "first-fit")


def _columns(shapes: Iterable[ReplicaShape]) -> tuple[str, ...]:
    """pods first, then every resource any shape asks for, in a stable order."""
    names = sorted({name for shape in shapes for name, _ in shape.requests})
    return (PODS, *names)


def _gather(snapshot: ClusterSnapshot, columns: Sequence[str]) -> np.ndarray:
    """A private, contiguous copy of the requested columns; unknown resources are zeros."""
    sources = [snapshot.column(name) for name in columns]
    if None not in sources:
        # One gather into a new C-contiguous array instead of a strided copy per column.
        return np.take(snapshot.available, sources, axis=1)
    available = np.zeros((snapshot.num_nodes, len(columns)), dtype=np.int64)
    for k, name in enumerate(columns):
        source = snapshot.column(name)
        if source is not None:
            available[:, k] = snapshot.available[:, source]
    return available


def _request_row(shape: ReplicaShape, index: dict[str, int]) -> np.ndarray:
    row = np.zeros(len(index), dtype=np.int64)
    row[0] = 1  # every replica takes one pod slot
    for name, amount in shape.requests:
        row[index[name]] = amount
    return row


class _Packing:
    """Request-side arrays for a list of components, built once per request."""

    def __init__(self, snapshot: ClusterSnapshot, components: Sequence[Component], index: dict[str, int]):
        self.requests = np.stack([_request_row(c.shape, index) for c in components])
        self.replicas = np.array([c.replicas for c in components], dtype=np.int64)
        self.masks = np.stack([snapshot.node_mask(c.shape.claim) for c in components])


def _deduct_assumed(
    snapshot: ClusterSnapshot, available: np.ndarray, assumed: Sequence[AssumedWorkload], index: dict[str, int]
) -> None:
    """Place each in-flight workload once with first-fit and keep what it consumed.

    One that does not fit keeps its partial consumption, as in Go: its pods are probably
    already bound and counted.
    """
    for workload in assumed:
        if not workload.components:
            continue
        arrays = _Packing(snapshot, workload.components, index)
        kernels.first_fit_sets(available, arrays.requests, arrays.replicas, arrays.masks, 1)


def _assumed_shapes(assumed: Sequence[AssumedWorkload]) -> list[ReplicaShape]:
    return [c.shape for w in assumed for c in w.components]


def _bound_key(arrays: _Packing, query: ComponentSetsQuery, columns: tuple[str, ...]) -> tuple:
    """Snapshot-derived key of a request shape's upper bound. Both modes share it: best
    mode's bound is first-fit's (the same staged relaxation, reached from the same
    first-fit answer)."""
    return ("set bound", columns, arrays.requests.tobytes(), arrays.replicas.tobytes(),
            tuple(c.shape.claim for c in query.components))


def _best_with_bound(snapshot: ClusterSnapshot, available: np.ndarray, arrays: _Packing,
                     query: ComponentSetsQuery, columns: tuple[str, ...], budget: float | None) -> kernels.Packing:
    """Best mode, reusing the bound worked out for this snapshot and shape (either mode)."""
    if query.assumed:
        return kernels.best_sets(available, arrays.requests, arrays.replicas, arrays.masks, MAX_INT32, budget=budget)
    key = _bound_key(arrays, query, columns)
    packing = kernels.best_sets(available, arrays.requests, arrays.replicas, arrays.masks, MAX_INT32,
                                budget=budget, known_bound=snapshot._derived.get(key))
    snapshot.derived(key, lambda: packing.bound)
    return packing


def _first_fit_with_bound(snapshot: ClusterSnapshot, available: np.ndarray, arrays: _Packing,
                          query: ComponentSetsQuery, columns: tuple[str, ...]) -> kernels.Packing:
    """First-fit's answer, always computed, with its upper bound, worked out once per
    snapshot and request shape: the scheduler asks the same shapes again and again, and the
    bound (a pass over every node) cost as much as a small job's packing. In-flight
    (assumed) workloads change what is available, so those requests are not shared."""
    if query.assumed:
        return kernels.first_fit_bounded(available, arrays.requests, arrays.replicas, arrays.masks, MAX_INT32)
    key = _bound_key(arrays, query, columns)
    before = []

    def bound() -> int:
        return kernels.set_bound(before[0], arrays.requests, arrays.replicas, arrays.masks, MAX_INT32,
                                 packing.sets, packing.limiting)

    known = snapshot._derived.get(key)
    if known is None:
        before.append(available.copy())  # first_fit_sets consumes `available`
    packing = kernels.first_fit_sets(available, arrays.requests, arrays.replicas, arrays.masks, MAX_INT32)
    return packing._replace(bound=known if known is not None else snapshot.derived(key, bound))


class NodeResourcePlugin:
    NAME = NAME

    def estimate_replicas(self, ctx: EstimateContext, query: ReplicasQuery) -> PluginResult:
        snapshot = ctx.snapshot
        shape = query.shape or ReplicaShape()
        columns = _columns([shape, *_assumed_shapes(query.assumed)])
        index = {name: k for k, name in enumerate(columns)}
        available = _gather(snapshot, columns)
        _deduct_assumed(snapshot, available, query.assumed, index)
        total = kernels.sum_fit(available, _request_row(shape, index), snapshot.node_mask(shape.claim))
        return PluginResult(min(total, MAX_INT32))

    def estimate_components(self, ctx: EstimateContext, query: ComponentSetsQuery) -> PluginResult:
        if not query.components:
            return PluginResult.noop(REASON_EMPTY_COMPONENTS)
        snapshot = ctx.snapshot
        shapes = [c.shape for c in query.components] + _assumed_shapes(query.assumed)
        columns = _columns(shapes)
        index = {name: k for k, name in enumerate(columns)}
        available = _gather(snapshot, columns)
        _deduct_assumed(snapshot, available, query.assumed, index)
        arrays = _Packing(snapshot, query.components, index)
        if ctx.packing == "first-fit":
            packing = _first_fit_with_bound(snapshot, available, arrays, query, columns)
        else:
            packing = _best_with_bound(snapshot, available, arrays, query, columns, ctx.best_budget)
        if packing.sets == 0:
            return PluginResult(0, Code.UNSCHEDULABLE, REASON_NO_RESOURCES, detail=packing)
        return PluginResult(packing.sets, detail=packing)
