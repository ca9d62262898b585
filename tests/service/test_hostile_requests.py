"""What a client sends cannot exhaust, fool or forge the server (through real loopback gRPC).

- Over-long names and values are refused (INVALID_ARGUMENT naming the field, quoted and cut)
  before anything is cached or logged, and leave nothing behind.
- A client's value in a log line or an error message is quoted and cut: a newline in the
  `cluster` field cannot write a forged klog line, a 3 MB `operator` value gets a short
  INVALID_ARGUMENT (it used to come back RESOURCE_EXHAUSTED: the echoed message outgrew
  its metadata limit) and a short log line.
- Calls reserve their memory from --request-memory-budget before spending it; over it they
  get RESOURCE_EXHAUSTED, and health checks still answer.
- Health checks are never refused by the request limiter nor queued behind estimates.
"""

from __future__ import annotations

import re
import logging
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from estimator.pb import estimator_pb2 as pb
from estimator.pb import k8s_core_pb2 as core
from estimator.pb import service_pb2_grpc
from estimator.service.logsetup import REQUEST_LOGGER, KlogTextFormatter
from tests.support.servers import quantity, start_server, stub
from tests.support.memory import kept_bytes

CLUSTER = "member-a"
GPU_SETS = pb.MaxAvailableComponentSetsRequest(cluster=CLUSTER, namespace="ml-team", components=[
    pb.Component(name="worker", replicas=1, replicaRequirements=pb.ComponentReplicaRequirements(
        resourceRequestBytes={"nvidia.com/gpu": quantity("1")}))])
GPU_ANSWER = 2
MB = 10**6
BIG_MESSAGES = [("grpc.max_send_message_length", 64 * MB), ("grpc.max_receive_message_length", 64 * MB)]


class Lines(logging.Handler):
    """The request logger's records, formatted as the klog text log writes them."""

    def __init__(self):
        super().__init__(logging.DEBUG)
        self.setFormatter(KlogTextFormatter())
        self.text: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.text.append(self.format(record))


@pytest.fixture(scope="module")
def server():
    started = start_server(CLUSTER, max_request_bytes=8 * MB)
    yield started
    started.stop(0)


@pytest.fixture
def client(server):
    channel = grpc.insecure_channel(f"127.0.0.1:{server.port}", options=BIG_MESSAGES)
    yield service_pb2_grpc.EstimatorStub(channel)
    channel.close()


@pytest.fixture
def lines():
    handler = Lines()
    logger = logging.getLogger(REQUEST_LOGGER)
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    yield handler
    logger.removeHandler(handler)
    logger.setLevel(level)


def refusal(call) -> grpc.RpcError:
    with pytest.raises(grpc.RpcError) as raised:
        call()
    return raised.value


def sets_with_name(name: str) -> pb.MaxAvailableComponentSetsRequest:
    return pb.MaxAvailableComponentSetsRequest(cluster=CLUSTER, namespace="ml-team", components=[
        pb.Component(name="w", replicas=1, replicaRequirements=pb.ComponentReplicaRequirements(
            resourceRequestBytes={name: quantity("1")}))])


def sets_with_operator(operator: str) -> pb.MaxAvailableComponentSetsRequest:
    selector = core.NodeSelector(nodeSelectorTerms=[core.NodeSelectorTerm(matchExpressions=[
        core.NodeSelectorRequirement(key="pool", operator=operator, values=["a"])])])
    claim = pb.NodeClaim(nodeAffinityBytes=selector.SerializeToString())
    return pb.MaxAvailableComponentSetsRequest(cluster=CLUSTER, namespace="ml-team", components=[
        pb.Component(name="w", replicas=1, replicaRequirements=pb.ComponentReplicaRequirements(nodeClaim=claim))])


def in_process_kept(work) -> int:
    """Bytes still allocated in this process (server included) after `work()`."""
    return kept_bytes(work, settle=0.2)  # the log thread's batch


# ---------------------------------------------------------------------------------------
# Caches keyed on request strings


