"""Asking accurate estimators over gRPC: one call per member, all under one deadline.

A failure or a timeout is not an answer: it becomes -1 ("this estimator does not know"),
with its reason kept for the explanation. (Karmada's scheduler is harsher: one failing
member makes it drop the accurate estimator's answers for *every* member of that job.)

Connection security follows Karmada's scheduler (grpcconnection.ClientConfig): plaintext
unless a CA file or insecure-skip-verify is given; then TLS, with the client certificate
and key for mutual TLS when both are given. An endpoint's `server_name` is the name its
certificate is verified against (and sent as SNI) instead of the host dialled, as grpc's
`grpc.ssl_target_name_override` (grpcurl's -servername): for an estimator dialled through an
IP address or a port-forward whose certificate names its Service. gRPC metadata `object` carries
"kind=<Kind>, name=<namespace>/<name>", as the karmada-scheduler sends it.
"""

from __future__ import annotations

import socket
import ssl
import tempfile
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import grpc

from estimator.api import AssumedWorkload, ComponentSetsQuery
from estimator.pb import service_pb2_grpc
from scheduler_client.wire import component_sets_request

UNKNOWN = -1
OBJECT_METADATA_KEY = "object"
# The certificate our estimator sends with each component-set answer (Karmada's does not).
BOUND_METADATA_KEY = "x-estimator-bound"
PROVEN_METADATA_KEY = "x-estimator-proven-optimal"
DEFAULT_TIMEOUT_SECONDS = 3.0  # karmada-scheduler --scheduler-estimator-timeout
DEFAULT_PORT = 10352
DEFAULT_SERVICE_PREFIX = "karmada-scheduler-estimator"
DEFAULT_SERVICE_NAMESPACE = "karmada-system"
_MAX_WORKERS = 64
_MAX_REASON = 200


def karmada_service_address(
    member: str,
    namespace: str = DEFAULT_SERVICE_NAMESPACE,
    prefix: str = DEFAULT_SERVICE_PREFIX,
    port: int = DEFAULT_PORT,
) -> str:
    """Where the karmada-scheduler finds a member's estimator: Service <prefix>-<member>."""
    return f"{prefix}-{member}.{namespace}.svc:{port}"


@dataclass(frozen=True)
class ClientTLS:
    """PEM bytes of the client's TLS material (read once, at the edge)."""

    ca: bytes | None = None
    cert: bytes | None = None
    key: bytes | None = None
    insecure_skip_verify: bool = False

    @property
    def secure(self) -> bool:
        return self.ca is not None or self.insecure_skip_verify

    @classmethod
    def from_files(
        cls, ca_file: str = "", cert_file: str = "", key_file: str = "", insecure_skip_verify: bool = False
    ) -> ClientTLS:
        """Raises OSError naming the file that cannot be read."""
        read = lambda path: Path(path).read_bytes() if path else None  # noqa: E731
        return cls(read(ca_file), read(cert_file), read(key_file), insecure_skip_verify)


@dataclass(frozen=True)
class Endpoint:
    member: str
    address: str
    credentials: grpc.ChannelCredentials | None = None  # ready-made credentials win over `tls`
    tls: ClientTLS | None = None
    # TLS: the name the server's certificate must hold, instead of the host of `address`.
    # Not used in plaintext, nor with insecure_skip_verify (that trusts what the server presents).
    server_name: str = ""

    def name_options(self) -> tuple[tuple[str, str], ...]:
        return (("grpc.ssl_target_name_override", self.server_name),) if self.server_name else ()


