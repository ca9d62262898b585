"""Workloads karmada-scheduler holds in flight: read back from ResourceBindings, and deducted
by every estimator (with SchedulingOvercommitProtection on), as Karmada v1.18.2 deducts them.

Oracles are worked by hand from Karmada's code (pkg/scheduler updateAssumptionsCache and
event_handler releaseHealthyClusterAssumptions; pkg/estimator/client/general.go
deductAssumedWorkloads and getMaximumSetsBasedOnResourceModels); each case says how.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from estimator.core.model import AssumedWorkload, Component, NodeClaim, ReplicaShape
from scheduler_client.accurate import Answer
from scheduler_client.bindings import BindingError, in_flight
from scheduler_client.karmada import DEFAULT_GATES, MULTIPLE_POD_TEMPLATES, OVERCOMMIT_PROTECTION
from scheduler_client.karmada.general import ResourceSummary, model_sets, summary_sets
from scheduler_client.placement import Options, evaluate
from scheduler_client.karmada.policy import parse_placement
from tests.client.fakekarmada import binding
from tests.client.test_general import GIB, GPU, GPU_MODELS, TRAIN_BIG, TRAIN_SMALL, totals
from tests.client.test_placement import ONE_MEMBER, gpu_member, pytorch

NOW = datetime(2026, 9, 1, 12, 0, 0, tzinfo=timezone.utc)


def at(seconds_ago: float) -> str:
    return (NOW - timedelta(seconds=seconds_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")


def single_template(members, replicas_each):
    """A Deployment's binding: spec.replicas and spec.replicaRequirements, replicas per target."""
    return {"metadata": {"name": "web-deployment", "namespace": "shop"},
            "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "shop", "name": "web"},
                     "replicas": sum(replicas_each),
                     "replicaRequirements": {"resourceRequest": {"cpu": "250m"}, "namespace": "shop"},
                     "clusters": [{"name": m, "replicas": r} for m, r in zip(members, replicas_each)]},
            "status": {"lastScheduledTime": at(1)}}


def not_a_workload():
    """A ConfigMap's binding: no replicas, requirements or components."""
    return {"metadata": {"name": "conf-configmap", "namespace": "shop"},
            "spec": {"resource": {"apiVersion": "v1", "kind": "ConfigMap", "namespace": "shop", "name": "conf"},
                     "clusters": [{"name": "member-a"}, {"name": "member-b"}]},
            "status": {"lastScheduledTime": at(1)}}


# (case, bindings, exclude, expected [(binding, member, [(component, replicas)])])
IN_FLIGHT_CASES = [
    ("a job just scheduled is in flight on its member, every component whole",
     [binding("ml", "a", ["member-c"], scheduled=at(2))], (),
     [("ml/a-pytorchjob", "member-c", [("master", 1), ("worker", 2)])]),
    ("a binding not scheduled yet holds nothing", [binding("ml", "a", [], scheduled=None)], (), []),
    ("a workload reported Healthy on its member is released there",
     [binding("ml", "a", ["member-c"], healthy=("member-c",), scheduled=at(2))], (), []),
    ("Healthy on one member releases that member only (a copy on two)",
     [binding("ml", "a", ["member-a", "member-b"], healthy=("member-a",), scheduled=at(2))], (),
     [("ml/a-pytorchjob", "member-b", [("master", 1), ("worker", 2)])]),
    ("five minutes after it was scheduled the assumption has expired (DefaultAssumptionTTL)",
     [binding("ml", "a", ["member-c"], scheduled=at(301))], (), []),
    ("just under five minutes it still holds", [binding("ml", "a", ["member-c"], scheduled=at(299))], (),
     [("ml/a-pytorchjob", "member-c", [("master", 1), ("worker", 2)])]),
    ("a result whose lastScheduledTime is not written yet counts as just scheduled",
     [binding("ml", "a", ["member-c"], scheduled=None)], (),
     [("ml/a-pytorchjob", "member-c", [("master", 1), ("worker", 2)])]),
    ("the job asked about is left out (its own binding)",
     [binding("ml", "a", ["member-c"], scheduled=at(2)), binding("ml", "b", ["member-a"], scheduled=at(2))],
     ("ml/a-pytorchjob",), [("ml/b-pytorchjob", "member-a", [("master", 1), ("worker", 2)])]),
    ("a single-template workload: one component named after it, with the target's replicas",
     [single_template(["member-a", "member-b"], [3, 1])], (),
     [("shop/web-deployment", "member-a", [("web", 3)]), ("shop/web-deployment", "member-b", [("web", 1)])]),
    ("a binding that is not a workload is never assumed", [not_a_workload()], (), []),
]


