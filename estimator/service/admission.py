"""What Estimator calls may hold at once: a count of calls in flight and a memory budget.

Two guards, both refusing with RESOURCE_EXHAUSTED at once rather than queueing:

- `CountingPool`, the gRPC server's executor for Estimator calls, counts the calls it holds
  (waiting for a worker or running); the server's interceptor refuses an Estimator call while
  that count is at `--max-concurrent-requests`. Health checks run on a pool of their own and
  are never counted or refused (gRPC's own `maximum_concurrent_rpcs` would refuse them too).
- `MemoryBudget` is the memory a call may reserve before it spends it: its request's
  decoded size first, then what its estimate may hold at its peak (Estimator.working_bytes).
  A call that does not fit is refused before the memory is spent. Large calls (more than
  1/64 of the budget each) may fill only 3/4 of it, and only `LARGE_CALLS` of them run at
  once: a flood of large calls leaves room, workers and interpreter time for the small ones
  real schedulers send (converting a 4 MB request is Python work that holds the GIL).
"""

from __future__ import annotations

import threading
from concurrent import futures


class CountingPool(futures.ThreadPoolExecutor):
    """A ThreadPoolExecutor that knows how many submitted calls it has not finished."""

    def __init__(self, max_workers: int, thread_name_prefix: str = ""):
        super().__init__(max_workers=max_workers, thread_name_prefix=thread_name_prefix)
        self._held = 0
        self._count_lock = threading.Lock()

    @property
    def held(self) -> int:
        return self._held

    def submit(self, fn, /, *args, **kwargs):
        with self._count_lock:
            self._held += 1
        try:
            return super().submit(self._counted, fn, args, kwargs)
        except BaseException:
            self._done()
            raise

    def _counted(self, fn, args, kwargs):
        try:
            return fn(*args, **kwargs)
        finally:
            self._done()

    def _done(self) -> None:
        with self._count_lock:
            self._held -= 1


LARGE_CALLS = 1


class MemoryBudget:
    """Bytes calls in flight may reserve together (0: no budget)."""

    def __init__(self, total: int, large_calls: int = LARGE_CALLS):
        self.total = total
        self.large = total // 64
        self.large_calls = large_calls
        self._used = 0
        self._peak = 0
        self._large_in_flight = 0
        self._lock = threading.Lock()

    @property
    def large_in_flight(self) -> int:
        return self._large_in_flight

    @property
    def used(self) -> int:
        return self._used

    def take_peak(self) -> int:
        """The most reserved at once since the last call (for metrics and the soak)."""
        with self._lock:
            peak, self._peak = self._peak, self._used
        return peak

    def reserve(self, size: int, large_call: bool = False, new_large_call: bool = False) -> bool:
        """Take `size` bytes for a call (`large_call`: one above `large` in all; `new_large_call`:
        it just became one, and takes one of the `large_calls` places)."""
        if self.total <= 0 or size <= 0:
            return True
        limit = self.total * 3 // 4 if large_call else self.total
        with self._lock:
            if self._used + size > limit or (new_large_call and self._large_in_flight >= self.large_calls):
                return False
            self._used += size
            self._large_in_flight += new_large_call
            if self._used > self._peak:
                self._peak = self._used
            return True

    def release(self, size: int, large_call: bool = False) -> None:
        if self.total <= 0 or size <= 0:
            return
        with self._lock:
            self._used -= size
            self._large_in_flight -= large_call


class Reservation:
    """One call's share of a MemoryBudget, grown as the call learns its size; `close()`
    gives it all back (call it in a finally)."""

    __slots__ = ("budget", "held", "large")

    def __init__(self, budget: MemoryBudget):
        self.budget = budget
        self.held = 0
        self.large = False

    def grow(self, size: int) -> bool:
        becomes_large = not self.large and self.held + size > self.budget.large
        if not self.budget.reserve(size, self.large or becomes_large, becomes_large):
            return False
        self.held += size
        self.large = self.large or becomes_large
        return True

    def close(self) -> None:
        held, self.held = self.held, 0
        self.budget.release(held, self.large and held > 0)
        self.large = False
