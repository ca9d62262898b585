"""What Estimator calls may hold at once: a count of calls in flight and a memory budget.

Two guards, both refusing with RESOURCE_EXHAUSTED at once rather than queueing:

- `FairPool`, the gRPC server's executor for Estimator calls, counts the calls it holds
  (waiting for a worker or running), in all and per connection. Calls wait in one queue per
  connection, and free workers take them from the connections in turn: a client flooding
  its connection delays another client's calls by one of its own at a time, not by its
  whole queue. A call beyond `--max-concurrent-requests` on its connection is not queued:
  it goes to the `overflow` executor at once, where it is refused before its request is read
  (the server's behaviour asks `overflowing()`); beyond 4x that over all connections, the
  server's interceptor refuses it at once. Health checks run on a pool of their own and are
  never counted or refused (gRPC's own `maximum_concurrent_rpcs` would refuse them too).
- `MemoryBudget` is the memory a call may reserve before it spends it: its request's
  decoded size first, then what its estimate may hold at its peak (Estimator.working_bytes).
  A call that does not fit is refused before the memory is spent. Large calls (more than
  1/64 of the budget each, and more than an ordinary call needs on this member: see
  `Reservation`) may fill only 3/4 of it, only `LARGE_CALLS` of them run at once,
  and after one that others had to be turned away for, the next waits `LARGE_PAUSE` times as
  long as it took: a flood of large calls leaves room, workers and interpreter time (decoding
  and refusing a 4 MB request is Python work that holds the GIL for milliseconds) to the
  small calls real schedulers send, while large calls one after another are not delayed.
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable
from concurrent import futures
from typing import ParamSpec, TypeVar

_P = ParamSpec("_P")  # what a submitted function takes (FairPool.submit, as Executor.submit)
_T = TypeVar("_T")


def connection_of(args: tuple) -> object:
    """The connection a call submitted by gRPC's server came on: its peer address. gRPC
    submits `context.run(behavior_in_pool, rpc_event, ...)`; anything else (or a gRPC that
    passes other arguments) shares one queue, which is plain first-come first-served."""
    try:
        peer = args[1].call.peer()
    except Exception:  # noqa: BLE001 - not a call event: no connection to be fair to
        return None
    return peer.decode(errors="replace") if isinstance(peer, bytes) else peer  # as ServicerContext.peer()


class FairPool(futures.Executor):
    """`max_workers` threads running what is submitted, in turn across keys (`key_of(args)`:
    the connection), first come first served within a key; it knows how many submitted calls
    it has not finished (`held`, `held_by`). With `limit_per_key`, work submitted while its
    key already holds that many runs on `overflow` at once instead of waiting in line."""

    def __init__(
        self,
        max_workers: int,
        thread_name_prefix: str = "",
        key_of: Callable[[tuple], object] = connection_of,
        limit_per_key: int = 0,
        overflow: futures.Executor | None = None,
    ):
        self._key_of = key_of
        self._limit_per_key, self._overflow = limit_per_key, overflow
        self._local = threading.local()
        self._queues: collections.OrderedDict = collections.OrderedDict()  # key -> deque of work
        self._held = 0
        self._held_by: dict = {}  # key -> calls held
        self._lock = threading.Lock()
        # Idle workers, the most recently idle last, each waiting on its own lock (held while
        # it waits): new work wakes the last one. A caller that waits for each answer before
        # the next call is then served by one thread whose stack, thread-local scratch and
        # interpreter state are still in the CPU's caches, not by each worker in turn (a
        # Condition wakes its longest waiter: 16 workers took turns, every call on a cold one,
        # ~0.1 ms a call at 10k nodes).
        self._idle: list[threading.Lock] = []
        self._shutdown = False
        self._threads = [
            threading.Thread(target=self._work, name=f"{thread_name_prefix}_{i}", daemon=True)
            for i in range(max(1, max_workers))
        ]
        for thread in self._threads:
            thread.start()

    @property
    def held(self) -> int:
        return self._held

    def held_by(self, key: object) -> int:
        """Calls held for one key (connection), queued or running."""
        return self._held_by.get(key, 0)

    def overflowing(self) -> bool:
        """Whether the calling thread runs work sent to `overflow` (to be refused)."""
        return getattr(self._local, "overflow", False)

    def submit(self, fn: Callable[_P, _T], /, *args: _P.args, **kwargs: _P.kwargs) -> futures.Future[_T]:
        future: futures.Future = futures.Future()
        key = self._key_of(args)
        with self._lock:
            if self._shutdown:
                raise RuntimeError("cannot submit after shutdown")
            overflows = (
                self._overflow is not None and self._limit_per_key and self._held_by.get(key, 0) >= self._limit_per_key
            )
            if overflows:
                self._held += 1
                self._held_by[key] = self._held_by.get(key, 0) + 1
        if overflows:
            assert self._overflow is not None  # overflows only with one
            try:
                self._overflow.submit(self._run, (future, fn, args, kwargs, key), True)
            except BaseException:
                self._release(key)
                raise
            return future
        with self._lock:
            if self._shutdown:
                raise RuntimeError("cannot submit after shutdown")
            queue = self._queues.get(key)
            if queue is None:
                queue = self._queues[key] = collections.deque()
            queue.append((future, fn, args, kwargs, key))
            self._held += 1
            self._held_by[key] = self._held_by.get(key, 0) + 1
            if self._idle:
                self._idle.pop().release()  # the most recently idle worker
        return future

    def _next(self, wake: threading.Lock) -> tuple | None:
        """The next piece of work (None: shut down), taken from the first key's queue; that
        key goes to the back of the turn. With none, the worker waits on `wake` (which it
        holds) as the newest idle worker."""
        while True:
            with self._lock:
                if self._queues:
                    key, queue = next(iter(self._queues.items()))
                    work = queue.popleft()
                    if queue:
                        self._queues.move_to_end(key)
                    else:
                        del self._queues[key]
                    return work
                if self._shutdown:
                    return None
                self._idle.append(wake)
            wake.acquire()  # until `submit` or `shutdown` releases it

    def _work(self) -> None:
        wake = threading.Lock()
        wake.acquire()
        while True:
            work = self._next(wake)
            if work is None:
                return
            self._run(work)
            del work

    def _run(self, work: tuple, overflow: bool = False) -> None:
        future, fn, args, kwargs, key = work
        self._local.overflow = overflow
        try:
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(fn(*args, **kwargs))
                except BaseException as error:  # noqa: BLE001 - handed to the future, as the stdlib pool does
                    future.set_exception(error)
        finally:
            self._local.overflow = False
            self._release(key)

    def _release(self, key: object) -> None:
        with self._lock:
            self._held -= 1
            left = self._held_by.get(key, 1) - 1
            if left:
                self._held_by[key] = left
            else:
                self._held_by.pop(key, None)

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._lock:
            self._shutdown = True
            if cancel_futures:
                queues, self._queues = list(self._queues.values()), collections.OrderedDict()
                for queue in queues:
                    for future, *_, key in queue:
                        future.cancel()
                        self._held -= 1
                        self._held_by[key] = self._held_by.get(key, 1) - 1
            idle, self._idle = self._idle, []
            for wake in idle:
                wake.release()
        if wait:
            for thread in self._threads:
                thread.join()


LARGE_CALLS = 1
LARGE_PAUSE = 3.0  # contended, large calls get at most 1 / (1 + LARGE_PAUSE) of the time


class MemoryBudget:
    """Bytes calls in flight may reserve together (0: no budget)."""

    def __init__(self, total: int, large_calls: int = LARGE_CALLS, large_pause: float = LARGE_PAUSE):
        self.total = total
        self.large = total // 64
        self.large_calls = large_calls
        self.large_pause = large_pause
        self._used = 0
        self._peak = 0
        self._large_in_flight = 0
        self._large_after = 0.0  # time.monotonic() from which a large call may start
        self._large_contended = False  # a large call was turned away since the last one began
        self._lock = threading.Lock()

    @property
    def large_in_flight(self) -> int:
        return self._large_in_flight

    def large_open(self) -> bool:
        """Whether a large call could start now."""
        return self._large_in_flight < self.large_calls and time.monotonic() >= self._large_after

    def turn_away_large(self) -> None:
        """A large call was refused its place (the one in flight will pause the next)."""
        self._large_contended = True

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
            if new_large_call and not self.large_open():
                self._large_contended = True
                return False
            if self._used + size > limit:
                return False
            self._used += size
            self._large_in_flight += new_large_call
            if self._used > self._peak:
                self._peak = self._used
            return True

    def release(self, size: int, large_call: bool = False, large_seconds: float = 0.0) -> None:
        """Give back `size` bytes; a large call also says how long it held its place."""
        if self.total <= 0 or size <= 0:
            return
        with self._lock:
            self._used -= size
            self._large_in_flight -= large_call
            if large_call and self._large_contended:
                self._large_after = max(self._large_after, time.monotonic() + large_seconds * self.large_pause)
                self._large_contended = False


class Reservation:
    """One call's share of a MemoryBudget, grown as the call learns its size; `close()`
    gives it all back (call it in a finally). The call becomes large above the budget's
    `large`, and, once `allow_ordinary` has raised it, above what an ordinary call needs."""

    __slots__ = ("budget", "held", "large", "large_since", "large_above")

    def __init__(self, budget: MemoryBudget):
        self.budget = budget
        self.held = 0
        self.large = False
        self.large_since = 0.0
        self.large_above = budget.large

    def allow_ordinary(self, ordinary: int) -> None:
        """From now on the call is large only above what it holds now (its decoded request,
        reserved first: not member-sized) plus `ordinary` too: what the estimate of a call
        the server must always take in turn needs (a job of a few components on this
        member), which on a large member is more than 1/64 of the budget. Were such calls
        large, a scheduler's own concurrent calls would contend for the one large place and
        be refused."""
        self.large_above = max(self.large_above, self.held + ordinary)

    def grow(self, size: int) -> bool:
        becomes_large = not self.large and self.held + size > self.large_above
        if not self.budget.reserve(size, self.large or becomes_large, becomes_large):
            return False
        self.held += size
        if becomes_large:
            self.large, self.large_since = True, time.monotonic()
        return True

    def close(self) -> None:
        held, self.held = self.held, 0
        large = self.large and held > 0
        self.budget.release(held, large, time.monotonic() - self.large_since if large else 0.0)
        self.large = False
