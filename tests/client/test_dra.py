"""GPUs served through DRA (Kubernetes 1.36, DeviceClass extendedResourceName): the client shows
them beside Karmada's node-allocatable view and never adds them to Karmada's numbers.

deploy/demo/member-d.yaml, worked out by hand: nodes member-d-gpu-1 and member-d-gpu-2 (12 CPU
each) advertise no nvidia.com/gpu; DeviceClass gpu.example.com (extendedResourceName
nvidia.com/gpu, selector `device.driver == "gpu.example.com"`) selects the 4 devices each node's
ResourceSlice publishes; claim notebook-gpu holds gpu-0 of node 1 and infer-0's claim gpu-1 of
node 2. So 8 devices on 2 nodes, 6 free, 3 on each. infer-0 asks nvidia.com/gpu: 1, which
Karmada's status controller adds to allocated: allocatable 0, allocated 1.
train-small (2 workers x 1 GPU): 6 free / 2 = 3 sets; train-big (2 workers x 3 GPUs): one
worker per node, 1 set. Karmada's general estimator: 0 for both.
"""

from __future__ import annotations

import json

import pytest
import yaml

from estimator.api import count_dra_devices, read_objects
from scheduler_client import doctor, karmada
from scheduler_client.accurate import Answer
from scheduler_client.dra import ANNOTATION, served_resources
from scheduler_client.karmada import parse_gates
from scheduler_client.karmada import AccurateReply, KarmadaInput
from scheduler_client.memberview import build_members
from scheduler_client.placement import Options, evaluate
from scheduler_client.sources import InputError, load_clusters, load_job, load_job_manifest, load_member_snapshot, \
    load_policy
from tests.client.test_cli import AGGREGATED, JOB_BIG, JOB_SMALL, SPREAD, policy_file, run, write
from tests.support.servers import DEMO

GPU = "nvidia.com/gpu"
IMPLICIT = "deviceclass.resource.kubernetes.io/gpu.example.com"
MEMBER_D = str(DEMO / "member-d.yaml")
DRA_CLUSTERS = str(DEMO / "clusters-dra.yaml")
CLUSTERS = str(DEMO / "clusters.yaml")
GATE = "MultiplePodTemplatesScheduling=true"


# --- counting: served_resources over count_dra_devices ---------------------------------------


def k8s_node(name, gpus=None):
    allocatable = {"cpu": "8", "memory": "32Gi", "pods": "110", **({GPU: str(gpus)} if gpus is not None else {})}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "status": {"allocatable": allocatable}}


def device_class(name="gpu.example.com", extended=GPU, driver="gpu.example.com"):
    spec = {"selectors": [{"cel": {"expression": f'device.driver == "{driver}"'}}]}
    if extended:
        spec["extendedResourceName"] = extended
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name}, "spec": spec}


def resource_slice(node, devices, driver="gpu.example.com", count=1, name=None):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": name or f"{node}-s"},
            "spec": {"driver": driver, "nodeName": node, "pool": {"name": node, "generation": 1,
                                                                  "resourceSliceCount": count},
                     "devices": [{"name": f"gpu-{i}"} for i in range(devices)]}}


def claim(name, node, device, driver="gpu.example.com"):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": "ml-team"},
            "status": {"allocation": {"devices": {"results": [
                {"request": "gpu", "driver": driver, "pool": node, "device": device}]}}}}