def test_a_resource_name_of_megabytes_is_refused_naming_the_field_and_nothing_is_kept(client, lines):
    def send():
        for i in range(12):
            request = sets_with_name(f"{i}" + "x" * 3_900_000)
            deadline = time.monotonic() + 10
            while True:  # a large call each: the next waits for the one before (and a pause)
                error = refusal(lambda: client.MaxAvailableComponentSets(request, timeout=30))
                if error.code() != grpc.StatusCode.RESOURCE_EXHAUSTED or time.monotonic() > deadline:
                    break
                time.sleep(0.05)
            assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
            details = error.details()
            assert details.startswith('components[0].replicaRequirements.resourceRequestBytes["')
            assert re.search(r"\.\.\.\(39000\d\d characters\)\]: the name is 39000\d\d characters long", details)
            assert len(details) < 1000

    assert in_process_kept(send) < 4 * MB  # 12 names of 3.9 MB: 47 MB if any cache kept them
    assert all(len(line) < 2000 for line in lines.text)


# ---------------------------------------------------------------------------------------
# Logs and messages quote what clients send


def test_a_newline_in_the_cluster_field_cannot_forge_a_log_line(client, lines):
    forged = "E0101 00:00:00.000000       1 server.py:1] FORGED"
    request = pb.MaxAvailableComponentSetsRequest()
    request.CopyFrom(GPU_SETS)
    request.cluster = f"member-x\n{forged}"
    error = refusal(lambda: client.MaxAvailableComponentSets(request, timeout=10))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "\n" not in error.details() and "'member-x\\nE0101" in error.details()
    written = "\n".join(lines.text).splitlines()
    assert any("FORGED" in line for line in written), "the refusal is logged"
    assert not any(line.startswith("E0101") for line in written)


def test_a_plain_cluster_name_is_shown_as_the_go_server_shows_it(client):
    request = pb.MaxAvailableComponentSetsRequest()
    request.CopyFrom(GPU_SETS)
    request.cluster = "member-x"
    error = refusal(lambda: client.MaxAvailableComponentSets(request, timeout=10))
    assert error.details() == "cluster: cluster name does not match, got: member-x, desire: member-a"


def test_an_operator_of_megabytes_is_invalid_argument_with_a_short_message_and_log_line(client, lines):
    started = len(lines.text)
    error = refusal(lambda: client.MaxAvailableComponentSets(sets_with_operator("X" * 3_000_000), timeout=30))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert error.details().startswith("components[0].replicaRequirements.nodeClaim.nodeAffinityBytes"
                                      ".nodeSelectorTerms[0].matchExpressions[0].operator")
    assert len(error.details()) < 1000
    assert sum(len(line) for line in lines.text[started:]) < 4000


def test_a_million_short_affinity_values_are_refused_before_any_is_converted(client):
    values = [f"{i % 100:02d}" for i in range(4096)]
    request = pb.MaxAvailableComponentSetsRequest(cluster=CLUSTER, namespace="ml-team")
    for c in range(4):  # within every per-list limit, 4 x 61 x 4,096 values in all
        selector = core.NodeSelector(nodeSelectorTerms=[core.NodeSelectorTerm(matchExpressions=[
            core.NodeSelectorRequirement(key="pool", operator="NotIn", values=values) for _ in range(61)])])
        request.components.append(pb.Component(name=f"w{c}", replicas=1, replicaRequirements=pb.ComponentReplicaRequirements(
            nodeClaim=pb.NodeClaim(nodeAffinityBytes=selector.SerializeToString()))))
    started = time.monotonic()
    error = refusal(lambda: client.MaxAvailableComponentSets(request, timeout=30))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "past the 16384 this estimator accepts" in error.details()
    assert error.details().startswith("components[0].replicaRequirements.nodeClaim.nodeAffinityBytes")
    assert time.monotonic() - started < 5


def test_an_unknown_operator_is_quoted_and_cut(client):
    error = refusal(lambda: client.MaxAvailableComponentSets(sets_with_operator("Near\n" + "y" * 900), timeout=10))
    assert error.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "unknown operator 'Near\\nyyy" in error.details() and "...(905 characters)" in error.details()


