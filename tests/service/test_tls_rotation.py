"""TLS as Karmada's estimator server has it, and a serving certificate that rotates.

- TLS 1.3 at least (pkg/util/grpcconnection: MinVersion tls.VersionTLS13): a TLS 1.2
  client's handshake fails, a TLS 1.3 client's succeeds (service.tlsfloor).
- The certificate and key are re-read when their files change, as cert-manager rotates them
  (service.certfiles): new connections get the new pair, connections and calls under way go
  on, no call fails during the swap, and a half-replaced pair (the certificate renamed into
  place before the key) keeps the previous pair serving.
"""

from __future__ import annotations

import os
import socket
import ssl
import subprocess
import sys
import threading
import time
from pathlib import Path

import grpc
import pytest

from e2e.harness import pki
from estimator.pb import estimator_pb2 as pb
from estimator.pb import service_pb2_grpc
from estimator.service import server as server_module
from scheduler_client.launch import free_port
from tests.support.servers import DEMO, REPO, quantity, start_server

CLUSTER = "member-a"
GPU_SETS = pb.MaxAvailableComponentSetsRequest(cluster=CLUSTER, namespace="ml-team", components=[
    pb.Component(name="worker", replicas=1, replicaRequirements=pb.ComponentReplicaRequirements(
        resourceRequestBytes={"nvidia.com/gpu": quantity("1")}))])


def handshake(port: int, version: ssl.TLSVersion) -> str:
    """The TLS version a handshake at exactly `version` agrees, or raises."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    context.minimum_version = context.maximum_version = version
    context.set_alpn_protocols(["h2"])
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw, context.wrap_socket(raw) as tls:
        return tls.version()


def test_a_tls_1_2_handshake_fails_and_a_tls_1_3_one_succeeds(tmp_path):
    ca = pki.CA(tmp_path, "ca")
    cert, key = ca.issue("server", "karmada-scheduler-estimator", server_names=("127.0.0.1", "localhost"))
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "estimator", "--cluster-name", CLUSTER, "--objects", str(DEMO / "member-a.yaml"),
         "--server-port", str(port), "--server-bind-address", "127.0.0.1", "--health-probe-bind-address", "0",
         "--metrics-bind-address", "0", "--grpc-auth-cert-file", str(cert), "--grpc-auth-key-file", str(key)],
        cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(REPO)})
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                assert handshake(port, ssl.TLSVersion.TLSv1_3) == "TLSv1.3"
                break
            except OSError:
                if time.monotonic() > deadline or process.poll() is not None:
                    raise
                time.sleep(0.2)
        with pytest.raises(ssl.SSLError):
            handshake(port, ssl.TLSVersion.TLSv1_2)
    finally:
        process.terminate()
        process.wait(30)


class FakeContext:
    def __init__(self, version: bytes):
        self.version, self.aborted = version, None

    def auth_context(self):
        return {"ssl_tls_version": [self.version]}

    def abort(self, code, details):
        self.aborted = (code, details)
        raise RuntimeError("aborted")


def test_where_the_transport_could_not_be_pinned_calls_over_tls_1_2_are_refused():
    behavior = server_module._tls13_only(lambda request, context: "answered")
    assert behavior(None, FakeContext(b"TLSv1.3")) == "answered"
    refused = FakeContext(b"TLSv1.2")
    with pytest.raises(RuntimeError):
        behavior(None, refused)
    assert refused.aborted[0] == grpc.StatusCode.UNAVAILABLE and "TLS 1.3 is required" in refused.aborted[1]


# ---------------------------------------------------------------------------------------
# Rotation


def channel_trusting(port: int, *cas: pki.CA) -> grpc.Channel:
    roots = b"".join(ca.cert_path.read_bytes() for ca in cas)
    return grpc.secure_channel(f"127.0.0.1:{port}", grpc.ssl_channel_credentials(roots))


def ask(channel: grpc.Channel) -> int:
    return service_pb2_grpc.EstimatorStub(channel).MaxAvailableComponentSets(GPU_SETS, timeout=10).maxSets


def renamed_into_place(source: Path, target: Path) -> None:
    staged = target.with_name(f".{target.name}.new")
    staged.write_bytes(source.read_bytes())
    os.replace(staged, target)


def test_a_rotated_certificate_is_served_to_new_connections_and_no_call_fails(tmp_path):
    first, second = pki.CA(tmp_path, "first-ca"), pki.CA(tmp_path, "second-ca")
    serving = tmp_path / "serving"
    serving.mkdir()
    cert_file, key_file = serving / "tls.crt", serving / "tls.key"
    cert, key = first.issue("one", "karmada-scheduler-estimator", server_names=("127.0.0.1",))
    renamed_into_place(cert, cert_file)
    renamed_into_place(key, key_file)
    server = start_server(CLUSTER, grpc_auth_cert_file=str(cert_file), grpc_auth_key_file=str(key_file))
    port = server.port
    open_channel = channel_trusting(port, first)
    assert ask(open_channel) == 2
    failures, calls, stop = [], [0], threading.Event()

    def keep_calling():
        while not stop.is_set():
            for fresh in (False, True):  # on the open connection, and over a new handshake
                channel = channel_trusting(port, first, second) if fresh else open_channel
                try:
                    ask(channel)
                except grpc.RpcError as error:
                    failures.append(f"{'new' if fresh else 'open'} connection: {error.code()} {error.details()}")
                finally:
                    calls[0] += 1
                    if fresh:
                        channel.close()

    callers = [threading.Thread(target=keep_calling) for _ in range(2)]
    for caller in callers:
        caller.start()
    try:
        time.sleep(0.5)
        cert, key = second.issue("two", "karmada-scheduler-estimator", server_names=("127.0.0.1",))
        renamed_into_place(cert, cert_file)  # the certificate first: until the key follows, the pair is broken
        time.sleep(0.5)
        renamed_into_place(key, key_file)
        deadline = time.monotonic() + 10
        while True:
            only_second = channel_trusting(port, second)
            try:
                assert ask(only_second) == 2
                break
            except grpc.RpcError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)
            finally:
                only_second.close()
        time.sleep(0.5)
    finally:
        stop.set()
        for caller in callers:
            caller.join(30)
    try:
        assert calls[0] > 20 and failures == []
        only_first = channel_trusting(port, first)
        with pytest.raises(grpc.RpcError):
            ask(only_first)  # new connections get the new certificate only
        only_first.close()
        assert ask(open_channel) == 2  # the connection opened before the rotation still serves
    finally:
        server.stop(0)
