"""The protocol the server reads its cluster state by, whichever source it comes from.

Two implementations: `estimator.cluster.filestate.FileClusterState` serves kubectl-style
files given with --objects, and `estimator.cluster.watch.WatchClusterState` keeps a live
list/watch of the member's API server (--kubeconfig, --master or in-cluster). Either hands
out immutable snapshots and says whether it is synced (has state to answer from) and
healthy (its loader is alive); the server decides readiness from that.
"""

from __future__ import annotations

from typing import Protocol

from estimator.core.snapshot import ClusterSnapshot


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
