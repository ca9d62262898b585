"""Each component-set answer carries its certificate as trailing gRPC metadata: the bound no
placement exceeds (`x-estimator-bound`) and whether the answer reaches it
(`x-estimator-proven-optimal`); karmada-place reads and prints it.

The member is small enough to solve by hand: nodes of 4 and 2 CPUs, a set is one 2-CPU pod
and one 4-CPU pod. One set fits (2 on the small node, 4 on the large one); two would need 12
CPUs of the 6 there are. Karmada's first-fit puts the 2-CPU pod on the first node it fits, the
large one, and then finds no room for the other: 0 sets, short of the bound 1."""

from __future__ import annotations

import json

import pytest

from estimator.api import Component, ComponentSetsQuery, ReplicaShape
from estimator.pb import estimator_pb2 as pb
from scheduler_client import accurate
from tests.support.kubeobjects import node_object
from tests.support.servers import quantity, start_server, stub

SET = (("small", "2"), ("large", "4"))


@pytest.fixture(scope="module")
def member(tmp_path_factory):
    path = tmp_path_factory.mktemp("certificate") / "member.json"
    nodes = [node_object("n-large", cpu="4", memory="8Gi"), node_object("n-small", cpu="2", memory="8Gi")]
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": nodes}))
    servers = {packing: start_server("m", snapshots=[path], packing=packing) for packing in ("best", "first-fit")}
    yield servers
    for server in servers.values():
        server.stop(0)


def _request():
    return pb.MaxAvailableComponentSetsRequest(cluster="m", namespace="ns", components=[
        pb.Component(name=name, replicas=1, replicaRequirements=pb.ComponentReplicaRequirements(
            resourceRequestBytes={"cpu": quantity(cpu), "memory": quantity("1Gi")}))
        for name, cpu in SET])


@pytest.mark.parametrize("packing,sets,proven", [("best", 1, "true"), ("first-fit", 0, "false")])
def test_the_answer_carries_its_bound_and_whether_it_is_proven(member, packing, sets, proven):
    reply, call = stub(member[packing]).MaxAvailableComponentSets.with_call(_request())
    trailers = dict(call.trailing_metadata())
    assert reply.maxSets == sets
    assert trailers == {"x-estimator-bound": "1", "x-estimator-proven-optimal": proven}


@pytest.mark.parametrize("packing,text", [("best", "1 set (proven optimal)"), ("first-fit", "0 sets (at most 1)")])
def test_karmada_place_reads_the_certificate(member, packing, text):
    endpoint = accurate.Endpoint("m", f"127.0.0.1:{member[packing].port}")
    query = ComponentSetsQuery(tuple(Component(name, 1, ReplicaShape((("cpu", int(cpu) * 1000), ("memory", 1 << 30))))
                                     for name, cpu in SET), "ns")
    answer = accurate.ask_component_sets(endpoint, query, "kind=Job, name=ns/j", timeout=10)
    assert answer.certificate() == text


@pytest.mark.parametrize("metadata,expected", [
    ((("x-estimator-bound", "5"), ("x-estimator-proven-optimal", "false")), (5, False)),
    ((("x-estimator-proven-optimal", "true"),), (None, True)),
    ((), (None, None)),  # Karmada's estimator sends none
    ((("x-estimator-bound", "-3"), ("x-estimator-proven-optimal", "yes")), (None, None)),
    ((("x-estimator-bound", "9" * 40),), (None, None)),
])
def test_a_certificate_that_does_not_parse_counts_as_absent(metadata, expected):
    assert accurate.read_certificate(metadata) == expected


def test_the_certificate_text_needs_a_certificate():
    assert accurate.Answer("m", 4).certificate() == ""
    assert accurate.Answer("m", -1, bound=3, proven_optimal=False).certificate() == ""
    assert accurate.Answer("m", 4, bound=5, proven_optimal=False).certificate() == "4 sets (at most 5)"
