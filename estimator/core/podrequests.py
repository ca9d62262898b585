"""A pod's effective resource requests, computed the way the kube-scheduler counts them.

Pure functions over Kubernetes objects as dicts (JSON/YAML camelCase). The result holds
only counted resources (`resources.is_counted`) as int64 units (cpu in millicores), with
zero entries dropped, so callers can add it straight into a node's requested row.

    effective = max(sum(app containers) + sum(sidecars),
                    max over init containers i of (init_i + sidecars started before i))
    pod-level spec.resources.requests replace `effective` for the names they set
    + spec.overhead

Each quantity is rounded to an integer before summing, as Karmada's NodeInfo does
(util.Resource.Add converts every container's quantity on its own).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from functools import lru_cache
from typing import Any

from estimator.core.resources import (
    CPU,
    MEMORY,
    QuantityError,
    is_counted,
    is_hugepages,
    parse_resource_list,
    quantity_to_int,
)

# Restartable init containers ("sidecars") have this container-level restartPolicy.
SIDECAR_RESTART_POLICY = "Always"


def _is_pod_level_resource(name: str) -> bool:
    # resourcehelper.IsSupportedPodLevelResource: cpu, memory (and hugepages since 1.34).
    return name in (CPU, MEMORY) or is_hugepages(name)


def _parse_list(resource_list: Any, where: str) -> dict[str, int]:
    """A ResourceList's counted entries as ints; `where` names the owner in errors."""
    return parse_resource_list(resource_list, where, keep=is_counted)


def _container_requests(container: Any, kind: str, index: int) -> dict[str, int]:
    if not isinstance(container, dict):
        raise ValueError(f"{kind} #{index}: expected a mapping")
    label = f"{kind} {container.get('name', f'#{index}')!r}"
    resources = container.get("resources") or {}
    if not isinstance(resources, dict):
        raise ValueError(f"{label}: resources: expected a mapping")
    requests = _parse_list(resources.get("requests"), f"{label}: requests")
    # A request left out defaults to the limit (API server defaulting for pods,
    # AddPodTemplateRequest for templates).
    for name, amount in _parse_list(resources.get("limits"), f"{label}: limits").items():
        requests.setdefault(name, amount)
    return requests


def _add(total: dict[str, int], amounts: Mapping[str, int]) -> None:
    for name, amount in amounts.items():
        total[name] = total.get(name, 0) + amount


def _raise_to(total: dict[str, int], amounts: Mapping[str, int]) -> None:
    for name, amount in amounts.items():
        if amount > total.get(name, 0):
            total[name] = amount


def _containers(spec: Mapping, key: str) -> Iterable[Any]:
    containers = spec.get(key) or []
    if not isinstance(containers, list):
        raise ValueError(f"spec.{key}: expected a list")
    return containers


@lru_cache(maxsize=1024)
def _counted(name: str) -> bool:
    # Resource names are few; is_counted runs regexes on extended ones (~4 us a call).
    return is_counted(name)


def counted_amount(name: str, text: str) -> int | None:
    """One quantity for `simple_requests`: its int64 units, -1 for a resource not counted,
    None for one the general path must judge (malformed, negative)."""
    if not _counted(name):
        return -1
    try:
        amount = quantity_to_int(name, text)
    except QuantityError:
        return None
    return amount if amount >= 0 else None


