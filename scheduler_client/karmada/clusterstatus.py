"""A member's Cluster status computed from its objects, as Karmada's cluster status controller.

    resource_summary(nodes, pods)        -> status.resourceSummary
    node_available(nodes, pods)          -> per node, what the resource-model grading sees
    allocatable_modelings(models, nodes, pods) -> status.resourceSummary.allocatableModelings

Facts of the controller reproduced here (pkg/controllers/status/cluster_status_controller.go):
- allocatable: the sum of every node's status.allocatable (every resource name, pods too);
- allocated: requests of pods bound to a node (spec.nodeName) that are not Succeeded/Failed,
  plus their number as `pods`;
- allocating: requests of pods not bound to a node, whatever their phase, plus their number;
- a pod's requests are Karmada's util.Resource.AddPodRequest: app containers summed, each
  init container raising the total to its own request (no sidecar rule, no pod-level
  resources), plus overhead. Requests left out default to limits, as the API server does;
- for models, a node's available = allocatable - its pods' requests (not clamped); a node with
  no pod slot left stops the grading of the nodes after it (Karmada `break`s there).

Inputs are Kubernetes objects as dicts, in file order (Karmada lists them from an informer).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from estimator.api import PODS, TERMINAL_POD_PHASES, ResourceListError, is_counted, parse_resource_list
from scheduler_client.karmada.general import ResourceSummary
from scheduler_client.karmada.resourcemodels import GradeCount, ResourceModel, grade_counts


class StatusError(ValueError):
    """An object whose quantities cannot be read; names the object and field."""


def _amounts(resource_list: Any, where: str, keep: Callable[[str], bool] = is_counted) -> dict[str, int]:
    try:
        return parse_resource_list(resource_list or None, where, keep)  # an empty value reads as no list
    except ResourceListError as error:
        raise StatusError(
            f"{where}.{error.name}: {error.problem}" if error.name else f"{where}: {error.problem}"
        ) from None


def _describe(obj: Mapping) -> str:
    meta = obj.get("metadata") or {}
    namespace = f"{meta['namespace']}/" if meta.get("namespace") else ""
    return f"{obj.get('kind', 'object')} {namespace}{meta.get('name', '<no name>')}"


def _container_requests(container: Mapping, where: str) -> dict[str, int]:
    resources = container.get("resources") or {}
    requests = _amounts(resources.get("requests"), f"{where}.resources.requests")
    for name, amount in _amounts(resources.get("limits"), f"{where}.resources.limits").items():
        requests.setdefault(name, amount)  # API-server defaulting: request = limit when unset
    return requests


def karmada_pod_requests(pod: Mapping) -> dict[str, int]:
    """util.Resource.AddPodRequest on an API-defaulted pod (see the module docstring)."""
    spec = pod.get("spec") or {}
    where = _describe(pod)
    total: dict[str, int] = {}
    for i, container in enumerate(spec.get("containers") or ()):
        for name, amount in _container_requests(container, f"{where}: spec.containers[{i}]").items():
            total[name] = total.get(name, 0) + amount
    for i, container in enumerate(spec.get("initContainers") or ()):
        for name, amount in _container_requests(container, f"{where}: spec.initContainers[{i}]").items():
            total[name] = max(total.get(name, 0), amount)
    for name, amount in _amounts(spec.get("overhead"), f"{where}: spec.overhead").items():
        total[name] = total.get(name, 0) + amount
    return {name: amount for name, amount in total.items() if amount > 0}


def _add(total: dict[str, int], amounts: Mapping[str, int]) -> None:
    for name, amount in amounts.items():
        total[name] = total.get(name, 0) + amount


def _node_allocatable(node: Mapping) -> dict[str, int]:
    # The summary keeps every name a node reports (as the controller's ResourceList sum).
    return _amounts(
        (node.get("status") or {}).get("allocatable"), f"{_describe(node)}: status.allocatable", keep=lambda name: True
    )


def _bound(pod: Mapping) -> bool:
    return bool((pod.get("spec") or {}).get("nodeName"))


def _counted_on_node(pod: Mapping) -> bool:
    return _bound(pod) and (pod.get("status") or {}).get("phase") not in TERMINAL_POD_PHASES


def resource_summary(nodes: Sequence[Mapping], pods: Sequence[Mapping]) -> ResourceSummary:
    allocatable: dict[str, int] = {}
    for node in nodes:
        _add(allocatable, _node_allocatable(node))
    allocated: dict[str, int] = {PODS: 0}
    allocating: dict[str, int] = {PODS: 0}
    for pod in pods:
        if _counted_on_node(pod):
            _add(allocated, karmada_pod_requests(pod))
            allocated[PODS] += 1
        elif not _bound(pod):
            _add(allocating, karmada_pod_requests(pod))
            allocating[PODS] += 1
    positive = lambda amounts: {n: a for n, a in amounts.items() if a > 0}  # noqa: E731 - ResourceList() drops zeros
    return ResourceSummary(allocatable, positive(allocated), positive(allocating))


def node_available(nodes: Sequence[Mapping], pods: Sequence[Mapping]) -> list[dict[str, int] | None]:
    """Per node (in order): allocatable minus its pods' requests; None when no pod slot is left."""
    used: dict[str, dict[str, int]] = {}
    for pod in pods:
        if _counted_on_node(pod):
            node_used = used.setdefault(pod["spec"]["nodeName"], {PODS: 0})
            _add(node_used, karmada_pod_requests(pod))
            node_used[PODS] += 1
    result: list[dict[str, int] | None] = []
    for node in nodes:
        available = _node_allocatable(node)
        node_used = used.get((node.get("metadata") or {}).get("name", ""), {})
        if node_used and available.get(PODS, 0) - node_used.get(PODS, 0) <= 0:
            result.append(None)
            continue
        for name, amount in node_used.items():
            if name in available:
                available[name] -= amount
        result.append(available)
    return result


def allocatable_modelings(
    models: Sequence[ResourceModel], nodes: Sequence[Mapping], pods: Sequence[Mapping]
) -> tuple[GradeCount, ...]:
    """May raise resourcemodels.ModelError (then Karmada records no modelings)."""
    return grade_counts(models, node_available(nodes, pods))


def split_objects(objects: Iterable[Mapping]) -> tuple[list[Mapping], list[Mapping]]:
    """(nodes, pods) of a member's objects, in order."""
    nodes, pods = [], []
    for obj in objects:
        if isinstance(obj, Mapping):
            if obj.get("kind") == "Node":
                nodes.append(obj)
            elif obj.get("kind") == "Pod":
                pods.append(obj)
    return nodes, pods
