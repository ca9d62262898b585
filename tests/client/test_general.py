"""The general estimator: resource-summary arithmetic, resource models (grading, model-node
first-fit, -1 when blind), the cluster status computed from member objects, Cluster objects."""

from __future__ import annotations

import pytest

from estimator.core.model import Component, ReplicaShape
from estimator.core.resources import MAX_INT64
from tests.support.builders import node, pod
from scheduler_client.clusters import ClusterError, parse_cluster, to_cluster_object
from scheduler_client.karmada.clusterstatus import allocatable_modelings, karmada_pod_requests, node_available, \
    resource_summary
from scheduler_client.karmada.general import UNKNOWN, ResourceSummary, model_sets, summary_sets
from scheduler_client.karmada.resourcemodels import (
    DEFAULT_MODELS,
    GIB,
    GradeCount,
    ModelError,
    ModelRange,
    ResourceModel,
    grade_counts,
    model_nodes,
    standardize,
)

GPU = "nvidia.com/gpu"
MI = 2**20


def comp(name, replicas, **requests):
    requests = {GPU if k == "gpu" else k: v for k, v in requests.items()}
    return Component(name, replicas, ReplicaShape(tuple(sorted(requests.items()))))


# The scenario's train-big: master 1 x {cpu 50m, 32Mi}, worker 2 x {cpu 50m, 32Mi, 3 GPU}.
TRAIN_BIG = (comp("master", 1, cpu=50, memory=32 * MI), comp("worker", 2, cpu=50, memory=32 * MI, gpu=3))
TRAIN_SMALL = (comp("master", 1, cpu=50, memory=32 * MI), comp("worker", 2, cpu=50, memory=32 * MI, gpu=1))
CPU_ONLY = (comp("web", 2, cpu=1000, memory=GIB),)


def totals(allocated=None, allocating=None, **allocatable):
    allocatable = {GPU if k == "gpu" else k: v for k, v in allocatable.items()}
    return ResourceSummary(allocatable, allocated or {}, allocating or {})


SUMMARY_CASES = [
    ("six GPUs in total look like room for one set of two 3-GPU workers (the trap)",
     totals(cpu=48000, memory=256 * GIB, gpu=6, pods=440), TRAIN_BIG, 1, "6 nvidia.com/gpu free"),
    ("two GPUs fit no set of 6", totals(cpu=12000, memory=64 * GIB, gpu=2, pods=110), TRAIN_BIG, 0, "nvidia.com/gpu"),
    ("the scarcest resource bounds the sets", totals(cpu=12000, memory=64 * GIB, gpu=8, pods=110), TRAIN_SMALL, 4,
     "nvidia.com/gpu"),
    ("free pod slots bound the sets", totals(cpu=48000, memory=256 * GIB, gpu=8, pods=7), TRAIN_SMALL, 2, "pod slots"),
    ("a resource no node has gives 0", totals(cpu=48000, memory=256 * GIB, pods=110), TRAIN_BIG, 0, "no free nvidia"),
    ("allocated requests are not free", totals({"cpu": 47000, "pods": 5}, cpu=48000, memory=64 * GIB, pods=110),
     CPU_ONLY, 0, "1 cpu free"),
    ("pending pods count as allocating and can leave nothing free",
     totals({"cpu": 7350, "pods": 10}, {"cpu": 12000, "pods": 2}, cpu=12000, memory=64 * GIB, gpu=2, pods=110),
     TRAIN_SMALL, 0, "allocating 12"),
    ("no free pod slot gives 0", totals({"pods": 110}, cpu=12000, memory=64 * GIB, pods=110), CPU_ONLY, 0, "pod"),
    ("a set with no pods is bounded by free pod slots only", totals(cpu=1000, pods=50), (comp("idle", 0, cpu=1),), 50,
     "no pods"),
]


@pytest.mark.parametrize("summary,components,sets,why", [c[1:] for c in SUMMARY_CASES], ids=[c[0] for c in SUMMARY_CASES])
def test_resource_summary_path(summary, components, sets, why):
    estimate = summary_sets(summary, components)
    assert estimate.value == sets and why in estimate.reason