def test_the_object_metadata_is_logged_quoted_and_cut(client, lines):
    started = len(lines.text)
    request = pb.MaxAvailableComponentSetsRequest()
    request.CopyFrom(GPU_SETS)
    request.cluster = "member-x"
    # gRPC carries no line break in metadata; a long value is what a client can send.
    refusal(lambda: client.MaxAvailableComponentSets(request, timeout=10,
                                                     metadata=(("object", "kind=Job, name='a' " + "z" * 6000),)))
    logged = "\n".join(lines.text[started:])
    assert "for \"kind=Job, name='a' zzz" in logged and "...(6019)" in logged
    assert len(logged) < 2000


def test_klog_text_lines_indent_any_line_break_a_message_carries():
    record = logging.LogRecord("estimator", logging.WARNING, __file__, 1, "refused %s", ("a\nE0101 x\u2028E0102 y",),
                               None)
    lines = KlogTextFormatter().format(record).splitlines()
    assert lines[0].startswith("W") and all(line.startswith("\t") for line in lines[1:])


# ---------------------------------------------------------------------------------------
# The request memory budget


def wide_sets(components: int, name: str = "c") -> pb.MaxAvailableComponentSetsRequest:
    part = pb.ComponentReplicaRequirements(resourceRequestBytes={"cpu": quantity("1")})
    return pb.MaxAvailableComponentSetsRequest(cluster=CLUSTER, namespace="ml-team", components=[
        pb.Component(name=f"{name}{i}", replicas=1, replicaRequirements=part) for i in range(components)])


def test_calls_over_the_memory_budget_are_refused_before_spending_it_and_health_answers():
    budget = 2**20
    server = start_server(CLUSTER, request_memory_bytes=budget, parallelism=8)
    client = stub(server)
    health = health_pb2_grpc.HealthStub(grpc.insecure_channel(f"127.0.0.1:{server.port}"))
    try:
        # One node here, but a request's decoded size alone can pass the budget (235 KB encoded).
        error = refusal(lambda: client.MaxAvailableComponentSets(wide_sets(1024, "c" * 200), timeout=10))
        assert error.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert "--request-memory-budget" in error.details()
        assert health.Check(health_pb2.HealthCheckRequest(), timeout=5).status == health_pb2.HealthCheckResponse.SERVING
        assert client.MaxAvailableComponentSets(GPU_SETS, timeout=10).maxSets == GPU_ANSWER
        assert server.budget.used == 0, "every reservation is given back"
        # Concurrent calls: the reservations never pass the budget.
        server.budget.take_peak()
        with ThreadPoolExecutor(8) as pool:
            codes = list(pool.map(lambda _: code_of(lambda: client.MaxAvailableComponentSets(wide_sets(40),
                                                                                             timeout=30)), range(64)))
        assert set(codes) <= {grpc.StatusCode.OK, grpc.StatusCode.RESOURCE_EXHAUSTED}
        assert grpc.StatusCode.OK in codes
        assert 0 < server.budget.take_peak() <= budget
        assert server.budget.used == 0
    finally:
        server.stop(0)


def test_concurrent_ordinary_calls_are_never_refused_when_each_needs_more_than_a_64th_of_the_budget():
    # Each estimate here reserves ~260 KB, twice 1/64 of this budget, as a one-component job
    # does on a 50k-node member under the default budget. They are not large calls: none
    # contends for the large place, none is turned away, and a lone call after them is served.
    server = start_server(CLUSTER, request_memory_bytes=8 * 2**20, parallelism=8)
    client = stub(server)
    try:
        assert server.estimator.bytes_for(1, 2) > server.budget.large
        with ThreadPoolExecutor(8) as pool:
            codes = list(pool.map(lambda _: code_of(lambda: client.MaxAvailableComponentSets(GPU_SETS, timeout=30)),
                                  range(200)))
        assert codes.count(grpc.StatusCode.OK) == len(codes), set(codes)
        assert client.MaxAvailableComponentSets(GPU_SETS, timeout=10).maxSets == GPU_ANSWER
        assert server.budget.used == 0 and server.budget.large_in_flight == 0
    finally:
        server.stop(0)


