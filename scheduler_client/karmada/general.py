"""Karmada's general estimator for component sets, as two estimators that show their work.

- `summary_sets`: the resource-summary path (GeneralEstimator.maxAvailableComponentSets):
  cluster totals available = allocatable - allocated - allocating; sets = min(free pods /
  pods per set, min over requested resources of free / demand per set). No per-node view:
  6 GPUs spread 2 per node look like room for a worker that needs 3 (scenario failure 4).
- `model_sets`: the resource-model path (getMaximumSetsBasedOnResourceModels): first-fit
  packing onto identical model nodes per grade. Karmada takes min(summary, models).

Where Karmada answers 0 because it cannot see (no resource summary; models that do not
describe a requested resource, scenario failure 3), we answer -1, "unknown", with the
reason, so the minimum over estimators ignores it; `karmada_compatible=True` gives Karmada's 0.
It also counts amounts as Karmada does by their written format (karmada_units): a decimal-
format memory allocatable or a memory request that is not a multiple of 1Ki is off by 1000
in Karmada's summary path.

Pure: amounts are int64 (cpu in millicores); the only non-Python work is the first-fit
kernel (estimator.api.first_fit_sets), the same one the accurate estimator uses.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

import numpy as np

from estimator.api import CPU, MAX_INT32, PODS, AssumedWorkload, Component, first_fit_sets
from scheduler_client.karmada.resourcemodels import GradeCount, ModelError, ResourceModel, described_names, model_nodes
from scheduler_client.units import human

UNKNOWN = -1


@dataclass(frozen=True)
class ResourceSummary:
    """A Cluster's status.resourceSummary, amounts as int64 (cpu in millicores)."""

    allocatable: Mapping[str, int] = field(default_factory=dict)
    allocated: Mapping[str, int] = field(default_factory=dict)
    allocating: Mapping[str, int] = field(default_factory=dict)
    # Resources (not cpu) whose allocatable quantity is written in a decimal format ("8",
    # "68719476736", "64G"): Karmada's general estimator counts those in thousandths. None:
    # as Karmada's status controller writes them, binary for memory-like resources.
    decimal_format: frozenset[str] | None = field(default=None, compare=False)

    def available(self, name: str) -> int:
        """allocatable - allocated - allocating; may be negative (over-committed)."""
        return self.allocatable.get(name, 0) - self.allocated.get(name, 0) - self.allocating.get(name, 0)

    def allowed_pods(self) -> int:
        return max(self.available(PODS), 0)

    def with_assumed(self, workloads: Sequence[AssumedWorkload]) -> ResourceSummary:
        """The summary after Karmada's general estimator deducts in-flight workloads
        (deductAssumedWorkloads): every assumed component's replicas as pods, and replicas x
        request of each resource, counted as allocating."""
        if not workloads:
            return self
        allocating = dict(self.allocating)
        for workload in workloads:
            for c in workload.components:
                if c.replicas <= 0:
                    continue
                allocating[PODS] = allocating.get(PODS, 0) + c.replicas
                for name, amount in c.shape.requests:
                    allocating[name] = allocating.get(name, 0) + amount * c.replicas
        return replace(self, allocating=allocating)


@dataclass(frozen=True)
class Estimate:
    """One estimator's answer for one member. value None: it does not apply (not asked);
    UNKNOWN (-1): it cannot tell; otherwise complete sets."""

    value: int | None
    reason: str


def pods_per_set(components: Sequence[Component]) -> int:
    return sum(c.replicas for c in components)


def set_demand(components: Sequence[Component]) -> dict[str, int]:
    """Per-resource demand of one complete set: sum over components of replicas x request."""
    demand: dict[str, int] = {}
    for c in components:
        for name, amount in c.shape.requests:
            demand[name] = demand.get(name, 0) + amount * c.replicas
    return demand


def requested_names(components: Sequence[Component]) -> frozenset[str]:
    return frozenset(name for c in components if c.replicas > 0 for name, amount in c.shape.requests if amount > 0)


_NATIVE = frozenset({CPU, "memory", "ephemeral-storage", PODS})


def extended_names(names: frozenset[str]) -> frozenset[str]:
    """Those of `names` that are extended resources (nvidia.com/gpu, a DRA class's name): whole
    devices, a few per node. The resource summary adds them up over the member's nodes, so it
    cannot tell 2 + 2 + 2 free GPUs from 6 on one node; Kubernetes' own resources (cpu, memory,
    ephemeral-storage, hugepages-*) are left out."""
    return frozenset(n for n in names if n not in _NATIVE and not n.startswith("hugepages-"))


_BINARY_REQUESTS = ("memory", "ephemeral-storage")


def memory_like(name: str) -> bool:
    return name in _BINARY_REQUESTS or name.startswith("hugepages-")


def karmada_units(name: str, amount: int, allocatable: bool, decimal_format: frozenset[str] | None = None) -> int:
    """An amount as Karmada's general estimator counts it (quantityAsInt64): MilliValue for a
    quantity in a decimal format, Value for a binary one. Requests come from Karmada's own
    ResourceList: cpu in milli, memory-like in a binary format when a multiple of 1Ki (else
    decimal after the binding's JSON round trip), everything else decimal."""
    if name == CPU:
        return amount  # already millicores, and decimal on both sides
    if allocatable:
        decimal = not memory_like(name) if decimal_format is None else name in decimal_format
        return amount * 1000 if decimal else amount
    binary = memory_like(name) and amount % 1024 == 0 and amount >= 1024
    return amount if binary else amount * 1000


