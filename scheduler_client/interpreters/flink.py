"""flink.apache.org/v1beta1 FlinkDeployment: `jobmanager` and `taskmanager`, as Karmada names them.

- jobmanager: spec.jobManager.replicas (default 1);
- taskmanager: spec.taskManager.replicas, else ceil(job.parallelism /
  flinkConfiguration["taskmanager.numberOfTaskSlots"]), else 1;
- per replica: cpu and memory from <component>.resource; nodeSelector, tolerations and
  priorityClassName from spec.podTemplate.

Where we differ from Karmada's interpreter, on purpose (each noted on the job):
- memory is a Flink memory size ("2048m" = 2048 MiB, as the Flink operator reads it);
  Karmada parses it as a Kubernetes quantity, where "2048m" is 2.048 bytes. Kubernetes
  forms ("2Gi") are accepted too;
- required node affinity from the pod template is kept (Karmada drops it), and a
  component's own podTemplate (jobManager.podTemplate / taskManager.podTemplate) wins over
  spec.podTemplate field by field, as the operator merges them.

`karmada_compatible=True` reads the job exactly as Karmada's interpreter does, to get the
components Karmada sends: memory through kube.getResourceQuantity (a Kubernetes quantity
string: "2048m" is 2.048 bytes, rounded up to 3 like Quantity.Value(); a Flink-only form such
as "2g", or a bare number, makes Karmada's GetComponents fail, reported here as an error on
the field), only spec.podTemplate's nodeSelector, tolerations and priorityClassName. Each
reading notes where the other differs.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any

from estimator.api import CPU, MEMORY, Component, NodeClaim, QuantityError, ReplicaShape, quantity_to_int
from scheduler_client.interpreters.common import (
    InterpretError,
    Job,
    affinity_terms,
    ceil_div,
    get,
    make_job,
    mapping,
    metadata,
    node_selector,
    number,
    replicas,
    shape,
    tolerations,
)

TASK_SLOTS_KEY = "taskmanager.numberOfTaskSlots"
# Flink's MemorySize units (all binary); a bare number is bytes.
_FLINK_MEMORY = re.compile(r"^\s*(\d+)\s*([a-zA-Z]*)\s*$")
_FLINK_UNITS = {
    "": 1,
    "b": 1,
    "bytes": 1,
    "k": 2**10,
    "kb": 2**10,
    "kibibytes": 2**10,
    "m": 2**20,
    "mb": 2**20,
    "mebibytes": 2**20,
    "g": 2**30,
    "gb": 2**30,
    "gibibytes": 2**30,
    "t": 2**40,
    "tb": 2**40,
    "tebibytes": 2**40,
}


def flink_memory_bytes(value: Any, field: str) -> tuple[int, bool]:
    """(bytes, read as a Flink size with a unit) of "2048m", "2g", "1024 mb" or a Kubernetes "2Gi"."""
    text = str(value)
    match = _FLINK_MEMORY.match(text)
    if match and match[2].lower() in _FLINK_UNITS:
        return int(match[1]) * _FLINK_UNITS[match[2].lower()], bool(match[2])
    try:
        return quantity_to_int(MEMORY, text.strip()), False
    except QuantityError:
        raise InterpretError(
            field, f"{text!r} is neither a Flink memory size (2048m, 2g) nor a Kubernetes quantity (2Gi)"
        ) from None


def cpu_millicores(value: Any, field: str) -> int:
    parsed = number(value, field)
    if parsed is None:
        return 0
    if parsed < 0:
        raise InterpretError(field, f"must not be negative, got {value!r}")
    return ceil_div(parsed * 1000, Decimal(1))


def _pod_spec_field(specs: Sequence[tuple[Mapping, str]], key: str) -> tuple[Any, str]:
    """The first pod spec (component's own, then spec.podTemplate) that sets `key`."""
    for spec, field in specs:
        if spec.get(key) is not None:
            return spec[key], f"{field}.{key}"
    return None, key


def _claim(specs: Sequence[tuple[Mapping, str]]) -> tuple[NodeClaim, str]:
    selector, selector_field = _pod_spec_field(specs, "nodeSelector")
    tols, tols_field = _pod_spec_field(specs, "tolerations")
    affinity, affinity_field = _pod_spec_field(specs, "affinity")
    terms_field = f"{affinity_field}.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
    terms = get(affinity, "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms")
    priority, _ = _pod_spec_field(specs, "priorityClassName")
    claim = NodeClaim(
        node_selector(selector, selector_field), affinity_terms(terms, terms_field), tolerations(tols, tols_field)
    )
    return claim, str(priority or "")


def karmada_memory_bytes(value: Any, field: str) -> int:
    """Memory as Karmada's Lua reads it: kube.getResourceQuantity of a quantity string."""
    if not isinstance(value, str):
        raise InterpretError(
            field,
            f"Karmada's interpreter takes only a quantity string here, got {value!r}: "
            "its GetComponents fails (kube.getResourceQuantity)",
        )
    try:
        return quantity_to_int(MEMORY, value.strip())
    except QuantityError:
        raise InterpretError(
            field,
            f"Karmada's interpreter cannot read {value!r} as a Kubernetes quantity: its "
            "GetComponents fails (kube.getResourceQuantity); Flink reads it as "
            f"{flink_memory_bytes(value, field)[0]} bytes",
        ) from None


def _memory(memory: Any, field: str, notes: list[str], karmada_compatible: bool) -> int:
    flink, flink_unit = flink_memory_bytes(memory, field)
    if not karmada_compatible:
        if flink_unit:
            notes.append(
                f"{field} {memory!r} read as a Flink size ({flink} bytes); Karmada's interpreter reads it "
                "as a Kubernetes quantity"
            )
        return flink
    karmada = karmada_memory_bytes(memory, field)
    if karmada != flink:
        notes.append(
            f"{field} {memory!r} read as Karmada reads it, a Kubernetes quantity ({karmada} bytes); the "
            f"Flink operator gives the pod {flink} bytes"
        )
    return karmada


def _component_shape(
    manifest: Mapping, key: str, namespace: str, notes: list[str], karmada_compatible: bool = False
) -> ReplicaShape:
    field = f"spec.{key}"
    spec = mapping(get(manifest, "spec", key), field)
    resource = mapping(spec.get("resource"), f"{field}.resource")
    requests = {CPU: cpu_millicores(resource.get("cpu"), f"{field}.resource.cpu")}
    memory = resource.get("memory")
    if memory is not None:
        requests[MEMORY] = _memory(memory, f"{field}.resource.memory", notes, karmada_compatible)
    if karmada_compatible:
        # Karmada's Lua: spec.podTemplate only, no node affinity, no per-component podTemplate.
        template = mapping(get(manifest, "spec", "podTemplate", "spec"), "spec.podTemplate.spec")
        claim = NodeClaim(
            node_selector(template.get("nodeSelector"), "spec.podTemplate.spec.nodeSelector"),
            None,
            tolerations(template.get("tolerations"), "spec.podTemplate.spec.tolerations"),
        )
        return shape(requests, claim, namespace, str(template.get("priorityClassName") or ""))
    pod_specs = [
        (mapping(get(spec, "podTemplate", "spec"), f"{field}.podTemplate.spec"), f"{field}.podTemplate.spec"),
        (mapping(get(manifest, "spec", "podTemplate", "spec"), "spec.podTemplate.spec"), "spec.podTemplate.spec"),
    ]
    claim, priority = _claim(pod_specs)
    return shape(requests, claim, namespace, priority)


def _taskmanager_replicas(manifest: Mapping) -> int:
    explicit = get(manifest, "spec", "taskManager", "replicas")
    if explicit is not None and explicit != "":
        return replicas(explicit, "spec.taskManager.replicas")
    parallelism = number(get(manifest, "spec", "job", "parallelism"), "spec.job.parallelism")
    slots = number(
        get(manifest, "spec", "flinkConfiguration", TASK_SLOTS_KEY), f"spec.flinkConfiguration.{TASK_SLOTS_KEY}"
    )
    if parallelism is None or slots is None or slots == 0:
        return 1
    return ceil_div(parallelism, slots)


def flinkdeployment(manifest: Mapping, related: Sequence[Mapping] = (), karmada_compatible: bool = False) -> Job:
    namespace, _ = metadata(manifest)
    notes: list[str] = []
    jobmanager = Component(
        "jobmanager",
        replicas(get(manifest, "spec", "jobManager", "replicas"), "spec.jobManager.replicas"),
        _component_shape(manifest, "jobManager", namespace, notes, karmada_compatible),
    )
    taskmanager = Component(
        "taskmanager",
        _taskmanager_replicas(manifest),
        _component_shape(manifest, "taskManager", namespace, notes, karmada_compatible),
    )
    return make_job(manifest, (jobmanager, taskmanager), notes)
