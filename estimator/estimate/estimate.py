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
"""

from __future__ import annotations

import dataclasses
import time
import weakref
from dataclasses import dataclass
from typing import Callable

from estimator.core.errors import NotReady
from estimator.core.model import ComponentSetsQuery, ReplicaShape, ReplicasQuery, WorkloadRef
from estimator.core.snapshot import ClusterSnapshot
from estimator.estimate.framework import DEFAULT_BEST_BUDGET, Code, EstimateContext, Framework, FrameworkResult
from estimator.estimate.plugins.noderesource import NAME as NODE_RESOURCE, PACKING_MODES, NodeResourcePlugin
from estimator.estimate.plugins.resourcequota import ResourceQuotaPlugin
from estimator.estimate.querymemo import KEPT_MAX_COMPONENTS, KEPT_MAX_QUERY_BYTES, HashedKey, IdentityMemo, kept

SnapshotSource = Callable[[], "ClusterSnapshot | None"]

# Answers kept per snapshot, and the bytes they may hold together: a component-set answer
# holds its placement (int64 per component and node, 240 KB for a 3-component job on 10k
# nodes; a kept query's at most 8 MB, querymemo.KEPT_MAX_CELLS).
ANSWERS_PER_SNAPSHOT = 16
DEFAULT_MEMO_BYTES = 64 << 20
_ANSWER_OVERHEAD = 1024  # an answer's objects besides its placement

# What an estimate holds at its peak, in bytes per component and node (placements, masks,
# the kernels' scratch), by packing mode, and per column and node (the gathered columns
# and their working copies). Measured as the process's peak RSS over a 10k-node member
# (the kernels' own arrays are numba's, which tracemalloc does not see): first-fit 9-24
# per cell, best mode 48-55 when its search runs (it keeps candidate placements); columns
# 32-52. Rounded up: tests/estimate/test_kept_memory.py holds measured peaks below it.
CELL_BYTES = {"first-fit": 32, "best": 64}
COLUMN_BYTES = 64
ESTIMATE_BYTES = 256 << 10  # the objects of any estimate (results, plans, keys)


def _answer_bytes(answer: FrameworkResult) -> int:
    size = _ANSWER_OVERHEAD
    for result in answer.results.values():
        placement = getattr(result.detail, "placement", None)
        size += getattr(placement, "nbytes", 0)
    return size


class _AnswerMemo:
    """Answers for the newest snapshot asked about, by request; the oldest go first past
    `size` answers or `max_bytes` bytes (an answer larger than that is not kept). It holds
    the snapshot weakly (an answer never refers to it), so a replaced snapshot is freed as
    soon as the cache lets go of it. No lock (the core starts no threads and takes none):
    (snapshot, answers) is swapped as one tuple, and under concurrent puts the memo may
    briefly hold a few answers more than its bounds."""

    def __init__(self, size: int = ANSWERS_PER_SNAPSHOT, max_bytes: int = DEFAULT_MEMO_BYTES):
        self._size = size
        self._max_bytes = max_bytes
        self._state: tuple = (None, {})  # (weakref.ref to the snapshot, {key: (answer, bytes)})

    def get(self, snapshot: ClusterSnapshot, key):
        ref, answers = self._state
        if ref is None or ref() is not snapshot:
            return None
        entry = answers.get(key)
        return None if entry is None else entry[0]

    def put(self, snapshot: ClusterSnapshot, key, answer) -> None:
        cost = _answer_bytes(answer)
        if cost > self._max_bytes:
            return
        ref, answers = self._state
        if ref is None or ref() is not snapshot:
            answers = {}
            self._state = (weakref.ref(snapshot), answers)
        # Summed afresh (at most `size` entries), so racing puts cannot make a count drift.
        while answers and (len(answers) >= self._size
                           or sum(entry[1] for entry in list(answers.values())) + cost > self._max_bytes):
            try:
                answers.pop(next(iter(answers)), None)
            except (StopIteration, RuntimeError):  # emptied or changed by another request meanwhile
                break
        answers[key] = (answer, cost)

    def held_bytes(self) -> int:
        return sum(entry[1] for entry in list(self._state[1].values()))


# Rough bytes of a query's own objects: per string its length plus CPython's overhead, per
# requirement, toleration or component its object. Only compared with KEPT_MAX_QUERY_BYTES.
_STRING_BYTES = 56
_OBJECT_BYTES = 200


def _shape_bytes(shape: ReplicaShape, seen: set) -> int:
    size = _OBJECT_BYTES + sum(len(name) + _STRING_BYTES for name, _ in shape.requests)
    claim = shape.claim
    if id(claim) in seen:  # components of one request often share a claim object
        return size
    seen.add(id(claim))
    size += sum(len(k) + len(v) + 2 * _STRING_BYTES for k, v in claim.node_selector)
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

    def __init__(self, query):
        self.key = HashedKey((type(query), query))
        components = getattr(query, "components", ())
        self.names = tuple(c.name for c in components)
        self.replicas = tuple(c.replicas for c in components)
        shapes = [c.shape for c in components] if components else [getattr(query, "shape", None) or ReplicaShape()]
        shapes += [c.shape for workload in query.assumed for c in workload.components]
        self.components = len(shapes)
        self.columns = 1 + len({name for shape in shapes for name, _ in shape.requests})
        seen: set = set()
        self.bytes = sum(_shape_bytes(shape, seen) for shape in shapes) + sum(map(len, self.names))

    def kept(self, nodes: int) -> bool:
        return kept(self.components, self.columns, nodes, self.bytes)


# By query object: the service hands repeats of a request the same converted object. Only
# small queries are kept: the entry holds its query (the key), so a large one would stay.
_ASKED: IdentityMemo[_Asked] = IdentityMemo(
    _Asked, admit=lambda asked: asked.components <= KEPT_MAX_COMPONENTS and asked.bytes <= KEPT_MAX_QUERY_BYTES)


def _detached(snapshot: ClusterSnapshot) -> ClusterSnapshot:
    """The same snapshot (arrays, classes, name indexes) with per-claim masks and derived
    values of its own, for a query that must leave nothing behind."""
    return dataclasses.replace(snapshot, _masks={}, _derived={})


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
                 best_budget: float | None = DEFAULT_BEST_BUDGET, memo_bytes: int = DEFAULT_MEMO_BYTES):
        if packing not in PACKING_MODES:
            raise ValueError(f"packing must be one of {', '.join(PACKING_MODES)}, got {packing!r}")
        if best_budget is not None and not best_budget >= 0:
            raise ValueError(f"best_budget must be a number >= 0 or None, got {best_budget!r}")
        self._snapshots = snapshots
        self.packing = packing
        self.best_budget = best_budget
        self.framework = framework or default_framework()
        self._memo = _AnswerMemo(max_bytes=memo_bytes)

    def _context(self, snapshot: ClusterSnapshot) -> EstimateContext:
        return EstimateContext(snapshot, self.packing, self.best_budget)

    def snapshot(self) -> ClusterSnapshot:
        snapshot = self._snapshots()
        if snapshot is None:
            raise NotReady("no cluster state loaded yet")
        return snapshot

    def working_bytes(self, query: ReplicasQuery | ComponentSetsQuery) -> int:
        """What estimating `query` may hold at its peak on the current snapshot (0: none yet)."""
        asked = _ASKED.get(query)
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
        return self._memo.held_bytes()

    def max_available_replicas(self, query: ReplicasQuery) -> tuple[int, FrameworkResult | None]:
        """The answer and the plugins' results; a remembered answer's results carry no
        durations (no plugin ran for it)."""
        snapshot = self.snapshot()
        if snapshot.num_nodes == 0:
            return 0, None
        asked = _ASKED.get(query)
        if not asked.kept(snapshot.num_nodes):
            return self._afresh(self.framework.run_replicas, snapshot, query)
        outcome = self._memo.get(snapshot, asked.key)
        if outcome is None:
            outcome = self.framework.run_replicas(self._context(snapshot), query)
            self._memo.put(snapshot, asked.key, FrameworkResult(outcome.value, outcome.results))
        return outcome.value, outcome

    def max_available_component_sets(self, query: ComponentSetsQuery) -> SetsEstimate:
        """As max_available_replicas, for component sets."""
        snapshot = self.snapshot()
        if snapshot.num_nodes == 0:
            return SetsEstimate(0, None, snapshot)
        asked = _ASKED.get(query)
        if not asked.kept(snapshot.num_nodes):
            _, outcome = self._afresh(self.framework.run_components, snapshot, query)
            return SetsEstimate(outcome.value, outcome, snapshot, asked.names, asked.replicas)
        outcome = self._memo.get(snapshot, asked.key)
        if outcome is None:
            outcome = self.framework.run_components(self._context(snapshot), query)
            self._memo.put(snapshot, asked.key, FrameworkResult(outcome.value, outcome.results))
        return SetsEstimate(outcome.value, outcome, snapshot, asked.names, asked.replicas)

    def _afresh(self, run, snapshot: ClusterSnapshot, query) -> tuple[int, FrameworkResult]:
        """A query too large to keep: estimated on a detached snapshot, nothing remembered."""
        outcome = run(self._context(_detached(snapshot)), query)
        return outcome.value, outcome

    def unschedulable_replicas(self, ref: WorkloadRef, now: float | None = None) -> int:
        snapshot = self.snapshot()
        return snapshot.workloads.count_unschedulable(ref, time.time() if now is None else now)
