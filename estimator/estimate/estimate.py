"""The estimate step: one snapshot per request, the framework over it, the answer.

As Karmada's EstimateReplicas / EstimateComponents: a member with no nodes answers 0 before
any plugin runs. Packing mode and plugins are fixed at construction.

Answers are remembered per snapshot: the scheduler asks the same few shapes again and again,
and an answer depends only on the snapshot (nodes, pods, quotas) and the request (in-flight
workloads included), both immutable, so a repeat within one snapshot skips the plugins.
A new snapshot (any watch event or reload) starts an empty memo.
"""

from __future__ import annotations

import time
import weakref
from dataclasses import dataclass
from typing import Callable

from estimator.core.errors import NotReady
from estimator.core.model import ComponentSetsQuery, ReplicasQuery, WorkloadRef
from estimator.core.snapshot import ClusterSnapshot
from estimator.estimate.framework import DEFAULT_BEST_BUDGET, Code, EstimateContext, Framework, FrameworkResult
from estimator.estimate.plugins.noderesource import NAME as NODE_RESOURCE, PACKING_MODES, NodeResourcePlugin
from estimator.estimate.plugins.resourcequota import ResourceQuotaPlugin
from estimator.estimate.querymemo import HashedKey, IdentityMemo

SnapshotSource = Callable[[], "ClusterSnapshot | None"]

# Answers kept per snapshot: a component-set answer holds its placement (int64 per component
# and node, 240 KB for a 3-component job on 10k nodes), so the memo stays small.
ANSWERS_PER_SNAPSHOT = 16


class _AnswerMemo:
    """Answers for the newest snapshot asked about, by request; the oldest goes first when
    full. It holds the snapshot weakly (an answer never refers to it), so a replaced snapshot
    is freed as soon as the cache lets go of it. No lock (the core starts no threads and
    takes none): (snapshot, answers) is swapped as one tuple, and under concurrent puts the
    memo may briefly hold a few answers more than its size."""

    def __init__(self, size: int = ANSWERS_PER_SNAPSHOT):
        self._size = size
        self._state: tuple = (None, {})  # (weakref.ref to the snapshot, {key: answer})

    def get(self, snapshot: ClusterSnapshot, key):
        ref, answers = self._state
        return answers.get(key) if ref is not None and ref() is snapshot else None

    def put(self, snapshot: ClusterSnapshot, key, answer) -> None:
        ref, answers = self._state
        if ref is None or ref() is not snapshot:
            answers = {}
            self._state = (weakref.ref(snapshot), answers)
        while len(answers) >= self._size:
            try:
                answers.pop(next(iter(answers)), None)
            except (StopIteration, RuntimeError):  # emptied or changed by another request meanwhile
                break
        answers[key] = answer


class _Asked:
    """A query's memo key (hashed once: the query is a tree of frozen dataclasses) and, for
    component sets, the names and replicas an estimate reports."""

    __slots__ = ("key", "names", "replicas")

    def __init__(self, query):
        self.key = HashedKey((type(query), query))
        components = getattr(query, "components", ())
        self.names = tuple(c.name for c in components)
        self.replicas = tuple(c.replicas for c in components)


# By query object: the service hands repeats of a request the same converted object.
_ASKED: IdentityMemo[_Asked] = IdentityMemo(_Asked)


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

    @property
    def bound(self) -> int | None:
        """An upper bound on the answer no placement exceeds (None: not known).

        The node-resource packing's bound, lowered by every other plugin's answer (a quota
        count is exact: no packing gets past it). A member with no nodes: 0.
        """
        if self.outcome is None:
            return self.sets  # no nodes: 0, and nothing does better
        packing = getattr(self.outcome.results.get(NODE_RESOURCE), "detail", None)
        bound = getattr(packing, "bound", -1)
        if bound is None or bound < 0:
            return None
        for name, result in self.outcome.results.items():
            if name != NODE_RESOURCE and result.code is not Code.NOOP:
                bound = min(bound, max(result.value, 0))
        return bound

    @property
    def proven_optimal(self) -> bool:
        return self.bound is not None and self.sets >= self.bound

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
    def __init__(self, snapshots: SnapshotSource, packing: str = "best", framework: Framework | None = None,
                 best_budget: float | None = DEFAULT_BEST_BUDGET):
        if packing not in PACKING_MODES:
            raise ValueError(f"packing must be one of {', '.join(PACKING_MODES)}, got {packing!r}")
        if best_budget is not None and not best_budget >= 0:
            raise ValueError(f"best_budget must be a number >= 0 or None, got {best_budget!r}")
        self._snapshots = snapshots
        self.packing = packing
        self.best_budget = best_budget
        self.framework = framework or default_framework()
        self._memo = _AnswerMemo()

    def _context(self, snapshot: ClusterSnapshot) -> EstimateContext:
        return EstimateContext(snapshot, self.packing, self.best_budget)

    def snapshot(self) -> ClusterSnapshot:
        snapshot = self._snapshots()
        if snapshot is None:
            raise NotReady("no cluster state loaded yet")
        return snapshot

    def max_available_replicas(self, query: ReplicasQuery) -> tuple[int, FrameworkResult | None]:
        """The answer and the plugins' results; a remembered answer's results carry no
        durations (no plugin ran for it)."""
        snapshot = self.snapshot()
        if snapshot.num_nodes == 0:
            return 0, None
        key = _ASKED.get(query).key
        outcome = self._memo.get(snapshot, key)
        if outcome is None:
            outcome = self.framework.run_replicas(self._context(snapshot), query)
            self._memo.put(snapshot, key, FrameworkResult(outcome.value, outcome.results))
        return outcome.value, outcome

    def max_available_component_sets(self, query: ComponentSetsQuery) -> SetsEstimate:
        """As max_available_replicas, for component sets."""
        snapshot = self.snapshot()
        if snapshot.num_nodes == 0:
            return SetsEstimate(0, None, snapshot)
        asked = _ASKED.get(query)
        outcome = self._memo.get(snapshot, asked.key)
        if outcome is None:
            outcome = self.framework.run_components(self._context(snapshot), query)
            self._memo.put(snapshot, asked.key, FrameworkResult(outcome.value, outcome.results))
        return SetsEstimate(outcome.value, outcome, snapshot, asked.names, asked.replicas)

    def unschedulable_replicas(self, ref: WorkloadRef, now: float | None = None) -> int:
        snapshot = self.snapshot()
        return snapshot.workloads.count_unschedulable(ref, time.time() if now is None else now)
