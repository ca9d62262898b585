"""Every wire form Karmada's schedulers have used, answered alike.

tests/support/data/wire-vectors/karmada-*/ hold the same requests encoded by Karmada's own generated
estimator types of each release (e2e/wirevectors): v1.16.0 and v1.17.1 write requirements
only in the original Kubernetes-message fields, v1.18.2 in those and the byte fields, and
the v1.19 form only in the byte fields. Checked here:

- each directory holds what its index.json says, in the form it claims (read with our
  messages alone, no conversion), and both field sets decode to the documented content;
- every form converts to the same model, which for the key requests is written out by hand;
- through a real server over loopback gRPC, every form gets the same answer, and that answer
  is the one worked out by hand for a four-node member (CLUSTER below);
- Go's encoded responses decode to their values and ours match them byte for byte;
- original and byte fields that disagree are refused with INVALID_ARGUMENT naming the field.
"""

from __future__ import annotations

import json

import grpc
import pytest
import yaml

from estimator.core.model import (
    NO_CLAIM,
    Component,
    ComponentSetsQuery,
    NodeClaim,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    ReplicaShape,
    ReplicasQuery,
    Toleration,
    WorkloadRef,
)
from estimator.pb import estimator_pb2 as pb
from estimator.pb import k8s_core_pb2 as core
from estimator.pb import k8s_resource_pb2 as k8s_resource
from estimator.service import convert
from tests.support.servers import WIRE_VECTORS, start_server

FORMS = {  # directory -> (Karmada version that encoded it, requirement fields it writes)
    "karmada-v1.16.0": ("v1.16.0", "old"),
    "karmada-v1.17.1": ("v1.17.1", "old"),
    "karmada-v1.18.2": ("v1.18.2", "old+bytes"),
    "karmada-v1.19-form": ("v1.18.2", "bytes"),
}
MESSAGES = {message.DESCRIPTOR.full_name: message for message in (
    pb.MaxAvailableReplicasRequest, pb.MaxAvailableComponentSetsRequest, pb.UnschedulableReplicasRequest,
    pb.MaxAvailableReplicasResponse, pb.MaxAvailableComponentSetsResponse, pb.UnschedulableReplicasResponse,
)}
METHOD = "/github.com.karmada_io.karmada.pkg.estimator.service.Estimator/"
GI = 2**30
MI = 2**20


def _index(directory: str) -> dict:
    return json.loads((WIRE_VECTORS / directory / "index.json").read_text(encoding="utf-8"))


INDEX = {directory: _index(directory) for directory in FORMS}
REQUEST_NAMES = sorted(v["file"][: -len(".bin")] for v in INDEX["karmada-v1.19-form"]["vectors"]
                       if v["message"].endswith("Request"))
RESPONSE_NAMES = sorted(v["file"][: -len(".bin")] for v in INDEX["karmada-v1.19-form"]["vectors"]
                        if v["message"].endswith("Response"))


def entry(directory: str, name: str) -> dict:
    (found,) = [v for v in INDEX[directory]["vectors"] if v["file"] == f"{name}.bin"]
    return found


def raw(directory: str, name: str) -> bytes:
    return (WIRE_VECTORS / directory / f"{name}.bin").read_bytes()


def parsed(directory: str, name: str):
    return MESSAGES[entry(directory, name)["message"]].FromString(raw(directory, name))


def to_model(message):
    if isinstance(message, pb.MaxAvailableReplicasRequest):
        return convert.replicas_query(message)
    if isinstance(message, pb.MaxAvailableComponentSetsRequest):
        return convert.component_sets_query(message)
    return convert.workload_ref(message)


# --- the directories are what they say ------------------------------------------------------


@pytest.mark.parametrize("directory", FORMS)
def test_directory_holds_exactly_its_index(directory):
    index = INDEX[directory]
    version, fields = FORMS[directory]
    assert index["karmada"] == index["modules"]["github.com/karmada-io/karmada"] == version
    on_disk = sorted(p.name for p in (WIRE_VECTORS / directory).iterdir() if p.name != "index.json")
    assert on_disk == sorted(v["file"] for v in index["vectors"])
    for vector in index["vectors"]:
        assert len(raw(directory, vector["file"][:-4])) == vector["bytes"], vector["file"]
        if vector["message"].endswith("Request") and vector["method"] != "GetUnschedulableReplicas":
            assert vector["fields"] == fields


