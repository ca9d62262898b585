"""The estimator core's public API: everything another package (the placement client,
scheduler_client) may use. Import from here, never from the modules behind it, so those
modules can be reorganised without touching the callers; an import-linter contract
(pyproject.toml) fails the test suite when a caller reaches past this module.

The wire protocol is the other public surface: the generated protobuf modules in
`estimator.pb` are the estimator's gRPC contract and may be imported directly (they are
generated from proto/, not hand-written internals), but only by the client's wire edge.

What is here, by concept:

Model (plain frozen dataclasses, no I/O)
    Component, ComponentSetsQuery, ReplicasQuery, WorkloadRef, AssumedWorkload, ReplicaShape,
    NodeClaim, NodeSelectorTerm, NodeSelectorRequirement, Toleration, Taint; the operator and
    taint-effect names (OP_*, NODE_SELECTOR_OPERATORS, NO_SCHEDULE, NO_EXECUTE);
    TERMINAL_POD_PHASES (a pod in one of them holds no resources).
Quantities and resource names
    parse_quantity, quantity_to_int, QuantityError; parse_resource_list and ResourceListError
    (a whole ResourceList: requests, allocatable, status summaries); CPU, MEMORY,
    EPHEMERAL_STORAGE, PODS; is_counted, is_hugepages, uses_milli_units; MAX_INT32, MAX_INT64.
Matching (Kubernetes' rules)
    tolerates, taints_tolerated, requirement_matches, node_passes, UNSCHEDULABLE_TAINT;
    LabelSelector and label_selector (metav1.LabelSelector).
Pod requests
    pod_requests (what the scheduler counts for a pod spec).
Object files
    read_objects (every object of a kubectl-style YAML/JSON file, `*List` items expanded)
    and ObjectFileError.
Cluster state files
    load_object_files (kubectl-style files -> cluster cache; StateLoadError names the file) and
    ClusterSnapshot, the immutable per-node arrays one cache yields.
Packing
    first_fit_sets (Karmada's first-fit over component sets) and warmup_kernels.
Devices served through Dynamic Resource Allocation (a DeviceClass's extendedResourceName, KEP-5004)
    count_dra_devices (DeviceClass, ResourceSlice and ResourceClaim objects -> per node, the
    devices and allocated devices of every resource name a class serves, as the estimator
    counts them: estimator/core/devices.py; every class also serves its implicit name
    deviceclass.resource.kubernetes.io/<class>) and its DraCounts.
Launching (Linux)
    preload_estimator and fork_estimator: estimators forked from a process that loaded the
    kernels once (the demo's eight).
Command-line values (Go syntax, Karmada's feature gates)
    FlagValueError, parse_go_duration; FEATURE_GATES, ALL_GATES, FeatureGates,
    parse_feature_gates, UnknownFeatureGate.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from estimator.cluster.kubefiles import ObjectFileError, read_objects
from estimator.core.errors import StateLoadError
from estimator.core.featuregates import ALL_GATES, FEATURE_GATES, FeatureGates
from estimator.core.filters import UNSCHEDULABLE_TAINT, node_passes, requirement_matches, taints_tolerated, tolerates
from estimator.core.model import (
    NO_EXECUTE,
    NO_SCHEDULE,
    NODE_SELECTOR_OPERATORS,
    OP_DOES_NOT_EXIST,
    OP_EXISTS,
    OP_IN,
    OP_NOT_IN,
    TERMINAL_POD_PHASES,
    AssumedWorkload,
    Component,
    ComponentSetsQuery,
    NodeClaim,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    ReplicaShape,
    ReplicasQuery,
    Taint,
    Toleration,
    WorkloadRef,
)
from estimator.core.podrequests import pod_requests
from estimator.core.resources import (
    CPU,
    EPHEMERAL_STORAGE,
    MAX_INT32,
    MAX_INT64,
    MEMORY,
    PODS,
    QuantityError,
    ResourceListError,
    is_counted,
    is_hugepages,
    parse_quantity,
    parse_resource_list,
    quantity_to_int,
    uses_milli_units,
)
from estimator.core.snapshot import ClusterSnapshot
from estimator.core.workloads import LabelSelector, label_selector
from estimator.goflags import FlagValueError, UnknownFeatureGate, parse_feature_gates
from estimator.goflags import parse_duration as parse_go_duration

if TYPE_CHECKING:
    from pathlib import Path

    from estimator.cluster.cache import ClusterCache


# The functions below import their modules on first call: numba (the kernels) and the cluster
# cache cost about a second to import, and most client commands never need them.


def load_object_files(paths: str | Path | Sequence[str | Path]) -> ClusterCache:
    """A cluster cache holding every object of the kubectl-style files `paths`; its
    `.snapshot()` is a ClusterSnapshot. StateLoadError names the bad file and object."""
    from estimator.cluster.files import load_object_files as load

    return load(paths)


def first_fit_sets(*args: Any, **kwargs: Any) -> Any:
    """Karmada's first-fit packing of component sets (estimator.kernels.first_fit_sets)."""
    from estimator.kernels import first_fit_sets as kernel

    return kernel(*args, **kwargs)