# name -> (nodes, devices, free, most free on one node), worked out from the objects.
COUNT_CASES = [
    ("four published GPUs, one held by a claim: four devices, three free",
     [k8s_node("n1"), device_class(), resource_slice("n1", 4), claim("c1", "n1", "gpu-2")],
     {GPU: (1, 4, 3, 3), IMPLICIT: (1, 4, 3, 3)}),
    ("two nodes add up; the most free on one node is the larger",
     [k8s_node("n1"), k8s_node("n2"), device_class(), resource_slice("n1", 4), resource_slice("n2", 2),
      claim("c1", "n1", "gpu-0")],
     {GPU: (2, 6, 5, 3), IMPLICIT: (2, 6, 5, 3)}),
    ("a node advertising nvidia.com/gpu is its device plugin's: its devices count only for the class's own name",
     [k8s_node("n1", gpus=2), device_class(), resource_slice("n1", 4)], {IMPLICIT: (1, 4, 4, 4)}),
    ("a node advertising nvidia.com/gpu: 0 is served through DRA",
     [k8s_node("n1", gpus=0), device_class(), resource_slice("n1", 2)], {GPU: (1, 2, 2, 2), IMPLICIT: (1, 2, 2, 2)}),
    ("a slice of a node the member does not have counts nowhere",
     [k8s_node("n1"), device_class(), resource_slice("elsewhere", 4)], {}),
    ("devices of another driver are not the class's",
     [k8s_node("n1"), device_class(), resource_slice("n1", 4, driver="other.example.com")], {}),
    ("a class without extendedResourceName serves only its own name",
     [k8s_node("n1"), device_class(extended=None), resource_slice("n1", 3)], {IMPLICIT: (1, 3, 3, 3)}),
    ("a pool missing one of its two slices counts nothing",
     [k8s_node("n1"), device_class(), resource_slice("n1", 4, count=2)], {}),
    ("without a DeviceClass published devices serve no name",
     [k8s_node("n1"), resource_slice("n1", 4)], {}),
]


@pytest.mark.parametrize("objects,expected", [c[1:] for c in COUNT_CASES], ids=[c[0] for c in COUNT_CASES])
def test_devices_served_through_dra_per_resource_name(objects, expected):
    nodes = [o for o in objects if o["kind"] == "Node"]
    found = served_resources(nodes, count_dra_devices(objects))
    assert {r.name: (r.nodes, r.devices, r.free, r.largest_free) for r in found} == expected
    assert all(r.device_class == "gpu.example.com" for r in found)


def test_the_api_counts_per_node_as_the_estimator_does():
    counts = count_dra_devices(read_objects(MEMBER_D))
    assert counts.served == {GPU: "gpu.example.com", IMPLICIT: "gpu.example.com"}
    assert counts.nodes == {"member-d-gpu-1": {GPU: (4, 1), IMPLICIT: (4, 1)},
                            "member-d-gpu-2": {GPU: (4, 1), IMPLICIT: (4, 1)}}
    assert counts.failed_classes == frozenset()


def test_a_malformed_resource_slice_is_bad_input_naming_the_file(tmp_path):
    bad = resource_slice("n1", 1)
    bad["spec"]["pool"]["resourceSliceCount"] = "two"
    path = write(tmp_path, "member.yaml", {"apiVersion": "v1", "kind": "List",
                                           "items": [k8s_node("n1"), device_class(), bad]})
    with pytest.raises(InputError) as error:
        load_member_snapshot("m", [path])
    assert str(error.value).startswith(f"{path}: member m:") and "resourceSliceCount" in str(error.value)


# --- the demo's member-d: summarize, placement, Karmada's numbers untouched --------------------


def test_summarize_shows_the_dra_devices_beside_an_unchanged_resource_summary(capsys):
    code, out, _ = run(capsys, "summarize", "--clusters", DRA_CLUSTERS, "--member", f"member-d={MEMBER_D}")
    assert code == 0
    assert "#   nvidia.com/gpu: 8 device(s) on 2 nodes, 6 free, at most 3 on one node, DeviceClass gpu.example.com" \
        in out.splitlines()
    (cluster,) = yaml.safe_load(out)["items"]
    assert json.loads(cluster["metadata"]["annotations"][ANNOTATION]) == {
        GPU: {"devices": 8, "free": 6, "nodes": 2, "deviceClass": "gpu.example.com"},
        IMPLICIT: {"devices": 8, "free": 6, "nodes": 2, "deviceClass": "gpu.example.com"}}
    summary = cluster["status"]["resourceSummary"]
    assert GPU not in summary["allocatable"] and summary["allocated"][GPU] == "1"  # as Karmada writes it


