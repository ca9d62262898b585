"""ClusterCache: the mutable model of one member cluster, as struct-of-arrays.

Fed object by object (object files, or the list/watch loop); one event costs
O(resources), never O(nodes). `snapshot()` hands estimates a consistent immutable copy in
Karmada's node order, rebuilt only when something changed (a version counter).

Layout:
- A *row* is Karmada's NodeInfo: one per node name that has a Node object or counted pods.
  Pods bound to a node we have not seen yet get a row without a node (counted once the
  node appears); a deleted node's row lives on while pods still count on it. Freed rows
  are reused; arrays grow geometrically in rows and in resource columns.
- `_allocatable[row, col]` and `_requested[row, col]`; column 0 is `pods`, so requested
  column 0 is the number of counted pods and available = max(allocatable - requested, 0)
  holds for every column alike.
- Node classes: nodes with equal (labels, taints, cordon) share a class id, reference
  counted, ids reused. kubernetes.io/hostname is kept per node instead (it is unique per
  node and would make every class a singleton; see ClusterSnapshot.hostnames).
- Order: `NodeTree` (estimator/cluster/nodetree.py) keeps Karmada's zones; the round-robin order is computed with numpy
  and cached until a node is added or removed or changes zone.

Objects are parsed into checked records (estimator/core/records.py) before the lock is taken,
so a malformed object changes nothing and an estimate never sees half an update. Parsing
also checks every amount (no negative counts; a pod asking for more than int64 in total
saturates at int64, as a request nothing can fit), so applying a record cannot fail
half-way. Per-node sums that would leave
int64 are kept exactly on the side (`_excess`) and show as int64 max, so removing the pod
again restores the row to the unit. `replace_kind` applies a whole relist in one lock
hold: a snapshot shows the state before it or after it, never a mix.

Loaders get bulk doors instead of these fields: `bulk_writer()` (many new pods and nodes
of a load, request sums added a batch at a time; estimator.cluster.bulkload) and
`export()` / `restore()` (the state as plain values and arrays, for the objects cache,
estimator.cluster.objectscache).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from itertools import chain
from typing import Any, cast

import numpy as np

from estimator.cluster.devicestate import KINDS as DEVICE_KINDS
from estimator.cluster.devicestate import DeviceState
from estimator.cluster.nodetree import NodeTree
from estimator.core.model import NodeClass
from estimator.core.records import KINDS, ParsedNode, PodRecord, record_key
from estimator.core.resources import MAX_INT64, PODS
from estimator.core.snapshot import ClusterSnapshot, QuotaRecord
from estimator.core.workloads import UnschedulablePod, WorkloadState

__all__ = [
    "BulkWriter",
    "ClusterCache",
    "ExportedState",
    "KINDS",
]  # KINDS: the kinds a cache holds, also imported from here

_INITIAL_ROWS = 64
_INITIAL_COLUMNS = 8
# BulkWriter.flush: sums that could come near int64 are added exactly, in Python, as the
# per-record path does.
_SAFE_SUM = float(1 << 62)


# --- the cache --------------------------------------------------------------------------


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


class ClusterCache:
    def __init__(self, device_matcher=None) -> None:
        """`device_matcher`: how a DeviceClass's selectors judge a device (default: CEL; tests
        pass a plain function, see estimator.cluster.devicestate)."""
        self._lock = threading.Lock()
        self._version = 0
        self._updated_at = 0.0
        self._snapshot: ClusterSnapshot | None = None
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
        # Counted pods: (namespace, name) -> (row, ((column, amount), ...)); see `_pods`.
        self._pod_table: dict[tuple[str, str], tuple[int, tuple[tuple[int, int], ...]]] = {}
        self._pending_pods: Callable[[], dict] | None = None  # builds _pod_table on first use (restore)
        self._quotas: dict[tuple[str, str], QuotaRecord] = {}
        self._quotas_by_namespace: Mapping[str, tuple[QuotaRecord, ...]] | None = {}
        self._workloads = WorkloadState()
        self._devices = (
            DeviceState(device_matcher) if device_matcher else DeviceState()
        )  # DRA objects; their counts join the snapshot's columns
        self._device_overlay: tuple | None = None  # (order, devices version, overlay) see _with_devices
        # Per-node request sums beyond int64, exactly: (row, column) -> sum (see _add_requested).
        self._excess: dict[tuple[int, int], int] = {}
        self.busy = False  # a relist is being applied (replace_kind); read without the lock

    @property
    def _pods(self) -> dict[tuple[str, str], tuple[int, tuple[tuple[int, int], ...]]]:
        """The counted pods. A state restored from disk builds this table only when an
        event or a key listing needs it: estimates read the arrays, never the table."""
        if self._pending_pods is not None:
            self._pod_table, self._pending_pods = self._pending_pods(), None
        return self._pod_table

    # --- bookkeeping (lock held) ---

    def _changed(self) -> None:
        self._version += 1
        self._updated_at = time.time()

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

    # --- applying checked records (lock held; none of these can fail half-way) ---

    def _apply_node(self, node: ParsedNode) -> bool:
        return self._set_node(node.name, node.allocatable, node.node_class, node.hostname, node.zone)

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

    def _apply_pod(self, record: PodRecord) -> bool:
        key = (record.namespace, record.name)
        changed = self._workloads.set_pod(record.namespace, record.name, record.unschedulable)
        old = self._pods.get(key)
        counted = bool(record.node_name)
        amounts = tuple((self._column(r), amount) for r, amount in record.requests) if counted else ()
        if old is None or not counted or old != (self._rows.get(record.node_name), amounts):
            if old is not None:
                self._uncount(key, old)  # first: it may free the row we are about to use
            if counted:
                self._count(key, (self._row(record.node_name), amounts))
            changed = changed or old is not None or counted
        return changed

    def _remove_pod(self, key: tuple[str, str]) -> bool:
        changed = self._workloads.set_pod(key[0], key[1], None)
        old = self._pods.get(key)
        if old is not None:
            self._uncount(key, old)
            changed = True
        return changed

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

    def _count(self, key: tuple[str, str], record: tuple[int, tuple[tuple[int, int], ...]]) -> None:
        row, amounts = record
        self._requested[row, 0] += 1
        for column, amount in amounts:
            self._add_requested(row, column, amount)
        self._pods[key] = record

    def _uncount(self, key: tuple[str, str], record: tuple[int, tuple[tuple[int, int], ...]]) -> None:
        row, amounts = record
        self._requested[row, 0] -= 1
        for column, amount in amounts:
            self._add_requested(row, column, -amount)
        del self._pods[key]
        self._release_row_if_unused(row)

    def _apply_quota(self, record: QuotaRecord) -> bool:
        key = (record.namespace, record.name)
        if self._quotas.get(key) == record:
            return False
        self._quotas[key] = record
        self._quotas_by_namespace = None
        return True

    def _remove_quota(self, key: tuple[str, str]) -> bool:
        if self._quotas.pop(key, None) is None:
            return False
        self._quotas_by_namespace = None
        return True

    def _apply(self, kind: str, record) -> bool:
        if kind == "Pod":
            return self._apply_pod(record)
        if kind == "Node":
            return self._apply_node(record)
        if kind == "ResourceQuota":
            return self._apply_quota(record)
        if kind == "ReplicaSet":
            return self._workloads.set_replicaset(record.namespace, record.name, record)
        if kind == "Deployment":
            return self._workloads.set_deployment(record.namespace, record.name, record)
        if kind == "DeviceClass":
            return self._devices.set_class(record.name, record)
        if kind == "ResourceSlice":
            return self._devices.set_slice(record.name, record)
        if kind == "ResourceClaim":
            return self._devices.set_claim((record.namespace, record.name), record)
        raise ValueError(f"unknown kind {kind!r}")

    def _remove(self, kind: str, key) -> bool:
        if kind == "Pod":
            return self._remove_pod(key)
        if kind == "Node":
            return self._remove_node(key)
        if kind == "ResourceQuota":
            return self._remove_quota(key)
        if kind == "ReplicaSet":
            return self._workloads.set_replicaset(key[0], key[1], None)
        if kind == "Deployment":
            return self._workloads.set_deployment(key[0], key[1], None)
        if kind == "DeviceClass":
            return key in self._devices.classes and self._devices.set_class(key, None)
        if kind == "ResourceSlice":
            return key in self._devices.slices and self._devices.set_slice(key, None)
        if kind == "ResourceClaim":
            return key in self._devices.claims and self._devices.set_claim(key, None)
        raise ValueError(f"unknown kind {kind!r}")

    # --- the update API ---

    def apply(self, kind: str, record) -> None:
        """Apply a record from `parse_object(kind, ...)`."""
        with self._lock:
            if self._apply(kind, record):
                self._changed()

    def delete(self, kind: str, key) -> None:
        """Remove the object `key` (a node name, or (namespace, name)) of `kind`, if held."""
        with self._lock:
            if self._remove(kind, key):
                self._changed()

    def replace_kind(self, kind: str, records, keep=()) -> int:
        """Make `records` the whole of `kind` in one step (a relist): apply each, keep the keys
        in `keep` as they are (listed, but malformed: their last good state stays), remove
        every other key. Returns how many were removed. One lock hold, one version: an
        estimate sees the state before the relist or after it, never pages of it."""
        listed = set(keep)
        self.busy = True
        try:
            with self._lock:
                changed = False
                for record in records:
                    listed.add(record_key(kind, record))
                    changed = self._apply(kind, record) or changed
                stale = self._keys(kind) - listed
                for key in stale:
                    changed = self._remove(kind, key) or changed
                if changed:
                    self._changed()
                return len(stale)
        finally:
            self.busy = False

    def bulk_writer(self) -> BulkWriter:
        """A writer of many new pods and nodes at once, for a cache no one reads yet (a load
        in progress): see BulkWriter."""
        return BulkWriter(self)

    # --- saving and restoring (the objects cache, estimator.cluster.objectscache) ---

    def export(self) -> ExportedState:
        """The whole state as plain values and arrays, of a cache that no longer changes (a
        finished load, not yet handed out: the lock is not taken, as a forked writer must
        not wait for a lock its parent's threads could have held at the fork). The arrays
        and the pod table are the cache's own, not copies."""
        rows = self._next_row
        zones: dict[str, int] = {}
        row_zone = np.full(rows, -1, dtype=np.int32)
        for row, state in enumerate(self._row_nodes[:rows]):
            if state is not None:
                row_zone[row] = zones.setdefault(state.zone, len(zones))
        return ExportedState(
            version=self._version,
            columns=list(self._column_names),
            allocatable=self._allocatable,
            requested=self._requested,
            row_class=self._row_class,
            next_row=rows,
            free_rows=list(self._free_rows),
            row_names=self._row_names[:rows].tolist(),
            row_hostnames=self._row_hostnames[:rows].tolist(),
            row_zone=row_zone,
            zones=list(zones),
            tree=self._tree.rows_by_zone(),
            classes=list(self._classes),
            class_refs=list(self._class_refs),
            free_class_ids=list(self._free_class_ids),
            excess=dict(self._excess),
            pods=self._pods,
        )

    @classmethod
    def restore(
        cls,
        state: ExportedState,
        records: Iterable[tuple[str, Any]] = (),
        unschedulable: Iterable[tuple[str, str, UnschedulablePod | None]] = (),
    ) -> ClusterCache:
        """The cache `export()` described (ValueError if its parts do not fit together), then
        `records` ((kind, record) of the kinds export() does not hold: quotas, workloads,
        DRA objects) applied in order, and the unschedulable pods set ((namespace, name,
        record), None: no longer) without counting them again. Ends at `state.version`."""
        cache = cls()
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
        cache._column_names = list(state.columns)
        cache._column_index = {name: i for i, name in enumerate(cache._column_names)}
        cache._allocatable = np.array(allocatable, dtype=np.int64)
        cache._requested = np.array(requested, dtype=np.int64)
        cache._row_class = np.array(state.row_class, dtype=np.int32)
        cache._next_row = rows
        cache._free_rows = list(state.free_rows)
        cache._row_names = np.empty(capacity, dtype=object)
        cache._row_names[:rows] = state.row_names
        cache._row_hostnames = np.empty(capacity, dtype=object)
        cache._row_hostnames[:rows] = state.row_hostnames
        cache._rows = {name: row for row, name in enumerate(state.row_names) if name is not None}
        cache._classes = list(state.classes)
        cache._class_refs = list(state.class_refs)
        cache._free_class_ids = list(state.free_class_ids)
        free = set(cache._free_class_ids)
        cache._class_ids = {c: i for i, c in enumerate(cache._classes) if i not in free}
        row_class = cache._row_class.tolist()
        cache._row_nodes = [None] * capacity
        for row, zone in enumerate(state.row_zone.tolist()):
            if zone >= 0:
                cache._row_nodes[row] = _NodeState(state.zones[zone], row_class[row], state.row_hostnames[row])
        cache._tree = NodeTree.restore(state.tree, state.row_names)
        cache._excess = dict(state.excess)
        if callable(state.pods):
            cache._pending_pods = state.pods
        else:
            cache._pod_table = dict(state.pods)
        for kind, record in records:
            cache._apply(kind, record)
        for namespace, name, pod in unschedulable:
            cache._workloads.set_pod(namespace, name, pod)
        cache._version = state.version
        cache._updated_at = time.time()
        return cache

    # --- reading ---

    @property
    def version(self) -> int:
        return self._version

    def keys(self, kind: str) -> set:
        """The keys of every object of `kind` the cache holds something for: node names, or
        (namespace, name) for the namespaced kinds. A list/watch relist deletes the ones the
        API server no longer lists. Pods count when bound and not terminal, or when they are
        unschedulable; other pods leave nothing behind, so they are not keys either.
        """
        with self._lock:
            return self._keys(kind)

    def _keys(self, kind: str) -> set:
        if kind == "Node":
            return {name for name, row in self._rows.items() if self._row_nodes[row] is not None}
        if kind == "ResourceQuota":
            return set(self._quotas)
        if kind in DEVICE_KINDS:
            return self._devices.keys(kind)
        if kind not in ("Pod", "ReplicaSet", "Deployment"):
            raise ValueError(f"unknown kind {kind!r}")
        index = self._workloads.index()
        by_namespace: Mapping[str, Mapping[str, Any]]
        if kind == "Pod":
            keys = set(self._pods)
            by_namespace = index.unschedulable
        else:
            keys = set()
            by_namespace = index.replicasets if kind == "ReplicaSet" else index.deployments
        for namespace, records in by_namespace.items():
            keys.update((namespace, name) for name in records)
        return keys

    def device_classes_failing(self) -> set[str]:
        """DeviceClasses whose selectors could not be evaluated at the last count (none of the
        devices count for them)."""
        with self._lock:
            self._devices.counts()
            return set(self._devices.failed_classes)

    def stats(self) -> dict[str, int]:
        """Sizes for logs and metrics."""
        with self._lock:
            return {
                "nodes": len(self._tree),
                "rows": len(self._rows),
                "rows_ever_used": self._next_row,
                "counted_pods": len(self._pods),
                "node_classes": len(self._class_ids),
                "resources": len(self._column_names),
                "quotas": len(self._quotas),
                **self._workloads.counts(),
            }

    def snapshot(self) -> ClusterSnapshot:
        """An immutable, consistent copy in Karmada's node order (reused while unchanged)."""
        with self._lock:
            if self._snapshot is None or self._snapshot.version != self._version:
                self._snapshot = self._build_snapshot()
            return self._snapshot

    def _build_snapshot(self) -> ClusterSnapshot:
        if self._order is None:
            rows = self._tree.order()
            self._order = (rows, tuple(self._row_names[rows].tolist()))
            self._hostnames = None
        rows, names = self._order
        if self._hostnames is None:
            self._hostnames = tuple(self._row_hostnames[rows].tolist())
            self._positions = {}
        if self._classes_tuple is None:
            self._classes_tuple = tuple(self._classes)
        if self._resource_names is None:
            self._resource_names = tuple(self._column_names)
        if self._quotas_by_namespace is None:
            grouped: dict[str, list[QuotaRecord]] = {}
            for (namespace, _), record in sorted(self._quotas.items()):
                grouped.setdefault(namespace, []).append(record)
            self._quotas_by_namespace = {ns: tuple(records) for ns, records in grouped.items()}
        width = len(self._column_names)
        allocatable = self._allocatable[rows, :width]
        available = allocatable - self._requested[rows, :width]
        np.maximum(available, 0, out=available)
        resource_names = self._resource_names
        dra_served: dict = {}
        device_groups: dict = {}
        dra_aliases: dict = {}
        if self._devices.active:
            allocatable, available, resource_names, dra_served, device_groups = self._with_devices(
                allocatable, available, names, resource_names
            )
            dra_aliases = self._devices.aliases()
        return ClusterSnapshot(
            version=self._version,
            node_names=names,
            resource_names=resource_names,
            allocatable=allocatable,
            available=available,
            node_class=self._row_class[rows],
            classes=self._classes_tuple,
            quotas=self._quotas_by_namespace,
            workloads=self._workloads.index(),
            updated_at=self._updated_at,
            hostnames=self._hostnames,
            dra_served=dra_served,
            device_groups=device_groups,
            dra_aliases=dra_aliases,
            _positions=self._positions,
        )

    def _with_devices(
        self, allocatable: np.ndarray, available: np.ndarray, names: tuple[str, ...], resource_names: tuple[str, ...]
    ):
        """The columns with DRA-served resources added (see estimator.core.devices): on a node
        whose allocatable has none of a served resource, its devices of the class, less those
        allocated, are what is free. A served resource no node advertises becomes a new column.
        The overlay (positions and amounts per resource) is kept while the node order and the
        device state stand. Returns the arrays, the columns, the served masks and the device groups."""
        key = (names, self._devices.version)
        if self._device_overlay is None or self._device_overlay[0] != key:
            counts = self._devices.counts()
            where = {name: i for i, name in enumerate(names)} if counts else {}
            groups = {where[node]: found for node, found in self._devices.groups().items() if node in where}
            self._device_overlay = (key, _device_overlay(counts, where), groups)
        overlay = self._device_overlay[1]
        columns = list(resource_names)
        extra = [name for name in overlay if name not in self._column_index]
        if extra:
            pad = np.zeros((allocatable.shape[0], len(extra)), dtype=np.int64)
            allocatable, available = np.hstack([allocatable, pad]), np.hstack([available, pad])
            columns += extra
        served = {}
        for name, (positions, totals, used) in overlay.items():
            column = columns.index(name)
            dra = allocatable[positions, column] == 0  # a node that advertises it is served by its device plugin
            allocatable[positions[dra], column] = totals[dra]
            available[positions[dra], column] = np.maximum(totals[dra] - used[dra], 0)
            served[name] = np.zeros(len(names), dtype=bool)
            served[name][positions[dra]] = True
        return allocatable, available, tuple(columns), served, self._device_overlay[2]


class BulkWriter:
    """Many new pods and nodes applied to a cache no one reads yet (a load in progress;
    estimator.cluster.bulkload), at a few dict look-ups a pod: the request sums are added to
    the arrays a batch at a time, by `flush()`, so the cache is whole only after it. Each
    method takes only what it can apply exactly as `apply()` would, and returns False,
    leaving the cache untouched, for anything else (a pod or node held already, a pod
    unschedulable before); the caller then applies that one per record, after `flush()`.
    """

    def __init__(self, cache: ClusterCache) -> None:
        self._cache = cache
        self._pods = cache._pods
        self._unschedulable = cache._workloads.live_unschedulable()
        self._rows: list[int] = []  # pending: one entry per pod counted since the last flush
        self._amounts: list[tuple] = []
        self.applied = 0  # pods counted and flushed

    def pod(self, pod: tuple) -> bool:
        """Count a new pod given as (namespace, name, node, requests): node "" for a pod
        that is not counted, requests its sorted (resource, amount) pairs, each in int64."""
        namespace, name, node, requests = pod
        live = self._unschedulable.get(namespace)
        if live and name in live:
            return False  # replaces an earlier state: the per-record path does that
        key = (namespace, name)
        if not node:
            return key not in self._pods  # not counted, and nothing held before: nothing changes
        cache = self._cache
        columns = cache._column_index
        try:
            amounts = tuple([(columns[resource], amount) for resource, amount in requests])
        except KeyError:  # a resource new to the cache: columns in sorted order, as apply() adds them
            column = cache._column
            amounts = tuple([(column(resource), amount) for resource, amount in requests])
        pods = self._pods
        row = cache._rows.get(node)
        if row is None:
            if key in pods:
                return False  # (before a row is made: the per-record path may free one first)
            row = cache._row(node)
        value = (row, amounts)
        if pods.setdefault(key, value) is not value:
            return False  # held already (and left as it was): the per-record path replaces it
        self._rows.append(row)
        self._amounts.append(amounts)
        return True

    def pods(self, run: tuple[list, list, list, list]) -> bool:
        """Count a run of consecutive pods, given column-wise (namespaces, names, nodes,
        requests), in one step where that ends as `pod` one by one would: every pod new and
        distinct, none unschedulable before, every node's row and every resource's column
        already there (so no table grows in between). False leaves the cache untouched."""
        namespaces, names, nodes, requests = run
        keys = list(zip(namespaces, names, strict=True))
        pods = self._pods
        if self._unschedulable or not pods.keys().isdisjoint(keys) or len(set(keys)) != len(keys):
            return False
        if "" in nodes:  # pods not counted: only their absence from the table was needed
            counted = [i for i, node in enumerate(nodes) if node]
            keys = [keys[i] for i in counted]
            nodes = [nodes[i] for i in counted]
            requests = [requests[i] for i in counted]
        found = list(map(self._cache._rows.get, nodes))
        if None in found:
            return False
        rows = cast("list[int]", found)  # no None in it
        columns = self._cache._column_index
        try:
            amounts = [tuple([(columns[resource], amount) for resource, amount in pod]) for pod in requests]
        except KeyError:
            return False
        pods.update(zip(keys, zip(rows, amounts, strict=True), strict=True))
        self._rows += rows
        self._amounts += amounts
        return True

    def node(
        self, name: str, allocatable: Mapping[str, int], node_class: NodeClass, hostname: str | None, zone: str
    ) -> bool:
        """Apply a node the cache has no row for, given as records.ParsedNode's fields (False
        for one it has: a Node listed twice, or pods bound to it came first)."""
        cache = self._cache
        if name in cache._rows:
            return False
        with cache._lock:
            cache._set_node(name, allocatable, node_class, hostname, zone)
            cache._changed()
        return True

    def flush(self) -> None:
        """Add the pending pods' requests to the cache's arrays and count their versions."""
        if not self._rows:
            return
        cache = self._cache
        rows = np.asarray(self._rows, dtype=np.int64)
        with cache._lock:
            requested = cache._requested
            np.add.at(requested[:, 0], rows, 1)
            sizes = np.fromiter(map(len, self._amounts), dtype=np.int64, count=len(self._amounts))
            flat = np.fromiter(
                chain.from_iterable(chain.from_iterable(self._amounts)), dtype=np.int64, count=2 * int(sizes.sum())
            ).reshape(-1, 2)
            if len(flat):
                # No cell can come near int64 if the whole batch and the largest cell cannot;
                # otherwise every sum is made exactly, in Python, as the per-record path does.
                bound = float(flat[:, 1].astype(np.float64).sum()) + float(requested.max())
                if cache._excess or bound >= _SAFE_SUM:
                    for row, pod_amounts in zip(self._rows, self._amounts, strict=True):
                        for column, amount in pod_amounts:
                            cache._add_requested(row, column, amount)
                else:
                    np.add.at(requested, (np.repeat(rows, sizes), flat[:, 0]), flat[:, 1])
            cache._version += len(self._rows)  # one change per pod counted, as apply() counts them
            cache._updated_at = time.time()
        self.applied += len(self._rows)
        self._rows, self._amounts = [], []


def _device_overlay(counts: dict[str, dict[str, tuple[int, int]]], where: dict[str, int]) -> dict:
    """resource -> (node positions, devices, allocated) as int64 arrays, in snapshot order."""
    rows: dict[str, list[tuple[int, int, int]]] = {}
    for node, per_resource in counts.items():
        position = where.get(node)
        if position is None:
            continue  # a slice of a node without a Node object: nothing to place there
        for resource, (total, used) in per_resource.items():
            rows.setdefault(resource, []).append((position, total, used))
    overlay = {}
    for resource in sorted(rows):
        table = np.array(rows[resource], dtype=np.int64)
        overlay[resource] = (table[:, 0], table[:, 1], table[:, 2])
    return overlay


def _grow(array: np.ndarray, axis: int) -> np.ndarray:
    """A copy twice as long along `axis`, zero (or None) filled."""
    shape = list(array.shape)
    shape[axis] *= 2
    grown = np.zeros(shape, dtype=array.dtype) if array.dtype != object else np.empty(shape, dtype=object)
    grown[tuple(slice(0, n) for n in array.shape)] = array
    return grown
