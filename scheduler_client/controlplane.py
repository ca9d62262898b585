"""EDGE: a running Karmada control plane as the placement's input (--karmada-kubeconfig).

Read through the karmada-apiserver, the way karmada-scheduler and its detector read them:
- every Cluster (cluster.karmada.io/v1alpha1): labels, taints, resource models, summary;
- the policy that selects the job: the PropagationPolicies of the job's namespace, then the
  ClusterPropagationPolicies (policy.matching_policy: priority, specificity, name);
- each member's accurate estimator, found as karmada-scheduler finds it
  (pkg/estimator/client/service.go, resolveCluster): the Service `<prefix>-<cluster>` in
  `<namespace>` must be ExternalName, with a port numbered `<port>` whose targetPort is a
  number, and is dialled at externalName:targetPort; when there is no such Service
  karmada-scheduler dials `<prefix>-<cluster>.<namespace>.svc.cluster.local:<port>` (then
  `.svc`), and so does this (the first) when asked to (`with_missing`); a Service of another
  type, or without that port, leaves the member without an estimator, the reason kept;
- the workloads karmada-scheduler holds in flight: every ResourceBinding (bindings.py).

Plain HTTPS with the standard library, as a kubeconfig describes it: the current context (or
the one named), the cluster's server, certificate-authority(-data), tls-server-name,
insecure-skip-tls-verify; the user's token, tokenFile, client-certificate(-data) and
client-key(-data), or username and password. Relative paths are relative to the kubeconfig
file, as kubectl reads them. exec and auth-provider credential plugins are not run.

Errors: a kubeconfig that cannot be used is an InputError naming the file and field (exit 2);
a control plane that cannot be reached, refuses the credentials or does not serve Karmada's
APIs is a ControlPlaneError naming the URL (its own exit status).
"""

from __future__ import annotations

import base64
import http.client
import json
import socket
import ssl
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

from scheduler_client import bindings
from scheduler_client.clusters import ClusterError, ClusterObject, parse_cluster
from scheduler_client.karmada import Policy, PolicyError, matching_policy, parse_policy
from scheduler_client.sources import InputError, read_documents

CLUSTERS = "/apis/cluster.karmada.io/v1alpha1/clusters"
POLICIES = "/apis/policy.karmada.io/v1alpha1/namespaces/{namespace}/propagationpolicies"
CLUSTER_POLICIES = "/apis/policy.karmada.io/v1alpha1/clusterpropagationpolicies"
BINDINGS = "/apis/work.karmada.io/v1alpha2/resourcebindings"
SERVICE = "/api/v1/namespaces/{namespace}/services/{name}"
TIMEOUT_SECONDS = 10.0
_PAGE = 500


class ControlPlaneError(RuntimeError):
    """The control plane cannot be reached, refuses us, or does not serve what we read."""


@dataclass(frozen=True)
class EstimatorService:
    """Where karmada-scheduler would dial a member's estimator, or why it cannot."""

    member: str
    address: str | None
    how: str  # how the address was found, or why there is none


@dataclass(frozen=True)
class ControlPlaneView:
    server: str
    clusters: tuple[ClusterObject, ...]
    policy: Policy | None
    policies_read: int
    estimators: Mapping[str, EstimatorService]
    in_flight: tuple[bindings.InFlight, ...] = ()
    notes: tuple[str, ...] = field(default=())


# --- kubeconfig ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Connection:
    server: str  # scheme://host:port, no trailing slash, path prefix kept
    ssl_context: ssl.SSLContext | None
    server_name: str | None
    headers: Mapping[str, str]


def _named(items: Any, name: str, what: str, path: str) -> Mapping:
    if not isinstance(items, list):
        raise InputError(path, what, "must be a list")
    for i, item in enumerate(items):
        if isinstance(item, Mapping) and item.get("name") == name:
            inner = item.get(what[:-1])  # clusters -> cluster, users -> user, contexts -> context
            if inner is not None and not isinstance(inner, Mapping):
                raise InputError(path, f"{what}[{i}].{what[:-1]}", "must be an object")
            return inner or {}
    raise InputError(path, what, f"no entry named {name!r}")


