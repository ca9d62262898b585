"""The watch client's HTTP: raw list and watch requests to the member's API server over
urllib3, the only estimator module that imports it (the `kubernetes` package is not used:
its client costs about 23 MB of RSS for five GET paths whose bodies we parse ourselves).

Where to connect and with which credentials comes from kubecredentials.py (kubeconfig,
--master or the in-cluster service account, read as client-go reads them). Requests are
never retried here and their bodies are never decoded here: callers get bytes (a list page)
or complete JSON lines (a watch stream), and failures mapped onto three exception types the
list/watch loop can act on:

- `Gone`: HTTP 410 (a too-old resourceVersion or an expired continue token): relist.
- `Unavailable`: the API server could not be reached or answered 429/5xx, the connection
  broke or timed out: back off and retry.
- `ApiError`: any other refusal (401, 403, 404, ...): back off, retry, and log loudly.
"""

from __future__ import annotations

import http.client
import logging
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import quote, urlencode

import urllib3

from estimator.cluster.watch.apierrors import ApiError, Gone, KubeConfigError, Silent, Unavailable, status_message
from estimator.cluster.watch.kubecredentials import ClientConfig, load_configuration

__all__ = [
    "KubeClient",
    "WatchStream",
    "ClientConfig",
    "load_configuration",
    "socket_options",
    "KINDS",
    "ApiError",
    "Gone",
    "Silent",
    "Unavailable",
    "USER_AGENT",
]

log = logging.getLogger("estimator.watch")

USER_AGENT = "karmada-accurate-estimator"


# TCP keepalive on every API connection: a peer that stops acknowledging (a link that went
# dark without FIN or RST) is dropped after IDLE + COUNT * INTERVAL = 30 s, and data left
# unacknowledged for USER_TIMEOUT ms fails the socket. client-go's dialer keeps 30 s + 9 x
# 15 s; ours is tighter so a dead watch is replaced well within a minute.
KEEPALIVE_IDLE, KEEPALIVE_INTERVAL, KEEPALIVE_COUNT = 15, 5, 3
USER_TIMEOUT_MS = 30_000


def socket_options() -> list[tuple[int, int, int]]:
    """urllib3's own defaults (Nagle off: urllib3 replaces them with the list it is given) plus
    keepalive with our timings, each where the platform has it (macOS spells the idle time
    TCP_KEEPALIVE), and TCP_USER_TIMEOUT."""
    options = list(urllib3.connection.HTTPConnection.default_socket_options)
    options.append((socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1))
    idle = getattr(socket, "TCP_KEEPIDLE", None) or getattr(socket, "TCP_KEEPALIVE", None)
    for name, value in (
        (idle, KEEPALIVE_IDLE),
        (getattr(socket, "TCP_KEEPINTVL", None), KEEPALIVE_INTERVAL),
        (getattr(socket, "TCP_KEEPCNT", None), KEEPALIVE_COUNT),
        (getattr(socket, "TCP_USER_TIMEOUT", None), USER_TIMEOUT_MS),
    ):
        if name is not None:
            options.append((socket.IPPROTO_TCP, name, value))
    return options


# The cluster-wide collection of each kind.
_ENDPOINTS = {
    "Node": "/api/v1/nodes",
    "Pod": "/api/v1/pods",
    "ResourceQuota": "/api/v1/resourcequotas",
    "ReplicaSet": "/apis/apps/v1/replicasets",
    "Deployment": "/apis/apps/v1/deployments",
    "DeviceClass": "/apis/resource.k8s.io/v1/deviceclasses",
    "ResourceSlice": "/apis/resource.k8s.io/v1/resourceslices",
    "ResourceClaim": "/apis/resource.k8s.io/v1/resourceclaims",
}
# Query parameter names as the API server spells them.
_QUERY_NAMES = {
    "limit": "limit",
    "_continue": "continue",
    "field_selector": "fieldSelector",
    "watch": "watch",
    "allow_watch_bookmarks": "allowWatchBookmarks",
    "resource_version": "resourceVersion",
    "timeout_seconds": "timeoutSeconds",
}
KINDS = tuple(_ENDPOINTS)
_POOLS, _POOL_SIZE = 4, 16  # hosts (one; a proxy adds one), connections kept per host


