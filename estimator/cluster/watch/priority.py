"""Cooperative priority for estimates over the list/watch threads' event processing."""

from __future__ import annotations

import time


class EstimatePriority:
    """Cooperative priority for estimates over event processing.

    Estimates and the list/watch threads share one interpreter lock. A reflector busy with
    churn holds it ~90% of the time, and an estimate that gives it up (numba kernels and
    numpy release it) waits for a switch each time it wants it back: under 12,000 events/s
    that was most of an estimate's p99. So the start of every estimate (the state's
    snapshot() call) opens a short window in which reflectors pause between events. A
    budget caps the pauses at `max_share` of wall time, so a flood of estimates cannot
    starve the watch.
    """

    def __init__(self, window: float = 0.002, max_share: float = 0.25):
        self.window = window
        self.max_share = max_share
        self.until = 0.0
        self._budget = 0.05
        self._last = time.monotonic()
        self.paused_seconds = 0.0

    def estimate_started(self) -> None:
        if self.window > 0:
            self.until = time.monotonic() + self.window

    def pause(self) -> None:
        """Called by a reflector between objects when `until` is in the future."""
        now = time.monotonic()
        self._budget = min(0.05, self._budget + (now - self._last) * self.max_share)
        self._last = now
        wait = min(self.until - now, self._budget)
        if wait > 0.0001:
            self._budget -= wait
            self.paused_seconds += wait
            time.sleep(wait)


NO_PRIORITY = EstimatePriority(window=0.0)