@pytest.mark.parametrize("bindings,exclude,expected", [c[1:] for c in IN_FLIGHT_CASES],
                         ids=[c[0] for c in IN_FLIGHT_CASES])
def test_what_the_scheduler_holds_in_flight(bindings, exclude, expected):
    flights = in_flight(bindings, NOW, frozenset(exclude))
    assert [(f.binding, f.member, [(c.name, c.replicas) for c in f.workload.components]) for f in flights] == expected


def test_an_in_flight_component_keeps_its_requirements_and_node_claim():
    (flight,) = in_flight([binding("ml", "a", ["member-c"], scheduled=at(2), gpu_per_worker="3")], NOW)
    master, worker = flight.workload.components
    assert flight.workload.namespace == "ml"
    assert master.shape.requests == (("cpu", 500), ("memory", GIB))
    assert worker.shape.requests == (("cpu", 1000), ("memory", 2 * GIB), (GPU, 3))
    assert worker.shape.claim == NodeClaim(node_selector=(("pool", "gpu"),))
    assert "PyTorchJob ml/a (master x1, worker x2, scheduled 2 s ago)" == flight.describe()


@pytest.mark.parametrize("mutate,field", [
    (lambda b: b["spec"]["components"][1].update(replicas="two"), "spec.components[1].replicas"),
    (lambda b: b["spec"]["components"][0]["replicaRequirements"].update(resourceRequest={"cpu": "lots"}),
     "spec.components[0].replicaRequirements.resourceRequest"),
    (lambda b: b["status"].update(lastScheduledTime="yesterday"), "status.lastScheduledTime"),
    (lambda b: b["spec"]["components"][1]["replicaRequirements"]["nodeClaim"].update(
        hardNodeAffinity={"nodeSelectorTerms": [{"matchExpressions": [{"key": "k", "operator": "Near"}]}]}),
     "spec.components[1].replicaRequirements.nodeClaim.hardNodeAffinity.nodeSelectorTerms[0].matchExpressions[0]"
     ".operator"),
], ids=["replicas not a number", "a quantity that does not parse", "a time that does not parse",
        "an unknown node affinity operator"])
def test_a_binding_field_that_cannot_be_read_is_named(mutate, field):
    raw = binding("ml", "a", ["member-c"], scheduled=at(2))
    mutate(raw)
    with pytest.raises(BindingError) as error:
        in_flight([raw], NOW)
    assert error.value.field == field


# --- the general estimator: deductAssumedWorkloads ---------------------------------------


def assumed(*components):
    return AssumedWorkload("ml", tuple(components))


SMALL_SET = assumed(*TRAIN_SMALL)  # 3 pods, 150m cpu, 96Mi, 2 GPUs
BIG_SET = assumed(*TRAIN_BIG)  # 3 pods, 150m cpu, 96Mi, 6 GPUs
EIGHT_GPUS = totals(cpu=12000, memory=64 * GIB, gpu=8, pods=110)

SUMMARY_CASES = [
    # 8 GPUs / 2 per small set = 4.
    ("nothing in flight: 4 small sets on 8 GPUs", EIGHT_GPUS, (), False, 4),
    # One small set in flight: 8 - 2 = 6 GPUs -> 3 sets (pods 107 // 3 = 35, cpu plenty).
    ("one small set in flight leaves 3", EIGHT_GPUS, (SMALL_SET,), False, 3),
    # A big set in flight: 8 - 6 = 2 GPUs -> 1 small set.
    ("a big set in flight leaves 1", EIGHT_GPUS, (BIG_SET,), False, 1),
    # Karmada's unit mix-up path (decimal GPUs counted in thousandths on both sides): the same 1.
    ("the same in Karmada's units", EIGHT_GPUS, (BIG_SET,), True, 1),
    # Two big sets: 8 - 12 < 0 GPUs -> 0 (over-assumed: Karmada's available goes negative).
    ("more in flight than the member has gives 0", EIGHT_GPUS, (BIG_SET, BIG_SET), False, 0),
    # Pods bound: 7 pods, 3 in flight -> 4 // 3 = 1 set, whatever the GPUs.
    ("in-flight pods take pod slots", totals(cpu=12000, memory=64 * GIB, gpu=8, pods=7), (SMALL_SET,), False, 1),
]


