"""The only module that imports `kubernetes`.

It builds an API client from a kubeconfig, --master, or the in-cluster service account,
and issues raw list and watch requests (`_preload_content=False`): the typed models are
never built. Callers get bytes (a list page) or complete JSON lines (a watch stream), and
failures mapped onto three exception types the list/watch loop can act on:

- `Gone`: HTTP 410 (a too-old resourceVersion or an expired continue token): relist.
- `Unavailable`: the API server could not be reached or answered 429/5xx, the connection
  broke or timed out: back off and retry.
- `ApiError`: any other refusal (401, 403, 404, ...): back off, retry, and log loudly.
"""

from __future__ import annotations

import hashlib
import http.client
import logging
import socket
import ssl
import threading
import time
from dataclasses import dataclass
from typing import Callable, Iterator

import urllib3
from kubernetes import client as k8s
from kubernetes import config as k8s_config
from kubernetes.config import kube_config
from kubernetes.client.exceptions import ApiException
from kubernetes.config.config_exception import ConfigException
from kubernetes.utils.keepalive import tcp_keepalive_socket_options

from estimator.cluster.watch.apierrors import ApiError, Gone, KubeConfigError, Silent, Unavailable, _status_message

log = logging.getLogger("estimator.watch")

USER_AGENT = "karmada-accurate-estimator"


# TCP keepalive on every API connection: a peer that stops acknowledging (a link that went
# dark without FIN or RST) is dropped after IDLE + COUNT * INTERVAL = 30 s, and data left
# unacknowledged for USER_TIMEOUT ms fails the socket. client-go's dialer keeps 30 s + 9 x
# 15 s; ours is tighter so a dead watch is replaced well within a minute.
KEEPALIVE_IDLE, KEEPALIVE_INTERVAL, KEEPALIVE_COUNT = 15, 5, 3
USER_TIMEOUT_MS = 30_000


def socket_options() -> list[tuple[int, int, int]]:
    options = tcp_keepalive_socket_options(KEEPALIVE_IDLE, KEEPALIVE_INTERVAL, KEEPALIVE_COUNT)
    if hasattr(socket, "TCP_USER_TIMEOUT"):
        options.append((socket.IPPROTO_TCP, socket.TCP_USER_TIMEOUT, USER_TIMEOUT_MS))
    return options


@dataclass(frozen=True)
class _Endpoint:
    path: str  # the cluster-wide collection
    api: str  # "core", "apps" or "resource": the generated API class, only for clients without param_serialize
    method: str


_ENDPOINTS = {
    "Node": _Endpoint("/api/v1/nodes", "core", "list_node"),
    "Pod": _Endpoint("/api/v1/pods", "core", "list_pod_for_all_namespaces"),
    "ResourceQuota": _Endpoint("/api/v1/resourcequotas", "core", "list_resource_quota_for_all_namespaces"),
    "ReplicaSet": _Endpoint("/apis/apps/v1/replicasets", "apps", "list_replica_set_for_all_namespaces"),
    "Deployment": _Endpoint("/apis/apps/v1/deployments", "apps", "list_deployment_for_all_namespaces"),
    "DeviceClass": _Endpoint("/apis/resource.k8s.io/v1/deviceclasses", "resource", "list_device_class"),
    "ResourceSlice": _Endpoint("/apis/resource.k8s.io/v1/resourceslices", "resource", "list_resource_slice"),
    "ResourceClaim": _Endpoint("/apis/resource.k8s.io/v1/resourceclaims", "resource",
                               "list_resource_claim_for_all_namespaces"),
}
# Query parameter names as the API server spells them (the generated methods' keyword names).
_QUERY_NAMES = {"limit": "limit", "_continue": "continue", "field_selector": "fieldSelector", "watch": "watch",
                "allow_watch_bookmarks": "allowWatchBookmarks", "resource_version": "resourceVersion",
                "timeout_seconds": "timeoutSeconds"}
KINDS = tuple(_ENDPOINTS)