@dataclass(frozen=True)
class Answer:
    member: str
    value: int  # UNKNOWN when the estimator could not answer
    reason: str = ""
    seconds: float = 0.0
    # The server's certificate: the bound no placement exceeds and whether the answer reaches
    # it; None when the server sent none (Karmada's estimator, or an older one of ours).
    bound: int | None = None
    proven_optimal: bool | None = None

    def certificate(self) -> str:
        """ "4 sets (proven optimal)", "4 sets (at most 5)", or "" without a certificate."""
        if self.value < 0 or self.proven_optimal is None:
            return ""
        sets = f"{self.value} set{'' if self.value == 1 else 's'}"
        if self.proven_optimal:
            return f"{sets} (proven optimal)"
        if self.bound is None:
            return f"{sets} (not proven optimal: no bound known)"
        return f"{sets} (at most {self.bound})"

    @property
    def failed(self) -> bool:
        """An error, not an answer: -1 with a reason (a server's own -1 comes without one)."""
        return self.value == UNKNOWN and bool(self.reason)


def _split_address(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host.strip("[]"), int(port)


def _presented_certificate(address: str, tls: ClientTLS, timeout: float) -> tuple[bytes, str]:
    """The server's certificate (PEM) and a name it holds, without verifying anything.

    gRPC Python cannot skip verification, so --insecure-skip-estimator-verify trusts exactly
    the certificate the server presents, and checks the host name against that certificate.
    """
    host, port = _split_address(address)
    probe = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    probe.check_hostname, probe.verify_mode = False, ssl.CERT_NONE
    if tls.cert and tls.key:
        _load_client_pair(probe, tls.cert, tls.key)
    with socket.create_connection((host, port), timeout=timeout) as raw, probe.wrap_socket(raw) as conn:
        der = conn.getpeercert(binary_form=True)
    assert der is not None  # a TLS server presents a certificate (no anonymous suites are offered)
    pem = ssl.DER_cert_to_PEM_cert(der)
    reader = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    reader.check_hostname = False
    reader.verify_flags |= ssl.VERIFY_X509_PARTIAL_CHAIN
    reader.load_verify_locations(cadata=pem)
    if tls.cert and tls.key:
        _load_client_pair(reader, tls.cert, tls.key)
    with socket.create_connection((host, port), timeout=timeout) as raw, reader.wrap_socket(raw) as conn:
        details: dict[str, Any] | None = conn.getpeercert()
    assert details is not None  # the handshake verified it, so there is one
    names = [value for kind, value in details.get("subjectAltName", ()) if kind == "DNS"]
    names += [value for kind, value in details.get("subjectAltName", ()) if kind == "IP Address"]
    names += [value for rdn in details.get("subject", ()) for key, value in rdn if key == "commonName"]
    return pem.encode(), (names[0] if names else host)


def _load_client_pair(context: ssl.SSLContext, cert: bytes, key: bytes) -> None:
    # ssl wants files; the PEM came from files, so a private temporary copy is enough.
    with tempfile.NamedTemporaryFile("wb", suffix=".pem") as pair:
        pair.write(cert + b"\n" + key)
        pair.flush()
        context.load_cert_chain(pair.name)


def _channel(endpoint: Endpoint, timeout: float) -> grpc.Channel:
    if endpoint.credentials is not None:
        return grpc.secure_channel(endpoint.address, endpoint.credentials, options=endpoint.name_options())
    tls = endpoint.tls
    if tls is None or not tls.secure:
        return grpc.insecure_channel(endpoint.address)
    pair = dict(private_key=tls.key, certificate_chain=tls.cert) if tls.cert and tls.key else {}
    if not tls.insecure_skip_verify:
        return grpc.secure_channel(
            endpoint.address, grpc.ssl_channel_credentials(tls.ca, **pair), options=endpoint.name_options()
        )
    pinned, name = _presented_certificate(endpoint.address, tls, timeout)
    return grpc.secure_channel(
        endpoint.address,
        grpc.ssl_channel_credentials(pinned, **pair),
        options=(("grpc.ssl_target_name_override", name),),
    )


def _reason(error: grpc.RpcError, endpoint: Endpoint, timeout: float) -> str:
    code = error.code()
    details = (error.details() or "").strip()
    if code == grpc.StatusCode.DEADLINE_EXCEEDED:
        text = f"no answer within {timeout:g}s (deadline exceeded)"
    elif code == grpc.StatusCode.UNAVAILABLE and "hostname verification" in details.lower():
        name = endpoint.server_name or _split_address(endpoint.address)[0]
        text = f"TLS at {endpoint.address}: the server's certificate does not name {name} (hostname verification)"
        if not endpoint.server_name:
            text += "; give a name it holds with --estimator-server-name"
    elif code == grpc.StatusCode.UNAVAILABLE:
        text = f"unreachable at {endpoint.address}: {details}"
    else:
        text = f"{code.name if code else 'UNKNOWN'}: {details}"
    return text if len(text) <= _MAX_REASON else text[: _MAX_REASON - 3] + "..."


def ask_component_sets(
    endpoint: Endpoint, query: ComponentSetsQuery, object_key: str, timeout: float, deadline: float | None = None
) -> Answer:
    """One MaxAvailableComponentSets call; `deadline` (time.monotonic()) bounds it when given."""
    started = time.monotonic()
    deadline = started + timeout if deadline is None else deadline
    budget = max(deadline - started, 0.0)
    try:
        channel = _channel(endpoint, budget)
    except (OSError, ValueError, ssl.SSLError) as error:
        return Answer(
            endpoint.member, UNKNOWN, f"TLS set-up with {endpoint.address} failed: {error}", time.monotonic() - started
        )
    try:
        stub = service_pb2_grpc.EstimatorStub(channel)
        response, call = stub.MaxAvailableComponentSets.with_call(
            component_sets_request(endpoint.member, query),
            timeout=max(deadline - time.monotonic(), 0.0),
            metadata=((OBJECT_METADATA_KEY, object_key),),
            wait_for_ready=False,
        )
        bound, proven = read_certificate(call.trailing_metadata() or ())
        return Answer(
            endpoint.member, response.maxSets, seconds=time.monotonic() - started, bound=bound, proven_optimal=proven
        )
    except grpc.RpcError as error:
        return Answer(endpoint.member, UNKNOWN, _reason(error, endpoint, timeout), time.monotonic() - started)
    finally:
        channel.close()


def read_certificate(metadata: Sequence[tuple[str, Any]]) -> tuple[int | None, bool | None]:
    """The bound and the proven flag from the answer's trailing metadata; a value that does
    not parse counts as absent (a certificate is advice, never trusted over the answer)."""
    values = {key: value for key, value in metadata}
    text = values.get(BOUND_METADATA_KEY, "")
    bound = int(text) if text.isdigit() and len(text) <= 19 else None
    proven = {"true": True, "false": False}.get(values.get(PROVEN_METADATA_KEY, ""))
    return bound, proven


def ask_all(
    endpoints: Sequence[Endpoint],
    query: ComponentSetsQuery,
    object_key: str,
    timeout: float = DEFAULT_TIMEOUT_SECONDS,
    assumed: Mapping[str, Sequence[AssumedWorkload]] | None = None,
) -> dict[str, Answer]:
    """Concurrent calls under ONE deadline: the whole fan-out ends within `timeout`.
    `assumed`: per member, the in-flight workloads sent with its request (assumedWorkloads),
    as karmada-scheduler sends each member its own."""
    if not endpoints:
        return {}
    assumed = assumed or {}

    def for_member(member: str) -> ComponentSetsQuery:
        flights = tuple(assumed.get(member, ()))
        return replace(query, assumed=flights) if flights else query

    deadline = time.monotonic() + timeout
    with ThreadPoolExecutor(max_workers=min(len(endpoints), _MAX_WORKERS)) as pool:
        futures = [
            pool.submit(ask_component_sets, e, for_member(e.member), object_key, timeout, deadline) for e in endpoints
        ]
        answers = [f.result() for f in futures]
    return {answer.member: answer for answer in answers}
