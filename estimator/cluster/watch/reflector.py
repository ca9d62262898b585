"""One kind's list/watch loop, with client-go Reflector semantics, feeding the ClusterCache.

    list (paginated: limit + continue, consistent read)  -> upsert every item, then delete
         every key the cache holds that the list did not return (the relist diff)
    watch from the list's resourceVersion, allowWatchBookmarks  -> apply events in order,
         remember the resourceVersion of each event and bookmark
    stream ended or dropped             -> watch again from the last resourceVersion
    410 Gone (HTTP or an ERROR event)   -> relist (after the first backoff step)
    expired continue token (410)        -> restart the list from the beginning
    unreachable / 429 / 5xx / timeouts  -> capped exponential backoff with jitter, then retry
                                           (the cache keeps serving the last state)

Every request first takes a token from the shared bucket (--kube-api-qps/--kube-api-burst).
Objects are never kept: each item or event is parsed from JSON, handed to the cache (which
keeps only lean records) and dropped. A malformed object is logged and skipped; it never
stops the loop. No Kubernetes import here: the client seam is `kubeclient.KubeClient`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from estimator.cluster import gccontrol
from estimator.cluster.cache import ClusterCache
from estimator.cluster.watch.events import MALFORMED, EventError, loads, object_name, status_error
from estimator.cluster.watch.failures import FailureLog
from estimator.cluster.watch.kubeclient import ApiError, Gone, KubeClient, Silent, Unavailable, WatchStream
from estimator.cluster.watch.priority import NO_PRIORITY, EstimatePriority
from estimator.cluster.watch.ratelimit import TokenBucket
from estimator.cluster.watch.specs import KindSpec, ReflectorOptions, object_key
from estimator.core.records import parse_object, record_key

log = logging.getLogger("estimator.watch")


class _Stopped(Exception):
    pass


class Reflector:
    """The list/watch loop of one kind, run on its own thread."""

    def __init__(
        self,
        spec: KindSpec,
        client: KubeClient,
        cache: ClusterCache,
        limiter: TokenBucket,
        stop: threading.Event,
        options: ReflectorOptions | None = None,
        priority: EstimatePriority = NO_PRIORITY,
    ):
        self.spec = spec
        self._priority = priority
        self.kind = spec.kind
        self._client = client
        self._cache = cache
        self._limiter = limiter
        self._stop = stop
        self.options = options or ReflectorOptions()
        self.failures = FailureLog(spec.kind, self.options)  # failures in a row, backoff, error counts
        self.resource_version = ""  # "" -> the next step is a (re)list
        self.synced = False  # listed once; stays true (client-go HasSynced)
        self.last_ok = time.monotonic()  # last list completion, watch open, event or bookmark
        self.status = "not started"
        self.died = ""  # set when the thread ended on an unexpected BaseException
        # Counters (written by the reflector thread only).
        self.events = 0
        self.bookmarks = 0
        self.lists = 0
        self.relists_gone = 0
        self.pages = 0
        self.deleted_by_relist = 0
        self.malformed = 0
        self.saturated = 0  # objects applied with a request sum clamped to int64
        self.throttled_seconds = 0.0  # waited for the QPS token bucket
        self._stream: WatchStream | None = None
        self._productive = False
        self._relist_asked = 0  # reload requests; a relist serves those asked before it started
        self._relist_done = 0
        self.on_synced: Callable[[], None] | None = None  # called once, after the first list
        self.not_served = False  # an optional kind the API server does not serve or let us read
        self.on_listed: Callable[[Reflector], None] | None = None  # after every complete list
        self.thread = threading.Thread(target=self._run, name=f"watch-{spec.kind}", daemon=True)

    # --- control (any thread) ---------------------------------------------------------

    def start(self) -> None:
        self.last_ok = time.monotonic()
        self.thread.start()

    def request_relist(self) -> None:
        self._relist_asked += 1
        self.abort_stream()

    def abort_stream(self) -> None:
        stream = self._stream
        if stream is not None:
            stream.abort()

    def alive(self) -> bool:
        return self.thread.is_alive()

    # --- the loop -----------------------------------------------------------------------

    def _run(self) -> None:
        try:
            self._loop()
        except _Stopped:
            pass
        except BaseException as error:  # noqa: BLE001 - recorded so /healthz can fail
            self.died = f"{type(error).__name__}: {error}"
            self.status = "dead"
            log.critical("%s watch loop died: %s", self.kind, self.died, exc_info=True)
            return
        self.status = "stopped"

    def _loop(self) -> None:
        while not self._stop.is_set():
            delay = 0.0
            self._productive = False
            try:
                if not self.resource_version or self.relist_pending:
                    self._list()
                    self.failures.healthy()
                if self._watch():
                    self.failures.healthy()
                    continue
                delay = self.failures.failed(
                    "short-watch",
                    f"watch ended after less than {self.options.min_watch_seconds}s without events",
                    self.last_ok,
                )
            except _Stopped:
                return
            except Gone as error:
                self.relists_gone += 1
                self.resource_version = ""
                log.info("%s: %s; relisting", self.kind, error)
                delay = self.failures.failed("gone", str(error), self.last_ok, quiet=True, gone=True)
            except Silent as error:
                self._client.fresh_connections()
                if self._productive:
                    self.failures.count("silent")
                    log.warning(
                        "%s: %s; presumed dead, resuming from resourceVersion %s through a new connection",
                        self.kind,
                        error,
                        self.resource_version,
                    )
                    continue
                delay = self.failures.failed("silent", str(error), self.last_ok)
            except Unavailable as error:
                if self.relist_pending or self._stop.is_set():
                    continue  # our own abort
                if self._productive and not isinstance(error, EventError):
                    self.failures.count("stream-broken")
                    log.info("%s: %s; resuming from resourceVersion %s", self.kind, error, self.resource_version)
                    continue  # a stream that delivered drops: resume at once, like client-go
                self._client.fresh_connections()  # pooled connections on the same path may be dead too
                delay = self.failures.failed("unavailable", str(error), self.last_ok)
            except ApiError as error:
                if self.spec.optional and error.status in (403, 404):
                    delay = self._not_served(error)
                else:
                    delay = self.failures.failed(f"http-{error.status}", str(error), self.last_ok, level=logging.ERROR)
            except Exception as error:  # noqa: BLE001 - a bug must not end the loop: relist
                log.exception("%s: unexpected error in the list/watch loop; relisting", self.kind)
                self.resource_version = ""
                delay = self.failures.failed("internal", f"{type(error).__name__}: {error}", self.last_ok)
            if delay > 0:
                self.status = "backing off"
                if self._wait(delay):
                    return

    @property
    def relist_pending(self) -> bool:
        return self._relist_asked != self._relist_done

    def _wait(self, seconds: float) -> bool:
        """Sleep (through the injectable clock's wait, if any); True when stopping."""
        wait = self.options.wait
        return wait(self._stop, seconds) if wait is not None else self._stop.wait(seconds)

    # --- failures (FailureLog's, read by the state's health and stats) ---

    @property
    def errors(self) -> dict[str, int]:
        """Failures by reason, since the start."""
        return self.failures.errors

    @property
    def last_error(self) -> str:
        return self.failures.last_error

    @property
    def failing_since(self) -> float | None:
        """options.clock() time of the first failure in a row, None while healthy."""
        return self.failures.failing_since

    def _not_served(self, error: ApiError) -> float:
        """An optional kind the API server does not serve (404) or lets us read (403): the
        member has none of it as far as we can tell. Synced (empty) the first time, said
        once; listed again every `optional_retry` seconds."""
        self.resource_version = ""
        self.failures.last_error = str(error)
        if not self.not_served:
            self.not_served = True
            what = "not served by the API server" if error.status == 404 else "not readable with our credentials"
            log.warning(
                "%s: %s (%s): counted as none (DRA-served devices are not counted); listing again every %.0fs",
                self.kind,
                what,
                str(error)[:200],
                self.options.optional_retry,
            )
        if self._cache.keys(self.kind):
            self._cache.replace_kind(self.kind, [])  # it was served before: its objects are gone with it
        if not self.synced:
            self.synced = True
            if self.on_synced is not None:
                self.on_synced()
        return self.options.optional_retry

    def _take_token(self) -> None:
        wait = self._limiter.reserve()
        if wait > 0:
            self.throttled_seconds += wait
            if self._wait(wait):
                raise _Stopped

    # --- list ---------------------------------------------------------------------------

    def _list(self) -> None:
        options = self.options
        self.status = "listing"
        asked = self._relist_asked  # reload requests this list serves; later ones stay pending
        seen: set = set()
        # Once synced (estimates are being answered), a relist is built aside and swapped in
        # at the end, so no answer mixes pages of the new list with the old state. The first
        # list is applied page by page: nothing is answered before every kind has synced.
        aside: list | None = [] if self.synced else None
        token = ""
        full = False  # after an expired continue token: one unpaginated list, as client-go's pager
        resource_version = ""
        while True:
            self._take_token()
            try:
                body = self._client.list_page(
                    self.kind,
                    limit=0 if full else options.page_size,
                    continue_token=token,
                    field_selector=self.spec.field_selector,
                    timeout=options.list_timeout,
                )
            except Gone:
                if not token:
                    raise
                # The continue token expired (compaction) mid-list. A consistent list must
                # start over; client-go's pager then asks for everything in one response
                # rather than risk the same race again page by page.
                self.failures.count("continue-expired")
                log.info("%s: continue token expired during a paginated list; listing again in one request", self.kind)
                seen.clear()
                if aside is not None:
                    aside.clear()
                token = ""
                full = True
                continue
            if self._stop.is_set():
                raise _Stopped
            try:
                page = loads(body)
            except ValueError as error:
                raise Unavailable(f"list {self.kind}: response is not JSON: {error}") from None
            del body
            if not isinstance(page, dict):
                raise Unavailable(f"list {self.kind}: response is not an object")
            self.pages += 1
            priority = self._priority
            for item in page.get("items") or ():
                if priority.until > time.monotonic():
                    priority.pause()
                self._take_listed(item, seen, aside)
            meta = page.get("metadata") or {}
            resource_version = str(meta.get("resourceVersion") or resource_version)
            token = str(meta.get("continue") or "")
            del page
            if not token:
                break
        if not resource_version:
            raise ApiError(f"list {self.kind}: the response has no resourceVersion to watch from")
        if aside is not None:
            # `seen` holds every listed key; the malformed ones keep their last good state.
            kept = seen.difference(record_key(self.kind, record) for record in aside)
            removed = self._cache.replace_kind(self.kind, aside, keep=kept)
        else:
            stale = self._cache.keys(self.kind) - seen
            for key in stale:
                self._cache.delete(self.kind, key)
            removed = len(stale)
        del aside
        self.deleted_by_relist += removed
        if removed and self.synced:
            log.info("%s: relist removed %d objects deleted while we were not watching", self.kind, removed)
        self.lists += 1
        self.resource_version = resource_version
        self.last_ok = time.monotonic()
        self._relist_done = asked
        if self.on_listed is not None:
            self.on_listed(self)
        self.not_served = False
        if not self.synced:
            self.synced = True
            log.info("%s: synced %d objects at resourceVersion %s", self.kind, len(seen), resource_version)
            if self.on_synced is not None:
                self.on_synced()

    def _take_listed(self, item: Any, seen: set, aside: list | None) -> None:
        try:
            key = object_key(item, self.spec.namespaced)
        except MALFORMED as error:
            self._malformed("list", item, error)
            return
        seen.add(key)  # a malformed item keeps its last good state instead of vanishing
        record = self._parse("list", item)
        if record is None:
            return
        if aside is not None:
            aside.append(record)
        else:
            self._apply("list", item, record)

    def _parse(self, where: str, obj: Any) -> Any:
        """The object's checked record, or None (logged and counted) if it cannot be used.
        Parsing touches nothing, so a refused object changes no number in the cache."""
        try:
            record = parse_object(self.kind, obj)
        except MALFORMED as error:
            self._malformed(where, obj, error)
            return None
        except Exception as error:  # noqa: BLE001 - one object's problem, never the stream's
            self._malformed(where, obj, error, unexpected=True)
            return None
        if getattr(record, "saturated", ()):
            self.saturated += 1
            log.warning(
                "%s %s: %s requests more %s than a 64-bit count holds; counted as the maximum "
                "(nothing else fits on its node)",
                self.kind,
                where,
                object_name(obj, self.spec.namespaced),
                ", ".join(record.saturated),
            )
        return record

    def _apply(self, where: str, obj: Any, record: Any) -> None:
        try:
            self._cache.apply(self.kind, record)
        except Exception as error:  # noqa: BLE001 - a bug in applying one object must not stall the kind
            self._malformed(where, obj, error, unexpected=True)

    def _malformed(self, where: str, obj: Any, error: Exception, unexpected: bool = False) -> None:
        self.malformed += 1
        log.warning(
            "%s %s: skipping malformed object %s: %s",
            self.kind,
            where,
            object_name(obj, self.spec.namespaced),
            error or type(error).__name__,
            exc_info=unexpected,
        )

    # --- watch --------------------------------------------------------------------------

    def _watch(self) -> bool:
        """Watch from `resource_version` until the stream ends; True if it was productive."""
        options = self.options
        self._take_token()
        timeout_seconds = max(
            1, int(options.min_watch_timeout * (1.0 + options.watch_timeout_jitter * options.rng.random()))
        )
        stream = self._client.watch(
            self.kind,
            resource_version=self.resource_version,
            timeout_seconds=timeout_seconds,
            # The read timeout is per read: it runs from the last byte received, so it fires
            # at most timeoutSeconds + margin after a link went silent.
            read_timeout=timeout_seconds + options.read_timeout_margin,
            field_selector=self.spec.field_selector,
        )
        self._stream = stream
        if self._stop.is_set() or self.relist_pending:
            stream.abort()
        opened = time.monotonic()
        self.last_ok = opened
        self.status = "watching"
        parse, apply, delete, namespaced = self._parse, self._apply, self._cache.delete, self.spec.namespaced
        kind_name = self.kind
        decode, monotonic, priority = loads, time.monotonic, self._priority
        young_gc_every, collect_young = options.young_gc_every, gccontrol.young
        events = 0
        try:
            for line in stream.lines():
                if priority.until > monotonic():
                    priority.pause()
                try:
                    event = decode(line)
                except ValueError as error:
                    raise Unavailable(f"watch {self.kind}: undecodable event ({error})") from None
                if not isinstance(event, dict) or not isinstance(event.get("object"), dict):
                    self._malformed("watch", None, ValueError(f"not a watch event: {line[:120]!r}"))
                    continue
                kind = event.get("type")
                obj = event["object"]
                meta = obj.get("metadata") if kind != "ERROR" else None
                if kind == "ADDED" or kind == "MODIFIED":
                    record = parse("watch", obj)
                    if record is not None:
                        apply("watch", obj, record)
                elif kind == "DELETED":
                    try:
                        delete(kind_name, object_key(obj, namespaced))
                    except MALFORMED as error:
                        self._malformed("watch", obj, error)
                elif kind == "BOOKMARK":
                    self.bookmarks += 1
                elif kind == "ERROR":
                    raise status_error(self.kind, obj)
                else:
                    log.warning("%s: ignoring watch event of unknown type %r", self.kind, kind)
                resource_version = meta.get("resourceVersion") if isinstance(meta, Mapping) else None
                if resource_version:
                    self.resource_version = str(resource_version)
                self.last_ok = monotonic()
                events += 1
                self.events += 1
                if young_gc_every and self.events % young_gc_every == 0:
                    collect_young()
                self._productive = True
                if self._stop.is_set() or self.relist_pending:
                    break
        finally:
            self._stream = None
            stream.close()
        return events > 0 or time.monotonic() - opened >= options.min_watch_seconds
