"""Merging estimators, choosing one member, the policy's filters, and the reasons given.

Pure logic: members are built from our own snapshots and summaries; accurate answers come
from a fixed table through the `ask_accurate` seam (the gRPC side has its own tests)."""

from __future__ import annotations

import pytest

from estimator.cluster.cache import ClusterCache
from estimator.core.model import Taint
from tests.support.builders import node
from scheduler_client.accurate import Answer
from scheduler_client.karmada import Candidate, ResourceSummary, karmada_order
from scheduler_client.interpreters import interpret
from scheduler_client.karmada.minimum import UNKNOWN, merge
from scheduler_client.karmada.policy import PolicyError, parse_placement, parse_policy
from scheduler_client.memberview import Member
from scheduler_client.placement import Options, choose, evaluate
from tests.support.cachemutators import upsert_node, upsert_pod

GPU = "nvidia.com/gpu"


# --- merge ------------------------------------------------------------------------------

MERGE_CASES = [
    ("the minimum of authentic answers", {"general": 3, "resource-models": 5, "accurate": 1}, 1, ("accurate",)),
    ("-1 is ignored, not a minimum", {"general": 3, "resource-models": -1, "accurate": 2}, 2, ("accurate",)),
    ("estimators not asked are ignored", {"general": 4, "resource-models": None, "accurate": None}, 4, ("general",)),
    ("a 0 wins over everything", {"general": 0, "resource-models": -1, "accurate": 7}, 0, ("general",)),
    ("ties name every deciding estimator", {"general": 2, "accurate": 2}, 2, ("general", "accurate")),
    ("no authentic answer leaves the member unknown", {"general": -1, "accurate": -1}, UNKNOWN, ()),
    ("nothing asked leaves the member unknown", {"general": None}, UNKNOWN, ()),
]


@pytest.mark.parametrize("answers,sets,deciding", [c[1:] for c in MERGE_CASES], ids=[c[0] for c in MERGE_CASES])
def test_merge(answers, sets, deciding):
    merged = merge(answers)
    assert (merged.sets, merged.deciding) == (sets, deciding)


# --- select -----------------------------------------------------------------------------

SELECT_CASES = [
    ("more sets first", [("a", 1), ("b", 4), ("c", 2)], "karmada", "b"),
    ("equal sets: by name", [("c", 2), ("b", 2), ("a", 1)], "karmada", "b"),
    ("a member with 0 sets is never chosen", [("a", 0), ("b", 0)], "karmada", None),
    ("an unknown member is never chosen", [("a", -1), ("b", 1)], "karmada", "b"),
    ("tightest takes the fewest sets that still fit", [("a", 4), ("b", 1), ("c", 0)], "tightest", "b"),
    ("tightest breaks ties by name", [("d", 1), ("b", 1), ("c", 3)], "tightest", "b"),
]


@pytest.mark.parametrize("members,strategy,chosen", [c[1:] for c in SELECT_CASES], ids=[c[0] for c in SELECT_CASES])
def test_choose(members, strategy, chosen):
    winner = choose([Candidate(n, s, s >= 0) for n, s in members], strategy)
    assert (winner.name if winner else None) == chosen


def test_ineligible_members_are_skipped_and_karmada_order_is_sets_then_name():
    candidates = [Candidate("a", 5, False), Candidate("c", 2, True), Candidate("b", 2, True)]
    assert choose(candidates).name == "b"
    assert [c.name for c in karmada_order(candidates)] == ["a", "b", "c"]


# --- members for placement tests ----------------------------------------------------------


def snapshot(*nodes, pods=()):
    cache = ClusterCache()
    for n in nodes:
        upsert_node(cache, n.build())
    for p in pods:
        upsert_pod(cache, p.build())
    return cache.snapshot()


def gpu_member(name, gpus_per_node, nodes=1, labels=None, taints=(), region="", zones=()):
    total = gpus_per_node * nodes
    return Member(
        name=name, labels=labels or {}, region=region, zones=zones, taints=taints,
        summary=ResourceSummary({"cpu": 12000 * nodes, "memory": 64 * 2**30 * nodes, GPU: total, "pods": 110 * nodes}),
        summary_source="test",
        snapshot=snapshot(*[node(f"{name}-{i}").cpu("12").memory("64Gi").gpu(gpus_per_node) for i in range(nodes)]),
    )


def pytorch(worker_gpus, workers=2):
    worker = {"containers": [{"name": "w", "resources": {"requests": {"cpu": "50m", GPU: str(worker_gpus)}}}]}
    master = {"containers": [{"name": "m", "resources": {"requests": {"cpu": "50m"}}}]}
    return interpret({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
                      "metadata": {"name": "train", "namespace": "ml"},
                      "spec": {"pytorchReplicaSpecs": {"Master": {"replicas": 1, "template": {"spec": master}},
                                                       "Worker": {"replicas": workers, "template": {"spec": worker}}}}})


