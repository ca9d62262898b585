"""ClusterCache: the mutable model of one member cluster, as struct-of-arrays.

Fed object by object (object files, or the list/watch loop); one event costs
O(resources), never O(nodes). `snapshot()` hands estimates a consistent immutable copy in
Karmada's node order, rebuilt only when something changed (a version counter).

Layout (the node table, estimator.cluster.nodetable, which ClusterCache extends):
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

The DRA objects' devices join a snapshot's columns through estimator.cluster.deviceoverlay.

Loaders get bulk doors instead of these fields: `bulk_writer()` (many new pods and nodes
of a load, request sums added a batch at a time: estimator.cluster.bulkwriter, used by
estimator.cluster.bulkload) and
`export()` / `restore()` (the state as plain values and arrays, for the objects cache,
estimator.cluster.objectscache).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import numpy as np

from estimator.cluster.bulkwriter import BulkDoors, BulkWriter
from estimator.cluster.deviceoverlay import DeviceOverlay
from estimator.cluster.devicestate import KINDS as DEVICE_KINDS
from estimator.cluster.devicestate import DeviceState
from estimator.cluster.nodetable import ExportedState, NodeTable
from estimator.core.devices import Matcher
from estimator.core.model import NodeClass
from estimator.core.records import KINDS, ObjectKey, ParsedNode, PodRecord, record_key
from estimator.core.snapshot import ClusterSnapshot, QuotaRecord
from estimator.core.workloads import UnschedulablePod, WorkloadState

__all__ = [
    "BulkWriter",
    "ClusterCache",
    "ExportedState",
    "KINDS",
]  # KINDS: the kinds a cache holds, also imported from here


class ClusterCache(NodeTable):
    """One member cluster's state (see the module docstring); thread-safe."""

    def __init__(self, device_matcher: Matcher | None = None) -> None:
        """`device_matcher`: how a DeviceClass's selectors judge a device (default: CEL; tests
        pass a plain function, see estimator.cluster.devicestate)."""
        self._lock = threading.Lock()
        self._version = 0
        self._updated_at = 0.0
        self._snapshot: ClusterSnapshot | None = None
        super().__init__()  # the node table: rows, columns, node classes, order
        # Counted pods: (namespace, name) -> (row, ((column, amount), ...)); see `_pods`.
        self._pod_table: dict[tuple[str, str], tuple[int, tuple[tuple[int, int], ...]]] = {}
        self._pending_pods: Callable[[], dict] | None = None  # builds _pod_table on first use (restore)
        self._quotas: dict[tuple[str, str], QuotaRecord] = {}
        self._quotas_by_namespace: Mapping[str, tuple[QuotaRecord, ...]] | None = {}
        self._workloads = WorkloadState()
        self._devices = (
            DeviceState(device_matcher) if device_matcher else DeviceState()
        )  # DRA objects; their counts join the snapshot's columns
        self._device_overlay = DeviceOverlay(self._devices)  # kept per node order and device state
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

    def _new_node(
        self, name: str, allocatable: Mapping[str, int], node_class: NodeClass, hostname: str | None, zone: str
    ) -> bool:
        """A node the cache has no row for, applied (False, nothing done, for one it has)."""
        if name in self._rows:
            return False
        with self._lock:
            self._set_node(name, allocatable, node_class, hostname, zone)
            self._changed()
        return True

    def _count_bulk(self, rows: list[int], amounts: list[tuple]) -> None:
        """The requests of pods a BulkWriter put in the pod table, added to the arrays: one
        version per pod, as apply() counts them."""
        with self._lock:
            self._add_requested_batch(rows, amounts)
            self._version += len(rows)
            self._updated_at = time.time()

    # --- applying checked records (lock held; none of these can fail half-way) ---

    def _apply_node(self, node: ParsedNode) -> bool:
        return self._set_node(node.name, node.allocatable, node.node_class, node.hostname, node.zone)

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

    def _apply(self, kind: str, record: Any) -> bool:
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

    def _remove(self, kind: str, key: Any) -> bool:  # the key's form is the kind's (ObjectKey)
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

    def apply(self, kind: str, record: Any) -> None:
        """Apply a record from `parse_object(kind, ...)`."""
        with self._lock:
            if self._apply(kind, record):
                self._changed()

    def delete(self, kind: str, key: ObjectKey) -> None:
        """Remove the object `key` (a node name, or (namespace, name)) of `kind`, if held."""
        with self._lock:
            if self._remove(kind, key):
                self._changed()

    def replace_kind(self, kind: str, records: Iterable[Any], keep: Iterable[ObjectKey] = ()) -> int:
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
        in progress): see estimator.cluster.bulkwriter."""
        doors = BulkDoors(
            pods=self._pods,
            unschedulable=self._workloads.live_unschedulable(),
            rows=self._rows,
            columns=self._column_index,
            row=self._row,
            column=self._column,
            new_node=self._new_node,
            add_requests=self._count_bulk,
        )
        return BulkWriter(doors)

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
        cache._restore(state, records, unschedulable)
        return cache

    def _restore(
        self,
        state: ExportedState,
        records: Iterable[tuple[str, Any]],
        unschedulable: Iterable[tuple[str, str, UnschedulablePod | None]],
    ) -> None:
        self._restore_table(state)
        if callable(state.pods):
            self._pending_pods = state.pods
        else:
            self._pod_table = dict(state.pods)
        for kind, record in records:
            self._apply(kind, record)
        for namespace, name, pod in unschedulable:
            self._workloads.set_pod(namespace, name, pod)
        self._version = state.version
        self._updated_at = time.time()

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
            allocatable, available, resource_names, dra_served, device_groups = self._device_overlay.apply(
                allocatable, available, names, resource_names, self._column_index
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
