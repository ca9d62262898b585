"""Kubernetes objects as the checked records ClusterCache applies.

Pure and done before the cache's lock is taken, so a malformed object changes nothing:
every amount is checked here (no negative counts; a pod asking for more than int64 in
total saturates at int64, as a request nothing can fit). One parser per kind (`KINDS`,
`parse_object`), shared by object files and the list/watch loop.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from estimator.core.devices import claim_record, device_class_record, slice_record
from estimator.core.model import HOSTNAME_LABEL, TERMINAL_POD_PHASES, NodeClass, Taint
from estimator.core.podrequests import pod_requests
from estimator.core.resources import MAX_INT64, PODS, is_counted, parse_resource_list
from estimator.core.snapshot import QuotaRecord, ScopeRequirement
from estimator.core.workloads import deployment_record, object_meta, replicaset_record, string_map, unschedulable_pod

ZONE_LABEL = "topology.kubernetes.io/zone"
REGION_LABEL = "topology.kubernetes.io/region"
LEGACY_ZONE_LABEL = "failure-domain.beta.kubernetes.io/zone"
LEGACY_REGION_LABEL = "failure-domain.beta.kubernetes.io/region"

# --- parsing (pure, before the lock) ----------------------------------------------------


def zone_key(labels: Mapping[str, str]) -> str:
    """utilnode.GetZoneKey: region + zone, each from the legacy label when the new is absent."""
    zone = labels[ZONE_LABEL] if ZONE_LABEL in labels else labels.get(LEGACY_ZONE_LABEL, "")
    region = labels[REGION_LABEL] if REGION_LABEL in labels else labels.get(LEGACY_REGION_LABEL, "")
    if not region and not zone:
        return ""
    return f"{region}:\x00:{zone}"


def _quantities(resource_list: Any, where: str, keep: Callable[[str], bool] | None) -> dict[str, int]:
    # The API server refuses negative amounts here; a negative count would wrap sums.
    return parse_resource_list(resource_list, where, keep, allow_negative=False)


def node_allocatable(resource_list: Any) -> dict[str, int]:
    """A node's status.allocatable: pods and the counted resources, as ints."""
    return _quantities(resource_list, "status.allocatable", _allocatable_kept)


def _allocatable_kept(name: str) -> bool:
    return name == PODS or is_counted(name)


@dataclass(frozen=True)
class ParsedNode:
    """What the cache keeps of a Node, checked and ready to apply (`parse_node`)."""

    name: str
    allocatable: Mapping[str, int]
    node_class: NodeClass
    hostname: str | None
    zone: str


def parse_node(obj: Any) -> ParsedNode:
    meta, _, name = object_meta(obj, namespaced=False)
    labels = string_map(meta.get("labels"), "metadata.labels")
    spec = obj.get("spec") or {}
    taints = []
    for taint in spec.get("taints") or ():
        if not isinstance(taint, dict) or not taint.get("key"):
            raise ValueError(f"spec.taints: {taint!r} has no key")
        taints.append(Taint(str(taint["key"]), str(taint.get("value") or ""), str(taint.get("effect") or "")))
    allocatable = node_allocatable((obj.get("status") or {}).get("allocatable"))
    node_class = NodeClass(
        labels=tuple(sorted((k, v) for k, v in labels.items() if k != HOSTNAME_LABEL)),
        taints=tuple(sorted(taints, key=lambda t: (t.key, t.effect, t.value))),
        unschedulable=bool(spec.get("unschedulable")),
    )
    return ParsedNode(name, allocatable, node_class, labels.get(HOSTNAME_LABEL), zone_key(labels))


def quota_record(obj: Any) -> QuotaRecord:
    """A ResourceQuota: bare scopes become `Exists` requirements, status amounts ints."""
    meta, namespace, name = object_meta(obj, namespaced=True)
    spec = obj.get("spec") or {}
    scopes = [ScopeRequirement(str(scope), "Exists") for scope in spec.get("scopes") or ()]
    for expr in (spec.get("scopeSelector") or {}).get("matchExpressions") or ():
        if not isinstance(expr, dict) or not expr.get("scopeName") or not expr.get("operator"):
            raise ValueError(f"spec.scopeSelector: {expr!r} needs scopeName and operator")
        values = tuple(str(v) for v in expr.get("values") or ())
        scopes.append(ScopeRequirement(str(expr["scopeName"]), str(expr["operator"]), values))
    status = obj.get("status") or {}
    everything = lambda _: True  # noqa: E731 - quotas track any resource name
    hard = _quantities(status.get("hard"), "status.hard", everything)
    used = _quantities(status.get("used"), "status.used", everything)
    return QuotaRecord(namespace, name, tuple(scopes), hard, used)


@dataclass(frozen=True)
class PodRecord:
    """What the cache keeps of a Pod, checked and ready to apply."""

    namespace: str
    name: str
    node_name: str  # "" unless counted
    requests: tuple[tuple[str, int], ...]  # sorted (resource, amount), every amount in [0, int64 max]
    unschedulable: Any  # workloads.UnschedulablePod | None
    saturated: tuple[str, ...] = ()  # resources whose request was beyond int64 (clamped)


