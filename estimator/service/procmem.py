"""This process's memory: /proc/self/status figures, and giving back clean library pages.

After the kernels are compiled or loaded from numba's cache, LLVM (llvmlite's ~180 MB shared
library, of which ~100 MB gets mapped in while numba starts) is not executed again unless a
new kernel specialisation has to be compiled. Its pages are clean copies of the file, so
dropping them from this process loses nothing: the kernel would reclaim them under memory
pressure anyway, and a later use faults them back in from the file. Only mappings without a
single private (copy-on-write) page are dropped, so relocated data is never touched.

Linux only; elsewhere (or without /proc) every function reports nothing and does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
from collections.abc import Iterator
from typing import Any

log = logging.getLogger(__name__)

_MADV_DONTNEED = 4
_STATUS_FIELDS = ("VmRSS", "VmHWM", "RssAnon", "RssFile", "RssShmem")


def status_mb(path: str = "/proc/self/status") -> dict[str, float]:
    """VmRSS, VmHWM (peak), RssAnon, RssFile, RssShmem in MiB; {} where /proc is missing."""
    out = {}
    try:
        with open(path) as f:
            for line in f:
                key, _, rest = line.partition(":")
                if key in _STATUS_FIELDS:
                    out[key] = int(rest.split()[0]) / 1024
    except (OSError, ValueError, IndexError):
        return {}
    return out


def _mappings(smaps: str) -> Iterator[list[Any]]:  # Any: ints and strings, in the docstring's order
    """(start, end, perms, path, rss_kb, anonymous_kb) per mapping of an smaps text.

    In a file mapping, anonymous pages are the private copies made by writes (copy-on-write);
    every other page is the file's own and can be read back from it."""
    current = None
    for line in smaps.splitlines():
        head = line.split(None, 5)
        if head and "-" in head[0] and not head[0].endswith(":"):
            if current is not None:
                yield current
            start, end = (int(x, 16) for x in head[0].split("-"))
            current = [start, end, head[1], head[5].strip() if len(head) > 5 else "", 0, 0]
        elif current is not None and head:
            if head[0] == "Rss:":
                current[4] = int(head[1])
            elif head[0] == "Anonymous:":
                current[5] = int(head[1])
    if current is not None:
        yield current


def release_clean_file_pages(path_contains: str, smaps_path: str = "/proc/self/smaps") -> float:
    """Drop this process's resident pages of read-only, unmodified file mappings whose path
    contains `path_contains`; returns the MiB that were resident in them (0 if none or not
    Linux). Writable mappings and any mapping holding a copy-on-write page are left alone:
    dropping those would lose data."""
    try:
        with open(smaps_path) as f:
            text = f.read()
        libc = ctypes.CDLL(ctypes.util.find_library("c") or None, use_errno=True)
        madvise = libc.madvise
    except (OSError, AttributeError):
        return 0.0
    madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    released_kb = 0
    for start, end, perms, path, rss_kb, anonymous_kb in _mappings(text):
        if path_contains not in path or "w" in perms or anonymous_kb or not rss_kb:
            continue
        if madvise(start, end - start, _MADV_DONTNEED) == 0:
            released_kb += rss_kb
        else:
            log.debug("madvise(%s, %s) failed: errno %d", path, perms, ctypes.get_errno())
    return released_kb / 1024


def trim_heap() -> bool:
    """Hand the C heap's free pages back to the system (glibc's malloc_trim); False where there
    is none. Under pymalloc (CPython's default) small objects live in its own 1 MiB arenas and
    this returns little; under PYTHONMALLOC=malloc it returns the freed pages of a parsed
    member document (benchmarks/startup.py, the loader's heap)."""
    try:
        trim = ctypes.CDLL(ctypes.util.find_library("c") or None).malloc_trim
    except (OSError, AttributeError):
        return False
    trim.argtypes = [ctypes.c_size_t]
    return bool(trim(0))


_M_TRIM_THRESHOLD = -1  # glibc's mallopt parameters (malloc.h)
_M_MMAP_THRESHOLD = -3
_M_ARENA_MAX = -8
# Blocks this large or larger are mapped on their own and unmapped when freed.
MMAP_THRESHOLD = 1 << 20
ARENA_MAX = 2
# Free memory an arena keeps at its top before giving it back to the system.
TRIM_THRESHOLD = 8 << 20


def bound_heap_retention() -> bool:
    """Keep the C heap from holding on to what the server's threads free (glibc's mallopt);
    False where there is no glibc. By default glibc gives each thread that contends for the
    heap an arena of its own (up to 8 per core), and an arena keeps what was freed in it:
    under a flood of 4 MB requests on 16 workers the server's RSS stood 500 MB above what
    its calls held (peak 744 MB, 523 MB still held after; with 2 arenas 386 and 325, the
    soak's figures of this shape). A fixed mmap threshold also turns off glibc's raising it
    to each large block freed, so blocks of 1 MB or more are always unmapped when freed.
    Smaller blocks stay in the heap, and an arena keeps up to TRIM_THRESHOLD free at its
    top: an estimate's arrays (at 10k nodes a copy of the columns, the placement, a few
    hundred KB each) are freed at the top after every call, and glibc's default threshold
    (128 KB) gave them back each time for the next call to fault them in again, about 50
    page faults a call (0.1 ms at 10k nodes, on the worker that takes every call of a
    caller, see admission.FairPool). At most 2 x TRIM_THRESHOLD stays mapped for it.
    Call it first thing in the process: glibc fixes its arena count when it first makes a
    second arena."""
    try:
        mallopt = ctypes.CDLL(ctypes.util.find_library("c") or None).mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    return (
        bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD))
        and bool(mallopt(_M_ARENA_MAX, ARENA_MAX))
        and bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))
    )
