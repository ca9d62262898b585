"""The common pods and nodes of an object file, applied to a fresh ClusterCache in bulk.

A member file is mostly pods: bound, no conditions, app containers whose resources are
plain maps of quantity strings. For those, the per-record path (records.pod_record, then
ClusterCache.apply) builds a record, takes the lock and updates numpy cells one at a
time, tens of microseconds a pod. Here such a pod costs a few dict look-ups: its amounts
come from a memo of the quantities, and the cache's BulkWriter finds its row and columns in
the cache's own tables and adds the request sums to the arrays a batch at a time (`flush`).
A new node with plain labels, taints and allocatable is applied directly, its allocatable
parsed once per distinct list.

Anything else (other kinds, init containers, pod-level resources, overhead, conditions, a
pod or node already held, non-string values, anything malformed, sums past int64) is
declined, and the caller applies it per record, after `flush()`: the per-record path stays
the one judge of bad input and writes the same messages. The state that results is the
per-record path's, cell for cell and table for table (tests/cluster/test_bulkload.py holds
it to that).
"""

from __future__ import annotations

from estimator.cluster.cache import ClusterCache
from estimator.core.model import HOSTNAME_LABEL, TERMINAL_POD_PHASES, NodeClass, Taint
from estimator.core.podrequests import simple_requests
from estimator.core.records import PodRecord, node_allocatable, zone_key
from estimator.core.resources import (
    MAX_INT64,
    QuantityError,
    ResourceListError,
    is_counted,
    quantity_to_int,
)

_NOT_COUNTED: dict[str, int] = {}  # (empty: its look-ups miss, and _amount answers -1)
# Memo sizes: past them a memo starts afresh (a hostile file cannot grow them without bound).
_MEMO_SIZE = 1 << 16


class Digester:
    """Reads common pods into digests (`BulkLoader.take`): no cache state, so a worker
    process can digest a part of a file while this one loads the rest."""

    def __init__(self) -> None:
        # resource -> {text: amount}, or _NOT_COUNTED for a resource the cache does not count
        self._quantities: dict[str, dict[str, int]] = {}
        self._by_requests: dict[tuple, tuple] = {}  # one container's requests items -> its digest's requests

    def _amount(self, name: str, text: str) -> int | None:
        """The amount of one quantity (-1: a resource not counted), None where the per-record
        path must judge; memoized per resource name, then per text."""
        memo = self._quantities.get(name)
        if memo is None:
            if len(self._quantities) >= _MEMO_SIZE:
                self._quantities.clear()
            memo = self._quantities[name] = {} if is_counted(name) else _NOT_COUNTED
        if memo is _NOT_COUNTED:
            return -1
        amount = memo.get(text)
        if amount is None:
            try:
                amount = quantity_to_int(name, text)
            except QuantityError:
                return None
            if amount < 0:
                return None
            if len(memo) >= _MEMO_SIZE:
                memo.clear()
            memo[text] = amount
        return amount

    def digest(self, obj: dict) -> tuple | None:
        """What `BulkLoader.take` needs of `obj`, a dict of kind Pod, if it is a common pod:
        (namespace, name, node, requests), node "" for a pod that is not counted, requests its
        sorted non-zero (resource, amount) pairs; None for any other pod."""
        meta = obj.get("metadata")
        if type(meta) is not dict:
            return None
        name, namespace = meta.get("name"), meta.get("namespace")
        if type(name) is not str or not name or type(namespace) is not str or not namespace:
            return None
        spec, status = obj.get("spec"), obj.get("status")
        if type(spec) is not dict or (status is not None and type(status) is not dict):
            return None
        if status and status.get("conditions"):
            return None  # may be unschedulable: the per-record path reads those
        node = spec.get("nodeName")
        if node is not None and type(node) is not str:
            return None
        if not node or (status and status.get("phase") in TERMINAL_POD_PHASES):
            return namespace, name, "", ()
        requests = self._requests(spec)
        if requests is None:
            return None
        return namespace, name, node, requests

    def _requests(self, spec: dict) -> tuple | None:
        """The sorted non-zero (resource, amount) pairs a common pod requests; None for any
        other pod. Most pods have one container with requests alone, and many share them
        (the replicas of a workload): those are memoized on the requests' items."""
        key = None
        if not spec.get("initContainers") and not spec.get("resources") and spec.get("overhead") is None:
            containers = spec.get("containers")
            if type(containers) is list and len(containers) == 1 and type(containers[0]) is dict:
                resources = containers[0].get("resources")
                if type(resources) is dict and len(resources) == 1 and type(resources.get("requests")) is dict:
                    key = tuple(resources["requests"].items())
                    try:
                        known = self._by_requests.get(key)
                    except TypeError:  # a value that is a list or a map: simple_requests declines it
                        key = known = None
                    if known is not None:
                        return known
        total = simple_requests(spec, self._amount)  # None: not a common pod's requests
        if total is None:
            return None
        requests = tuple(sorted(total.items()))
        for _, amount in requests:
            if amount > MAX_INT64:  # saturates: the per-record path clamps it
                return None
        # Only text gets here (simple_requests declines any other value), so a key never
        # matches a number's equals (1 == 1.0 == True).
        if key is not None:
            if len(self._by_requests) >= _MEMO_SIZE:
                self._by_requests.clear()
            self._by_requests[key] = requests
        return requests