def pod_record(obj: Any) -> PodRecord:
    meta, namespace, name = object_meta(obj, namespaced=True)
    spec = obj.get("spec") or {}
    if not isinstance(spec, dict):
        raise ValueError("spec: expected a mapping")
    node_name = spec.get("nodeName") or ""
    if not isinstance(node_name, str):
        raise ValueError("spec.nodeName: expected a string")
    status = obj.get("status") or {}
    if not isinstance(status, dict):
        raise ValueError("status: expected a mapping")
    counted = bool(node_name) and status.get("phase") not in TERMINAL_POD_PHASES
    requests: tuple[tuple[str, int], ...] = ()
    saturated: tuple[str, ...] = ()
    if counted:
        key = _request_key(spec)
        checked = _request_memo.get(key) if key is not None else None
        if checked is None:
            checked = _checked_requests(obj)
            if key is not None:
                if len(_request_memo) >= _REQUEST_MEMO_SIZE:
                    _request_memo.clear()
                _request_memo[key] = checked
        requests, saturated = checked
    # Without conditions a pod cannot be unschedulable: most pods skip that second reading
    # of their metadata (the checks it repeats were made above).
    unschedulable = unschedulable_pod(obj) if status.get("conditions") else None
    return PodRecord(namespace, name, node_name if counted else "", requests, unschedulable, saturated)


def _checked_requests(obj: Any) -> tuple[tuple[tuple[str, int], ...], tuple[str, ...]]:
    """(sorted (resource, amount) pairs, saturated resources) of a pod; raises on bad input."""
    amounts, saturated = [], []
    for resource, amount in sorted(pod_requests(obj).items()):
        if amount < 0:
            raise ValueError(f"{resource}: negative request {amount}")
        if amount > MAX_INT64:  # e.g. two containers at 8E: the sum leaves int64
            saturated.append(resource)
            amount = MAX_INT64
        amounts.append((resource, amount))
    return tuple(amounts), tuple(saturated)


# The pods of one ReplicaSet, Job or StatefulSet ask for the same resources, so the checked
# requests are worked out once per distinct request-relevant part of the spec (most of a
# member file's load time was that arithmetic, repeated). The key is the JSON of exactly
# the spec fields pod_spec_requests reads (tests/cluster/test_pod_request_memo.py holds it to
# that); only successful results are kept, so a bad pod raises every time.
REQUEST_SPEC_FIELDS = ("containers", "initContainers", "resources", "overhead")
_REQUEST_MEMO_SIZE = 4096
_REQUEST_KEY_MAX_BYTES = 64 * 1024
_KEY_OPTIONS = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_SUBCLASS | orjson.OPT_PASSTHROUGH_DATACLASS
_request_memo: dict[bytes, tuple[tuple[tuple[str, int], ...], tuple[str, ...]]] = {}


def _request_key(spec: dict) -> bytes | None:
    """The memo key of a spec, or None where JSON could not tell inputs apart (a tuple where
    a list belongs, types JSON lacks, subclasses) or the key would be unreasonably big."""
    fields = [spec.get(name) for name in REQUEST_SPEC_FIELDS]
    for value in fields:
        if value is not None and type(value) is not list and type(value) is not dict:
            return None
    try:
        key = orjson.dumps(fields, option=_KEY_OPTIONS)
    except TypeError:  # orjson.JSONEncodeError: not plain JSON data
        return None
    return key if len(key) <= _REQUEST_KEY_MAX_BYTES else None


_PARSERS = {
    "Node": lambda obj: parse_node(obj),
    "Pod": lambda obj: pod_record(obj),
    "ResourceQuota": lambda obj: quota_record(obj),
    "ReplicaSet": lambda obj: replicaset_record(obj),
    "Deployment": lambda obj: deployment_record(obj),
    # Dynamic Resource Allocation (resource.k8s.io/v1): devices served as extended resources.
    "DeviceClass": lambda obj: device_class_record(obj),
    "ResourceSlice": lambda obj: slice_record(obj),
    "ResourceClaim": lambda obj: claim_record(obj),
}
# Kinds without a namespace: their key is the name alone.
CLUSTER_SCOPED = ("Node", "DeviceClass", "ResourceSlice")


# The kinds a cache holds, in the order a full load feeds them; the one kind -> parser table.
KINDS: tuple[str, ...] = tuple(_PARSERS)


def parse_object(kind: str, obj: Any) -> Any:
    """The checked record the cache applies for `obj` of `kind`; ValueError (or another
    exception from a malformed object) leaves the cache untouched."""
    return _PARSERS[kind](obj)


# What the cache keys an object by: a cluster-scoped object's name, else (namespace, name).
ObjectKey = str | tuple[str, str]


def record_key(kind: str, record: Any) -> ObjectKey:
    """The key `delete` and `keys` use for a record of `kind`: the name of a cluster-scoped
    object (a node), else (namespace, name)."""
    if kind in CLUSTER_SCOPED:
        return record.name
    return (record.namespace, record.name)
