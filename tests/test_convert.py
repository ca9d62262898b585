"""estimator/convert.py (protobuf -> model) and scheduler_client/wire.py (model -> protobuf).

Tables whose case names are sentences: every rejection names the exact field path; the
normalisation matches Karmada's Go estimator; Karmada-encoded vectors convert to the
models they describe; and model -> wire -> bytes -> wire -> model is the identity.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from estimator import convert, model
from estimator.errors import InvalidRequest
from estimator.model import (
    NO_CLAIM,
    AssumedWorkload,
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
from estimator.resources import MAX_INT32, MAX_INT64
from scheduler_client import wire

MI = 2**20
VECTORS_DIR = Path(__file__).resolve().parent / "data" / "wire-vectors"
CORRUPT = b"\x0a\x05ab"  # field 1 claims 5 bytes, 2 follow

# --- builders for wire messages --------------------------------------------------------------


def quantity(text: str) -> bytes:
    return k8s_resource.Quantity(string=text).SerializeToString()


def expr(key: str, operator: str, *values: str) -> core.NodeSelectorRequirement:
    return core.NodeSelectorRequirement(key=key, operator=operator, values=values)


def affinity(*terms: core.NodeSelectorTerm) -> bytes:
    return core.NodeSelector(nodeSelectorTerms=terms).SerializeToString()


def term(expressions=(), fields=()) -> core.NodeSelectorTerm:
    return core.NodeSelectorTerm(matchExpressions=expressions, matchFields=fields)


def toleration(**fields) -> bytes:
    return core.Toleration(**fields).SerializeToString()


def component(name="c", replicas=1, resource_requests=None, claim=None, priority="") -> pb.Component:
    requirements = pb.ComponentReplicaRequirements(
        resourceRequestBytes=resource_requests or {}, priorityClassName=priority
    )
    if claim is not None:
        requirements.nodeClaim.CopyFrom(claim)
    return pb.Component(name=name, replicas=replicas, replicaRequirements=requirements)


def sets(*components: pb.Component, assumed=(), namespace="ns") -> pb.MaxAvailableComponentSetsRequest:
    return pb.MaxAvailableComponentSetsRequest(
        cluster="m", namespace=namespace, components=components, assumedWorkloads=assumed
    )


def replicas(resource_requests=None, claim=None) -> pb.MaxAvailableReplicasRequest:
    requirements = pb.ReplicaRequirements(namespace="ns", resourceRequestBytes=resource_requests or {})
    if claim is not None:
        requirements.nodeClaim.CopyFrom(claim)
    return pb.MaxAvailableReplicasRequest(cluster="m", replicaRequirements=requirements)


def in_with_a_value_that_is_not_utf8() -> bytes:
    """A NodeSelector with one term {key: k, operator: In, values: [0xff]}, hand-encoded
    because our own (proto2) messages refuse to build it."""
    requirement = b"\x0a\x01k" + b"\x12\x02In" + b"\x1a\x01\xff"
    term_bytes = b"\x0a" + bytes([len(requirement)]) + requirement  # matchExpressions = 1
    return b"\x0a" + bytes([len(term_bytes)]) + term_bytes  # nodeSelectorTerms = 1


def claim_with_affinity(*terms: core.NodeSelectorTerm) -> pb.NodeClaim:
    return pb.NodeClaim(nodeAffinityBytes=affinity(*terms))


def claim_with_tolerations(*encoded: bytes) -> pb.NodeClaim:
    return pb.NodeClaim(tolerationsBytes=encoded)


def cases(table):
    """pytest params from (sentence, *values) rows; the sentence is the test id."""
    return [pytest.param(*values, id=sentence) for sentence, *values in table]


def to_model(request):
    if isinstance(request, pb.MaxAvailableComponentSetsRequest):
        return convert.component_sets_query(request)
    if isinstance(request, pb.MaxAvailableReplicasRequest):
        return convert.replicas_query(request)
    return convert.workload_ref(request)


# --- rejections -------------------------------------------------------------------------------

AFFINITY = "replicaRequirements.nodeClaim.nodeAffinityBytes"
TERM0 = f"{AFFINITY}.nodeSelectorTerms[0]"
TOLERATIONS = "components[0].replicaRequirements.nodeClaim.tolerationsBytes"
ZONE = expr("zone", "In", "a")

REJECTIONS = [
    # Quantities
    (
        "an undecodable quantity names its resource in its component",
        sets(component(), component(resource_requests={"nvidia.com/gpu": CORRUPT})),
        'components[1].replicaRequirements.resourceRequestBytes["nvidia.com/gpu"]',
    ),
    (
        "an empty quantity string is rejected",
        replicas({"cpu": quantity("")}),
        'replicaRequirements.resourceRequestBytes["cpu"]',
    ),
    (
        "a quantity without its string field is rejected",
        replicas({"cpu": b""}),
        'replicaRequirements.resourceRequestBytes["cpu"]',
    ),
    (
        "a malformed quantity is rejected",
        replicas({"memory": quantity("1.2.3")}),
        'replicaRequirements.resourceRequestBytes["memory"]',
    ),
    (
        "a quantity beyond int64 is rejected",
        replicas({"memory": quantity("1e400")}),
        'replicaRequirements.resourceRequestBytes["memory"]',
    ),
    (
        "a malformed quantity is rejected even for a name that is then ignored",
        replicas({"pods": quantity("abc")}),
        'replicaRequirements.resourceRequestBytes["pods"]',
    ),
    (
        "a quantity that is not UTF-8 is rejected",
        replicas({"cpu": b"\x0a\x02\xff\xfe"}),
        'replicaRequirements.resourceRequestBytes["cpu"]',
    ),
    (
        "a bad quantity in an assumed workload names its place",
        sets(assumed=[pb.AssumedWorkload(namespace="x", components=[component(resource_requests={"cpu": CORRUPT})])]),
        'assumedWorkloads[0].components[0].replicaRequirements.resourceRequestBytes["cpu"]',
    ),
    # Replica counts
    ("negative replicas are rejected", sets(component(replicas=-1)), "components[0].replicas"),
    (
        "negative replicas in an assumed workload are rejected",
        sets(assumed=[pb.AssumedWorkload(components=[component(), component(replicas=-5)])]),
        "assumedWorkloads[0].components[1].replicas",
    ),
    (
        "a set of more than int32 replicas is rejected",
        sets(component(replicas=2**30), component(replicas=2**30)),
        "components",
    ),
    (
        "an assumed set of more than int32 replicas is rejected",
        sets(assumed=[pb.AssumedWorkload(components=[component(replicas=MAX_INT32), component(replicas=1)])]),
        "assumedWorkloads[0].components",
    ),
    # Node affinity
    ("undecodable node affinity is rejected", replicas(claim=pb.NodeClaim(nodeAffinityBytes=CORRUPT)), AFFINITY),
    (
        "an unknown node-selector operator is rejected",
        replicas(claim=claim_with_affinity(term([ZONE, expr("gpu", "Between", "1", "3")]))),
        f"{TERM0}.matchExpressions[1].operator",
    ),
    (
        "operators are case-sensitive",
        replicas(claim=claim_with_affinity(term([expr("zone", "in", "a")]))),
        f"{TERM0}.matchExpressions[0].operator",
    ),
    (
        "In without values is rejected",
        replicas(claim=claim_with_affinity(term([expr("zone", "In")]))),
        f"{TERM0}.matchExpressions[0].values",
    ),
    (
        "NotIn without values is rejected",
        replicas(claim=claim_with_affinity(term(), term([expr("zone", "NotIn")]))),
        f"{AFFINITY}.nodeSelectorTerms[1].matchExpressions[0].values",
    ),
    (
        "Exists with values is rejected",
        replicas(claim=claim_with_affinity(term([expr("gpu", "Exists", "yes")]))),
        f"{TERM0}.matchExpressions[0].values",
    ),
    (
        "DoesNotExist with values is rejected",
        replicas(claim=claim_with_affinity(term([expr("gpu", "DoesNotExist", "yes")]))),
        f"{TERM0}.matchExpressions[0].values",
    ),
    (
        "Gt without a value is rejected",
        replicas(claim=claim_with_affinity(term([expr("gpu", "Gt")]))),
        f"{TERM0}.matchExpressions[0].values",
    ),
    (
        "Lt with two values is rejected",
        replicas(claim=claim_with_affinity(term([expr("gpu", "Lt", "1", "2")]))),
        f"{TERM0}.matchExpressions[0].values",
    ),
    (
        "Gt with a fraction is rejected",
        replicas(claim=claim_with_affinity(term([expr("gpu", "Gt", "3.5")]))),
        f"{TERM0}.matchExpressions[0].values",
    ),
    (
        "Lt with an exponent is rejected",
        replicas(claim=claim_with_affinity(term([expr("gpu", "Lt", "1e3")]))),
        f"{TERM0}.matchExpressions[0].values",
    ),
    (
        "Gt with spaces is rejected",
        replicas(claim=claim_with_affinity(term([expr("gpu", "Gt", " 3")]))),
        f"{TERM0}.matchExpressions[0].values",
    ),
    (
        "Gt beyond int64 is rejected",
        replicas(claim=claim_with_affinity(term([expr("gpu", "Gt", str(MAX_INT64 + 1))]))),
        f"{TERM0}.matchExpressions[0].values",
    ),
    (
        "an expression without a key is rejected",
        replicas(claim=claim_with_affinity(term([expr("", "Exists")]))),
        f"{TERM0}.matchExpressions[0].key",
    ),
    (
        "a label value that is not UTF-8 is rejected",
        replicas(claim=pb.NodeClaim(nodeAffinityBytes=in_with_a_value_that_is_not_utf8())),
        f"{TERM0}.matchExpressions[0].values[0]",
    ),
    (
        "a field other than metadata.name is rejected",
        replicas(claim=claim_with_affinity(term(fields=[expr("spec.unschedulable", "In", "true")]))),
        f"{TERM0}.matchFields[0].key",
    ),
    (
        "a field with Exists is rejected",
        replicas(claim=claim_with_affinity(term(fields=[expr("metadata.name", "Exists")]))),
        f"{TERM0}.matchFields[0].operator",
    ),
    (
        "a field with two values is rejected",
        replicas(claim=claim_with_affinity(term([ZONE], [expr("metadata.name", "In", "n1", "n2")]))),
        f"{TERM0}.matchFields[0].values",
    ),
    (
        "a field without a value is rejected",
        replicas(claim=claim_with_affinity(term(fields=[expr("metadata.name", "NotIn")]))),
        f"{TERM0}.matchFields[0].values",
    ),
    # Tolerations
    (
        "an undecodable toleration names its index",
        sets(component(claim=claim_with_tolerations(toleration(key="a"), toleration(key="b"), CORRUPT))),
        f"{TOLERATIONS}[2]",
    ),
    (
        "a toleration operator other than Equal or Exists is rejected",
        sets(component(claim=claim_with_tolerations(toleration(key="a", operator="Gt", value="1")))),
        f"{TOLERATIONS}[0].operator",
    ),
    (
        "toleration operators are case-sensitive",
        sets(component(claim=claim_with_tolerations(toleration(key="a", operator="equal", value="1")))),
        f"{TOLERATIONS}[0].operator",
    ),
    (
        "an Exists toleration with a value is rejected",
        sets(component(claim=claim_with_tolerations(toleration(key="a", operator="Exists", value="x")))),
        f"{TOLERATIONS}[0].value",
    ),
    (
        "an unknown taint effect is rejected",
        sets(component(claim=claim_with_tolerations(toleration(), toleration(key="a", effect="NoScheduleX")))),
        f"{TOLERATIONS}[1].effect",
    ),
    (
        "a toleration key that is not UTF-8 is rejected",
        sets(component(claim=claim_with_tolerations(b"\x0a\x01\xff"))),
        f"{TOLERATIONS}[0].key",
    ),
    # Unschedulable replicas
    ("a workload reference is required", pb.UnschedulableReplicasRequest(cluster="m"), "resource"),
]


@pytest.mark.parametrize(("request_message", "path"), cases(REJECTIONS))
def test_invalid_request_names_the_field(request_message, path):
    with pytest.raises(InvalidRequest) as caught:
        to_model(request_message)
    assert caught.value.field == path
    assert str(caught.value).startswith(f"{path}: ")


@settings(max_examples=300)
@given(st.binary(max_size=40), st.sampled_from(["quantity", "affinity", "toleration"]))
def test_arbitrary_bytes_convert_or_are_rejected_never_crash(raw, where):
    if where == "quantity":
        request = replicas({"cpu": raw})
    elif where == "affinity":
        request = replicas(claim=pb.NodeClaim(nodeAffinityBytes=raw))
    else:
        request = replicas(claim=pb.NodeClaim(tolerationsBytes=[raw]))
    try:
        convert.replicas_query(request)
    except InvalidRequest as error:
        assert error.field.startswith("replicaRequirements.")


# --- normalisation (Karmada parity) ------------------------------------------------------------


def only_shape(request: pb.MaxAvailableReplicasRequest) -> ReplicaShape:
    shape = convert.replicas_query(request).shape
    assert shape is not None
    return shape


REQUEST_NORMALISATION = [
    ("counted requests are sorted by name", {"nvidia.com/gpu": "1", "memory": "1Gi", "cpu": "2"},
     (("cpu", 2000), ("memory", 2**30), ("nvidia.com/gpu", 1))),
    ("a zero request is dropped", {"cpu": "0", "memory": "1"}, (("memory", 1),)),
    ("a negative request is dropped", {"cpu": "-1", "memory": "1"}, (("memory", 1),)),
    ("a pods request is dropped: a replica always takes one slot", {"pods": "3", "cpu": "1m"}, (("cpu", 1),)),
    ("an unknown plain name is dropped", {"foo": "3"}, ()),
    ("a quota-style name is dropped", {"requests.nvidia.com/gpu": "3"}, ()),
    ("scalar resources are kept", {"hugepages-2Mi": "64Mi", "example.kubernetes.io/x": "1"},
     (("example.kubernetes.io/x", 1), ("hugepages-2Mi", 64 * MI))),
    ("half a millicore rounds up", {"cpu": "0.5m"}, (("cpu", 1),)),
    ("a fractional byte rounds up", {"memory": "1.5"}, (("memory", 2),)),
    ("no requests at all", {}, ()),
]


@pytest.mark.parametrize(("given_requests", "expected"), cases(REQUEST_NORMALISATION))
def test_requests_are_normalised_like_karmada(given_requests, expected):
    resource_requests = {name: quantity(text) for name, text in given_requests.items()}
    assert only_shape(replicas(resource_requests)).requests == expected


AFFINITY_NORMALISATION = [
    ("empty bytes are no constraint", b"", None),
    ("a selector with zero terms is no constraint", b"\x48\x01", None),  # only an unknown field 9
    ("an empty term is kept: it matches nothing", affinity(term()), (NodeSelectorTerm(),)),
    (
        "terms keep their order and content",
        affinity(
            term([expr("b", "Exists"), expr("a", "Gt", "-3")]),
            term(fields=[expr("metadata.name", "NotIn", "n")]),
        ),
        (
            NodeSelectorTerm(
                match_expressions=(NodeSelectorRequirement("b", "Exists"), NodeSelectorRequirement("a", "Gt", ("-3",)))
            ),
            NodeSelectorTerm(match_fields=(NodeSelectorRequirement("metadata.name", "NotIn", ("n",)),)),
        ),
    ),
    ("Gt takes a plus sign, as Go's ParseInt does", affinity(term([expr("a", "Gt", "+3")])),
     (NodeSelectorTerm(match_expressions=(NodeSelectorRequirement("a", "Gt", ("+3",)),)),)),
]


@pytest.mark.parametrize(("encoded", "expected"), cases(AFFINITY_NORMALISATION))
def test_node_affinity_is_normalised(encoded, expected):
    assert only_shape(replicas(claim=pb.NodeClaim(nodeAffinityBytes=encoded))).claim.affinity_terms == expected


def test_node_selector_becomes_a_sorted_tuple():
    claim = only_shape(replicas(claim=pb.NodeClaim(nodeSelector={"zone": "a", "accelerator": "h100"}))).claim
    assert claim.node_selector == (("accelerator", "h100"), ("zone", "a"))


def test_tolerations_keep_their_order_and_seconds():
    go_style = b"\x0a\x00\x12\x06Exists\x1a\x00\x22\x00"  # Go's Marshal writes empty strings too
    claim = only_shape(
        replicas(
            claim=claim_with_tolerations(
                toleration(key="b", operator="Equal", value="x", effect="NoExecute", tolerationSeconds=0),
                go_style,
                toleration(key="a", effect="PreferNoSchedule"),
            )
        )
    ).claim
    assert claim.tolerations == (
        Toleration("b", "Equal", "x", "NoExecute", toleration_seconds=0),
        Toleration("", "Exists", "", "", toleration_seconds=None),
        Toleration("a", "", "", "PreferNoSchedule"),
    )


def test_an_empty_node_claim_is_no_claim():
    assert only_shape(replicas(claim=pb.NodeClaim())).claim == NO_CLAIM


def test_replicas_without_requirements_have_no_shape():
    assert convert.replicas_query(pb.MaxAvailableReplicasRequest(cluster="m")) == ReplicasQuery(shape=None)


def test_replica_shape_takes_namespace_and_priority_from_the_requirements():
    request = pb.MaxAvailableReplicasRequest(
        replicaRequirements=pb.ReplicaRequirements(namespace="web", priorityClassName="critical")
    )
    assert convert.replicas_query(request).shape == ReplicaShape(namespace="web", priority_class="critical")


def test_components_take_the_request_namespace_and_their_own_priority():
    request = sets(
        component("a", 2, priority="high"),
        pb.Component(name="b", replicas=3),  # no replicaRequirements at all
        namespace="ml",
        assumed=[pb.AssumedWorkload(namespace="other", components=[component("x", 1)])],
    )
    assert convert.component_sets_query(request) == ComponentSetsQuery(
        components=(
            Component("a", 2, ReplicaShape(namespace="ml", priority_class="high")),
            Component("b", 3, ReplicaShape(namespace="ml")),
        ),
        namespace="ml",
        assumed=(AssumedWorkload("other", (Component("x", 1, ReplicaShape(namespace="other")),)),),
    )


def test_a_set_of_exactly_int32_replicas_is_accepted():
    query = convert.component_sets_query(sets(component(replicas=MAX_INT32 - 1), component(replicas=1)))
    assert sum(c.replicas for c in query.components) == MAX_INT32


def test_empty_components_are_accepted():
    assert convert.component_sets_query(sets()).components == ()


THRESHOLDS = [
    ("a minute in nanoseconds is sixty seconds", 60_000_000_000, 60.0),
    ("no threshold is zero", 0, 0.0),
    ("a negative threshold counts as zero, as in Karmada", -5_000_000_000, 0.0),
    ("a millisecond", 1_000_000, 0.001),
]


@pytest.mark.parametrize(("nanoseconds", "seconds"), cases(THRESHOLDS))
def test_unschedulable_threshold_becomes_seconds(nanoseconds, seconds):
    request = pb.UnschedulableReplicasRequest(
        cluster="m",
        resource=pb.ObjectReference(apiVersion="apps/v1", kind="Deployment", namespace="web", name="frontend"),
        unschedulableThreshold=nanoseconds,
    )
    assert convert.workload_ref(request) == WorkloadRef("apps/v1", "Deployment", "web", "frontend", seconds)


# --- Karmada's vectors, converted ------------------------------------------------------------------

def vector(name: str, message_type):
    return message_type.FromString((VECTORS_DIR / name).read_bytes())


def shape(namespace: str, *requests: tuple[str, int], claim=NO_CLAIM, priority="") -> ReplicaShape:
    return ReplicaShape(requests=requests, claim=claim, namespace=namespace, priority_class=priority)


VECTOR_CLAIM = NodeClaim(
    node_selector=(("accelerator", "h100"),),
    affinity_terms=(
        NodeSelectorTerm(
            match_expressions=(
                NodeSelectorRequirement("topology.kubernetes.io/zone", "In", ("zone-a", "zone-b")),
                NodeSelectorRequirement("gpu-count", "Gt", ("3",)),
            )
        ),
        NodeSelectorTerm(match_fields=(NodeSelectorRequirement("metadata.name", "In", ("gpu-node-7",)),)),
    ),
    tolerations=(
        Toleration("nvidia.com/gpu", "Exists", "", "NoSchedule"),
        Toleration("dedicated", "Equal", "ml", "NoExecute", toleration_seconds=300),
    ),
)
SMALL_TRAINING_SET = (
    Component("master", 1, shape("ml-team", ("cpu", 50), ("memory", 32 * MI))),
    Component("worker", 2, shape("ml-team", ("cpu", 50), ("memory", 32 * MI), ("nvidia.com/gpu", 1))),
)
ASSUMED_SMALL_SET = (AssumedWorkload("ml-team", SMALL_TRAINING_SET),)


def test_vector_sets_with_claims_and_assumed():
    request = vector("sets_with_claims_and_assumed.bin", pb.MaxAvailableComponentSetsRequest)
    query = convert.component_sets_query(request)
    assert query == ComponentSetsQuery(
        components=(
            Component("master", 1, shape("ml-team", ("cpu", 50), ("memory", 32 * MI))),
            Component(
                "worker",
                2,
                shape(
                    "ml-team",
                    ("cpu", 50),
                    ("memory", 32 * MI),
                    ("nvidia.com/gpu", 3),
                    claim=VECTOR_CLAIM,
                    priority="high-priority",
                ),
            ),
        ),
        namespace="ml-team",
        assumed=ASSUMED_SMALL_SET,
    )


def test_vector_sets_train_small():
    query = convert.component_sets_query(vector("sets_train_small.bin", pb.MaxAvailableComponentSetsRequest))
    assert query == ComponentSetsQuery(components=SMALL_TRAINING_SET, namespace="ml-team")


def test_vector_replicas_with_claims():
    query = convert.replicas_query(vector("replicas_with_claims.bin", pb.MaxAvailableReplicasRequest))
    expected_shape = shape(
        "web",
        ("cpu", 1500),
        ("ephemeral-storage", 10**9),
        ("hugepages-2Mi", 64 * MI),
        ("memory", 1536 * MI),
        claim=VECTOR_CLAIM,
        priority="critical",
    )
    assert query == ReplicasQuery(shape=expected_shape, assumed=ASSUMED_SMALL_SET)


def test_vector_replicas_without_requirements():
    query = convert.replicas_query(vector("replicas_no_requirements.bin", pb.MaxAvailableReplicasRequest))
    assert query == ReplicasQuery(shape=None)


def test_vector_unschedulable_deployment():
    ref = convert.workload_ref(vector("unschedulable_deployment.bin", pb.UnschedulableReplicasRequest))
    assert ref == WorkloadRef("apps/v1", "Deployment", "web", "frontend", threshold_seconds=60.0)


REQUEST_VECTORS = [
    ("sets_train_small.bin", pb.MaxAvailableComponentSetsRequest, wire.component_sets_request),
    ("sets_train_big.bin", pb.MaxAvailableComponentSetsRequest, wire.component_sets_request),
    ("sets_with_claims_and_assumed.bin", pb.MaxAvailableComponentSetsRequest, wire.component_sets_request),
    ("replicas_with_claims.bin", pb.MaxAvailableReplicasRequest, wire.replicas_request),
    ("replicas_no_requirements.bin", pb.MaxAvailableReplicasRequest, wire.replicas_request),
    ("unschedulable_deployment.bin", pb.UnschedulableReplicasRequest, wire.unschedulable_request),
]


@pytest.mark.parametrize(("name", "message_type", "encode"), REQUEST_VECTORS, ids=[v[0] for v in REQUEST_VECTORS])
def test_our_encoding_of_a_vector_converts_to_the_same_model(name, message_type, encode):
    original = vector(name, message_type)
    converted = to_model(original)
    again = message_type.FromString(encode(original.cluster, converted).SerializeToString())
    assert to_model(again) == converted


# --- wire.py ---------------------------------------------------------------------------------------

QUANTITY_STRINGS = [
    ("whole cpus drop the milli suffix", "cpu", 2000, "2"),
    ("fractional cpus are millicores", "cpu", 1500, "1500m"),
    ("one millicore", "cpu", 1, "1m"),
    ("zero cpu", "cpu", 0, "0"),
    ("memory is a plain integer", "memory", 1536 * MI, str(1536 * MI)),
    ("an extended resource is a plain integer", "nvidia.com/gpu", 3, "3"),
    ("the largest memory", "memory", MAX_INT64, str(MAX_INT64)),
]


@pytest.mark.parametrize(("name", "amount", "text"), cases(QUANTITY_STRINGS))
def test_quantity_string_is_canonical(name, amount, text):
    assert wire.quantity_string(name, amount) == text


def test_wire_encodes_tolerations_as_go_does():
    query = ReplicasQuery(shape=ReplicaShape(claim=NodeClaim(tolerations=(Toleration("gpu", "Exists"),))))
    encoded = wire.replicas_request("m", query).replicaRequirements.nodeClaim.tolerationsBytes[0]
    assert encoded == b"\x0a\x03gpu\x12\x06Exists\x1a\x00\x22\x00"


def test_wire_leaves_replica_requirements_unset_without_a_shape():
    assert not wire.replicas_request("m", ReplicasQuery(shape=None)).HasField("replicaRequirements")


def test_wire_sends_requirements_for_every_component():
    request = wire.component_sets_request("m", ComponentSetsQuery(components=(Component("a", 1),)))
    assert request.components[0].HasField("replicaRequirements")


# --- round trip: model -> pb -> bytes -> pb -> model ------------------------------------------------

names = st.text("abcxyz-", min_size=1, max_size=6)
label_values = st.text("abc0123", min_size=0, max_size=4)
counted_names = st.sampled_from(
    ["cpu", "memory", "ephemeral-storage", "nvidia.com/gpu", "hugepages-2Mi", "example.com/fpga"]
)
resource_requests = st.dictionaries(counted_names, st.integers(1, MAX_INT64), max_size=4).map(
    lambda d: tuple(sorted(d.items()))
)
integers = st.integers(-(2**63), MAX_INT64).map(str)


@st.composite
def label_requirements(draw):
    key = draw(names)
    operator = draw(st.sampled_from(model.NODE_SELECTOR_OPERATORS))
    if operator in (model.OP_IN, model.OP_NOT_IN):
        values = draw(st.lists(label_values, min_size=1, max_size=3))
    elif operator in (model.OP_GT, model.OP_LT):
        values = [draw(integers)]
    else:
        values = []
    return NodeSelectorRequirement(key, operator, tuple(values))


field_requirements = st.builds(
    NodeSelectorRequirement,
    st.just("metadata.name"),
    st.sampled_from([model.OP_IN, model.OP_NOT_IN]),
    label_values.map(lambda v: (v,)),
)
terms = st.builds(
    NodeSelectorTerm,
    st.lists(label_requirements(), max_size=3).map(tuple),
    st.lists(field_requirements, max_size=2).map(tuple),
)


@st.composite
def tolerations(draw):
    operator = draw(st.sampled_from(["", *model.TOLERATION_OPERATORS]))
    value = "" if operator == model.TOLERATION_EXISTS else draw(label_values)
    return Toleration(
        key=draw(st.one_of(st.just(""), names)),
        operator=operator,
        value=value,
        effect=draw(st.sampled_from(["", *model.TAINT_EFFECTS])),
        toleration_seconds=draw(st.one_of(st.none(), st.integers(-(2**63), MAX_INT64))),
    )


claims = st.builds(
    NodeClaim,
    st.dictionaries(names, label_values, max_size=3).map(lambda d: tuple(sorted(d.items()))),
    st.one_of(st.none(), st.lists(terms, min_size=1, max_size=3).map(tuple)),  # () travels as None
    st.lists(tolerations(), max_size=3).map(tuple),
)


def shapes(namespace: str):
    return st.builds(
        ReplicaShape, resource_requests, st.one_of(st.just(NO_CLAIM), claims), st.just(namespace), label_values
    )


def components(namespace: str):
    return st.lists(st.builds(Component, names, st.integers(0, 1000), shapes(namespace)), max_size=3).map(tuple)


@st.composite
def assumed_workloads(draw):
    namespace = draw(label_values)
    return AssumedWorkload(namespace, draw(components(namespace)))


@st.composite
def component_sets_queries(draw):
    namespace = draw(label_values)
    assumed = draw(st.lists(assumed_workloads(), max_size=2).map(tuple))
    return ComponentSetsQuery(components=draw(components(namespace)), namespace=namespace, assumed=assumed)


replicas_queries = st.builds(
    ReplicasQuery,
    st.one_of(st.none(), label_values.flatmap(shapes)),
    st.lists(assumed_workloads(), max_size=2).map(tuple),
)
workload_refs = st.builds(
    WorkloadRef, names, names, label_values, names, st.integers(0, 10**15).map(lambda ns: ns / 1e9)
)


def through_the_wire(message):
    return type(message).FromString(message.SerializeToString())


@given(component_sets_queries())
def test_component_sets_query_round_trips(query):
    assert convert.component_sets_query(through_the_wire(wire.component_sets_request("m", query))) == query


@given(replicas_queries)
def test_replicas_query_round_trips(query):
    # An all-default shape encodes as an empty replicaRequirements, which is how Karmada
    # v1.16/v1.17 say "no requirements"; it reads back as None, and both answer alike.
    expected = ReplicasQuery(shape=None, assumed=query.assumed) if query.shape == ReplicaShape() else query
    assert convert.replicas_query(through_the_wire(wire.replicas_request("m", query))) == expected


@given(workload_refs)
def test_workload_ref_round_trips(ref):
    assert convert.workload_ref(through_the_wire(wire.unschedulable_request("m", ref))) == ref


def test_a_cpu_round_trips_through_its_canonical_string():
    query = ReplicasQuery(shape=ReplicaShape(requests=(("cpu", 1500), ("memory", 7))))
    request = wire.replicas_request("m", query)
    decoded = {
        name: k8s_resource.Quantity.FromString(raw).string
        for name, raw in request.replicaRequirements.resourceRequestBytes.items()
    }
    assert decoded == {"cpu": "1500m", "memory": "7"}
    assert convert.replicas_query(through_the_wire(request)) == query


def test_an_odd_resource_name_is_quoted_in_the_field_path():
    with pytest.raises(InvalidRequest) as caught:
        convert.replicas_query(replicas({'we"ird/näme': CORRUPT}))
    assert caught.value.field == 'replicaRequirements.resourceRequestBytes["we\\"ird/näme"]'
