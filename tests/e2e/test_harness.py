"""The end-to-end harness's own logic, without Go or an apiserver: generator and oracle.

The first-fit-over-node-orders oracle is checked on hand-worked members whose possible
answers are derived in the comments, not by the code under test.
"""

from __future__ import annotations

import copy
import datetime

import kubernetes_validate
import numpy as np
from e2e.harness import oracle
from e2e.harness.members import generate

NOW = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)


def _objects(state):
    yield from state.nodes
    for pod in state.pods:
        pod = copy.deepcopy(pod)
        pod["metadata"].pop("_owner", None)
        yield pod
    yield from state.quotas
    for deployment in state.deployments:
        yield {k: v for k, v in deployment.items() if not k.startswith("_")}
        yield from deployment["_replicasets"]


def test_generator_is_determined_by_its_seed():
    a, b = generate(7, now=NOW), generate(7, now=NOW)
    assert list(_objects(a)) == list(_objects(b))
    assert a.sets_queries == b.sets_queries and a.replicas_queries == b.replicas_queries
    assert list(_objects(generate(8, now=NOW))) != list(_objects(a))


def test_generated_objects_are_valid_kubernetes_objects():
    # Validation is slow per object: one of each kind and shape (which spec fields it sets).
    seen = set()
    for seed in range(1, 6):
        for obj in _objects(generate(seed, now=NOW)):
            shape = (obj["kind"], tuple(sorted(obj.get("spec", {}))), tuple(sorted(obj.get("status", {}))))
            if shape not in seen:
                seen.add(shape)
                kubernetes_validate.validate(obj, "1.36", strict=True)
    assert {kind for kind, _, _ in seen} == {"Node", "Pod", "ResourceQuota", "Deployment", "ReplicaSet"}


def _arrays(available, requests, masks, replicas=None, quota=oracle.MAX_INT32):
    requests = np.array(requests, dtype=np.int64)
    return oracle.SetsArrays(
        available=np.array(available, dtype=np.int64), requests=requests,
        replicas=np.array(replicas or [1] * len(requests), dtype=np.int64),
        masks=np.array(masks, dtype=bool), quota=quota)


def test_order_changes_first_fit_and_both_answers_are_found():
    # columns (pods, cpu). node0 has 3 cpu, node1 has 2. One set = c0 (2 cpu) + c1 (3 cpu).
    # Order node0,node1: c0 takes node0 (1 left), c1 fits nowhere -> 0 sets.
    # Order node1,node0: c0 takes node1, c1 takes node0 -> 1 set.
    arrays = _arrays([[10, 3], [10, 2]], [[1, 2], [1, 3]], [[True, True], [True, True]])
    answers = oracle.first_fit_answers(None, arrays, seed=1)
    assert answers.exhaustive and answers.values == {0, 1}
    assert oracle.reachable(arrays, answers, 1, seed=1)
    assert not oracle.reachable(arrays, answers, 2, seed=1)
    assert oracle.optimum(arrays, 2) == 1


def test_quota_caps_every_order_and_unusable_nodes_are_ignored():
    # node2 is masked out for both components and node1 duplicates node0: one distinct order.
    # Each node holds 4 replicas of c0 (1 cpu of 4); a quota of 3 sets caps the answer.
    arrays = _arrays([[10, 4], [10, 4], [10, 100]], [[1, 1]], [[True, True, False]], replicas=[1], quota=3)
    answers = oracle.first_fit_answers(None, arrays, seed=1)
    assert answers.values == {3} and answers.orders_tried == 1


def test_sampled_orders_fall_back_to_a_targeted_search():
    # Nine distinct nodes: more orders than the exhaustive limit, so values come from samples.
    available = [[10, c] for c in (2, 3, 5, 7, 11, 13, 17, 19, 23)]
    arrays = _arrays(available, [[1, 2], [1, 3]], [[True] * 9, [True] * 9], replicas=[2, 1])
    answers = oracle.first_fit_answers(None, arrays, seed=3)
    assert not answers.exhaustive
    assert not oracle.reachable(arrays, answers, 10**6, seed=3, budget_seconds=1.0)