def summary_sets(
    summary: ResourceSummary | None, components: Sequence[Component], karmada_compatible: bool = False
) -> Estimate:
    if summary is None:
        if karmada_compatible:
            return Estimate(0, "no resourceSummary in the Cluster status: Karmada answers 0")
        return Estimate(UNKNOWN, "unknown: no resourceSummary in the Cluster status (Karmada would answer 0)")
    allowed = summary.allowed_pods()
    if allowed <= 0:
        return Estimate(0, "cluster totals: no free pod slots")
    pods = pods_per_set(components)
    if pods <= 0:
        return Estimate(min(allowed, MAX_INT32), f"the set has no pods: bounded by {allowed} free pod slots")
    best = min(allowed // pods, MAX_INT32)
    why = f"cluster totals: {allowed} free pod slots, {pods} pods per set"
    demand = set_demand(components)
    if karmada_compatible:
        karmada_best = _karmada_quirk(summary, components, best)
        if karmada_best is not None:
            return karmada_best
    for name, need in sorted(demand.items()):
        if need <= 0:
            continue
        free = summary.available(name)
        if free <= 0:
            return Estimate(
                0,
                f"cluster totals: no free {name} (allocatable {human(name, summary.allocatable.get(name, 0))}"
                f", allocated {human(name, summary.allocated.get(name, 0))}, allocating "
                f"{human(name, summary.allocating.get(name, 0))} for pods not yet on a node; "
                f"one set needs {human(name, need)})",
            )
        if free // need < best:
            best = free // need
            why = f"cluster totals: {human(name, free)} {name} free, {human(name, need)} per set"
    return Estimate(best, why)


def _karmada_quirk(summary: ResourceSummary, components: Sequence[Component], bound: int) -> Estimate | None:
    """Karmada's number when its unit mix-up (see karmada_units) changes it, else None."""
    sets = bound
    for name, need in sorted(set_demand(components).items()):
        if need <= 0:
            continue
        free = karmada_units(name, summary.available(name), True, summary.decimal_format)
        need_k = sum(
            c.replicas * karmada_units(name, c.shape.request(name), False)
            for c in components
            if c.shape.request(name) > 0
        )
        if free <= 0:
            return None  # 0 sets either way; the plain path explains it
        sets = min(sets, free // need_k)
    plain = bound
    for name, need in set_demand(components).items():
        if need > 0 and summary.available(name) > 0:
            plain = min(plain, summary.available(name) // need)
    if sets == plain:
        return None
    return Estimate(
        sets,
        f"cluster totals as Karmada counts them: {sets} set(s), where the amounts say {plain}: "
        "Karmada's general estimator reads quantities in a decimal format (allocatable written "
        'like "68719476736", or a memory request that is not a multiple of 1Ki) in thousandths',
    )


def _grades_text(nodes: Sequence[tuple[int, dict[str, int]]], names: Sequence[str]) -> str:
    per_grade: dict[int, tuple[int, dict[str, int]]] = {}
    for grade, capacity in nodes:
        count, _ = per_grade.get(grade, (0, capacity))
        per_grade[grade] = (count + 1, capacity)
    parts = []
    for grade, (count, capacity) in sorted(per_grade.items()):
        mins = ", ".join(f"{n} {human(n, capacity[n])}" for n in names if n in capacity)
        parts.append(f"grade {grade} x{count} ({mins})")
    return "; ".join(parts)


def model_sets(
    models: Sequence[ResourceModel],
    counts: Sequence[GradeCount] | None,
    components: Sequence[Component],
    karmada_compatible: bool = False,
    assumed: Sequence[AssumedWorkload] = (),
) -> Estimate:
    """`assumed`: in-flight workloads, each placed once with first-fit before the job, as
    Karmada pre-simulates them onto the model nodes (what does not fit takes what it took)."""
    if not models:
        return Estimate(None, "no resource models")
    if not counts:
        return Estimate(None, "no allocatableModelings in the Cluster status")
    try:
        nodes = model_nodes(models, counts)
    except ModelError as error:
        return Estimate(None, f"resource models unusable ({error}); Karmada uses the summary alone")
    if pods_per_set(components) <= 0:
        return Estimate(None, "the set has no pods")
    described = described_names(models)
    requested = requested_names(components)
    blind = sorted(requested - described)
    if blind and not karmada_compatible:
        return Estimate(
            UNKNOWN,
            f"unknown: the resource models describe only {', '.join(sorted(described))}; "
            f"the job asks {', '.join(blind)} (Karmada would answer 0)",
        )
    if not nodes:
        return Estimate(0, "no model nodes: every grade counts 0 nodes")
    in_flight = [w.components for w in assumed if w.components]
    columns = (PODS, *sorted(requested | frozenset().union(*(requested_names(w) for w in in_flight))))
    available = np.array([[capacity.get(c, 0) for c in columns] for _, capacity in nodes], dtype=np.int64)

    def rows(parts: Sequence[Component]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        requests = np.array([[1, *(c.shape.request(name) for name in columns[1:])] for c in parts], dtype=np.int64)
        replicas = np.array([c.replicas for c in parts], dtype=np.int64)
        masks = np.ones((len(parts), len(nodes)), dtype=np.bool_)  # model nodes have no labels or taints
        return requests, replicas, masks

    for workload in in_flight:
        first_fit_sets(available, *rows(workload), 1)  # consumes `available`
    packing = first_fit_sets(available, *rows(components), MAX_INT32)
    why = f"first-fit on {len(nodes)} model nodes: {_grades_text(nodes, sorted(described))}"
    if in_flight:
        why += f", after {len(in_flight)} in-flight workload(s)"
    if blind:
        why += f"; a model node has no {', '.join(blind)}, so Karmada answers 0"
    return Estimate(int(packing.sets), why)