def load_configuration(kubeconfig: str = "", master: str = "", context: str | None = None) -> k8s.Configuration:
    """clientcmd.BuildConfigFromFlags: kubeconfig (with --master overriding its server),
    --master alone (no credentials), or in-cluster when neither is given."""
    configuration = k8s.Configuration()
    master = master.rstrip("/")
    try:
        if kubeconfig:
            k8s_config.load_kube_config(
                config_file=kubeconfig, context=context, client_configuration=configuration, persist_config=False
            )
            if master:
                _override_host(configuration, master)
        elif master:
            configuration.host = master
        else:
            k8s_config.load_incluster_config(client_configuration=configuration)
    except (ConfigException, OSError, ValueError, TypeError, KeyError) as error:
        where = kubeconfig or ("in-cluster service account" if not master else master)
        hint = "" if kubeconfig or master else " (no --kubeconfig or --master given and not running in a pod)"
        raise KubeConfigError(f"cannot load Kubernetes client configuration from {where}{hint}: {error}") from None
    if not configuration.host:
        raise KubeConfigError("the Kubernetes client configuration names no API server")
    configuration.host = configuration.host.rstrip("/")
    _trim_tokens(configuration)
    # Our loop owns retries and backoff; urllib3 must not retry behind its back.
    configuration.retries = False
    configuration.connection_pool_maxsize = 16
    configuration.socket_options = socket_options()
    return configuration


def _override_host(configuration: k8s.Configuration, master: str) -> None:
    """--master replaces the kubeconfig's server but keeps its credentials. The kubeconfig
    loader's token-refresh hook re-applies the file's server (and itself) before every
    request, so it is wrapped to put --master back."""
    configuration.host = master
    refresh = configuration.refresh_api_key_hook
    if refresh is not None:

        def refresh_keeping_master(conf: k8s.Configuration) -> None:
            refresh(conf)  # re-installs its own hook and the file's server: undo both
            conf.host = master
            conf.refresh_api_key_hook = refresh_keeping_master

        configuration.refresh_api_key_hook = refresh_keeping_master


def _trim_tokens(configuration: k8s.Configuration) -> None:
    """Token files usually end in a newline, which the kubeconfig loader keeps (and
    http.client then refuses in a header); client-go trims it. The loader's refresh hook
    re-applies the raw token before every request, so it is wrapped too."""

    def trim(conf: k8s.Configuration) -> None:
        for key, value in list((conf.api_key or {}).items()):
            if isinstance(value, str):
                conf.api_key[key] = value.strip()

    trim(configuration)
    refresh = configuration.refresh_api_key_hook
    if refresh is not None:

        def refresh_and_trim(conf: k8s.Configuration) -> None:
            refresh(conf)  # may re-install its own hook: put ours back
            trim(conf)
            conf.refresh_api_key_hook = refresh_and_trim

        configuration.refresh_api_key_hook = refresh_and_trim


def _from_api_exception(error: ApiException, what: str) -> ApiError:
    status = int(error.status or 0)
    message = f"{what}: {status or ''} {error.reason or ''}: {_status_message(error.body)}".replace("  ", " ")
    if status == 410:
        return Gone(message, status, error.reason or "")
    if status in (0, 429) or status >= 500:
        return Unavailable(message, status, error.reason or "")
    return ApiError(message, status, error.reason or "")


_TRANSPORT_ERRORS = (urllib3.exceptions.HTTPError, http.client.HTTPException, OSError, socket.timeout)
_TIMEOUTS = (TimeoutError, socket.timeout, urllib3.exceptions.ReadTimeoutError)


def _file_digest(path: str | None) -> str:
    if not path:
        return ""
    with open(path, "rb") as file:
        return hashlib.sha256(file.read()).hexdigest()


def _fingerprint(configuration: k8s.Configuration) -> tuple:
    """What identifies the credentials of a configuration: server, tokens, and the content
    (not the name) of its CA, certificate and key files."""
    return (
        configuration.host,
        tuple(sorted((configuration.api_key or {}).items())),
        _file_digest(configuration.ssl_ca_cert),
        _file_digest(configuration.cert_file),
        _file_digest(configuration.key_file),
        configuration.verify_ssl,
        getattr(configuration, "tls_server_name", None),
    )


