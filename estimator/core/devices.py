"""GPUs served through Dynamic Resource Allocation, counted per node as kube-scheduler counts them.

Kubernetes 1.36 lets a DeviceClass declare `spec.extendedResourceName` (KEP-5004). A pod asking
for that resource (say `nvidia.com/gpu: 2`) on a node whose `status.allocatable` has none of it
is served from the node's devices that the class selects: kube-scheduler makes a ResourceClaim
for exactly that many devices of the class and allocates it like any claim. Every class also
answers to its implicit name `deviceclass.resource.kubernetes.io/<class name>`.

So, for each such resource name and each node: the devices of the node's ResourceSlices
(`spec.nodeName`) that every CEL selector of the class accepts, less the devices already
allocated to a claim (`status.allocation.devices.results`, by driver, pool and device), are
what a replica can take there. Rules, each on the side of never promising a device that is not
there:
- a pool counts only when complete: the slices of its newest generation number
  `spec.pool.resourceSliceCount` (the scheduler's allocator skips an incomplete pool);
- slices for several nodes (`allNodes`, `nodeSelector`, `perDeviceNodeSelection`) are not
  counted: their devices are not any one node's;
- a tainted device (`spec.devices[].taints`) is not counted;
- a class whose selector cannot be evaluated counts none of a node's devices (the caller logs
  the class); devices that several claims may share (`allowMultipleAllocations`) count once;
- two classes declaring one name: the newer class wins, then the name sorting first (the
  DeviceClass API's rule).

Pure: records in, counts out. CEL evaluation is `estimator.core.cel`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from estimator.core.workloads import object_meta

if TYPE_CHECKING:
    import numpy as np

    from estimator.core.snapshot import ClusterSnapshot

IMPLICIT_PREFIX = "deviceclass.resource.kubernetes.io/"
_ATTRIBUTE_TYPES = ("string", "int", "bool", "version")


@dataclass(frozen=True)
class Device:
    name: str
    attributes: tuple[tuple[str, str, Any], ...]  # (name as published, type, value), sorted
    capacity: tuple[tuple[str, str], ...]  # (name, quantity text), sorted
    tainted: bool


@dataclass(frozen=True)
class SliceRecord:
    name: str
    driver: str
    pool: str
    generation: int
    slice_count: int
    node: str | None  # spec.nodeName; None: the slice is not one node's
    devices: tuple[Device, ...]


@dataclass(frozen=True)
class DeviceClassRecord:
    name: str
    extended_resource: str | None
    selectors: tuple[str, ...]  # CEL expressions, all must accept a device
    created: str  # metadata.creationTimestamp (RFC 3339 sorts as text)

    def resource_names(self) -> tuple[str, ...]:
        implicit = IMPLICIT_PREFIX + self.name
        return (implicit,) if not self.extended_resource else (self.extended_resource, implicit)


@dataclass(frozen=True)
class ClaimRecord:
    namespace: str
    name: str
    allocated: tuple[tuple[str, str, str], ...]  # (driver, pool, device)


DeviceKey = tuple[str, str, str]


# --- parsing ---------------------------------------------------------------------------------------


def _mapping(value: Any, where: str) -> Mapping:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ValueError(f"{where}: expected an object, got {type(value).__name__}")
    return value


def _list(value: Any, where: str) -> list:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ValueError(f"{where}: expected a list, got {type(value).__name__}")
    return value


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"{where}: expected a non-empty string, got {value!r:.80}")
    return value


def device_class_record(obj: Any) -> DeviceClassRecord:
    meta, _, name = object_meta(obj, namespaced=False)
    spec = _mapping(obj.get("spec"), "spec")
    selectors = []
    for i, selector in enumerate(_list(spec.get("selectors"), "spec.selectors")):
        cel = _mapping(_mapping(selector, f"spec.selectors[{i}]").get("cel"), f"spec.selectors[{i}].cel")
        selectors.append(_text(cel.get("expression"), f"spec.selectors[{i}].cel.expression"))
    extended = spec.get("extendedResourceName")
    if extended is not None:
        extended = _text(extended, "spec.extendedResourceName")
    return DeviceClassRecord(name, extended, tuple(selectors), str(meta.get("creationTimestamp") or ""))


def _device(obj: Any, where: str) -> Device:
    body = _mapping(obj, where)
    name = _text(body.get("name"), f"{where}.name")
    attributes = []
    for key, value in _mapping(body.get("attributes"), f"{where}.attributes").items():
        value = _mapping(value, f"{where}.attributes[{key!r:.60}]")
        kinds = [k for k in _ATTRIBUTE_TYPES if k in value]
        if len(kinds) != 1:
            raise ValueError(f"{where}.attributes[{key!r:.60}]: needs exactly one of {', '.join(_ATTRIBUTE_TYPES)}")
        kind = kinds[0]
        attributes.append((str(key), kind, _attribute_value(kind, value[kind], f"{where}.attributes[{key!r:.60}]")))
    capacity = []
    for key, value in _mapping(body.get("capacity"), f"{where}.capacity").items():
        amount = _mapping(value, f"{where}.capacity[{key!r:.60}]").get("value")
        capacity.append((str(key), _text(amount, f"{where}.capacity[{key!r:.60}].value")))
    tainted = bool(_list(body.get("taints"), f"{where}.taints"))
    return Device(name, tuple(sorted(attributes)), tuple(sorted(capacity)), tainted)


def _attribute_value(kind: str, value: Any, where: str) -> Any:
    expected = {"string": str, "int": int, "bool": bool, "version": str}[kind]
    if type(value) is not expected:
        raise ValueError(f"{where}.{kind}: expected {expected.__name__}, got {value!r:.60}")
    return value


def slice_record(obj: Any) -> SliceRecord:
    _, _, name = object_meta(obj, namespaced=False)
    spec = _mapping(obj.get("spec"), "spec")
    pool = _mapping(spec.get("pool"), "spec.pool")
    generation, count = pool.get("generation", 0), pool.get("resourceSliceCount", 1)
    if type(generation) is not int or type(count) is not int or generation < 0 or count < 1:
        raise ValueError(
            f"spec.pool: generation {generation!r:.40} and resourceSliceCount {count!r:.40} must be "
            "integers (>= 0 and >= 1)"
        )
    node = spec.get("nodeName")
    devices = tuple(_device(d, f"spec.devices[{i}]") for i, d in enumerate(_list(spec.get("devices"), "spec.devices")))
    return SliceRecord(
        name,
        _text(spec.get("driver"), "spec.driver"),
        _text(pool.get("name"), "spec.pool.name"),
        generation,
        count,
        _text(node, "spec.nodeName") if node is not None else None,
        devices,
    )


def claim_record(obj: Any) -> ClaimRecord:
    _, namespace, name = object_meta(obj, namespaced=True)
    allocation = _mapping(_mapping(obj.get("status"), "status").get("allocation"), "status.allocation")
    results = _list(
        _mapping(allocation.get("devices"), "status.allocation.devices").get("results"),
        "status.allocation.devices.results",
    )
    allocated = []
    for i, result in enumerate(results):
        where = f"status.allocation.devices.results[{i}]"
        result = _mapping(result, where)
        allocated.append(
            (
                _text(result.get("driver"), f"{where}.driver"),
                _text(result.get("pool"), f"{where}.pool"),
                _text(result.get("device"), f"{where}.device"),
            )
        )
    return ClaimRecord(namespace, name, tuple(allocated))


# --- counting ---------------------------------------------------------------------------------------

# matches(class, driver, device) -> True / False, or None when a selector cannot be evaluated.
Matcher = Callable[[DeviceClassRecord, str, Device], "bool | None"]


def served_names(classes: Iterable[DeviceClassRecord]) -> dict[str, DeviceClassRecord]:
    """Resource name -> the class that serves it (explicit names: newest class, then first name)."""
    ordered = sorted(classes, key=lambda c: c.name)
    served: dict[str, DeviceClassRecord] = {IMPLICIT_PREFIX + c.name: c for c in ordered}
    explicit = [(c.extended_resource, c) for c in ordered if c.extended_resource]
    explicit.sort(key=lambda named: named[1].created, reverse=True)  # stable: equal times keep name order
    for name, c in reversed(explicit):  # the winner is written last
        served[name] = c
    return served


def complete_pools(slices: Iterable[SliceRecord]) -> dict[tuple[str, str], int]:
    """(driver, pool) -> generation, for each pool whose newest generation has all its slices."""
    newest: dict[tuple[str, str], int] = {}
    for s in slices:
        key = (s.driver, s.pool)
        newest[key] = max(newest.get(key, -1), s.generation)
    seen: dict[tuple[str, str, int], list[int]] = {}
    for s in slices:
        if newest[(s.driver, s.pool)] == s.generation:
            entry = seen.setdefault((s.driver, s.pool, s.generation), [0, s.slice_count])
            entry[0] += 1
            entry[1] = max(entry[1], s.slice_count)
    return {key[:2]: key[2] for key, (found, wanted) in seen.items() if found >= wanted}


def node_counts(
    node_slices: Iterable[SliceRecord],
    served: Mapping[str, DeviceClassRecord],
    complete: Mapping[tuple[str, str], int],
    allocated: Mapping[DeviceKey, int],
    matches: Matcher,
    failed: set[str],
    shared: dict[frozenset[str], int] | None = None,
) -> dict[str, tuple[int, int]]:
    """{resource name: (devices the class selects, of which allocated)} for one node's slices.
    Classes whose selectors failed are added to `failed` and count nothing on this node.
    `shared`, when given, receives the free devices grouped by the set of names that may take
    each (one device can serve several names: see `partition`)."""
    counts: dict[str, tuple[int, int]] = {}
    broken: set[str] = set()
    signatures: list[tuple[set[str], bool]] = []
    for s in node_slices:
        if complete.get((s.driver, s.pool)) != s.generation:
            continue
        for device in s.devices:
            if device.tainted:
                continue
            taken = allocated.get((s.driver, s.pool, device.name), 0) > 0
            names: set[str] = set()
            signatures.append((names, taken))
            for resource, cls in served.items():
                if cls.name in broken:
                    continue
                verdict = matches(cls, s.driver, device)
                if verdict is None:
                    broken.add(cls.name)
                    continue
                if verdict:
                    names.add(resource)
                    total, used = counts.get(resource, (0, 0))
                    counts[resource] = (total + 1, used + taken)
    dropped = {resource for resource, cls in served.items() if cls.name in broken}
    for resource in dropped:
        counts.pop(resource, None)
    failed.update(broken)
    if shared is not None:
        for names, taken in signatures:
            key = frozenset(names - dropped)
            if not taken and key:
                shared[key] = shared.get(key, 0) + 1
    return counts


def partition(groups: Iterable[tuple[frozenset[str], int]], wanted: Iterable[str]) -> dict[str, int]:
    """How many of a node's free devices each of the `wanted` names may count when one request
    asks for several of them: `groups` are (names a device can serve, free devices).

    kube-scheduler allocates each pod's claim on its own, taking the first free devices that
    match, so a pod asking one name may take a device another pod of the job needed (seen in
    the judge: "cannot allocate all claims" for a placement that exists). So: names that can
    take exactly the same devices here (a class's explicit and implicit names, or two classes
    selecting the same devices) share them, split evenly (any device serves any of them);
    a device that names with different device sets could take counts for none of them; a
    device only one wanted name can take counts for it."""
    wanted = sorted(set(wanted))
    groups = [(names, free) for names, free in groups if free > 0]
    # Names with identical device sets here: the groups each appears in.
    where = {name: frozenset(i for i, (names, _) in enumerate(groups) if name in names) for name in wanted}
    amounts = {name: 0 for name in wanted}
    pools: dict[frozenset[int], int] = {}
    for names, free in groups:
        kinds = {where[n] for n in wanted if n in names}
        if len(kinds) == 1:  # every wanted name that can take these devices can take the same ones
            kind = kinds.pop()
            pools[kind] = pools.get(kind, 0) + free
    for kind, free in pools.items():
        members = [n for n in wanted if where[n] == kind]
        share, extra = divmod(free, len(members))
        for k, name in enumerate(members):
            amounts[name] += share + (k < extra)
    return amounts


def count_once(
    snapshot: ClusterSnapshot, columns: Sequence[str], available: np.ndarray, own: frozenset[str] | None = None
) -> None:
    """In place, on the columns a request gathered: where one node's devices can serve several
    of the DRA-served names the job's own components ask for (`own`, default every column),
    each device counts for one of them only (`partition`). In-flight workloads' names are
    not contested here: their pods came first (see `deduct_shared`)."""
    wanted = [
        (k, name) for k, name in enumerate(columns) if name in snapshot.dra_served and (own is None or name in own)
    ]
    if len(wanted) < 2:
        return
    for position, groups in snapshot.device_groups.items():
        here = [name for _, name in wanted if snapshot.dra_served[name][position]]
        if len(here) < 2:
            continue
        amounts = partition(groups, here)
        for k, name in wanted:
            if name in amounts:
                available[position, k] = min(int(available[position, k]), amounts[name])


def deduct_shared(snapshot: ClusterSnapshot, columns: Sequence[str], before: np.ndarray, after: np.ndarray) -> None:
    """In place on `after`: devices an in-flight workload took for one DRA-served name (the drop
    from `before` to `after` in its column) may be devices another requested name could take
    too; that name loses as many as it could have shared with it on that node, at most."""
    served = [(k, name) for k, name in enumerate(columns) if name in snapshot.dra_served]
    if len(served) < 2:
        return
    for k, name in served:
        for position in (before[:, k] > after[:, k]).nonzero()[0]:
            taken = int(before[position, k] - after[position, k])
            groups = snapshot.device_groups.get(int(position), ())
            for j, other in served:
                if j != k:
                    shared = sum(free for names, free in groups if name in names and other in names)
                    after[position, j] = max(0, int(after[position, j]) - min(taken, shared))
