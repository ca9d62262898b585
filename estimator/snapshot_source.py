"""Cluster state from files: `kubectl get nodes,pods,resourcequotas,replicasets,deployments -A -o yaml`.

Accepts, in YAML or JSON: a `v1 List` (or any `*List` kind), multi-document YAML, and single
objects. Node, Pod, ResourceQuota, ReplicaSet and Deployment feed a fresh ClusterCache;
other kinds are counted and reported in one warning per file. Anything malformed raises
SnapshotError naming the file, the object (kind namespace/name, #index in the file) and
the problem; nothing is returned unless every file loaded.
"""

from __future__ import annotations

import logging
from collections import Counter
from pathlib import Path
from typing import Any, Mapping, Sequence

from estimator import gccontrol
from estimator.cache import ClusterCache
from estimator.records import KINDS
from estimator.errors import SnapshotError
from estimator.kubefiles import ObjectFileError, iter_objects
from estimator.resources import QuantityError

log = logging.getLogger(__name__)


def _describe(obj: Any, index: int) -> str:
    if not isinstance(obj, dict):
        return f"object #{index}"
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), Mapping) else {}
    name = meta.get("name") or "<no name>"
    namespace = meta.get("namespace")
    return f"object #{index} ({obj.get('kind') or '<no kind>'} {f'{namespace}/' if namespace else ''}{name})"


def _load_file(cache: ClusterCache, path: Path) -> int:
    try:
        return _load_objects(cache, path, iter_objects(path))
    except ObjectFileError as err:
        raise SnapshotError(str(err)) from None


def _load_objects(cache: ClusterCache, path: Path, objects) -> int:
    ignored: Counter[str] = Counter()
    loaded = 0
    for index, obj in enumerate(objects):
        if not isinstance(obj, dict):
            raise SnapshotError(f"{path}: {_describe(obj, index)}: expected a Kubernetes object, got {type(obj).__name__}")
        kind = obj.get("kind")
        if not isinstance(kind, str) or not kind:
            raise SnapshotError(f"{path}: {_describe(obj, index)}: has no kind")
        if kind not in KINDS:
            ignored[kind] += 1
            continue
        try:
            cache.upsert(kind, obj)
        except (ValueError, QuantityError, TypeError, AttributeError) as err:
            raise SnapshotError(f"{path}: {_describe(obj, index)}: {err}") from None
        loaded += 1
    if loaded == 0 and not ignored:
        raise SnapshotError(f"{path}: no Kubernetes objects in the file (it is empty)")
    if ignored:
        summary = ", ".join(f"{kind}: {count}" for kind, count in sorted(ignored.items()))
        log.warning("ignored %d objects of other kinds (%s) in %s", sum(ignored.values()), summary, path)
    return loaded


def load_snapshot(paths: Sequence[str | Path]) -> ClusterCache:
    """A new ClusterCache holding every object of `paths`; SnapshotError if any is bad."""
    if isinstance(paths, (str, Path)):
        paths = [paths]
    if not paths:
        raise SnapshotError("no snapshot files given")
    cache = ClusterCache()
    # Parsing allocates millions of containers that all survive: no collector passes over them.
    with gccontrol.paused():
        for path in paths:
            _load_file(cache, Path(path))
    return cache