def _is_tls_error(error: BaseException) -> bool:
    seen = 0
    while error is not None and seen < 5:
        if isinstance(error, (ssl.SSLError, urllib3.exceptions.SSLError)):
            return True
        error = getattr(error, "reason", None) or error.__cause__ or error.__context__
        seen += 1
    return False


def _uses_plugin(kubeconfig: str) -> bool:
    """Whether the kubeconfig's current user authenticates through an exec or auth-provider
    plugin (which refreshes itself)."""
    try:
        config = kube_config.KubeConfigMerger(kubeconfig).config
        context = config["contexts"].get_with_name(config["current-context"])["context"]
        user = config["users"].get_with_name(context["user"])["user"]
        return "exec" in user or "auth-provider" in user
    except Exception:  # noqa: BLE001 - no user section or no plugin: plain credentials
        return False


class WatchStream:
    """One open watch response: complete event lines as bytes, in order.

    `abort()` may be called from another thread to unblock a reader (stop, reload)."""

    def __init__(self, response: urllib3.BaseHTTPResponse, what: str):
        self._response = response
        self._what = what

    def lines(self) -> Iterator[bytes]:
        raw = getattr(getattr(self._response, "_fp", None), "fp", None)
        if self._response.chunked and hasattr(raw, "read1") and not self._response.headers.get("Content-Encoding"):
            return self._chunked_lines(raw)
        return self._stream_lines()

    def _chunked_lines(self, raw) -> Iterator[bytes]:
        """Decode the chunked body straight from the socket's buffered reader, up to 256 KiB
        per read: one system call (and one release of the GIL) per read rather than per
        event, and no per-chunk Python overhead in urllib3. The connection is not reused."""
        buffer = b""  # undecoded chunked framing
        pending = b""  # payload bytes of an unfinished line
        need = -1  # bytes left in the current chunk (+2 for its CRLF); -1: expecting a size line
        finished = False  # the zero-size last chunk was seen
        try:
            while True:
                data = raw.read1(262144)
                if not data:
                    raise Unavailable(f"{self._what}: stream broken: the connection closed mid-stream")
                buffer = buffer + data if buffer else data
                position = 0
                payload = []
                while True:
                    if need < 0:
                        end = buffer.find(b"\r\n", position)
                        if end < 0:
                            break
                        try:
                            size = int(buffer[position:end].split(b";", 1)[0], 16)
                        except ValueError:
                            raise Unavailable(f"{self._what}: stream broken: bad chunk size") from None
                        position = end + 2
                        if size == 0:
                            finished = True
                            break
                        need = size + 2
                    available = len(buffer) - position
                    if available <= 0:
                        break
                    take = min(need, available)
                    body = min(take, need - 2)  # the chunk's data; its closing CRLF is dropped
                    if body > 0:
                        payload.append(buffer[position:position + body])
                    position += take
                    need -= take
                    if need == 0:
                        need = -1
                buffer = buffer[position:]
                if payload:
                    text = pending + b"".join(payload) if pending else b"".join(payload)
                    start = 0
                    while True:
                        end = text.find(b"\n", start)
                        if end < 0:
                            break
                        if end > start:
                            yield text[start:end]
                        start = end + 1
                    pending = text[start:]
                if finished:
                    if pending.strip():
                        raise Unavailable(f"{self._what}: stream ended inside an event")
                    return
        except _TIMEOUTS as error:
            raise Silent(f"{self._what}: nothing received and no end of the watch within timeoutSeconds + margin ({type(error).__name__})") from None
        except _TRANSPORT_ERRORS as error:
            raise Unavailable(f"{self._what}: stream broken: {type(error).__name__}: {error}") from None
        except ValueError as error:  # reading a file object closed by abort()/close()
            raise Unavailable(f"{self._what}: stream closed: {error}") from None

    def _pieces(self) -> Iterator[bytes]:
        """Body bytes as they arrive: urllib3's chunk decoder (compressed or unusual bodies),
        or for a close-delimited body whatever one read returns (never waiting for 64 KiB)."""
        if self._response.chunked:
            yield from self._response.stream(None)
            return
        while True:
            data = self._response.read1(65536)
            if not data:
                return
            yield data

    def _stream_lines(self) -> Iterator[bytes]:
        pending = b""
        try:
            for chunk in self._pieces():
                if pending:
                    chunk = pending + chunk
                start = 0
                while True:
                    end = chunk.find(b"\n", start)
                    if end < 0:
                        break
                    if end > start:
                        yield chunk[start:end]
                    start = end + 1
                pending = chunk[start:]
        except _TIMEOUTS as error:
            raise Silent(f"{self._what}: nothing received and no end of the watch within timeoutSeconds + margin ({type(error).__name__})") from None
        except _TRANSPORT_ERRORS as error:
            raise Unavailable(f"{self._what}: stream broken: {type(error).__name__}: {error}") from None
        except ValueError as error:  # urllib3 on a closed/aborted file object
            raise Unavailable(f"{self._what}: stream closed: {error}") from None
        if pending.strip():
            raise Unavailable(f"{self._what}: stream ended inside an event ({len(pending)} bytes unterminated)")

    def abort(self) -> None:
        try:
            self._response.shutdown()
        except Exception:  # noqa: BLE001 - already released or closed: nothing to unblock
            pass

    def close(self) -> None:
        try:
            self._response.close()
        except Exception:  # noqa: BLE001
            pass


