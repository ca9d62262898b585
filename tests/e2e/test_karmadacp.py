"""The local Karmada's workload side and bookkeeping, without Go or an apiserver.

What Karmada does with the jobs is seen only in the phase itself (`python -m e2e.harness.karmadacp`);
here: the pods the training operator's part creates are named, labelled and owned as the Kubeflow
training operator does it, a job's outcome is classified as issue 26 defines W/P/C/Q, the
closing line has its fixed wording, and `client agrees A/B` is counted as defined in
e2e/harness/karmadacp_client.py (below). Expected values are written out by hand.
"""

from __future__ import annotations

from datetime import datetime

import pytest

from e2e.harness import karmadacp, karmadacp_client as kc, karmadacp_workload as wl


def _job(workers: int = 2) -> dict:
    job = wl.pytorchjob("train-big", "ml-team", wl.Shape("t", workers, {"cpu": "500m"}, {"cpu": "1", wl.GPU: "3"}))
    job["metadata"]["uid"] = "uid-1"
    return job


def test_the_operator_names_pods_as_the_training_operator_does():
    names = [p["metadata"]["name"] for p in wl.job_pods(_job(3))]
    assert names == ["train-big-master-0", "train-big-worker-0", "train-big-worker-1", "train-big-worker-2"]


def test_every_pod_carries_the_training_operators_labels():
    master, _, worker1 = wl.job_pods(_job())
    assert master["metadata"]["labels"] == {
        "training.kubeflow.org/job-name": "train-big", "training.kubeflow.org/replica-type": "master",
        "training.kubeflow.org/replica-index": "0", "training.kubeflow.org/operator-name": "pytorchjob-controller",
        "training.kubeflow.org/job-role": "master"}
    assert worker1["metadata"]["labels"] == {
        "training.kubeflow.org/job-name": "train-big", "training.kubeflow.org/replica-type": "worker",
        "training.kubeflow.org/replica-index": "1", "training.kubeflow.org/operator-name": "pytorchjob-controller"}


def test_pods_are_owned_by_their_job_and_take_its_template():
    master, worker, _ = wl.job_pods(_job())
    assert master["metadata"]["ownerReferences"] == [{
        "apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "name": "train-big", "uid": "uid-1",
        "controller": True, "blockOwnerDeletion": True}]
    assert master["metadata"]["namespace"] == "ml-team"
    assert worker["spec"]["containers"][0]["resources"] == {"requests": {"cpu": "1", "nvidia.com/gpu": "3"},
                                                            "limits": {"nvidia.com/gpu": "3"}}
    assert worker["spec"]["restartPolicy"] == "OnFailure"
    assert worker["spec"]["schedulerName"] == "default-scheduler"


def test_exit_code_restart_policy_becomes_never_on_the_pod():
    job = _job()
    job["spec"]["pytorchReplicaSpecs"]["Worker"]["restartPolicy"] = "ExitCode"
    assert {p["spec"]["restartPolicy"] for p in wl.job_pods(job)} == {"OnFailure", "Never"}


