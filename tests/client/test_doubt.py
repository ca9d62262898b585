"""The client tells the truth about doubt (issue 29, item 6): a member whose own snapshot shows
that no node can hold a set is never recommended, and the member that would be chosen is
"undecided" (nothing selected, karmada-place exits 5) when its accurate estimator gave no
answer for a job asking an extended resource (GPUs) that no answer given judged per node.

Pure logic over the members of test_placement, accurate answers from a fixed table. Worked
out by hand for pytorch(3): one set = master 1 x 50m cpu + worker 2 x (50m cpu, 3 GPUs), so
6 GPUs, 150m cpu and 3 pods a set.
- member-a, 1 node x 2 GPUs: cluster totals 2 GPUs < 6: general 0, rejected.
- member-b, 3 nodes x 2 GPUs: totals 6 GPUs: general 1; but no node has 3 GPUs for a worker
  (its snapshot says so): never chosen.
- member-c, 1 node x 8 GPUs: totals 8 // 6 = 1 set; its one node holds both workers.
No resource models (models column: not asked) unless a case gives member-c GPU models: one
model node of grade 2 (8 cpu, 32 GiB, 8 GPUs), which holds one set: models 1.
For the cpu-only job (pytorch(0)): pods decide, 110 per node // 3 = 36 sets on member-a and
member-c, 330 // 3 = 110 on member-b, which Karmada's order (most sets first) takes.
"""

from __future__ import annotations

import dataclasses
import json

import pytest

from scheduler_client.accurate import Answer
from scheduler_client.cli import EXIT_UNDECIDED, place_json
from scheduler_client.karmada import parse_gates
from scheduler_client.launch import free_port
from scheduler_client.placement import Options, evaluate
from scheduler_client.karmada.policy import parse_placement
from scheduler_client.karmada.resourcemodels import GIB, GradeCount, ModelRange, ResourceModel, standardize
from tests.client.test_cli import CLUSTERS, GOOD, JOB_BIG, MEMBERS, SNAPSHOTS, run
from tests.client.test_placement import GPU, ONE_MEMBER, SCENARIO, gpu_member, pytorch
from tests.support.servers import start_server

ADDRESSES = {"member-a": "10.0.0.1:10352", "member-b": "10.0.0.2:10352", "member-c": "10.0.0.3:10352"}
REFUSED = "unreachable at 10.0.0.3:10352: connection refused"
TIMED_OUT = "no answer within 3s (deadline exceeded)"
GPU_MODELS = standardize([
    ResourceModel(0, (ModelRange("cpu", 0, 0), ModelRange("memory", 0, 0), ModelRange(GPU, 0, 0))),
    ResourceModel(1, (ModelRange("cpu", 8000, 0), ModelRange("memory", 32 * GIB, 0), ModelRange(GPU, 8, 0))),
])


def with_gpu_models(member):
    return dataclasses.replace(member, models=GPU_MODELS, grade_counts=(GradeCount(1, 1),))


def place(accurate, gpus=3, members=SCENARIO, compatible=False, addresses=ADDRESSES):
    def ask(names, query, key):
        return {n: Answer(n, *accurate[n]) if isinstance(accurate[n], tuple) else Answer(n, accurate[n])
                for n in names}

    # The gate on, so that Karmada reads the job's components (its outcome is beside ours, or ours).
    options = Options(karmada_compatible=compatible, gates=parse_gates("MultiplePodTemplatesScheduling=true")[0],
                      accurate_members=frozenset(accurate),
                      accurate_addresses={n: addresses[n] for n in accurate})
    return evaluate(pytorch(gpus), members, parse_placement(ONE_MEMBER), options, ask)


ALL_REFUSED = {m: (-1, REFUSED) for m in ADDRESSES}

