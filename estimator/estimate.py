"""The estimate step: one snapshot per request, the framework over it, the answer.

As Karmada's EstimateReplicas / EstimateComponents: a member with no nodes answers 0 before
any plugin runs. Packing mode and plugins are fixed at construction.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Callable

from estimator.errors import NotReady
from estimator.framework import EstimateContext, Framework, FrameworkResult
from estimator.model import ComponentSetsQuery, ReplicasQuery, WorkloadRef
from estimator.plugins.noderesource import NAME as NODE_RESOURCE, PACKING_MODES, NodeResourcePlugin
from estimator.plugins.resourcequota import ResourceQuotaPlugin
from estimator.snapshot import ClusterSnapshot

SnapshotSource = Callable[[], "ClusterSnapshot | None"]


def default_framework() -> Framework:
    plugins = [NodeResourcePlugin(), ResourceQuotaPlugin()]
    return Framework(plugins, plugins)


@dataclass(frozen=True)
class SetsEstimate:
    sets: int
    outcome: FrameworkResult | None
    snapshot: ClusterSnapshot
    components: tuple[str, ...] = ()
    replicas: tuple[int, ...] = ()

    def witness(self) -> dict[str, dict[str, int]] | None:
        """{component: {node: replicas}} placing all `sets` sets, from the node-resource packing.

        The packing may hold more sets than another plugin (a quota) allows; dropping
        replicas from a valid placement keeps it valid, so it is trimmed to the answer.
        """
        result = self.outcome.results.get(NODE_RESOURCE) if self.outcome else None
        packing = getattr(result, "detail", None)
        if packing is None or packing.sets < self.sets:
            return None
        names = self.snapshot.node_names
        witness: dict[str, dict[str, int]] = {}
        for c, component in enumerate(self.components):
            left = self.sets * self.replicas[c]
            placed: dict[str, int] = {}
            for n in packing.placement[c].nonzero()[0]:
                if left == 0:
                    break
                take = min(int(packing.placement[c, n]), left)
                placed[names[n]] = take
                left -= take
            witness[component] = placed
        return witness


class Estimator:
    def __init__(self, snapshots: SnapshotSource, packing: str = "best", framework: Framework | None = None):
        if packing not in PACKING_MODES:
            raise ValueError(f"packing must be one of {', '.join(PACKING_MODES)}, got {packing!r}")
        self._snapshots = snapshots
        self.packing = packing
        self.framework = framework or default_framework()

    def snapshot(self) -> ClusterSnapshot:
        snapshot = self._snapshots()
        if snapshot is None:
            raise NotReady("no cluster state loaded yet")
        return snapshot

    def max_available_replicas(self, query: ReplicasQuery) -> tuple[int, FrameworkResult | None]:
        snapshot = self.snapshot()
        if snapshot.num_nodes == 0:
            return 0, None
        outcome = self.framework.run_replicas(EstimateContext(snapshot, self.packing), query)
        return outcome.value, outcome

    def max_available_component_sets(self, query: ComponentSetsQuery) -> SetsEstimate:
        snapshot = self.snapshot()
        if snapshot.num_nodes == 0:
            return SetsEstimate(0, None, snapshot)
        outcome = self.framework.run_components(EstimateContext(snapshot, self.packing), query)
        names = tuple(c.name for c in query.components)
        replicas = tuple(c.replicas for c in query.components)
        return SetsEstimate(outcome.value, outcome, snapshot, names, replicas)

    def unschedulable_replicas(self, ref: WorkloadRef, now: float | None = None) -> int:
        snapshot = self.snapshot()
        return snapshot.workloads.count_unschedulable(ref, time.time() if now is None else now)
