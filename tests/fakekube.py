"""A small fake Kubernetes API server: plain HTTP/1.1 on loopback, for tests and benchmarks.

It speaks the part of the API the estimator's list/watch loop uses, with the semantics of
a real kube-apiserver backed by etcd:

- objects of five kinds (Node, Pod, ResourceQuota, ReplicaSet, Deployment) under one global
  resourceVersion counter; every change is one event in a bounded history;
- list: `limit` + `continue` pagination over keys in etcd order, every page served from the
  snapshot at the first page's resourceVersion (rebuilt from the history), `fieldSelector`
  on pods (status.phase, spec.nodeName) and metadata; a continue token whose snapshot has
  been compacted away answers 410 Expired;
- watch: chunked JSON event lines (ADDED, MODIFIED, DELETED, BOOKMARK, ERROR) for events
  after `resourceVersion`; with a field selector an object leaving it arrives as DELETED and
  one entering it as ADDED; `allowWatchBookmarks` gets a BOOKMARK every `bookmark_interval`
  seconds and 2 s before the `timeoutSeconds` deadline (as the watch cache schedules them:
  none when that moment has passed), then the stream ends cleanly at the deadline; a
  resourceVersion older than the history answers 410 Gone, as an ERROR event (like the
  watch cache) or an HTTP status;
- HTTPS with `ssl_context` (client certificates checked when it requires them), bearer
  `token` checked on every request (both can be rotated; `drop_connections()`);
- faults: `compact()`, `drop_watches()` (optionally mid-event), `go_down()`/`come_up()` (a
  restart on the same port, with the same or a compacted history), `delay` (slow
  responses), `fail_next()` (5xx/429), `expire_continue()`, `hold_lists()`.

Driven in tests through the real kubernetes client via `kubeconfig()`.
"""

from __future__ import annotations

import base64
import bisect
import itertools
import json
import socket
import ssl
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterable
from urllib.parse import parse_qs, urlsplit

# path -> (kind, apiVersion, namespaced)
RESOURCES = {
    "/api/v1/nodes": ("Node", "v1", False),
    "/api/v1/pods": ("Pod", "v1", True),
    "/api/v1/resourcequotas": ("ResourceQuota", "v1", True),
    "/apis/apps/v1/replicasets": ("ReplicaSet", "apps/v1", True),
    "/apis/apps/v1/deployments": ("Deployment", "apps/v1", True),
}
KIND_INFO = {kind: (path, api_version, namespaced) for path, (kind, api_version, namespaced) in RESOURCES.items()}
_FIRST_RV = 1000


@dataclass
class _Stored:
    rv: int
    data: bytes  # the object's JSON, metadata.resourceVersion included
    fields: dict  # values a field selector can test


@dataclass
class _Event:
    rv: int
    kind: str
    type: str  # ADDED, MODIFIED, DELETED
    key: str
    data: bytes  # the new state (for DELETED: the last state, at the deletion's rv)
    fields: dict
    old: _Stored | None  # the state before (None for ADDED)


def _key(kind: str, obj: dict) -> str:
    meta = obj.get("metadata") or {}
    name = meta.get("name")
    if not name:
        raise ValueError("metadata.name is required")
    return f"{meta.get('namespace') or 'default'}/{name}" if KIND_INFO[kind][2] else name


def _fields(kind: str, obj: dict) -> dict:
    meta = obj.get("metadata") or {}
    fields = {"metadata.name": meta.get("name", ""), "metadata.namespace": meta.get("namespace", "")}
    if kind == "Pod":
        fields["status.phase"] = (obj.get("status") or {}).get("phase", "")
        fields["spec.nodeName"] = (obj.get("spec") or {}).get("nodeName", "")
    return fields


def _parse_selector(text: str, kind: str) -> list[tuple[str, bool, str]]:
    """'a=b,c!=d' -> [(field, equal?, value)]; ValueError for a field the kind cannot select on."""
    terms = []
    for term in filter(None, (t.strip() for t in text.split(","))):
        if "!=" in term:
            field, value = term.split("!=", 1)
            equal = False
        elif "==" in term:
            field, value = term.split("==", 1)
            equal = True
        elif "=" in term:
            field, value = term.split("=", 1)
            equal = True
        else:
            raise ValueError(f"invalid field selector term {term!r}")
        allowed = {"metadata.name", "metadata.namespace"} | ({"status.phase", "spec.nodeName"} if kind == "Pod" else set())
        if field not in allowed:
            raise ValueError(f'field label not supported: {field}')
        terms.append((field, equal, value))
    return terms


