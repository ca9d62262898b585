"""The estimator server fed by list/watch: readiness waits for the first sync, answers follow
the live cluster, an unreachable API server keeps the last state served with its age shown,
and a dead watch loop fails /healthz."""

from __future__ import annotations

import re
import time
import urllib.error
import urllib.request

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from estimator.cluster.cache import ClusterCache
from estimator.cluster.watch import ReflectorOptions, WatchClusterState
from estimator.pb import estimator_pb2 as pb
from estimator.service.server import EstimatorServer, ServerConfig
from tests.support.fakekube import FakeKube
from tests.support.kubeobjects import deployment_object, node_object, pod_object, quota_object, replicaset_object
from tests.support.servers import quantity, stub

FAST = dict(page_size=3, min_watch_timeout=5.0, read_timeout_margin=5.0, min_watch_seconds=0.2,
            backoff_initial=0.02, backoff_cap=0.2, list_timeout=5.0)
MEMBER = "member-live"
OLD = "2024-01-01T00:00:00Z"


def wait_until(predicate, timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return predicate()


def get(server: EstimatorServer, endpoint: str, path: str) -> tuple[int, str]:
    url = f"http://127.0.0.1:{server.http_ports[endpoint]}{path}"
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def grpc_health(server: EstimatorServer) -> int:
    channel = grpc.insecure_channel(f"127.0.0.1:{server.port}")
    return health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service="")).status


def gpu_sets(server: EstimatorServer) -> int:
    worker = pb.Component(name="worker", replicas=1, replicaRequirements=pb.ComponentReplicaRequirements(
        resourceRequestBytes={"cpu": quantity("100m"), "nvidia.com/gpu": quantity("1")}))
    return stub(server).MaxAvailableComponentSets(
        pb.MaxAvailableComponentSetsRequest(cluster=MEMBER, namespace="shop", components=[worker])).maxSets


def stuck_replicas(server: EstimatorServer) -> int:
    request = pb.UnschedulableReplicasRequest(
        cluster=MEMBER, unschedulableThreshold=60 * 10**9,
        resource=pb.ObjectReference(apiVersion="apps/v1", kind="Deployment", namespace="shop", name="web"))
    return stub(server).GetUnschedulableReplicas(request).unschedulableReplicas


def staleness_metric(server: EstimatorServer) -> float:
    _, page = get(server, "metrics", "/metrics")
    return float(re.search(r"^karmada_scheduler_estimator_cache_staleness_seconds (\S+)$", page, re.M).group(1))


def stale_metric(server: EstimatorServer) -> float:
    _, page = get(server, "metrics", "/metrics")
    return float(re.search(r"^karmada_scheduler_estimator_cache_stale (\S+)$", page, re.M).group(1))


def cluster(fake: FakeKube) -> None:
    web = deployment_object("shop", "web", "uid-web", {"app": "web"})
    fake.load(
        [node_object(f"n{i}", gpu=2, zone=f"z{i % 2}") for i in range(3)]
        + [pod_object("shop", "trainer", node="n0", cpu="1", gpu=1)]
        + [quota_object("shop", "q", {"requests.cpu": "100"}, {"requests.cpu": "1"}),
           web, replicaset_object("shop", "web-abc123", "uid-rs", web)]
        + [pod_object("shop", f"web-abc123-{i}", labels={"app": "web", "pod-template-hash": "abc123"},
                      owner={"name": "web-abc123", "uid": "uid-rs"}, unschedulable_since=OLD, phase="Pending")
           for i in range(2)]
    )


def start(fake: FakeKube, tmp_path, cache: ClusterCache | None = None, max_staleness: float = 0.0) -> EstimatorServer:
    state = WatchClusterState(kubeconfig=str(fake.kubeconfig(tmp_path)), qps=0, cache=cache,
                              options=ReflectorOptions(**FAST))
    server = EstimatorServer(
        ServerConfig(cluster_name=MEMBER, server_port=0, server_bind_address="127.0.0.1",
                     health_probe_bind_address="127.0.0.1:0", metrics_bind_address="127.0.0.1:0",
                     shutdown_grace_seconds=1.0, max_staleness=max_staleness),
        state,
    )
    server.start()
    return server


@pytest.fixture
def fake():
    server = FakeKube(bookmark_interval=0.2).start()
    yield server
    server.stop()


