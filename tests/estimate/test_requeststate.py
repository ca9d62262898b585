"""The request path's state has one owner (estimate/requeststate.py) and one table
(docs/architecture.md "State and caches"): every cache declared there is in the table, and
an estimate keeps things only in the caches it is handed."""

from __future__ import annotations

from pathlib import Path

from estimator.core.model import Component, ComponentSetsQuery, ReplicaShape
from estimator.estimate import requeststate
from estimator.estimate.estimate import Estimator
from estimator.estimate.framework import EstimateContext
from estimator.estimate.plugins.noderesource import NodeResourcePlugin, kernel_inputs
from estimator.estimate.requeststate import RequestCaches, SnapshotTable
from tests.support.randmember import random_member

ARCHITECTURE = Path(__file__).resolve().parents[2] / "docs" / "architecture.md"


def member(seed: int):
    return random_member(seed, max_nodes=8, pod_slots=(4, 110), gpu_share=0.3, max_pods=10, max_pod_cpu=2)


def query() -> ComponentSetsQuery:
    shape = ReplicaShape((("cpu", 500), ("memory", 1 << 30)), namespace="ns")
    return ComponentSetsQuery((Component("a", 2, shape), Component("b", 1, shape)), "ns")


def test_every_cache_declared_in_requeststate_is_in_the_architecture_table():
    section = ARCHITECTURE.read_text().split("## State and caches", 1)[1].split("\n## ", 1)[0]
    tables = [name for name, value in vars(requeststate).items() if isinstance(value, SnapshotTable)]
    fields = list(vars(RequestCaches()))
    assert tables and fields
    missing = [f"requeststate.{name}" for name in tables if f"requeststate.{name}" not in section]
    missing += [f"RequestCaches.{name}" for name in fields if f"RequestCaches.{name}" not in section]
    assert not missing, f"add these to docs/architecture.md 'State and caches': {missing}"


def test_an_estimator_keeps_per_query_values_in_its_own_caches_only():
    snapshot = member(1)
    q = query()
    mine, other = RequestCaches(), RequestCaches()
    estimator = Estimator(lambda: snapshot, packing="first-fit", caches=mine)
    sets = estimator.max_available_component_sets(q).sets
    assert mine.plans.peek(q) is not None and mine.asked.peek(q) is not None and mine.memo_bytes() > 0
    assert other.plans.peek(q) is None and len(other.asked) == 0
    # A bare context gets caches of its own: nothing it works out per query outlives it.
    ctx = EstimateContext(snapshot, "first-fit")
    assert NodeResourcePlugin().estimate_components(ctx, q).value == sets
    assert ctx.caches is not EstimateContext(snapshot).caches


def test_kernel_inputs_are_private_arrays_kept_nowhere():
    snapshot = member(2)
    first, second = kernel_inputs(snapshot, query()), kernel_inputs(snapshot, query())
    assert first.available is not second.available and first.available.flags.writeable
    assert first.columns[0] == "pods" and first.requests[:, 0].tolist() == [1, 1]
    assert first.masks.shape == (2, snapshot.num_nodes) and first.upper == 2**31 - 1
    assert not requeststate.GATHERED.entries_on(snapshot), "nothing kept on the snapshot"


def test_a_snapshot_table_keeps_a_none_and_stays_within_its_entries():
    snapshot = member(3)
    table = SnapshotTable("test none", 2)
    calls = []

    def compute(value):
        calls.append(value)
        return value

    # None is an answer (the column layout that may not serve): worked out once, not per call.
    assert table.get(snapshot, "a", lambda: compute(None)) is None
    assert table.get(snapshot, "a", lambda: compute(None)) is None
    assert calls == [None]
    table.get(snapshot, "b", lambda: compute(1))
    table.get(snapshot, "c", lambda: compute(2))
    assert list(table.entries_on(snapshot)) == ["b", "c"], "the oldest went first"