def simple_requests(spec: dict, amount: Callable[[str, str], int | None] = counted_amount) -> dict[str, int] | None:
    """The common pod's requests (app containers whose resources are plain dicts of quantity
    strings; no init containers, pod-level resources or overhead) at a fraction of the
    general path's cost; None for anything else, and for anything wrong, which the general
    path then reports. Both give equal answers (tests/cluster/test_simple_requests.py).
    `amount` reads one quantity as `counted_amount` does (the bulk loader passes a memo)."""
    if spec.get("initContainers") or spec.get("resources") or spec.get("overhead") is not None:
        return None
    containers = spec.get("containers") or []
    if type(containers) is not list:
        return None
    total: dict[str, int] = {}
    for container in containers:
        if type(container) is not dict:
            return None
        resources = container.get("resources") or {}
        if type(resources) is not dict:
            return None
        requests, limits = resources.get("requests"), resources.get("limits")
        if (requests is not None and type(requests) is not dict) or (limits is not None and type(limits) is not dict):
            return None
        if not limits:  # the common case: requests alone, added as read
            if requests:
                for name, text in requests.items():
                    if type(text) is not str or type(name) is not str:
                        return None
                    value = amount(name, text)
                    if value is None:
                        return None
                    if value >= 0:
                        total[name] = total.get(name, 0) + value
            continue
        amounts: dict[str, int] = {}
        for source in (requests, limits):  # a request left out defaults to the limit
            if source:
                for name, text in source.items():
                    if type(text) is not str or type(name) is not str:
                        return None
                    value = amount(name, text)  # every limit is checked, as there
                    if value is None:
                        return None
                    if value >= 0:
                        amounts.setdefault(name, value)
        for name, value in amounts.items():
            total[name] = total.get(name, 0) + value
    return {name: value for name, value in total.items() if value != 0}


def pod_spec_requests(spec: Mapping) -> dict[str, int]:
    """Effective requests of a PodSpec (see the module docstring for the formula)."""
    if not isinstance(spec, dict):
        raise ValueError("spec: expected a mapping")
    simple = simple_requests(spec)
    return simple if simple is not None else general_spec_requests(spec)


def general_spec_requests(spec: dict) -> dict[str, int]:
    """`pod_spec_requests` for every spec: init containers, sidecars, pod-level resources."""
    total: dict[str, int] = {}
    requested_by_containers: set[str] = set()
    for i, container in enumerate(_containers(spec, "containers")):
        requests = _container_requests(container, "container", i)
        requested_by_containers.update(requests)
        _add(total, requests)

    sidecars: dict[str, int] = {}
    init_peak: dict[str, int] = {}
    for i, container in enumerate(_containers(spec, "initContainers")):
        requests = _container_requests(container, "init container", i)
        requested_by_containers.update(requests)
        if container.get("restartPolicy") == SIDECAR_RESTART_POLICY:
            # A sidecar keeps running next to the app containers and later init containers.
            _add(total, requests)
            _add(sidecars, requests)
            _raise_to(init_peak, sidecars)
        else:
            running = dict(requests)
            _add(running, sidecars)
            _raise_to(init_peak, running)
    _raise_to(total, init_peak)

    pod_resources = spec.get("resources") or {}
    if not isinstance(pod_resources, dict):
        raise ValueError("spec.resources: expected a mapping")
    pod_level = _parse_list(pod_resources.get("requests"), "pod-level resources: requests")
    # API server defaulting: a pod-level limit with no pod-level request becomes the request
    # only when no container asks for that resource (otherwise the container sum stands).
    for name, amount in _parse_list(pod_resources.get("limits"), "pod-level resources: limits").items():
        if name not in pod_level and name not in requested_by_containers:
            pod_level[name] = amount
    for name, amount in pod_level.items():
        if _is_pod_level_resource(name):
            total[name] = amount

    _add(total, _parse_list(spec.get("overhead"), "spec.overhead"))
    return {name: amount for name, amount in total.items() if amount != 0}


def pod_requests(pod: Mapping) -> dict[str, int]:
    """Effective requests of a Pod object; ValueError names the container and resource."""
    spec = pod.get("spec") if isinstance(pod, dict) else None
    return pod_spec_requests(spec or {})


def pod_template_requests(template: Mapping) -> dict[str, int]:
    """Effective requests of a PodTemplateSpec (`{metadata, spec}`), e.g. a job replica's."""
    if not isinstance(template, dict):
        raise ValueError("template: expected a mapping")
    return pod_spec_requests(template.get("spec") or {})