SCENARIO = [gpu_member("member-a", 2), gpu_member("member-b", 2, nodes=3), gpu_member("member-c", 8)]
ONE_MEMBER = {"spreadConstraints": [{"spreadByField": "cluster", "minGroups": 1, "maxGroups": 1}],
              "replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Aggregated"}}


def answers(table):
    def ask(names, query, key):
        assert key == "kind=PyTorchJob, name=ml/train"
        return {n: Answer(n, *table[n]) if isinstance(table[n], tuple) else Answer(n, table[n]) for n in names}
    return ask


def place(members=SCENARIO, placement=ONE_MEMBER, accurate=None, **options):
    table = accurate or {}
    return evaluate(pytorch(options.pop("worker_gpus", 3)), members, parse_placement(placement),
                    Options(accurate_members=frozenset(table), **options), answers(table))


def by_name(result):
    return {m.name: m for m in result.members}


def test_general_only_sees_the_trap_in_member_bs_nodes_and_warns_about_it():
    result = place()
    members = by_name(result)
    assert members["member-b"].sets == 1 and members["member-c"].sets == 1
    assert result.selected == "member-c" and members["member-b"].verdict == "rejected"  # its nodes rule it out
    assert any("member-b: the general estimator counts 1 set(s) from cluster totals, but no node has 3 free "
               "nvidia.com/gpu for component worker; largest free on one node: 2; Karmada may place the job there"
               in w for w in result.warnings)


def test_accurate_answers_reject_member_b_with_the_per_node_reason():
    result = place(accurate={"member-a": 0, "member-b": 0, "member-c": 1})
    members = by_name(result)
    assert result.selected == "member-c"
    assert members["member-b"].verdict == "rejected" and members["member-b"].estimates == {
        "general": 1, "resource-models": None, "accurate": 0}
    assert "no node has 3 free nvidia.com/gpu for component worker; largest free on one node: 2" in \
        members["member-b"].reasons
    assert members["member-c"].reasons[0].startswith("chosen: 1 set(s), the minimum of general 1, accurate 1")


def test_a_failed_estimator_counts_as_unknown_and_the_general_answer_stands():
    result = place(accurate={"member-a": 0, "member-b": (-1, "no answer within 3s (deadline exceeded)"), "member-c": 1})
    members = by_name(result)
    assert members["member-b"].estimates["accurate"] == -1 and members["member-b"].sets == 1
    assert "accurate estimator: no answer within 3s (deadline exceeded)" in members["member-b"].reasons
    assert any("drop the accurate answers of every member" in w for w in result.warnings)


def test_each_member_shows_its_accurate_answers_certificate():
    def ask(names, query, key):
        certified = {"member-a": Answer("member-a", 0), "member-b": Answer("member-b", 0, bound=0, proven_optimal=True),
                     "member-c": Answer("member-c", 1, bound=2, proven_optimal=False)}
        return {n: certified[n] for n in names}
    result = evaluate(pytorch(3), SCENARIO, parse_placement(ONE_MEMBER),
                      Options(accurate_members=frozenset({"member-a", "member-b", "member-c"})), ask)
    members = by_name(result)
    assert "accurate estimator: 1 set (at most 2)" in members["member-c"].reasons
    assert "accurate estimator: 0 sets (proven optimal)" in members["member-b"].reasons
    assert not any(r.startswith("accurate estimator:") for r in members["member-a"].reasons)  # none came
    assert (members["member-c"].accurate_bound, members["member-c"].accurate_proven_optimal) == (2, False)
    assert (members["member-a"].accurate_bound, members["member-a"].accurate_proven_optimal) == (None, None)


def test_members_are_listed_in_karmada_order():
    assert [m.name for m in place(worker_gpus=1).members] == ["member-c", "member-b", "member-a"]


def test_tightest_keeps_the_big_member_free():
    assert place(worker_gpus=1).selected == "member-c"
    assert place(worker_gpus=1, strategy="tightest").selected == "member-a"


def test_a_member_with_only_unknown_answers_cannot_be_chosen_and_says_so():
    blind = Member("member-x", summary=None)
    result = place(members=[blind])
    assert result.selected is None and result.members[0].verdict == "unknown"
    assert "no estimator gave an authentic answer" in result.members[0].reasons[0]


# --- the policy's filters -----------------------------------------------------------------

LABELLED = [gpu_member("member-a", 8, labels={"gpu": "a100", "tier": "prod"}, region="eu", zones=("eu-1",)),
            gpu_member("member-b", 8, labels={"gpu": "h100"}, region="us", zones=("us-1", "us-2")),
            gpu_member("member-c", 8, labels={"tier": "dev"}, region="ap", zones=())]