# case: (accurate answers, other arguments) -> selected, per member verdict, undecided member (or None)
CASES = [
    ("every accurate estimator unreachable for a GPU job: member-b's nodes cannot hold it, member-c is undecided",
     ALL_REFUSED, {},
     None, {"member-a": "rejected", "member-b": "rejected", "member-c": "undecided"}, "member-c"),
    ("only the would-be member's estimator timing out makes it undecided",
     {"member-a": 0, "member-b": 0, "member-c": (-1, TIMED_OUT)}, {},
     None, {"member-a": "rejected", "member-b": "rejected", "member-c": "undecided"}, "member-c"),
    ("an estimator's own -1, without an error, is unknown too",
     {"member-a": 0, "member-b": 0, "member-c": -1}, {},
     None, {"member-a": "rejected", "member-b": "rejected", "member-c": "undecided"}, "member-c"),
    ("another member's failed estimator casts no doubt on a member whose own estimator answered",
     {"member-a": 0, "member-b": (-1, REFUSED), "member-c": 1}, {},
     "member-c", {"member-a": "rejected", "member-b": "rejected", "member-c": "chosen"}, None),
    ("a cpu-only job is judged by cluster totals: the general answer stands",
     ALL_REFUSED, {"gpus": 0},
     "member-b", {"member-a": "fits", "member-b": "chosen", "member-c": "fits"}, None),
    ("resource models that describe the GPUs judge them per model node: the choice stands",
     ALL_REFUSED, {"members": [*SCENARIO[:2], with_gpu_models(SCENARIO[2])]},
     "member-c", {"member-a": "rejected", "member-b": "rejected", "member-c": "chosen"}, None),
    ("--karmada-compatible answers what Karmada does: the accurate answers dropped (path c), member-b by name",
     ALL_REFUSED, {"compatible": True},
     "member-b", {"member-a": "rejected", "member-b": "chosen", "member-c": "fits"}, None),
]


