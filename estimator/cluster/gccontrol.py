"""The one place that steers CPython's cyclic collector.

The cluster state is millions of small long-lived containers. Left alone, the collector
rescans them again and again: while a member file is parsed (it tripled the 10k-node load),
during a list/watch sync (half its CPU) and as pauses in front of estimates. Three tools:

- `paused()`: no collection while a burst of objects that all survive is built;
- `settle()`: move everything alive now out of the collector's reach (`gc.freeze`), after
  one collection so garbage cycles are not kept forever; `collect=False` skips that
  collection when the caller knows the objects were built without cycles of garbage
  (a paused load: the parsed document is freed by reference counting);
- `young()`: a generation-0 collection, for loops that keep allocating (watch events);
- `sweep()`: one full collection now, even inside a paused region (work there that leaves
  garbage cycles: a numba compilation while a member file loads).

Frozen objects are still freed by reference counting; `thaw()` hands them back to normal
collection (a process that outlives its state, e.g. tests, or a reload whose old state
may hold cycles).
"""

from __future__ import annotations

import gc
import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

log = logging.getLogger("estimator.gc")

_lock = threading.RLock()
_depth = 0  # paused() regions open, in any thread
_was_enabled = True  # the collector's state when the outermost region opened


@contextmanager
def paused() -> Iterator[None]:
    """No cyclic collection inside; on leaving the outermost region the collector is as it
    was before it (regions may nest and overlap across threads)."""
    global _depth, _was_enabled
    with _lock:
        if _depth == 0:
            _was_enabled = gc.isenabled()
        _depth += 1
        gc.disable()
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _was_enabled:
                gc.enable()


def settle(when: str, collect: bool = True) -> float:
    """Freeze every object alive now (after one full collection unless `collect` is False);
    returns the seconds it took. Logged at V(0) with what was frozen."""
    with _lock:
        started = time.perf_counter()
        if collect:
            gc.collect()
        gc.freeze()
        seconds = time.perf_counter() - started
    log.info("gc: froze %d objects at %s in %.0f ms", gc.get_freeze_count(), when, seconds * 1000)
    return seconds


def thaw() -> None:
    """Give frozen objects back to normal collection."""
    with _lock:
        gc.unfreeze()


def sweep(after: str) -> int:
    """One full collection now, paused or not; returns the objects it freed. Logged at V(0)."""
    with _lock:
        started = time.perf_counter()
        freed = gc.collect()
    log.info("gc: freed %d objects after %s in %.0f ms", freed, after, (time.perf_counter() - started) * 1000)
    return freed


def young() -> None:
    """Collect generation 0 only (cheap: the objects allocated since the last collection)."""
    gc.collect(0)