class BulkLoader:
    """Feeds the common pods and nodes of a load into `cache` (through its BulkWriter);
    `pod(obj)` and `node(obj)` are False for the others, which the caller then applies per
    record, after `flush()`. Only for a cache no one else uses yet (a load in progress):
    the pending sums are not in the arrays until `flush()`."""

    def __init__(self, cache: ClusterCache) -> None:
        writer = cache.bulk_writer()
        self._writer = writer
        self._digester = Digester()
        self._allocatable: dict[tuple, dict[str, int]] = {}  # a node's allocatable items -> parsed
        # Apply a pod from its digest (False: left untouched, applied per record with
        # `digest_record`); a run of digests, column-wise; the pending sums into the arrays.
        self.take = writer.pod
        self.take_run = writer.pods
        self.flush = writer.flush

    @property
    def applied(self) -> int:
        """Pods counted in bulk and flushed."""
        return self._writer.applied

    def pod(self, obj: dict) -> bool:
        """Apply `obj` (a dict of kind Pod) if it is a common pod; False leaves it untouched."""
        digest = self._digester.digest(obj)
        return digest is not None and self.take(digest)

    def node(self, obj: dict) -> bool:
        """Apply `obj` (a dict of kind Node) if it is a new node with plain fields, exactly as
        records.parse_node and ClusterCache.apply would; False leaves it untouched."""
        meta, spec, status = obj.get("metadata"), obj.get("spec"), obj.get("status")
        if (
            type(meta) is not dict
            or (spec is not None and type(spec) is not dict)
            or (status is not None and type(status) is not dict)
        ):
            return False
        name, labels = meta.get("name"), meta.get("labels")
        if type(name) is not str or not name:
            return False
        if labels is None:
            labels = {}
        elif type(labels) is not dict:
            return False
        for key, value in labels.items():
            if type(key) is not str or type(value) is not str:
                return False
        spec = spec or {}
        taints = []
        listed = spec.get("taints")
        if listed is not None and type(listed) is not list:
            return False
        for taint in listed or ():
            if type(taint) is not dict or not taint.get("key"):
                return False
            taints.append(Taint(str(taint["key"]), str(taint.get("value") or ""), str(taint.get("effect") or "")))
        allocatable = (status or {}).get("allocatable")
        if allocatable is not None and type(allocatable) is not dict:
            return False
        key = tuple(allocatable.items()) if allocatable else ()
        for resource, text in key:  # only text is memoized: 1 == 1.0 == True as keys
            if type(resource) is not str or type(text) is not str:
                return False
        parsed = self._allocatable.get(key)
        if parsed is None:
            try:
                parsed = node_allocatable(allocatable)
            except ResourceListError:
                return False
            if len(self._allocatable) >= _MEMO_SIZE:
                self._allocatable.clear()
            self._allocatable[key] = parsed
        node_class = NodeClass(
            labels=tuple(sorted((k, v) for k, v in labels.items() if k != HOSTNAME_LABEL)),
            taints=tuple(sorted(taints, key=lambda t: (t.key, t.effect, t.value))),
            unschedulable=bool(spec.get("unschedulable")),
        )
        return self._writer.node(name, parsed, node_class, labels.get(HOSTNAME_LABEL), zone_key(labels))


def digest_record(digest: tuple) -> PodRecord:
    """The record records.pod_record makes of the pod a digest was made from: a common pod
    has no conditions (so is not unschedulable) and no request past int64."""
    namespace, name, node, requests = digest
    return PodRecord(namespace, name, node, requests, None, ())
