"""Overload and shutdown: --max-concurrent-requests, --max-request-bytes, SIGTERM drain.

Estimates here are made slow on purpose by wrapping the real estimator in a sleep (the
answer still comes from the real code), so calls can be caught in flight.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from estimator.pb import estimator_pb2 as pb
from scheduler_client.launch import free_port
from tests.support.servers import DEMO, quantity, start_server, stub

GPU_REPLICAS = pb.MaxAvailableReplicasRequest(
    cluster="member-a", replicaRequirements=pb.ReplicaRequirements(resourceRequestBytes={"nvidia.com/gpu": quantity("1")}))
GPU_SETS = pb.MaxAvailableComponentSetsRequest(cluster="member-a", namespace="ml-team", components=[
    pb.Component(name="worker", replicas=1, replicaRequirements=pb.ComponentReplicaRequirements(
        resourceRequestBytes={"nvidia.com/gpu": quantity("1")}))])
ANSWER = 2  # member-a: one node with two GPUs


class Slowed:
    """Wraps a server's MaxAvailableReplicas: each call announces itself, then waits for
    `release` (or `seconds`), then returns the real answer."""

    def __init__(self, server, seconds: float = 60.0):
        self.inside = threading.Semaphore(0)
        self.release = threading.Event()
        self.seconds = seconds
        real = server.estimator.max_available_replicas

        def slow(query):
            self.inside.release()
            self.release.wait(self.seconds)
            return real(query)

        server.estimator.max_available_replicas = slow

    def wait_inside(self, calls: int, timeout: float = 10.0) -> None:
        for _ in range(calls):
            assert self.inside.acquire(timeout=timeout), "a call never reached the estimator"


def code_of(call) -> grpc.StatusCode:
    try:
        call()
    except grpc.RpcError as error:
        return error.code()
    return grpc.StatusCode.OK


# ---------------------------------------------------------------------------------------
# Concurrency and size limits


def test_calls_beyond_max_concurrent_requests_are_refused_at_once_not_queued():
    server = start_server("member-a", max_concurrent_requests=2, parallelism=4)
    slowed = Slowed(server)
    client = stub(server)
    try:
        with ThreadPoolExecutor(2) as pool:
            in_flight = [pool.submit(client.MaxAvailableReplicas, GPU_REPLICAS, timeout=20) for _ in range(2)]
            slowed.wait_inside(2)
            for _ in range(10):
                with pytest.raises(grpc.RpcError) as refused:
                    client.MaxAvailableComponentSets(GPU_SETS, timeout=5)
                assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
            # Refused while both calls still held their slots: nothing queued behind them.
            assert not any(f.done() for f in in_flight)
            slowed.release.set()
            assert [f.result().maxReplicas for f in in_flight] == [ANSWER, ANSWER]
        assert client.MaxAvailableComponentSets(GPU_SETS, timeout=5).maxSets == ANSWER  # capacity is back
    finally:
        slowed.release.set()
        server.stop(0)


def test_a_burst_gets_exactly_the_limit_served_and_the_rest_refused():
    server = start_server("member-a", max_concurrent_requests=3, parallelism=8)
    slowed = Slowed(server, seconds=60.0)
    client = stub(server)
    try:
        with ThreadPoolExecutor(12) as pool:
            calls = [pool.submit(code_of, lambda: client.MaxAvailableReplicas(GPU_REPLICAS, timeout=120))
                     for _ in range(12)]
            slowed.wait_inside(3)
            # The other nine are answered while the three served ones are still held: refused, not queued.
            refused = []
            for done in as_completed(calls, timeout=60):
                refused.append(done.result())
                if len(refused) == 9:
                    break
            assert refused == [grpc.StatusCode.RESOURCE_EXHAUSTED] * 9
            assert sum(not c.done() for c in calls) == 3
            slowed.release.set()
            codes = [c.result() for c in calls]
        assert codes.count(grpc.StatusCode.OK) == 3
        assert codes.count(grpc.StatusCode.RESOURCE_EXHAUSTED) == 9
    finally:
        slowed.release.set()
        server.stop(0)


def test_a_request_over_max_request_bytes_is_refused_and_the_server_keeps_serving():
    server = start_server("member-a", max_request_bytes=2048)
    client = stub(server)
    try:
        big = pb.MaxAvailableComponentSetsRequest()
        big.CopyFrom(GPU_SETS)
        big.components[0].name = "w" * 4096
        with pytest.raises(grpc.RpcError) as refused:
            client.MaxAvailableComponentSets(big, timeout=5)
        assert refused.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert client.MaxAvailableComponentSets(GPU_SETS, timeout=5).maxSets == ANSWER
    finally:
        server.stop(0)


# ---------------------------------------------------------------------------------------
# Drain, in process


def test_stop_lets_an_in_flight_call_finish_and_refuses_new_ones():
    server = start_server("member-a")
    slowed = Slowed(server)
    client = stub(server)
    with ThreadPoolExecutor(2) as pool:
        in_flight = pool.submit(client.MaxAvailableReplicas, GPU_REPLICAS, timeout=20)
        slowed.wait_inside(1)
        # A grace period far beyond the wait below: stop() returning proves it ended with the
        # call, not with the grace period.
        stopping = pool.submit(server.stop, 600.0)
        # stop() turns readiness off first, then stops taking calls: poll until a new call is
        # refused (how soon depends on scheduling, so no fixed sleep), the held one still in flight.
        deadline = time.monotonic() + 60  # a hang guard, not a speed check
        while code_of(lambda: client.MaxAvailableComponentSets(GPU_SETS, timeout=10)) != grpc.StatusCode.UNAVAILABLE:
            assert time.monotonic() < deadline, "new calls were still served after stop() began"
            time.sleep(0.01)
        assert not server.ready
        assert not stopping.done() and not in_flight.done(), "stop() returned while a call was in flight"
        slowed.release.set()
        assert in_flight.result().maxReplicas == ANSWER
        stopping.result(timeout=60)


# ---------------------------------------------------------------------------------------
# Drain and limits, the real process

BOOT = """
import os, sys, time
from estimator.estimate import estimate
seconds, marker = float(os.environ["SLOW_SECONDS"]), os.environ["SLOW_MARKER"]
release = os.environ["SLOW_RELEASE"]
real = estimate.Estimator.max_available_replicas
def max_available_replicas(self, query):
    with open(marker, "a") as f:
        f.write("x")
    waited = 0.0
    while not os.path.exists(release) and waited < seconds:  # held until the test releases it
        time.sleep(0.01)
        waited += 0.01
    return real(self, query)
