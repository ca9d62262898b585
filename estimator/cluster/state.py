"""Where the server's cluster state comes from, and the protocol the server reads it by.

Two implementations: `FileClusterState` (here) serves kubectl-style files given with
--objects, and `estimator.cluster.watch.WatchClusterState` keeps a live list/watch of the member's
API server (--kubeconfig, --master or in-cluster). Either hands out immutable snapshots and
says whether it is synced (has state to answer from) and healthy (its loader is alive);
the server decides readiness from that.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from pathlib import Path
from typing import Callable, Protocol, Sequence

from estimator.cluster import gccontrol, statecache
from estimator.cluster.cache import ClusterCache
from estimator.cluster.files import load_object_files
from estimator.core.errors import StateLoadError
from estimator.core.snapshot import ClusterSnapshot

log = logging.getLogger("estimator.state")


class ClusterState(Protocol):
    def start(self) -> None:
        """Begin serving (a watch starts its threads; files are already loaded)."""

    def stop(self) -> None:
        """Stop background work; snapshots already handed out stay valid."""

    def snapshot(self) -> ClusterSnapshot | None:
        """The current immutable state; None while nothing has been listed yet."""

    def synced(self) -> bool:
        """There is state to answer from (stays true through later relists and reloads)."""

    def health(self) -> tuple[bool, str]:
        """(alive, why): false once the loader cannot recover (e.g. a dead watch thread)."""

    def staleness_seconds(self) -> float:
        """How old the served picture is (files: since loaded; watch: since last contact)."""

    def reload(self) -> bool:
        """SIGHUP: files are read again (False, keeping the previous state, if that fails);
        a watch relists every kind (True: requested)."""

    def describe(self) -> str:
        """One line for logs: the source and its state."""


class FileClusterState:
    """Serves a member described by kubectl-style files; SIGHUP reloads them.

    The first load happens in the constructor so a bad file fails start-up (exit 2). A bad
    reload keeps serving the previous state and logs why.
    """

    def __init__(self, paths: Sequence[str | Path], state_cache: str | None = None,
                 meanwhile: Callable[[], None] | None = None):
        """`state_cache`: the parsed-state cache directory (estimator.cluster.statecache);
        None: its default, "off": no cache. `meanwhile`: the caller's work, run while a
        forked worker reads part of a big file (files.load_object_files), if one does."""
        self.paths = [Path(p) for p in paths]
        self._cache_dir = statecache.default_dir({statecache.ENV: state_cache} if state_cache else os.environ)
        self._lock = threading.Lock()
        # The cluster records live as long as the process: freeze them so no collection
        # walks them (a full one over a 10k-node member paused estimates for ~50 ms).
        # Start-up garbage is collected first; the loaded records are frozen straight from
        # the paused load, which builds no garbage cycles: collecting them would only
        # rescan millions of live objects (a first young pass, then a full one: 0.2-0.7 s of
        # CPU at 10k nodes in our profiles).
        gccontrol.settle("start")
        with gccontrol.paused():
            # Before any server thread exists: a new state entry is written by a forked writer.
            self._cache: ClusterCache = load_object_files(self.paths, state_cache=self._cache_dir, background=True,
                                                            meanwhile=meanwhile)
            gccontrol.settle("load", collect=False)
        self._loaded_at = time.time()
        self.last_reload_error = ""

    def start(self) -> None:
        snapshot = self._cache.snapshot()
        log.info("loaded %d nodes from %s", snapshot.num_nodes, ", ".join(map(str, self.paths)))

    def stop(self) -> None:
        pass

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
        try:
            cache = load_object_files(self.paths, state_cache=self._cache_dir)
        except StateLoadError as error:
            self.last_reload_error = str(error)
            log.error("reload failed, still serving the previous state: %s", error)
            return False
        with self._lock:
            self._cache = cache
            self._loaded_at = time.time()
        self.last_reload_error = ""
        # The previous state was frozen: thaw so a cycle in it cannot outlive it.
        gccontrol.thaw()
        gccontrol.settle("reload")
        log.info("reloaded %d nodes from %s", cache.snapshot().num_nodes, ", ".join(map(str, self.paths)))
        return True

    def describe(self) -> str:
        return "object files: " + ", ".join(map(str, self.paths))