@pytest.mark.parametrize("compatible,value", [(False, UNKNOWN), (True, 0)], ids=["unknown here", "0 like Karmada"])
def test_a_member_without_a_resource_summary(compatible, value):
    assert summary_sets(None, TRAIN_BIG, compatible).value == value


# --- resource models --------------------------------------------------------------------


def cpu_memory_models(*grades):
    """Models with (cpu cores, memory GiB) minimums per grade."""
    return standardize([ResourceModel(g, (ModelRange("cpu", c * 1000, 0), ModelRange("memory", m * GIB, 0)))
                        for g, (c, m) in enumerate(grades)])


GPU_MODELS = standardize([
    ResourceModel(0, (ModelRange("cpu", 0, 0), ModelRange("memory", 0, 0), ModelRange(GPU, 0, 0))),
    ResourceModel(1, (ModelRange("cpu", 4000, 0), ModelRange("memory", 16 * GIB, 0), ModelRange(GPU, 2, 0))),
    ResourceModel(2, (ModelRange("cpu", 8000, 0), ModelRange("memory", 32 * GIB, 0), ModelRange(GPU, 8, 0))),
])

MODEL_CASES = [
    ("a GPU job on cpu-and-memory models is unknown", DEFAULT_MODELS, [GradeCount(3, 4)], TRAIN_BIG, False, UNKNOWN,
     "describe only cpu, memory"),
    ("with --karmada-compatible the blind models answer Karmada's 0", DEFAULT_MODELS, [GradeCount(3, 4)], TRAIN_BIG,
     True, 0, "Karmada answers 0"),
    ("model nodes have the grade's minimum: two 4-core nodes hold two 3-core replicas, one each",
     cpu_memory_models((0, 0), (4, 16)), [GradeCount(1, 2)], (comp("w", 1, cpu=3000),), False, 2, "2 model nodes"),
    ("a replica bigger than one model node fits nowhere, whatever the total",
     cpu_memory_models((0, 0), (1, 4)), [GradeCount(1, 10)], (comp("w", 1, cpu=2000),), False, 0, "10 model nodes"),
    ("GPU-aware models see the per-node GPUs: 2-GPU nodes cannot hold a 3-GPU worker",
     GPU_MODELS, [GradeCount(1, 3)], TRAIN_BIG, False, 0, "grade 1 x3"),
    ("GPU-aware models place train-big on an 8-GPU node", GPU_MODELS, [GradeCount(1, 3), GradeCount(2, 1)], TRAIN_BIG,
     False, 1, "4 model nodes"),
    ("model nodes hold 110 pods each", cpu_memory_models((0, 0), (1000, 1000)), [GradeCount(1, 1)],
     (comp("tiny", 10, cpu=1),), False, 11, "1 model nodes"),
    ("every grade counting 0 nodes gives 0", DEFAULT_MODELS, [GradeCount(0, 0)], CPU_ONLY, False, 0, "no model nodes"),
]


@pytest.mark.parametrize("models,counts,components,compatible,sets,why", [c[1:] for c in MODEL_CASES],
                         ids=[c[0] for c in MODEL_CASES])
def test_resource_model_path(models, counts, components, compatible, sets, why):
    estimate = model_sets(models, counts, components, compatible)
    assert estimate.value == sets and why in estimate.reason


@pytest.mark.parametrize("models,counts,why", [
    ((), [GradeCount(0, 1)], "no resource models"),
    (DEFAULT_MODELS, None, "no allocatableModelings"),
    (DEFAULT_MODELS, [], "no allocatableModelings"),
    (DEFAULT_MODELS, [GradeCount(1, -1)], "negative"),
], ids=["no models", "no modelings in the status", "empty modelings", "a negative count"])
def test_the_model_path_does_not_apply_and_says_why(models, counts, why):
    estimate = model_sets(models, counts, CPU_ONLY)
    assert estimate.value is None and why in estimate.reason


