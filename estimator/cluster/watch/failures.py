"""FailureLog: one reflector's failures in a row, and how long to wait after each.

Counts failures by reason, keeps the last message and since when the kind has been failing,
backs off (a capped exponential backoff with jitter; 410s on a backoff of their own) and logs:
the 1st, 2nd, 4th, 8th, ... failure in a row, a louder line every `loud_every` seconds once
failing for `loud_after`, and the recovery. Used by estimator.cluster.watch.reflector, on its
thread only.
"""

from __future__ import annotations

import logging
import time

from estimator.cluster.watch.ratelimit import Backoff
from estimator.cluster.watch.specs import ReflectorOptions

log = logging.getLogger("estimator.watch")


class FailureLog:
    """The failures of one kind's list/watch loop (see the module docstring)."""

    def __init__(self, kind: str, options: ReflectorOptions) -> None:
        self.kind = kind
        self.options = options
        self._backoff = Backoff(
            self.options.backoff_initial,
            self.options.backoff_cap,
            rng=self.options.rng,
            reset_after=self.options.backoff_reset_after,
        )
        # 410s have their own backoff: the first relist after an outage (whose failures grew
        # the main backoff) is not delayed by it, while 410s in a row still slow down.
        self._gone_backoff = Backoff(
            self.options.backoff_initial,
            self.options.backoff_cap,
            rng=self.options.rng,
            reset_after=self.options.backoff_reset_after,
        )
        self.errors: dict[str, int] = {}  # failures by reason, since the start
        self.last_error = ""
        self.failing_since: float | None = None  # options.clock() time of the first failure in a row
        self._next_loud = 0.0

    def healthy(self) -> None:
        """A list completed or a watch delivered: the failures in a row are over."""
        if self.failing_since is not None:
            log.info(
                "%s: list/watch healthy again after %.0fs of failures",
                self.kind,
                self.options.clock() - self.failing_since,
            )
        self.failing_since = None
        self._next_loud = 0.0

    def count(self, reason: str) -> None:
        """Count a failure by reason, without backing off."""
        self.errors[reason] = self.errors.get(reason, 0) + 1

    def failed(
        self,
        reason: str,
        message: str,
        last_ok: float,
        level: int = logging.WARNING,
        quiet: bool = False,
        gone: bool = False,
    ) -> float:
        """Count a failure and return how long to wait before the next attempt.

        The backoff is not reset by a successful list or a short watch: only a stretch of
        `backoff_reset_after` without failures (client-go's backoff manager: 2 min) starts it
        over, so a watch that fails right after every list cannot drive a relist a second.
        `last_ok`: the reflector's last success (time.monotonic()), for the loud line; `gone`:
        a 410, on its own backoff."""
        now = self.options.clock()
        self.count(reason)
        self.last_error = message
        if self.failing_since is None:
            self.failing_since = now
        backoff = self._gone_backoff if gone else self._backoff
        delay = backoff.next(now)
        attempt = backoff.failures
        if not quiet and (attempt & (attempt - 1)) == 0:  # 1st, 2nd, 4th, 8th, ... in a row
            log.log(
                level,
                "%s: %s; retrying in %.2fs (failure %d in a row; the cache keeps serving the last state)",
                self.kind,
                message,
                delay,
                attempt,
            )
        failing_for = now - self.failing_since
        if failing_for >= self.options.loud_after and now >= self._next_loud:
            self._next_loud = now + self.options.loud_every
            log.error(
                "%s: list/watch has been failing for %.0fs (last error: %s); estimates are answered from "
                "state %.0fs old",
                self.kind,
                failing_for,
                message[:200],
                time.monotonic() - last_ok,
            )
        return delay