def test_creating_pods_does_not_change_the_job():
    job = _job()
    before = repr(job)
    for pod in wl.job_pods(job):
        pod["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "99"
    assert repr(job) == before


@pytest.mark.parametrize("pod, state", [
    ({"spec": {"nodeName": "c-1"}}, "bound"),
    ({"spec": {}, "status": {"conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]}},
     "pending"),
    ({"spec": {}, "status": {"conditions": [{"type": "PodScheduled", "status": "False", "reason": "SchedulerError"}]}},
     "new"),
    ({"spec": {}}, "new"),
], ids=["a pod with a node is bound", "an Unschedulable pod is pending", "another reason is not decided",
        "a fresh pod is not decided"])
def test_pod_states(pod, state):
    assert wl.pod_state(pod) == state


def test_the_job_is_created_before_it_runs():
    created = wl.job_status(["bound", "new", "new"], 2, "t")
    assert [c["type"] for c in created["conditions"]] == ["Created"]
    running = wl.job_status(["bound"] * 3, 2, "t")
    assert [c["type"] for c in running["conditions"]] == ["Created", "Running"]
    assert running["replicaStatuses"] == {"Master": {"active": 1}, "Worker": {"active": 2}}


@pytest.mark.parametrize("outcome, whole, pending, copied, waiting", [
    (wl.JobOutcome("j", ["member-c"], {"member-c": ["bound", "bound", "bound"]}), True, False, False, False),
    (wl.JobOutcome("j", ["member-b"], {"member-b": ["bound", "pending", "pending"]}), False, True, False, False),
    (wl.JobOutcome("j", ["member-a", "member-b"], {"member-a": ["bound"] * 3, "member-b": ["bound"] * 3}),
     False, False, True, False),
    (wl.JobOutcome("j", [], {}), False, False, False, True),
    (wl.JobOutcome("j", [], {"member-a": ["bound"] * 3}), True, False, False, False),
    (wl.JobOutcome("j", ["member-c"], {}), False, False, False, False),
], ids=["all pods bound in one member is whole", "a Pending pod is pending, not whole",
        "two members is copied, not whole", "no member is waiting",
        "a job in a member the binding no longer names still counts where it is",
        "targeted but not yet there is neither whole nor waiting"])
def test_job_outcomes(outcome, whole, pending, copied, waiting):
    assert (outcome.whole, outcome.pending, outcome.copied, outcome.waiting) == (whole, pending, copied, waiting)


def test_the_tally_counts_each_category():
    outcomes = [wl.JobOutcome("a", ["m1"], {"m1": ["bound"]}), wl.JobOutcome("b", [], {}),
                wl.JobOutcome("c", ["m1", "m2"], {"m1": ["pending"], "m2": ["bound"]})]
    t = wl.Tally().add(outcomes)
    assert (t.jobs, t.whole, t.pending, t.copied, t.waiting) == (3, 1, 1, 1, 1)
    assert t.short() == "1/1/1/1"
    assert t.merged(wl.Tally(2, 2, 0, 0, 0)).short() == "3/1/1/1"


def test_overcommitted_counts_members_with_a_pending_pod():
    assert wl.overcommitted({"a": ["bound"], "b": ["bound", "pending"], "c": ["pending"], "d": []}) == 2


def test_the_closing_line_has_the_issues_wording():
    line = wl.karmada_line("v1.18.2", wl.Tally(42, 12, 0, 0, 30), wl.Tally(42, 10, 6, 1, 25), (0, 1), 2)
    assert line == ("karmada: 42 jobs through karmada-scheduler v1.18.2: ours 12 whole in one member, 0 with Pending "
                    "pods, 0 copied, 30 waiting; Karmada's estimator 10/6/1/25; burst over-committed members 0/1; "
                    "failover moved 2 whole; client agrees 0/0")


def test_the_one_member_policy_is_the_seed_documents():
    policy = wl.propagation_policy("train", "ml-team", priority_class="e2e-high", match_labels={"priority": "high"})
    spec = policy["spec"]
    assert spec["placement"]["spreadConstraints"] == [{"spreadByField": "cluster", "minGroups": 1, "maxGroups": 1}]
    assert spec["placement"]["replicaScheduling"] == {"replicaSchedulingType": "Divided",
                                                      "replicaDivisionPreference": "Aggregated"}
    assert spec["schedulePriority"] == {"priorityClassSource": "KubePriorityClass", "priorityClassName": "e2e-high"}
    assert spec["resourceSelectors"] == [{"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
                                          "labelSelector": {"matchLabels": {"priority": "high"}}}]
    assert "spreadConstraints" not in wl.propagation_policy("t", "n", one_member=False)["spec"]["placement"]


def test_the_fleet_hides_cpu_behind_a_native_sidecar_on_member_b():
    members = {m.name: m for m in wl.fleet()}
    assert list(members) == ["member-a", "member-b", "member-c"]
    (pod,) = members["member-b"].pods
    assert pod["spec"]["nodeName"] == "b-big"
    assert pod["spec"]["initContainers"][0]["restartPolicy"] == "Always"
    big = next(n for n in members["member-b"].nodes if n.name == "b-big")
    # 24 CPUs, the pod holds 4.1 + 19 = 23.1 (0.9 free: no 1-CPU worker fits); max(4.1, 19) = 19 leaves 5
    assert (big.cpu, big.gpu) == ("24", 16)


def test_a_node_is_ready_with_its_gpus_and_the_control_plane_is_tainted():
    node, status = wl.node_object(wl.NodeSpec("b-cp", "12", "64Gi", 0, control_plane=True))
    assert node["spec"]["taints"] == [{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]
    assert "nvidia.com/gpu" not in status["allocatable"]
    _, status = wl.node_object(wl.NodeSpec("c-1", "12", "64Gi", 8))
    assert status["allocatable"] == {"cpu": "12", "memory": "64Gi", "pods": "110", "nvidia.com/gpu": "8"}
    assert status["conditions"][0]["type"] == "Ready" and status["conditions"][0]["status"] == "True"


def test_gate_flags_are_sorted_and_lower_case():
    assert karmadacp.gate_flag({"b": True, "a": False}) == "--feature-gates=a=false,b=true"


def test_the_crd_serves_pytorchjobs_with_a_status_subresource():
    crd = wl.pytorchjob_crd()
    assert crd["metadata"]["name"] == "pytorchjobs.kubeflow.org"
    (version,) = crd["spec"]["versions"]
    assert version["name"] == "v1" and version["subresources"] == {"status": {}}


# --- client agrees A/B: karmada-place beside karmada-scheduler in the burst ------------------
# Agreement (e2e/harness/karmadacp_client.py, docs/karmada-local.md): karmada-place is asked
# about a job as soon as a scheduling decision of its binding is seen, through the control plane
# (Clusters, the selecting policy, the estimator Services, the in-flight bindings but its own);
# a job is asked when the decision it was asked about is the one that stands at the end, and
# agrees when karmada-place's targets are its binding's final spec.clusters (both empty when
# Karmada placed it nowhere).

# karmada-scheduler v1.18.2 at --v=4, trimmed to the lines the parser reads (and one it must skip).
SCHEDULER_LOG = """\
=== start karmada-scheduler --v=4
I1205 12:50:28.737972   15927 scheduler.go:423] Start to schedule ResourceBinding(burst/j6-pytorchjob) as placement changed
I1205 12:50:28.746212   15927 util.go:108] Target cluster calculated by estimators (available cluster && maxAvailableReplicas): [{member-a 0} {member-b 3} {member-c 1}]
I1205 12:50:28.746268   15927 scheduler.go:609] ResourceBinding(burst/j6-pytorchjob) scheduled to clusters [{member-b 0}]
I1205 12:50:29.005424   15927 scheduler.go:713] Patch schedule to ResourceBinding(burst/j6-pytorchjob) succeed
I1205 12:50:29.130370   15927 scheduler.go:423] Start to schedule ResourceBinding(burst/j0-pytorchjob) as placement changed
I1205 12:50:29.138244   15927 util.go:108] Target cluster calculated by estimators (available cluster && maxAvailableReplicas): [{member-c 1} {member-a 0} {member-b 2}]
I1205 12:50:29.138880   15927 scheduler.go:609] ResourceBinding(burst/j0-pytorchjob) scheduled to clusters [{member-b 0}]
I1205 12:50:29.228307   15927 scheduler.go:713] Patch schedule to ResourceBinding(burst/j0-pytorchjob) succeed
I1205 12:50:29.348804   15927 scheduler.go:1051] Patch schedule status to ResourceBinding(burst/j0-pytorchjob) succeed
I1205 12:50:29.841645   15927 scheduler.go:423] Start to schedule ResourceBinding(burst/j2-pytorchjob) as placement changed
I1205 12:50:29.859572   15927 util.go:108] Target cluster calculated by estimators (available cluster && maxAvailableReplicas): [{member-a 0} {member-b 0} {member-c 0}]
E1205 12:50:29.859693   15927 scheduler.go:605] Failed scheduling ResourceBinding(burst/j2-pytorchjob): failed to select clusters: no enough resource when selecting 1 clusters
I1205 12:50:31.830394   15927 event_handler.go:515] Released assumption for ResourceBinding(burst/j6-pytorchjob) on cluster(member-b): workload became Healthy
I1205 12:50:32.758701   15927 scheduler.go:423] Start to schedule ResourceBinding(burst/j4-pytorchjob) as placement changed
I1205 12:50:32.759000   15927 util.go:108] Target cluster calculated by estimators (available cluster && maxAvailableReplicas): [{member-a 1} {member-b 1} {member-c 1}]
I1205 12:50:32.759100   15927 scheduler.go:609] ResourceBinding(burst/j4-pytorchjob) scheduled to clusters [{member-a 0}]
=== start karmada-scheduler --v=4
I1205 12:51:00.000000   15999 scheduler.go:423] Start to schedule ResourceBinding(burst/j9-pytorchjob) as placement changed
E1205 12:51:00.010000   15999 scheduler.go:605] Failed scheduling ResourceBinding(burst/j9-pytorchjob): 0/3 clusters are available
"""


def test_the_schedulers_log_gives_each_decision_with_the_assumptions_it_held():
    # LogReader: a decision is complete at its "scheduled to clusters" or "Failed scheduling" line.
    got = [(d.binding.split("/")[1], d.targets, d.sets, sorted(d.in_flight), d.error[:25])
           for d in kc.decisions(SCHEDULER_LOG, year=2026)]
    assert got == [
        ("j6-pytorchjob", ("member-b",), {"member-a": 0, "member-b": 3, "member-c": 1}, [], ""),
        ("j0-pytorchjob", ("member-b",), {"member-c": 1, "member-a": 0, "member-b": 2},
         [("burst/j6-pytorchjob", "member-b")], ""),
        # A failure holds nothing; a status patch is not a schedule patch.
        ("j2-pytorchjob", None, {"member-a": 0, "member-b": 0, "member-c": 0},
         [("burst/j0-pytorchjob", "member-b"), ("burst/j6-pytorchjob", "member-b")], "failed to select clusters"),
        # j6 turned Healthy on member-b: released.
        ("j4-pytorchjob", ("member-a",), {"member-a": 1, "member-b": 1, "member-c": 1},
         [("burst/j0-pytorchjob", "member-b")], ""),
        # A restarted scheduler has forgotten every assumption.
        ("j9-pytorchjob", None, {}, [], "0/3 clusters are availabl"),  # the first 25 characters
    ]
    assert kc.decisions(SCHEDULER_LOG, year=2026)[0].at == datetime(2026, 12, 5, 12, 50, 28, 737972)


KARMADA_AT = datetime(2026, 12, 5, 12, 50, 29, 130370)  # j0's decision in SCHEDULER_LOG


def _ask(job, decided, client, in_flight=(), sets=None, error="", held=(), karmada_sets=None, estimates=None):
    seen = KARMADA_AT.timestamp() + 0.1
    return kc.Ask(job, tuple(decided), seen, seen + 0.3, None if client is None else tuple(client),
                  frozenset(in_flight), sets or {}, error, karmada_sets or {}, frozenset(held), estimates or {},
                  KARMADA_AT)


HELD = {("burst/j6-pytorchjob", "member-b")}
SETS = {"member-a": 0, "member-b": 2, "member-c": 1}
# member-b's estimator: 2 sets for Karmada at its decision, 0 for karmada-place a moment later.
ANSWERS = {"member-b": [(datetime(2026, 12, 5, 12, 50, 29, 135000), "burst/j0", 2),
                        (datetime(2026, 12, 5, 12, 50, 29, 480000), "burst/j0", 0)]}

AGREEMENT_CASES = [
    ("the same member agrees", {"j0": ("member-b",)},
     {"j0": [_ask("j0", ["member-b"], ["member-b"], HELD, SETS, held=HELD, karmada_sets=SETS)]}, 1, 1, 0, ""),
    ("placed nowhere by both agrees", {"j2": ()}, {"j2": [_ask("j2", [], [])]}, 1, 1, 0, ""),
    ("a job never seen decided is not asked", {"j6": ("member-b",)}, {}, 0, 0, 0, "not asked"),
    ("only the ask about the final decision counts (a failure, then placed)",
     {"j6": ("member-b",)}, {"j6": [_ask("j6", [], ["member-c"]), _ask("j6", ["member-b"], ["member-b"])]}, 1, 1, 0,
     ""),
    ("a member whose estimator answered differently explains a disagreement, with both answers",
     {"j0": ("member-b",)},
     {"j0": [_ask("j0", ["member-b"], ["member-c"], HELD, {**SETS, "member-b": 0}, held=HELD, karmada_sets=SETS,
                  estimates={"member-b": (10, 0)})]},
     0, 1, 1, "member-b 2 -> 0 (karmada-place: general 10, accurate 0; its estimator answered Karmada 2, "
              "karmada-place 0)"),
    ("other in-flight workloads than Karmada held explain a disagreement",
     {"j0": ("member-b",)}, {"j0": [_ask("j0", ["member-b"], ["member-c"], (), SETS, held=HELD, karmada_sets=SETS)]},
     0, 1, 1, "in flight: Karmada held j6@member-b, karmada-place deducted none"),
    ("the same inputs and another answer is unexplained",
     {"j0": ("member-b",)},
     {"j0": [_ask("j0", ["member-b"], ["member-c"], HELD, SETS, held=HELD, karmada_sets=SETS)]}, 0, 1, 0,
     "UNEXPLAINED"),
    ("karmada-place failing is a disagreement that says why",
     {"j0": ("member-b",)}, {"j0": [_ask("j0", ["member-b"], None, error="exit 4: cannot reach")]}, 0, 1, 0,
     "failed (exit 4: cannot reach)"),
]


@pytest.mark.parametrize("finals,asks,agree,asked,explained,line", [c[1:] for c in AGREEMENT_CASES],
                         ids=[c[0] for c in AGREEMENT_CASES])
def test_client_agreement(finals, asks, agree, asked, explained, line):
    verdict = kc.agreement(finals, asks, "burst", ANSWERS)
    assert (verdict.agree, verdict.asked, verdict.explained) == (agree, asked, explained)
    assert verdict.short() == f"{agree}/{asked}"
    assert (line in " | ".join(verdict.lines)) if line else verdict.lines == []


def test_estimator_answers_are_read_from_both_estimators_logs():
    ours = ("I1205 13:11:08.435684    3609 servicer.py:248] MaxAvailableComponentSets object='kind=PyTorchJob, "
            "name=burst/job-04-small-high' sets=1 packing=best bound=1 (proven optimal) [NodeResourceEstimator=1]")
    theirs = ("I1205 12:50:23.474016   15691 server.go:250] Finish calculating cluster available component sets of "
              "resource(kind=PyTorchJob, name=burst/job-06-small-high), max component sets: 3, time elapsed: 172µs")
    assert kc.estimator_answers(f"{ours}\nunrelated line\n{theirs}\n", year=2026) == [
        (datetime(2026, 12, 5, 13, 11, 8, 435684), "burst/job-04-small-high", 1),
        (datetime(2026, 12, 5, 12, 50, 23, 474016), "burst/job-06-small-high", 3)]


def test_the_in_flight_file_holds_what_karmada_held_on_the_members_it_held_it():
    objects = {"burst/j6-pytorchjob": {"metadata": {"name": "j6-pytorchjob", "namespace": "burst"},
                                       "spec": {"components": [{"name": "master", "replicas": 1}],
                                                "clusters": [{"name": "member-b"}, {"name": "member-c"}]}}}
    held = kc.held_bindings(objects, frozenset({("burst/j6-pytorchjob", "member-b"), ("burst/gone", "member-a")}))
    assert [(b["kind"], b["metadata"]["name"], b["spec"]["clusters"]) for b in held["items"]] == [
        ("ResourceBinding", "j6-pytorchjob", [{"name": "member-b"}])]
    assert objects["burst/j6-pytorchjob"]["spec"]["clusters"] == [{"name": "member-b"}, {"name": "member-c"}]
    assert kc.held_bindings(objects, frozenset()) == {"apiVersion": "v1", "kind": "List", "items": []}


def test_karmada_place_is_asked_as_a_user_asks_it(tmp_path):
    argv = kc.client_argv(tmp_path / "j.json", tmp_path / "kc", {"B": True, "A": False}, tmp_path / "ca",
                          tmp_path / "c", tmp_path / "k")
    assert argv[argv.index("--feature-gates") + 1] == "A=false,B=true"
    assert "--karmada-compatible" in argv and argv[argv.index("--karmada-kubeconfig") + 1] == str(tmp_path / "kc")
    answer = kc.read_answer(0, {"targets": [{"name": "member-c"}], "karmada": {"sets": {"member-c": 2}},
                                "controlPlane": {"inFlight": {"member-b": [{"binding": "burst/j0-pytorchjob"}]}}},
                            "", kc.Ask("j1", ("member-c",), 1.0))
    assert answer.client == ("member-c",) and answer.sets == {"member-c": 2}
    assert answer.in_flight == {("burst/j0-pytorchjob", "member-b")}