def _matches(terms, fields: dict | None) -> bool:
    if fields is None:
        return False
    return all((fields.get(field, "") == value) == equal for field, equal, value in terms)


def _with_rv(data: bytes, rv: int, old_rv: int | None = None) -> bytes:
    if old_rv is not None:
        old, new = b'"resourceVersion":"%d"' % old_rv, b'"resourceVersion":"%d"' % rv
        if data.count(old) == 1:
            return data.replace(old, new)
    obj = json.loads(data)
    obj.setdefault("metadata", {})["resourceVersion"] = str(rv)
    return json.dumps(obj, separators=(",", ":")).encode()


def _status(code: int, reason: str, message: str) -> bytes:
    return json.dumps(
        {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
         "reason": reason, "code": code},
        separators=(",", ":"),
    ).encode()


class FakeKube:
    """The fake API server. All methods are thread-safe."""

    def __init__(
        self,
        history_limit: int = 100_000,
        bookmark_interval: float = 1.0,
        gone_as_event: bool = True,
        token: str | None = "fake-token",
        host: str = "127.0.0.1",
        port: int = 0,
    ):
        self.history_limit = history_limit
        self.bookmark_interval = bookmark_interval
        self.gone_as_event = gone_as_event  # False: a too-old watch gets HTTP 410 instead
        self.token = token
        self.delay = 0.0  # seconds every response waits before it is served
        # Watch body framing: "event" (one chunk per event, as the API server flushes),
        # "split" (every event split over two chunks, the first with a chunk extension),
        # "coalesced" (one chunk per batch of events); chunked=False sends a close-delimited
        # body instead; trickle writes the body a few bytes at a time.
        self.chunking = "event"
        self.chunked = True
        self.trickle = False
        self._cond = threading.Condition()
        self._rv = _FIRST_RV
        self._objects: dict[str, dict[str, _Stored]] = {kind: {} for kind in KIND_INFO}
        self._sorted: dict[str, list[str] | None] = {kind: [] for kind in KIND_INFO}
        self._history: list[_Event] = []
        self._compacted = _FIRST_RV  # events with rv <= this are gone; watches from older RVs get 410
        self._drop_epoch = 0
        self._drop_mid_event = False
        self._down = False
        self._failures: list[tuple[int, set[str] | None]] = []
        self._expire_continue = 0
        self._held: set[str] = set()
        self._paused = False
        self.requests: Counter[tuple[str, str]] = Counter()  # (kind, "list" | "watch" | "continue")
        self.watch_rvs: list[tuple[str, str]] = []  # (kind, resourceVersion) of every watch request
        self.list_limits: list[tuple[str, int]] = []  # (kind, limit) of every list request (0: none)
        self._connections: set[socket.socket] = set()
        self._host = host
        self._port = port
        self._httpd: ThreadingHTTPServer | None = None
        # TLS: serve HTTPS with this context (client certificates checked if it requires
        # them). Replacing it affects new connections; drop_connections() forces them.
        self.ssl_context: ssl.SSLContext | None = None
        self._thread: threading.Thread | None = None

    # --- lifecycle ----------------------------------------------------------------------

    def start(self) -> FakeKube:
        handler = _handler_class(self)
        _Server.allow_reuse_address = True
        self._httpd = _Server((self._host, self._port), handler)
        self._httpd.fake = self
        self._httpd.daemon_threads = True
        self._port = self._httpd.server_address[1]
        self._thread = threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="fakekube", daemon=True)
        self._thread.start()
        return self

    @property
    def port(self) -> int:
        return self._port

    @property
    def url(self) -> str:
        return f"{'https' if self.ssl_context is not None else 'http'}://{self._host}:{self._port}"

    def stop(self) -> None:
        self.go_down()

    def __enter__(self) -> FakeKube:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    def kubeconfig(self, directory: Path, name: str = "fake", token_file: Path | None = None,
                   ca_file: Path | None = None, cert_file: Path | None = None, key_file: Path | None = None) -> Path:
        """A kubeconfig file pointing at this server: bearer token (inline, or `token_file`),
        and for HTTPS the CA and client certificate files given."""
        user: dict[str, Any] = {"token": self.token} if self.token and not token_file else {}
        if token_file:
            user["tokenFile"] = str(token_file)
        if cert_file:
            user["client-certificate"], user["client-key"] = str(cert_file), str(key_file)
        cluster: dict[str, Any] = {"server": self.url}
        if ca_file:
            cluster["certificate-authority"] = str(ca_file)
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": name, "cluster": cluster}],
            "users": [{"name": name, "user": user}],
            "contexts": [{"name": name, "context": {"cluster": name, "user": name}}],
            "current-context": name,
        }
        path = Path(directory) / f"{name}.kubeconfig"
        path.write_text(json.dumps(config))  # JSON is YAML
        return path

    # --- faults -------------------------------------------------------------------------

    def go_down(self) -> None:
        """Stop listening and cut every connection (a crashed or restarting API server)."""
        with self._cond:
            self._down = True
            self._cond.notify_all()
        httpd, self._httpd = self._httpd, None
        if httpd is not None:
            httpd.shutdown()
            httpd.server_close()
        for sock in list(self._connections):
            _cut(sock)

    def come_up(self, compact: bool = False) -> None:
        """Listen again on the same port. `compact`: the restarted server kept no history,
        so watches from any earlier resourceVersion get 410 (the client must relist)."""
        if compact:
            self.compact()
        with self._cond:
            self._down = False
        deadline = time.monotonic() + 5
        while True:
            try:
                self.start()
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def drop_connections(self) -> None:
        """Cut every open connection (the clients must connect, authenticate, anew)."""
        for sock in list(self._connections):
            _cut(sock)

    def compact(self, keep: int = 0) -> None:
        """Forget all but the newest `keep` events (etcd compaction / a fresh watch cache)."""
        with self._cond:
            drop = max(0, len(self._history) - keep)
            if drop:
                self._compacted = self._history[drop - 1].rv
                del self._history[:drop]
            if not self._history:
                self._compacted = self._rv
            self._cond.notify_all()

    def drop_watches(self, mid_event: bool = False) -> None:
        """Cut every open watch stream; `mid_event`: after sending half of the next event."""
        with self._cond:
            self._drop_epoch += 1
            self._drop_mid_event = mid_event
            self._cond.notify_all()

    def fail_next(self, count: int, status: int = 500, kinds: Iterable[str] | None = None) -> None:
        """The next `count` requests (for `kinds`, default all) answer `status`."""
        with self._cond:
            self._failures.extend([(status, set(kinds) if kinds else None)] * count)

    def expire_continue(self, count: int = 1) -> None:
        """The next `count` requests that carry a continue token answer 410 Expired."""
        with self._cond:
            self._expire_continue += count

    def pause_watches(self) -> None:
        """Open watches stop sending (events pile up in the history) until resume_watches()."""
        with self._cond:
            self._paused = True

    def resume_watches(self) -> None:
        with self._cond:
            self._paused = False
            self._cond.notify_all()

    def hold_lists(self, kinds: Iterable[str]) -> None:
        with self._cond:
            self._held |= set(kinds)

    def release_lists(self) -> None:
        with self._cond:
            self._held.clear()
            self._cond.notify_all()

    # --- data ---------------------------------------------------------------------------

    @property
    def resource_version(self) -> int:
        with self._cond:
            return self._rv

    def put(self, obj: dict) -> int:
        """Create or replace an object (its `kind` says which); returns its new resourceVersion."""
        return self.put_many([obj])

    def put_many(self, objs: Iterable[dict]) -> int:
        encoded = []
        for obj in objs:
            kind = obj["kind"]
            meta = obj.setdefault("metadata", {})
            if KIND_INFO[kind][2]:
                meta.setdefault("namespace", "default")
            encoded.append((kind, _key(kind, obj), obj, _fields(kind, obj)))
        with self._cond:
            for kind, key, obj, fields in encoded:
                self._rv += 1
                meta = obj["metadata"]
                old = self._objects[kind].get(key)
                meta["resourceVersion"] = str(self._rv)
                if old is None:
                    meta.setdefault("uid", str(uuid.uuid4()))
                    meta.setdefault("creationTimestamp", "2024-01-01T00:00:00Z")
                data = json.dumps(obj, separators=(",", ":")).encode()
                stored = _Stored(self._rv, data, fields)
                self._objects[kind][key] = stored
                if old is None:
                    self._sorted[kind] = None
                self._record(_Event(self._rv, kind, "ADDED" if old is None else "MODIFIED", key, data, fields, old))
            self._cond.notify_all()
            return self._rv

    RV_PLACEHOLDER = b'"resourceVersion":"@RV@"'

    def put_encoded(self, kind: str, name: str, namespace: str | None, data: bytes, fields: dict) -> int:
        """Create or replace an object already serialized, for load generators: `data` is
        compact JSON holding RV_PLACEHOLDER where metadata.resourceVersion goes."""
        key = f"{namespace or 'default'}/{name}" if KIND_INFO[kind][2] else name
        with self._cond:
            self._rv += 1
            data = data.replace(self.RV_PLACEHOLDER, b'"resourceVersion":"%d"' % self._rv, 1)
            old = self._objects[kind].get(key)
            stored = _Stored(self._rv, data, fields)
            self._objects[kind][key] = stored
            if old is None:
                self._sorted[kind] = None
            self._record(_Event(self._rv, kind, "ADDED" if old is None else "MODIFIED", key, data, fields, old))
            self._cond.notify_all()
            return self._rv

    def load(self, objs: Iterable[dict]) -> int:
        """Bulk-create objects with no history (as if they existed before the server started)."""
        with self._cond:
            for obj in objs:
                kind = obj["kind"]
                meta = obj.setdefault("metadata", {})
                if KIND_INFO[kind][2]:
                    meta.setdefault("namespace", "default")
                self._rv += 1
                meta["resourceVersion"] = str(self._rv)
                meta.setdefault("uid", str(uuid.uuid4()))
                meta.setdefault("creationTimestamp", "2024-01-01T00:00:00Z")
                self._objects[kind][_key(kind, obj)] = _Stored(
                    self._rv, json.dumps(obj, separators=(",", ":")).encode(), _fields(kind, obj)
                )
                self._sorted[kind] = None
            self._history.clear()
            self._compacted = self._rv
            return self._rv

    def delete(self, kind: str, name: str, namespace: str | None = None) -> int | None:
        """Delete an object; returns the deletion's resourceVersion, or None if absent."""
        key = f"{namespace or 'default'}/{name}" if KIND_INFO[kind][2] else name
        with self._cond:
            old = self._objects[kind].pop(key, None)
            if old is None:
                return None
            self._rv += 1
            self._sorted[kind] = None
            self._record(_Event(self._rv, kind, "DELETED", key, _with_rv(old.data, self._rv, old.rv), old.fields, old))
            self._cond.notify_all()
            return self._rv

    def objects(self, kind: str) -> list[dict]:
        """Current objects of `kind`, in key order."""
        with self._cond:
            stored = self._objects[kind]
            return [json.loads(stored[key].data) for key in sorted(stored)]

    def get(self, kind: str, name: str, namespace: str | None = None) -> dict | None:
        key = f"{namespace or 'default'}/{name}" if KIND_INFO[kind][2] else name
        with self._cond:
            stored = self._objects[kind].get(key)
            return None if stored is None else json.loads(stored.data)

    def _record(self, event: _Event) -> None:
        self._history.append(event)
        if len(self._history) > self.history_limit * 1.25:
            drop = len(self._history) - self.history_limit
            self._compacted = self._history[drop - 1].rv
            del self._history[:drop]

    # --- serving (called by the handler) -------------------------------------------------

    def _take_failure(self, kind: str) -> int | None:
        with self._cond:
            for i, (status, kinds) in enumerate(self._failures):
                if kinds is None or kind in kinds:
                    del self._failures[i]
                    return status
        return None

    def _events_since(self, rv: int) -> list[_Event]:
        """History events with resourceVersion > rv (lock held; rv >= self._compacted)."""
        if not self._history:
            return []
        start = rv + 1 - self._history[0].rv
        return self._history[max(0, start):]

    def _sorted_keys(self, kind: str) -> list[str]:
        keys = self._sorted[kind]
        if keys is None:
            keys = self._sorted[kind] = sorted(self._objects[kind])
        return keys

    def list_page(self, kind: str, limit: int, token: str, selector: str) -> tuple[int, bytes]:
        """(HTTP status, body) of one list request."""
        try:
            terms = _parse_selector(selector, kind)
        except ValueError as error:
            return 400, _status(400, "BadRequest", str(error))
        api_version = KIND_INFO[kind][1]
        with self._cond:
            if token:
                try:
                    state = json.loads(base64.urlsafe_b64decode(token.encode()))
                    list_rv, start_after = int(state["rv"]), str(state["start"])
                except (ValueError, KeyError, TypeError):
                    return 400, _status(400, "BadRequest", "invalid continue token")
                if self._expire_continue > 0 or list_rv < self._compacted:
                    self._expire_continue = max(0, self._expire_continue - 1)
                    return 410, _status(410, "Expired", "The provided continue parameter is too old to display a "
                                                        "consistent list result. You can start a new list without "
                                                        "the continue parameter.")
            else:
                list_rv, start_after = self._rv, ""
            changes = [e for e in self._events_since(list_rv) if e.kind == kind]
            if not changes:
                objects = self._objects[kind]
                keys = self._sorted_keys(kind)
            else:  # the snapshot at list_rv: undo the newer changes
                objects = dict(self._objects[kind])
                for event in reversed(changes):
                    if event.old is None:
                        objects.pop(event.key, None)
                    else:
                        objects[event.key] = event.old
                keys = sorted(objects)
            begin = bisect.bisect_right(keys, start_after) if start_after else 0
            window = keys[begin:begin + limit] if limit > 0 else keys[begin:]
            items = [objects[k].data for k in window if not terms or _matches(terms, objects[k].fields)]
            more = limit > 0 and begin + limit < len(keys)
        meta = {"resourceVersion": str(list_rv)}
        if more:
            meta["continue"] = base64.urlsafe_b64encode(
                json.dumps({"rv": list_rv, "start": window[-1]}).encode()).decode()
        head = json.dumps({"kind": f"{kind}List", "apiVersion": api_version, "metadata": meta},
                          separators=(",", ":")).encode()
        return 200, head[:-1] + b',"items":[' + b",".join(items) + b"]}"


