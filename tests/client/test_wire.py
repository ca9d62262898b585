"""scheduler_client/wire.py writes requirements in both of Karmada's forms, as v1.18's scheduler does.

A Karmada v1.16/v1.17 estimator reads only the original message fields (resourceRequest,
nodeAffinity, tolerations); v1.19 reads only the *Bytes fields. Each form alone, cut out of
our encoding, must carry the whole query; and for the requests Karmada v1.18.2 itself
encoded (tests/support/data/wire-vectors/karmada-v1.18.2/), each form of ours reads as Karmada's does.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings

from estimator.core.model import (
    NodeClaim,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    ReplicaShape,
    ReplicasQuery,
    Toleration,
)
from estimator.pb import estimator_pb2 as pb
from estimator.pb import k8s_core_pb2 as core
from estimator.service import convert
from scheduler_client import wire
from tests.service.test_convert import to_model
from tests.service.test_convert_roundtrip import component_sets_queries, replicas_queries
from tests.support.servers import WIRE_VECTORS

V118 = WIRE_VECTORS / "karmada-v1.18.2"
OLD_FIELDS = {"resourceRequest", "nodeAffinity", "tolerations"}
BYTE_FIELDS = {"resourceRequestBytes", "nodeAffinityBytes", "tolerationsBytes"}


def requirement_messages(request):
    """Every ReplicaRequirements/ComponentReplicaRequirements inside a request."""
    if isinstance(request, pb.MaxAvailableReplicasRequest):
        components = [c for w in request.assumedWorkloads for c in w.components]
        own = [request.replicaRequirements] if request.HasField("replicaRequirements") else []
    elif isinstance(request, pb.MaxAvailableComponentSetsRequest):
        components = list(request.components) + [c for w in request.assumedWorkloads for c in w.components]
        own = []
    else:
        return []
    return own + [c.replicaRequirements for c in components if c.HasField("replicaRequirements")]


def only(form: str, request):
    """A copy of the request as a reader of one form sees it: the other form's fields cleared."""
    cut = type(request)()
    cut.CopyFrom(request)
    dropped = BYTE_FIELDS if form == "old" else OLD_FIELDS
    for requirements in requirement_messages(cut):
        if "resourceRequestBytes" in dropped:
            requirements.ClearField("resourceRequestBytes")
        else:
            requirements.ClearField("resourceRequest")
        if requirements.HasField("nodeClaim"):
            for name in dropped - {"resourceRequest", "resourceRequestBytes"}:
                requirements.nodeClaim.ClearField(name)
    return type(request).FromString(cut.SerializeToString())


def encode(request):
    """Our encoding of what a Karmada request means."""
    query = to_model(request)
    if isinstance(request, pb.MaxAvailableComponentSetsRequest):
        return wire.component_sets_request(request.cluster, query)
    if isinstance(request, pb.MaxAvailableReplicasRequest):
        return wire.replicas_request(request.cluster, query)
    return wire.unschedulable_request(request.cluster, query)


def both_forms_present_together(request) -> bool:
    for requirements in requirement_messages(request):
        if bool(requirements.resourceRequest) != bool(requirements.resourceRequestBytes):
            return False
        claim = requirements.nodeClaim
        if claim.HasField("nodeAffinity") != bool(claim.nodeAffinityBytes):
            return False
        if len(claim.tolerations) != len(claim.tolerationsBytes):
            return False
    return True


GPU_QUERY = ReplicasQuery(shape=ReplicaShape(
    requests=(("cpu", 3000), ("nvidia.com/gpu", 2)),
    claim=NodeClaim(
        node_selector=(("accelerator", "h100"),),
        affinity_terms=(NodeSelectorTerm(match_expressions=(
            NodeSelectorRequirement("topology.kubernetes.io/zone", "In", ("zone-a", "zone-b")),)),),
        tolerations=(Toleration("gpu", "Exists", effect="NoSchedule"), Toleration("spot", "Equal", "yes")),
    ),
    namespace="ml",
))


