"""An immutable view of one member cluster, as estimates see it.

Struct-of-arrays in Karmada's node order (zones round-robin, see cache.py), so kernels
walk rows 0..N-1. Estimates never write into these arrays: packing works on copies.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

import numpy as np

from estimator.core.filters import node_mask
from estimator.core.model import HOSTNAME_LABEL, NodeClaim, NodeClass
from estimator.core.resources import PODS

if TYPE_CHECKING:
    from estimator.core.workloads import WorkloadIndex

_T = TypeVar("_T")


@dataclass(frozen=True)
class ScopeRequirement:
    """One ResourceQuota scope selector expression (or a bare scope, operator Exists)."""

    scope_name: str
    operator: str
    values: tuple[str, ...] = ()


@dataclass(frozen=True)
class QuotaRecord:
    """A ResourceQuota's status, amounts as int64 (cpu names in millicores)."""

    namespace: str
    name: str
    scopes: tuple[ScopeRequirement, ...]
    hard: Mapping[str, int]
    used: Mapping[str, int]


@dataclass(eq=False)
class ClusterSnapshot:
    version: int
    node_names: tuple[str, ...]
    # Column names; column 0 is always "pods" (allowed pod slots in `available`).
    resource_names: tuple[str, ...]
    allocatable: np.ndarray  # int64 [N, R]
    # allocatable - requested of counted pods, clamped at 0; column 0 = allowed pods left.
    available: np.ndarray  # int64 [N, R]
    node_class: np.ndarray  # int32 [N], index into `classes`
    classes: tuple[NodeClass, ...]
    quotas: Mapping[str, tuple[QuotaRecord, ...]]  # by namespace
    workloads: WorkloadIndex
    # Wall-clock time (time.time()) of the newest event folded into this snapshot.
    updated_at: float = 0.0
    # The kubernetes.io/hostname label of each node, in node order (None: not labelled), or
    # () when `classes` carry it. The cache keeps it out of NodeClass.labels because it is
    # unique per node and would give every node its own class (filters then run per node).
    hostnames: tuple[str | None, ...] = ()
    # GPUs served through DRA (estimator.core.devices): per served resource name, the nodes
    # whose column counts devices (bool [N]); per node position, its free devices grouped by
    # the names that can take each. One device can serve several names, so a request asking
    # for two of them must not count it twice (estimator.core.devices.partition).
    dra_served: Mapping[str, np.ndarray] = field(default_factory=dict)
    device_groups: Mapping[int, tuple[tuple[frozenset, int], ...]] = field(default_factory=dict)
    # A class's implicit name -> its extendedResourceName: quota admission charges a claim of
    # the class against `requests.<extendedResourceName>` whichever name the pod asked by.
    dra_aliases: Mapping[str, str] = field(default_factory=dict)
    _masks: dict = field(default_factory=dict, repr=False)
    _positions: dict = field(default_factory=dict, repr=False)
    _derived: dict = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def __post_init__(self) -> None:
        assert self.resource_names[:1] == (PODS,), "column 0 must be pods"
        assert not self.hostnames or len(self.hostnames) == len(self.node_names)
        self._columns = {name: i for i, name in enumerate(self.resource_names)}
        for array in (self.allocatable, self.available, self.node_class):
            array.setflags(write=False)

    @property
    def num_nodes(self) -> int:
        return len(self.node_names)

    def column(self, name: str) -> int | None:
        return self._columns.get(name)

    def node_labels(self, index: int) -> dict[str, str]:
        """All labels of the node at `index` (its class's labels plus its hostname)."""
        labels = self.classes[int(self.node_class[index])].label_dict()
        hostname = self.hostnames[index] if self.hostnames else None
        if hostname is not None:
            labels[HOSTNAME_LABEL] = hostname
        return labels

    def node_position(self, name: str) -> int | None:
        """Index of the node called `name`, or None (the name map is built on first use)."""
        positions = self._positions.get("name")
        if positions is None:
            positions = {node: i for i, node in enumerate(self.node_names)}
            self._positions["name"] = positions
        return positions.get(name)

    def hostname_positions(self) -> Mapping[str, np.ndarray]:
        """hostname label value -> int64 indices of the nodes carrying it (built on first use)."""
        positions = self._positions.get("hostname")
        if positions is None:
            grouped: dict[str, list[int]] = {}
            for i, hostname in enumerate(self.hostnames):
                if hostname is not None:
                    grouped.setdefault(hostname, []).append(i)
            positions = {key: np.asarray(rows, dtype=np.int64) for key, rows in grouped.items()}
            self._positions["hostname"] = positions
        return positions

    def node_mask(self, claim: NodeClaim) -> np.ndarray:
        """bool[N]: nodes that pass `claim`'s filters; cached per claim for this snapshot."""
        mask = self._masks.get(claim)
        if mask is None:
            mask = node_mask(self, claim)
            mask.setflags(write=False)
            with self._lock:
                # Bounded in bytes: a mask is N bytes, and its claim (a kept query's: at most
                # 16 KB, estimate.querymemo.KEPT_MAX_QUERY_BYTES) is the key.
                if len(self._masks) > 4096 or (len(self._masks) + 1) * (self.num_nodes + (16 << 10)) > 32 << 20:
                    self._masks.clear()
                self._masks[claim] = mask
        return mask

    def peek_derived(self, key: Hashable) -> object | None:
        """The value `derived` keeps for `key` on this snapshot, or None (not worked out yet)."""
        return self._derived.get(key)

    def detached(self) -> ClusterSnapshot:
        """The same snapshot (arrays, classes, name indexes) with per-claim masks and derived
        values of its own: what an estimate works out on it dies with the copy."""
        return dataclasses.replace(self, _masks={}, _derived={})

    def derived(self, key: Hashable, compute: Callable[[], _T]) -> _T:
        """`compute()`, once per `key` for this snapshot: for values that depend only on the
        snapshot and the key (an answer's upper bound for one request shape). At most 1024
        keys: past that the table is emptied (estimate/requeststate.py lists what is kept)."""
        value = self._derived.get(key)
        if value is None:
            value = compute()
            with self._lock:
                if len(self._derived) > 1024:
                    self._derived.clear()
                self._derived[key] = value
        return value