@pytest.mark.parametrize("name", REQUEST_NAMES + RESPONSE_NAMES)
def test_every_version_encodes_the_same_content(name):
    contents = {directory: entry(directory, name)["content"] for directory in FORMS}
    assert len({json.dumps(c, sort_keys=True) for c in contents.values()}) == 1, contents


def _requirement_messages(message):
    """Every (Component)ReplicaRequirements in a request, assumed workloads included."""
    if isinstance(message, pb.MaxAvailableReplicasRequest):
        found = [message.replicaRequirements] if message.HasField("replicaRequirements") else []
        workloads = message.assumedWorkloads
    elif isinstance(message, pb.MaxAvailableComponentSetsRequest):
        found = [c.replicaRequirements for c in message.components if c.HasField("replicaRequirements")]
        workloads = message.assumedWorkloads
    else:
        return []
    for workload in workloads:
        found += [c.replicaRequirements for c in workload.components if c.HasField("replicaRequirements")]
    return found


def _fields_written(message) -> set[str]:
    written = set()
    for requirements in _requirement_messages(message):
        if requirements.resourceRequest:
            written.add("old")
        if requirements.resourceRequestBytes:
            written.add("bytes")
        claim = requirements.nodeClaim
        if claim.HasField("nodeAffinity") or claim.tolerations:
            written.add("old")
        if claim.nodeAffinityBytes or claim.tolerationsBytes:
            written.add("bytes")
    return written


@pytest.mark.parametrize("directory", FORMS)
@pytest.mark.parametrize("name", REQUEST_NAMES)
def test_each_version_writes_the_fields_it_is_documented_to(directory, name):
    written = _fields_written(parsed(directory, name))
    if name in ("replicas_no_requirements", "unschedulable_deployment"):
        assert written == set()
    else:
        assert written == set(FORMS[directory][1].split("+"))


# --- both field sets decode to the documented content (our messages alone) -------------------


def _meaning(value):
    """Drop what Go's JSON and the byte form leave out without changing the meaning: empty
    values, and a node affinity with no terms (no constraint)."""
    if isinstance(value, dict):
        kept = {k: _meaning(v) for k, v in value.items()}
        if kept.get("nodeAffinity") == {}:
            del kept["nodeAffinity"]
        return {k: v for k, v in kept.items() if v not in (None, "", [], {})}
    if isinstance(value, list):
        return [_meaning(v) for v in value]
    return value


def _k8s(message) -> dict:
    return {field.name: ([_k8s(v) for v in value] if field.message_type and field.is_repeated
                         else _k8s(value) if field.message_type
                         else list(value) if field.is_repeated else value)
            for field, value in message.ListFields()}


def _render(requirements, source: str) -> dict:
    """The requirements in Karmada's JSON shape, read from the original or the byte fields."""
    claim = requirements.nodeClaim
    if source == "old":
        requests = {name: q.string for name, q in requirements.resourceRequest.items()}
        affinity = _k8s(claim.nodeAffinity) if claim.HasField("nodeAffinity") else None
        tolerations = [_k8s(t) for t in claim.tolerations]
    else:
        requests = {name: k8s_resource.Quantity.FromString(b).string
                    for name, b in requirements.resourceRequestBytes.items()}
        affinity = _k8s(core.NodeSelector.FromString(claim.nodeAffinityBytes)) if claim.nodeAffinityBytes else None
        tolerations = [_k8s(core.Toleration.FromString(b)) for b in claim.tolerationsBytes]
    rendered = {"resourceRequest": requests, "priorityClassName": requirements.priorityClassName}
    if isinstance(requirements, pb.ReplicaRequirements):
        rendered["namespace"] = requirements.namespace
    if requirements.HasField("nodeClaim"):
        rendered["nodeClaim"] = {"nodeSelector": dict(claim.nodeSelector), "nodeAffinity": affinity,
                                 "tolerations": tolerations}
    return rendered


def _documented_requirements(content: dict) -> list[dict]:
    if "components" in content:
        return [c["replicaRequirements"] for c in content["components"] if c["replicaRequirements"]]
    return [content["replicaRequirements"]] if content.get("replicaRequirements") else []


