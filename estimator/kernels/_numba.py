"""The one place that imports numba and fixes the compilation options of every kernel.

Options: `cache=True` (compiled code is kept on disk, so a restart loads it instead of
compiling), `nogil=True` (estimates may run on several threads), `fastmath=False`
(capacity arithmetic is integer and must be exact), `boundscheck=False` (the Python
wrappers validate shapes before any kernel runs).

numba reads NUMBA_CACHE_DIR when it is first imported, so the default is set here, before
the import. numba keys a cached function on its own source file only: a kernel that
called an `@kernel` function from another module would keep the old copy of that callee
after an edit. Kernels therefore only call helpers from their own module; modules talk to
each other through the Python wrappers.
"""

from __future__ import annotations

import functools
import os


def _default_cache_dir() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "karmada-estimator", "numba")


os.environ.setdefault("NUMBA_CACHE_DIR", _default_cache_dir())

import numba  # noqa: E402  (must follow the cache-dir default above)

kernel = functools.partial(numba.njit, cache=True, nogil=True, fastmath=False, boundscheck=False)
"""Decorator for every kernel: `@kernel` (lazy compile; `warmup()` compiles them all)."""