def test_summarize_json_carries_the_annotation_and_members_without_dra_none(capsys):
    code, out, _ = run(capsys, "summarize", "--clusters", CLUSTERS, "--clusters", DRA_CLUSTERS,
                       "--member", f"member-c={DEMO / 'member-c.yaml'}", "--member", f"member-d={MEMBER_D}",
                       "-o", "json")
    items = {c["metadata"]["name"]: c for c in json.loads(out)["items"]}
    assert code == 0 and set(items) == {"member-c", "member-d"}
    assert "annotations" not in items["member-c"]["metadata"]
    assert json.loads(items["member-d"]["metadata"]["annotations"][ANNOTATION])[GPU]["free"] == 6


def members(gates=GATE, with_c=False):
    values, _ = parse_gates(gates)
    snapshots = {"member-d": load_member_snapshot("member-d", [MEMBER_D])}
    if with_c:
        snapshots["member-c"] = load_member_snapshot("member-c", [DEMO / "member-c.yaml"])
    clusters = load_clusters([CLUSTERS, DRA_CLUSTERS]) if with_c else load_clusters([DRA_CLUSTERS])
    return build_members(clusters, snapshots, values["CustomizedClusterResourceModeling"])


def fixed_answers(table):
    return lambda names, query, key: {n: Answer(n, table[n]) for n in names}


PLACE_CASES = [
    # job, accurate answer given, Karmada-compatible: general stays Karmada's 0, the minimum 0.
    ("train-small: ours counts 3 sets, the general estimator's 0 is the minimum", JOB_SMALL, 3, False),
    ("train-big: ours counts 1 set, the general estimator's 0 is the minimum", JOB_BIG, 1, False),
    ("--karmada-compatible: the same 0", JOB_SMALL, 3, True),
]


@pytest.mark.parametrize("job,accurate,compatible", [c[1:] for c in PLACE_CASES], ids=[c[0] for c in PLACE_CASES])
def test_the_general_estimator_keeps_karmadas_zero_and_says_why(job, accurate, compatible):
    options = Options(karmada_compatible=compatible, gates=parse_gates(GATE)[0],
                      accurate_members=frozenset({"member-d"}))
    result = evaluate(load_job(job), members(), load_policy(str(DEMO / "policies" / "one-member.yaml")).placement,
                      options, fixed_answers({"member-d": accurate}))
    (row,) = result.members
    assert (row.estimates["general"], row.estimates["accurate"], row.sets, row.verdict) == (0, accurate, 0, "rejected")
    assert row.reasons[0].startswith("0 sets according to the general estimator: cluster totals: no free "
                                     "nvidia.com/gpu (allocatable 0, allocated 1")
    assert ("nvidia.com/gpu is served through DRA here: 8 device(s) on 2 nodes, 6 free, at most 3 on one node, "
            "DeviceClass gpu.example.com; no node advertises it") in row.reasons[1]
    assert row.reasons[1].endswith(f"the accurate estimator counts {accurate} set(s)")


def cpu_only_job(tmp_path):
    """train-small with the workers' GPU request taken out."""
    manifest = yaml.safe_load(open(JOB_SMALL))
    resources = manifest["spec"]["pytorchReplicaSpecs"]["Worker"]["template"]["spec"]["containers"][0]["resources"]
    del resources["requests"][GPU], resources["limits"][GPU]
    return write(tmp_path, "cpu.yaml", manifest)


def test_a_job_asking_no_gpu_gets_no_dra_reason(tmp_path):
    result = evaluate(load_job(cpu_only_job(tmp_path)), members(),
                      load_policy(str(DEMO / "policies" / "one-member.yaml")).placement, Options(gates=parse_gates(GATE)[0]))
    (row,) = result.members
    assert row.sets >= 1 and not any("DRA" in reason for reason in row.reasons)


# --- doctor -----------------------------------------------------------------------------------


def diagnose(tmp_path, placement=None, job=JOB_SMALL, gates=GATE, accurate=(), with_c=True):
    policy = policy_file(tmp_path, placement) if placement is not None else str(DEMO / "policies" / "one-member.yaml")
    values, explicit = parse_gates(gates)
    inp = doctor.DoctorInput(load_job(job), load_job_manifest(job), load_policy(policy), values, explicit,
                             members(gates, with_c), frozenset(accurate))
    return [f for f in doctor.diagnose(inp) if f.code == "dra-invisible"]


CHECKED = {"clusterAffinity": {"labelSelector": {"matchExpressions": [{"key": "gpu", "operator": "Exists"}]}},
           "spreadConstraints": SPREAD, "replicaScheduling": AGGREGATED}
