"""The client's wire encoding (scheduler_client.wire) and the round trip
model -> protobuf -> bytes -> protobuf -> model, for hypothesis-built queries."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from estimator.core import model
from estimator.core.errors import InvalidRequest
from estimator.core.model import (
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
from estimator.core.resources import MAX_INT64
from estimator.pb import k8s_resource_pb2 as k8s_resource
from estimator.service import convert
from scheduler_client import wire
from tests.service.test_convert import CORRUPT, MI, cases, replicas


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
