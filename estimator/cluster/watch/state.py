"""Live member cluster: list/watch Nodes, Pods, ResourceQuotas, ReplicaSets and Deployments
into a ClusterCache, with client-go informer semantics (see reflector.py).

`WatchClusterState` implements the server's ClusterState protocol:
- threads: one reflector thread per kind (as client-go runs one reflector per informer),
  all feeding one thread-safe ClusterCache, and a publisher thread that rebuilds the
  immutable snapshot every 10 ms while the cache changes; estimates take the published
  snapshot (at most `snapshot_max_lag` = 20 ms behind), so they do not pay the rebuild;
- synced(): every kind has been listed once (stays true through later relists);
- health(): false once a reflector thread has died (the loop itself survives every API
  error and malformed object; only a bug escaping it can end it);
- staleness_seconds(): age of the oldest kind's last confirmation from the API server
  (list completed, watch opened, event or bookmark received); grows while the API server
  is unreachable, while the last state keeps being served.

Sharing one interpreter with the estimates, the loop manages the collector (gc.freeze at
start and after the first sync; a young collection every 512 watch events) and yields to
an estimate that has just started (EstimatePriority). benchmarks/RESULTS.md ("Watch churn")
has the profiles behind each of these.

Only `kubeclient.py` speaks HTTP to the API server (urllib3); `kubecredentials.py` reads the
kubeconfig, --master or in-cluster settings (`kubeconfig.py` says what they mean).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence

from estimator.cluster import gccontrol
from estimator.cluster.cache import ClusterCache
from estimator.cluster.watch.kubeclient import KubeClient
from estimator.cluster.watch.priority import EstimatePriority
from estimator.cluster.watch.ratelimit import TokenBucket
from estimator.cluster.watch.reflector import Reflector
from estimator.cluster.watch.specs import KIND_SPECS, KindSpec, ReflectorOptions
from estimator.core.snapshot import ClusterSnapshot

log = logging.getLogger("estimator.watch")


class WatchClusterState:
    """Cluster state kept current by list/watch against the member's API server."""

    def __init__(
        self,
        kubeconfig: str = "",
        master: str = "",
        qps: float = 20.0,
        burst: int = 30,
        *,
        client: KubeClient | None = None,
        cache: ClusterCache | None = None,
        options: ReflectorOptions | None = None,
        connect_timeout: float = 10.0,
        kinds: Sequence[KindSpec] = KIND_SPECS,
        freeze_gc: bool = True,
        estimate_priority: EstimatePriority | None = None,
        snapshot_max_lag: float = 0.02,
    ):
        # Raises KubeConfigError for an unusable kubeconfig / --master / in-cluster setup.
        self.client = client or KubeClient.from_flags(kubeconfig, master, connect_timeout)
        self.cache = cache if cache is not None else ClusterCache()
        self.limiter = TokenBucket(qps, burst)
        self.options = options or ReflectorOptions()
        self._stop = threading.Event()
        self._started = False
        self._stopped = False
        self.priority = estimate_priority if estimate_priority is not None else EstimatePriority()
        self.reflectors = {
            spec.kind: Reflector(spec, self.client, self.cache, self.limiter, self._stop, self.options, self.priority)
            for spec in kinds
        }
        self._synced_at: float | None = None
        self.freeze_gc = freeze_gc
        self._froze = False
        # Snapshots are rebuilt off the estimate path (see snapshot()); 0 builds on demand only.
        self.snapshot_max_lag = snapshot_max_lag
        self._published: ClusterSnapshot | None = None
        self._published_at = 0.0
        self._publisher = threading.Thread(target=self._publish_loop, name="watch-snapshots", daemon=True)
        # A SIGHUP relists every kind; until each has swapped its new list in, estimates keep
        # the snapshot from before (bounded by relist_hold_max, should a list keep failing).
        self.relist_hold_max = 60.0
        self._holding: set[str] = set()
        self._hold_deadline = 0.0

    # --- ClusterState protocol ------------------------------------------------------------

    def start(self) -> None:
        if self._started:
            return
        self._started = True
        log.info(
            "listing and watching %s on %s (qps %s, burst %d)",
            ", ".join(self.reflectors),
            self.client.host,
            self.limiter.qps,
            self.limiter.burst,
        )
        if self.freeze_gc:
            _freeze_gc("start")
            self._froze = True
        for reflector in self.reflectors.values():
            reflector.on_synced = self._reflector_synced
            reflector.on_listed = self._reflector_listed
            reflector.start()
        if self.snapshot_max_lag > 0:
            self._publisher.start()

    def _reflector_listed(self, reflector: Reflector) -> None:
        if not reflector.relist_pending:  # a list begun before the latest reload does not count
            self._holding.discard(reflector.kind)

    def _held(self) -> bool:
        if self._holding and time.monotonic() > self._hold_deadline:
            log.warning(
                "relist after reload still incomplete for %s after %.0fs; publishing the live state",
                ", ".join(sorted(self._holding)),
                self.relist_hold_max,
            )
            self._holding = set()
        return bool(self._holding)

    def _reflector_synced(self) -> None:
        if self.synced() and self.freeze_gc and not self._stopped:
            _freeze_gc("initial sync")

    def stop(self, timeout: float = 5.0) -> None:
        self._stopped = True
        self._stop.set()
        for reflector in self.reflectors.values():
            reflector.abort_stream()
        deadline = time.monotonic() + timeout
        for reflector in self.reflectors.values():
            if reflector.thread.is_alive():
                reflector.thread.join(max(0.0, deadline - time.monotonic()))
        self.client.close()
        if self._froze:
            gccontrol.thaw()  # back to normal collection (matters when a process outlives us, e.g. tests)
            self._froze = False

    def snapshot(self) -> ClusterSnapshot | None:
        """A consistent snapshot at most `snapshot_max_lag` seconds behind the cache.

        Called at the start of every estimate, which then gets priority over event
        processing for a moment (EstimatePriority). Under churn the cache changes between
        any two estimates, and rebuilding the snapshot (O(nodes x resources), ~0.3 ms at
        10,000 nodes) plus its per-snapshot node masks was most of what an estimate paid
        over a quiet one; a publisher thread rebuilds it every max_lag/2 while the cache
        moves, so estimates take the published one. Each snapshot is whole: an estimate
        never sees half an event, only (at most) the last few milliseconds' events missing.
        """
        if not self.synced():
            return None
        self.priority.estimate_started()
        published = self._published
        if published is not None and (
            self.cache.busy
            or self._held()
            or published.version == self.cache.version
            or time.monotonic() - self._published_at <= self.snapshot_max_lag
        ):
            return published
        return self._publish()

    def _publish(self) -> ClusterSnapshot:
        taken = time.monotonic()
        snapshot = self.cache.snapshot()
        self._published, self._published_at = snapshot, taken
        return snapshot

    def _publish_loop(self) -> None:
        period = self.snapshot_max_lag / 2
        while not self._stop.wait(period):
            try:
                published = self._published
                if (
                    self.synced()
                    and (published is None or published.version != self.cache.version)
                    and not self.cache.busy
                    and not self._held()
                ):
                    self._publish()
            except Exception:  # noqa: BLE001 - estimates then build snapshots themselves
                log.exception("snapshot publisher tick failed")

    def synced(self) -> bool:
        if self._synced_at is not None:
            return True
        if self.reflectors and all(r.synced for r in self.reflectors.values()):
            self._synced_at = time.monotonic()
            return True
        return False

    def health(self) -> tuple[bool, str]:
        dead = [
            f"{r.kind}: {r.died or 'thread ended'}"
            for r in self.reflectors.values()
            if self._started and not self._stopped and not r.alive()
        ]
        if dead:
            return False, "watch loop died: " + "; ".join(dead)
        if not self._started:
            return True, "watch not started yet"
        if self._stopped:
            return True, "watch stopped"
        return True, f"watching {len(self.reflectors)} kinds on {self.client.host}"

    def staleness_seconds(self) -> float:
        if not self.reflectors:
            return 0.0
        oldest = min(r.last_ok for r in self.reflectors.values())
        return max(0.0, time.monotonic() - oldest)

    def reload(self) -> bool:
        """SIGHUP: relist every kind (the watch continues from the new lists)."""
        log.info("reload requested: relisting every kind")
        if self._published is not None:
            self._hold_deadline = time.monotonic() + self.relist_hold_max
            self._holding = set(self.reflectors)
        for reflector in self.reflectors.values():
            reflector.request_relist()
        return True

    def describe(self) -> str:
        now = time.monotonic()
        parts = []
        for r in self.reflectors.values():
            text = f"{r.kind} {'synced' if r.synced else 'not synced'}, {r.status}"
            if r.resource_version:
                text += f" at rv {r.resource_version}"
            age = now - r.last_ok
            if age >= 1:
                text += f", last contact {age:.1f}s ago"
            if r.status in ("backing off", "dead") and (r.last_error or r.died):
                text += f" ({(r.died or r.last_error)[:160]})"
            parts.append(text)
        return f"list/watch {self.client.host}: " + "; ".join(parts)

    # --- introspection ------------------------------------------------------------------

    def stats(self) -> dict[str, dict]:
        """Per-kind counters, for metrics, logs and benchmarks."""
        return {
            r.kind: {
                "synced": r.synced,
                "resource_version": r.resource_version,
                "events": r.events,
                "bookmarks": r.bookmarks,
                "lists": r.lists,
                "list_pages": r.pages,
                "relists_gone": r.relists_gone,
                "deleted_by_relist": r.deleted_by_relist,
                "malformed": r.malformed,
                "saturated": r.saturated,
                "throttled_seconds": r.throttled_seconds,
                "errors": dict(r.errors),
                "seconds_since_contact": time.monotonic() - r.last_ok,
            }
            for r in self.reflectors.values()
        }


def _freeze_gc(when: str) -> None:
    """Move every object alive now out of the cyclic collector's reach (gc.freeze).

    The list/watch threads allocate a burst of short-lived containers per page and event;
    each time the oldest generation is collected CPython walks every tracked object in the
    process: modules, numba's classes, the cache. Profiled on
    a 10,000-node / 100,000-pod sync that walk was half the CPU time (17.6 s vs 8.8 s) and
    during churn it is the pause an estimate waits behind. Garbage is collected first and
    only objects alive at these two points (start, first full sync) are frozen.
    """
    gccontrol.settle(when)