class KubeClient:
    """Raw list and watch of the five kinds the estimator reads, across all namespaces.

    Credentials are not read once: with a `loader` (the flags' configuration, built anew),
    the client rebuilds its configuration every `check_every` seconds and at once after a
    401 or a TLS failure, and switches to it when the token, client certificate, key or CA
    it names changed (kubeconfig `tokenFile`, rotated certificate files, a rewritten
    kubeconfig, the in-cluster service account token). Users with an exec or auth-provider
    plugin are only reloaded on a 401: their plugin manages expiry itself."""

    def __init__(
        self,
        configuration: k8s.Configuration,
        connect_timeout: float = 10.0,
        *,
        loader: Callable[[], k8s.Configuration] | None = None,
        check_every: float | None = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.host = configuration.host
        self.connect_timeout = connect_timeout
        self._loader = loader
        self.check_every = check_every
        self._clock = clock
        self._reload_lock = threading.Lock()
        self._checked = clock()
        self._forced = -1e9
        self.credential_reloads = 0
        self._fingerprint = _fingerprint(configuration)
        self._install(configuration)

    def _install(self, configuration: k8s.Configuration):
        api_client = k8s.ApiClient(configuration)
        api_client.user_agent = USER_AGENT
        old = getattr(self, "_api_client", None)
        self._api_client = api_client
        # CoreV1Api and AppsV1Api import hundreds of typed models (~26 MB RSS) for five GET
        # paths whose bodies we never deserialize: requests go through ApiClient itself
        # (authentication, TLS, proxy and token refresh as configured), unless the installed
        # client predates its param_serialize (then the generated classes are still used).
        self._apis = None
        if not hasattr(api_client, "param_serialize"):
            self._apis = {"core": k8s.CoreV1Api(api_client), "apps": k8s.AppsV1Api(api_client)}
            if hasattr(k8s, "ResourceV1Api"):  # a client older than resource.k8s.io/v1 reads DRA kinds by path
                self._apis["resource"] = k8s.ResourceV1Api(api_client)
        return old

    @classmethod
    def from_flags(cls, kubeconfig: str = "", master: str = "", connect_timeout: float = 10.0,
                   check_every: float | None = 60.0) -> KubeClient:
        loader = lambda: load_configuration(kubeconfig, master)  # noqa: E731
        periodic = check_every if not (kubeconfig and _uses_plugin(kubeconfig)) else None
        return cls(loader(), connect_timeout, loader=loader, check_every=periodic)

    def refresh_credentials(self, force: bool = False) -> bool:
        """Rebuild the configuration if due (or `force`d: at most every 5 s) and switch to it
        if its credentials changed. True when switched. A configuration that no longer
        loads is logged and the current one kept."""
        if self._loader is None:
            return False
        now = self._clock()
        if force:
            if now - self._forced < 5.0:
                return False
        elif self.check_every is None or now - self._checked < self.check_every:
            return False
        with self._reload_lock:
            if force:
                self._forced = now
            self._checked = now
            try:
                configuration = self._loader()
                fingerprint = _fingerprint(configuration)
            except (KubeConfigError, OSError) as error:
                log.warning("reloading the Kubernetes credentials failed, keeping the current ones: %s", error)
                return False
            if fingerprint == self._fingerprint:
                return False
            self._fingerprint = fingerprint
            old = self._install(configuration)
            self.host = configuration.host
            self.credential_reloads += 1
        log.info("Kubernetes credentials changed on disk (token, client certificate or CA): using them from now on")
        if old is not None:
            try:
                old.rest_client.pool_manager.clear()  # idle connections only; open watches end on their own
            except Exception:  # noqa: BLE001
                pass
        return True

    def _call(self, kind: str, what: str, read_timeout: float, **params) -> urllib3.BaseHTTPResponse:
        self.refresh_credentials()
        endpoint = _ENDPOINTS[kind]
        params = {k: v for k, v in params.items() if v not in (None, "")}
        timeout = (self.connect_timeout, max(read_timeout, 0.001))
        try:
            if self._apis is not None and endpoint.api in self._apis:
                method = getattr(self._apis[endpoint.api], endpoint.method)
                return method(**params, _preload_content=False, _request_timeout=timeout)
            return self._get(endpoint.path, params, timeout)
        except ApiException as error:
            if error.status == 401:  # a rotated token or certificate: read them again now
                self.refresh_credentials(force=True)
            raise _from_api_exception(error, what) from None
        except _TIMEOUTS as error:
            raise Silent(f"{what}: no answer within {read_timeout:g}s ({type(error).__name__})") from None
        except _TRANSPORT_ERRORS as error:
            if _is_tls_error(error):  # e.g. the CA or our client certificate was rotated
                self.refresh_credentials(force=True)
            raise Unavailable(f"{what}: {type(error).__name__}: {error}") from None

    def _get(self, path: str, params: dict, timeout: tuple[float, float]) -> urllib3.BaseHTTPResponse:
        """GET `path` through ApiClient, the raw response unread (as `_preload_content=False`
        does for the generated methods): non-2xx raises ApiException like they do."""
        api_client = self._api_client
        request = api_client.param_serialize(
            method="GET", resource_path=path, query_params=[(_QUERY_NAMES[k], v) for k, v in params.items()],
            header_params={"Accept": "application/json"}, auth_settings=["BearerToken"])
        response = api_client.call_api(*request, _request_timeout=timeout)
        if not 200 <= response.status <= 299:
            response.read()
            raise ApiException.from_response(http_resp=response, body=None, data=None)
        return response.response

    def list_page(
        self, kind: str, *, limit: int, continue_token: str = "", field_selector: str = "", timeout: float = 60.0
    ) -> bytes:
        """One page of a (consistent, paginated) list: the raw JSON body."""
        what = f"list {kind}"
        response = self._call(
            kind, what, timeout, limit=limit, _continue=continue_token, field_selector=field_selector
        )
        try:
            return response.data
        except _TRANSPORT_ERRORS as error:
            raise Unavailable(f"{what}: body broken: {type(error).__name__}: {error}") from None
        finally:
            response.release_conn()

    def watch(
        self, kind: str, *, resource_version: str, timeout_seconds: int, read_timeout: float, field_selector: str = ""
    ) -> WatchStream:
        what = f"watch {kind} from {resource_version}"
        response = self._call(
            kind,
            what,
            read_timeout,
            watch=True,
            allow_watch_bookmarks=True,
            resource_version=resource_version,
            timeout_seconds=int(timeout_seconds),
            field_selector=field_selector,
        )
        return WatchStream(response, what)

    def fresh_connections(self) -> None:
        """Close every idle pooled connection, so the next request dials anew (after a
        connection was found dead, its pooled siblings through the same path may be too)."""
        try:
            self._api_client.rest_client.pool_manager.clear()
        except Exception:  # noqa: BLE001 - nothing pooled
            pass

    def close(self) -> None:
        try:
            self._api_client.close()
        except Exception:  # noqa: BLE001
            pass
