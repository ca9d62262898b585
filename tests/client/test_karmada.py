"""What Karmada's scheduler itself does with a component job, and --karmada-compatible.

Fleet (see test_client_placement): member-a 1 node x 2 GPUs, member-b 3 nodes x 2 GPUs,
member-c 1 node x 8 GPUs; summaries are the nodes' totals (110 pods per node, none used).
Job: master 1 x 50m cpu + worker N x {50m cpu, G GPUs}; with G = 3, N = 2 one set is 6 GPUs,
so Karmada's general estimator (cluster totals) counts a 0, b 1, c 1 set(s); per node only c
holds a 3-GPU worker, so accurate estimators answer a 0, b 0, c 1.

Every expected value below is worked out from Karmada's scheduler code (v1.18.2: core,
spreadconstraint, estimator/client), in the comment of each case.
"""

from __future__ import annotations

import json

import pytest

from scheduler_client.accurate import Answer
from scheduler_client.karmada import DEFAULT_GATES, MULTIPLE_POD_TEMPLATES
from scheduler_client.karmada.selection import select_by_available
from scheduler_client.placement import Options, evaluate
from scheduler_client.karmada.policy import PolicyError, parse_placement
from estimator.core.model import Taint
from tests.client.test_placement import SCENARIO, gpu_member, pytorch

