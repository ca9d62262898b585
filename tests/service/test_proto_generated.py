"""The committed estimator/pb/ code is what proto/ generates, and proto/ is the wire contract.

Staleness: regenerate into a temporary directory and compare file by file. Only the
version stamps (the protobuf/grpcio versions the generator writes into its output) are
normalised, so a patch release of grpcio-tools does not fail the check but any other
difference does.

Contract: field names, numbers, kinds and reserved numbers/names of every message, and
the service's method paths, as docs/wire-contract.md states them.
"""

from __future__ import annotations

import re

import pytest
from google.protobuf import descriptor_pb2
from google.protobuf.descriptor import FieldDescriptor

from estimator.pb import estimator_pb2, k8s_core_pb2, k8s_resource_pb2, service_pb2, service_pb2_grpc
from estimator.pb.regenerate import REPO_ROOT, generated_files, regenerate

# --- staleness -----------------------------------------------------------------------------

_VERSION_STAMPS = [
    (re.compile(r"^# Protobuf Python Version: .*$", re.MULTILINE), "# Protobuf Python Version: <version>"),
    # The runtime check is one call spread over several lines; its arguments are the version.
    (
        re.compile(r"^_runtime_version\.ValidateProtobufRuntimeVersion\(\n(?:    .*\n)*?\)$", re.MULTILINE),
        "_runtime_version.ValidateProtobufRuntimeVersion(<version>)",
    ),
    (re.compile(r"^GRPC_GENERATED_VERSION = .*$", re.MULTILINE), "GRPC_GENERATED_VERSION = <version>"),
]


def normalise_version_stamps(source: str) -> str:
    for pattern, placeholder in _VERSION_STAMPS:
        source = pattern.sub(placeholder, source)
    return source


@pytest.fixture(scope="module")
def fresh_root(tmp_path_factory):
    root = tmp_path_factory.mktemp("regenerated")
    regenerate(root)
    return root


def test_regeneration_writes_the_same_set_of_files(fresh_root):
    assert generated_files(REPO_ROOT) == generated_files(fresh_root), (
        "estimator/pb/ does not hold exactly the files proto/ generates: run make proto "
        "(and delete generated modules whose .proto is gone)"
    )


@pytest.mark.parametrize("relative", generated_files(REPO_ROOT), ids=str)
def test_committed_generated_code_is_up_to_date(fresh_root, relative):
    fresh = normalise_version_stamps((fresh_root / relative).read_text(encoding="utf-8"))
    committed = normalise_version_stamps((REPO_ROOT / relative).read_text(encoding="utf-8"))
    assert committed == fresh, f"{relative} is stale (or hand-edited): run make proto"


def test_normalisation_touches_only_version_stamps():
    generated = (REPO_ROOT / "estimator/pb/service_pb2_grpc.py").read_text(encoding="utf-8")
    assert "GRPC_GENERATED_VERSION = <version>" in normalise_version_stamps(generated)
    message_module = (REPO_ROOT / "estimator/pb/estimator_pb2.py").read_text(encoding="utf-8")
    normalised = normalise_version_stamps(message_module)
    assert "ValidateProtobufRuntimeVersion(<version>)" in normalised
    assert "# Protobuf Python Version: <version>" in normalised
    # Everything else survives: the serialized descriptor line is untouched.
    assert [line for line in message_module.splitlines() if "AddSerializedFile" in line] == [
        line for line in normalised.splitlines() if "AddSerializedFile" in line
    ]
    assert normalise_version_stamps("x = 1\n") == "x = 1\n"


# --- contract ------------------------------------------------------------------------------

_SCALARS = {
    FieldDescriptor.TYPE_STRING: "string",
    FieldDescriptor.TYPE_BYTES: "bytes",
    FieldDescriptor.TYPE_INT32: "int32",
    FieldDescriptor.TYPE_INT64: "int64",
}


