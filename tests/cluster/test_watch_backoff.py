"""Backoff of the list/watch loop, on an injected clock (no wall-clock waits or asserts).

A scripted client stands in for the API server; the loop's sleeps advance the fake clock,
so "how many relists in ten minutes" is counted exactly, in milliseconds of real time.
"""

from __future__ import annotations

import json
import threading

from estimator.cluster.watch import ReflectorOptions, TokenBucket
from estimator.cluster.watch.kubeclient import Unavailable
from estimator.cluster.watch.reflector import Reflector
from estimator.cluster.watch.specs import KIND_SPECS

GONE = {"type": "ERROR", "object": {"kind": "Status", "code": 410, "reason": "Expired", "message": "too old"}}
INTERNAL = {"type": "ERROR", "object": {"kind": "Status", "code": 500, "reason": "InternalError", "message": "etcd"}}
BOOKMARK = {"type": "BOOKMARK", "object": {"kind": "Pod", "metadata": {"resourceVersion": "7"}}}


class FakeClock:
    def __init__(self, limit: float):
        self.now = 0.0
        self.limit = limit
        self.waits: list[float] = []

    def __call__(self) -> float:
        return self.now

    def wait(self, stop: threading.Event, seconds: float) -> bool:
        self.waits.append(seconds)
        self.now += seconds
        if self.now >= self.limit:
            stop.set()
        return stop.is_set()


class _Stream:
    def __init__(self, lines):
        self._lines = lines

    def lines(self):
        for line in self._lines:
            if callable(line):
                line()  # a side effect between events (time passing, a reload)
                continue
            yield json.dumps(line).encode()

    def abort(self) -> None:
        pass

    def close(self) -> None:
        pass


class ScriptedClient:
    """list_page/watch answer from per-call scripts; past the script, the last entry repeats."""

    host = "scripted"

    def __init__(self, lists: list, watches: list, stop: threading.Event, max_calls: int = 2000):
        self.lists, self.watches = lists, watches
        self.list_calls = self.watch_calls = 0
        self._stop = stop
        self._max = max_calls

    def _step(self, script: list, n: int):
        if n > self._max:  # a hot loop: end the run rather than spin forever
            self._stop.set()
        entry = script[min(n - 1, len(script) - 1)]
        if isinstance(entry, Exception):
            raise entry
        return entry

    def list_page(self, kind, *, limit, continue_token="", field_selector="", timeout=60.0) -> bytes:
        self.list_calls += 1
        self._step(self.lists, self.list_calls)
        return b'{"metadata":{"resourceVersion":"5"},"items":[]}'

    def watch(self, kind, *, resource_version, timeout_seconds, read_timeout, field_selector=""):
        self.watch_calls += 1
        return _Stream(self._step(self.watches, self.watch_calls))

    def close(self) -> None:
        pass

    def fresh_connections(self) -> None:
        pass


def run(lists: list, watches: list, seconds: float = 600.0, **options):
    clock = FakeClock(seconds)
    stop = threading.Event()
    client = ScriptedClient(lists, watches, stop)
    spec = next(s for s in KIND_SPECS if s.kind == "Pod")
    from estimator.cluster.cache import ClusterCache

    reflector = Reflector(spec, client, ClusterCache(), TokenBucket(0, 1), stop,
                          ReflectorOptions(clock=clock, wait=clock.wait, min_watch_seconds=0, **options))
    reflector._loop()
    return reflector, client, clock


def _most_attempts(seconds: float, initial: float = 0.8, cap: float = 30.0, jitter: float = 0.5) -> int:
    """Attempts that fit in `seconds` if every delay is the shortest the backoff may draw."""
    elapsed, attempts, step = 0.0, 0, initial
    while elapsed < seconds:
        elapsed += step * (1 - jitter)
        step = min(cap, step * 2)
        attempts += 1
    return attempts


