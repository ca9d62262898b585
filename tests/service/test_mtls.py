"""gRPC TLS as Karmada's estimator defines it, with throwaway CAs (the `cryptography` package).

--grpc-auth-cert-file/--grpc-auth-key-file turn TLS on; --grpc-client-ca-file makes
client certificates required and verified; --insecure-skip-grpc-client-verify stops
asking for them. Every refusal must be UNAVAILABLE within the call's deadline, never a hang
(DEADLINE_EXCEEDED); how long it takes is not asserted.
"""

from __future__ import annotations

import datetime
import ipaddress
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
from grpc_health.v1 import health_pb2, health_pb2_grpc

from estimator.pb import estimator_pb2 as pb
from estimator.pb import service_pb2_grpc
from scheduler_client.launch import free_port
from tests.support.servers import DEMO, quantity, start_server

# The name karmada-scheduler dials (pkg/estimator/client/service.go), as a SAN.
SERVER_NAME = "karmada-scheduler-estimator-member-a.karmada-system.svc.cluster.local"
FAST = 5.0  # seconds: every call's deadline; a refusal is UNAVAILABLE, a hang DEADLINE_EXCEEDED


# ---------------------------------------------------------------------------------------
# A throwaway PKI


def _pem_key(key) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


@dataclass
class Issued:
    key: bytes
    cert: bytes


class CA:
    def __init__(self, name: str):
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
        now = datetime.datetime.now(datetime.timezone.utc)
        self.cert = (
            x509.CertificateBuilder().subject_name(self.name).issuer_name(self.name)
            .public_key(self.key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True, crl_sign=True,
                                         content_commitment=False, key_encipherment=False, data_encipherment=False,
                                         key_agreement=False, encipher_only=False, decipher_only=False), critical=True)
            .sign(self.key, hashes.SHA256())
        )

    @property
    def pem(self) -> bytes:
        return self.cert.public_bytes(serialization.Encoding.PEM)

    def issue(self, common_name: str, *, server: bool, expired: bool = False) -> Issued:
        key = ec.generate_private_key(ec.SECP256R1())
        now = datetime.datetime.now(datetime.timezone.utc)
        start, end = ((now - datetime.timedelta(days=2), now - datetime.timedelta(days=1)) if expired
                      else (now - datetime.timedelta(hours=1), now + datetime.timedelta(days=1)))
        usage = ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)]))
            .issuer_name(self.name).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(start).not_valid_after(end)
            .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
        )
        if server:
            builder = builder.add_extension(x509.SubjectAlternativeName([
                x509.DNSName(SERVER_NAME), x509.DNSName("localhost"),
                x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
            ]), critical=False)
        cert = builder.sign(self.key, hashes.SHA256())
        return Issued(_pem_key(key), cert.public_bytes(serialization.Encoding.PEM))


@dataclass
class PKI:
    ca: CA
    other_ca: CA
    dir: Path

    def write(self, name: str, content: bytes) -> str:
        path = self.dir / name
        path.write_bytes(content)
        return str(path)

    def server_files(self, client_ca: bool = True) -> dict:
        server = self.ca.issue("karmada-scheduler-estimator", server=True)
        files = {"grpc_auth_cert_file": self.write("tls.crt", server.cert),
                 "grpc_auth_key_file": self.write("tls.key", server.key)}
        if client_ca:
            files["grpc_client_ca_file"] = self.write("ca.crt", self.ca.pem)
        return files


@pytest.fixture(scope="module")
def pki(tmp_path_factory) -> PKI:
    return PKI(CA("karmada-test-ca"), CA("someone-else"), tmp_path_factory.mktemp("pki"))


# ---------------------------------------------------------------------------------------
# Clients


def request() -> pb.MaxAvailableReplicasRequest:
    return pb.MaxAvailableReplicasRequest(
        cluster="member-a",
        replicaRequirements=pb.ReplicaRequirements(resourceRequestBytes={"nvidia.com/gpu": quantity("1")}),
    )


