"""Cluster state from files: `kubectl get nodes,pods,resourcequotas,replicasets,deployments,deviceclasses,
resourceslices,resourceclaims -A -o yaml`.

Accepts, in YAML or JSON: a `v1 List` (or any `*List` kind), multi-document YAML, and single
objects. Node, Pod, ResourceQuota, ReplicaSet, Deployment, DeviceClass, ResourceSlice and
ResourceClaim feed a fresh ClusterCache;
other kinds are counted and reported in one warning per file. Anything malformed raises
StateLoadError naming the file, the object (kind namespace/name, #index in the file) and
the problem; nothing is returned unless every file loaded. Common pods and nodes go
through estimator.cluster.bulkload, which ends in the state the per-record path would;
everything else, bad objects included, goes through that path. A big JSON list is read on
two cores (estimator.cluster.splitload): a worker digests the common pods of its second
part, which are applied here in file order like the rest.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

import orjson

from estimator.cluster import forked, gccontrol, objectscache, splitload
from estimator.cluster.bulkload import BulkLoader, digest_record
from estimator.cluster.cache import ClusterCache
from estimator.cluster.kubefiles import ObjectFileError, iter_objects
from estimator.core.errors import StateLoadError
from estimator.core.records import KINDS, parse_object
from estimator.core.resources import QuantityError

log = logging.getLogger(__name__)


def _describe(obj: Any, index: int) -> str:
    if not isinstance(obj, dict):
        return f"object #{index}"
    meta = obj.get("metadata")
    if not isinstance(meta, Mapping):
        meta = {}
    name = meta.get("name") or "<no name>"
    namespace = meta.get("namespace")
    return f"object #{index} ({obj.get('kind') or '<no kind>'} {f'{namespace}/' if namespace else ''}{name})"


def _load_file(
    cache: ClusterCache,
    path: Path,
    recorder: objectscache.Recorder | None = None,
    bulk: bool = True,
    split: bool = True,
    meanwhile: Callable[[], None] | None = None,
) -> int:
    """`split`: a big JSON list may be read on two cores (estimator.cluster.splitload), and
    `meanwhile` run while its worker reads."""
    try:
        objects = splitload.objects(path, meanwhile=meanwhile) if bulk and split else None
        return _load_objects(cache, path, iter_objects(path) if objects is None else objects, recorder, bulk)
    except ObjectFileError as err:
        raise StateLoadError(str(err)) from None


def _load_objects(
    cache: ClusterCache,
    path: Path,
    objects: Iterable[Any],
    recorder: objectscache.Recorder | None = None,
    bulk: bool = True,
) -> int:
    """Apply `objects` of `path` to `cache`; `bulk=False`: every object per record (the
    reference the bulk path is tested against)."""
    ignored: Counter[str] = Counter()
    loaded = 0
    # Most pods and nodes take the bulk path; the rest, and every other kind, are applied
    # per record once the bulk path's pending sums are in the arrays.
    loader = BulkLoader(cache)
    fast = {"Pod": loader.pod, "Node": loader.node} if bulk else {}
    take_digest = loader.take

    def per_record(kind: str, record: Any, obj: dict | None) -> None:
        loader.flush()
        cache.apply(kind, record)
        if recorder is not None:
            recorder.note(kind, obj, record)

    index = -1
    for obj in objects:
        index += 1
        if type(obj) is tuple:  # a run of common pods digested by splitload's worker
            if not loader.take_run(obj):
                for digest in zip(*obj, strict=True):
                    if not take_digest(digest):
                        # A pod with a digest is not unschedulable: the recorder needs no object.
                        per_record("Pod", digest_record(digest), None)
            loaded += len(obj[0])
            index += len(obj[0]) - 1
            continue
        if type(obj) is dict:
            kind = obj.get("kind")
            take = fast.get(kind) if type(kind) is str else None
            if take is not None and take(obj):
                loaded += 1
                continue
        if not isinstance(obj, dict):
            raise StateLoadError(
                f"{path}: {_describe(obj, index)}: expected a Kubernetes object, got {type(obj).__name__}"
            )
        kind = obj.get("kind")
        if not isinstance(kind, str) or not kind:
            raise StateLoadError(f"{path}: {_describe(obj, index)}: has no kind")
        if kind not in KINDS:
            ignored[kind] += 1
            continue
        try:
            record = parse_object(kind, obj)
        except (ValueError, QuantityError, TypeError, AttributeError) as err:
            raise StateLoadError(f"{path}: {_describe(obj, index)}: {err}") from None
        per_record(kind, record, obj)
        loaded += 1
    loader.flush()
    if loaded == 0 and not ignored:
        raise StateLoadError(f"{path}: no Kubernetes objects in the file (it is empty)")
    if ignored:
        summary = ", ".join(f"{kind}: {count}" for kind, count in sorted(ignored.items()))
        warning = f"ignored {sum(ignored.values())} objects of other kinds ({summary}) in {path}"
        log.warning("%s", warning)
        if recorder is not None:
            recorder.warnings.append(warning)
    return loaded


_DEFAULT_DIR = object()


def load_object_files(
    paths: str | Path | Sequence[str | Path],
    state_cache: Path | str | None | object = _DEFAULT_DIR,
    min_bytes: int = objectscache.MIN_BYTES,
    background: bool = False,
    meanwhile: Callable[[], None] | None = None,
) -> ClusterCache:
    """A new ClusterCache holding every object of `paths`; StateLoadError if any is bad.

    `state_cache`: the directory of parsed-state entries (estimator.cluster.objectscache;
    default: its `default_dir()`, None: off), used when the files hold at least `min_bytes`.
    `background`: write a new entry in a forked writer, so the caller need not wait for it
    (a server's first load, before it serves; see `_save_state`).
    `meanwhile`: the caller's own work (a server's imports and kernel loading), run while
    the worker of a split load reads (splitload.objects); not run at all when no file is
    split.
    """
    if isinstance(paths, (str, Path)):
        paths = [paths]
    if not paths:
        raise StateLoadError("no object files given")
    files = [Path(p) for p in paths]
    directory = objectscache.default_dir() if state_cache is _DEFAULT_DIR else cast("Path | str | None", state_cache)
    keys: list | None = None
    if directory:
        try:
            keys = objectscache.file_keys(files)
        except OSError:
            keys = None  # the load itself says what is wrong with the file
        if keys is not None and sum(key[1] for key in keys) < min_bytes:
            keys = None
    started = time.perf_counter()
    # Parsing allocates millions of containers that all survive: no collector passes over them.
    with gccontrol.paused():
        if keys is not None:
            assert directory  # keys only with a directory
            hit = objectscache.load(files, Path(directory))
            if hit is not None:
                cache, warnings = hit
                for warning in warnings:
                    log.warning("%s", warning)
                log.info(
                    "loaded %s from the state cache in %.2f s",
                    ", ".join(map(str, files)),
                    time.perf_counter() - started,
                )
                return cache
        recorder = objectscache.Recorder() if keys is not None else None
        cache = ClusterCache()
        for path in files:
            _load_file(cache, path, recorder, meanwhile=meanwhile)
            meanwhile = None  # (once: a later file's worker would only wait for it)
        parsed = time.perf_counter()
        log.info("parsed %s in %.2f s", ", ".join(map(str, files)), parsed - started)
        if recorder is not None:
            assert keys is not None and directory  # a recorder only with keys, keys only with a directory
            _save_state(cache, recorder, files, keys, Path(directory), background)
    return cache


_writers: list[threading.Thread] = []


def _save_state(
    cache: ClusterCache,
    recorder: objectscache.Recorder,
    paths: list[Path],
    keys: list,
    directory: Path,
    background: bool,
) -> None:
    """Write the parsed state's entry: in a forked writer (estimator.cluster.forked) when
    `background` and the process may fork, so the caller goes on at once (a 50k-node
    member's entry takes about 1.5 s to build and write); else here. The writer only builds
    and writes the entry (into a temporary file renamed into place) and reports the outcome,
    which this process logs. Should this process exit first, the writer still finishes or
    leaves no entry."""
    started = time.perf_counter()
    if not (background and forked.possible()):
        _log_saved(objectscache.save(cache, recorder, paths, keys, directory), started, "")
        return

    def save() -> bytes:
        outcome = objectscache.save(cache, recorder, paths, keys, directory)
        return orjson.dumps(str(outcome) if isinstance(outcome, Path) else list(outcome))

    writer = forked.start(lambda send: send(save()))
    thread = threading.Thread(target=_await_writer, args=(writer, started), name="state-cache-writer", daemon=True)
    _writers.append(thread)
    thread.start()


def _await_writer(writer: forked.Child, started: float) -> None:
    report = forked.result(writer)
    if not report:
        log.warning("state cache not saved: its writer (pid %d) failed", writer.pid)
        return
    outcome = orjson.loads(report)
    _log_saved(
        Path(outcome) if isinstance(outcome, str) else objectscache.Unsaved(*outcome), started, " in the background"
    )


def _log_saved(outcome: Path | objectscache.Unsaved, started: float, where: str) -> None:
    if isinstance(outcome, Path):
        log.info("saved the parsed state to %s in %.2f s%s", outcome, time.perf_counter() - started, where)
    else:
        log.log(outcome.level, "%s", outcome.message)


def wait_for_saves(timeout: float | None = None) -> None:
    """Wait for the background writers started so far (tests, and benchmarks that time them)."""
    while _writers:
        _writers.pop().join(timeout)
