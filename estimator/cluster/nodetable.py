"""NodeTable: the node rows and resource columns of a ClusterCache, as struct-of-arrays.

The bookkeeping every update of the cache shares (estimator.cluster.cache holds the rest: the
lock, the version, the pod table, quotas, workloads, DRA objects and the snapshot):

- A *row* is Karmada's NodeInfo: one per node name that has a Node object or counted pods.
  Pods bound to a node we have not seen yet get a row without a node (counted once the
  node appears); a deleted node's row lives on while pods still count on it. Freed rows
  are reused; arrays grow geometrically in rows and in resource columns.
- `_allocatable[row, col]` and `_requested[row, col]`; column 0 is `pods`, so requested
  column 0 is the number of counted pods and available = max(allocatable - requested, 0)
  holds for every column alike. Per-node sums that would leave int64 are kept exactly on
  the side (`_excess`) and show as int64 max.
- Node classes: nodes with equal (labels, taints, cordon) share a class id, reference
  counted, ids reused.
- Order: `NodeTree` (estimator/cluster/nodetree.py) keeps Karmada's zones; what a snapshot
  caches of the order, hostnames, classes and columns is dropped here when they change.

ClusterCache is a NodeTable: these methods run under its lock, on its own fields.
`ExportedState` is the whole cache's state as plain values and arrays (`export()`,
`restore()`); `_restore_table` takes the table's part of it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from itertools import chain

import numpy as np

from estimator.cluster.nodetree import NodeTree
from estimator.core.model import NodeClass
from estimator.core.resources import MAX_INT64, PODS

_INITIAL_ROWS = 64
_INITIAL_COLUMNS = 8
# _add_requested_batch: sums that could come near int64 are added exactly, in Python, as the
# per-record path does.
_SAFE_SUM = float(1 << 62)


@dataclass
class _NodeState:
    """What the cache remembers of a Node object, besides its arrays."""

    zone: str
    class_id: int
    hostname: str | None


@dataclass
class ExportedState:
    """A ClusterCache's nodes and counted pods as plain values and arrays (`export()`,
    `restore()`): everything but the few-record kinds (quotas, workloads, DRA objects) and
    the unschedulable pods, which a saver keeps as objects. Rows, columns and class ids
    are the cache's own numbers, free ones included, so a restored cache reuses them as
    the original would."""

    version: int
    columns: list[str]  # resource column names, column 0 `pods`
    allocatable: np.ndarray  # int64[capacity, >= len(columns)]
    requested: np.ndarray  # int64, as allocatable
    row_class: np.ndarray  # int32[capacity]: a node row's class id
    next_row: int  # rows ever used
    free_rows: list[int]
    row_names: list  # [next_row]: node name, None for a free row
    row_hostnames: list  # [next_row]
    row_zone: np.ndarray  # int32[next_row]: index into `zones`, -1 for a row without a Node
    zones: list[str]
    tree: list  # NodeTree.rows_by_zone()
    classes: list  # NodeClass by id (a freed id keeps its last class)
    class_refs: list[int]
    free_class_ids: list[int]
    excess: dict[tuple[int, int], int]  # (row, column) -> request sum beyond int64
    # (namespace, name) -> (row, ((column, amount), ...)). export(): the cache's table;
    # restore(): a table, or a function building it when first needed (estimates read the
    # arrays only, so a restored server may never build it).
    pods: Mapping | Callable[[], dict]


class NodeTable:
    """Rows, columns, node classes and the node order (see the module docstring)."""

    def __init__(self) -> None:
        # Resource columns.
        self._column_index: dict[str, int] = {PODS: 0}
        self._column_names: list[str] = [PODS]
        # Rows.
        self._rows: dict[str, int] = {}
        self._free_rows: list[int] = []
        self._row_names = np.empty(_INITIAL_ROWS, dtype=object)
        self._row_hostnames = np.empty(_INITIAL_ROWS, dtype=object)
        self._row_nodes: list[_NodeState | None] = [None] * _INITIAL_ROWS
        self._allocatable = np.zeros((_INITIAL_ROWS, _INITIAL_COLUMNS), dtype=np.int64)
        self._requested = np.zeros((_INITIAL_ROWS, _INITIAL_COLUMNS), dtype=np.int64)
        self._row_class = np.zeros(_INITIAL_ROWS, dtype=np.int32)
        self._next_row = 0
        # Node classes (reference counted; freed ids are reused).
        self._class_ids: dict[NodeClass, int] = {}
        self._classes: list[NodeClass] = []
        self._class_refs: list[int] = []
        self._free_class_ids: list[int] = []
        # Order and the things cached with it.
        self._tree = NodeTree()
        self._order: tuple[np.ndarray, tuple[str, ...]] | None = None
        self._hostnames: tuple[str | None, ...] | None = None
        # Name and hostname look-ups a snapshot builds on first use; they depend only on the
        # order and the hostnames, so snapshots share them until either changes.
        self._positions: dict = {}
        self._classes_tuple: tuple[NodeClass, ...] | None = None
        self._resource_names: tuple[str, ...] | None = None
        # Per-node request sums beyond int64, exactly: (row, column) -> sum (see _add_requested).
        self._excess: dict[tuple[int, int], int] = {}

    # --- bookkeeping (lock held) ---

    def _column(self, name: str) -> int:
        column = self._column_index.get(name)
        if column is None:
            column = len(self._column_names)
            if column == self._allocatable.shape[1]:
                self._allocatable = _grow(self._allocatable, axis=1)
                self._requested = _grow(self._requested, axis=1)
            self._column_index[name] = column
            self._column_names.append(name)
            self._resource_names = None
        return column

    def _row(self, name: str) -> int:
        """The row of node `name`, created (without a node) if new."""
        row = self._rows.get(name)
        if row is not None:
            return row
        if self._free_rows:
            row = self._free_rows.pop()
        else:
            row = self._next_row
            self._next_row += 1
            if row == len(self._row_nodes):
                self._allocatable = _grow(self._allocatable, axis=0)
                self._requested = _grow(self._requested, axis=0)
                self._row_class = _grow(self._row_class, axis=0)
                self._row_names = _grow(self._row_names, axis=0)
                self._row_hostnames = _grow(self._row_hostnames, axis=0)
                self._row_nodes.extend([None] * row)
        self._rows[name] = row
        self._row_names[row] = name
        return row

    def _release_row_if_unused(self, row: int) -> None:
        if self._row_nodes[row] is None and self._requested[row, 0] == 0:
            del self._rows[self._row_names[row]]
            self._row_names[row] = None
            self._allocatable[row] = 0
            self._requested[row] = 0
            if self._excess:
                for cell in [cell for cell in self._excess if cell[0] == row]:
                    del self._excess[cell]
            self._free_rows.append(row)

    def _acquire_class(self, node_class: NodeClass) -> int:
        class_id = self._class_ids.get(node_class)
        if class_id is None:
            if self._free_class_ids:
                class_id = self._free_class_ids.pop()
                self._classes[class_id] = node_class
                self._class_refs[class_id] = 0
            else:
                class_id = len(self._classes)
                self._classes.append(node_class)
                self._class_refs.append(0)
            self._class_ids[node_class] = class_id
            self._classes_tuple = None
        self._class_refs[class_id] += 1
        return class_id

    def _release_class(self, class_id: int) -> None:
        self._class_refs[class_id] -= 1
        if self._class_refs[class_id] == 0:
            del self._class_ids[self._classes[class_id]]
            self._free_class_ids.append(class_id)

    def _set_node(
        self, name: str, allocatable: Mapping[str, int], node_class: NodeClass, hostname: str | None, zone: str
    ) -> bool:
        row = self._row(name)
        columns = [(self._column(resource), amount) for resource, amount in allocatable.items()]
        values = np.zeros(self._allocatable.shape[1], dtype=np.int64)
        for column, amount in columns:
            values[column] = amount
        state = self._row_nodes[row]
        class_id = self._acquire_class(node_class)
        if state is not None:
            self._release_class(state.class_id)
            if (
                state.class_id == class_id
                and state.zone == zone
                and state.hostname == hostname
                and np.array_equal(self._allocatable[row], values)
            ):
                return False  # a status heartbeat: nothing the estimates look at changed
            if state.zone != zone:
                self._tree.remove(state.zone, name)
                self._tree.add(zone, name, row)  # moves to the end of its new zone
                self._order = None
        else:
            self._tree.add(zone, name, row)
            self._order = None
        if state is None or state.hostname != hostname:
            self._hostnames = None
        self._row_nodes[row] = _NodeState(zone, class_id, hostname)
        self._row_class[row] = class_id
        self._row_hostnames[row] = hostname
        self._allocatable[row] = values
        return True

    def _remove_node(self, name: str) -> bool:
        row = self._rows.get(name)
        if row is None:
            return False
        state = self._row_nodes[row]
        if state is None:
            return False
        self._tree.remove(state.zone, name)
        self._release_class(state.class_id)
        self._row_nodes[row] = None
        self._row_hostnames[row] = None
        self._allocatable[row] = 0
        self._release_row_if_unused(row)  # kept while pods still count on it
        self._order = None
        return True

    def _add_requested(self, row: int, column: int, amount: int) -> None:
        """requested[row, column] += amount, exactly: a sum beyond int64 is kept in `_excess`
        and the array holds int64 max (nothing fits there) until it comes back in range."""
        cell = (row, column)
        excess = self._excess.get(cell) if self._excess else None
        total = (int(self._requested[row, column]) if excess is None else excess) + amount
        if total > MAX_INT64:
            self._excess[cell] = total
            self._requested[row, column] = MAX_INT64
        else:
            if excess is not None:
                del self._excess[cell]
            self._requested[row, column] = total

    def _add_requested_batch(self, pod_rows: list[int], amounts: list[tuple]) -> None:
        """For each pod counted in bulk (its row, its ((column, amount), ...)): requested[row, 0]
        += 1 and its amounts added, with numpy; exactly, as `_add_requested`, when a sum could
        come near int64."""
        rows = np.asarray(pod_rows, dtype=np.int64)
        requested = self._requested
        np.add.at(requested[:, 0], rows, 1)
        sizes = np.fromiter(map(len, amounts), dtype=np.int64, count=len(amounts))
        flat = np.fromiter(
            chain.from_iterable(chain.from_iterable(amounts)), dtype=np.int64, count=2 * int(sizes.sum())
        ).reshape(-1, 2)
        if len(flat):
            # No cell can come near int64 if the whole batch and the largest cell cannot;
            # otherwise every sum is made exactly, in Python, as the per-record path does.
            bound = float(flat[:, 1].astype(np.float64).sum()) + float(requested.max())
            if self._excess or bound >= _SAFE_SUM:
                for row, pod_amounts in zip(pod_rows, amounts, strict=True):
                    for column, amount in pod_amounts:
                        self._add_requested(row, column, amount)
            else:
                np.add.at(requested, (np.repeat(rows, sizes), flat[:, 0]), flat[:, 1])

    # --- restoring (the objects cache) ---

    def _restore_table(self, state: ExportedState) -> None:
        """The table `state` describes, in place of this fresh one (ValueError if its parts do
        not fit together)."""
        rows, allocatable, requested = state.next_row, state.allocatable, state.requested
        capacity = len(allocatable)
        if (
            allocatable.dtype != np.int64
            or requested.shape != allocatable.shape
            or allocatable.ndim != 2
            or not rows <= capacity
            or len(state.columns) > allocatable.shape[1]
            or state.row_class.shape != (capacity,)
            or state.row_zone.shape != (rows,)
        ):
            raise ValueError("array shapes do not fit together")
        if len(state.row_names) != rows or len(state.row_hostnames) != rows:
            raise ValueError("row tables do not fit the arrays")
        self._column_names = list(state.columns)
        self._column_index = {name: i for i, name in enumerate(self._column_names)}
        self._allocatable = np.array(allocatable, dtype=np.int64)
        self._requested = np.array(requested, dtype=np.int64)
        self._row_class = np.array(state.row_class, dtype=np.int32)
        self._next_row = rows
        self._free_rows = list(state.free_rows)
        self._row_names = np.empty(capacity, dtype=object)
        self._row_names[:rows] = state.row_names
        self._row_hostnames = np.empty(capacity, dtype=object)
        self._row_hostnames[:rows] = state.row_hostnames
        self._rows = {name: row for row, name in enumerate(state.row_names) if name is not None}
        self._classes = list(state.classes)
        self._class_refs = list(state.class_refs)
        self._free_class_ids = list(state.free_class_ids)
        free = set(self._free_class_ids)
        self._class_ids = {c: i for i, c in enumerate(self._classes) if i not in free}
        row_class = self._row_class.tolist()
        self._row_nodes = [None] * capacity
        for row, zone in enumerate(state.row_zone.tolist()):
            if zone >= 0:
                self._row_nodes[row] = _NodeState(state.zones[zone], row_class[row], state.row_hostnames[row])
        self._tree = NodeTree.restore(state.tree, state.row_names)
        self._excess = dict(state.excess)


def _grow(array: np.ndarray, axis: int) -> np.ndarray:
    """A copy twice as long along `axis`, zero (or None) filled."""
    shape = list(array.shape)
    shape[axis] *= 2
    grown = np.zeros(shape, dtype=array.dtype) if array.dtype != object else np.empty(shape, dtype=object)
    grown[tuple(slice(0, n) for n in array.shape)] = array
    return grown