def _file_or_data(entry: Mapping, key: str, base: Path, path: str, where: str) -> bytes | None:
    data = entry.get(f"{key}-data")
    if data:
        try:
            return base64.b64decode(str(data), validate=True)
        except ValueError:
            raise InputError(path, f"{where}.{key}-data", "is not base64") from None
    name = entry.get(key)
    if not name:
        return None
    file = Path(str(name)).expanduser()
    file = file if file.is_absolute() else base / file
    try:
        return file.read_bytes()
    except OSError as error:
        raise InputError(path, f"{where}.{key}", f"cannot read {file}: {error.strerror}") from None


def load_kubeconfig(path: str | Path, context: str = "") -> Connection:
    """The connection a kubeconfig describes (its current context unless `context` is given)."""
    path = str(path)
    docs = read_documents(path)
    config = docs[0]
    if not isinstance(config, Mapping) or not config.get("clusters"):
        raise InputError(path, "clusters", "not a kubeconfig (no clusters)")
    base = Path(path).resolve().parent
    name = context or config.get("current-context")
    if not name:
        raise InputError(path, "current-context", "is not set (give --karmada-context)")
    ctx = _named(config.get("contexts"), str(name), "contexts", path)
    cluster = _named(config.get("clusters"), str(ctx.get("cluster") or ""), "clusters", path)
    user = _named(config.get("users"), str(ctx.get("user") or ""), "users", path) if ctx.get("user") else {}
    where_c, where_u = f"clusters[{ctx.get('cluster')}].cluster", f"users[{ctx.get('user')}].user"
    server = str(cluster.get("server") or "").rstrip("/")
    parts = urlsplit(server)
    if parts.scheme not in ("https", "http") or not parts.hostname:
        raise InputError(path, f"{where_c}.server", f"expected https://HOST:PORT, got {server!r}")
    for plugin in ("exec", "auth-provider"):
        if user.get(plugin):
            raise InputError(
                path,
                f"{where_u}.{plugin}",
                "credential plugins are not run by karmada-place: use a token or a client certificate",
            )
    headers = {"Accept": "application/json", "User-Agent": "karmada-place"}
    token = user.get("token")
    if not token and user.get("tokenFile"):
        token_file = Path(str(user["tokenFile"])).expanduser()
        token_file = token_file if token_file.is_absolute() else base / token_file
        try:
            token = token_file.read_text().strip()
        except OSError as error:
            raise InputError(path, f"{where_u}.tokenFile", f"cannot read {token_file}: {error.strerror}") from None
    if token:
        headers["Authorization"] = f"Bearer {token}"
    elif user.get("username"):
        pair = f"{user.get('username')}:{user.get('password') or ''}".encode()
        headers["Authorization"] = "Basic " + base64.b64encode(pair).decode()
    context_ssl = None
    if parts.scheme == "https":
        context_ssl = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # verifies the certificate and the host name
        ca = _file_or_data(cluster, "certificate-authority", base, path, where_c)
        if cluster.get("insecure-skip-tls-verify"):
            context_ssl.check_hostname, context_ssl.verify_mode = False, ssl.CERT_NONE
        elif not ca:
            context_ssl.load_default_certs()  # the system's authorities (a tenth of a second: only when needed)
        if ca:
            try:
                context_ssl.load_verify_locations(cadata=ca.decode())
            except (ssl.SSLError, ValueError) as error:
                raise InputError(path, f"{where_c}.certificate-authority", f"not a PEM certificate: {error}") from None
        cert = _file_or_data(user, "client-certificate", base, path, where_u)
        key = _file_or_data(user, "client-key", base, path, where_u)
        if bool(cert) != bool(key):
            raise InputError(path, where_u, "client-certificate and client-key go together")
        if cert and key:
            with tempfile.NamedTemporaryFile("wb", suffix=".pem") as pair_file:
                pair_file.write(cert + b"\n" + key)
                pair_file.flush()
                try:
                    context_ssl.load_cert_chain(pair_file.name)
                except ssl.SSLError as error:
                    raise InputError(
                        path, f"{where_u}.client-certificate", f"unusable certificate or key: {error}"
                    ) from None
    return Connection(server, context_ssl, cluster.get("tls-server-name") or None, headers)


# --- HTTP ---------------------------------------------------------------------------------