def _query(params: dict) -> str:
    return urlencode(
        [(_QUERY_NAMES[k], str(v).lower() if isinstance(v, bool) else v) for k, v in params.items()], quote_via=quote
    )


def _refusal(status: int, reason: str, body: bytes | None, what: str) -> ApiError:
    message = f"{what}: {status or ''} {reason or ''}: {status_message(body)}".replace("  ", " ")
    if status == 410:
        return Gone(message, status, reason or "")
    if status in (0, 429) or status >= 500:
        return Unavailable(message, status, reason or "")
    return ApiError(message, status, reason or "")


def _pool(configuration: ClientConfig) -> urllib3.PoolManager:
    """The connection pool for a configuration. Our loop owns retries and backoff: urllib3
    must not retry (or follow redirects) behind its back."""
    options: dict = {"num_pools": _POOLS, "maxsize": _POOL_SIZE, "retries": False, "socket_options": socket_options()}
    if configuration.host.startswith("https://"):
        options["ssl_context"] = configuration.ssl_context
        options["cert_reqs"] = ssl.CERT_REQUIRED if configuration.verify else ssl.CERT_NONE
        if configuration.tls_server_name:
            options["server_hostname"] = configuration.tls_server_name  # SNI and the name checked
    proxy = configuration.proxy_url
    if not proxy:
        return urllib3.PoolManager(**options)
    if proxy.startswith("socks5"):
        try:
            from urllib3.contrib.socks import SOCKSProxyManager
        except ImportError:
            raise KubeConfigError(f"proxy-url {proxy}: a socks5 proxy needs PySocks installed") from None
        return SOCKSProxyManager(proxy, **options)
    return urllib3.ProxyManager(proxy, **options)


_TRANSPORT_ERRORS = (urllib3.exceptions.HTTPError, http.client.HTTPException, OSError, socket.timeout)
_TIMEOUTS = (TimeoutError, socket.timeout, urllib3.exceptions.ReadTimeoutError)