def test_default_models_are_karmadas_nine_cpu_and_memory_grades():
    assert len(DEFAULT_MODELS) == 9 and all(m.names == ("cpu", "memory") for m in DEFAULT_MODELS)
    assert DEFAULT_MODELS[4].ranges == (ModelRange("cpu", 8000, 16000), ModelRange("memory", 64 * GIB, 128 * GIB))
    assert DEFAULT_MODELS[-1].ranges[0].max == MAX_INT64


def test_standardize_sorts_grades_and_opens_the_ends():
    models = standardize([ResourceModel(2, (ModelRange("cpu", 8000, 16000),)),
                          ResourceModel(1, (ModelRange("cpu", 2000, 8000),))])
    assert [m.grade for m in models] == [1, 2]
    assert models[0].ranges[0] == ModelRange("cpu", 0, 8000) and models[1].ranges[0].max == MAX_INT64


GRADE_CASES = [
    ("a node's grade is the lowest over resources", [{"cpu": 12000, "memory": 50 * GIB}], [0, 0, 0, 1, 0, 0, 0, 0, 0]),
    ("a node exactly at a minimum reaches that grade", [{"cpu": 8000, "memory": 64 * GIB}], [0, 0, 0, 0, 1, 0, 0, 0, 0]),
    ("a node without the resource is grade 0", [{"cpu": 64000}], [1, 0, 0, 0, 0, 0, 0, 0, 0]),
    ("a node out of pod slots stops the grading of the nodes after it (Karmada breaks there)",
     [{"cpu": 4000, "memory": 32 * GIB}, None, {"cpu": 128000, "memory": 2048 * GIB}], [0, 0, 0, 1, 0, 0, 0, 0, 0]),
]


@pytest.mark.parametrize("nodes,counts", [c[1:] for c in GRADE_CASES], ids=[c[0] for c in GRADE_CASES])
def test_grading_nodes_on_default_models(nodes, counts):
    assert [c.count for c in grade_counts(DEFAULT_MODELS, nodes)] == counts


def test_a_node_below_every_grade_is_dropped_and_models_must_agree_on_resources():
    models = [ResourceModel(0, (ModelRange("cpu", 2000, 0),)), ResourceModel(1, (ModelRange("cpu", 4000, 0),))]
    assert [c.count for c in grade_counts(models, [{"cpu": 1000}, {"cpu": 5000}])] == [0, 1]
    with pytest.raises(ModelError):
        grade_counts([ResourceModel(0, (ModelRange("cpu", 0, 0),)),
                      ResourceModel(1, (ModelRange("cpu", 0, 0), ModelRange("memory", 0, 0)))], [{"cpu": 1}])


def test_model_nodes_come_grade_by_grade_with_110_pods():
    nodes = model_nodes(cpu_memory_models((0, 0), (4, 16), (8, 32)), [GradeCount(2, 1), GradeCount(1, 2)])
    assert [grade for grade, _ in nodes] == [1, 1, 2]
    assert nodes[0][1] == {"cpu": 4000, "memory": 16 * GIB, "pods": 110}


# --- the cluster status controller ------------------------------------------------------


def test_karmada_pod_requests_sum_containers_take_the_largest_init_and_add_overhead():
    spec = (pod("ns", "p").container(requests={"cpu": "1"}).container(limits={"cpu": "500m", "memory": "1Gi"})
            .init_container(cpu="2").init_container(sidecar=True, cpu="250m").overhead(cpu="100m").build())
    # Karmada's AddPodRequest knows no sidecar rule: each init container only raises the total.
    assert karmada_pod_requests(spec) == {"cpu": 2100, "memory": GIB}


