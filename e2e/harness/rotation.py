"""The serving certificate rotated under load, through Karmada's own client (estclient).

One of our estimators serves a small member from a file over mutual TLS (the options
Karmada's client uses: its CA, a client certificate). For ~15 s, two loops run estclient
back to back (each run a new connection and handshake, then `REPEAT` rounds of the calls)
and a third calls over gRPC Python with a new channel per call; meanwhile the serving
certificate and key are replaced twice, as cert-manager renews them: new files written
beside the old and renamed into place, the certificate first and the key 0.3 s later (a
half-replaced pair in between). After each rotation a TLS handshake must show the new
certificate within 5 s. Every call must succeed with the answer the estimator gave before
the rotations (the member does not change).

    run(bin_dir, work, versions, log) -> (failed calls, total calls)

The counts are estclient's (a rotation whose certificate is never served counts as one
failed call); without the estclient binary, the gRPC Python loop's, logged as such.
A failed round of a repeated estclient call is counted from the run's differing rounds, so
a failure never goes unseen (a first round that fails counts every round that differs from
it as failed too).
"""

from __future__ import annotations

import json
import os
import socket
import ssl
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Callable

import grpc
from cryptography import x509

from e2e.harness import pki
from e2e.harness.estimators import CLUSTER, Running
from estimator.pb import estimator_pb2 as pb
from estimator.pb import k8s_resource_pb2, service_pb2_grpc
from scheduler_client.launch import free_port
from tests.support.builders import node

SECONDS = 15.0
ROTATE_AT = (4.0, 9.0)  # seconds into the load
REPEAT = 20
SERVER_NAMES = ("127.0.0.1", "localhost")


def _member(path: Path) -> Path:
    nodes = [node(f"rot-{i}").cpu(32).memory("128Gi").gpu(4 if i % 2 else 8).zone(f"z{i % 3}").build()
             for i in range(12)]
    staged = path.with_suffix(".tmp")
    staged.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": nodes}))
    os.replace(staged, path)
    return path