def _kind(field: FieldDescriptor) -> str:
    """A field's type in .proto spelling: `repeated Component`, `map<string, bytes>`, ..."""
    if field.message_type is not None and field.message_type.GetOptions().map_entry:
        key, value = field.message_type.fields_by_name["key"], field.message_type.fields_by_name["value"]
        return f"map<{_kind(key)}, {_kind(value)}>"
    base = field.message_type.name if field.message_type is not None else _SCALARS[field.type]
    if field.is_repeated:
        return f"repeated {base}"
    # Explicit presence on a proto3 scalar/message that is not a plain message field means `optional`.
    if field.containing_oneof is not None and field.containing_oneof.name == f"_{field.name}":
        return f"optional {base}"
    return base


def _fields(descriptor) -> dict[str, tuple[int, str]]:
    return {field.name: (field.number, _kind(field)) for field in descriptor.fields}


def _reserved(descriptor) -> tuple[list[int], list[str]]:
    proto = descriptor_pb2.DescriptorProto()
    descriptor.CopyToProto(proto)
    numbers = [n for r in proto.reserved_range for n in range(r.start, r.end)]
    return sorted(numbers), sorted(proto.reserved_name)


ESTIMATOR_MESSAGES = {
    "Component": {
        "name": (1, "string"),
        "replicaRequirements": (2, "ComponentReplicaRequirements"),
        "replicas": (3, "int32"),
    },
    "ComponentReplicaRequirements": {
        "nodeClaim": (1, "optional NodeClaim"),
        "resourceRequest": (2, "map<string, Quantity>"),  # Karmada before v1.19
        "priorityClassName": (3, "string"),
        "resourceRequestBytes": (4, "map<string, bytes>"),
    },
    "AssumedWorkload": {"namespace": (1, "string"), "components": (2, "repeated Component")},
    "MaxAvailableComponentSetsRequest": {
        "cluster": (1, "string"),
        "components": (2, "repeated Component"),
        "namespace": (3, "string"),
        "assumedWorkloads": (4, "repeated AssumedWorkload"),
    },
    "MaxAvailableComponentSetsResponse": {"maxSets": (1, "int32")},
    "MaxAvailableReplicasRequest": {
        "cluster": (1, "string"),
        "replicaRequirements": (2, "ReplicaRequirements"),
        "assumedWorkloads": (3, "repeated AssumedWorkload"),
    },
    "MaxAvailableReplicasResponse": {"maxReplicas": (1, "int32")},
    "NodeClaim": {
        "nodeAffinity": (1, "optional NodeSelector"),  # Karmada before v1.19
        "nodeSelector": (2, "map<string, string>"),
        "tolerations": (3, "repeated Toleration"),  # Karmada before v1.19
        "nodeAffinityBytes": (4, "bytes"),
        "tolerationsBytes": (5, "repeated bytes"),
    },
    "ObjectReference": {
        "apiVersion": (1, "string"),
        "kind": (2, "string"),
        "namespace": (3, "string"),
        "name": (4, "string"),
    },
    "ReplicaRequirements": {
        "nodeClaim": (1, "optional NodeClaim"),
        "resourceRequest": (2, "map<string, Quantity>"),  # Karmada before v1.19
        "namespace": (3, "string"),
        "priorityClassName": (4, "string"),
        "resourceRequestBytes": (5, "map<string, bytes>"),
    },
    "UnschedulableReplicasRequest": {
        "cluster": (1, "string"),
        "resource": (2, "ObjectReference"),
        "unschedulableThreshold": (3, "int64"),
    },
    "UnschedulableReplicasResponse": {"unschedulableReplicas": (1, "int32")},
}

# Karmada v1.19 reserves the original fields' numbers; we keep declaring them so that
# requests from v1.16-v1.18 schedulers are read, so nothing is reserved here.
RESERVED: dict[str, tuple[list[int], list[str]]] = {}

