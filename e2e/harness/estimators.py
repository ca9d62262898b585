"""The estimators under comparison, as separate processes against the same apiserver."""

from __future__ import annotations

import sys
import urllib.request
from dataclasses import dataclass
from pathlib import Path

import grpc

from estimator.core import model
from estimator.pb import service_pb2_grpc
from e2e.harness.procs import Proc, wait_for
from scheduler_client import wire
from scheduler_client.launch import free_port

REPO = Path(__file__).resolve().parents[2]
CLUSTER = "member-e2e"


@dataclass
class Answer:
    value: int | None
    error: str = ""

    def __str__(self) -> str:
        return str(self.value) if self.error == "" else f"error({self.error})"


class Running:
    """One estimator process and a gRPC stub to it."""

    def __init__(self, name: str, argv: list, work: Path, port: int, health_port: int,
                 credentials: grpc.ChannelCredentials | None = None):
        self.name, self.port, self.health_port = name, port, health_port
        self.credentials = credentials
        self.proc = Proc(name, argv, work)
        self.channel: grpc.Channel | None = None
        self.stub: service_pb2_grpc.EstimatorStub | None = None

    def start(self, timeout: float = 240) -> "Running":
        return self.launch().wait_ready(timeout)

    def launch(self) -> "Running":
        """Start the process without waiting, so several can load at once."""
        self.proc.start()
        return self

    def wait_ready(self, timeout: float = 240) -> "Running":
        wait_for(f"{self.name} ready", self._ready, timeout, self.proc, every=0.3)
        target = f"127.0.0.1:{self.port}"
        self.channel = (grpc.secure_channel(target, self.credentials) if self.credentials
                        else grpc.insecure_channel(target))
        self.stub = service_pb2_grpc.EstimatorStub(self.channel)
        return self

    def _ready(self) -> bool:
        for path in ("/readyz", "/healthz"):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.health_port}{path}", timeout=2) as response:
                    if response.status == 200:
                        return True
            except Exception:
                continue
        return False

    def stop(self) -> None:
        if self.channel is not None:
            self.channel.close()
        self.proc.stop()

    def _call(self, method: str, request, timeout: float) -> Answer:
        try:
            response = getattr(self.stub, method)(request, timeout=timeout)
        except grpc.RpcError as error:
            return Answer(None, f"{error.code().name}: {error.details()}")
        field = {"MaxAvailableReplicas": "maxReplicas", "MaxAvailableComponentSets": "maxSets",
                 "GetUnschedulableReplicas": "unschedulableReplicas"}[method]
        return Answer(int(getattr(response, field)))

    def sets(self, query: model.ComponentSetsQuery, timeout: float = 30) -> Answer:
        return self._call("MaxAvailableComponentSets", wire.component_sets_request(CLUSTER, query), timeout)

    def replicas(self, query: model.ReplicasQuery, timeout: float = 30) -> Answer:
        return self._call("MaxAvailableReplicas", wire.replicas_request(CLUSTER, query), timeout)

    def unschedulable(self, ref: model.WorkloadRef, timeout: float = 30) -> Answer:
        return self._call("GetUnschedulableReplicas", wire.unschedulable_request(CLUSTER, ref), timeout)


def ours(kubeconfig: Path, work: Path, packing: str, extra: list | None = None, name: str = "",
         credentials: grpc.ChannelCredentials | None = None) -> Running:
    port, health, metrics = free_port(), free_port(), free_port()
    exe = Path(sys.executable).parent / "karmada-estimator"
    argv = [exe, "--kubeconfig", kubeconfig, "--cluster-name", CLUSTER, "--server-port", port,
            "--server-bind-address", "127.0.0.1", "--health-probe-bind-address", f"127.0.0.1:{health}",
            "--metrics-bind-address", f"127.0.0.1:{metrics}", "--packing", packing, "--kube-api-qps", "500",
            "--kube-api-burst", "1000", *(extra or [])]
    return Running(name or f"ours-{packing}", argv, work, port, health, credentials)


def karmadas(binary: Path, kubeconfig: Path, work: Path, extra: list | None = None, name: str = "karmada") -> Running:
    port, health, metrics = free_port(), free_port(), free_port()
    # ResourceQuotaEstimate is alpha and off by default; ours always applies quotas.
    argv = [binary, "--kubeconfig", kubeconfig, "--cluster-name", CLUSTER, "--server-port", port,
            "--health-probe-bind-address", f"127.0.0.1:{health}", "--metrics-bind-address", f"127.0.0.1:{metrics}",
            "--feature-gates", "ResourceQuotaEstimate=true", "--kube-api-qps", "500", "--kube-api-burst", "1000",
            *(extra or [])]
    return Running(name, argv, work, port, health)