@pytest.mark.parametrize("directory", FORMS)
@pytest.mark.parametrize("name", REQUEST_NAMES)
def test_every_written_field_set_decodes_to_the_documented_content(directory, name):
    message = parsed(directory, name)
    documented = [_meaning(r) for r in _documented_requirements(entry(directory, name)["content"])]
    # v1.16/v1.17 embed requirements by value: "none" is an empty message there.
    present = [r for r in _requirement_messages(message) if r.ListFields()]
    for source in FORMS[directory][1].split("+"):
        assert [_meaning(_render(r, source)) for r in present] == documented, source


# --- every form, one model -------------------------------------------------------------------

GPU_TOLERATION = Toleration("nvidia.com/gpu", "Exists", "", "NoSchedule")
HAND_WRITTEN = {
    "sets_gpu_job": ComponentSetsQuery(
        components=(
            Component("master", 1, ReplicaShape(requests=(("cpu", 1000), ("memory", 2 * GI)), namespace="ml-team")),
            Component("worker", 2, ReplicaShape(
                requests=(("cpu", 2000), ("memory", 4 * GI), ("nvidia.com/gpu", 4)),
                claim=NodeClaim(node_selector=(("accelerator", "h100"),), tolerations=(GPU_TOLERATION,)),
                namespace="ml-team",
                priority_class="high-priority",
            )),
        ),
        namespace="ml-team",
    ),
    "replicas_gpu_affinity": ReplicasQuery(shape=ReplicaShape(
        requests=(("cpu", 3000), ("nvidia.com/gpu", 2)),
        claim=NodeClaim(
            affinity_terms=(NodeSelectorTerm(match_expressions=(
                NodeSelectorRequirement("topology.kubernetes.io/zone", "In", ("zone-a", "zone-b")),)),),
            tolerations=(GPU_TOLERATION, Toleration("dedicated", "Equal", "ml", "NoExecute", toleration_seconds=300)),
        ),
        namespace="web",
    )),
    "replicas_quantities": ReplicasQuery(shape=ReplicaShape(
        # The zero GPU request is dropped, as Karmada's estimator does.
        requests=(("cpu", 1500), ("ephemeral-storage", 10**9), ("hugepages-2Mi", 64 * MI), ("memory", 1536 * MI)),
        claim=NO_CLAIM,
        namespace="web",
    )),
    "replicas_empty_claim": ReplicasQuery(shape=ReplicaShape(
        requests=(("cpu", 1000),), claim=NodeClaim(node_selector=(("disk", "ssd"),)), namespace="web")),
    "replicas_no_requirements": ReplicasQuery(shape=None),
    "sets_component_without_requirements": ComponentSetsQuery(
        components=(Component("sidecar", 1, ReplicaShape(namespace="apps")),
                    Component("main", 3, ReplicaShape(requests=(("cpu", 500),), namespace="apps"))),
        namespace="apps",
    ),
    "unschedulable_deployment": WorkloadRef("apps/v1", "Deployment", "web", "frontend", threshold_seconds=60.0),
}


@pytest.mark.parametrize("name", REQUEST_NAMES)
def test_every_form_converts_to_the_same_model(name):
    models = {directory: to_model(parsed(directory, name)) for directory in FORMS}
    newest = models["karmada-v1.19-form"]
    assert models == dict.fromkeys(FORMS, newest)
    if name in HAND_WRITTEN:
        assert newest == HAND_WRITTEN[name]


def test_hand_written_models_cover_the_key_requests():
    assert {"sets_gpu_job", "replicas_gpu_affinity", "replicas_no_requirements"} <= set(HAND_WRITTEN)
    assert set(HAND_WRITTEN) <= set(REQUEST_NAMES)


# --- through the real server --------------------------------------------------------------------


def _node(name, zone, cpu, memory, pods=110, gpu=0, labels=(), tainted=False, **extra):
    allocatable = {"cpu": str(cpu), "memory": memory, "pods": str(pods), **extra}
    if gpu:
        allocatable["nvidia.com/gpu"] = str(gpu)
    node = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name,
                                               "topology.kubernetes.io/zone": zone, **dict(labels)}},
        "spec": {"taints": [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}]} if tainted else {},
        "status": {"allocatable": allocatable},
    }
    return node