def code_of(call) -> grpc.StatusCode:
    try:
        call()
    except grpc.RpcError as error:
        return error.code()
    return grpc.StatusCode.OK


# ---------------------------------------------------------------------------------------
# Health under a flood


class Held:
    """Holds every MaxAvailableReplicas call in the estimator until released."""

    def __init__(self, server):
        self.inside = threading.Semaphore(0)
        self.release = threading.Event()
        real = server.estimator.max_available_replicas

        def held(query):
            self.inside.release()
            self.release.wait(60)
            return real(query)

        server.estimator.max_available_replicas = held


GPU_REPLICAS = pb.MaxAvailableReplicasRequest(cluster=CLUSTER, replicaRequirements=pb.ReplicaRequirements(
    resourceRequestBytes={"nvidia.com/gpu": quantity("1")}))


def test_health_is_answered_at_once_while_estimates_fill_the_limit_and_every_worker():
    server = start_server(CLUSTER, max_concurrent_requests=4, parallelism=2)
    held = Held(server)
    client = stub(server)
    health = health_pb2_grpc.HealthStub(grpc.insecure_channel(f"127.0.0.1:{server.port}"))
    try:
        with ThreadPoolExecutor(8) as pool:
            calls = [pool.submit(code_of, lambda: client.MaxAvailableReplicas(GPU_REPLICAS, timeout=60))
                     for _ in range(8)]
            for _ in range(2):
                assert held.inside.acquire(timeout=10)  # both workers busy, two more calls queued
            time.sleep(0.5)
            for _ in range(20):
                started = time.monotonic()
                answer = health.Check(health_pb2.HealthCheckRequest(), timeout=5)
                assert answer.status == health_pb2.HealthCheckResponse.SERVING
                assert time.monotonic() - started < 1.0
            assert code_of(lambda: client.MaxAvailableComponentSets(GPU_SETS, timeout=5)) == \
                grpc.StatusCode.RESOURCE_EXHAUSTED
            held.release.set()
            codes = [c.result() for c in calls]
        assert codes.count(grpc.StatusCode.OK) >= 4
        assert set(codes) <= {grpc.StatusCode.OK, grpc.StatusCode.RESOURCE_EXHAUSTED}
    finally:
        held.release.set()
        server.stop(0)


class Slow:
    """Every MaxAvailableReplicas call takes `seconds` in the estimator."""

    def __init__(self, server, seconds: float):
        real = server.estimator.max_available_replicas

        def slow(query):
            time.sleep(seconds)
            return real(query)

        server.estimator.max_available_replicas = slow


def test_a_flood_on_one_connection_neither_queues_nor_refuses_another_connections_calls():
    server = start_server(CLUSTER, max_concurrent_requests=6, parallelism=1)
    Slow(server, 0.3)
    flood = stub(server)  # one connection
    # A scheduler's, of its own (channels in one process otherwise share their connection).
    other = service_pb2_grpc.EstimatorStub(grpc.insecure_channel(
        f"127.0.0.1:{server.port}", options=[("grpc.use_local_subchannel_pool", 1)]))
    try:
        with ThreadPoolExecutor(12) as pool:
            flooding = [pool.submit(code_of, lambda: flood.MaxAvailableReplicas(GPU_REPLICAS, timeout=30))
                        for _ in range(12)]
            time.sleep(0.2)  # one running, five waiting, six refused
            started = time.monotonic()
            assert other.MaxAvailableComponentSets(GPU_SETS, timeout=10).maxSets == GPU_ANSWER
            waited = time.monotonic() - started
            codes = [f.result() for f in flooding]
        # First come, first served would have made it wait for the five queued ahead (1.5 s).
        assert waited < 0.9
        assert codes.count(grpc.StatusCode.OK) == 6 and codes.count(grpc.StatusCode.RESOURCE_EXHAUSTED) == 6
    finally:
        server.stop(0)
