"""ResourceQuota: how many more replicas / sets the namespace's quotas admit.

Starts from Karmada's ResourceQuotaEstimator (requests of cpu, memory and extended
resources; PriorityClass scopes) and counts every quota entry Kubernetes' quota admission
enforces on a pod, which Karmada leaves out:
- `pods` and `count/pods`;
- `ephemeral-storage` and `hugepages-*` requests;
- `limits.cpu`, `limits.memory`, `limits.ephemeral-storage`: a container's limit is never
  below its request, so a replica uses at least its request of a limits quota. Bounding by
  the request never refuses what the quota admits; it is exact for pods whose limits equal
  their requests (the only pods quota admission admits under a limits quota without a
  LimitRange are pods that set limits);
- the scopes a request does decide: `BestEffort` applies to a replica that requests no cpu
  or memory, `NotBestEffort` to one that does, `NotTerminating` to every replica (a request
  carries no `activeDeadlineSeconds`), `Terminating` and `CrossNamespacePodAffinity` to none.
Scopes are ANDed, as Kubernetes does (a quota with several applies only when all match).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TypeVar

from estimator.core.devices import IMPLICIT_PREFIX
from estimator.core.model import AssumedWorkload, Component, ComponentSetsQuery, ReplicaShape, ReplicasQuery
from estimator.core.resources import (
    CPU,
    EPHEMERAL_STORAGE,
    MAX_INT32,
    MEMORY,
    PODS,
    is_hugepages,
)
from estimator.core.resources import (
    is_extended as _is_extended,
)
from estimator.core.snapshot import QuotaRecord, ScopeRequirement
from estimator.estimate.framework import Code, EstimateContext, PluginResult

NAME = "ResourceQuotaEstimator"

PRIORITY_CLASS_SCOPE = "PriorityClass"
_REQUESTS_PREFIX = "requests."
_LIMITS_PREFIX = "limits."
_POD_COUNT_NAMES = {"pods": PODS, "count/pods": PODS}
_LIMITED = (CPU, MEMORY, EPHEMERAL_STORAGE)  # the resources a `limits.*` quota entry can name for pods
# Scopes decided by whether a replica asks for cpu or memory, or by nothing in the request.
_BEST_EFFORT, _NOT_BEST_EFFORT = "BestEffort", "NotBestEffort"
_ALWAYS = frozenset({"NotTerminating"})
_NEVER = frozenset({"Terminating", "CrossNamespacePodAffinity", "VolumeAttributesClass"})

# A regular-expression check per resource per request; the names repeat.
is_extended = functools.lru_cache(maxsize=1024)(_is_extended)


def _quota_counted(name: str) -> bool:
    """A requested resource some quota entry counts: cpu, memory, ephemeral storage, hugepages,
    extended, and a DRA class by its implicit name (charged through its alias, `_aliased`)."""
    return name in _LIMITED or is_hugepages(name) or is_extended(name) or name.startswith(IMPLICIT_PREFIX)


def _constrained_name(quota_name: str) -> str | None:
    """The request resource a quota entry bounds, or None (storage, object counts, unknown)."""
    if quota_name in _POD_COUNT_NAMES:
        return _POD_COUNT_NAMES[quota_name]
    if quota_name.startswith(_LIMITS_PREFIX):
        name = quota_name[len(_LIMITS_PREFIX) :]
        return name if name in _LIMITED else None
    if quota_name.startswith("count/"):
        return None  # object counts other than pods do not bound pods
    name = quota_name[len(_REQUESTS_PREFIX) :] if quota_name.startswith(_REQUESTS_PREFIX) else quota_name
    return name if _quota_counted(name) else None


def free_amounts(quota: QuotaRecord) -> dict[str, int]:
    """hard - used per bounded resource; `cpu`, `requests.cpu` and `limits.cpu` all bound cpu
    (keep the tightest)."""
    free: dict[str, int] = {}
    for quota_name, hard in quota.hard.items():
        name = _constrained_name(quota_name)
        if name is None or quota_name not in quota.used:
            continue
        amount = hard - quota.used[quota_name]
        free[name] = min(free.get(name, amount), amount)
    return free


def _scope_matches(scope: ScopeRequirement, shape: ReplicaShape) -> bool:
    if scope.scope_name == PRIORITY_CLASS_SCOPE:
        return _priority_matches(scope, shape.priority_class)
    if scope.scope_name in (_BEST_EFFORT, _NOT_BEST_EFFORT):
        best_effort = shape.request(CPU) <= 0 and shape.request(MEMORY) <= 0
        holds = best_effort if scope.scope_name == _BEST_EFFORT else not best_effort
    elif scope.scope_name in _ALWAYS:
        holds = True
    else:  # _NEVER, and any scope this version does not know: it is not about pods
        holds = False
    return holds if scope.operator != "DoesNotExist" else not holds


def _priority_matches(scope: ScopeRequirement, priority_class: str) -> bool:
    has_class = priority_class != ""
    if scope.operator == "Exists":
        return has_class
    if scope.operator == "DoesNotExist":
        return not has_class
    if scope.operator == "In":
        return has_class and priority_class in scope.values
    if scope.operator == "NotIn":
        return not has_class or priority_class not in scope.values
    return False


def quota_applies(quota: QuotaRecord, shape: ReplicaShape) -> bool:
    return all(_scope_matches(s, shape) for s in quota.scopes)


def _demand(components: Iterable[Component]) -> dict[str, int]:
    """Quota usage of one set: replicas x per-replica request, plus one pod per replica."""
    demand: dict[str, int] = {}
    for component in components:
        demand[PODS] = demand.get(PODS, 0) + component.replicas
        for name, amount in component.shape.requests:
            if _quota_counted(name):
                demand[name] = demand.get(name, 0) + amount * component.replicas
    return demand


def _matching(components: Iterable[Component], quota: QuotaRecord) -> list[Component]:
    if not quota.scopes:
        return list(components)
    return [c for c in components if quota_applies(quota, c.shape)]


def _wanted(components: Sequence[Component], quota: QuotaRecord) -> dict[str, int] | None:
    """One unit's demand of the components the quota applies to; None when it applies to none."""
    matching = _matching(components, quota)
    return _demand(matching) if matching else None