class _Server(ThreadingHTTPServer):
    """HTTP, or HTTPS with the fake's current ssl_context (handshake on the request's thread)."""

    fake: FakeKube | None = None

    def get_request(self):
        sock, address = super().get_request()
        context = self.fake.ssl_context if self.fake is not None else None
        if context is not None:
            sock = context.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        return sock, address

    def process_request_thread(self, request, client_address) -> None:
        if isinstance(request, ssl.SSLSocket):
            try:
                request.settimeout(5)
                request.do_handshake()  # refuses a client certificate the context does not trust
                request.settimeout(None)
            except (OSError, ssl.SSLError):
                self.shutdown_request(request)
                return
        super().process_request_thread(request, client_address)


def _cut(sock: socket.socket) -> None:
    try:
        sock.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass


def _handler_class(fake: FakeKube):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def setup(self) -> None:
            super().setup()
            fake._connections.add(self.connection)

        def finish(self) -> None:
            fake._connections.discard(self.connection)
            try:
                super().finish()
            except OSError:
                pass

        def log_message(self, fmt: str, *args) -> None:
            pass

        def _send(self, status: int, body: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:  # noqa: N802
            try:
                self._get()
            except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, OSError):
                self.close_connection = True

        def _get(self) -> None:
            if fake.delay:
                time.sleep(fake.delay)
            if fake._down:
                _cut(self.connection)
                self.close_connection = True
                return
            url = urlsplit(self.path)
            params = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
            if fake.token and self.headers.get("Authorization") != f"Bearer {fake.token}":
                return self._send(401, _status(401, "Unauthorized", "Unauthorized"))
            resource = RESOURCES.get(url.path)
            if resource is None:
                return self._send(404, _status(404, "NotFound", f"the server could not find {url.path}"))
            kind = resource[0]
            watching = params.get("watch") in ("true", "1")
            fake.requests[(kind, "watch" if watching else ("continue" if params.get("continue") else "list"))] += 1
            failure = fake._take_failure(kind)
            if failure is not None:
                reason = "TooManyRequests" if failure == 429 else "InternalError"
                return self._send(failure, _status(failure, reason, "injected failure"))
            if watching:
                return self._watch(kind, params)
            with fake._cond:
                while kind in fake._held and not fake._down:
                    fake._cond.wait(0.1)
            try:
                limit = int(params.get("limit") or 0)
            except ValueError:
                return self._send(400, _status(400, "BadRequest", "invalid limit"))
            fake.list_limits.append((kind, limit))
            status, body = fake.list_page(kind, limit, params.get("continue", ""), params.get("fieldSelector", ""))
            self._send(status, body)

        def _chunk(self, payload: bytes, extension: bytes = b"") -> bytes:
            return b"%x%s\r\n%s\r\n" % (len(payload), extension, payload)

        def _emit(self, lines: list[bytes], last: bool = False) -> None:
            """Frame event lines as configured and write them (plus the last chunk if `last`)."""
            if not fake.chunked:
                body = b"".join(lines)
            elif fake.chunking == "coalesced":
                body = self._chunk(b"".join(lines)) if lines else b""
            elif fake.chunking == "split":
                body = b"".join(self._chunk(line[: len(line) // 2], b";part=1") + self._chunk(line[len(line) // 2:])
                                for line in lines)
            else:
                body = b"".join(self._chunk(line) for line in lines)
            if last and fake.chunked:
                body += b"0\r\n\r\n"
            if not fake.trickle:
                if body:
                    self.wfile.write(body)
                return
            for start in range(0, len(body), 7):
                self.wfile.write(body[start:start + 7])
                time.sleep(0.0002)

        def _watch(self, kind: str, params: dict) -> None:
            _, api_version, _ = KIND_INFO[kind]
            try:
                terms = _parse_selector(params.get("fieldSelector", ""), kind)
            except ValueError as error:
                return self._send(400, _status(400, "BadRequest", str(error)))
            bookmarks = params.get("allowWatchBookmarks") in ("true", "1")
            timeout = float(params.get("timeoutSeconds") or 1800)
            rv_param = params.get("resourceVersion", "")
            fake.watch_rvs.append((kind, rv_param))
            initial: list[bytes] = []
            with fake._cond:
                epoch = fake._drop_epoch
                if rv_param in ("", "0"):
                    cursor = fake._rv
                    initial = [s.data for s in fake._objects[kind].values() if not terms or _matches(terms, s.fields)]
                else:
                    try:
                        cursor = int(rv_param)
                    except ValueError:
                        return self._send(400, _status(400, "BadRequest", f"invalid resourceVersion {rv_param!r}"))
                    gone = cursor < fake._compacted
                    if gone and not fake.gone_as_event:
                        return self._send(410, _status(410, "Expired", f"too old resource version: {cursor} "
                                                                       f"({fake._compacted + 1})"))
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            if fake.chunked:
                self.send_header("Transfer-Encoding", "chunked")
            else:
                self.send_header("Connection", "close")
                self.close_connection = True
            self.end_headers()
            write = self.wfile.write
            self._emit([b'{"type":"ADDED","object":' + data + b"}\n" for data in initial])
            deadline = time.monotonic() + timeout

            def bookmark_after(now: float) -> float:
                at = min(now + fake.bookmark_interval, deadline - 2.0)
                return at if at > now else float("inf")

            next_bookmark = bookmark_after(time.monotonic())
            ended = False
            while not ended:
                now = time.monotonic()
                with fake._cond:
                    while True:
                        if fake._down or fake._drop_epoch != epoch or cursor < fake._compacted:
                            break
                        if fake._history and fake._history[-1].rv > cursor and not fake._paused:
                            break
                        now = time.monotonic()
                        wake = min(deadline, next_bookmark if bookmarks and not fake._paused else deadline)
                        if now >= wake:
                            break
                        fake._cond.wait(wake - now)
                    if fake._down:
                        _cut(self.connection)
                        self.close_connection = True
                        return
                    if fake._drop_epoch != epoch:
                        mid = fake._drop_mid_event
                        break_stream = True
                    else:
                        break_stream = False
                    if cursor < fake._compacted:
                        status = _status(410, "Expired", f"too old resource version: {cursor} ({fake._compacted + 1})")
                        self._emit([b'{"type":"ERROR","object":' + status + b"}\n"], last=True)
                        return
                    events = fake._events_since(cursor)[:2000]
                if break_stream:
                    if mid:
                        line = b'{"type":"BOOKMARK","object":{"kind":"%s","apiVersion":"%s","metadata":' \
                               b'{"resourceVersion":"%d"}}}\n' % (kind.encode(), api_version.encode(), cursor)
                        write((b"%x\r\n" % len(line) if fake.chunked else b"") + line[: len(line) // 2])
                    _cut(self.connection)
                    self.close_connection = True
                    return
                out = []
                for event in events:
                    if event.kind != kind:
                        continue
                    if terms:
                        was = event.old is not None and _matches(terms, event.old.fields)
                        now_in = event.type != "DELETED" and _matches(terms, event.fields)
                        if not was and not now_in:
                            continue
                        etype = event.type if was == now_in else ("ADDED" if now_in else "DELETED")
                    else:
                        etype = event.type
                    out.append(b'{"type":"%s","object":%s}\n' % (etype.encode(), event.data))
                if events:
                    cursor = events[-1].rv
                now = time.monotonic()
                ended = now >= deadline
                if bookmarks and now >= next_bookmark:
                    line = b'{"type":"BOOKMARK","object":{"kind":"%s","apiVersion":"%s","metadata":' \
                           b'{"resourceVersion":"%d"}}}\n' % (kind.encode(), api_version.encode(), cursor)
                    out.append(line)
                    next_bookmark = bookmark_after(now)
                if out:
                    self._emit(out)
            self._emit([], last=True)

    return Handler


# --- object builders (wire-shaped dicts, as the API server returns them) -------------------

_counter = itertools.count()


def node_object(name: str, cpu: str = "8", memory: str = "32Gi", pods: int = 110, gpu: int = 0,
                zone: str | None = None, labels: dict | None = None, taints: list | None = None,
                unschedulable: bool = False) -> dict:
    allocatable = {"cpu": cpu, "memory": memory, "pods": str(pods), "ephemeral-storage": "100Gi"}
    if gpu:
        allocatable["nvidia.com/gpu"] = str(gpu)
    all_labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", **(labels or {})}
    if zone:
        all_labels["topology.kubernetes.io/zone"] = zone
    spec: dict[str, Any] = {}
    if taints:
        spec["taints"] = taints
    if unschedulable:
        spec["unschedulable"] = True
    return {
        "kind": "Node",
        "apiVersion": "v1",
        "metadata": {"name": name, "labels": all_labels},
        "spec": spec,
        "status": {"allocatable": allocatable, "capacity": dict(allocatable),
                   "conditions": [{"type": "Ready", "status": "True"}]},
    }


def pod_object(namespace: str, name: str, node: str | None = None, cpu: str = "100m", memory: str = "128Mi",
               gpu: int = 0, phase: str = "Running", labels: dict | None = None, owner: dict | None = None,
               unschedulable_since: str | None = None) -> dict:
    requests = {"cpu": cpu, "memory": memory}
    if gpu:
        requests["nvidia.com/gpu"] = str(gpu)
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "labels": dict(labels or {})}
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": owner.get("kind", "ReplicaSet"),
                                    "name": owner["name"], "uid": owner["uid"], "controller": True}]
    spec: dict[str, Any] = {"containers": [{"name": "main", "image": "registry.example/app:1",
                                            "resources": {"requests": requests}}]}
    status: dict[str, Any] = {"phase": phase}
    if node:
        spec["nodeName"] = node
        status["conditions"] = [{"type": "PodScheduled", "status": "True"}]
    elif unschedulable_since:
        status["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                 "lastTransitionTime": unschedulable_since}]
    return {"kind": "Pod", "apiVersion": "v1", "metadata": meta, "spec": spec, "status": status}


def quota_object(namespace: str, name: str, hard: dict, used: dict | None = None) -> dict:
    return {"kind": "ResourceQuota", "apiVersion": "v1", "metadata": {"name": name, "namespace": namespace},
            "spec": {"hard": dict(hard)}, "status": {"hard": dict(hard), "used": dict(used or {})}}


def _template(labels: dict, cpu: str) -> dict:
    return {"metadata": {"labels": dict(labels)},
            "spec": {"containers": [{"name": "main", "image": "registry.example/app:1",
                                     "resources": {"requests": {"cpu": cpu}}}]}}


def deployment_object(namespace: str, name: str, uid: str, labels: dict, cpu: str = "100m") -> dict:
    return {"kind": "Deployment", "apiVersion": "apps/v1",
            "metadata": {"name": name, "namespace": namespace, "uid": uid},
            "spec": {"replicas": 1, "selector": {"matchLabels": dict(labels)}, "template": _template(labels, cpu)}}


def replicaset_object(namespace: str, name: str, uid: str, deployment: dict, template_hash: str = "abc123",
                      cpu: str | None = None) -> dict:
    labels = dict(deployment["spec"]["selector"]["matchLabels"])
    template = json.loads(json.dumps(deployment["spec"]["template"]))
    if cpu is not None:
        template["spec"]["containers"][0]["resources"]["requests"]["cpu"] = cpu
    template["metadata"]["labels"]["pod-template-hash"] = template_hash
    return {"kind": "ReplicaSet", "apiVersion": "apps/v1",
            "metadata": {"name": name, "namespace": namespace, "uid": uid,
                         "labels": {**labels, "pod-template-hash": template_hash},
                         "creationTimestamp": "2024-01-01T00:00:00Z",
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment",
                                              "name": deployment["metadata"]["name"],
                                              "uid": deployment["metadata"]["uid"], "controller": True}]},
            "spec": {"replicas": 1, "selector": {"matchLabels": labels}, "template": template}}