def tls_channel(port: int, roots: bytes, client: Issued | None) -> grpc.Channel:
    credentials = grpc.ssl_channel_credentials(
        root_certificates=roots,
        private_key=client.key if client else None,
        certificate_chain=client.cert if client else None,
    )
    return grpc.secure_channel(f"127.0.0.1:{port}", credentials,
                               options=[("grpc.ssl_target_name_override", SERVER_NAME)])


def ask(channel: grpc.Channel) -> int:
    return service_pb2_grpc.EstimatorStub(channel).MaxAvailableReplicas(request(), timeout=FAST).maxReplicas


def assert_refused(channel: grpc.Channel) -> None:
    # UNAVAILABLE, not DEADLINE_EXCEEDED: the handshake was refused, the call did not hang.
    with pytest.raises(grpc.RpcError) as refused:
        ask(channel)
    assert refused.value.code() == grpc.StatusCode.UNAVAILABLE, refused.value


@pytest.fixture(scope="module")
def plaintext_answer():
    server = start_server("member-a")
    try:
        with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
            yield ask(channel)
    finally:
        server.stop(0)


@pytest.fixture(scope="module")
def mutual(pki):
    server = start_server("member-a", **pki.server_files())
    yield server
    server.stop(0)


# ---------------------------------------------------------------------------------------
# Mutual TLS (a client CA, verification on: the production layout)


def test_a_client_with_a_certificate_from_the_ca_is_served(pki, mutual, plaintext_answer):
    client = pki.ca.issue("karmada-scheduler", server=False)
    with tls_channel(mutual.port, pki.ca.pem, client) as channel:
        assert ask(channel) == plaintext_answer == 2  # member-a: one node with 2 GPUs
        health = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=FAST)
        assert health.status == health_pb2.HealthCheckResponse.SERVING


def test_a_client_without_a_certificate_is_refused(pki, mutual):
    with tls_channel(mutual.port, pki.ca.pem, None) as channel:
        assert_refused(channel)


def test_a_client_with_a_certificate_from_another_ca_is_refused(pki, mutual):
    with tls_channel(mutual.port, pki.ca.pem, pki.other_ca.issue("intruder", server=False)) as channel:
        assert_refused(channel)


def test_a_client_with_an_expired_certificate_is_refused(pki, mutual):
    with tls_channel(mutual.port, pki.ca.pem, pki.ca.issue("old", server=False, expired=True)) as channel:
        assert_refused(channel)


def test_plaintext_to_the_tls_port_fails_cleanly(mutual):
    with grpc.insecure_channel(f"127.0.0.1:{mutual.port}") as channel:
        assert_refused(channel)


def test_a_client_that_does_not_trust_the_server_ca_refuses_it(pki, mutual):
    with tls_channel(mutual.port, pki.other_ca.pem, pki.ca.issue("karmada-scheduler", server=False)) as channel:
        assert_refused(channel)


def test_refused_clients_leave_the_server_serving_others(pki, mutual):
    for _ in range(5):
        with grpc.insecure_channel(f"127.0.0.1:{mutual.port}") as channel:
            assert_refused(channel)
    with tls_channel(mutual.port, pki.ca.pem, pki.ca.issue("karmada-scheduler", server=False)) as channel:
        assert ask(channel) == 2


# ---------------------------------------------------------------------------------------
# The other two modes


def test_insecure_skip_client_verify_serves_clients_without_or_with_foreign_certificates(pki):
    server = start_server("member-a", insecure_skip_grpc_client_verify=True, **pki.server_files())
    try:
        with tls_channel(server.port, pki.ca.pem, None) as channel:
            assert ask(channel) == 2
        with tls_channel(server.port, pki.ca.pem, pki.other_ca.issue("anyone", server=False)) as channel:
            assert ask(channel) == 2
        with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
            assert_refused(channel)  # still TLS
    finally:
        server.stop(0)


def test_server_tls_without_a_client_ca_serves_any_tls_client_and_refuses_plaintext(pki):
    server = start_server("member-a", **pki.server_files(client_ca=False))
    try:
        with tls_channel(server.port, pki.ca.pem, None) as channel:
            assert ask(channel) == 2
        with grpc.insecure_channel(f"127.0.0.1:{server.port}") as channel:
            assert_refused(channel)
    finally:
        server.stop(0)


