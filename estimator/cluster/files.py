"""Cluster state from files: `kubectl get nodes,pods,resourcequotas,replicasets,deployments -A -o yaml`.

Accepts, in YAML or JSON: a `v1 List` (or any `*List` kind), multi-document YAML, and single
objects. Node, Pod, ResourceQuota, ReplicaSet and Deployment feed a fresh ClusterCache;
other kinds are counted and reported in one warning per file. Anything malformed raises
StateLoadError naming the file, the object (kind namespace/name, #index in the file) and
the problem; nothing is returned unless every file loaded.
"""

from __future__ import annotations

import logging
from collections import Counter
from pathlib import Path
from typing import Any, Mapping, Sequence

from estimator.cluster import gccontrol
from estimator.cluster.cache import ClusterCache
from estimator.cluster.kubefiles import ObjectFileError, iter_objects
from estimator.core.errors import StateLoadError
from estimator.core.records import KINDS
from estimator.core.resources import QuantityError

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
        raise StateLoadError(str(err)) from None


def _load_objects(cache: ClusterCache, path: Path, objects) -> int:
    ignored: Counter[str] = Counter()
    loaded = 0
    for index, obj in enumerate(objects):
        if not isinstance(obj, dict):
            raise StateLoadError(f"{path}: {_describe(obj, index)}: expected a Kubernetes object, got {type(obj).__name__}")
        kind = obj.get("kind")
        if not isinstance(kind, str) or not kind:
            raise StateLoadError(f"{path}: {_describe(obj, index)}: has no kind")
        if kind not in KINDS:
            ignored[kind] += 1
            continue
        try:
            cache.upsert(kind, obj)
        except (ValueError, QuantityError, TypeError, AttributeError) as err:
            raise StateLoadError(f"{path}: {_describe(obj, index)}: {err}") from None
        loaded += 1
    if loaded == 0 and not ignored:
        raise StateLoadError(f"{path}: no Kubernetes objects in the file (it is empty)")
    if ignored:
        summary = ", ".join(f"{kind}: {count}" for kind, count in sorted(ignored.items()))
        log.warning("ignored %d objects of other kinds (%s) in %s", sum(ignored.values()), summary, path)
    return loaded


def load_object_files(paths: Sequence[str | Path]) -> ClusterCache:
    """A new ClusterCache holding every object of `paths`; StateLoadError if any is bad."""
    if isinstance(paths, (str, Path)):
        paths = [paths]
    if not paths:
        raise StateLoadError("no object files given")
    cache = ClusterCache()
    # Parsing allocates millions of containers that all survive: no collector passes over them.
    with gccontrol.paused():
        for path in paths:
            _load_file(cache, Path(path))
    return cache
