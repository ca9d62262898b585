"""Plain-HTTP endpoints: /healthz and /readyz on the probe port, /metrics on its own port.

Each endpoint serves at most `MAX_CONNECTIONS` connections at once, one thread each; a
connection beyond that is closed at once, unread (the kubelet and Prometheus open one at a
time). A connection has `READ_SECONDS` in all to send its request line and headers, however
slowly its bytes trickle in (a slowloris holds a thread for no longer), and is closed after
one answer.
"""

from __future__ import annotations

import io
import logging
import socket
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from typing import TypeAlias

    from typing_extensions import Buffer  # PEP 688, in typing from 3.12: what readinto fills

    # What socketserver hands a server's request methods (to a TCP server: the connection's socket).
    _Request: TypeAlias = socket.socket | tuple[bytes, socket.socket]

log = logging.getLogger("estimator.http")

MAX_CONNECTIONS = 32
READ_SECONDS = 5.0

# A route answers (status, content type, body).
Route = Callable[[], tuple[int, str, bytes]]


class BindAddressError(ValueError):
    pass


def parse_bind_address(value: str) -> tuple[str, int] | None:
    """':8080', '127.0.0.1:0', '[::1]:10351' -> (host, port); '0' disables the endpoint."""
    if value == "0":
        return None
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or int(port) > 65535:
        raise BindAddressError(f"bind address {value!r} must look like HOST:PORT or :PORT (or 0 to disable)")
    host = host.strip("[]") or "0.0.0.0"
    return host, int(port)


class _DeadlineReader(io.RawIOBase):
    """A socket's bytes, each read given what is left of one deadline for the whole request."""

    def __init__(self, sock: socket.socket, deadline: float):
        self._sock, self._deadline = sock, deadline

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Buffer) -> int:
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("request not received in time")
        self._sock.settimeout(left)
        return self._sock.recv_into(buffer)


def _handler(routes: dict[str, Route]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        timeout = READ_SECONDS  # writes too: a client that stops reading is dropped

        def setup(self) -> None:
            super().setup()
            self.rfile = io.BufferedReader(_DeadlineReader(self.connection, time.monotonic() + READ_SECONDS))

        def do_GET(self) -> None:  # noqa: N802 - http.server naming
            self.connection.settimeout(READ_SECONDS)  # the answer's writes get their own time
            route = routes.get(self.path.split("?", 1)[0])
            status, content_type, body = (404, "text/plain", b"not found\n") if route is None else route()
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, fmt: str, *args: object) -> None:
            log.debug("%s " + fmt, self.address_string(), *args)

    return Handler


class _BoundedServer(ThreadingHTTPServer):
    """ThreadingHTTPServer with at most `MAX_CONNECTIONS` connection threads."""

    allow_reuse_address = True
    daemon_threads = True
    request_queue_size = 128  # connections refused beyond the cap are accepted (and closed) at once

    def __init__(self, address: tuple[str, int], handler: type[BaseHTTPRequestHandler]):
        super().__init__(address, handler)
        self._slots = threading.BoundedSemaphore(MAX_CONNECTIONS)
        self.refused = 0

    def process_request(self, request: _Request, client_address: tuple[str, int]) -> None:
        if not self._slots.acquire(blocking=False):
            self.refused += 1
            self.shutdown_request(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._slots.release()
            raise

    def handle_error(self, request: _Request, client_address: tuple[str, int]) -> None:
        # A client that vanished mid-answer is not worth a traceback on stderr.
        log.debug("HTTP connection from %s failed", client_address, exc_info=True)

    def process_request_thread(self, request: _Request, client_address: tuple[str, int]) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._slots.release()


class HttpEndpoint:
    def __init__(self, address: tuple[str, int], routes: dict[str, Route], name: str):
        self.name = name
        self._server = _BoundedServer(address, _handler(routes))
        self._thread = threading.Thread(target=self._server.serve_forever, name=f"http-{name}", daemon=True)

    @property
    def port(self) -> int:
        return self._server.server_address[1]

    def start(self) -> None:
        self._thread.start()
        log.info("%s listening on %s:%d", self.name, self._server.server_address[0], self.port)

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
