"""Plain-HTTP endpoints: /healthz and /readyz on the probe port, /metrics on its own port."""

from __future__ import annotations

import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Callable

log = logging.getLogger("estimator.http")

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


def _handler(routes: dict[str, Route]):
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server naming
            route = routes.get(self.path.split("?", 1)[0])
            status, content_type, body = (404, "text/plain", b"not found\n") if route is None else route()
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, fmt: str, *args) -> None:
            log.debug("%s " + fmt, self.address_string(), *args)

    return Handler


class HttpEndpoint:
    def __init__(self, address: tuple[str, int], routes: dict[str, Route], name: str):
        self.name = name
        ThreadingHTTPServer.allow_reuse_address = True
        self._server = ThreadingHTTPServer(address, _handler(routes))
        self._server.daemon_threads = True
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
