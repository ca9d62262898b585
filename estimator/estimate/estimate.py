"""The estimate step: one snapshot per request, the framework over it, the answer.

As Karmada's EstimateReplicas / EstimateComponents: a member with no nodes answers 0 before
any plugin runs. Packing mode and plugins are fixed at construction.

Answers are remembered per snapshot: the scheduler asks the same few shapes again and again,
and an answer depends only on the snapshot (nodes, pods, quotas) and the request (in-flight
workloads included), both immutable, so a repeat within one snapshot skips the plugins.
A new snapshot (any watch event or reload) starts an empty memo.

Only a *kept* query (querymemo.kept: a few components, a few columns, on this member's
nodes) may leave anything behind: its answer, and what the plugins keep per snapshot and
per query. Any other query is estimated on a detached view of the snapshot (the same
arrays, caches of its own), so what it works out dies with the request, and its answer is
not remembered. The memo is bounded in bytes (a component-set answer holds its placement,
8 bytes per component and node) as well as in entries. `working_bytes` says what an
estimate may hold at its peak, so the service can refuse a call before memory is spent.

The memo and every other cache kept between requests belong to the Estimator's
`RequestCaches` (requeststate.py: each one's key, bound and invalidation), handed to the
plugins in the EstimateContext.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from estimator.core.errors import NotReady
from estimator.core.model import (
    NO_CLAIM,
    PACKING_MODES,
    ComponentSetsQuery,
    NodeClaim,
    ReplicaShape,
    ReplicasQuery,
    WorkloadRef,
)
from estimator.core.snapshot import ClusterSnapshot
from estimator.estimate.framework import DEFAULT_BEST_BUDGET, Code, EstimateContext, Framework, FrameworkResult
from estimator.estimate.plugins.noderesource import NAME as NODE_RESOURCE
from estimator.estimate.plugins.noderesource import NodeResourcePlugin
from estimator.estimate.plugins.resourcequota import ResourceQuotaPlugin
from estimator.estimate.querymemo import HashedKey, kept
from estimator.estimate.requeststate import ANSWERS_PER_SNAPSHOT as ANSWERS_PER_SNAPSHOT  # re-exported
from estimator.estimate.requeststate import DEFAULT_MEMO_BYTES, RequestCaches

SnapshotSource = Callable[[], "ClusterSnapshot | None"]

# What an estimate holds at its peak, in bytes per component and node (placements, masks,
# the kernels' scratch), by packing mode, and per column and node (the gathered columns
# and their working copies). Measured as the process's peak RSS over a 10k-node member
# (the kernels' own arrays are numba's, which tracemalloc does not see): first-fit 9-24
# per cell, best mode 48-55 when its search runs (it keeps candidate placements); columns
# 32-52. Rounded up: tests/estimate/test_kept_memory.py holds measured peaks below it.
CELL_BYTES = {"first-fit": 32, "best": 64}
COLUMN_BYTES = 64
ESTIMATE_BYTES = 256 << 10  # the objects of any estimate (results, plans, keys)


# Rough bytes of a query's own objects: per string its length plus CPython's overhead, per
# requirement, toleration or component its object. Only compared with KEPT_MAX_QUERY_BYTES.
_STRING_BYTES = 56
_OBJECT_BYTES = 200


def _claim_bytes(claim: NodeClaim) -> int:
    size = sum(len(k) + len(v) + 2 * _STRING_BYTES for k, v in claim.node_selector)
    for term in claim.affinity_terms or ():
        for requirement in term.match_expressions + term.match_fields:
            size += _OBJECT_BYTES + len(requirement.key) + len(requirement.values) * _STRING_BYTES
            size += sum(map(len, requirement.values))
    for toleration in claim.tolerations:
        size += _OBJECT_BYTES + len(toleration.key) + len(toleration.value) + 2 * _STRING_BYTES
    return size


class _Asked:
    """A query's memo key (hashed once: the query is a tree of frozen dataclasses), its size
    (components, assumed ones included; columns: pods and each resource named; rough bytes)
    and, for component sets, the names and replicas an estimate reports."""

    __slots__ = ("key", "names", "replicas", "components", "columns", "bytes")

    def __init__(self, query: ReplicasQuery | ComponentSetsQuery) -> None:
        self.key = HashedKey((type(query), query))
        components = getattr(query, "components", ())
        if components:
            self.names = tuple([c.name for c in components])
            self.replicas = tuple([c.replicas for c in components])
            shapes = [c.shape for c in components]
        else:
            self.names = self.replicas = ()
            shapes = [getattr(query, "shape", None) or _NO_SHAPE]
        for workload in query.assumed:
            shapes += [c.shape for c in workload.components]
        self.components = len(shapes)
        names: set = set()
        seen: set = set()
        size = sum(map(len, self.names))
        for shape in shapes:
            size += _OBJECT_BYTES
            for name, _ in shape.requests:
                names.add(name)
                size += len(name) + _STRING_BYTES
            claim = shape.claim
            if claim is not NO_CLAIM and id(claim) not in seen:  # components often share a claim object
                seen.add(id(claim))
                size += _claim_bytes(claim)
        self.columns = 1 + len(names)
        self.bytes = size

    def kept(self, nodes: int) -> bool:
        return kept(self.components, self.columns, nodes, self.bytes)


_NO_SHAPE = ReplicaShape()


def default_framework() -> Framework:
    node, quota = NodeResourcePlugin(), ResourceQuotaPlugin()
    return Framework([node, quota], [node, quota])


@dataclass(frozen=True)
class SetsEstimate:
    sets: int
    outcome: FrameworkResult | None
    snapshot: ClusterSnapshot
    components: tuple[str, ...] = ()
    replicas: tuple[int, ...] = ()

    @functools.cached_property
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
        """The answer reaches its bound: no placement does better."""
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
    def __init__(
        self,
        snapshots: SnapshotSource,
        packing: str = "best",
        framework: Framework | None = None,
        best_budget: float | None = DEFAULT_BEST_BUDGET,
        memo_bytes: int = DEFAULT_MEMO_BYTES,
        caches: RequestCaches | None = None,
    ):
        if packing not in PACKING_MODES:
            raise ValueError(f"packing must be one of {', '.join(PACKING_MODES)}, got {packing!r}")
        if best_budget is not None and not best_budget >= 0:
            raise ValueError(f"best_budget must be a number >= 0 or None, got {best_budget!r}")
        self._snapshots = snapshots
        self.packing = packing
        self.best_budget = best_budget
        self.framework = framework or default_framework()
        # Everything kept between requests (requeststate.py: each cache's key, bound, lifetime).
        self.caches = caches or RequestCaches(memo_bytes=memo_bytes)

    def _context(self, snapshot: ClusterSnapshot) -> EstimateContext:
        return EstimateContext(snapshot, self.packing, self.best_budget, self.caches)

    def snapshot(self) -> ClusterSnapshot:
        snapshot = self._snapshots()
        if snapshot is None:
            raise NotReady("no cluster state loaded yet")
        return snapshot

    def working_bytes(self, query: ReplicasQuery | ComponentSetsQuery) -> int:
        """What estimating `query` may hold at its peak on the current snapshot (0: none yet)."""
        asked = self.caches.asked.get(query, _Asked)
        return self.bytes_for(asked.components, asked.columns)

    def bytes_for(self, components: int, columns: int) -> int:
        """`working_bytes` of a query of this many components (assumed ones included) and
        columns (pods and each resource named) on the current snapshot (0: none yet)."""
        snapshot = self._snapshots()
        if snapshot is None:
            return 0
        return ESTIMATE_BYTES + snapshot.num_nodes * (components * CELL_BYTES[self.packing] + columns * COLUMN_BYTES)

    def memo_bytes(self) -> int:
        """Bytes the answers remembered now hold."""
        return self.caches.memo_bytes()

    def max_available_replicas(self, query: ReplicasQuery) -> tuple[int, FrameworkResult | None]:
        """The answer and the plugins' results; a remembered answer's results carry no
        durations (no plugin ran for it)."""
        snapshot = self.snapshot()
        if snapshot.num_nodes == 0:
            return 0, None
        asked = self.caches.asked.get(query, _Asked)
        if not asked.kept(snapshot.num_nodes):
            return self._afresh(self.framework.run_replicas, snapshot, query)
        outcome = self.caches.answers.get(snapshot, asked.key)
        if outcome is None:
            outcome = self.framework.run_replicas(self._context(snapshot), query)
            self.caches.answers.put(snapshot, asked.key, FrameworkResult(outcome.value, outcome.results))
        return outcome.value, outcome

    def max_available_component_sets(self, query: ComponentSetsQuery) -> SetsEstimate:
        """As max_available_replicas, for component sets."""
        snapshot = self.snapshot()
        if snapshot.num_nodes == 0:
            return SetsEstimate(0, None, snapshot)
        asked = self.caches.asked.get(query, _Asked)
        if not asked.kept(snapshot.num_nodes):
            _, outcome = self._afresh(self.framework.run_components, snapshot, query)
            return SetsEstimate(outcome.value, outcome, snapshot, asked.names, asked.replicas)
        outcome = self.caches.answers.get(snapshot, asked.key)
        if outcome is None:
            outcome = self.framework.run_components(self._context(snapshot), query)
            self.caches.answers.put(snapshot, asked.key, FrameworkResult(outcome.value, outcome.results))
        return SetsEstimate(outcome.value, outcome, snapshot, asked.names, asked.replicas)

    def _afresh(
        self,
        run: Callable[[EstimateContext, Any], FrameworkResult],
        snapshot: ClusterSnapshot,
        query: ReplicasQuery | ComponentSetsQuery,
    ) -> tuple[int, FrameworkResult]:
        """A query too large to keep: estimated on a detached snapshot, nothing remembered."""
        outcome = run(self._context(snapshot.detached()), query)
        return outcome.value, outcome

    def unschedulable_replicas(self, ref: WorkloadRef, now: float | None = None) -> int:
        snapshot = self.snapshot()
        return snapshot.workloads.count_unschedulable(ref, time.time() if now is None else now)