def test_the_summary_counts_bound_pods_as_allocated_and_unbound_ones_as_allocating():
    nodes = [node("n1").cpu("4").memory("8Gi").gpu(2).build(), node("n2").cpu("4").memory("8Gi").build()]
    pods = [pod("a", "running").on("n1").requests(cpu="1", gpu=1).build(),
            pod("a", "done").on("n1").requests(cpu="3").phase("Succeeded").build(),
            pod("a", "pending").unschedulable().requests(cpu="6").build(),
            pod("a", "failed-unbound").requests(cpu="1").phase("Failed").build()]
    summary = resource_summary(nodes, pods)
    assert summary.allocatable == {"cpu": 8000, "memory": 16 * GIB, GPU: 2, "pods": 220}
    assert summary.allocated == {"cpu": 1000, GPU: 1, "pods": 1}
    assert summary.allocating == {"cpu": 7000, "pods": 2}


def test_node_availability_for_grading_is_not_clamped_so_an_overcommitted_node_is_not_graded():
    nodes = [node("n1").cpu("2").memory("4Gi").pods(1).build(), node("n2").cpu("2").memory("4Gi").build()]
    pods = [pod("a", "p1").on("n1").requests(cpu="1").build(), pod("a", "p2").on("n2").requests(cpu="3").build()]
    first, second = node_available(nodes, pods)
    assert first is None
    assert second["cpu"] == -1000 and second["pods"] == 109
    # -1 core is below grade 0's minimum: Karmada finds no grade and leaves the node out.
    assert sum(c.count for c in allocatable_modelings(DEFAULT_MODELS, nodes[1:], pods)) == 0


# --- Cluster objects --------------------------------------------------------------------


def cluster(**status_and_spec):
    return {"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster", "metadata": {"name": "m1", "labels": {"a": "b"}},
            **status_and_spec}


def test_a_cluster_object_gives_summary_models_and_modelings():
    obj = cluster(spec={"zone": "z1", "resourceModels": [
        {"grade": 1, "ranges": [{"name": "cpu", "min": "4", "max": "9223372036854775807"}]},
        {"grade": 0, "ranges": [{"name": "cpu", "min": "1", "max": "4"}]}]},
        status={"resourceSummary": {"allocatable": {"cpu": "12", "pods": "110"}, "allocated": {"cpu": "1500m"},
                                    "allocatableModelings": [{"grade": 0, "count": 0}, {"grade": 1, "count": 1}]}})
    parsed = parse_cluster(obj)
    assert parsed.summary == ResourceSummary({"cpu": 12000, "pods": 110}, {"cpu": 1500}, {})
    assert [m.grade for m in parsed.resource_models] == [0, 1] and parsed.resource_models[0].ranges[0].min == 0
    assert parsed.resource_models[1].ranges[0].max == MAX_INT64
    assert parsed.grade_counts == (GradeCount(0, 0), GradeCount(1, 1)) and parsed.zones == ("z1",)


def test_a_cluster_written_back_reads_the_same():
    summary = ResourceSummary({"cpu": 12000, "memory": 64 * GIB, GPU: 2, "pods": 110}, {"cpu": 7350, "pods": 10},
                              {"cpu": 12000, "pods": 2})
    obj = to_cluster_object("m1", {"a": "b"}, DEFAULT_MODELS, summary, (GradeCount(3, 1),), region="eu")
    parsed = parse_cluster(obj)
    assert parsed.summary == summary and parsed.resource_models == DEFAULT_MODELS
    assert parsed.grade_counts == (GradeCount(3, 1),) and parsed.region == "eu"


@pytest.mark.parametrize("obj,field", [
    (cluster(status={"resourceSummary": {"allocatable": {"cpu": "many"}}}), "status.resourceSummary.allocatable.cpu"),
    (cluster(spec={"resourceModels": [{"grade": -1, "ranges": []}]}), "spec.resourceModels[0].grade"),
    (cluster(spec={"resourceModels": [{"grade": 0, "ranges": [{"min": "1"}]}]}), "spec.resourceModels[0].ranges[0].name"),
    ({"kind": "Node", "metadata": {"name": "n"}}, "kind"),
], ids=["a bad quantity", "a negative grade", "a range without a name", "not a Cluster"])
def test_bad_cluster_objects_name_the_field(obj, field):
    with pytest.raises(ClusterError) as caught:
        parse_cluster(obj)
    assert caught.value.field == field
