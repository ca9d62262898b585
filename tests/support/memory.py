"""Bytes a piece of work leaves allocated, for tests that bound what requests keep."""

from __future__ import annotations

import gc
import time
import tracemalloc


def kept_bytes(work, settle: float = 0.0) -> int:
    """Bytes still allocated after `work()` (and a collection) that were not before; `settle`:
    seconds to wait before measuring (a server's log thread writes its batch meanwhile)."""
    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        work()
        gc.collect()
        if settle:
            time.sleep(settle)
            gc.collect()
        return tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
