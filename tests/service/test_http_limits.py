"""The probe and metrics endpoints hold a bounded number of connections, each for a bounded
time: 1,500 idle connections used to start 1,500 threads, and a client trickling its
request one byte at a time held its thread for as long as it liked."""

from __future__ import annotations

import socket
import threading
import time
import urllib.request

import pytest

from estimator.service import httpendpoints
from estimator.service.httpendpoints import HttpEndpoint

READ = 1.0  # seconds a connection has to send its request here (production: READ_SECONDS)


@pytest.fixture
def endpoint(monkeypatch):
    monkeypatch.setattr(httpendpoints, "READ_SECONDS", READ, raising=False)
    served = HttpEndpoint(("127.0.0.1", 0), {"/healthz": lambda: (200, "text/plain", b"ok\n")}, "probes")
    served.start()
    yield served
    served.stop()


def get(port: int) -> bytes:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=5) as answer:
        return answer.read()


def test_idle_connections_start_a_bounded_number_of_threads_and_are_dropped_in_time(endpoint):
    assert get(endpoint.port) == b"ok\n"
    before = threading.active_count()
    idle = [socket.create_connection(("127.0.0.1", endpoint.port)) for _ in range(150)]
    try:
        time.sleep(0.5)
        assert threading.active_count() - before <= 32  # httpendpoints.MAX_CONNECTIONS
        time.sleep(READ + 1.0)  # every idle one has had its time
        assert threading.active_count() - before <= 2
        assert get(endpoint.port) == b"ok\n"
    finally:
        for connection in idle:
            connection.close()


def test_a_request_trickled_a_byte_at_a_time_is_cut_off_at_the_deadline(endpoint):
    connection = socket.create_connection(("127.0.0.1", endpoint.port))
    started = time.monotonic()
    closed_after = None
    try:
        for byte in b"GET /healthz HTTP/1.0\r\nX-Slow: " + b"a" * 100:
            try:
                connection.sendall(bytes([byte]))
                time.sleep(0.1)  # each byte well within any per-read timeout
                connection.setblocking(False)
                if connection.recv(1) == b"":
                    closed_after = time.monotonic() - started
                    break
            except BlockingIOError:
                pass
            except OSError:
                closed_after = time.monotonic() - started
                break
            finally:
                connection.setblocking(True)
    finally:
        connection.close()
    assert closed_after is not None and closed_after < READ + 1.5