GATE_ON = {**DEFAULT_GATES, MULTIPLE_POD_TEMPLATES: True}
ONE = [{"spreadByField": "cluster", "minGroups": 1, "maxGroups": 1}]
AGGREGATED = {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Aggregated"}
ALL_ACCURATE = {"member-a": 0, "member-b": 0, "member-c": 1}
D = gpu_member("member-d", 2)  # no accurate estimator in the (c) cases; general 0 sets for G = 3


def ask(table):
    def answer(names, query, key):
        return {n: Answer(n, *table[n]) if isinstance(table[n], tuple) else Answer(n, table[n])
                for n in names if n in table}
    return answer


def run(placement, accurate=None, members=SCENARIO, worker_gpus=3, compatible=True, gates=GATE_ON, estimators=None):
    table = accurate or {}
    with_estimator = frozenset(estimators if estimators is not None else table)
    return evaluate(pytorch(worker_gpus), members, parse_placement(placement),
                    Options(karmada_compatible=compatible, gates=gates, accurate_members=with_estimator), ask(table))


def names(targets):
    return [t.name for t in targets]


# --- (a), (b), (c) and the ordinary path: the targets under --karmada-compatible -------------

CASES = [
    # Ordinary path: sets a 0, b 0, c 1 -> order c, a, b; c has a set.
    ("Aggregated with the one-member spread takes the member with most sets",
     {"spreadConstraints": ONE, "replicaScheduling": AGGREGATED}, ALL_ACCURATE, SCENARIO, None, 3, ["member-c"]),
    # (a) No spread constraint: SelectBestClusters returns every feasible member; the single-template
    # estimator (no requirements) ranks them by free pods: b 330, a 110, c 110 (then name).
    ("No spread constraint copies the job to every member",
     {"replicaScheduling": AGGREGATED}, ALL_ACCURATE, SCENARIO, None, 3, ["member-b", "member-a", "member-c"]),
    # (a) Divided without a preference is defaulted to Weighted, no weightPreference: spread ignored
    # by SelectBestClusters, but isMultiTemplateSchedulingApplicable only looks at the 1..1 spread,
    # so members are ranked by component sets: c 1, a 0, b 0.
    ("Weighted without a weight preference ignores the spread constraint",
     {"spreadConstraints": ONE, "replicaScheduling": {"replicaSchedulingType": "Divided"}}, ALL_ACCURATE, SCENARIO,
     None, 3, ["member-c", "member-a", "member-b"]),
    # weightPreference {} is not nil: the spread constraint stays, ordinary path.
    ("An empty weight preference keeps the spread constraint",
     {"spreadConstraints": ONE, "replicaScheduling": {"replicaSchedulingType": "Divided",
                                                      "replicaDivisionPreference": "Weighted",
                                                      "weightPreference": {}}},
     ALL_ACCURATE, SCENARIO, None, 3, ["member-c"]),
    # Static weights with a dynamic weight: shouldIgnoreSpreadConstraint is false.
    ("Static and dynamic weights together keep the spread constraint",
     {"spreadConstraints": ONE, "replicaScheduling": {
         "replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
         "weightPreference": {"staticWeightList": [{"targetCluster": {"clusterNames": ["member-a"]}, "weight": 1}],
                              "dynamicWeight": "AvailableReplicas"}}},
     ALL_ACCURATE, SCENARIO, None, 3, ["member-c"]),
    # (b) Duplicated: needReplicas = -1, the first member in order is taken. G = 9: every member 0
    # sets, so the order is by name and member-a is taken at 0 sets.
    ("Duplicated takes the first member even at 0 sets",
     {"spreadConstraints": ONE, "replicaScheduling": {"replicaSchedulingType": "Duplicated"}},
     {"member-a": 0, "member-b": 0, "member-c": 0}, SCENARIO, None, 9, ["member-a"]),
    ("No replica scheduling takes the first member even at 0 sets",
     {"spreadConstraints": ONE}, {"member-a": 0, "member-b": 0, "member-c": 0}, SCENARIO, None, 9, ["member-a"]),
    # (c) member-d has no estimator: GetClient fails, the accurate call errs, accurate answers of
    # every member are dropped; general alone: a 0, b 1, c 1, d 0 -> b (name before c).
    ("A member without an accurate estimator makes Karmada use the general estimator alone",
     {"spreadConstraints": ONE, "replicaScheduling": AGGREGATED}, ALL_ACCURATE, [*SCENARIO, D], None, 3,
     ["member-b"]),
    # (c) a failed call (deadline) drops them too.
    ("A failing accurate estimator makes Karmada use the general estimator alone",
     {"spreadConstraints": ONE, "replicaScheduling": AGGREGATED},
     {"member-a": 0, "member-b": 0, "member-c": (-1, "no answer within 3s (deadline exceeded)")}, SCENARIO, None, 3,
     ["member-b"]),
    # A member the filters remove is not asked, so its missing estimator does not matter.
    ("A filtered member without an estimator does not drop the accurate answers",
     {"spreadConstraints": ONE, "replicaScheduling": AGGREGATED,
      "clusterAffinity": {"clusterNames": ["member-a", "member-b", "member-c"]}}, ALL_ACCURATE, [*SCENARIO, D], None,
     3, ["member-c"]),
    # An estimator's own -1 is not an error: skipped for that member only (b: general 1 stays,
    # c: min(1, 1)); b and c tie at 1 -> b by name.
    ("An estimator answering -1 is skipped for that member only",
     {"spreadConstraints": ONE, "replicaScheduling": AGGREGATED}, {"member-a": 0, "member-b": -1, "member-c": 1},
     SCENARIO, None, 3, ["member-b"]),
    # Gate off: no components in the binding, not a workload: every member MaxInt32, ties by name.
    ("With the gate off Karmada takes the first member by name",
     {"spreadConstraints": ONE, "replicaScheduling": AGGREGATED}, ALL_ACCURATE, SCENARIO, DEFAULT_GATES, 9, ["member-a"]),
]


@pytest.mark.parametrize("placement,accurate,members,gates,gpus,expected", [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_compatible_targets_are_karmadas(placement, accurate, members, gates, gpus, expected):
    result = run(placement, accurate, members, gpus, gates=gates or GATE_ON)
    assert names(result.targets) == expected
    assert names(result.karmada.targets) == expected
    assert all(t.replicas == 0 for t in result.targets)  # a component job goes whole, replicas 0
    assert result.selected == expected[0]
    assert {m.name for m in result.members if m.verdict == "chosen"} == set(expected)


ERRORS = [
    ("No member with a set is Karmada's select error",
     {"spreadConstraints": ONE, "replicaScheduling": AGGREGATED}, SCENARIO, 9,
     "failed to select clusters: no enough resource when selecting 1 clusters"),
    ("No member passing the affinity is a fit error",
     {"spreadConstraints": ONE, "replicaScheduling": AGGREGATED, "clusterAffinity": {"clusterNames": ["nope"]}},
     SCENARIO, 3, "0/3 clusters are available: 3 cluster(s) did not match the placement cluster affinity "
                  "constraint."),
    ("Fit error reasons are counted and sorted",
     {"spreadConstraints": ONE, "replicaScheduling": AGGREGATED, "clusterAffinity": {"exclude": ["member-b", "member-c"]}},
     [gpu_member("member-a", 8, taints=(Taint("k", "v", "NoSchedule"),)), *SCENARIO[1:]], 3,
     "0/3 clusters are available: 1 cluster(s) had untolerated taint {k=v:NoSchedule}, 2 cluster(s) did not match "
     "the placement cluster affinity constraint."),
    ("Fewer feasible members than minGroups",
     {"spreadConstraints": [{"spreadByField": "cluster", "minGroups": 2, "maxGroups": 2}],
      "replicaScheduling": AGGREGATED, "clusterAffinity": {"clusterNames": ["member-c"]}}, SCENARIO, 3,
     "failed to select clusters: the number of feasible clusters is less than spreadConstraint.MinGroups"),
    # maxGroups unset (0): needCnt = min(3, 0) = 0 and the empty selection is an error.
    ("A cluster spread without maxGroups selects nothing",
     {"spreadConstraints": [{"spreadByField": "cluster"}], "replicaScheduling": AGGREGATED}, SCENARIO, 3,
     "failed to select clusters: no enough resource when selecting 0 clusters"),
    ("A zone spread alone is not supported by Karmada's selection",
     {"spreadConstraints": [{"spreadByField": "zone", "minGroups": 1}], "replicaScheduling": AGGREGATED},
     [gpu_member("member-a", 8, zones=("z1",))], 3,
     "failed to select clusters: just support cluster and region spread constraint"),
    # Every term fails: Karmada reports the FIRST term's error.
    ("When every affinity term fails the first term's error is reported",
     {"spreadConstraints": ONE, "replicaScheduling": AGGREGATED, "clusterAffinities": [
         {"affinityName": "first", "clusterNames": ["member-a"]},
         {"affinityName": "second", "clusterNames": ["nope"]}]}, SCENARIO, 3,
     "failed to select clusters: no enough resource when selecting 1 clusters"),
]


@pytest.mark.parametrize("placement,members,gpus,error", [c[1:] for c in ERRORS], ids=[c[0] for c in ERRORS])
def test_karmadas_error_text_when_it_places_nothing(placement, members, gpus, error):
    result = run(placement, {}, members, gpus, estimators=())
    assert result.karmada.error == error and result.targets == () and result.selected is None


# --- the default mode states Karmada's outcome beside its own ----------------------------


def test_default_mode_recommends_its_own_member_and_states_karmadas():
    # Own: d has no estimator (general 0), b accurate 0 -> c. Karmada: path (c) -> b.
    result = run({"spreadConstraints": ONE, "replicaScheduling": AGGREGATED}, ALL_ACCURATE, [*SCENARIO, D],
                 compatible=False)
    assert names(result.targets) == ["member-c"] and names(result.karmada.targets) == ["member-b"]
    (note,) = result.karmada.paths
    assert note.path == "c" and note.decisive and "member-d" in note.text
    assert result.karmada.accurate_dropped


def test_path_b_is_decisive_only_when_the_first_member_does_not_fit():
    duplicated = {"spreadConstraints": ONE, "replicaScheduling": {"replicaSchedulingType": "Duplicated"}}
    fits = run(duplicated, ALL_ACCURATE)
    assert [(p.path, p.decisive) for p in fits.karmada.paths] == [("b", False)]
    stuck = run(duplicated, {"member-a": 0, "member-b": 0, "member-c": 0}, worker_gpus=9)
    assert [(p.path, p.decisive) for p in stuck.karmada.paths] == [("b", True)]
    assert "fits 0 sets" in stuck.karmada.paths[0].text


# --- overflowAffinities ------------------------------------------------------------------

OVERFLOW = {"spreadConstraints": ONE, "replicaScheduling": AGGREGATED, "clusterAffinities": [
    {"affinityName": "primary", "clusterNames": ["member-a"],
     "overflowAffinities": [{"affinityName": "burst", "clusterNames": ["member-c"]}]}]}


@pytest.mark.parametrize("compatible", [True, False], ids=["compatible", "default"])
@pytest.mark.parametrize("gpus,expected", [
    (1, "member-a"),  # a fits 1 set (general 2 // 2), c 4: a ranks first as the primary group
    (3, "member-c"),  # a fits 0: the swap takes c from the overflow group
], ids=["The primary group ranks first", "An overflow member is used when the primary group is full"])
def test_overflow_members_rank_after_the_primary_group(compatible, gpus, expected):
    result = run(OVERFLOW, {}, SCENARIO, gpus, compatible=compatible, estimators=())
    assert result.selected == expected and names(result.karmada.targets) == [expected]
    assert result.karmada.order == ("member-a", "member-c")
    assert next(m for m in result.members if m.name == "member-b").verdict == "filtered out"


@pytest.mark.parametrize("placement,field", [
    ({"replicaScheduling": {"replicaSchedulingType": "Duplicated"}, "clusterAffinities": OVERFLOW["clusterAffinities"]},
     "spec.placement.clusterAffinities[0].overflowAffinities"),
    ({"replicaScheduling": AGGREGATED, "clusterAffinities": [
        {"affinityName": "p", "overflowAffinities": [{"affinityName": "o", "clusterNames": ["member-c"]}]}]},
     "spec.placement.clusterAffinities[0].overflowAffinities"),
    ({"replicaScheduling": AGGREGATED, "clusterAffinities": [
        {"affinityName": "p", "clusterNames": ["member-a"], "overflowAffinities": [{"affinityName": "p"}]}]},
     "spec.placement.clusterAffinities[0].overflowAffinities[0].affinityName"),
], ids=["Overflow needs aggregated or dynamic weight", "Overflow needs an inline affinity", "Overflow names are unique"])
def test_bad_overflow_affinities_name_the_field(placement, field):
    with pytest.raises(PolicyError) as error:
        parse_placement(placement)
    assert error.value.field == field


# --- spread detection ---------------------------------------------------------------------

SPREAD = [
    ("No weight preference is ignored", {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted"},
     True),
    ("An empty weight preference is kept", {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
                                            "weightPreference": {}}, False),
    ("Static weights alone are ignored", {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
                                          "weightPreference": {"staticWeightList": [{"weight": 1}]}}, True),
    ("Static and dynamic weights are kept",
     {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
      "weightPreference": {"staticWeightList": [{"weight": 1}], "dynamicWeight": "AvailableReplicas"}}, False),
    ("A dynamic weight alone is kept", {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
                                        "weightPreference": {"dynamicWeight": "AvailableReplicas"}}, False),
    ("Aggregated is kept", AGGREGATED, False),
]


@pytest.mark.parametrize("scheduling,ignored", [c[1:] for c in SPREAD], ids=[c[0] for c in SPREAD])
def test_spread_ignored_as_karmada_decides(scheduling, ignored):
    assert parse_placement({"spreadConstraints": ONE, "replicaScheduling": scheduling}).spread_ignored() is ignored


# --- the pieces ---------------------------------------------------------------------------

SWAP = [
    ("The first member is kept when it fits", [("a", 3), ("b", 1)], 1, 1, ["a"]),
    ("The biggest of the rest replaces a short member", [("a", 0), ("b", 1), ("c", 2)], 1, 1, ["c"]),
    ("Ties in the rest keep the first of them", [("a", 0), ("b", 2), ("c", 2)], 1, 1, ["b"]),
    ("Nobody fits", [("a", 0), ("b", 0)], 1, 1, None),
    ("Nothing needed keeps the first", [("a", 0), ("b", 0)], 1, 0, ["a"]),
    ("The last slot is swapped first", [("a", 1), ("b", 0), ("c", 5)], 2, 3, ["a", "c"]),
]


@pytest.mark.parametrize("ranked,count,need,expected", [c[1:] for c in SWAP], ids=[c[0] for c in SWAP])
def test_select_by_available_swaps_as_karmada(ranked, count, need, expected):
    picked = select_by_available(ranked, count, need)
    assert (None if picked is None else [n for n, _ in picked]) == expected


def test_json_targets_are_machine_readable(capsys):
    from scheduler_client.cli import main
    from tests.support.servers import DEMO
    members = [a for m in ("member-a", "member-b", "member-c") for a in ("--member", f"{m}={DEMO / (m + '.yaml')}")]
    code = main(["--job", str(DEMO / "jobs" / "train-big.yaml"), "--policy",
                 str(DEMO / "policies" / "copy-everywhere.yaml"), "--clusters", str(DEMO / "clusters.yaml"), *members,
                 "--feature-gates", "MultiplePodTemplatesScheduling=true", "--karmada-compatible", "-o", "json"])
    data = json.loads(capsys.readouterr().out)
    # No spread constraint: every member the clusterNames allow gets the whole job.
    assert code == 0 and data["karmadaCompatible"] is True
    assert sorted(t["name"] for t in data["targets"]) == ["member-a", "member-b", "member-c"]
    assert data["targets"] == data["karmada"]["targets"] and all(t["replicas"] == 0 for t in data["targets"])
    assert [p["path"] for p in data["karmada"]["paths"]] == ["a"] and data["karmada"]["error"] is None


# --- Karmada's outcome uses Karmada's reading of the job -----------------------------------


def test_karmadas_outcome_follows_its_own_reading_of_a_volcano_job():
    from scheduler_client.interpreters import interpret
    worker = {"spec": {"containers": [{"name": "w", "resources": {"requests": {"cpu": "1", "nvidia.com/gpu": "3"}}}]}}
    manifest = {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "v", "namespace": "ml"},
                "spec": {"tasks": [{"name": "w", "replicas": 2, "template": worker}]}}
    ours, theirs = interpret(manifest), interpret(manifest, karmada_compatible=True)
    member = [gpu_member("member-m", 4)]
    placement = parse_placement({"spreadConstraints": ONE, "replicaScheduling": AGGREGATED})
    # Volcano's gang: 2 workers x 3 GPUs = 6 > 4: no set. Karmada reads minAvailable 1: 3 GPUs, 1 set.
    default = evaluate(ours, member, placement, Options(gates=GATE_ON), None, theirs)
    assert default.targets == () and names(default.karmada.targets) == ["member-m"]
    compatible = evaluate(theirs, member, placement, Options(gates=GATE_ON, karmada_compatible=True), None)
    assert names(compatible.targets) == ["member-m"]


def test_kinds_karmada_has_no_interpreter_for_say_so():
    from scheduler_client.interpreters import interpret
    manifest = {"apiVersion": "kubeflow.org/v1", "kind": "XGBoostJob", "metadata": {"name": "x", "namespace": "ml"},
                "spec": {"xgbReplicaSpecs": {"Master": {"template": {"spec": {"containers": [{"name": "m"}]}}}}}}
    result = evaluate(interpret(manifest), SCENARIO, parse_placement({"spreadConstraints": ONE,
                                                                      "replicaScheduling": AGGREGATED}),
                      Options(gates=GATE_ON))
    assert "no built-in interpreter for XGBoostJob" in result.karmada.caveat


def test_a_member_failing_several_filters_is_counted_once_and_the_ambiguity_is_said():
    # Karmada stops at the first failing plugin; its plugin order comes from a Go map.
    tainted = gpu_member("member-a", 8, taints=(Taint("k", "", "NoSchedule"),))
    result = run({"spreadConstraints": ONE, "replicaScheduling": AGGREGATED,
                  "clusterAffinity": {"clusterNames": ["nope"]}}, {}, [tainted], 3, estimators=())
    error = result.karmada.error
    assert error.startswith("0/1 clusters are available: 1 cluster(s) ") and error.count("cluster(s)") == 1
    assert "member-a: cluster(s) had untolerated taint {k:NoSchedule}; cluster(s) did not match" in \
        result.karmada.caveat


def test_a_copy_everywhere_ranks_by_free_pods_and_members_keep_their_sets():
    # Not the one-member path: Karmada ranks by MaxAvailableReplicas (free pods: b 330, a 110,
    # c 110); the table's sets stay complete sets (general 0/1/1, accurate 0/0/1).
    result = run({"replicaScheduling": AGGREGATED}, ALL_ACCURATE)
    assert result.karmada.ranked_by == "free pods"
    assert dict(result.karmada.sets) == {"member-a": 110, "member-b": 330, "member-c": 110}
    assert {m.name: m.sets for m in result.members} == {"member-a": 0, "member-b": 0, "member-c": 1}