def _set_demand(query: ComponentSetsQuery) -> dict[str, int] | None:
    """One set's demand of all its components (kept per query object: RequestCaches.set_demand)."""
    return _demand(query.components) if query.components else None


def _assumed_in(assumed: Sequence[AssumedWorkload], namespace: str) -> list[Component]:
    return [c for w in assumed if w.namespace == namespace for c in w.components]


# A demand, or None (no component falls under the quota): `_aliased` returns what it is given.
_Demand = TypeVar("_Demand", dict[str, int], None)


def _aliased(demand: _Demand, aliases: Mapping[str, str]) -> _Demand:
    """A demand with DRA class names charged as quota admission charges their claims: a device
    of a class asked for by its implicit name counts against `requests.<the class's
    extendedResourceName>`."""
    if not demand or not aliases or not any(name in aliases for name in demand):
        return demand
    out: dict[str, int] = {}
    for name, amount in demand.items():
        key = aliases.get(name, name)
        out[key] = out.get(key, 0) + amount
    return out


def _admit_in_flight(
    quotas: Sequence[QuotaRecord],
    frees: list[dict[str, int]],
    assumed: list[Component],
    aliases: Mapping[str, str] = {},
) -> None:
    """Take from `frees` (one free_amounts copy per quota) what quota admission would admit of
    the in-flight replicas: one pod at a time, each admitted only while it fits every quota
    that applies to it; a refused pod takes nothing (it never exists). Identical replicas of
    one component are admitted as one count."""
    for component in assumed:
        demand = _aliased(_demand([Component(component.name, 1, component.shape)]), aliases)
        applying = [i for i, quota in enumerate(quotas) if quota_applies(quota, component.shape)]
        admitted = component.replicas
        for i in applying:
            for name, amount in demand.items():
                left = frees[i].get(name)
                if left is not None and amount > 0:
                    admitted = min(admitted, max(left, 0) // amount)
        if admitted <= 0:
            continue
        for i in applying:
            for name, amount in demand.items():
                if name in frees[i]:
                    frees[i][name] -= admitted * amount


def _allowed(quota: QuotaRecord, free: dict[str, int], wanted: dict[str, int] | None) -> tuple[int, str]:
    """How many units the quota admits, and why. `wanted`: one unit's demand (`_demand`),
    None when no wanted component falls under the quota; `free`: what the quota has left."""
    if wanted is None:
        return MAX_INT32, ""
    best, limiting = MAX_INT32, None
    for name, per_unit in wanted.items():
        left = free.get(name)
        if left is None or per_unit <= 0:
            continue
        allowed = (left if left > 0 else 0) // per_unit
        if allowed < best:
            best, limiting = allowed, name
    if limiting is None:
        return best, ""
    # The reason names the resource that set the answer; formatted once, not per resource.
    return best, (
        f"ResourceQuota {quota.namespace}/{quota.name}: {limiting} free {max(free[limiting], 0)}, "
        f"needed {wanted[limiting]} each"
    )


class ResourceQuotaPlugin:
    NAME = NAME

    def _estimate(
        self,
        ctx: EstimateContext,
        namespace: str,
        wanted_for: Callable[[QuotaRecord], dict[str, int] | None],
        assumed: list[Component],
    ) -> PluginResult:
        quotas = ctx.snapshot.quotas.get(namespace, ()) if namespace else ()
        if not quotas:
            return PluginResult(MAX_INT32)
        # Free amounts depend only on the snapshot's quotas: worked out once per namespace.
        free: Sequence[dict[str, int]] = ctx.snapshot.derived(
            (NAME, namespace), lambda: tuple(free_amounts(q) for q in quotas)
        )
        aliases = ctx.snapshot.dra_aliases
        if assumed:
            copies = [dict(f) for f in free]
            _admit_in_flight(quotas, copies, assumed, aliases)
            free = copies
        value, reason = MAX_INT32, ""
        for quota, quota_free in zip(quotas, free, strict=True):  # one free amount per quota
            wanted = wanted_for(quota)
            allowed, why = _allowed(quota, quota_free, None if wanted is None else _aliased(wanted, aliases))
            if allowed < value:
                value, reason = allowed, why
        if value == 0:
            return PluginResult(0, Code.UNSCHEDULABLE, reason)
        return PluginResult(value, reason=reason)

    def estimate_replicas(self, ctx: EstimateContext, query: ReplicasQuery) -> PluginResult:
        shape = query.shape
        if shape is None:
            return PluginResult(MAX_INT32)
        one = Component("replica", 1, shape)
        return self._estimate(
            ctx, shape.namespace, lambda quota: _wanted([one], quota), _assumed_in(query.assumed, shape.namespace)
        )

    def estimate_components(self, ctx: EstimateContext, query: ComponentSetsQuery) -> PluginResult:
        if not query.components:
            return PluginResult(MAX_INT32)
        whole = ctx.caches.set_demand.get(query, _set_demand)  # a quota without scopes takes every component
        return self._estimate(
            ctx,
            query.namespace,
            lambda quota: _wanted(query.components, quota) if quota.scopes else whole,
            _assumed_in(query.assumed, query.namespace) if query.assumed else [],
        )