def _is_tls_error(error: BaseException | None) -> bool:
    seen = 0
    while error is not None and seen < 5:
        if isinstance(error, (ssl.SSLError, urllib3.exceptions.SSLError)):
            return True
        error = getattr(error, "reason", None) or error.__cause__ or error.__context__
        seen += 1
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

    def _chunked_lines(self, raw: Any) -> Iterator[bytes]:
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
                        payload.append(buffer[position : position + body])
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
            raise Silent(
                f"{self._what}: nothing received and no end of the watch within timeoutSeconds + margin "
                f"({type(error).__name__})"
            ) from None
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
            raise Silent(
                f"{self._what}: nothing received and no end of the watch within timeoutSeconds + margin "
                f"({type(error).__name__})"
            ) from None
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
    """Raw list and watch of the kinds the estimator reads, across all namespaces.

    Credentials are not read once: with a `loader` (the flags' configuration, built anew),
    the client rebuilds its configuration every `check_every` seconds and at once after a
    401 or a TLS failure, and switches to it when the token, client certificate, key or CA
    it names changed (kubeconfig `tokenFile`, rotated certificate files, a rewritten
    kubeconfig, the in-cluster service account token). Users whose credentials come from an
    exec plugin are reloaded (the plugin run again) on a 401 and when the credential's
    expirationTimestamp has passed, not periodically."""

    def __init__(
        self,
        configuration: ClientConfig,
        connect_timeout: float = 10.0,
        *,
        loader: Callable[[], ClientConfig] | None = None,
        check_every: float | None = 60.0,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ):
        self.host = configuration.host
        self.connect_timeout = connect_timeout
        self._loader = loader
        self.check_every = check_every
        self._clock = clock
        self._wall_clock = wall_clock
        self._reload_lock = threading.Lock()
        self._checked = clock()
        self._forced = -1e9
        self.credential_reloads = 0
        self._configuration = configuration
        self._expires_at = configuration.expires_at
        self._pool = _pool(configuration)

    @classmethod
    def from_flags(
        cls,
        kubeconfig: str = "",
        master: str = "",
        connect_timeout: float = 10.0,
        check_every: float | None = 60.0,
        context: str | None = None,
    ) -> KubeClient:
        loader = lambda: load_configuration(kubeconfig, master, context)  # noqa: E731
        first = loader()
        return cls(first, connect_timeout, loader=loader, check_every=None if first.uses_plugin else check_every)

    def _expired(self) -> bool:
        return self._expires_at is not None and self._wall_clock() >= self._expires_at

    def refresh_credentials(self, force: bool = False) -> bool:
        """Rebuild the configuration if due (or `force`d, or the plugin's credential expired: at
        most every 5 s) and switch to it if its credentials changed. True when switched. A
        configuration that no longer loads is logged and the current one kept."""
        if self._loader is None:
            return False
        now = self._clock()
        urgent = force or self._expired()
        if urgent:
            if now - self._forced < 5.0:
                return False
        elif self.check_every is None or now - self._checked < self.check_every:
            return False
        with self._reload_lock:
            if urgent:
                self._forced = now
            self._checked = now
            try:
                configuration = self._loader()
                if configuration == self._configuration:
                    self._expires_at = configuration.expires_at  # the plugin may have extended the same token
                    return False
                pool = _pool(configuration)
            except (KubeConfigError, OSError) as error:
                log.warning("reloading the Kubernetes credentials failed, keeping the current ones: %s", error)
                return False
            old, self._pool = self._pool, pool
            self._configuration, self._expires_at = configuration, configuration.expires_at
            self.host = configuration.host
            self.credential_reloads += 1
        if configuration.uses_plugin:
            log.info("the exec credential plugin gave new Kubernetes credentials: using them from now on")
        else:
            log.info("Kubernetes credentials changed on disk (token, client certificate or CA): using them from now on")
        old.clear()  # idle connections only; open watches end on their own
        return True

    def _call(self, kind: str, what: str, read_timeout: float, **params: Any) -> urllib3.BaseHTTPResponse:
        self.refresh_credentials()
        params = {k: v for k, v in params.items() if v not in (None, "")}
        timeout = urllib3.Timeout(connect=self.connect_timeout, read=max(read_timeout, 0.001))
        configuration, pool = self._configuration, self._pool
        headers = {"Accept": "application/json", "User-Agent": USER_AGENT}
        if configuration.authorization:
            headers["Authorization"] = configuration.authorization
        url = (
            f"{configuration.host}{_ENDPOINTS[kind]}?{_query(params)}"
            if params
            else f"{configuration.host}{_ENDPOINTS[kind]}"
        )
        try:
            response = pool.request(
                "GET", url, headers=headers, timeout=timeout, preload_content=False, retries=False, redirect=False
            )
        except _TIMEOUTS as error:
            raise Silent(f"{what}: no answer within {read_timeout:g}s ({type(error).__name__})") from None
        except _TRANSPORT_ERRORS as error:
            if _is_tls_error(error):  # e.g. the CA or our client certificate was rotated
                self.refresh_credentials(force=True)
            raise Unavailable(f"{what}: {type(error).__name__}: {error}") from None
        if 200 <= response.status <= 299:
            return response
        try:
            body = response.data
        except _TRANSPORT_ERRORS:
            body = b""
        finally:
            response.release_conn()
        if response.status == 401:  # a rotated token or certificate, or an expired plugin token: read them again now
            self.refresh_credentials(force=True)
        raise _refusal(response.status, response.reason or "", body, what)

    def list_page(
        self, kind: str, *, limit: int, continue_token: str = "", field_selector: str = "", timeout: float = 60.0
    ) -> bytes:
        """One page of a (consistent, paginated) list: the raw JSON body."""
        what = f"list {kind}"
        response = self._call(kind, what, timeout, limit=limit, _continue=continue_token, field_selector=field_selector)
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
        self._pool.clear()

    def close(self) -> None:
        self._pool.clear()
