"""The fake API server's HTTP side: the threaded server, and the handler that answers list,
watch and write requests from a FakeKube's store (and injects its faults)."""

from __future__ import annotations
from typing import TYPE_CHECKING


import socket
import ssl
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from tests.support.kubestore import KIND_INFO, RESOURCES, _matches, _parse_selector, _status

if TYPE_CHECKING:
    from tests.support.fakekube import FakeKube


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