def test_an_old_estimator_reads_the_requirements():
    """What a v1.16/v1.17 estimator reads: the original fields, filled and alone enough."""
    request = wire.replicas_request("m", GPU_QUERY)
    requirements = request.replicaRequirements
    assert {name: q.string for name, q in requirements.resourceRequest.items()} == {"cpu": "3", "nvidia.com/gpu": "2"}
    assert [t.key for t in requirements.nodeClaim.tolerations] == ["gpu", "spot"]
    (term,) = requirements.nodeClaim.nodeAffinity.nodeSelectorTerms
    assert term.matchExpressions[0].values == ["zone-a", "zone-b"]
    assert convert.replicas_query(only("old", request)) == GPU_QUERY
    assert convert.replicas_query(only("bytes", request)) == GPU_QUERY


def test_both_forms_carry_the_same_objects():
    requirements = wire.replicas_request("m", GPU_QUERY).replicaRequirements
    for name, quantity in requirements.resourceRequest.items():
        assert requirements.resourceRequestBytes[name] == quantity.SerializeToString()
    claim = requirements.nodeClaim
    assert claim.nodeAffinityBytes == claim.nodeAffinity.SerializeToString()
    assert list(claim.tolerationsBytes) == [t.SerializeToString() for t in claim.tolerations]
    assert core.Toleration.FromString(claim.tolerationsBytes[1]).value == "yes"


def test_zero_affinity_terms_send_neither_form():
    request = wire.replicas_request("m", ReplicasQuery(shape=ReplicaShape(requests=(("cpu", 1000),))))
    claim = request.replicaRequirements.nodeClaim
    assert not claim.HasField("nodeAffinity") and not claim.nodeAffinityBytes


# Generating these queries is slow on a loaded machine; that says nothing about the property.
LOADED_MACHINE = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])


@LOADED_MACHINE
@given(replicas_queries)
def test_each_form_alone_carries_a_replicas_query(query):
    request = wire.replicas_request("m", query)
    assert both_forms_present_together(request)
    assert convert.replicas_query(only("old", request)) == convert.replicas_query(only("bytes", request))
    assert convert.replicas_query(request) == convert.replicas_query(only("old", request))


@LOADED_MACHINE
@given(component_sets_queries())
def test_each_form_alone_carries_a_component_sets_query(query):
    request = wire.component_sets_request("m", query)
    assert both_forms_present_together(request)
    assert convert.component_sets_query(only("old", request)) == query
    assert convert.component_sets_query(only("bytes", request)) == query


def _v118_requests():
    index = json.loads((V118 / "index.json").read_text(encoding="utf-8"))
    messages = {m.DESCRIPTOR.full_name: m for m in (
        pb.MaxAvailableReplicasRequest, pb.MaxAvailableComponentSetsRequest, pb.UnschedulableReplicasRequest)}
    return [(v["file"], messages[v["message"]]) for v in index["vectors"] if v["message"] in messages]


V118_REQUESTS = _v118_requests()


def test_the_v118_directory_has_requests_with_both_forms():
    karmada = [t.FromString((V118 / f).read_bytes()) for f, t in V118_REQUESTS]
    assert len(karmada) >= 5
    assert any(r.resourceRequest and r.resourceRequestBytes for req in karmada for r in requirement_messages(req))


@pytest.mark.parametrize(("name", "message_type"), V118_REQUESTS, ids=[f for f, _ in V118_REQUESTS])
def test_our_forms_read_as_karmada_v118_forms_do(name, message_type):
    karmada = message_type.FromString((V118 / name).read_bytes())
    ours = message_type.FromString(encode(karmada).SerializeToString())
    assert both_forms_present_together(ours)
    for form in ("old", "bytes"):
        assert to_model(only(form, ours)) == to_model(only(form, karmada)), form
    assert to_model(ours) == to_model(karmada)
