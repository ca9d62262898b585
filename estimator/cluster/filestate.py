"""FileClusterState: the server's cluster state from kubectl-style files (--objects).

One of the two implementations of the ClusterState protocol (estimator.cluster.sources);
the other, estimator.cluster.watch.WatchClusterState, keeps a live list/watch of the
member's API server. The files' parsed state may come from, and go to, the objects cache
(estimator.cluster.objectscache).
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from estimator.cluster import gccontrol, objectscache
from estimator.cluster.cache import ClusterCache
from estimator.cluster.files import load_object_files
from estimator.core.errors import StateLoadError
from estimator.core.snapshot import ClusterSnapshot

log = logging.getLogger("estimator.state")


# A file modified this recently may still be being written (each write moves its time).
SETTLE_SECONDS = 2.0
# How long a reload waits for its files to settle before it gives up (logged; SIGHUP again).
MAX_SETTLE_WAIT = 60.0
# Reads of the first load that may find the files changed under them before start-up fails.
_FIRST_LOAD_TRIES = 3


def _file_stamps(paths: Sequence[Path]) -> list | None:
    """(real path, size, mtime_ns, inode, device) per file; None if one cannot be stat'ed
    (the load then says what is wrong with it)."""
    try:
        return objectscache.file_keys(paths)
    except OSError:
        return None


def _unsettled(stamps: list | None) -> tuple[str, float] | None:
    """(path, seconds to wait) for the file modified last, if within SETTLE_SECONDS."""
    if not stamps:
        return None
    path, _, mtime_ns, _, _ = max(stamps, key=lambda stamp: stamp[2])
    wait = mtime_ns / 1e9 + SETTLE_SECONDS - time.time()
    # A time in the future was set on purpose (a writer's writes set the present): settled.
    return (path, wait) if 0 < wait <= SETTLE_SECONDS else None


class FileClusterState:
    """Serves a member described by kubectl-style files; SIGHUP reloads them.

    The first load happens in the constructor so a bad file fails start-up (exit 2); files
    that change while they are read are read again. A reload is all or nothing and never
    half a file: it waits until the files have been left alone for SETTLE_SECONDS (a writer
    moves a file's time with every write), reads them, and starts over if they changed
    during the read (each wait is logged; after MAX_SETTLE_WAIT it gives up, keeping the
    previous state, until the next SIGHUP). A bad reload keeps serving the previous state
    and logs why. Files loaded at start while that recent are checked again once they
    settle, and reloaded if they changed since. Writers should rename files into place.
    """

    def __init__(
        self, paths: Sequence[str | Path], state_cache: str | None = None, meanwhile: Callable[[], None] | None = None
    ):
        """`state_cache`: the parsed-state cache directory (estimator.cluster.objectscache);
        None: its default, "off": no cache. `meanwhile`: the caller's work, run while a
        forked worker reads part of a big file (files.load_object_files), if one does."""
        self.paths = [Path(p) for p in paths]
        self._cache_dir = objectscache.default_dir({objectscache.ENV: state_cache} if state_cache else os.environ)
        self._lock = threading.Lock()
        self._reloading = threading.Lock()
        self._stopped = threading.Event()
        # The cluster records live as long as the process: freeze them so no collection
        # walks them (a full one over a 10k-node member paused estimates for ~50 ms).
        # Start-up garbage is collected first; the loaded records are frozen straight from
        # the paused load, which builds no garbage cycles: collecting them would only
        # rescan millions of live objects (a first young pass, then a full one: 0.2-0.7 s of
        # CPU at 10k nodes in our profiles).
        gccontrol.settle("start")
        with gccontrol.paused():
            for _ in range(_FIRST_LOAD_TRIES):
                stamps = _file_stamps(self.paths)
                # Before any server thread exists: a new state entry is written by a forked writer.
                self._cache: ClusterCache = load_object_files(
                    self.paths, state_cache=self._cache_dir, background=True, meanwhile=meanwhile
                )
                meanwhile = None
                if _file_stamps(self.paths) == stamps:
                    break
                log.warning("object files changed while they were read; reading them again")
            else:
                raise StateLoadError(
                    f"{', '.join(map(str, self.paths))}: the files kept changing while they were "
                    f"read ({_FIRST_LOAD_TRIES} reads): write them elsewhere and rename them into place"
                )
            gccontrol.settle("load", collect=False)
        self._loaded_at = time.time()
        self._stamps = stamps
        self.last_reload_error = ""
        unsettled = _unsettled(stamps)
        if unsettled is not None:  # maybe caught mid-write: look again once it has settled
            timer = threading.Timer(unsettled[1] + 0.1, self._recheck)
            timer.daemon = True
            timer.start()

    def start(self) -> None:
        snapshot = self._cache.snapshot()
        log.info("loaded %d nodes from %s", snapshot.num_nodes, ", ".join(map(str, self.paths)))

    def stop(self) -> None:
        self._stopped.set()

    def _recheck(self) -> None:
        if self._stopped.is_set() or _file_stamps(self.paths) == self._stamps:
            return
        log.info("object files changed since they were loaded (they were still recent then): reloading")
        try:
            self.reload()
        except Exception:  # noqa: BLE001 - a timer thread must not die with a traceback
            log.exception("reload after the files settled failed")

    def snapshot(self) -> ClusterSnapshot:
        with self._lock:
            cache = self._cache
        return cache.snapshot()

    def synced(self) -> bool:
        return True

    def health(self) -> tuple[bool, str]:
        return True, "object files loaded"

    def staleness_seconds(self) -> float:
        # Files are the truth we were given; their age is how old the picture is.
        return time.time() - self._loaded_at

    def reload(self) -> bool:
        with self._reloading:  # one at a time: a second SIGHUP reads the files after the first
            cache, stamps = self._read_settled()
            if cache is None:
                return False
            with self._lock:
                self._cache = cache
                self._loaded_at = time.time()
                self._stamps = stamps
        self.last_reload_error = ""
        # The previous state was frozen: thaw so a cycle in it cannot outlive it.
        gccontrol.thaw()
        gccontrol.settle("reload")
        log.info("reloaded %d nodes from %s", cache.snapshot().num_nodes, ", ".join(map(str, self.paths)))
        return True

    def _read_settled(self) -> tuple[ClusterCache | None, list | None]:
        """The files' new state, read when they are settled and unchanged across the read;
        (None, None) when they are bad (logged) or would not settle."""
        deadline = time.monotonic() + MAX_SETTLE_WAIT
        while True:
            stamps = _file_stamps(self.paths)
            unsettled = _unsettled(stamps)
            if unsettled is None:
                try:
                    cache = load_object_files(self.paths, state_cache=self._cache_dir)
                except StateLoadError as error:
                    return self._refused(f"reload failed, still serving the previous state: {error}")
                if _file_stamps(self.paths) == stamps:
                    return cache, stamps
                del cache
                log.warning(
                    "reload: the object files changed while they were read; reading them again once they settle"
                )
                unsettled = (", ".join(map(str, self.paths)), SETTLE_SECONDS)
            path, wait = unsettled
            if time.monotonic() + wait > deadline:
                return self._refused(
                    f"reload refused, still serving the previous state: {path} kept changing for "
                    f"{MAX_SETTLE_WAIT:.0f} s (write it elsewhere and rename it into place, then "
                    f"send SIGHUP again)"
                )
            log.info(
                "reload: %s was modified %.1f s ago and may still be being written; reading it in %.1f s",
                path,
                SETTLE_SECONDS - wait,
                wait,
            )
            if self._stopped.wait(wait):
                return self._refused("reload abandoned: stopping")

    def _refused(self, why: str) -> tuple[None, None]:
        self.last_reload_error = why
        log.error("%s", why)
        return None, None

    def describe(self) -> str:
        return "object files: " + ", ".join(map(str, self.paths))