DOCTOR_CASES = [
    ("a GPU job where Karmada counts sets: an error naming member, resource and devices, fix: deploy ours",
     dict(), "error",
     "member-d serves nvidia.com/gpu only through DRA (8 device(s) on 2 nodes, 6 free, at most 3 on one node, "
     "DeviceClass gpu.example.com)",
     "deploy this project's estimator for member-d, which counts DRA-served devices (Karmada's general estimator "
     "and Karmada's own scheduler-estimator cannot), as docs/install.md (\"Our manifests\") says "
     "(karmada-estimator manifests --cluster-name member-d --part member, then --part host), and run "
     "karmada-scheduler with --enable-scheduler-estimator=true"),
    ("the refusal is for every job asking the resource, however many devices are free", dict(job=JOB_BIG), "error",
     "it refuses member-d for every job asking nvidia.com/gpu although 6 device(s) are free",
     "pin it there (clusterAffinity clusterNames: [member-d] with replicaScheduling Duplicated"),
    ("with an accurate estimator already, the fix asks that it be this project's", dict(accurate=("member-d",)),
     "error", "and so does Karmada's own karmada-scheduler-estimator",
     "make sure member-d's scheduler-estimator is this project's"),
    ("a policy with which Karmada takes a member without counting: a warning, no pinning advice",
     dict(placement={**CHECKED, "replicaScheduling": {"replicaSchedulingType": "Duplicated"}}), "warning",
     "this policy does not make Karmada count sets before it takes a member", "--enable-scheduler-estimator=true"),
    ("the gate off: Karmada counts nothing either, a warning", dict(gates=""), "warning",
     "this policy does not make Karmada count sets", "--enable-scheduler-estimator=true"),
]


@pytest.mark.parametrize("case,severity,words,fix", [c[1:] for c in DOCTOR_CASES], ids=[c[0] for c in DOCTOR_CASES])
def test_doctor_names_the_member_karmada_refuses_for_dra_served_gpus(tmp_path, case, severity, words, fix):
    (finding,) = diagnose(tmp_path, **case)
    assert finding.severity == severity and words in finding.message and fix in finding.fix
    if severity == "warning":
        assert "pin it there" not in finding.fix


NO_FINDING_CASES = [
    ("a member the policy filters out",
     lambda tmp_path: dict(placement={**CHECKED, "clusterAffinity": {"clusterNames": ["member-c"]}})),
    ("a job asking no GPU", lambda tmp_path: dict(job=cpu_only_job(tmp_path))),
]


@pytest.mark.parametrize("case", [c[1] for c in NO_FINDING_CASES], ids=[c[0] for c in NO_FINDING_CASES])
def test_doctor_says_nothing_about_dra_where_karmada_is_not_blind(tmp_path, case):
    assert diagnose(tmp_path, **case(tmp_path)) == []


def test_doctor_names_only_the_dra_member_beside_one_advertising_its_gpus(tmp_path):
    (finding,) = diagnose(tmp_path, with_c=True)
    assert "member-c" not in finding.message


# --- the pinning workaround the doctor gives, in Karmada's own model --------------------------


def test_a_pinned_duplicated_policy_lands_on_the_dra_member_and_karmada_path_b_says_why(tmp_path):
    policy = load_policy(policy_file(tmp_path, {"clusterAffinity": {"clusterNames": ["member-d"]},
                                                "spreadConstraints": SPREAD,
                                                "replicaScheduling": {"replicaSchedulingType": "Duplicated"}}))
    outcome = karmada.outcome(KarmadaInput(load_job(JOB_BIG), members(with_c=True), policy.placement,
                                           parse_gates(GATE)[0], accurate_enabled=True,
                                           accurate={"member-d": AccurateReply(1)}))
    assert [t.name for t in outcome.targets] == ["member-d"] and outcome.sets["member-d"] == 0
    (note,) = [p for p in outcome.paths if p.path == "b"]
    assert note.text.endswith("member-d; Karmada counts 0 sets there, blind to the nvidia.com/gpu it serves through "
                              "DRA; its accurate estimator counts 1 set(s)")
