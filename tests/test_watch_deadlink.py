"""A connection that stops carrying bytes without FIN or RST.

A TCP relay between the estimator and the fake API server forwards bytes until told to
silence the connections it has open: they stay open (TCP still acknowledges) but nothing
passes any more. The watch must notice (no event or bookmark within its idle bound), drop
every pooled connection and resume through a new one that carries the changes made
meanwhile. The idle bound is shortened so the test runs in seconds.
"""

from __future__ import annotations

import json
import socket
import threading

import pytest

from estimator.watch import ReflectorOptions, WatchClusterState
from estimator.watch.kubeclient import KEEPALIVE_COUNT, KEEPALIVE_IDLE, KEEPALIVE_INTERVAL, socket_options
from fakekube import FakeKube, pod_object, reference_cache, state_view
from test_watch import FAST, small_cluster, wait_until


class Relay:
    """Forwards TCP connections to `target`; silence() freezes the ones open now."""

    def __init__(self, target_port: int):
        self.target = ("127.0.0.1", target_port)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self._generation = 0
        self._lock = threading.Lock()
        self.connections = 0
        self._sockets: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.target)
            with self._lock:
                self.connections += 1
                generation = self._generation
                self._sockets += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b, generation), daemon=True).start()

    def _pipe(self, source: socket.socket, sink: socket.socket, generation: int) -> None:
        while True:
            try:
                data = source.recv(65536)
            except OSError:
                return
            if generation != self._generation:
                # Silenced: swallow everything, send nothing, close nothing.
                if not data:
                    return
                continue
            if not data:
                try:
                    sink.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
                return
            try:
                sink.sendall(data)
            except OSError:
                return

    def silence(self) -> None:
        with self._lock:
            self._generation += 1

    def close(self) -> None:
        self.listener.close()
        for sock in self._sockets:
            try:
                sock.close()
            except OSError:
                pass


@pytest.fixture
def setup(tmp_path):
    fake = FakeKube(bookmark_interval=0.2).start()
    relay = Relay(fake.port)
    config = json.loads(fake.kubeconfig(tmp_path).read_text())
    config["clusters"][0]["cluster"]["server"] = f"http://127.0.0.1:{relay.port}"
    path = tmp_path / "relay.kubeconfig"
    path.write_text(json.dumps(config))
    states = []

    def make(**options):
        # Watches are asked to last 5 minutes, as in production: only the idle bound can
        # notice the silence within the test's time.
        merged = {**FAST, "min_watch_timeout": 300.0, "read_timeout_margin": 30.0, **options}
        state = WatchClusterState(kubeconfig=str(path), qps=0, burst=1, options=ReflectorOptions(**merged))
        states.append(state)
        state.start()
        return state

    yield fake, relay, make
    for state in states:
        state.stop()
    relay.close()
    fake.stop()


def test_a_silenced_connection_is_replaced_and_the_cache_converges(setup):
    fake, relay, make = setup
    small_cluster(fake)
    state = make(watch_idle_timeout=1.0)
    assert wait_until(state.synced)
    before = relay.connections
    relay.silence()
    fake.put(pod_object("shop", "after-silence", node="n1", cpu="3"))
    fake.delete("Pod", "p0", "shop")
    expected = state_view(reference_cache(fake).snapshot())
    assert wait_until(lambda: state_view(state.cache.snapshot()) == expected, timeout=15)
    assert relay.connections > before, "resumed through new connections"
    assert state.reflectors["Pod"].errors.get("silent", 0) >= 1
    assert state.reflectors["Pod"].lists == 1, "resumed from its resourceVersion, no relist"


def test_a_healthy_quiet_watch_is_not_taken_for_dead(setup):
    fake, relay, make = setup
    small_cluster(fake)
    state = make(watch_idle_timeout=1.0)  # bookmarks every 0.2 s keep it alive
    assert wait_until(state.synced)
    assert not wait_until(lambda: any(r.errors for r in state.reflectors.values()), timeout=3)


def test_api_connections_use_tcp_keepalive():
    options = {(level, name): value for level, name, value in socket_options()}
    assert options[(socket.SOL_SOCKET, socket.SO_KEEPALIVE)] == 1
    if hasattr(socket, "TCP_KEEPIDLE"):
        assert options[(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE)] == KEEPALIVE_IDLE
    # A peer that stops answering is dropped within the convergence goal of a minute.
    assert KEEPALIVE_IDLE + KEEPALIVE_COUNT * KEEPALIVE_INTERVAL <= 45
