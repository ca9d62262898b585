"""What the live answers are judged against.

- Snapshot mode: our estimator run in-process on the objects dumped from the apiserver (the
  `--objects` path), the reference a live answer must converge to.
- First-fit parity: Karmada's first-fit walks nodes in whatever order its informer delivered
  them, so an answer is "a Karmada answer" when the plain reference first-fit of
  tests/support/naive.py gives it for SOME node order (all orders for small members, sampled ones,
  then a targeted search, for larger).
- Best mode: never above the exact optimum (tests/support/naive.py exhaustive search, small members),
  witness valid.
"""

from __future__ import annotations

import copy
import itertools
import json
import math
import random
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from estimator.cluster.files import load_object_files
from estimator.core import model
from estimator.core.errors import NotFound
from estimator.core.resources import MAX_INT32
from estimator.core.snapshot import ClusterSnapshot
from estimator.estimate.estimate import Estimator
from estimator.estimate.framework import Code
from estimator.estimate.framework import EstimateContext
from estimator.estimate.plugins import noderesource as nr
from estimator.estimate.plugins.resourcequota import ResourceQuotaPlugin

from tests.support import naive  # the plain reference the kernels are tested against

ALL_ORDERS = 2000  # distinct node orders enumerated in full up to this many
SAMPLED_ORDERS = 200
TARGETED_ORDERS = 4000


def load(path: Path) -> ClusterSnapshot:
    return load_object_files([path]).snapshot()


@dataclass
class SetsArrays:
    available: np.ndarray
    requests: np.ndarray
    replicas: np.ndarray
    masks: np.ndarray
    quota: int  # the quota plugin's bound (MAX_INT32 when none applies)


def sets_arrays(snapshot: ClusterSnapshot, query: model.ComponentSetsQuery) -> SetsArrays:
    """The packing problem a component-set request poses on this snapshot (no assumed workloads)."""
    inputs = nr.kernel_inputs(snapshot, query)
    quota = ResourceQuotaPlugin().estimate_components(EstimateContext(snapshot, "first-fit"), query)
    bound = MAX_INT32 if quota.code is Code.NOOP else quota.value
    return SetsArrays(inputs.available, inputs.requests, inputs.replicas, inputs.masks, bound)


def _first_fit(arrays: SetsArrays, order) -> int:
    n_comp = len(arrays.replicas)
    # The quota caps the answer, so first-fit may stop there (upper) instead of packing on.
    sets, _, _ = naive.first_fit(arrays.available, arrays.requests, arrays.replicas, arrays.masks,
                                 min(arrays.quota, MAX_INT32), node_orders=[list(order)] * n_comp)
    return min(sets, arrays.quota)


@dataclass
class OrderAnswers:
    values: set[int]
    exhaustive: bool  # every node order that can differ was tried
    orders_tried: int
    found_by_search: dict[int, bool] = field(default_factory=dict)
    groups: list[list[int]] = field(default_factory=list)


def _node_groups(arrays: SetsArrays) -> list[list[int]]:
    """Nodes that can take a replica of some component, grouped by identical (free, masks).

    A node no component can use never changes first-fit, and swapping two identical nodes
    gives the same walk, so only the order of the groups' members as a multiset matters.
    """
    groups: dict[tuple, list[int]] = {}
    avail, reqs, masks = arrays.available.tolist(), arrays.requests.tolist(), arrays.masks.tolist()
    for n, free in enumerate(avail):
        usable = [bool(masks[c][n]) and naive.node_fit(free, reqs[c]) > 0 for c in range(len(reqs))]
        if any(usable):
            groups.setdefault((tuple(free), tuple(m[n] for m in masks)), []).append(n)
    return list(groups.values())


def _distinct_orders(groups: list[list[int]]):
    """Every distinct sequence of group members (members of one group are interchangeable)."""
    left = [len(g) for g in groups]
    total = sum(left)
    seq: list[int] = []

    def rec():
        if len(seq) == total:
            taken = [0] * len(groups)
            order = []
            for g in seq:
                order.append(groups[g][taken[g]])
                taken[g] += 1
            yield order
            return
        for g in range(len(groups)):
            if left[g]:
                left[g] -= 1
                seq.append(g)
                yield from rec()
                seq.pop()
                left[g] += 1

    yield from rec()


def _count_orders(groups: list[list[int]]) -> int:
    count = math.factorial(sum(len(g) for g in groups))
    for g in groups:
        count //= math.factorial(len(g))
    return count


def first_fit_answers(snapshot: ClusterSnapshot, arrays: SetsArrays, seed: int) -> OrderAnswers:
    groups = _node_groups(arrays)
    if not groups:
        return OrderAnswers({_first_fit(arrays, [])}, True, 1, groups=groups)
    if _count_orders(groups) <= ALL_ORDERS:
        values = set()
        tried = 0
        for order in _distinct_orders(groups):
            values.add(_first_fit(arrays, order))
            tried += 1
        return OrderAnswers(values, True, tried, groups=groups)
    rng = random.Random(seed)
    nodes = [n for g in groups for n in g]
    orders = [sorted(nodes), sorted(nodes, reverse=True)]
    for _ in range(SAMPLED_ORDERS):
        order = list(nodes)
        rng.shuffle(order)
        orders.append(order)
    return OrderAnswers({_first_fit(arrays, o) for o in orders}, False, len(orders), groups=groups)


