"""The estimator over real loopback gRPC: the scenario, Karmada-encoded bytes, errors,
health, probes and metrics."""

from __future__ import annotations

import urllib.request

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from estimator.pb import estimator_pb2 as pb
from tests.support.servers import WIRE_VECTORS, quantity, start_server, stub

METHOD = "/github.com.karmada_io.karmada.pkg.estimator.service.Estimator/"


@pytest.fixture(scope="module")
def servers():
    started = {}
    for member in ("member-a", "member-b", "member-c"):
        for packing in ("best", "first-fit"):
            started[member, packing] = start_server(member, packing=packing)
    yield started
    for server in started.values():
        server.stop(0)


def component(name, replicas, gpu=0, **extra):
    requests = {"cpu": quantity("50m"), "memory": quantity("32Mi")}
    if gpu:
        requests["nvidia.com/gpu"] = quantity(str(gpu))
    return pb.Component(name=name, replicas=replicas,
                        replicaRequirements=pb.ComponentReplicaRequirements(resourceRequestBytes=requests, **extra))


def train(gpu):
    return [component("master", 1), component("worker", 2, gpu=gpu)]


SCENARIO = [
    ("member-a", 1, 0),
    ("member-b", 3, 0),
    ("member-c", 4, 1),
]


@pytest.mark.parametrize("packing", ["best", "first-fit"])
@pytest.mark.parametrize("member,small,big", SCENARIO, ids=[m for m, _, _ in SCENARIO])
def test_the_reference_scenario_answers_per_member(servers, member, small, big, packing):
    client = stub(servers[member, packing])
    for gpu, expected in ((1, small), (3, big)):
        reply = client.MaxAvailableComponentSets(
            pb.MaxAvailableComponentSetsRequest(cluster=member, namespace="ml-team", components=train(gpu)),
            metadata=(("object", f"kind=PyTorchJob, name=ml-team/train-{gpu}"),),
        )
        assert reply.maxSets == expected


@pytest.mark.parametrize(
    "vector,member,expected",
    [
        ("sets_train_small.bin", "member-c", 4),
        ("sets_train_big.bin", "member-b", 0),
        ("replicas_no_requirements.bin", "member-a", None),
    ],
)
def test_requests_encoded_by_karmada_are_answered(servers, vector, member, expected):
    """Raw bytes from Karmada's generated code go over the wire unchanged."""
    channel = grpc.insecure_channel(f"127.0.0.1:{servers[member, 'best'].port}")
    method = "MaxAvailableReplicas" if vector.startswith("replicas") else "MaxAvailableComponentSets"
    call = channel.unary_unary(METHOD + method)
    raw = call((WIRE_VECTORS / vector).read_bytes())
    if method == "MaxAvailableComponentSets":
        assert pb.MaxAvailableComponentSetsResponse.FromString(raw).maxSets == expected
    else:
        # No requirements: the sum of free pod slots over all nodes, a positive number.
        assert pb.MaxAvailableReplicasResponse.FromString(raw).maxReplicas > 0


def test_max_available_replicas_counts_gpu_workers_per_node(servers):
    client = stub(servers["member-b", "best"])
    req = pb.MaxAvailableReplicasRequest(
        cluster="member-b",
        replicaRequirements=pb.ReplicaRequirements(namespace="ml-team",
                                                   resourceRequestBytes={"nvidia.com/gpu": quantity("1")}),
    )
    assert client.MaxAvailableReplicas(req).maxReplicas == 6
    req.replicaRequirements.resourceRequestBytes["nvidia.com/gpu"] = quantity("3")
    assert client.MaxAvailableReplicas(req).maxReplicas == 0


def test_assumed_workloads_are_deducted_first(servers):
    client = stub(servers["member-c", "best"])
    in_flight = pb.AssumedWorkload(namespace="ml-team", components=train(3))
    reply = client.MaxAvailableComponentSets(pb.MaxAvailableComponentSetsRequest(
        cluster="member-c", namespace="ml-team", components=train(1), assumedWorkloads=[in_flight]))
    assert reply.maxSets == 1  # 8 GPUs - 6 in flight = 2 GPUs: one train-small


def test_empty_components_place_no_constraint(servers):
    reply = stub(servers["member-a", "best"]).MaxAvailableComponentSets(
        pb.MaxAvailableComponentSetsRequest(cluster="member-a", namespace="ml-team"))
    assert reply.maxSets == 2**31 - 1


def test_unschedulable_replicas_of_a_deployment(servers):
    client = stub(servers["member-a", "best"])
    req = pb.UnschedulableReplicasRequest(
        cluster="member-a", unschedulableThreshold=60 * 10**9,
        resource=pb.ObjectReference(apiVersion="apps/v1", kind="Deployment", namespace="web", name="frontend"))
    assert client.GetUnschedulableReplicas(req).unschedulableReplicas == 2