def warmup_kernels() -> None:
    """Compile (or load from the numba cache) every packing kernel now."""
    from estimator.kernels import warmup

    warmup()


def preload_estimator() -> None:
    """Import what `karmada-estimator --objects` serves with and load every kernel, here,
    so estimators started with `fork_estimator` share them (estimator.service.launch.preload)."""
    from estimator.service.launch import preload

    preload()


@dataclass(frozen=True)
class DraCounts:
    """What count_dra_devices found on one member."""

    served: Mapping[str, str]  # resource name -> the DeviceClass serving it
    nodes: Mapping[str, Mapping[str, tuple[int, int]]]  # node -> resource name -> (devices, of which allocated)
    failed_classes: frozenset[str]  # classes whose selectors could not be evaluated: none of their devices count


def count_dra_devices(objects: Iterable[Any]) -> DraCounts:
    """Per node (spec.nodeName of its ResourceSlices), the devices each served resource name can
    take and how many of them claims hold, counted by the estimator's own rules (complete pools,
    untainted devices, CEL selectors: estimator.core.devices); every other kind is skipped.
    Whether a node uses them for a name depends on its allocatable (none of it: DRA serves it),
    which the caller has. ValueError names the field of a malformed DRA object."""
    from estimator.cluster.devicestate import DeviceState
    from estimator.core.devices import claim_record, device_class_record, served_names, slice_record

    state = DeviceState()
    for obj in objects:
        kind = obj.get("kind") if isinstance(obj, Mapping) else None
        if kind == "DeviceClass":
            device_class = device_class_record(obj)
            state.set_class(device_class.name, device_class)
        elif kind == "ResourceSlice":
            resource_slice = slice_record(obj)
            state.set_slice(resource_slice.name, resource_slice)
        elif kind == "ResourceClaim":
            claim = claim_record(obj)
            state.set_claim((claim.namespace, claim.name), claim)
    counts = state.counts()
    served = {name: cls.name for name, cls in served_names(state.classes.values()).items()}
    return DraCounts(
        served, {node: dict(per_name) for node, per_name in counts.items()}, frozenset(state.failed_classes)
    )


def fork_estimator(argv: Sequence[str], output_fd: int | None = None) -> int:
    """Run `karmada-estimator argv` in a child forked from this process; its pid
    (estimator.service.launch.fork_serve of the command line's main, estimator.cli.main:
    Linux, single-threaded, no gRPC object created yet)."""
    from estimator.cli.main import main
    from estimator.service.launch import fork_serve

    return fork_serve(main, argv, output_fd)


__all__ = [
    "ALL_GATES",
    "CPU",
    "EPHEMERAL_STORAGE",
    "FEATURE_GATES",
    "MAX_INT32",
    "MAX_INT64",
    "MEMORY",
    "NODE_SELECTOR_OPERATORS",
    "NO_EXECUTE",
    "NO_SCHEDULE",
    "OP_DOES_NOT_EXIST",
    "OP_EXISTS",
    "OP_IN",
    "OP_NOT_IN",
    "PODS",
    "TERMINAL_POD_PHASES",
    "UNSCHEDULABLE_TAINT",
    "AssumedWorkload",
    "ClusterSnapshot",
    "Component",
    "ComponentSetsQuery",
    "DraCounts",
    "FeatureGates",
    "FlagValueError",
    "LabelSelector",
    "NodeClaim",
    "NodeSelectorRequirement",
    "NodeSelectorTerm",
    "ObjectFileError",
    "QuantityError",
    "ReplicaShape",
    "ReplicasQuery",
    "ResourceListError",
    "StateLoadError",
    "Taint",
    "Toleration",
    "UnknownFeatureGate",
    "WorkloadRef",
    "count_dra_devices",
    "first_fit_sets",
    "fork_estimator",
    "is_counted",
    "is_hugepages",
    "label_selector",
    "load_object_files",
    "node_passes",
    "parse_feature_gates",
    "parse_go_duration",
    "parse_quantity",
    "parse_resource_list",
    "pod_requests",
    "preload_estimator",
    "quantity_to_int",
    "read_objects",
    "requirement_matches",
    "taints_tolerated",
    "tolerates",
    "uses_milli_units",
    "warmup_kernels",
]