class Client:
    """GETs against one API server, on one kept-alive connection."""

    def __init__(self, connection: Connection, timeout: float = TIMEOUT_SECONDS):
        self.connection, self.timeout = connection, timeout
        parts = urlsplit(connection.server)
        self._host, self._prefix = parts.hostname or "", parts.path
        self._port = parts.port or (443 if parts.scheme == "https" else 80)
        self._http: http.client.HTTPConnection | None = None

    def _open(self) -> http.client.HTTPConnection:
        if self._http is None:
            if self.connection.ssl_context is not None:
                self._http = _HTTPS(
                    self._host,
                    self._port,
                    timeout=self.timeout,
                    context=self.connection.ssl_context,
                    server_name=self.connection.server_name,
                )
            else:
                self._http = http.client.HTTPConnection(self._host, self._port, timeout=self.timeout)
        return self._http

    def close(self) -> None:
        if self._http is not None:
            self._http.close()
            self._http = None

    def get(self, path: str, params: Mapping[str, str] | None = None, missing_ok: bool = False) -> Any:
        """The decoded JSON at `path`; None for 404 when `missing_ok`."""
        target = self._prefix + path + (f"?{urlencode(params)}" if params else "")
        url = self.connection.server + path
        for attempt in (0, 1):  # a kept-alive connection the server closed is reopened once
            try:
                conn = self._open()
                conn.request("GET", target, headers=dict(self.connection.headers))
                response = conn.getresponse()
                body = response.read()
                break
            except (ConnectionResetError, BrokenPipeError, http.client.RemoteDisconnected):
                self.close()
                if attempt:
                    raise ControlPlaneError(f"{url}: the connection was closed by the server") from None
            except ssl.SSLCertVerificationError as error:
                self.close()
                raise ControlPlaneError(
                    f"{url}: the server's certificate is not trusted ({error.verify_message}); "
                    "check certificate-authority in the kubeconfig"
                ) from None
            except (OSError, http.client.HTTPException) as error:
                self.close()
                reason = "timed out" if isinstance(error, socket.timeout) else str(error) or type(error).__name__
                raise ControlPlaneError(
                    f"cannot reach the Karmada control plane at {self.connection.server}: {reason}"
                ) from None
        if response.status == 404 and missing_ok:
            return None
        if response.status >= 300:
            message = _status_message(body)
            hint = {
                401: " (the kubeconfig's credentials were refused)",
                403: " (the kubeconfig's user may not read this)",
                404: " (is this a Karmada control plane with that API?)",
            }.get(response.status, "")
            raise ControlPlaneError(f"GET {url}: HTTP {response.status}{hint}" + (f": {message}" if message else ""))
        try:
            return json.loads(body)
        except ValueError:
            raise ControlPlaneError(f"GET {url}: the answer is not JSON") from None

    def items(self, path: str) -> list:
        """Every item of a list, page by page."""
        out: list = []
        params: dict[str, str] = {"limit": str(_PAGE)}
        while True:
            page = self.get(path, params)
            if not isinstance(page, Mapping) or not isinstance(page.get("items"), list):
                raise ControlPlaneError(f"GET {self.connection.server + path}: not a list")
            out.extend(page["items"])
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                return out
            params["continue"] = str(token)


class _HTTPS(http.client.HTTPSConnection):
    """HTTPSConnection with a TLS server name other than the host (kubeconfig tls-server-name)."""

    def __init__(self, host: str, port: int, timeout: float, context: ssl.SSLContext, server_name: str | None):
        super().__init__(host, port, timeout=timeout, context=context)
        self._server_name = server_name

    def connect(self) -> None:
        if not self._server_name:
            super().connect()
            return
        http.client.HTTPConnection.connect(self)
        context: ssl.SSLContext = self._context  # type: ignore[attr-defined]
        self.sock = context.wrap_socket(self.sock, server_hostname=self._server_name)


def _status_message(body: bytes) -> str:
    try:
        return str(json.loads(body).get("message") or "")[:300]
    except (ValueError, AttributeError):
        return body[:200].decode("utf-8", "replace")


# --- what karmada-scheduler reads ---------------------------------------------------------