AFFINITY_CASES = [
    ("clusterNames keep only the members named", {"clusterNames": ["member-b", "member-c"]}, "member-b",
     {"member-a": "clusterNames"}),
    ("exclude removes members", {"exclude": ["member-a"]}, "member-b", {"member-a": "exclude"}),
    ("matchLabels select by label", {"labelSelector": {"matchLabels": {"tier": "dev"}}}, "member-c",
     {"member-a": "labelSelector", "member-b": "labelSelector"}),
    ("matchExpressions Exists", {"labelSelector": {"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}},
     "member-a", {"member-c": "labelSelector"}),
    ("matchExpressions NotIn keeps members without the label",
     {"labelSelector": {"matchExpressions": [{"key": "gpu", "operator": "NotIn", "values": ["a100"]}]}}, "member-b",
     {"member-a": "labelSelector"}),
    ("exclude wins over clusterNames", {"clusterNames": ["member-a", "member-c"], "exclude": ["member-a"]},
     "member-c", {"member-a": "exclude", "member-b": "clusterNames"}),
    ("fieldSelector on region", {"fieldSelector": {"matchExpressions": [{"key": "region", "operator": "In",
                                                                         "values": ["us"]}]}},
     "member-b", {"member-a": "fieldSelector", "member-c": "fieldSelector"}),
    ("fieldSelector on zone matches any of the member's zones",
     {"fieldSelector": {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["us-2"]}]}}, "member-b",
     {"member-a": "fieldSelector"}),
]


@pytest.mark.parametrize("affinity,chosen,rejected", [c[1:] for c in AFFINITY_CASES], ids=[c[0] for c in AFFINITY_CASES])
def test_cluster_affinity_is_applied_first(affinity, chosen, rejected):
    result = place(members=LABELLED, placement={**ONE_MEMBER, "clusterAffinity": affinity})
    members = by_name(result)
    assert result.selected == chosen
    for name, word in rejected.items():
        assert members[name].verdict == "filtered out" and word in members[name].reasons[0]
        assert not members[name].eligible


def test_filtered_members_are_not_asked():
    asked = []

    def ask(names, query, key):
        asked.extend(names)
        return {n: Answer(n, 1) for n in names}

    evaluate(pytorch(3), LABELLED, parse_placement({**ONE_MEMBER, "clusterAffinity": {"clusterNames": ["member-b"]}}),
             Options(accurate_members=frozenset(m.name for m in LABELLED)), ask)
    assert asked == ["member-b"]


def test_cluster_affinities_are_tried_in_order():
    placement = {**ONE_MEMBER, "clusterAffinities": [
        {"affinityName": "small", "clusterNames": ["member-a"]},
        {"affinityName": "any", "clusterNames": ["member-b", "member-c"]}]}
    members = [gpu_member("member-a", 2), *LABELLED[1:]]
    result = place(members=members, placement=placement)
    assert (result.selected, result.affinity_term) == ("member-b", "any")
    assert place(members=members, placement=placement, worker_gpus=1).affinity_term == "small"


def test_untolerated_cluster_taints_filter_a_member():
    tainted = gpu_member("member-a", 8, taints=(Taint("cluster.karmada.io/not-ready", "", "NoSchedule"),))
    result = place(members=[tainted, gpu_member("member-b", 2)], worker_gpus=1)
    assert result.selected == "member-b"
    assert "not-ready:NoSchedule not tolerated" in by_name(result)["member-a"].reasons[0]
    tolerated = {**ONE_MEMBER, "clusterTolerations": [{"key": "cluster.karmada.io/not-ready", "operator": "Exists"}]}
    assert place(members=[tainted], placement=tolerated, worker_gpus=1).selected == "member-a"


# --- warnings about the policy ------------------------------------------------------------

POLICY_WARNINGS = [
    ("no spread constraint means a copy everywhere", {"replicaScheduling": ONE_MEMBER["replicaScheduling"]},
     "copy the job to every member"),
    ("Divided without a preference is defaulted to Weighted, which ignores the spread constraint",
     {"spreadConstraints": ONE_MEMBER["spreadConstraints"], "replicaScheduling": {"replicaSchedulingType": "Divided"}},
     "ignore the spread constraint"),
    ("no replicaScheduling means Karmada does not check the member fits",
     {"spreadConstraints": ONE_MEMBER["spreadConstraints"]}, "without checking"),
]


@pytest.mark.parametrize("placement,words", [c[1:] for c in POLICY_WARNINGS], ids=[c[0] for c in POLICY_WARNINGS])
def test_policies_karmada_would_not_follow_are_warned_about(placement, words):
    assert any(words in w for w in place(placement=placement).warnings)