@pytest.mark.parametrize("accurate,kwargs,selected,verdicts,undecided", [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_doubt_about_the_member_that_would_be_chosen(accurate, kwargs, selected, verdicts, undecided):
    result = place(accurate, **kwargs)
    assert result.selected == selected
    assert [t.name for t in result.targets] == ([selected] if selected else [])
    assert {m.name: m.verdict for m in result.members} == verdicts
    assert (result.undecided.member if result.undecided else None) == undecided


def test_the_doubt_names_the_member_its_estimator_and_what_is_unknown():
    doubt = place(ALL_REFUSED).undecided
    assert (doubt.member, doubt.estimator, doubt.why, doubt.resources, doubt.sets, doubt.counted_by) == \
        ("member-c", "10.0.0.3:10352", REFUSED, (GPU,), 1, ("general",))
    assert doubt.unknown() == ("whether member-c's nodes can hold one set: the job asks nvidia.com/gpu, which the "
                               "general estimator counts only as cluster totals (not per node) and no resource model "
                               "describes")
    assert doubt.text() == ("member-c would be chosen (1 set(s) by general), but its accurate estimator at "
                            f"10.0.0.3:10352 gave no answer ({REFUSED}); unknown: {doubt.unknown()}")


def test_an_estimator_karmada_cannot_dial_has_no_address_to_name():
    doubt = place(ALL_REFUSED, addresses={**ADDRESSES, "member-c": "(none)"}).undecided
    assert doubt.estimator == "" and "its accurate estimator gave no answer" in doubt.text()


def test_a_member_whose_nodes_cannot_hold_a_set_is_rejected_with_its_own_reason():
    member_b = {m.name: m for m in place(ALL_REFUSED).members}["member-b"]
    assert (member_b.sets, member_b.eligible) == (1, False)
    assert member_b.reasons[:2] == (
        "rejected: the member's nodes cannot hold one set (its snapshot), although the minimum of general 1 is "
        "1 set(s):",
        "no node has 3 free nvidia.com/gpu for component worker; largest free on one node: 2")


def test_the_tightest_strategy_never_takes_a_member_its_nodes_rule_out():
    # tightest: fewest sets first; member-b (1) and member-c (1) tie, member-b by name, but its nodes rule it out.
    members = [gpu_member("member-b", 2, nodes=3), gpu_member("member-c", 8)]
    options = Options(strategy="tightest")
    result = evaluate(pytorch(3), members, parse_placement(ONE_MEMBER), options)
    assert result.selected == "member-c"


# --- karmada-place: exit 5, the lines under the table, the JSON -------------------------------
# deploy/demo, train-big, the one-member policy: as above, member-a 0 (its cpu is taken), member-b
# 1 by cluster totals but 2 GPUs a node, member-c 1 (8 GPUs on one node); the default models are
# blind to GPUs (-1).

DEMO_ARGS = ["--job", JOB_BIG, "--policy", GOOD, "--clusters", CLUSTERS, *SNAPSHOTS]


@pytest.fixture(scope="module")
def member_c_estimator():
    server = start_server("member-c")
    yield f"127.0.0.1:{server.port}"
    server.stop(0)


def refused() -> dict[str, str]:
    return {m: f"127.0.0.1:{free_port()}" for m in MEMBERS}


def estimator_args(addresses):
    return [a for m, address in addresses.items() for a in ("--estimator", f"{m}={address}")]


def test_an_unreachable_estimator_makes_karmada_place_undecided_and_exit_5(capsys):
    addresses = refused()
    code, out, _ = run(capsys, *DEMO_ARGS, *estimator_args(addresses))
    assert code == EXIT_UNDECIDED == 5
    rows = {line.split()[0]: line.split()[1:] for line in out.splitlines()
            if line.startswith("  member-") and len(line.split()) == 6}
    assert rows == {"member-a": ["0", "?", "?", "0", "rejected"], "member-b": ["1", "?", "?", "1", "rejected"],
                    "member-c": ["1", "?", "?", "1", "undecided"]}
    lines = out.splitlines()
    at = lines.index("selected: undecided - member-c would be chosen (1 set(s) by general), but the answer that "
                     "decides it is unknown")
    c = addresses["member-c"]
    assert lines[at + 1].startswith(f"  member-c: its accurate estimator at {c} gave no answer: unreachable at {c}")
    assert lines[at + 2] == ("  unknown: whether member-c's nodes can hold one set: the job asks nvidia.com/gpu, "
                             "which the general estimator counts only as cluster totals (not per node) and no "
                             "resource model describes")
    assert "components:" not in out and "selected: member" not in out


def test_the_json_says_the_selection_is_not_trusted_and_why(capsys):
    addresses = refused()
    code, out, _ = run(capsys, *DEMO_ARGS, *estimator_args(addresses), "-o", "json")
    data = json.loads(out)
    assert code == 5 and data["trusted"] is False
    assert (data["selected"], data["targets"]) == (None, [])
    doubt = data["doubt"]
    assert (doubt["member"], doubt["estimator"], doubt["resources"], doubt["sets"], doubt["countedBy"]) == \
        ("member-c", addresses["member-c"], ["nvidia.com/gpu"], 1, ["general"])
    assert doubt["reason"].startswith(f"unreachable at {addresses['member-c']}")
    assert doubt["unknown"].startswith("whether member-c's nodes can hold one set")
    assert {m["name"]: m["verdict"] for m in data["members"]}["member-c"] == "undecided"


def test_with_the_would_be_members_estimator_answering_the_choice_is_trusted(capsys, member_c_estimator):
    addresses = {**refused(), "member-c": member_c_estimator}
    code, out, _ = run(capsys, *DEMO_ARGS, *estimator_args(addresses), "-o", "json")
    data = json.loads(out)
    assert code == 0 and data["selected"] == "member-c" and data["trusted"] is True and data["doubt"] is None


def test_place_json_answers_5_with_the_document():
    code, data, error = place_json([*DEMO_ARGS, *estimator_args(refused())])
    assert (code, error, data["trusted"], data["doubt"]["member"]) == (5, "", False, "member-c")


def test_help_documents_exit_5(capsys):
    code, out, _ = run(capsys, "--help")
    assert code == 0 and "5 undecided: the member that would be chosen was decided without an answer" in \
        " ".join(out.split())
