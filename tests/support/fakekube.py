"""A small fake Kubernetes API server: plain HTTP/1.1 on loopback, for tests and benchmarks.

It speaks the part of the API the estimator's list/watch loop uses, with the semantics of
a real kube-apiserver backed by etcd:

- objects of eight kinds (Node, Pod, ResourceQuota, ReplicaSet, Deployment and DRA's DeviceClass,
  ResourceSlice, ResourceClaim) under one global
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

Driven in tests through the estimator's real watch client via `kubeconfig()`.
"""

from __future__ import annotations

import base64
import bisect
import json
import socket
import ssl
import threading
import time
import uuid
from collections import Counter
from http.server import ThreadingHTTPServer
from pathlib import Path
from typing import Any, Iterable

from tests.support.kubestore import (
    KIND_INFO,
    _Event,
    _FIRST_RV,
    _Stored,
    _fields,
    _key,
    _matches,
    _parse_selector,
    _status,
    _with_rv,
)

from tests.support.kubehttp import _Server, _cut, _handler_class


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