# Four empty nodes; the three GPU nodes carry the GPU taint.
CLUSTER = [
    _node("gpu-1", "zone-a", 16, "64Gi", gpu=8, labels={"accelerator": "h100"}, tainted=True),
    _node("gpu-2", "zone-b", 8, "32Gi", gpu=4, labels={"accelerator": "h100"}, tainted=True),
    _node("gpu-3", "zone-c", 32, "128Gi", gpu=8, labels={"accelerator": "a100"}, tainted=True),
    _node("cpu-1", "zone-a", 32, "128Gi", labels={"disk": "ssd"},
          **{"ephemeral-storage": "100G", "hugepages-2Mi": "1Gi"}),
]

# Worked out by hand on CLUSTER.
EXPECTED = {
    # Workers {2 cpu, 4Gi, 4 GPU} only on h100 nodes: gpu-1 fits 2 (8 GPUs), gpu-2 fits 1 (4 GPUs);
    # the master tolerates no taint, so cpu-1 only (room for 32). 3 workers = 1 set of 2.
    "sets_gpu_job": 1,
    # Zones a and b, tolerating the GPU taint: gpu-1 min(16/3, 8/2) = 4, gpu-2 min(8/3, 4/2) = 2,
    # cpu-1 has no GPU; gpu-3 is in zone-c.
    "replicas_gpu_affinity": 6,
    # Untainted cpu-1 only: min(32/1.5 = 21, 128Gi/1536Mi = 85, 100G/1G = 100, 1Gi/64Mi = 16).
    "replicas_quantities": 16,
    # disk=ssd: cpu-1, 32 cpus.
    "replicas_empty_claim": 32,
    # No requirements, so no tolerations either: the pod slots of untainted cpu-1.
    "replicas_no_requirements": 110,
    # No node has both accelerator=h100 and disk=ssd.
    "replicas_affinity_terms": 0,
    # A set is 1 sidecar + 3 x 500m on untainted cpu-1: 32 cpus / 1.5 = 21 sets (84 pods of 110).
    "sets_component_without_requirements": 21,
}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    snapshot = tmp_path_factory.mktemp("member-w") / "member-w.yaml"
    snapshot.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": CLUSTER}), encoding="utf-8")
    started = start_server("member-w", snapshots=[snapshot])
    yield started
    started.stop(0)


@pytest.fixture(scope="module")
def channel(server):
    with grpc.insecure_channel(f"127.0.0.1:{server.port}") as opened:
        yield opened


def call(channel, name: str, body: bytes) -> int:
    """Send raw request bytes as Karmada's client would; return the answer's one field."""
    method = "MaxAvailableReplicas" if name.startswith("replicas") else "MaxAvailableComponentSets"
    reply = channel.unary_unary(METHOD + method)(body)
    if method == "MaxAvailableReplicas":
        return pb.MaxAvailableReplicasResponse.FromString(reply).maxReplicas
    return pb.MaxAvailableComponentSetsResponse.FromString(reply).maxSets


def test_expected_answers_cover_every_estimate_request():
    assert set(EXPECTED) == {n for n in REQUEST_NAMES if n.startswith(("replicas", "sets"))}


@pytest.mark.parametrize("directory", FORMS)
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_every_form_gets_the_hand_worked_answer(channel, directory, name):
    assert call(channel, name, raw(directory, name)) == EXPECTED[name]


# --- responses ----------------------------------------------------------------------------------


@pytest.mark.parametrize("directory", FORMS)
@pytest.mark.parametrize("name", RESPONSE_NAMES)
def test_go_responses_decode_and_ours_match_them(directory, name):
    vector = entry(directory, name)
    message_type = MESSAGES[vector["message"]]
    (field,) = message_type.DESCRIPTOR.fields
    value = vector["content"]["value"]
    assert getattr(message_type.FromString(raw(directory, name)), field.name) == value
    ours = message_type(**{field.name: value}).SerializeToString()
    if value == 0 and FORMS[directory][1] == "old":
        # proto2 Go types write an explicit zero; proto3 leaves it out. Both read as 0.
        assert raw(directory, name) == b"\x08\x00" and ours == b""
    else:
        assert ours == raw(directory, name)
