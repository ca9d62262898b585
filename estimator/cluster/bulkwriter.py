"""BulkWriter: many new pods and nodes of a load written into a ClusterCache at once.

Used by estimator.cluster.bulkload, through `ClusterCache.bulk_writer()`. The cache hands the
writer its doors (`BulkDoors`): the tables a pod is looked up in, and the two steps that
change its arrays under its lock. The writer never sees the cache itself.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import NamedTuple, cast

from estimator.core.model import NodeClass


class BulkDoors(NamedTuple):
    """What a ClusterCache opens to its BulkWriter (estimator.cluster.cache)."""

    pods: dict  # the counted pods: (namespace, name) -> (row, ((column, amount), ...))
    unschedulable: Mapping  # namespace -> name -> record: pods unschedulable now
    rows: Mapping[str, int]  # node name -> row
    columns: Mapping[str, int]  # resource -> column
    row: Callable[[str], int]  # the row of a node, made (without a node) if new
    column: Callable[[str], int]  # the column of a resource, made if new
    # Apply a node the cache has no row for, given as records.ParsedNode's fields (False for
    # one it has); under the cache's lock, one version.
    new_node: Callable[[str, Mapping[str, int], NodeClass, str | None, str], bool]
    # Add the requests of pods already in `pods` (their rows, their amounts) to the arrays;
    # under the cache's lock, one version per pod.
    add_requests: Callable[[list[int], list[tuple]], None]


class BulkWriter:
    """Many new pods and nodes applied to a cache no one reads yet (a load in progress;
    estimator.cluster.bulkload), at a few dict look-ups a pod: the request sums are added to
    the arrays a batch at a time, by `flush()`, so the cache is whole only after it. Each
    method takes only what it can apply exactly as `apply()` would, and returns False,
    leaving the cache untouched, for anything else (a pod or node held already, a pod
    unschedulable before); the caller then applies that one per record, after `flush()`.
    """

    def __init__(self, doors: BulkDoors) -> None:
        self._doors = doors
        self._pods = doors.pods
        self._unschedulable = doors.unschedulable
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
        doors = self._doors
        columns = doors.columns
        try:
            amounts = tuple([(columns[resource], amount) for resource, amount in requests])
        except KeyError:  # a resource new to the cache: columns in sorted order, as apply() adds them
            column = doors.column
            amounts = tuple([(column(resource), amount) for resource, amount in requests])
        pods = self._pods
        row = doors.rows.get(node)
        if row is None:
            if key in pods:
                return False  # (before a row is made: the per-record path may free one first)
            row = doors.row(node)
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
        found = list(map(self._doors.rows.get, nodes))
        if None in found:
            return False
        rows = cast("list[int]", found)  # no None in it
        columns = self._doors.columns
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
        return self._doors.new_node(name, allocatable, node_class, hostname, zone)

    def flush(self) -> None:
        """Add the pending pods' requests to the cache's arrays and count their versions."""
        if not self._rows:
            return
        self._doors.add_requests(self._rows, self._amounts)
        self.applied += len(self._rows)
        self._rows, self._amounts = [], []
