"""The local Karmada's workload side and bookkeeping, without Go or an apiserver.

What Karmada does with the jobs is seen only in the phase itself (`python -m e2e.harness.karmadacp`);
here: the pods the training operator's part creates are named, labelled and owned as the Kubeflow
training operator does it, a job's outcome is classified as issue 26 defines W/P/C/Q, and the
closing line has its fixed wording. Expected values are written out by hand.
"""

from __future__ import annotations

import pytest

from e2e.harness import karmadacp, karmadacp_workload as wl


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
