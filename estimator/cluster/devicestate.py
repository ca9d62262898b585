"""DeviceState: the member's DRA objects and, per node, the devices each served resource can take.

Owned by ClusterCache (and called under its lock). DeviceClasses, ResourceSlices and
ResourceClaims are kept as records; the per-node counts (`estimator.core.devices.node_counts`)
are recomputed only for the nodes an event touched: a slice its node, a claim the nodes of the
devices it allocates (before and after), a class or a pool's completeness every node of it.
Selector verdicts are remembered per (class, driver, device content), so a member of identical
GPU nodes evaluates each selector once.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Iterable

from estimator.core.devices import (
    ClaimRecord,
    Device,
    DeviceClassRecord,
    DeviceKey,
    SliceRecord,
    complete_pools,
    node_counts,
    served_names,
)

log = logging.getLogger(__name__)
# celpy logs each evaluation step with the whole device at DEBUG (our --v 4): far too much.
logging.getLogger("celpy").setLevel(logging.INFO)

KINDS = ("DeviceClass", "ResourceSlice", "ResourceClaim")
# A node's free devices by the names they can serve: ((names, devices), ...) (`DeviceState.groups`).
DeviceGroups = tuple[tuple[frozenset[str], int], ...]
_VERDICTS_KEPT = 65536  # selector verdicts remembered; dropped all at once beyond (a new content mix)


def cel_matches(cls: DeviceClassRecord, driver: str, device: Device) -> bool | None:
    """Every selector of the class accepts the device; None when one cannot be evaluated."""
    from estimator.core import cel  # only members with DeviceClasses pay for the CEL runtime

    view = cel.DeviceView(driver, device.attributes, device.capacity)
    try:
        return all(cel.compile_selector(expression).matches(view) for expression in cls.selectors)
    except cel.SelectorError as error:
        log.warning(
            "DeviceClass %r: a selector cannot be evaluated, so no node's devices count for it: %s", cls.name, error
        )
        return None


class DeviceState:
    def __init__(self, matches: Callable[[DeviceClassRecord, str, Device], bool | None] = cel_matches) -> None:
        self._matches = matches
        self._verdicts: dict[tuple, bool | None] = {}
        self.classes: dict[str, DeviceClassRecord] = {}
        self.slices: dict[str, SliceRecord] = {}
        self.claims: dict[tuple[str, str], ClaimRecord] = {}
        self._allocated: Counter[DeviceKey] = Counter()
        self._by_node: dict[str, set[str]] = {}  # node -> slice names
        self._pools: dict[tuple[str, str], set[str]] = {}  # (driver, pool) -> slice names
        self._device_node: dict[DeviceKey, str] = {}
        self._complete: dict[tuple[str, str], int] = {}  # (driver, pool) -> its complete newest generation
        self._served: dict[str, DeviceClassRecord] = {}
        self._counts: dict[str, dict[str, tuple[int, int]]] = {}  # node -> resource -> (total, used)
        self._groups: dict[str, DeviceGroups] = {}  # see groups()
        self._dirty: set[str] = set()
        self.version = 0  # bumped by every change that can change a count
        self.failed_classes: set[str] = set()

    @property
    def active(self) -> bool:
        return bool(self.classes)

    # --- changes (each returns whether anything changed) ---

    def set_class(self, name: str, record: DeviceClassRecord | None) -> bool:
        if self.classes.get(name) == record:
            return False
        if record is None:
            del self.classes[name]
        else:
            self.classes[name] = record
        self._served = served_names(self.classes.values())
        self._dirty.update(self._by_node)
        self.failed_classes.clear()
        return self._bump()

    def set_slice(self, name: str, record: SliceRecord | None) -> bool:
        old = self.slices.get(name)
        if old == record:
            return False
        for s in (old, record):
            if s is not None and s.node is not None:
                self._dirty.add(s.node)
        if old is not None:
            self._unindex(old)
        if record is None:
            del self.slices[name]
        else:
            self.slices[name] = record
            self._index(record)
        for pool in {(s.driver, s.pool) for s in (old, record) if s is not None}:
            self._recheck_pool(pool)
        return self._bump()

    def _recheck_pool(self, pool: tuple[str, str]) -> None:
        """Whether the pool's newest generation is complete; its nodes are recounted when that changes."""
        members = [self.slices[n] for n in self._pools.get(pool, ())]
        generation = complete_pools(members).get(pool)
        if generation != self._complete.get(pool):
            if generation is None:
                del self._complete[pool]
            else:
                self._complete[pool] = generation
            self._dirty.update(s.node for s in members if s.node)

    def set_claim(self, key: tuple[str, str], record: ClaimRecord | None) -> bool:
        old = self.claims.get(key)
        if old == record:
            return False
        if old is not None:
            for device in old.allocated:
                left = self._allocated[device] - 1
                if left > 0:
                    self._allocated[device] = left
                else:
                    del self._allocated[device]
            self._touch(old.allocated)
        if record is None:
            del self.claims[key]
        else:
            self.claims[key] = record
            self._allocated.update(record.allocated)
            self._touch(record.allocated)
        return self._bump()

    def _bump(self) -> bool:
        self.version += 1
        return True

    def _touch(self, devices: Iterable[DeviceKey]) -> None:
        for device in devices:
            node = self._device_node.get(device)
            if node is not None:
                self._dirty.add(node)

    def _index(self, s: SliceRecord) -> None:
        self._pools.setdefault((s.driver, s.pool), set()).add(s.name)
        if s.node is None:
            return
        self._by_node.setdefault(s.node, set()).add(s.name)
        for device in s.devices:
            self._device_node[(s.driver, s.pool, device.name)] = s.node

    def _unindex(self, s: SliceRecord) -> None:
        pool = self._pools.get((s.driver, s.pool))
        if pool is not None:
            pool.discard(s.name)
            if not pool:
                del self._pools[(s.driver, s.pool)]
        if s.node is None:
            return
        names = self._by_node.get(s.node)
        if names is not None:
            names.discard(s.name)
            if not names:
                del self._by_node[s.node]
        for device in s.devices:
            if self._device_node.get((s.driver, s.pool, device.name)) == s.node:
                del self._device_node[(s.driver, s.pool, device.name)]

    # --- reading ---

    def aliases(self) -> dict[str, str]:
        """Implicit name -> extendedResourceName, for the classes that declare one (and serve it)."""
        return {
            name: cls.extended_resource
            for name, cls in self._served.items()
            if cls.extended_resource
            and name != cls.extended_resource
            and self._served.get(cls.extended_resource) is cls
        }

    def keys(self, kind: str) -> set:
        tables: dict[str, dict] = {
            "DeviceClass": self.classes,
            "ResourceSlice": self.slices,
            "ResourceClaim": self.claims,
        }
        return set(tables[kind])

    def counts(self) -> dict[str, dict[str, tuple[int, int]]]:
        """node -> resource name -> (devices, allocated) for every node with a served resource."""
        if self._dirty:
            for node in self._dirty:
                self._recount(node)
            self._dirty.clear()
        return self._counts

    def _recount(self, node: str) -> None:
        slices = [self.slices[n] for n in self._by_node.get(node, ())]
        shared: dict[frozenset[str], int] = {}
        counts = (
            node_counts(
                slices, self._served, self._complete, self._allocated, self._verdict, self.failed_classes, shared
            )
            if self._served
            else {}
        )
        if counts:
            self._counts[node] = counts
        else:
            self._counts.pop(node, None)
        if shared:
            self._groups[node] = tuple(sorted(shared.items(), key=lambda item: sorted(item[0])))
        else:
            self._groups.pop(node, None)

    def groups(self) -> dict[str, DeviceGroups]:
        """node -> ((names a free device can serve, devices), ...) (call after `counts`)."""
        return self._groups

    def _verdict(self, cls: DeviceClassRecord, driver: str, device: Device) -> bool | None:
        key = (cls.name, cls.selectors, driver, device.attributes, device.capacity)
        if key not in self._verdicts:
            if len(self._verdicts) >= _VERDICTS_KEPT:
                self._verdicts.clear()
            self._verdicts[key] = self._matches(cls, driver, device)
        return self._verdicts[key]
