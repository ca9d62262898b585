"""A connection that stops carrying bytes without FIN or RST.

A TCP relay between the estimator and the fake API server forwards bytes until told to
silence the connections it has open: they stay open (TCP still acknowledges) but nothing
passes any more. Every watch asks the server to end it at timeoutSeconds; one that neither
ends nor delivers a byte by then plus a margin is presumed dead, every pooled connection is
dropped and the watch resumes from its resourceVersion through a new connection, which
carries the changes made meanwhile. The fake sends no bookmarks here, so only the watch
deadline can tell a quiet live link from a dead one. Watches last a second in these tests;
the production figures are checked on the requests a reflector makes.
"""

from __future__ import annotations

import json
import random
import socket
import threading

import pytest

from estimator.cluster.cache import ClusterCache
from estimator.cluster.watch import ReflectorOptions, WatchClusterState
from estimator.cluster.watch.kubeclient import KEEPALIVE_COUNT, KEEPALIVE_IDLE, KEEPALIVE_INTERVAL, Silent, socket_options
from estimator.cluster.watch.ratelimit import TokenBucket
from estimator.cluster.watch.reflector import Reflector
from estimator.cluster.watch.specs import KIND_SPECS
from tests.cluster.test_watch import FAST, small_cluster, wait_until
from tests.cluster.test_watch_backoff import FakeClock
from tests.support.fakekube import FakeKube
from tests.support.kubeobjects import pod_object, reference_cache, state_view

# One-second watches (timeoutSeconds = int(1.0 .. 1.5)), presumed dead 1.5 s after their
# deadline: generous against a busy machine, still seconds.
SHORT = dict(min_watch_timeout=1.0, watch_timeout_jitter=0.5, read_timeout_margin=1.5)


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
    fake = FakeKube(bookmark_interval=600.0).start()  # no bookmark ever reaches a 1 s watch
    relay = Relay(fake.port)
    config = json.loads(fake.kubeconfig(tmp_path).read_text())
    config["clusters"][0]["cluster"]["server"] = f"http://127.0.0.1:{relay.port}"
    path = tmp_path / "relay.kubeconfig"
    path.write_text(json.dumps(config))
    states = []

    def make(**options):
        state = WatchClusterState(kubeconfig=str(path), qps=0, burst=1,
                                  options=ReflectorOptions(**{**FAST, **SHORT, **options}))
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
    state = make()
    assert wait_until(state.synced)
    before = relay.connections
    relay.silence()
    fake.put(pod_object("shop", "after-silence", node="n1", cpu="3"))
    fake.delete("Pod", "p0", "shop")
    expected = state_view(reference_cache(fake).snapshot())
    assert wait_until(lambda: state_view(state.cache.snapshot()) == expected, timeout=15)
    pods = state.reflectors["Pod"]
    assert relay.connections > before, "resumed through new connections"
    assert pods.errors.get("silent", 0) >= 1
    assert pods.lists == 1, "resumed from its resourceVersion, no relist"
    assert pods.bookmarks == 0, "noticed without any bookmark"


def test_a_healthy_quiet_watch_is_not_taken_for_dead(setup):
    fake, relay, make = setup
    small_cluster(fake)
    # Presumed dead 5 s past the deadline, not 1.5 s: a process stalled that long (a starved
    # CI box) took a healthy watch for dead. Nothing here waits for the margin to run out.
    state = make(read_timeout_margin=5.0)
    assert wait_until(state.synced)
    pods = state.reflectors["Pod"]
    assert wait_until(lambda: pods.bookmarks == 0 and
                      sum(1 for kind, rv in fake.watch_rvs if kind == "Pod") >= 4, timeout=15)
    # Quiet (no event, no bookmark) for several watch lifetimes: each watch ended at its
    # deadline and was resumed; none was cut as dead, nothing was relisted.
    assert not any(r.errors for r in state.reflectors.values()), {k: r.errors for k, r in state.reflectors.items()}
    assert pods.lists == 1 and pods.bookmarks == 0
    assert all(rv for kind, rv in fake.watch_rvs if kind == "Pod"), "every watch resumed from a resourceVersion"


class _RecordingClient:
    """Records the watch requests a reflector makes: the first watch goes silent, later ones
    end at once with a bookmark; stops the reflector after `watches` requests."""

    def __init__(self, stop: threading.Event, watches: int):
        self.requests: list[tuple[int, float]] = []
        self._stop, self._watches = stop, watches

    def list_page(self, kind, *, limit, continue_token="", field_selector="", timeout=60.0) -> bytes:
        return b'{"metadata":{"resourceVersion":"5"},"items":[]}'

    def watch(self, kind, *, resource_version, timeout_seconds, read_timeout, field_selector=""):
        self.requests.append((timeout_seconds, read_timeout))
        if len(self.requests) >= self._watches:
            self._stop.set()
        return _Stream(silent=len(self.requests) == 1)

    def fresh_connections(self) -> None:
        pass

    def close(self) -> None:
        pass


class _Stream:
    def __init__(self, silent: bool):
        self._silent = silent

    def lines(self):
        if self._silent:
            raise Silent("watch Pod: silent")
        yield b'{"type":"BOOKMARK","object":{"kind":"Pod","metadata":{"resourceVersion":"6"}}}'

    def abort(self) -> None:
        pass

    def close(self) -> None:
        pass


def test_production_defaults_notice_a_silenced_link_within_a_minute():
    """With the default options: how long a watch may stay silent before it is presumed
    dead (its read timeout), plus the backoff before the fresh watch, must leave the new
    connection time to converge within 60 s; and no healthy watch is cut before the API
    server could end it."""
    clock = FakeClock(1e9)
    stop = threading.Event()
    client = _RecordingClient(stop, watches=300)
    spec = next(s for s in KIND_SPECS if s.kind == "Pod")
    # Production timings; only the clock (no real sleeping) and the random draws are fixed.
    options = ReflectorOptions(clock=clock, wait=clock.wait, min_watch_seconds=0, rng=random.Random(7))
    Reflector(spec, client, ClusterCache(), TokenBucket(0, 1), stop, options)._loop()
    timeouts = [t for t, _ in client.requests]
    silent_for = [r for _, r in client.requests]
    first_backoff = clock.waits[0]  # after the silent first watch
    assert len(client.requests) == 300
    assert max(silent_for) + first_backoff <= 55, (max(silent_for), first_backoff)
    assert all(r - t >= 3 for t, r in client.requests), "a margin past the server's deadline"
    assert min(timeouts) >= 20, "watches long enough not to load the API server"
    assert len(set(timeouts)) >= 5, "deadlines spread, so estimators do not reconnect in step"


def test_api_connections_use_tcp_keepalive():
    options = {(level, name): value for level, name, value in socket_options()}
    assert options[(socket.SOL_SOCKET, socket.SO_KEEPALIVE)] == 1
    if hasattr(socket, "TCP_KEEPIDLE"):
        assert options[(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE)] == KEEPALIVE_IDLE
    # A peer that stops answering is dropped within the convergence goal of a minute.
    assert KEEPALIVE_IDLE + KEEPALIVE_COUNT * KEEPALIVE_INTERVAL <= 45