def estimator_service(
    member: str, service: Mapping | None, namespace: str, prefix: str, port: int, with_missing: bool
) -> EstimatorService:
    """resolveCluster: the address karmada-scheduler dials for `member`'s estimator. Pure."""
    name = f"{prefix}-{member}"
    if service is None:
        if with_missing:
            return EstimatorService(
                member,
                f"{name}.{namespace}.svc.cluster.local:{port}",
                f"no Service {namespace}/{name}: Karmada's DNS name",
            )
        return EstimatorService(member, None, f"no Service {namespace}/{name}")
    spec = service.get("spec") or {}
    kind = spec.get("type") or "ClusterIP"
    if kind != "ExternalName":
        return EstimatorService(
            member,
            None,
            f"Service {namespace}/{name} is {kind}: karmada-scheduler dials only "
            'an ExternalName Service ("unsupported service type")',
        )
    for entry in spec.get("ports") or []:
        if isinstance(entry, Mapping) and entry.get("port") == port:
            target = entry.get("targetPort", port)
            if isinstance(target, bool) or not isinstance(target, int):
                return EstimatorService(
                    member,
                    None,
                    f"Service {namespace}/{name}: targetPort {target!r} is not a "
                    "number, which karmada-scheduler refuses for ExternalName",
                )
            host = str(spec.get("externalName") or "")
            address = f"[{host}]:{target}" if ":" in host else f"{host}:{target}"
            return EstimatorService(
                member, address, f"Service {namespace}/{name} (ExternalName {host}, port {port} -> {target})"
            )
    return EstimatorService(member, None, f"Service {namespace}/{name} has no port {port}")


def read_control_plane(
    kubeconfig: str | Path,
    manifest: Mapping,
    *,
    context: str = "",
    estimator_namespace: str = "karmada-system",
    estimator_prefix: str = "karmada-scheduler-estimator",
    estimator_port: int = 10352,
    with_missing_services: bool = False,
    policy_wanted: bool = True,
    in_flight_wanted: bool = True,
    exclude_bindings: frozenset[str] = frozenset(),
    now: datetime | None = None,
) -> ControlPlaneView:
    """Everything karmada-scheduler would use for `manifest` (the job), read now."""
    client = Client(load_kubeconfig(kubeconfig, context))
    server = client.connection.server
    try:
        clusters = []
        for i, raw in enumerate(client.items(CLUSTERS)):
            name = (raw.get("metadata") or {}).get("name", f"#{i}") if isinstance(raw, Mapping) else f"#{i}"
            try:
                clusters.append(parse_cluster({"kind": "Cluster", **raw}))
            except ClusterError as error:
                raise InputError(server, f"Cluster {name}: {error.field}", error.message) from None
        policy, read = None, 0
        if policy_wanted:
            namespace = str((manifest.get("metadata") or {}).get("namespace") or "default")
            policies: list[Policy] = []
            for path, kind in (
                (POLICIES.format(namespace=quote(namespace)), "PropagationPolicy"),
                (CLUSTER_POLICIES, "ClusterPropagationPolicy"),
            ):
                for raw in client.items(path):
                    meta: Mapping[str, Any] = raw.get("metadata") or {}
                    where = meta.get("namespace")
                    label = f"{kind} {where + '/' if where else ''}{meta.get('name')}"
                    try:
                        policies.append(parse_policy({"kind": kind, **raw}))
                    except PolicyError as error:
                        raise InputError(server, f"{label}: {error.field}", error.message) from None
            read = len(policies)
            policy = matching_policy(policies, manifest)
        estimators = {}
        for cluster in clusters:
            name = f"{estimator_prefix}-{cluster.name}"
            service = client.get(
                SERVICE.format(namespace=quote(estimator_namespace), name=quote(name)), missing_ok=True
            )
            estimators[cluster.name] = estimator_service(
                cluster.name, service, estimator_namespace, estimator_prefix, estimator_port, with_missing_services
            )
        raw_bindings = client.items(BINDINGS) if in_flight_wanted else []
    finally:
        client.close()
    flights = []
    moment = now or datetime.now(UTC)
    for raw in raw_bindings:
        meta = raw.get("metadata") or {}
        try:
            flights.extend(bindings.in_flight([raw], moment, exclude_bindings))
        except bindings.BindingError as error:
            label = f"ResourceBinding {meta.get('namespace')}/{meta.get('name')}"
            raise InputError(server, f"{label}: {error.field}", error.message) from None
    return ControlPlaneView(server, tuple(clusters), policy, read, estimators, tuple(flights))


def binding_name(manifest: Mapping) -> str:
    """namespace/name of the ResourceBinding Karmada makes for this resource (names.GenerateBindingName)."""
    meta = manifest.get("metadata") or {}
    name = str(meta.get("name") or "").replace(":", ".")
    return f"{meta.get('namespace') or 'default'}/{(name + '-' + str(manifest.get('kind') or '')).lower()}"
