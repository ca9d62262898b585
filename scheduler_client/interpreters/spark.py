"""sparkoperator.k8s.io/v1beta2 SparkApplication: `driver` (1) and `executor`, as Karmada reads them.

Per replica:
- cpu: <role>.cores (default 1);
- memory: <role>.memory (JVM size, default "1g") + overhead, where overhead is
  <role>.memoryOverhead, else max(memory x factor, 384Mi); factor is spec.memoryOverheadFactor,
  else 0.10 for Java/Scala and 0.40 for Python/R. "1g" -> 1408Mi for a JVM job;
- <role>.gpu {name, quantity} when both are set;
- nodeSelector, tolerations, required node affinity and priorityClassName of the role.

Executors: executor.instances (default 1); with dynamicAllocation enabled, at least
initialExecutors and minExecutors (each default 1).

Beyond Karmada (noted on the job): <role>.coreRequest, when set, is the pod's cpu request
(the operator passes it as spark.kubernetes.<role>.request.cores), and spec.nodeSelector
applies to both roles when the role sets none; a memory size without a unit is MiB (Spark's
default for these settings) where Karmada's interpreter fails.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from decimal import Decimal, localcontext
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

JVM_TYPES = ("java", "scala")
JOB_TYPES = ("Java", "Scala", "Python", "R")
JVM_OVERHEAD_FACTOR = Decimal("0.10")
NON_JVM_OVERHEAD_FACTOR = Decimal("0.40")
MIN_OVERHEAD_BYTES = 384 * 2**20
_JAVA_SIZE = re.compile(r"^(\d+(?:\.\d*)?)([a-z]*)$")
_JAVA_UNITS = {
    "b": 1,
    "k": 2**10,
    "kb": 2**10,
    "m": 2**20,
    "mb": 2**20,
    "g": 2**30,
    "gb": 2**30,
    "t": 2**40,
    "tb": 2**40,
    "p": 2**50,
    "pb": 2**50,
}


def java_memory_bytes(value: Any, field: str, notes: list[str]) -> Decimal:
    text = str(value).strip().lower()
    match = _JAVA_SIZE.match(text)
    if not match or (match[2] and match[2] not in _JAVA_UNITS):
        raise InterpretError(field, f"{value!r} is not a JVM memory size (e.g. 512m, 2g)")
    if not match[2]:
        notes.append(f"{field} {value!r} has no unit: read as MiB (Karmada's interpreter fails on it)")
        return Decimal(match[1]) * 2**20
    return Decimal(match[1]) * _JAVA_UNITS[match[2]]


def _memory(role: Mapping, field: str, factor: Decimal, notes: list[str]) -> int:
    memory = java_memory_bytes(role.get("memory") or "1g", f"{field}.memory", notes)
    if role.get("memoryOverhead") is not None:
        overhead = java_memory_bytes(role["memoryOverhead"], f"{field}.memoryOverhead", notes)
    else:
        with localcontext() as ctx:
            ctx.prec = 60
            overhead = max(memory * factor, Decimal(MIN_OVERHEAD_BYTES))
    return ceil_div(memory + overhead, Decimal(1))  # whole bytes, rounded up as Quantity.Value()


def _cpu(role: Mapping, field: str, notes: list[str]) -> int:
    if role.get("coreRequest") is not None:
        try:
            amount = quantity_to_int(CPU, str(role["coreRequest"]))
        except QuantityError as error:
            raise InterpretError(f"{field}.coreRequest", str(error)) from None
        notes.append(
            f"{field}.coreRequest {role['coreRequest']} is the pod's cpu request (Karmada's interpreter uses cores)"
        )
        return amount
    cores = number(role.get("cores"), f"{field}.cores")
    return ceil_div((Decimal(1) if cores is None else cores) * 1000, Decimal(1))


def _gpu(role: Mapping, field: str) -> dict[str, int]:
    gpu = mapping(role.get("gpu"), f"{field}.gpu")
    name = gpu.get("name")
    quantity = number(gpu.get("quantity"), f"{field}.gpu.quantity") or Decimal(0)
    if not name or quantity <= 0:
        return {}
    return {str(name): ceil_div(quantity, Decimal(1))}


def _claim(role: Mapping, spec: Mapping, field: str) -> NodeClaim:
    selector_source, selector_field = (role, field) if role.get("nodeSelector") is not None else (spec, "spec")
    terms = get(role, "affinity", "nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms")
    return NodeClaim(
        node_selector(selector_source.get("nodeSelector"), f"{selector_field}.nodeSelector"),
        affinity_terms(
            terms, f"{field}.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms"
        ),
        tolerations(role.get("tolerations"), f"{field}.tolerations"),
    )


def _role(spec: Mapping, key: str, factor: Decimal, namespace: str, notes: list[str]) -> ReplicaShape:
    field = f"spec.{key}"
    role = mapping(spec.get(key), field)
    requests = {CPU: _cpu(role, field, notes), MEMORY: _memory(role, field, factor, notes), **_gpu(role, field)}
    return shape(requests, _claim(role, spec, field), namespace, str(role.get("priorityClassName") or ""))


def _executors(spec: Mapping) -> int:
    count = replicas(get(spec, "executor", "instances"), "spec.executor.instances")
    dynamic = mapping(spec.get("dynamicAllocation"), "spec.dynamicAllocation")
    if dynamic.get("enabled"):
        initial = replicas(dynamic.get("initialExecutors"), "spec.dynamicAllocation.initialExecutors")
        minimum = replicas(dynamic.get("minExecutors"), "spec.dynamicAllocation.minExecutors")
        count = max(count, initial, minimum)
    return count


def sparkapplication(manifest: Mapping, related: Sequence[Mapping] = ()) -> Job:
    namespace, _ = metadata(manifest)
    spec = mapping(manifest.get("spec"), "spec")
    job_type = spec.get("type")
    if not isinstance(job_type, str) or job_type.lower() not in (t.lower() for t in JOB_TYPES):
        raise InterpretError("spec.type", f"must be one of {', '.join(JOB_TYPES)}, got {job_type!r}")
    default_factor = JVM_OVERHEAD_FACTOR if job_type.lower() in JVM_TYPES else NON_JVM_OVERHEAD_FACTOR
    factor = number(spec.get("memoryOverheadFactor"), "spec.memoryOverheadFactor")
    factor = default_factor if factor is None else factor
    notes: list[str] = []
    driver = Component("driver", 1, _role(spec, "driver", factor, namespace, notes))
    executor = Component("executor", _executors(spec), _role(spec, "executor", factor, namespace, notes))
    return make_job(manifest, (driver, executor), notes)