def test_a_good_policy_gives_no_policy_warning():
    assert not any("policy" in w or "replicaScheduling" in w for w in place(accurate={
        "member-a": 0, "member-b": 0, "member-c": 1}).warnings)


@pytest.mark.parametrize("placement,field", [
    ({"spreadConstraints": [{"spreadByField": "galaxy"}]}, "spec.placement.spreadConstraints[0].spreadByField"),
    ({"spreadConstraints": [{"spreadByField": "cluster", "minGroups": "one"}]},
     "spec.placement.spreadConstraints[0].minGroups"),
    ({"spreadConstraints": [{"spreadByField": "cluster", "minGroups": 2, "maxGroups": 1}]},
     "spec.placement.spreadConstraints[0].maxGroups"),
    ({"clusterAffinity": {"labelSelector": {"matchExpressions": [{"key": "a", "operator": "In"}]}}},
     "spec.placement.clusterAffinity.labelSelector"),
    ({"clusterAffinities": [{"clusterNames": ["a"]}]}, "spec.placement.clusterAffinities[0].affinityName"),
    ({"replicaScheduling": {"replicaSchedulingType": "Spread"}}, "spec.placement.replicaScheduling.replicaSchedulingType"),
], ids=["an unknown spread field", "a word for minGroups", "maxGroups below minGroups", "In without values",
        "an affinity term without a name", "an unknown scheduling type"])
def test_bad_placements_name_the_field(placement, field):
    with pytest.raises(PolicyError) as caught:
        parse_placement(placement)
    assert caught.value.field == field


@pytest.mark.parametrize("selector,selected", [
    ({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob"}, True),
    ({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "name": "train"}, True),
    ({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "name": "other"}, False),
    ({"apiVersion": "kubeflow.org/v1", "kind": "TFJob"}, False),
    ({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "labelSelector": {"matchLabels": {"team": "ml"}}}, True),
    ({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "namespace": "other"}, False),
], ids=["by kind", "by name", "another name", "another kind", "by label", "another namespace"])
def test_a_policy_selects_a_job_as_karmada_matches_resources(selector, selected):
    policy = parse_policy({"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
                           "metadata": {"name": "p", "namespace": "ml"}, "spec": {"resourceSelectors": [selector]}})
    manifest = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
                "metadata": {"name": "train", "namespace": "ml", "labels": {"team": "ml"}}}
    assert policy.selects(manifest) is selected


def one_node_member(*builders):
    return Member("m", summary=ResourceSummary({"cpu": 12000, GPU: 8, "pods": 110}), snapshot=snapshot(*builders))


EXPLAIN_CASES = [
    ("too few replicas fit at once", one_node_member(node("n1").cpu("12").gpu(2)), 3, 1,
     "component worker needs 3 replicas at once; the nodes it may use fit 2 (n1: 2)"),
    ("the components fit alone but not together", one_node_member(node("n1").cpu("12").gpu(2).pods(2)), 2, 1,
     "one set is 3 pods; the nodes its components may use have 2 free pod slots in total"),
    ("no node passes the filters", one_node_member(node("n1").cpu("12").gpu(8).taint("dedicated", "infra")), 2, 1,
     "no node passes component master's node filters (1 node: taint dedicated:NoSchedule not tolerated)"),
    ("a cordoned node is said to be cordoned", one_node_member(node("n1").cpu("12").gpu(8).cordon()), 2, 1,
     "(1 node: cordoned)"),
    ("a resource no node has", one_node_member(node("n1").cpu("12")), 2, 1,
     "no node has 1 free nvidia.com/gpu for component worker; largest free on one node: 0"),
]


@pytest.mark.parametrize("member,workers,gpus,reason", [c[1:] for c in EXPLAIN_CASES], ids=[c[0] for c in EXPLAIN_CASES])
def test_rejections_are_explained_from_the_snapshot(member, workers, gpus, reason):
    worker = {"containers": [{"name": "w", "resources": {"requests": {"cpu": "50m", GPU: str(gpus)}}}]}
    master = {"containers": [{"name": "m", "resources": {"requests": {"cpu": "50m"}}}]}
    job = interpret({"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": {"name": "train", "namespace": "ml"},
                     "spec": {"pytorchReplicaSpecs": {"Master": {"replicas": 1, "template": {"spec": master}},
                                                      "Worker": {"replicas": workers, "template": {"spec": worker}}}}})
    result = evaluate(job, [member], parse_placement(ONE_MEMBER), Options(accurate_members=frozenset({"m"})),
                      answers({"m": 0}))
    assert result.selected is None
    assert any(reason in r for r in result.members[0].reasons), result.members[0].reasons