def test_not_ready_until_synced_then_answers_follow_the_live_cluster(fake, tmp_path):
    cluster(fake)
    fake.hold_lists(["Pod"])
    server = start(fake, tmp_path)
    try:
        assert wait_until(lambda: server.kernels_warm, 180), "kernels did not warm up"
        assert wait_until(lambda: all(r.synced for k, r in server.state.reflectors.items() if k != "Pod"))
        status, body = get(server, "probes", "/readyz")
        assert status == 503
        assert "[-] cluster state synced" in body and "Pod not synced" in body and "[+] kernels compiled" in body
        assert grpc_health(server) == health_pb2.HealthCheckResponse.NOT_SERVING
        with pytest.raises(grpc.RpcError) as raised:
            gpu_sets(server)
        assert raised.value.code() == grpc.StatusCode.UNAVAILABLE
        assert get(server, "probes", "/healthz")[0] == 200

        fake.release_lists()
        assert server.wait_ready(10)
        status, body = get(server, "probes", "/readyz")
        assert status == 200 and "[+] cluster state synced" in body
        assert grpc_health(server) == health_pb2.HealthCheckResponse.SERVING
        assert gpu_sets(server) == 5  # 3 nodes x 2 GPUs, one taken by the trainer
        assert stuck_replicas(server) == 2

        fake.put(pod_object("shop", "trainer-2", node="n1", cpu="1", gpu=2))
        fake.delete("Pod", "web-abc123-0", "shop")
        assert wait_until(lambda: gpu_sets(server) == 3 and stuck_replicas(server) == 1)
    finally:
        server.stop()


def test_an_unreachable_api_server_keeps_answers_and_shows_the_age(fake, tmp_path):
    cluster(fake)
    server = start(fake, tmp_path)
    try:
        assert server.wait_ready(180)
        fake.go_down()
        time.sleep(1.5)
        assert gpu_sets(server) == 5, "the last state is still served"
        status, body = get(server, "probes", "/readyz")
        assert status == 200
        age = float(re.search(r"cache staleness: ([\d.]+)s", body).group(1))
        assert age >= 1.0 and "last contact" in body and "backing off" in body
        assert wait_until(lambda: staleness_metric(server) >= 1.0, 3)
        assert get(server, "probes", "/healthz")[0] == 200
        fake.put(pod_object("shop", "trainer-2", node="n1", cpu="1", gpu=1))
        fake.come_up()
        assert wait_until(lambda: gpu_sets(server) == 4)
        assert wait_until(lambda: staleness_metric(server) < 1.0, 5)
    finally:
        server.stop()


def test_past_max_staleness_readiness_fails_and_a_metric_says_so(fake, tmp_path, caplog):
    cluster(fake)
    server = start(fake, tmp_path, max_staleness=1.5)
    try:
        assert server.wait_ready(180)
        assert stale_metric(server) == 0
        fake.go_down()
        assert wait_until(lambda: get(server, "probes", "/readyz")[0] == 503)
        status, body = get(server, "probes", "/readyz")
        assert "[-] cache staleness within --max-staleness 1.5s" in body
        assert stale_metric(server) == 1
        assert grpc_health(server) == health_pb2.HealthCheckResponse.NOT_SERVING
        assert gpu_sets(server) == 5, "calls that reach it are still answered from the last state"
        assert any("past --max-staleness" in r.getMessage() for r in caplog.records)
        fake.come_up()
        assert wait_until(lambda: get(server, "probes", "/readyz")[0] == 200, timeout=30)
        assert stale_metric(server) == 0
    finally:
        server.stop()


def test_healthz_fails_when_the_watch_loop_dies(fake, tmp_path):
    class Crash(BaseException):
        pass

    class CrashingCache(ClusterCache):
        """Fault injection: a bug that escapes the loop's error handling."""

        def delete(self, kind, key):
            if kind == "Node":
                raise Crash("injected")
            super().delete(kind, key)

    cluster(fake)
    server = start(fake, tmp_path, cache=CrashingCache())
    try:
        assert server.wait_ready(180)
        fake.delete("Node", "n2")
        assert wait_until(lambda: get(server, "probes", "/healthz")[0] == 500)
        status, body = get(server, "probes", "/healthz")
        assert "watch loop died" in body and "Node" in body
    finally:
        server.stop()


def test_the_server_exports_the_watch_counters(fake, tmp_path):
    cluster(fake)
    server = start(fake, tmp_path)
    try:
        assert server.wait_ready(180)
        fake.put(pod_object("shop", "one-more", node="n2"))
        assert wait_until(lambda: server.state.stats()["Pod"]["events"] >= 1)
        _, page = get(server, "metrics", "/metrics")
        assert 'karmada_scheduler_estimator_watch_lists_total{kind="Node"} 1.0' in page
        assert 'karmada_scheduler_estimator_watch_synced{kind="Deployment"} 1.0' in page
        assert re.search(r'karmada_scheduler_estimator_watch_events_total\{kind="Pod"\} [1-9]', page)
    finally:
        server.stop()
