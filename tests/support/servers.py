"""In-process estimator servers over real loopback gRPC, for tests."""

from __future__ import annotations

from pathlib import Path

import grpc

from estimator.cluster.filestate import FileClusterState
from estimator.pb import k8s_resource_pb2, service_pb2_grpc
from estimator.service.server import EstimatorServer, ServerConfig

REPO = Path(__file__).resolve().parents[2]
DEMO = REPO / "deploy" / "demo"
WIRE_VECTORS = REPO / "tests" / "support" / "data" / "wire-vectors"


def start_server(member: str, snapshots=None, packing: str = "best", **config) -> EstimatorServer:
    paths = snapshots or [DEMO / f"{member}.yaml"]
    server = EstimatorServer(
        ServerConfig(
            cluster_name=member,
            server_port=0,
            server_bind_address="127.0.0.1",
            health_probe_bind_address="127.0.0.1:0",
            metrics_bind_address="127.0.0.1:0",
            packing=packing,
            shutdown_grace_seconds=1.0,
            **config,
        ),
        FileClusterState(paths),
    )
    server.start()
    assert server.wait_ready(180), "estimator did not become ready"
    return server


def stub(server: EstimatorServer) -> service_pb2_grpc.EstimatorStub:
    return service_pb2_grpc.EstimatorStub(grpc.insecure_channel(f"127.0.0.1:{server.port}"))


def quantity(text: str) -> bytes:
    return k8s_resource_pb2.Quantity(string=text).SerializeToString()
