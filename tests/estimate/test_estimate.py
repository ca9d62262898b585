"""The estimate step: answers checked against hand-worked values and tests/support/naive.py's packing,
and the witness placement (`SetsEstimate.witness()`, trimmed when a quota caps the answer)
checked against the snapshot it was computed on.

The product builds the witness only for the --v 4 debug log and does not check it at run
time (the kernels check a best-mode placement before returning it); this file is where the
estimate-level witness is checked."""

from __future__ import annotations

import numpy as np
import pytest

from estimator.cluster.cache import ClusterCache
from estimator.cluster.files import load_object_files
from estimator.core.errors import NotReady
from estimator.core.model import Component, ComponentSetsQuery, ReplicaShape
from estimator.estimate.estimate import Estimator
from tests.support import naive
from tests.support.builders import node, quota
from tests.support.cachemutators import upsert_node, upsert_quota
from tests.support.servers import DEMO

MI = 2**20


def train(gpus_per_worker: int) -> ComponentSetsQuery:
    master = Component("master", 1, ReplicaShape((("cpu", 50), ("memory", 32 * MI)), namespace="ml-team"))
    worker = Component("worker", 2, ReplicaShape((("cpu", 50), ("memory", 32 * MI), ("nvidia.com/gpu", gpus_per_worker)),
                                                  namespace="ml-team"))
    return ComponentSetsQuery((master, worker), "ml-team")


def check_witness(estimate, query: ComponentSetsQuery) -> None:
    """The witness places sets x replicas of every component on nodes that pass its filters,
    and no node is asked for more than it has free."""
    snapshot = estimate.snapshot
    witness = estimate.witness()
    assert witness is not None
    used = np.zeros_like(snapshot.available)
    position = {name: i for i, name in enumerate(snapshot.node_names)}
    for component in query.components:
        placed = witness[component.name]
        assert sum(placed.values()) == estimate.sets * component.replicas
        mask = snapshot.node_mask(component.shape.claim)
        for node_name, count in placed.items():
            n = position[node_name]
            assert mask[n], f"{component.name} placed on {node_name}, which its filters exclude"
            used[n, 0] += count
            for resource, amount in component.shape.requests:
                used[n, snapshot.column(resource)] += count * amount
    assert (used <= snapshot.available).all()


# Worked out by hand from deploy/demo: a worker needing 3 GPUs fits no node of member-a or
# member-b (2 GPUs each); member-b: 3 nodes x 2 GPUs / 2 per set (its control plane is
# tainted NoSchedule and has no GPU); member-c: 8 GPUs / 2 per set, or two 3-GPU workers.
DEMO_SETS = {("member-a", 1): 1, ("member-a", 3): 0, ("member-b", 1): 3, ("member-b", 3): 0,
             ("member-c", 1): 4, ("member-c", 3): 1}
TAINTED = {"member-b-control-plane"}  # the demo query tolerates nothing


def naive_sets(snapshot, query: ComponentSetsQuery) -> tuple[int, int]:
    """(Karmada's first-fit, the exhaustive optimum) by tests/support/naive.py on the snapshot's free
    amounts, with eligibility taken from the YAML (TAINTED), not from the estimator's filters."""
    columns = ["pods"] + sorted({name for c in query.components for name, _ in c.shape.requests})
    available = [[int(snapshot.available[n, snapshot.column(name)]) if snapshot.column(name) is not None else 0
                  for name in columns] for n in range(snapshot.num_nodes)]
    requests = [[1] + [c.shape.request(name) for name in columns[1:]] for c in query.components]
    replicas = [c.replicas for c in query.components]
    masks = [[name not in TAINTED for name in snapshot.node_names] for _ in query.components]
    upper = 2**31 - 1
    return naive.first_fit(available, requests, replicas, masks, upper)[0], \
        naive.exhaustive(available, requests, replicas, masks, upper)[0]


@pytest.mark.parametrize("packing", ["best", "first-fit"])
@pytest.mark.parametrize("member", ["member-a", "member-b", "member-c"])
@pytest.mark.parametrize("gpus", [1, 3])
def test_demo_answers_match_hand_and_naive_packing_and_their_witness_fits(member, gpus, packing):
    state = load_object_files([DEMO / f"{member}.yaml"])
    query = train(gpus)
    estimate = Estimator(state.snapshot, packing=packing).max_available_component_sets(query)
    first_fit, optimum = naive_sets(estimate.snapshot, query)
    assert (estimate.sets, first_fit, optimum) == (DEMO_SETS[member, gpus],) * 3
    check_witness(estimate, query)