@pytest.mark.parametrize("summary,flights,compatible,sets", [c[1:] for c in SUMMARY_CASES],
                         ids=[c[0] for c in SUMMARY_CASES])
def test_the_summary_path_deducts_in_flight_workloads(summary, flights, compatible, sets):
    assert summary_sets(summary.with_assumed(flights), TRAIN_SMALL, compatible).value == sets


def test_in_flight_replicas_count_as_allocating():
    summary = ResourceSummary({"cpu": 4000, "pods": 10}, {"cpu": 1000}, {"cpu": 500, "pods": 1})
    after = summary.with_assumed([assumed(Component("w", 2, ReplicaShape((("cpu", 250),))))])
    assert after.allocating == {"cpu": 1000, "pods": 3} and after.allocated == summary.allocated
    assert after.available("cpu") == 2000 and summary.with_assumed(()) is summary


# Model nodes: GPU_MODELS grade 1 x3 (2 GPUs each), grade 2 x1 (8 GPUs). Small sets, first-fit in
# node order: three on the grade-1 nodes (a set's two 1-GPU workers fill a node), four on the
# 8-GPU node = 7. A big set in flight first: its 3-GPU workers fit only the 8-GPU node (8 -> 5 -> 2),
# which then holds one small set: 3 + 1 = 4. A set that only partly fits keeps what it took: a
# second big set in flight places its master, then no node has 3 GPUs (2 left), so it stops there
# and the small sets count 3 + 1 = 4 again. Two small sets in flight fill two 2-GPU nodes: 1 + 4.
MODEL_CASES = [
    ("nothing in flight: 7 small sets on the model nodes", (), 7),
    ("a big set in flight is placed first, on the 8-GPU node: 4 left", (BIG_SET,), 4),
    ("a second big set that does not fit takes nothing more than fits", (BIG_SET, BIG_SET), 4),
    ("small sets in flight fill the 2-GPU nodes first: 7 - 2", (SMALL_SET, SMALL_SET), 5),
]


@pytest.mark.parametrize("flights,sets", [c[1:] for c in MODEL_CASES], ids=[c[0] for c in MODEL_CASES])
def test_the_model_path_places_in_flight_workloads_first(flights, sets):
    from scheduler_client.karmada.resourcemodels import GradeCount

    estimate = model_sets(GPU_MODELS, [GradeCount(1, 3), GradeCount(2, 1)], TRAIN_SMALL, False, flights)
    assert estimate.value == sets
    assert ("in-flight" in estimate.reason) == bool(flights)


# --- the whole placement: Karmada's choice moves with what is in flight --------------------

GATES_ON = {**DEFAULT_GATES, MULTIPLE_POD_TEMPLATES: True, OVERCOMMIT_PROTECTION: True}
GATE_OFF = {**DEFAULT_GATES, MULTIPLE_POD_TEMPLATES: True, OVERCOMMIT_PROTECTION: False}
TWO = [gpu_member("member-a", 8), gpu_member("member-b", 8)]


def test_in_flight_sets_move_karmadas_choice_and_are_sent_to_each_estimator():
    # Small job (1-GPU workers): general 4 sets on each member; accurate answers 4 and 4.
    # Two small sets in flight on member-a: general a = 2, b = 4 -> member-b (more sets).
    # With the gate off Karmada sends and deducts nothing: 4 = 4, member-a by name.
    sent = {}

    def ask(names, query, key, flights=None):
        sent.update({n: flights.get(n, ()) if flights else () for n in names})
        return {n: Answer(n, 4) for n in names}

    flights = {"member-a": (SMALL_SET, SMALL_SET)}
    placement = parse_placement(ONE_MEMBER)
    on = evaluate(pytorch(1), TWO, placement, Options(karmada_compatible=True, gates=GATES_ON,
                                                      accurate_members=frozenset({"member-a", "member-b"})),
                  ask, assumed=flights)
    assert [t.name for t in on.targets] == ["member-b"]
    assert on.karmada.sets == {"member-a": 2, "member-b": 4}
    assert sent == {"member-a": (SMALL_SET, SMALL_SET), "member-b": ()}
    sent.clear()
    off = evaluate(pytorch(1), TWO, placement, Options(karmada_compatible=True, gates=GATE_OFF,
                                                       accurate_members=frozenset({"member-a", "member-b"})),
                   ask, assumed=flights)
    assert [t.name for t in off.targets] == ["member-a"]
    assert sent == {"member-a": (), "member-b": ()}
    assert any("not deducted" in w for w in off.warnings)
