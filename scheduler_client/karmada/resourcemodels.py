"""Karmada's cluster resource models: defaults, standardisation, grading nodes, model nodes.

A resource model is a grade with, per resource, a range [min, max). Karmada's cluster
status controller counts how many nodes fall in each grade (status.resourceSummary.
allocatableModelings); the general estimator then packs onto `count` identical "model
nodes" per grade, each with the grade's *minimum* of every described resource and 110 pods.
A resource the models do not describe does not exist on a model node: that is why GPU jobs
fit zero times with the default models (scenario failure 3).

Pure functions over int64 amounts (cpu in millicores, everything else in units).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from estimator.api import CPU, MAX_INT64, MEMORY

GIB = 2**30
# A model node's pod capacity (Kubernetes' default max pods per node), as Karmada uses it.
MODEL_NODE_PODS = 110


@dataclass(frozen=True)
class ModelRange:
    name: str
    min: int
    max: int


@dataclass(frozen=True)
class ResourceModel:
    grade: int
    ranges: tuple[ModelRange, ...]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(r.name for r in self.ranges)


@dataclass(frozen=True)
class GradeCount:
    grade: int
    count: int


class ModelError(ValueError):
    """Models Karmada cannot use (it then falls back to the resource summary alone)."""


def _default_models() -> tuple[ResourceModel, ...]:
    # karmada-aggregated-apiserver's defaults (CustomizedClusterResourceModeling on): cpu in
    # cores and memory in GiB, bounds 0, 1, 2, 4, ... 128 cores and 0, 4, 16, 32, ... 1024 GiB.
    cpu_bounds = (0, 1, 2, 4, 8, 16, 32, 64, 128)
    memory_bounds = (0, 4, 16, 32, 64, 128, 256, 512, 1024)
    models = []
    for grade in range(len(cpu_bounds)):
        last = grade == len(cpu_bounds) - 1
        models.append(
            ResourceModel(
                grade,
                (
                    ModelRange(CPU, cpu_bounds[grade] * 1000, MAX_INT64 if last else cpu_bounds[grade + 1] * 1000),
                    ModelRange(
                        MEMORY, memory_bounds[grade] * GIB, MAX_INT64 if last else memory_bounds[grade + 1] * GIB
                    ),
                ),
            )
        )
    return tuple(models)


DEFAULT_MODELS: tuple[ResourceModel, ...] = _default_models()


def standardize(models: Sequence[ResourceModel]) -> tuple[ResourceModel, ...]:
    """As the apiserver stores them: sorted by grade, first grade's mins 0, last grade's maxes open."""
    if not models:
        return ()
    ordered = sorted(models, key=lambda m: m.grade)
    first, last = ordered[0], ordered[-1]
    ordered[0] = ResourceModel(first.grade, tuple(ModelRange(r.name, 0, r.max) for r in first.ranges))
    last = ordered[-1]
    ordered[-1] = ResourceModel(last.grade, tuple(ModelRange(r.name, r.min, MAX_INT64) for r in last.ranges))
    return tuple(ordered)


def described_names(models: Iterable[ResourceModel]) -> frozenset[str]:
    return frozenset(name for model in models for name in model.names)


def _search_last_not_above(mins: Sequence[int], target: int) -> int:
    """Index of the last min <= target, by the same binary search as Karmada (assumes ascending)."""
    low, high = 0, len(mins) - 1
    while low <= high:
        mid = low + ((high - low) >> 1)
        if mins[mid] <= target:
            if mid == len(mins) - 1 or mins[mid + 1] > target:
                return mid
            low = mid + 1
        else:
            high = mid - 1
    return -1


def grade_counts(
    models: Sequence[ResourceModel], node_available: Iterable[Mapping[str, int] | None]
) -> tuple[GradeCount, ...]:
    """allocatableModelings for nodes' available resources, as the cluster status controller.

    The graded resources are the first model's (Karmada's InitSummary); a node's grade is
    the lowest over those resources of the last grade whose minimum it reaches. A node
    that is out of pod slots arrives as None and, as in Karmada (a `break`), ends the
    count: nodes after it are not graded.
    """
    names: list[str] = []
    for model in models:
        for item in model.ranges:
            if len(names) != len(model.ranges):
                names.append(item.name)
    if not names or len(names) != len({r.name for r in models[0].ranges}):
        raise ModelError("the resource models do not all describe the same resources")
    mins_by_name = {name: [next((r.min for r in m.ranges if r.name == name), 0) for m in models] for name in names}
    counts = [0] * len(models)
    for available in node_available:
        if available is None:
            break
        index = min(_search_last_not_above(mins_by_name[name], available.get(name, 0)) for name in names)
        if index >= 0:  # below every grade's minimum: Karmada drops the node
            counts[index] += 1
    return tuple(GradeCount(model.grade, count) for model, count in zip(models, counts, strict=True))


def model_nodes(models: Sequence[ResourceModel], counts: Sequence[GradeCount]) -> list[tuple[int, dict[str, int]]]:
    """[(grade, capacity)] per model node: grades ascending, `count` identical nodes each."""
    if not models:
        raise ModelError("no resource models defined")
    by_grade: dict[int, int] = {}
    for item in counts:
        if item.count < 0:
            raise ModelError(f"negative node count for grade {item.grade}")
        by_grade[item.grade] = by_grade.get(item.grade, 0) + item.count
    capacity_by_grade: dict[int, dict[str, int]] = {}
    for model in models:  # a grade listed twice: the later one counts, as in Karmada's map
        capacity_by_grade[model.grade] = {**{r.name: r.min for r in model.ranges}, "pods": MODEL_NODE_PODS}
    nodes: list[tuple[int, dict[str, int]]] = []
    for grade in sorted(capacity_by_grade):
        nodes.extend((grade, dict(capacity_by_grade[grade])) for _ in range(by_grade.get(grade, 0)))
    return nodes