def _calls() -> list[dict]:
    worker = {"resourceRequest": {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": "2"}}
    return [
        {"id": "sets", "method": "MaxAvailableComponentSets", "clusters": [CLUSTER], "namespace": "ml-team",
         "components": [{"name": "master", "replicas": 1, "replicaRequirements": {"resourceRequest": {"cpu": "1"}}},
                        {"name": "worker", "replicas": 2, "replicaRequirements": worker}]},
        {"id": "replicas", "method": "MaxAvailableReplicas", "clusters": [CLUSTER],
         "replicaRequirements": {"resourceRequest": {"nvidia.com/gpu": "1"}}},
    ]


def _python_request() -> pb.MaxAvailableReplicasRequest:
    return pb.MaxAvailableReplicasRequest(cluster=CLUSTER, replicaRequirements=pb.ReplicaRequirements(
        resourceRequestBytes={"nvidia.com/gpu": k8s_resource_pb2.Quantity(string="1").SerializeToString()}))


def _served_serial(port: int, ca: Path, client: tuple[Path, Path]) -> int:
    """The serial number of the certificate a new TLS 1.3 handshake gets."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.load_verify_locations(cafile=str(ca))
    context.load_cert_chain(str(client[0]), str(client[1]))
    context.minimum_version = ssl.TLSVersion.TLSv1_3
    context.set_alpn_protocols(["h2"])
    with socket.create_connection(("127.0.0.1", port), timeout=5) as raw, \
            context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
        return x509.load_der_x509_certificate(tls.getpeercert(binary_form=True)).serial_number


def _rename_into_place(source: Path, target: Path) -> None:
    staged = target.with_name(f".{target.name}.new")
    staged.write_bytes(source.read_bytes())
    os.replace(staged, target)


class _Tally:
    def __init__(self) -> None:
        self.calls = self.failed = 0
        self.lock = threading.Lock()
        self.examples: list[str] = []

    def add(self, calls: int, failed: int, example: str = "") -> None:
        with self.lock:
            self.calls += calls
            self.failed += failed
            if example and len(self.examples) < 5:
                self.examples.append(example)


def _estclient_loop(binary: Path, address: str, tls: dict, expected: dict, stop: threading.Event,
                    tally: _Tally) -> None:
    calls = _calls()
    while not stop.is_set():
        request = {"estimators": {CLUSTER: {"address": address}}, "tls": tls, "timeout": "10s", "repeat": REPEAT,
                   "calls": calls}
        try:
            report = _estclient(binary, request)
        except Exception as error:  # noqa: BLE001 - a run that cannot report fails all its calls
            tally.add(len(calls) * REPEAT, len(calls) * REPEAT, f"estclient: {error}")
            continue
        connection = report.get("connections", {}).get(CLUSTER, {})
        for result in report.get("results", []):
            answers = result.get("clusters") or [{}]
            first_ok = (not result.get("error") and not answers[0].get("error")
                        and answers[0].get("value") == expected[result.get("id")] and connection.get("connected"))
            failed = int(result.get("differingRunCount", 0)) + (0 if first_ok else 1)
            example = "" if not failed else (f"{result.get('id')}: {answers[0]} {result.get('error', '')} "
                                             f"{connection.get('error', '')} {result.get('differingRuns', [])[:1]}")
            tally.add(REPEAT, min(failed, REPEAT), example)


def _estclient(binary: Path, request: dict) -> dict:
    """One estclient run (client.run_estclient, with `repeat` rounds)."""
    done = subprocess.run([str(binary)], input=json.dumps(request).encode(), capture_output=True, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"exited {done.returncode}: {done.stderr.decode(errors='replace')[-500:]}")
    return json.loads(done.stdout)


def _python_loop(port: int, credentials: grpc.ChannelCredentials, expected: int, stop: threading.Event,
                 tally: _Tally) -> None:
    request = _python_request()
    while not stop.is_set():
        channel = grpc.secure_channel(f"127.0.0.1:{port}", credentials)  # a new handshake each call
        try:
            got = service_pb2_grpc.EstimatorStub(channel).MaxAvailableReplicas(request, timeout=10).maxReplicas
            tally.add(1, int(got != expected), "" if got == expected else f"python: {got} != {expected}")
        except grpc.RpcError as error:
            tally.add(1, 1, f"python: {error.code()} {error.details()}")
        finally:
            channel.close()


def _wait_serving(est: Running, timeout: float = 180.0) -> None:
    """Until estimates are answered (Running's wait takes /healthz too, which is up before)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            est.stub.MaxAvailableReplicas(_python_request(), timeout=5)
            return
        except grpc.RpcError as error:
            if error.code() != grpc.StatusCode.UNAVAILABLE or time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def run(bin_dir: Path, work: Path, versions: dict, log: Callable[[str], None]) -> tuple[int, int]:
    """Rotate the serving certificate twice under load; (failed calls, total calls)."""
    work = Path(work) / "rotation"
    work.mkdir(parents=True, exist_ok=True)
    ca = pki.CA(work, "rotation-ca")
    client_cert, client_key = ca.issue("rotation-client", "karmada-scheduler", client=True)
    serving = work / "serving"
    serving.mkdir(exist_ok=True)
    cert_file, key_file = serving / "tls.crt", serving / "tls.key"
    cert, key = ca.issue("serving-0", "karmada-scheduler-estimator", server_names=SERVER_NAMES)
    _rename_into_place(cert, cert_file)
    _rename_into_place(key, key_file)
    member = _member(work / "member.json")
    credentials = grpc.ssl_channel_credentials(ca.cert_path.read_bytes(), client_key.read_bytes(),
                                               client_cert.read_bytes())
    port, health = free_port(), free_port()
    est = Running("ours-rotation", [sys.executable, "-m", "estimator", "--cluster-name", CLUSTER,
                                    "--objects", member, "--objects-cache", "off", "--server-port", port,
                                    "--server-bind-address", "127.0.0.1",
                                    "--health-probe-bind-address", f"127.0.0.1:{health}",
                                    "--metrics-bind-address", "0", "--packing", "first-fit",
                                    "--grpc-auth-cert-file", cert_file, "--grpc-auth-key-file", key_file,
                                    "--grpc-client-ca-file", ca.cert_path], work, port, health, credentials)
    estclient = Path(bin_dir) / f"estclient-{versions['KARMADA_VERSION']}"
    tls = {"caFile": str(ca.cert_path), "certFile": str(client_cert), "keyFile": str(client_key)}
    through_karmada, through_python = _Tally(), _Tally()
    stop = threading.Event()
    try:
        est.start()
        _wait_serving(est)
        expected = {"sets": est.stub.MaxAvailableComponentSets(pb.MaxAvailableComponentSetsRequest(
            cluster=CLUSTER, namespace="ml-team", components=[
                pb.Component(name="master", replicas=1, replicaRequirements=pb.ComponentReplicaRequirements(
                    resourceRequestBytes={"cpu": k8s_resource_pb2.Quantity(string="1").SerializeToString()})),
                pb.Component(name="worker", replicas=2, replicaRequirements=pb.ComponentReplicaRequirements(
                    resourceRequestBytes={name: k8s_resource_pb2.Quantity(string=q).SerializeToString()
                                          for name, q in (("cpu", "4"), ("memory", "16Gi"),
                                                          ("nvidia.com/gpu", "2"))}))]), timeout=10).maxSets,
            "replicas": est.stub.MaxAvailableReplicas(_python_request(), timeout=10).maxReplicas}
        loops = [threading.Thread(target=_python_loop, args=(port, credentials, expected["replicas"], stop,
                                                             through_python), daemon=True)]
        if estclient.exists():
            loops += [threading.Thread(target=_estclient_loop, args=(estclient, f"127.0.0.1:{port}", tls, expected,
                                                                     stop, through_karmada), daemon=True)
                      for _ in range(2)]
        else:
            log(f"e2e: rotation: {estclient} missing: counting gRPC Python calls only")
        started = time.monotonic()
        for loop in loops:
            loop.start()
        unserved = 0
        for i, at in enumerate(ROTATE_AT, start=1):
            time.sleep(max(0.0, started + at - time.monotonic()))
            cert, key = ca.issue(f"serving-{i}", "karmada-scheduler-estimator", server_names=SERVER_NAMES)
            serial = x509.load_pem_x509_certificate(cert.read_bytes()).serial_number
            _rename_into_place(cert, cert_file)
            time.sleep(0.3)
            _rename_into_place(key, key_file)
            deadline = time.monotonic() + 5
            while _served_serial(port, ca.cert_path, (client_cert, client_key)) != serial:
                if time.monotonic() > deadline:
                    unserved += 1
                    log(f"e2e: rotation {i}: the new certificate was not served within 5 s")
                    break
                time.sleep(0.1)
        time.sleep(max(0.0, started + SECONDS - time.monotonic()))
        stop.set()
        for loop in loops:
            loop.join(150)
        if not est.proc.alive():
            raise RuntimeError("our estimator died during the rotations")
    finally:
        stop.set()
        est.stop()
    counted = through_karmada if estclient.exists() else through_python
    failed, total = counted.failed + unserved, counted.calls + len(ROTATE_AT)
    log(f"e2e: rotation: serving certificate replaced {len(ROTATE_AT)} times under load: "
        f"Karmada's client {through_karmada.failed}/{through_karmada.calls} calls failed, "
        f"gRPC Python (a handshake per call) {through_python.failed}/{through_python.calls}, "
        f"{len(ROTATE_AT) - unserved}/{len(ROTATE_AT)} new certificates served"
        + "".join(f"; e.g. {example}" for example in (through_karmada.examples + through_python.examples)[:4]))
    return failed, total