# ---------------------------------------------------------------------------------------
# The real process: Karmada's flags, start-up errors


def estimator_process(*flags: str) -> tuple[subprocess.Popen, int]:
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "estimator", "--cluster-name", "member-a", "--objects", str(DEMO / "member-a.yaml"),
         "--server-port", str(port), "--server-bind-address", "127.0.0.1", "--health-probe-bind-address", "0",
         "--metrics-bind-address", "0", *flags],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    return process, port


def test_the_process_serves_mutual_tls_from_karmadas_flags(pki):
    files = pki.server_files()
    process, port = estimator_process(
        f"--grpc-auth-cert-file={files['grpc_auth_cert_file']}", f"--grpc-auth-key-file={files['grpc_auth_key_file']}",
        f"--grpc-client-ca-file={files['grpc_client_ca_file']}",
    )
    try:
        client = pki.ca.issue("karmada-scheduler", server=False)
        deadline = time.monotonic() + 120
        while True:
            assert process.poll() is None, process.communicate()[1]
            with tls_channel(port, pki.ca.pem, client) as channel:
                try:
                    reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=1)
                    if reply.status == health_pb2.HealthCheckResponse.SERVING:
                        assert ask(channel) == 2
                        break
                except grpc.RpcError:
                    pass
            assert time.monotonic() < deadline, "never served over mutual TLS"
            time.sleep(0.2)
        with tls_channel(port, pki.ca.pem, None) as channel:
            assert_refused(channel)
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            assert_refused(channel)
    finally:
        process.terminate()
        assert process.wait(30) == 0


@pytest.mark.parametrize(
    "files,flag",
    [
        (lambda p, f: [f"--grpc-auth-cert-file={f['grpc_auth_cert_file']}",
                       f"--grpc-auth-key-file={p.write('wrong.key', p.ca.issue('x', server=True).key)}"],
         "--grpc-auth-key-file"),
        (lambda p, f: [f"--grpc-auth-cert-file={p.write('garbage.crt', b'not a certificate')}",
                       f"--grpc-auth-key-file={f['grpc_auth_key_file']}"], "--grpc-auth-cert-file"),
        (lambda p, f: [f"--grpc-auth-cert-file={f['grpc_auth_cert_file']}",
                       f"--grpc-auth-key-file={f['grpc_auth_key_file']}",
                       f"--grpc-client-ca-file={p.write('garbage-ca.crt', b'not a CA')}"], "--grpc-client-ca-file"),
        (lambda p, f: [f"--grpc-auth-cert-file={p.dir / 'missing.crt'}",
                       f"--grpc-auth-key-file={f['grpc_auth_key_file']}"], "missing.crt"),
    ],
    ids=["a key that does not match the certificate", "a file that is not a certificate",
         "a CA file without a certificate", "a missing file"],
)
def test_unusable_tls_files_stop_start_up_naming_the_flag(pki, files, flag):
    process, _ = estimator_process(*files(pki, pki.server_files()))
    try:
        _, stderr = process.communicate(timeout=60)
    finally:
        process.kill()
    assert process.returncode == 1
    assert flag in stderr and "Failed to bind" not in stderr


def test_known_deviation_tls_1_2_clients_are_accepted_where_karmada_requires_1_3(pki, mutual):
    """gRPC Python has no minimum-TLS-version setting; Karmada's Go server sets TLS 1.3."""
    import socket
    import ssl

    context = ssl.create_default_context(cadata=pki.ca.pem.decode())
    context.maximum_version = ssl.TLSVersion.TLSv1_2
    context.set_alpn_protocols(["h2"])
    issued = pki.ca.issue("karmada-scheduler", server=False)
    context.load_cert_chain(pki.write("c12.crt", issued.cert), pki.write("c12.key", issued.key))
    with socket.create_connection(("127.0.0.1", mutual.port), timeout=FAST) as raw:
        with context.wrap_socket(raw, server_hostname=SERVER_NAME) as tls:
            assert tls.version() == "TLSv1.2"