estimate.Estimator.max_available_replicas = max_available_replicas
from estimator.__main__ import main
sys.exit(main(sys.argv[1:]))
"""


class SlowProcess:
    """The estimator with MaxAvailableReplicas held until release() (at most `slow_seconds`)."""

    def __init__(self, tmp_path: Path, slow_seconds: float, *flags: str):
        self.port, self.probe_port = free_port(), free_port()
        self.marker, self.released = tmp_path / "inside", tmp_path / "release"
        env = dict(os.environ, SLOW_SECONDS=str(slow_seconds), SLOW_MARKER=str(self.marker),
                   SLOW_RELEASE=str(self.released))
        self.process = subprocess.Popen(
            [sys.executable, "-c", BOOT, "--cluster-name", "member-a", "--objects", str(DEMO / "member-a.yaml"),
             "--server-port", str(self.port), "--server-bind-address", "127.0.0.1",
             "--health-probe-bind-address", f"127.0.0.1:{self.probe_port}", "--metrics-bind-address", "0", *flags],
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )
        self.channel = grpc.insecure_channel(f"127.0.0.1:{self.port}")
        self.stub = __import__("estimator.pb.service_pb2_grpc", fromlist=["x"]).EstimatorStub(self.channel)
        deadline = time.monotonic() + 120
        while not self._serving():
            assert self.process.poll() is None, self.process.communicate()[1]
            assert time.monotonic() < deadline, "never became ready"
            time.sleep(0.1)

    def _serving(self) -> bool:
        try:
            reply = health_pb2_grpc.HealthStub(self.channel).Check(health_pb2.HealthCheckRequest(), timeout=0.5)
        except grpc.RpcError:
            return False
        return reply.status == health_pb2.HealthCheckResponse.SERVING

    def release(self) -> None:
        self.released.touch()

    def wait_inside(self, calls: int = 1, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while not (self.marker.exists() and len(self.marker.read_text()) >= calls):
            assert time.monotonic() < deadline, "the slow call never reached the estimator"
            time.sleep(0.01)

    def readyz(self) -> int:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.probe_port}/readyz", timeout=2) as reply:
                return reply.status
        except urllib.error.HTTPError as error:
            return error.code

    def close(self) -> None:
        self.release()
        self.channel.close()
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()


def test_sigterm_drains_the_in_flight_call_refuses_new_ones_and_exits_0(tmp_path):
    # The grace period is far longer than any wait below: exiting proves the drain ended
    # with the call, not with the grace period.
    est = SlowProcess(tmp_path, 120.0, "--shutdown-grace-period", "600")
    try:
        assert est.readyz() == 200
        with ThreadPoolExecutor(1) as pool:
            in_flight = pool.submit(est.stub.MaxAvailableReplicas, GPU_REPLICAS, timeout=120)
            est.wait_inside()
            est.process.send_signal(signal.SIGTERM)
            deadline = time.monotonic() + 60  # a hang guard; the call is held all along
            while code_of(lambda: est.stub.MaxAvailableComponentSets(GPU_SETS, timeout=5)) == grpc.StatusCode.OK:
                assert time.monotonic() < deadline, "new calls were still served after SIGTERM"
                time.sleep(0.05)
            assert not in_flight.done(), "the in-flight call ended before it was released"
            assert est.readyz() == 503  # out of the Service while draining
            est.release()
            assert in_flight.result().maxReplicas == ANSWER
        assert est.process.wait(60) == 0
    finally:
        est.close()


def test_a_call_longer_than_the_grace_period_is_cut_off_and_the_process_exits_0(tmp_path):
    # The call is held until after the client has its answer: only the grace period can end
    # it. Without the cut-off the client would see DEADLINE_EXCEEDED after its own 60 s.
    est = SlowProcess(tmp_path, 300.0, "--shutdown-grace-period", "1")
    try:
        with ThreadPoolExecutor(1) as pool:
            in_flight = pool.submit(lambda: code_of(lambda: est.stub.MaxAvailableReplicas(GPU_REPLICAS, timeout=60)))
            est.wait_inside()
            est.process.send_signal(signal.SIGTERM)
            assert in_flight.result() in (grpc.StatusCode.CANCELLED, grpc.StatusCode.UNAVAILABLE)
        # The worker thread cannot be interrupted: the process ends once its work is over.
        est.release()
        assert est.process.wait(60) == 0
    finally:
        est.close()


def test_the_process_refuses_calls_beyond_its_max_concurrent_requests(tmp_path):
    est = SlowProcess(tmp_path, 120.0, "--max-concurrent-requests", "1")
    try:
        with ThreadPoolExecutor(1) as pool:
            in_flight = pool.submit(est.stub.MaxAvailableReplicas, GPU_REPLICAS, timeout=120)
            est.wait_inside()
            assert code_of(lambda: est.stub.MaxAvailableComponentSets(GPU_SETS, timeout=10)) == \
                grpc.StatusCode.RESOURCE_EXHAUSTED
            assert not in_flight.done()
            est.release()
            assert in_flight.result().maxReplicas == ANSWER
        assert est.stub.MaxAvailableComponentSets(GPU_SETS, timeout=5).maxSets == ANSWER
        est.process.send_signal(signal.SIGTERM)
        assert est.process.wait(15) == 0
    finally:
        est.close()