KUBERNETES_MESSAGES = {
    (k8s_resource_pb2, "Quantity"): {"string": (1, "string")},
    (k8s_core_pb2, "NodeSelector"): {"nodeSelectorTerms": (1, "repeated NodeSelectorTerm")},
    (k8s_core_pb2, "NodeSelectorTerm"): {
        "matchExpressions": (1, "repeated NodeSelectorRequirement"),
        "matchFields": (2, "repeated NodeSelectorRequirement"),
    },
    (k8s_core_pb2, "NodeSelectorRequirement"): {
        "key": (1, "string"),
        "operator": (2, "string"),
        "values": (3, "repeated string"),
    },
    (k8s_core_pb2, "Toleration"): {
        "key": (1, "string"),
        "operator": (2, "string"),
        "value": (3, "string"),
        "effect": (4, "string"),
        "tolerationSeconds": (5, "int64"),
    },
}


def test_packages_and_syntax_match_karmada_and_kubernetes():
    assert estimator_pb2.DESCRIPTOR.package == "github.com.karmada_io.karmada.pkg.estimator.pb"
    assert service_pb2.DESCRIPTOR.package == "github.com.karmada_io.karmada.pkg.estimator.service"
    assert k8s_resource_pb2.DESCRIPTOR.package == "k8s.io.apimachinery.pkg.api.resource"
    assert k8s_core_pb2.DESCRIPTOR.package == "k8s.io.api.core.v1"
    modules = (estimator_pb2, service_pb2, k8s_core_pb2, k8s_resource_pb2)
    syntaxes = {module.__name__: _syntax(module) for module in modules}
    assert syntaxes == {
        "estimator.pb.estimator_pb2": "proto3",
        "estimator.pb.service_pb2": "proto2",
        "estimator.pb.k8s_core_pb2": "proto2",
        "estimator.pb.k8s_resource_pb2": "proto2",
    }


def _syntax(module) -> str:
    proto = descriptor_pb2.FileDescriptorProto()
    module.DESCRIPTOR.CopyToProto(proto)
    return proto.syntax or "proto2"  # protoc leaves the field unset for proto2


def test_estimator_package_declares_exactly_the_contract_messages():
    assert set(estimator_pb2.DESCRIPTOR.message_types_by_name) == set(ESTIMATOR_MESSAGES)


@pytest.mark.parametrize("message", sorted(ESTIMATOR_MESSAGES))
def test_estimator_message_fields_match_the_contract(message):
    descriptor = estimator_pb2.DESCRIPTOR.message_types_by_name[message]
    assert _fields(descriptor) == ESTIMATOR_MESSAGES[message]
    assert _reserved(descriptor) == RESERVED.get(message, ([], []))


@pytest.mark.parametrize("key", list(KUBERNETES_MESSAGES), ids=lambda key: key[1])
def test_kubernetes_message_fields_match_kubernetes(key):
    module, message = key
    assert _fields(module.DESCRIPTOR.message_types_by_name[message]) == KUBERNETES_MESSAGES[key]


def test_node_claim_presence_is_tracked():
    requirements = estimator_pb2.ReplicaRequirements()
    assert not requirements.HasField("nodeClaim")
    requirements.nodeClaim.SetInParent()
    assert requirements.HasField("nodeClaim")
    # An empty but present claim is encoded (field 1, length 0), as Go's optional does.
    assert requirements.SerializeToString() == b"\x0a\x00"


def test_service_methods_have_karmadas_paths():
    service = service_pb2.DESCRIPTOR.services_by_name["Estimator"]
    methods = {
        f"/{service.full_name}/{m.name}": (m.input_type.full_name, m.output_type.full_name) for m in service.methods
    }
    pb = "github.com.karmada_io.karmada.pkg.estimator.pb."
    root = "/github.com.karmada_io.karmada.pkg.estimator.service.Estimator/"
    assert methods == {
        root + "MaxAvailableReplicas": (pb + "MaxAvailableReplicasRequest", pb + "MaxAvailableReplicasResponse"),
        root + "MaxAvailableComponentSets": (
            pb + "MaxAvailableComponentSetsRequest",
            pb + "MaxAvailableComponentSetsResponse",
        ),
        root + "GetUnschedulableReplicas": (pb + "UnschedulableReplicasRequest", pb + "UnschedulableReplicasResponse"),
    }
    assert hasattr(service_pb2_grpc, "EstimatorStub")
    assert hasattr(service_pb2_grpc, "add_EstimatorServicer_to_server")
