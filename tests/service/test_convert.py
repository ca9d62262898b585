"""estimator/service/convert.py (protobuf -> model) and scheduler_client/wire.py (model -> protobuf).

Tables whose case names are sentences: every rejection names the exact field path; the
normalisation matches Karmada's Go estimator; Karmada-encoded vectors convert to the
models they describe; and model -> wire -> bytes -> wire -> model is the identity.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from estimator.core.errors import InvalidRequest
from estimator.core.model import (
    NO_CLAIM,
    AssumedWorkload,
    Component,
    ComponentSetsQuery,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    ReplicaShape,
    ReplicasQuery,
    Toleration,
    WorkloadRef,
)
from estimator.core.resources import MAX_INT32, MAX_INT64
from estimator.pb import estimator_pb2 as pb
from estimator.pb import k8s_core_pb2 as core
from estimator.pb import k8s_resource_pb2 as k8s_resource
from estimator.service import convert

MI = 2**20
VECTORS_DIR = Path(__file__).resolve().parents[1] / "support" / "data" / "wire-vectors"
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