def reachable(arrays: SetsArrays, answers: OrderAnswers, value: int, seed: int,
              budget_seconds: float = 20.0) -> bool:
    """Is `value` a first-fit answer for some node order? Sampled search beyond the first pass."""
    if value in answers.values:
        return True
    if answers.exhaustive:
        return False
    if value in answers.found_by_search:
        return answers.found_by_search[value]
    rng = random.Random(seed ^ 0x5EED)
    nodes = [n for g in answers.groups for n in g]
    deadline = time.monotonic() + budget_seconds
    found = False
    for _ in range(TARGETED_ORDERS):
        order = list(nodes)
        rng.shuffle(order)
        got = _first_fit(arrays, order)
        answers.values.add(got)
        answers.orders_tried += 1
        if got == value:
            found = True
            break
        if time.monotonic() > deadline:
            break
    answers.found_by_search[value] = found
    return found


def optimum(arrays: SetsArrays, n_nodes: int, budget_sets: int = 64, budget_seconds: float = 5.0) -> int | None:
    """The exact best number of sets (quota applied), or None when too big to search here."""
    if n_nodes > 8:
        return None
    hi = MAX_INT32
    for c, r in enumerate(arrays.replicas):
        if r > 0:
            room = naive.sum_fit(arrays.available, arrays.requests[c], arrays.masks[c])
            hi = min(hi, room // int(r))
    if hi > budget_sets:
        return None
    # The exhaustive search can blow up on an unlucky member; give it a CPU-time budget.
    previous = signal.signal(signal.SIGALRM, _out_of_time)
    signal.setitimer(signal.ITIMER_REAL, budget_seconds)
    try:
        sets, _ = naive.exhaustive(arrays.available, arrays.requests, arrays.replicas, arrays.masks, MAX_INT32)
    except _OutOfTime:
        return None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    return min(sets, arrays.quota)


class _OutOfTime(Exception):
    pass


def _out_of_time(_signum, _frame):
    raise _OutOfTime()


class Reference:
    """Our snapshot-mode answers for one dumped state."""

    def __init__(self, dump: Path):
        self.snapshot = load(dump)
        self.first_fit = Estimator(lambda: self.snapshot, "first-fit")
        self.best = Estimator(lambda: self.snapshot, "best")

    def sets(self, query: model.ComponentSetsQuery) -> tuple[int, int]:
        return self.first_fit.max_available_component_sets(query).sets, self.best.max_available_component_sets(query).sets

    def best_witness_ok(self, query: model.ComponentSetsQuery, arrays: SetsArrays) -> bool:
        estimate = self.best.max_available_component_sets(query)
        if estimate.sets == 0:
            return True
        witness = estimate.witness()
        if witness is None:
            return False
        names = {name: i for i, name in enumerate(self.snapshot.node_names)}
        placement = [[0] * self.snapshot.num_nodes for _ in query.components]
        for c, component in enumerate(query.components):
            for node, count in witness.get(component.name, {}).items():
                placement[c][names[node]] = count
        return naive.verify(arrays.available, arrays.requests, arrays.replicas, arrays.masks, estimate.sets, placement)

    def replicas(self, query: model.ReplicasQuery) -> int:
        return self.first_fit.max_available_replicas(query)[0]

    def unschedulable(self, ref: model.WorkloadRef) -> int | None:
        """None when the workload is not in the member (the RPC answers an error then)."""
        try:
            return self.first_fit.unschedulable_replicas(ref)
        except NotFound:
            return None


def quota_variants(dump: Path, work: Path, limit: int = 4) -> list[Path]:
    """Dumps of the same member where Karmada's quota reading could differ.

    Karmada's quota plugin maps both `X` and `requests.X` of one quota onto the key `X`, and
    which one wins depends on Go's map iteration order. For each quota naming both, each
    variant keeps only one of them, so every answer Karmada can give is some variant's
    answer. (Kubernetes enforces both; ours does too: the unmodified dump.)
    """
    objects = json.loads(dump.read_text())
    pairs = []
    for index, obj in enumerate(objects["items"]):
        if obj.get("kind") != "ResourceQuota":
            continue
        hard = (obj.get("status") or {}).get("hard") or {}
        for name in hard:
            if not name.startswith(("requests.", "limits.")) and f"requests.{name}" in hard:
                pairs.append((index, name))
    pairs = pairs[:limit]
    variants = []
    for choice in itertools.product((0, 1), repeat=len(pairs)):
        if not pairs:
            break
        changed = copy.deepcopy(objects)
        for (index, name), drop_plain in zip(pairs, choice):
            victim = name if drop_plain else f"requests.{name}"
            for part in ("hard", "used"):
                changed["items"][index]["status"].get(part, {}).pop(victim, None)
            changed["items"][index]["spec"]["hard"].pop(victim, None)
        path = work / f"{dump.stem}-variant{len(variants)}.json"
        path.write_text(json.dumps(changed))
        variants.append(path)
    return variants