ERRORS = [
    ("a request for another cluster is refused with Karmada's message",
     pb.MaxAvailableComponentSetsRequest(cluster="member-x", components=train(1)),
     grpc.StatusCode.INVALID_ARGUMENT, "cluster name does not match, got: member-x, desire: member-a"),
    ("undecodable quantity bytes name the field",
     pb.MaxAvailableComponentSetsRequest(cluster="member-a", components=[pb.Component(
         name="w", replicas=1, replicaRequirements=pb.ComponentReplicaRequirements(
             resourceRequestBytes={"cpu": b"\xff\xff\xff"}))]),
     grpc.StatusCode.INVALID_ARGUMENT, 'resourceRequestBytes["cpu"]'),
    ("a malformed quantity names the field",
     pb.MaxAvailableComponentSetsRequest(cluster="member-a", components=[pb.Component(
         name="w", replicas=1, replicaRequirements=pb.ComponentReplicaRequirements(
             resourceRequestBytes={"memory": quantity("12 apples")}))]),
     grpc.StatusCode.INVALID_ARGUMENT, 'resourceRequestBytes["memory"]'),
    ("negative replicas are refused",
     pb.MaxAvailableComponentSetsRequest(cluster="member-a", components=[pb.Component(name="w", replicas=-1)]),
     grpc.StatusCode.INVALID_ARGUMENT, "components[0].replicas"),
    ("replicas of one set beyond int32 are refused",
     pb.MaxAvailableComponentSetsRequest(cluster="member-a", components=[
         pb.Component(name="a", replicas=2**31 - 1), pb.Component(name="b", replicas=1)]),
     grpc.StatusCode.INVALID_ARGUMENT, "components"),
]


@pytest.mark.parametrize("name,request_,code,text", ERRORS, ids=[e[0] for e in ERRORS])
def test_bad_requests_get_a_status_naming_the_problem(servers, name, request_, code, text):
    with pytest.raises(grpc.RpcError) as raised:
        stub(servers["member-a", "best"]).MaxAvailableComponentSets(request_)
    assert raised.value.code() == code
    assert text in raised.value.details()


def test_unknown_deployment_is_not_found_and_unknown_kind_unimplemented(servers):
    client = stub(servers["member-a", "best"])
    ref = pb.ObjectReference(apiVersion="apps/v1", kind="Deployment", namespace="web", name="nope")
    with pytest.raises(grpc.RpcError) as raised:
        client.GetUnschedulableReplicas(pb.UnschedulableReplicasRequest(cluster="member-a", resource=ref))
    assert raised.value.code() == grpc.StatusCode.NOT_FOUND
    ref = pb.ObjectReference(apiVersion="v1", kind="ConfigMap", namespace="web", name="x")
    with pytest.raises(grpc.RpcError) as raised:
        client.GetUnschedulableReplicas(pb.UnschedulableReplicasRequest(cluster="member-a", resource=ref))
    assert raised.value.code() == grpc.StatusCode.UNIMPLEMENTED


def test_health_probes_and_metrics(servers):
    server = servers["member-a", "best"]
    with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
        health = health_pb2_grpc.HealthStub(channel)
        for service in ("", "github.com.karmada_io.karmada.pkg.estimator.service.Estimator"):
            status = health.Check(health_pb2.HealthCheckRequest(service=service)).status
            assert status == health_pb2.HealthCheckResponse.SERVING
    ports = server.http_ports
    for path in ("/healthz", "/readyz"):
        with urllib.request.urlopen(f"http://127.0.0.1:{ports['probes']}{path}") as reply:
            assert reply.status == 200
    stub(server).MaxAvailableComponentSets(
        pb.MaxAvailableComponentSetsRequest(cluster="member-a", namespace="ml-team", components=train(1)))
    with urllib.request.urlopen(f"http://127.0.0.1:{ports['metrics']}/metrics") as reply:
        page = reply.read().decode()
    assert 'karmada_scheduler_estimator_estimating_request_total{result="success",type="MaxAvailableComponentSets"}' in page
    assert "karmada_scheduler_estimator_estimating_algorithm_duration_seconds_bucket" in page
    assert "karmada_scheduler_estimator_cache_staleness_seconds" in page


def test_stopping_turns_health_not_serving_and_refuses_calls():
    server = start_server("member-a")
    address = f"127.0.0.1:{server.port}"
    server.stop(0.5)
    with grpc.insecure_channel(address) as channel:
        with pytest.raises(grpc.RpcError):
            health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=1)
