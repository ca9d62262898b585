"""Node-resource plugin end to end over a real cluster cache: Karmada's own plugin cases
(re-expressed here), in first-fit parity mode and best mode, plus replica estimates."""

from __future__ import annotations

import pytest

from estimator.cluster.cache import ClusterCache
from estimator.core.model import (
    AssumedWorkload,
    Component,
    ComponentSetsQuery,
    NodeClaim,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    ReplicaShape,
    ReplicasQuery,
    Toleration,
)
from estimator.core.resources import MAX_INT32
from estimator.estimate.framework import Code, EstimateContext
from estimator.estimate.plugins.noderesource import NodeResourcePlugin
from tests.support.builders import node, pod
from tests.support.cachemutators import upsert_node, upsert_pod

GI = 2**30


def cluster(nodes, pods=()):
    cache = ClusterCache()
    for n in nodes:
        upsert_node(cache, n)
    for p in pods:
        upsert_pod(cache, p)
    return cache.snapshot()


def comp(replicas, cpu, memory_gi, claim=NodeClaim(), name="c"):
    requests = tuple(sorted((("cpu", cpu * 1000), ("memory", memory_gi * GI))))
    return Component(name, replicas, ReplicaShape(requests, claim))


def zone_in(*zones):
    return NodeClaim(affinity_terms=(NodeSelectorTerm((NodeSelectorRequirement("zone", "In", zones),)),))


def plain(name, cpu, memory_gi, pods=10, **labels):
    builder = node(name).cpu(cpu).memory(f"{memory_gi}Gi").pods(pods)
    for key, value in labels.items():
        builder = builder.label(key, value)
    return builder.build()


# (name, nodes, pods, components, assumed, expected sets)
KARMADA_PLUGIN_CASES = [
    ("one single-replica component fits four times on one node",
     [plain("n1", 4, 8)], [], [comp(1, 1, 1)], [], 4),
    ("a two-replica component fits twice on one node",
     [plain("n1", 4, 8)], [], [comp(2, 1, 1)], [], 2),
    ("two components share one node",
     [plain("n1", 10, 10)], [], [comp(1, 2, 2), comp(1, 3, 3)], [], 2),
    ("components spread across two nodes",
     [plain("n1", 6, 6), plain("n2", 6, 6)], [], [comp(2, 3, 3), comp(1, 2, 2)], [], 1),
    ("too little on any node gives zero",
     [plain("n1", 2, 2)], [], [comp(1, 3, 3)], [], 0),
    ("existing pods use up part of a node",
     [plain("n1", 4, 8)], [pod("default", "p1").on("n1").requests(cpu="1", memory="2Gi").phase("Running").build()],
     [comp(1, 1, 2)], [], 3),
    ("node affinity keeps a component on matching nodes",
     [plain("n1", 4, 8, zone="us-west"), plain("n2", 4, 8, zone="us-east")], [],
     [comp(1, 1, 1, zone_in("us-west"))], [], 4),
    ("node affinity that matches no node gives zero",
     [plain("n1", 4, 8, zone="us-west"), plain("n2", 4, 8, zone="us-east")], [],
     [comp(4, 1, 1, zone_in("us-south"))], [], 0),
    ("an assumed workload takes its share first",
     [plain("n1", 4, 8)], [], [comp(1, 1, 1)], [AssumedWorkload("default", (comp(1, 1, 1),))], 3),
    ("several assumed workloads add up",
     [plain("n1", 6, 6)], [], [comp(1, 1, 1)],
     [AssumedWorkload("ns1", (comp(1, 1, 1),)), AssumedWorkload("ns2", (comp(1, 2, 2),))], 3),
    ("an assumed workload that fits nowhere changes nothing",
     [plain("n1", 4, 4)], [], [comp(1, 1, 1)], [AssumedWorkload("default", (comp(1, 100, 100),))], 4),
    ("an assumed workload without components is ignored",
     [plain("n1", 4, 4)], [], [comp(1, 1, 1)], [AssumedWorkload("default", ())], 4),
]


@pytest.mark.parametrize("packing", ["first-fit", "best"])
@pytest.mark.parametrize("name,nodes,pods,components,assumed,expected", KARMADA_PLUGIN_CASES,
                         ids=[c[0] for c in KARMADA_PLUGIN_CASES])
