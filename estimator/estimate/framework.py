"""Plugin framework: the answer is the minimum over plugins, as Karmada's frameworkImpl.

A plugin answers with a `PluginResult`. Results that are SUCCESS or UNSCHEDULABLE take
part in the minimum; NOOP (the plugin has nothing to say, e.g. empty components) does not.
If no plugin constrains the request the answer is math.MaxInt32, like the Go server.
"""

from __future__ import annotations

import enum
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from estimator.core.model import ComponentSetsQuery, ReplicasQuery
from estimator.core.resources import MAX_INT32
from estimator.core.snapshot import ClusterSnapshot
from estimator.estimate.requeststate import RequestCaches

NO_CONSTRAINT = MAX_INT32


class Code(enum.Enum):
    SUCCESS = "Success"
    UNSCHEDULABLE = "Unschedulable"
    NOOP = "NoOperation"


@dataclass(frozen=True)
class PluginResult:
    value: int
    code: Code = Code.SUCCESS
    reason: str = ""
    # Optional evidence for the answer (e.g. a witness placement); never used for arithmetic.
    detail: object | None = None

    @classmethod
    def noop(cls, reason: str) -> PluginResult:
        return cls(NO_CONSTRAINT, Code.NOOP, reason)


# Best mode's default work budget: its search after first-fit may do this many times
# first-fit's own work in the request, counted in node visits (kernels.best_sets).
DEFAULT_BEST_BUDGET = 1.0


@dataclass(frozen=True)
class EstimateContext:
    """One estimate's inputs: the snapshot it reads, the packing mode, and the caches that
    outlive the request (requeststate.RequestCaches: the Estimator's; a fresh set when none
    is given, so a bare context keeps nothing between calls)."""

    snapshot: ClusterSnapshot
    packing: str = "best"  # "best" or "first-fit"
    best_budget: float | None = DEFAULT_BEST_BUDGET  # None: search without a time limit
    caches: RequestCaches = field(default_factory=RequestCaches)


class ReplicasPlugin(Protocol):
    NAME: str

    def estimate_replicas(self, ctx: EstimateContext, query: ReplicasQuery) -> PluginResult: ...


class ComponentsPlugin(Protocol):
    NAME: str

    def estimate_components(self, ctx: EstimateContext, query: ComponentSetsQuery) -> PluginResult: ...


@dataclass(frozen=True)
class FrameworkResult:
    value: int
    results: dict[str, PluginResult] = field(default_factory=dict)
    # Seconds spent in each plugin, for the plugin-duration metrics.
    durations: dict[str, float] = field(default_factory=dict)

    @property
    def unschedulable(self) -> bool:
        return any(r.code is Code.UNSCHEDULABLE for r in self.results.values())


def _minimum(results: dict[str, PluginResult]) -> int:
    value = NO_CONSTRAINT
    for result in results.values():
        if result.code is not Code.NOOP:
            value = min(value, result.value)
    return max(value, 0)


class Framework:
    """Runs the plugins in registration order and keeps every result for explanations."""

    def __init__(self, replicas_plugins: Sequence[ReplicasPlugin], components_plugins: Sequence[ComponentsPlugin]):
        self.replicas_plugins = tuple(replicas_plugins)
        self.components_plugins = tuple(components_plugins)

    def run_replicas(self, ctx: EstimateContext, query: ReplicasQuery) -> FrameworkResult:
        results, durations = {}, {}
        for plugin in self.replicas_plugins:
            started = time.perf_counter()
            results[plugin.NAME] = plugin.estimate_replicas(ctx, query)
            durations[plugin.NAME] = time.perf_counter() - started
        return FrameworkResult(_minimum(results), results, durations)

    def run_components(self, ctx: EstimateContext, query: ComponentSetsQuery) -> FrameworkResult:
        results, durations = {}, {}
        for plugin in self.components_plugins:
            started = time.perf_counter()
            results[plugin.NAME] = plugin.estimate_components(ctx, query)
            durations[plugin.NAME] = time.perf_counter() - started
        return FrameworkResult(_minimum(results), results, durations)
