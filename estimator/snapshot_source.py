"""Cluster state from files: `kubectl get nodes,pods,resourcequotas,replicasets,deployments -A -o yaml`.

Accepts, in YAML or JSON: a `v1 List` (or any `*List` kind), multi-document YAML, and single
objects. Node, Pod, ResourceQuota, ReplicaSet and Deployment feed a fresh ClusterCache;
other kinds are counted and reported in one warning per file. Anything malformed raises
SnapshotError naming the file, the object (kind namespace/name, #index in the file) and
the problem; nothing is returned unless every file loaded.
"""

from __future__ import annotations

import gc
import json
import logging
from collections import Counter
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

import orjson
import yaml

from estimator.cache import ClusterCache
from estimator.errors import SnapshotError
from estimator.resources import QuantityError

log = logging.getLogger(__name__)

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _feeders(cache: ClusterCache) -> dict[str, Callable[[Mapping], None]]:
    return {
        "Node": cache.upsert_node,
        "Pod": cache.upsert_pod,
        "ResourceQuota": cache.upsert_quota,
        "ReplicaSet": cache.upsert_replicaset,
        "Deployment": cache.upsert_deployment,
    }


def _documents(path: Path, text: str) -> list[Any]:
    """Top-level documents of a file: JSON when it looks like JSON, else (multi-doc) YAML."""
    if text.lstrip()[:1] in ("{", "["):
        try:
            return [orjson.loads(text)]  # ~1.5x the stdlib parser on big member files
        except orjson.JSONDecodeError:
            pass
        try:  # only to report where the file is broken
            return [json.loads(text)]
        except json.JSONDecodeError as err:
            raise SnapshotError(f"{path}: invalid JSON at line {err.lineno}, column {err.colno}: {err.msg}") from None
    try:
        return list(yaml.load_all(text, Loader=_Loader))
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise SnapshotError(f"{path}: invalid YAML{where}: {err.problem or err.context}") from None
    except yaml.YAMLError as err:
        raise SnapshotError(f"{path}: invalid YAML: {err}") from None


def _describe(obj: Any, index: int) -> str:
    if not isinstance(obj, dict):
        return f"object #{index}"
    meta = obj.get("metadata") if isinstance(obj.get("metadata"), Mapping) else {}
    name = meta.get("name") or "<no name>"
    namespace = meta.get("namespace")
    return f"object #{index} ({obj.get('kind') or '<no kind>'} {f'{namespace}/' if namespace else ''}{name})"


def _objects(path: Path, documents: Sequence[Any]) -> Iterator[tuple[int, Any]]:
    """(index in file, object) for every object, `*List` items expanded in place."""
    index = 0
    for document in documents:
        if document is None:
            continue  # an empty YAML document (e.g. a trailing ---)
        items = None
        if isinstance(document, dict) and str(document.get("kind", "")).endswith("List"):
            items = document.get("items") or []
            if not isinstance(items, list):
                raise SnapshotError(f"{path}: {document['kind']}: items is not a list")
            # API-server lists (PodList, ...) omit each item's kind.
            item_kind = document["kind"][: -len("List")]
            for item in items:
                if isinstance(item, dict) and "kind" not in item and item_kind:
                    item = {**item, "kind": item_kind}
                yield index, item
                index += 1
        elif isinstance(document, list):  # a bare JSON array of objects
            for item in document:
                yield index, item
                index += 1
        else:
            yield index, document
            index += 1


def _load_file(cache: ClusterCache, path: Path) -> int:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise SnapshotError(f"{path}: no such file") from None
    except (OSError, UnicodeDecodeError) as err:
        raise SnapshotError(f"{path}: cannot read: {err}") from None
    feeders = _feeders(cache)
    ignored: Counter[str] = Counter()
    loaded = 0
    for index, obj in _objects(path, _documents(path, text)):
        if not isinstance(obj, dict):
            raise SnapshotError(f"{path}: {_describe(obj, index)}: expected a Kubernetes object, got {type(obj).__name__}")
        kind = obj.get("kind")
        if not isinstance(kind, str) or not kind:
            raise SnapshotError(f"{path}: {_describe(obj, index)}: has no kind")
        feed = feeders.get(kind)
        if feed is None:
            ignored[kind] += 1
            continue
        try:
            feed(obj)
        except (ValueError, QuantityError, TypeError, AttributeError) as err:
            raise SnapshotError(f"{path}: {_describe(obj, index)}: {err}") from None
        loaded += 1
    if loaded == 0 and not ignored:
        raise SnapshotError(f"{path}: no Kubernetes objects in the file (it is empty)")
    if ignored:
        summary = ", ".join(f"{kind}: {count}" for kind, count in sorted(ignored.items()))
        log.warning("ignored %d objects of other kinds (%s) in %s", sum(ignored.values()), summary, path)
    return loaded


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Parsing a member file allocates millions of containers that all survive; the cyclic
    collector would rescan them again and again (it tripled the load time at 10k nodes)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def load_snapshot(paths: Sequence[str | Path]) -> ClusterCache:
    """A new ClusterCache holding every object of `paths`; SnapshotError if any is bad."""
    if isinstance(paths, (str, Path)):
        paths = [paths]
    if not paths:
        raise SnapshotError("no snapshot files given")
    cache = ClusterCache()
    with _collector_paused():
        for path in paths:
            _load_file(cache, Path(path))
    return cache
