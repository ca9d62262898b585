"""Loading kubectl-style files into a ClusterCache; every bad case names file and object."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest
import yaml

from estimator.cluster.files import load_object_files
from estimator.core.errors import StateLoadError
from estimator.core.model import WorkloadRef
from estimator.core.workloads import parse_time
from tests.support.builders import GPU, deployment, node, pod, quota, replicaset

DEMO = Path(__file__).resolve().parents[2] / "deploy" / "demo"
NODE = node("n1").cpu("4").memory("8Gi").gpu(2).build()
POD = pod("ns", "p").on("n1").requests(cpu="1", gpu=1).build()


def v1_list(*items):
    return {"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": list(items)}


def write(tmp_path, text, name="cluster.yaml"):
    path = tmp_path / name
    path.write_text(text)
    return path


def available(cache):
    snapshot = cache.snapshot()
    return {
        name: {r: int(v) for r, v in zip(snapshot.resource_names, snapshot.available[i]) if v and r in ("pods", "cpu", GPU)}
        for i, name in enumerate(snapshot.node_names)
    }


EXPECTED = {"n1": {"pods": 109, "cpu": 3000, GPU: 1}}

FORMATS = [
    ("a v1 List in YAML", lambda: yaml.safe_dump(v1_list(NODE, POD))),
    ("a v1 List in JSON", lambda: json.dumps(v1_list(NODE, POD), indent=2)),
    ("multi-document YAML", lambda: yaml.safe_dump_all([NODE, None, POD])),
    ("a List per document", lambda: yaml.safe_dump_all([v1_list(NODE), v1_list(POD)])),
    ("typed API lists whose items have no kind", lambda: yaml.safe_dump_all([
        {"kind": "NodeList", "items": [{k: v for k, v in NODE.items() if k != "kind"}]},
        {"kind": "PodList", "items": [{k: v for k, v in POD.items() if k != "kind"}]},
    ])),
    ("a bare JSON array of objects", lambda: json.dumps([NODE, POD])),
]


@pytest.mark.parametrize("render", [c[1] for c in FORMATS], ids=[c[0] for c in FORMATS])
def test_formats_load_the_same_cluster(tmp_path, render):
    assert available(load_object_files([write(tmp_path, render())])) == EXPECTED


def test_single_objects_in_several_files_add_up(tmp_path):
    paths = [write(tmp_path, yaml.safe_dump(NODE), "node.yaml"), write(tmp_path, json.dumps(POD), "pod.json")]
    assert available(load_object_files(paths)) == EXPECTED


def test_quotas_deployments_and_replicasets_are_fed_too(tmp_path):
    dep = deployment("ns", "web").build()
    objects = [NODE, quota("ns", "q").hard("pods", 5).build(), dep, replicaset("ns", "web-1").owned_by(dep).build()]
    cache = load_object_files([write(tmp_path, yaml.safe_dump(v1_list(*objects)))])
    stats = cache.stats()
    assert (stats["quotas"], stats["deployments"], stats["replicasets"]) == (1, 1, 1)


def test_other_kinds_are_reported_in_one_warning(tmp_path, caplog):
    others = [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "b"}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}},
    ]
    path = write(tmp_path, yaml.safe_dump(v1_list(NODE, *others)))
    with caplog.at_level(logging.WARNING, logger="estimator.cluster.files"):
        load_object_files([path])
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [f"ignored 3 objects of other kinds (ConfigMap: 2, Service: 1) in {path}"]


BAD_POD = pod("ns", "web-0").on("n1").container("app", requests={"cpu": "two"}).build()
NAMELESS_NODE = {"apiVersion": "v1", "kind": "Node", "metadata": {"labels": {}}, "status": {}}
BAD_NODE = node("n2").memory("8Gx").build()

MALFORMED = [
    (
        "a bad quantity in a container's requests names the pod and container",
        lambda: yaml.safe_dump(v1_list(NODE, BAD_POD)),
        r"cluster.yaml: object #1 \(Pod ns/web-0\): container 'app': requests: cpu: 'two' is not a quantity",
    ),
    (
        "a node without a name says so",
        lambda: yaml.safe_dump(v1_list(NODE, NAMELESS_NODE)),
        r"cluster.yaml: object #1 \(Node <no name>\): metadata.name is missing",
    ),
    (
        "a bad allocatable names the node and resource",
        lambda: yaml.safe_dump_all([NODE, BAD_NODE]),
        r"object #1 \(Node n2\): status.allocatable: memory: '8Gx' is not a quantity",
    ),
    (
        "a YAML syntax error gives the line",
        lambda: "apiVersion: v1\nkind: List\nitems:\n- kind: Node\n  metadata: {name: [oops\n",
        r"cluster.yaml: invalid YAML at line \d+, column \d+",
    ),
    ("a JSON syntax error gives the line", lambda: '{\n  "kind": "List",\n  "items": [,]\n}', r"invalid JSON at line 3"),
    ("an object without a kind says so", lambda: yaml.safe_dump_all([NODE, {"metadata": {"name": "x"}}]), r"object #1 \(<no kind> x\): has no kind"),
    ("a scalar document is not an object", lambda: "just a string\n", r"object #0: expected a Kubernetes object, got str"),
    ("list items that are not a list are refused", lambda: yaml.safe_dump({"kind": "List", "items": {"a": 1}}), r"List: items is not a list"),
    ("an empty file is refused", lambda: "", r"cluster.yaml: no Kubernetes objects in the file \(it is empty\)"),
    ("a file of empty documents is refused", lambda: "---\n---\n", r"no Kubernetes objects"),
    ("an empty List is refused", lambda: yaml.safe_dump(v1_list()), r"no Kubernetes objects"),
    (
        "a malformed selector names the deployment",
        lambda: yaml.safe_dump(v1_list({**deployment("ns", "web").build(), "spec": {"selector": {"matchExpressions": [{"key": "a", "operator": "Near"}]}}})),
        r"object #0 \(Deployment ns/web\): selector: 'Near' is not a valid label selector operator",
    ),
    (
        "a quota with a bad amount names the quota",
        lambda: yaml.safe_dump(v1_list(quota("ns", "q").hard("requests.cpu", "ten").build())),
        r"object #0 \(ResourceQuota ns/q\): status.hard: requests.cpu",
    ),
    (
        "a spec of the wrong shape is reported, not a crash",
        lambda: yaml.safe_dump(v1_list({**POD, "spec": ["x"]})),
        r"object #0 \(Pod ns/p\)",
    ),
]


@pytest.mark.parametrize("render, message", [c[1:] for c in MALFORMED], ids=[c[0] for c in MALFORMED])
def test_malformed_files_raise_snapshot_error_naming_file_and_object(tmp_path, render, message):
    path = write(tmp_path, render())
    with pytest.raises(StateLoadError, match=message) as info:
        load_object_files([path])
    assert str(path) in str(info.value)


def test_a_missing_file_is_an_error(tmp_path):
    with pytest.raises(StateLoadError, match=r"missing.yaml: no such file"):
        load_object_files([tmp_path / "missing.yaml"])


def test_no_files_is_an_error():
    with pytest.raises(StateLoadError, match="no object files"):
        load_object_files([])


def test_a_bad_file_after_a_good_one_keeps_nothing(tmp_path):
    good = write(tmp_path, yaml.safe_dump(v1_list(NODE, POD)), "good.yaml")
    bad = write(tmp_path, yaml.safe_dump(v1_list(BAD_POD)), "bad.yaml")
    with pytest.raises(StateLoadError, match="bad.yaml"):
        load_object_files([good, bad])
    assert available(load_object_files([good])) == EXPECTED  # the good file alone is fine


# --- the demo members (scenario.md) -----------------------------------------------------


def _gpus(snapshot):
    column = snapshot.column(GPU)
    return [int(v) for v in snapshot.allocatable[:, column]] if column is not None else [0] * snapshot.num_nodes


DEMO_CASES = [
    ("member-a has one node with 2 GPUs", "member-a", ["member-a-gpu-1"], [2]),
    (
        "member-b lists its control plane and three 2-GPU workers round-robin over zones",
        "member-b",
        ["member-b-control-plane", "member-b-gpu-2", "member-b-gpu-3", "member-b-gpu-1"],
        [0, 2, 2, 2],
    ),
    ("member-c has one node with 8 GPUs", "member-c", ["member-c-gpu-1"], [8]),
]


@pytest.mark.parametrize("member, names, gpus", [c[1:] for c in DEMO_CASES], ids=[c[0] for c in DEMO_CASES])
def test_demo_members_match_the_scenario(member, names, gpus):
    snapshot = load_object_files([DEMO / f"{member}.yaml"]).snapshot()
    assert list(snapshot.node_names) == names
    assert _gpus(snapshot) == gpus
    assert (snapshot.allocatable[:, snapshot.column("cpu")] == 12_000).all()
    used = snapshot.allocatable - snapshot.available
    assert used[:, snapshot.column("cpu")].sum() > 0 and used[:, snapshot.column("memory")].sum() > 0
    assert snapshot.available[:, snapshot.column(GPU)].tolist() == gpus  # no pod holds a GPU


def test_demo_member_b_taints_its_control_plane():
    snapshot = load_object_files([DEMO / "member-b.yaml"]).snapshot()
    control_plane = snapshot.classes[snapshot.node_class[0]]
    assert [(t.key, t.effect) for t in control_plane.taints] == [("node-role.kubernetes.io/control-plane", "NoSchedule")]
    assert "node-role.kubernetes.io/control-plane" in control_plane.label_dict()


def test_demo_member_a_has_two_stuck_frontend_replicas():
    snapshot = load_object_files([DEMO / "member-a.yaml"]).snapshot()
    ref = WorkloadRef("apps/v1", "Deployment", "web", "frontend", 60.0)
    assert snapshot.workloads.count_unschedulable(ref, parse_time("2025-03-03T09:32:00Z")) == 2
    assert snapshot.workloads.count_unschedulable(ref, parse_time("2025-03-03T09:30:30Z")) == 0  # not yet 60 s
