"""Request pacing for the list/watch loop: a token bucket (--kube-api-qps/--kube-api-burst)
and capped exponential backoff with jitter. Pure Python, no Kubernetes imports.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable


class TokenBucket:
    """client-go's token-bucket rate limiter: `burst` requests at once, then `qps` a second.

    Reservation style: taking a token may drive the balance negative, and the caller then
    waits until it would have been refilled, so waiters are served in arrival order and
    the long-run rate never exceeds `qps`. `qps <= 0` disables limiting.
    """

    def __init__(self, qps: float, burst: int, clock: Callable[[], float] = time.monotonic):
        self.qps = float(qps)
        self.burst = max(1, int(burst))
        self._clock = clock
        self._lock = threading.Lock()
        self._tokens = float(self.burst)
        self._last = clock()

    def reserve(self) -> float:
        """Take one token; return how many seconds the caller must wait before using it."""
        if self.qps <= 0:
            return 0.0
        with self._lock:
            now = self._clock()
            self._tokens = min(float(self.burst), self._tokens + (now - self._last) * self.qps)
            self._last = now
            self._tokens -= 1.0
            return 0.0 if self._tokens >= 0 else -self._tokens / self.qps

    def acquire(self, stop: threading.Event | None = None) -> bool:
        """Block until a token is ours; False if `stop` was set while waiting."""
        wait = self.reserve()
        if wait <= 0:
            return True
        if stop is None:
            time.sleep(wait)
            return True
        return not stop.wait(wait)


class Backoff:
    """Capped exponential backoff with jitter: the n-th delay is drawn uniformly from
    [(1 - jitter) * d, d] with d = min(cap, initial * factor**n). It starts over after
    `reset_after` seconds without a failure (pass `now` to next()), or on `reset()`.
    """

    def __init__(
        self,
        initial: float = 0.8,
        cap: float = 30.0,
        factor: float = 2.0,
        jitter: float = 0.5,
        rng: random.Random | None = None,
        reset_after: float | None = None,
    ):
        if initial <= 0 or cap < initial or factor < 1 or not 0 <= jitter <= 1:
            raise ValueError("backoff needs 0 < initial <= cap, factor >= 1 and 0 <= jitter <= 1")
        self.initial, self.cap, self.factor, self.jitter = initial, cap, factor, jitter
        self.reset_after = reset_after
        self._rng = rng or random.Random()
        self.failures = 0
        self._last: float | None = None

    def next(self, now: float | None = None) -> float:
        if now is not None:
            if self.reset_after is not None and self._last is not None and now - self._last >= self.reset_after:
                self.failures = 0
            self._last = now
        step = min(self.cap, self.initial * self.factor ** min(self.failures, 64))
        self.failures += 1
        return step * (1.0 - self.jitter * self._rng.random())

    def reset(self) -> None:
        self.failures = 0