def test_a_watch_that_fails_right_after_every_list_does_not_drive_a_relist_loop():
    reflector, client, clock = run(lists=[None], watches=[[GONE]], seconds=600)
    bound = _most_attempts(600)
    assert client.list_calls <= bound, f"{client.list_calls} full lists in 10 minutes (at most {bound} expected)"
    assert client.list_calls >= 10, "it keeps trying"
    assert max(clock.waits) <= 30.0


def test_the_backoff_starts_over_only_after_a_healthy_stretch():
    def passes(seconds):
        def advance():
            clock_box[0].now += seconds
        return advance

    clock_box: list = []
    # Watches fail at once five times, then one stays healthy for 130 s, then they fail again.
    long_healthy = [BOOKMARK, lambda: passes(130)(), GONE]
    watches = [[GONE]] * 5 + [long_healthy] + [[GONE]]
    clock = FakeClock(400)
    clock_box.append(clock)
    stop = threading.Event()
    client = ScriptedClient([None], watches, stop)
    from estimator.cluster.cache import ClusterCache

    spec = next(s for s in KIND_SPECS if s.kind == "Pod")
    reflector = Reflector(spec, client, ClusterCache(), TokenBucket(0, 1), stop,
                          ReflectorOptions(clock=clock, wait=clock.wait, min_watch_seconds=0))
    reflector._loop()
    # Failures 1-5 grow (0.8 * 2**n, jittered down to half at most); the failure after the
    # healthy stretch starts from the first step again.
    assert clock.waits[4] >= 0.8 * 2**4 / 2
    assert clock.waits[5] <= 0.8
    assert clock.waits[6] >= 1.6 / 2


def test_repeated_retryable_error_events_back_off_even_after_events():
    reflector, client, clock = run(lists=[None], watches=[[BOOKMARK, INTERNAL]], seconds=600)
    assert client.watch_calls <= _most_attempts(600), f"{client.watch_calls} watches in 10 minutes"
    assert client.list_calls == 1


def test_a_reload_relist_is_not_lost_when_that_list_fails():
    box: list = []
    # The reload arrives while watching; the relist it asks for fails once, then works.
    watches = [[BOOKMARK, lambda: box[0].request_relist(), BOOKMARK], [BOOKMARK]]
    clock = FakeClock(60)
    stop = threading.Event()
    client = ScriptedClient([None, Unavailable("list Pod: connection refused"), None], watches, stop)
    from estimator.cluster.cache import ClusterCache

    spec = next(s for s in KIND_SPECS if s.kind == "Pod")
    reflector = Reflector(spec, client, ClusterCache(), TokenBucket(0, 1), stop,
                          ReflectorOptions(clock=clock, wait=clock.wait, min_watch_seconds=0))
    box.append(reflector)
    reflector._loop()
    assert client.list_calls >= 3
    assert reflector.lists == 2, "the initial list and the reload's relist both completed"
    assert not reflector.relist_pending


def test_the_first_410_after_an_outage_relists_without_the_outages_backoff():
    down = Unavailable("watch Pod: connection refused")
    reflector, client, clock = run(lists=[None], watches=[down] * 5 + [[GONE], [BOOKMARK]], seconds=120)
    # Five refused watches grew the backoff; the 410 once the server is back waits the
    # first step only (0.8 s at most), not the sixth (25.6 s).
    assert clock.waits[4] >= 0.8 * 2**4 / 2
    assert clock.waits[5] <= 0.8
    assert reflector.lists == 2


def test_a_kind_failing_for_long_is_logged_loudly_but_not_on_every_retry(caplog):
    down = Unavailable("watch Pod: connection refused")
    with caplog.at_level("ERROR", logger="estimator.watch"):
        run(lists=[None], watches=[down], seconds=500)
    loud = [r for r in caplog.records if r.levelname == "ERROR" and "has been failing for" in r.getMessage()]
    # Retries are at most 30 s apart (the cap), whatever the jitter draws: the first loud line
    # comes in [60, 90) s, the second five minutes later in [360, 420) s, a third not before
    # 660 s. So 500 s holds exactly two (400 s did not when the draws put the second past 400).
    assert len(loud) == 2, [r.getMessage() for r in loud]
    assert "connection refused" in loud[0].getMessage()