def test_karmada_plugin_cases(name, nodes, pods, components, assumed, expected, packing):
    ctx = EstimateContext(cluster(nodes, pods), packing)
    result = NodeResourcePlugin().estimate_components(ctx, ComponentSetsQuery(tuple(components), "default",
                                                                              tuple(assumed)))
    assert result.value == expected
    assert result.code is (Code.UNSCHEDULABLE if expected == 0 else Code.SUCCESS)


def test_empty_components_is_no_operation():
    ctx = EstimateContext(cluster([plain("n1", 4, 8)]))
    result = NodeResourcePlugin().estimate_components(ctx, ComponentSetsQuery(()))
    assert (result.value, result.code) == (MAX_INT32, Code.NOOP)


def test_best_mode_beats_first_fit_where_the_master_blocks_a_gpu_node():
    """First-fit puts the cpu-only master on the first (GPU) node, whose only free pod slot a
    worker needed; best mode keeps the master on the CPU-only node."""
    nodes = [node("gpu-1").cpu(4).memory("8Gi").gpu(1).pods(1).build(),
             node("cpu-1").cpu(4).memory("8Gi").pods(10).build()]
    master = Component("master", 1, ReplicaShape((("cpu", 100),)))
    worker = Component("worker", 1, ReplicaShape((("cpu", 100), ("nvidia.com/gpu", 1))))
    query = ComponentSetsQuery((master, worker))
    snapshot = cluster(nodes)
    first_fit = NodeResourcePlugin().estimate_components(EstimateContext(snapshot, "first-fit"), query)
    # No budget: this is about what the search can find, not how much of it the default
    # allowance of node visits lets it try on a two-node member.
    best = NodeResourcePlugin().estimate_components(EstimateContext(snapshot, "best", None), query)
    assert (first_fit.value, best.value) == (0, 1)
    assert best.detail.placement.tolist() == [[0, 1], [1, 0]]  # master on cpu-1, worker on gpu-1


def test_taints_and_cordons_exclude_nodes_unless_tolerated():
    nodes = [node("cp").cpu(12).memory("8Gi").taint("node-role.kubernetes.io/control-plane", "", "NoSchedule").build(),
             node("cordoned").cpu(12).memory("8Gi").cordon().build(),
             node("open").cpu(1).memory("8Gi").build()]
    snapshot = cluster(nodes)
    one_cpu = ReplicaShape((("cpu", 1000),))
    plugin = NodeResourcePlugin()
    assert plugin.estimate_replicas(EstimateContext(snapshot), ReplicasQuery(one_cpu)).value == 1
    tolerate_all = ReplicaShape((("cpu", 1000),), NodeClaim(tolerations=(Toleration(operator="Exists"),)))
    assert plugin.estimate_replicas(EstimateContext(snapshot), ReplicasQuery(tolerate_all)).value == 25


def test_replicas_without_requirements_count_free_pod_slots():
    snapshot = cluster([plain("n1", 4, 8, pods=10), plain("n2", 4, 8, pods=5)],
                       [pod("default", "p").on("n1").requests(cpu="1").phase("Running").build()])
    assert NodeResourcePlugin().estimate_replicas(EstimateContext(snapshot), ReplicasQuery(None)).value == 14


def test_replicas_of_a_resource_no_node_has_is_zero():
    snapshot = cluster([plain("n1", 4, 8)])
    shape = ReplicaShape((("example.com/fpga", 1),))
    assert NodeResourcePlugin().estimate_replicas(EstimateContext(snapshot), ReplicasQuery(shape)).value == 0


def test_finished_pods_do_not_use_capacity():
    pods = [pod("default", "done").on("n1").requests(cpu="4").phase("Succeeded").build(),
            pod("default", "failed").on("n1").requests(cpu="4").phase("Failed").build()]
    snapshot = cluster([plain("n1", 4, 8)], pods)
    shape = ReplicaShape((("cpu", 1000),))
    assert NodeResourcePlugin().estimate_replicas(EstimateContext(snapshot), ReplicasQuery(shape)).value == 4