# --- the oracle: what a cache fed the fake's final objects looks like -------------------------

def reference_cache(fake: FakeKube, skip_malformed: bool = True):
    """A fresh ClusterCache fed the fake's current objects, kind by kind in key order (the
    order a list returns them), pods filtered by the estimator's field selector."""
    from estimator.cache import KINDS, ClusterCache
    from estimator.model import TERMINAL_POD_PHASES

    cache = ClusterCache()
    for kind in KINDS:  # the cache's own order: nodes first
        for obj in fake.objects(kind):
            if kind == "Pod" and (obj.get("status") or {}).get("phase") in TERMINAL_POD_PHASES:
                continue
            try:
                cache.upsert(kind, obj)
            except (ValueError, TypeError, AttributeError, KeyError):
                if not skip_malformed:
                    raise
    return cache


def state_view(snapshot, now: float = 2_000_000_000.0) -> dict:
    """Everything an estimate can observe in a snapshot, free of history-dependent numbering
    (resource column order, class ids): node order, per-node amounts by resource name, each
    node's class and hostname, quotas, workload records and GetUnschedulableReplicas answers."""
    from estimator.model import WorkloadRef

    names = snapshot.resource_names
    nodes = []
    for i, name in enumerate(snapshot.node_names):
        allocatable = {r: int(v) for r, v in zip(names, snapshot.allocatable[i]) if v}
        available = {r: int(v) for r, v in zip(names, snapshot.available[i]) if v}
        node_class = snapshot.classes[int(snapshot.node_class[i])]
        hostname = snapshot.hostnames[i] if snapshot.hostnames else None
        nodes.append((name, allocatable, available, node_class, hostname))
    workloads = snapshot.workloads
    plain = lambda by_ns: {ns: dict(records) for ns, records in by_ns.items()}  # noqa: E731
    answers = {}
    for namespace, deployments in workloads.deployments.items():
        for name in deployments:
            ref = WorkloadRef("apps/v1", "Deployment", namespace, name, 0.0)
            answers[(namespace, name)] = workloads.count_unschedulable(ref, now)
    return {
        "node_order": tuple(snapshot.node_names),
        "nodes": nodes,
        "quotas": {ns: tuple(records) for ns, records in snapshot.quotas.items()},
        "deployments": plain(workloads.deployments),
        "replicasets": plain(workloads.replicasets),
        "unschedulable": plain(workloads.unschedulable),
        "unschedulable_answers": answers,
    }
