"""What the list/watch loop watches and how: the kinds (with their field selectors and
keys) and the loop's timing options."""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from estimator.core.model import TERMINAL_POD_PHASES
from estimator.core.records import ObjectKey

POD_FIELD_SELECTOR = ",".join(f"status.phase!={phase}" for phase in TERMINAL_POD_PHASES)


@dataclass(frozen=True)
class KindSpec:
    kind: str
    namespaced: bool
    field_selector: str = ""
    # Optional: a member that does not serve the kind (404: no resource.k8s.io/v1, DRA off) or
    # does not let us read it (403: RBAC of an install older than DRA support) counts as having
    # none of it; the loop says so once and lists again every `optional_retry` seconds.
    optional: bool = False


KIND_SPECS: tuple[KindSpec, ...] = (
    KindSpec("Node", namespaced=False),
    KindSpec("Pod", namespaced=True, field_selector=POD_FIELD_SELECTOR),
    KindSpec("ResourceQuota", namespaced=True),
    KindSpec("ReplicaSet", namespaced=True),
    KindSpec("Deployment", namespaced=True),
    KindSpec("DeviceClass", namespaced=False, optional=True),
    KindSpec("ResourceSlice", namespaced=False, optional=True),
    KindSpec("ResourceClaim", namespaced=True, optional=True),
)


def object_key(obj: Any, namespaced: bool) -> ObjectKey:
    """The cache's key for an object: its name, or (namespace, name) as the cache spells it."""
    meta = obj.get("metadata") if isinstance(obj, Mapping) else None
    if not isinstance(meta, Mapping):
        raise ValueError("metadata.name is missing")
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError("metadata.name is missing")
    return (str(meta.get("namespace") or "default"), name) if namespaced else name


@dataclass
class ReflectorOptions:
    page_size: int = 500
    list_timeout: float = 60.0
    # Every watch asks the API server to end it after timeoutSeconds drawn from
    # [min_watch_timeout, min_watch_timeout * (1 + watch_timeout_jitter)] (spread so that
    # estimators do not reconnect in step); it is then resumed from its resourceVersion, a
    # cheap request the watch cache serves. client-go asks for 5-10 min; ours are short
    # because the deadline is what proves a quiet link alive (see below).
    min_watch_timeout: float = 30.0
    watch_timeout_jitter: float = 0.5
    # A healthy watch ends by timeoutSeconds (the API server closes it cleanly at its deadline,
    # and its watch cache sends a bookmark 2 s before), so one that neither ends nor delivers
    # a byte for timeoutSeconds + read_timeout_margin is presumed dead and replaced through a
    # fresh connection: a silenced link is noticed within 45 + 5 s whatever the bookmark
    # interval. (A link that stops acknowledging fails sooner, by TCP keepalive: kubeclient.py.)
    read_timeout_margin: float = 5.0
    # A watch that ends sooner than this without a single event counts as a failure.
    min_watch_seconds: float = 1.0
    backoff_initial: float = 0.8
    backoff_cap: float = 30.0
    # The backoff starts over only after this long without a failure (client-go: 2 min).
    backoff_reset_after: float = 120.0
    # A kind failing for this long is logged as an error, then again every loud_every.
    loud_after: float = 60.0
    loud_every: float = 300.0
    # Clock and sleep of the backoff (tests inject a fake clock; wait(stop, s) -> stopped?).
    clock: Callable[[], float] = time.monotonic
    wait: Callable[[threading.Event, float], bool] | None = None
    # Collect the youngest GC generation every this many watch events (0: leave it to
    # CPython). Churn keeps CPython's allocation count flat (each new pod record is
    # balanced by a freed old one) while new records pile up in generation 0 unexamined;
    # left alone, the next young collection walked ~60,000 of them in one 20-30 ms pause.
    young_gc_every: int = 512
    rng: random.Random = field(default_factory=random.Random)
    # How often an optional kind the API server does not serve (or lets us read) is listed again.
    optional_retry: float = 60.0