# A 0 must come from the GPUs: with fewer GPUs per worker the same member holds a set
# (member-a: its 2 GPUs take two 1-GPU workers; member-b: one 2-GPU worker per node, 3 of 2).
@pytest.mark.parametrize("packing", ["best", "first-fit"])
@pytest.mark.parametrize("member,gpus,sets", [("member-a", 1, 1), ("member-b", 2, 1)])
def test_a_zero_answer_is_the_gpus_and_fewer_gpus_per_worker_fit(member, gpus, sets, packing):
    estimator = Estimator(load_object_files([DEMO / f"{member}.yaml"]).snapshot, packing=packing)
    zero = estimator.max_available_component_sets(train(3))
    assert zero.sets == 0 and zero.bound == 0
    packing_result = zero.outcome.results["NodeResourceEstimator"]
    assert (packing_result.value, packing_result.reason) == (0, "no enough resources")
    assert zero.witness() == {"master": {}, "worker": {}}
    assert estimator.max_available_component_sets(train(gpus)).sets == sets


def test_a_quota_caps_the_answer_and_the_witness_is_trimmed_to_it():
    cache = ClusterCache()
    upsert_node(cache, node("gpu-8").cpu(12).memory("64Gi").gpu(8).build())
    upsert_quota(cache, quota("ml-team", "gpus").hard("requests.nvidia.com/gpu", 4).used("requests.nvidia.com/gpu", 0)
                       .build())
    estimate = Estimator(cache.snapshot).max_available_component_sets(train(1))
    assert estimate.sets == 2  # the node holds 4 sets; the quota allows 4 GPUs = 2 sets
    check_witness(estimate, train(1))
    assert sum(estimate.witness()["worker"].values()) == 4


def test_no_state_yet_is_not_ready():
    with pytest.raises(NotReady):
        Estimator(lambda: None).max_available_component_sets(train(1))


def test_a_member_without_nodes_answers_zero_before_any_plugin():
    cache = ClusterCache()
    estimate = Estimator(cache.snapshot).max_available_component_sets(train(1))
    assert (estimate.sets, estimate.outcome, estimate.bound, estimate.witness()) == (0, None, 0, None)
    # The same query on one node that holds exactly one set (2 GPUs) runs the plugins and answers 1.
    upsert_node(cache, node("gpu-2").cpu(1).memory("1Gi").gpu(2).build())
    estimate = Estimator(cache.snapshot).max_available_component_sets(train(1))
    assert estimate.sets == 1 and estimate.outcome is not None
    check_witness(estimate, train(1))


def test_a_quota_that_binds_makes_the_answer_proven_optimal():
    cache = ClusterCache()
    upsert_node(cache, node("gpu-8").cpu(12).memory("64Gi").gpu(8).build())
    upsert_quota(cache, quota("ml-team", "gpus").hard("requests.nvidia.com/gpu", 4).used("requests.nvidia.com/gpu", 0)
                       .build())
    for packing in ("best", "first-fit"):
        estimate = Estimator(cache.snapshot, packing=packing).max_available_component_sets(train(1))
        assert (estimate.sets, estimate.bound, estimate.proven_optimal) == (2, 2, True)


def test_where_first_fit_strands_gpus_its_bound_says_how_far_it_may_be():
    # First-fit's masters take pod slots of the gpu nodes (first in order), stranding a GPU
    # per set; best puts them on the cpu node and reaches the bound (4 GPUs / 2 per set).
    cache = ClusterCache()
    upsert_node(cache, node("gpu-a").cpu(8).memory("64Gi").gpu(2).pods(2).build())
    upsert_node(cache, node("gpu-b").cpu(8).memory("64Gi").gpu(2).pods(2).build())
    upsert_node(cache, node("x-cpu").cpu(8).memory("64Gi").pods(10).build())
    first_fit = Estimator(cache.snapshot, packing="first-fit").max_available_component_sets(train(1))
    best = Estimator(cache.snapshot, packing="best", best_budget=None).max_available_component_sets(train(1))
    assert (first_fit.sets, first_fit.bound, first_fit.proven_optimal) == (1, 2, False)
    assert (best.sets, best.bound, best.proven_optimal) == (2, 2, True)
    check_witness(best, train(1))


def test_optimality_metrics_count_proven_and_unproven_answers():
    from estimator.service.metrics import EstimatorMetrics

    metrics = EstimatorMetrics()
    metrics.observe_optimality("best", 5, 5)
    metrics.observe_optimality("first-fit", 3, 4)
    metrics.observe_optimality("first-fit", 3, None)
    page = metrics.exposition().decode()
    name = "karmada_scheduler_estimator_component_sets_answers_total"
    assert f'{name}{{optimality="proven",packing="best"}} 1.0' in page
    assert f'{name}{{optimality="unproven",packing="first-fit"}} 1.0' in page
    assert f'{name}{{optimality="unknown",packing="first-fit"}} 1.0' in page
    assert 'karmada_scheduler_estimator_component_sets_bound_gap_ratio_sum{packing="first-fit"} 0.25' in page


def test_a_negative_best_budget_is_refused():
    with pytest.raises(ValueError, match="best_budget"):
        Estimator(ClusterCache().snapshot, best_budget=-1)
