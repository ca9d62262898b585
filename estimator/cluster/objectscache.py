"""The objects cache (`--objects-cache`): loaded object files kept on disk as arrays, so
the next start skips parsing them.

Parsing a 50k-node member file costs tens of CPU-seconds of per-object Python; the state
it ends in is mostly flat arrays. After a full load of files of at least `MIN_BYTES`, the
ClusterCache's state (`ClusterCache.export()`) is written to one uncompressed `.npz` (numpy
arrays plus one JSON blob; no pickle, read with allow_pickle=False) and the next load of
the same files reads it back (`ClusterCache.restore()`) instead of parsing.

An entry is found by the files' real paths and used only when everything it was built
from is unchanged: each file's size, mtime_ns, inode and device, a hash of the loader's
source (the modules that turn objects into state) and `FORMAT_VERSION`. The files are
stat'ed before parsing and again after; if they changed meanwhile, or so recently that a
change could keep the same time, nothing is saved.
Entries are written to a temporary file and renamed into place, so a reader sees a whole
entry or none; one that cannot be read or does not fit is logged and ignored (the
caller parses). A writer killed before its rename leaves its temporary file
(`.tmp-<pid>-*`): the next load removes it once that process is gone (or the file is an
hour old).

An entry proves where it came from before it is used: the directory and the entry must
belong to this process's user and be writable by no one else (else the cache is not used,
logged), and the entry carries the SHA-256 of each object file's content, compared with
the file as it is now (hashed on another thread while the entry is read: SHA-256 of a
50k-node member's 182 MB is 0.13-0.17 s of one core, overlapped with reading the entry
when a second core is free). An entry that anyone able to stat the files
could have keyed, or that outlived a same-size rewrite, is therefore not served. Quotas,
ReplicaSets, Deployments and unschedulable pods are few and their records hold nested
values: the entry keeps their objects, in file order, and a load parses them again with the
same parsers.

`KARMADA_ESTIMATOR_STATE_CACHE` sets the directory, or turns the cache off (`off`);
otherwise `$XDG_CACHE_HOME/karmada-estimator/objects` (absolute XDG paths only) or
`~/.cache/karmada-estimator/objects`.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import stat
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from itertools import chain
from operator import itemgetter
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import orjson

from estimator.cluster import gccontrol
from estimator.cluster.cache import ClusterCache, ExportedState
from estimator.core.model import NodeClass, Taint
from estimator.core.records import parse_object
from estimator.core.workloads import unschedulable_pod

log = logging.getLogger("estimator.objectscache")

FORMAT_VERSION = 3  # 3: content digests
ENV = "KARMADA_ESTIMATOR_STATE_CACHE"
OFF = ("off", "none", "0", "false", "no")
# Smaller files parse in well under a second: an entry would save little.
MIN_BYTES = 4 << 20
# Modules whose code decides what state a file loads into; a change to any of them makes
# every entry stale.
LOADER_MODULES = (
    "estimator.cluster.files",
    "estimator.cluster.bulkload",
    "estimator.cluster.kubefiles",
    "estimator.cluster.jsonitems",
    "estimator.cluster.splitload",
    "estimator.cluster.cache",
    "estimator.cluster.nodetree",
    "estimator.cluster.objectscache",
    "estimator.core.records",
    "estimator.core.podrequests",
    "estimator.core.resources",
    "estimator.core.workloads",
    "estimator.core.model",
    "estimator.core.snapshot",
    "estimator.core.labels",
)
_PREFIX = "objects-"
# File times tick coarsely (the kernel's clock tick, not the nanoseconds they show): a file
# rewritten within one tick at the same size keeps its key. Files modified this recently are
# not saved, so a later change always moves the time past the one saved (as git does).
RECENT_NS = 2 * 10**9
_TMP_PREFIX = ".tmp-"
# A temporary entry this old is a dead writer's even if its pid is alive again (reused).
_STALE_TMP_SECONDS = 3600
_DIGEST = "sha256"


def default_dir(environ: Mapping[str, str] = os.environ) -> Path | None:
    """The cache directory, or None when turned off (see the module docstring)."""
    explicit = environ.get(ENV, "")
    if explicit:
        return None if explicit.strip().lower() in OFF else Path(explicit)
    xdg = environ.get("XDG_CACHE_HOME", "")
    if os.path.isabs(xdg):
        return Path(xdg) / "karmada-estimator" / "objects"
    home = environ.get("HOME") or os.path.expanduser("~")
    return Path(home) / ".cache" / "karmada-estimator" / "objects"


@functools.cache
def loader_tag() -> str:
    """A hash of the loader modules' source (and the format and Python version)."""
    import importlib

    digest = hashlib.sha256(f"format {FORMAT_VERSION} python {sys.version_info[:2]}\0".encode())
    for name in LOADER_MODULES:
        source = getattr(importlib.import_module(name), "__file__", None)
        digest.update(name.encode() + b"\0" + (Path(source).read_bytes() if source else b"") + b"\0")
    return digest.hexdigest()


def untrusted(directory: Path, st: os.stat_result | None = None) -> str | None:
    """Why `directory` (or, given `st`, an entry) is not to be trusted, or None: it must
    belong to this process's user and be writable by no one else."""
    try:
        st = st or os.stat(directory)
    except OSError as err:
        return f"cannot stat it: {err}"
    uid = os.geteuid()
    if st.st_uid != uid:
        return f"it belongs to uid {st.st_uid}, not to this process's uid {uid}"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return f"its mode {stat.S_IMODE(st.st_mode):04o} lets others write to it"
    return None


_DIGEST_CHUNK = 16 << 20


def file_digests(paths: Sequence[Path]) -> list[str]:
    """The SHA-256 of each file's content. Read and hashed 16 MB at a time, both without the
    GIL, so a thread doing this hands the interpreter back a dozen times for a 180 MB file
    (hashlib.file_digest's 256 KB reads: hundreds)."""
    digests = []
    buffer = bytearray(_DIGEST_CHUNK)
    view = memoryview(buffer)
    for path in paths:
        digest = hashlib.new(_DIGEST)
        with open(path, "rb", buffering=0) as f:
            while size := f.readinto(buffer):
                digest.update(view[:size])
        digests.append(digest.hexdigest())
    return digests


def sweep(directory: Path) -> int:
    """Remove the temporary entries of writers that died before renaming them; returns how
    many. A writer's file is named for its pid: kept while that process lives, unless the
    file is older than an hour (the pid was reused)."""
    removed = 0
    try:
        names = [name for name in os.listdir(directory) if name.startswith(_TMP_PREFIX)]
    except OSError:
        return 0
    now = time.time()
    for name in names:
        path = Path(directory) / name
        try:
            pid = int(name[len(_TMP_PREFIX) :].split("-", 1)[0])
        except ValueError:
            pid = 0  # an older writer's name: judged by age alone
        try:
            age = now - path.lstat().st_mtime
            if (pid and pid != os.getpid() and not _alive(pid)) or age > _STALE_TMP_SECONDS:
                path.unlink()
                removed += 1
        except OSError:
            continue
    if removed:
        log.info("removed %d temporary state cache file(s) left by writers that died in %s", removed, directory)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists, another user's
    return True


def file_keys(paths: Sequence[Path]) -> list[list]:
    """What each file's entry depends on; OSError if a file cannot be stat'ed."""
    keys = []
    for path in paths:
        st = os.stat(path)
        keys.append([os.path.realpath(path), st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev])
    return keys


def entry_path(directory: Path, paths: Sequence[Path]) -> Path:
    """One entry per list of files (by real path): a changed file replaces its entry."""
    names = orjson.dumps([os.path.realpath(p) for p in paths])
    return Path(directory) / f"{_PREFIX}{hashlib.sha256(names).hexdigest()[:32]}.npz"


class Recorder:
    """What a load must remember beyond the cache's arrays: the objects of the few-record
    kinds (and unschedulable pods) in file order, and the warnings it logged."""

    def __init__(self) -> None:
        self.objects: list[list] = []  # [kind, object]
        self.pods: list[list] = []  # [object] (unschedulable) or [namespace, name] (no longer)
        self.warnings: list[str] = []
        self._unschedulable: set[tuple[str, str]] = set()

    def note(self, kind: str, obj: Any, record: Any) -> None:
        if kind == "Node":
            return
        if kind != "Pod":
            self.objects.append([kind, obj])
            return
        key = (record.namespace, record.name)
        if record.unschedulable is not None:
            self._unschedulable.add(key)
            self.pods.append([obj])
        elif key in self._unschedulable:
            self._unschedulable.discard(key)
            self.pods.append([record.namespace, record.name])


# --- writing ---------------------------------------------------------------------------------


def _class_json(node_class: NodeClass | None) -> Any:
    if node_class is None:
        return None
    return [
        [list(pair) for pair in node_class.labels],
        [[t.key, t.value, t.effect] for t in node_class.taints],
        node_class.unschedulable,
    ]


def to_entry(cache: ClusterCache, recorder: Recorder, keys: list) -> tuple[dict, dict[str, np.ndarray]]:
    """The entry of a finished load (`keys`: its files, as `file_keys` gave them): the JSON
    meta (before its digests) and the arrays, as `save` writes them."""
    state = cache.export()
    # Distinct namespaces and request tuples are numbered with C-level map() calls: a
    # generator per pod costs seconds at 450k pods.
    pods = state.pods
    assert not callable(pods)  # export() gives the table; only restore() takes a builder
    pod_namespaces = list(map(itemgetter(0), pods))
    names = list(map(itemgetter(1), pods))
    pod_values = pods.values()
    pod_row = np.fromiter(map(itemgetter(0), pod_values), dtype=np.int64, count=len(pods))
    pod_amount_tuples = list(map(itemgetter(1), pod_values))
    namespaces = {ns: i for i, ns in enumerate(dict.fromkeys(pod_namespaces))}
    pod_ns = np.fromiter(map(namespaces.__getitem__, pod_namespaces), dtype=np.int32, count=len(pods))
    # Numbered in order of first use, one hash of each (tuple hashes are not cached).
    amounts: dict = {}
    number = amounts.setdefault
    pod_amounts = np.fromiter(
        map(lambda a: number(a, len(amounts)), pod_amount_tuples), dtype=np.int32, count=len(pods)
    )
    del pod_namespaces, pod_amount_tuples
    meta = {
        "format": FORMAT_VERSION,
        "loader": loader_tag(),
        "files": keys,
        "version": state.version,
        "columns": state.columns,
        "next_row": state.next_row,
        "free_rows": state.free_rows,
        "row_names": state.row_names,
        "row_hostnames": state.row_hostnames,
        "zones": state.zones,
        "tree": state.tree,
        "classes": [_class_json(c) for c in state.classes],
        "class_refs": state.class_refs,
        "free_class_ids": state.free_class_ids,
        "excess": [[row, column, str(total)] for (row, column), total in state.excess.items()],
        "namespaces": list(namespaces),
        "objects": recorder.objects,
        "pods": recorder.pods,
        "warnings": recorder.warnings,
    }
    arrays = {
        "allocatable": state.allocatable,
        "requested": state.requested,
        "row_class": state.row_class,
        "row_zone": state.row_zone,
        "pod_names": np.frombuffer(orjson.dumps(names), dtype=np.uint8),
        "pod_ns": pod_ns,
        "pod_row": pod_row,
        "pod_amounts": pod_amounts,
        # The distinct ((column, amount), ...) tuples, flat: how many pairs each, then the pairs.
        "amount_sizes": np.fromiter(map(len, amounts), dtype=np.int32, count=len(amounts)),
        "amount_pairs": np.fromiter(chain.from_iterable(chain.from_iterable(amounts)), dtype=np.int64).reshape(-1, 2),
    }
    return meta, arrays


class Unsaved(NamedTuple):
    """Why `save` wrote nothing, at the level its caller logs it."""

    level: int
    message: str


def save(cache: ClusterCache, recorder: Recorder, paths: Sequence[Path], keys: list, directory: Path) -> Path | Unsaved:
    """Write the entry for `paths` (stat'ed as `keys` before they were parsed): its path, or
    why nothing was written (the files changed meanwhile, or it cannot be written). Logs
    nothing itself: it may run in a forked writer whose parent does the logging."""
    try:
        if file_keys(paths) != keys:
            return Unsaved(logging.INFO, "object files changed while they were loaded: state cache not saved")
        if any(key[2] > time.time_ns() - RECENT_NS for key in keys):
            return Unsaved(
                logging.INFO, f"object files modified in the last {RECENT_NS // 10**9} s: state cache not saved"
            )
        meta, arrays = to_entry(cache, recorder, keys)
        kept = [recorder.objects, recorder.pods]
        if orjson.loads(orjson.dumps(kept)) != kept:  # e.g. YAML timestamps, which JSON would turn into text
            return Unsaved(logging.INFO, "object files hold values JSON cannot keep exactly: state cache not saved")
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        why = untrusted(directory)
        if why is not None:
            return Unsaved(logging.WARNING, f"state cache not saved in {directory}: {why}")
        meta["digests"] = file_digests(paths)
        if file_keys(paths) != keys:  # the digests must be of the content that was parsed
            return Unsaved(logging.INFO, "object files changed while they were loaded: state cache not saved")
        blob = orjson.dumps(meta)
        target = entry_path(directory, paths)
        fd, tmp = tempfile.mkstemp(prefix=f"{_TMP_PREFIX}{os.getpid()}-", suffix=".npz", dir=directory)
        try:
            with os.fdopen(fd, "wb") as f:
                # (numpy's stubs match **arrays against allow_pickle.)
                np.savez(f, meta=np.frombuffer(blob, dtype=np.uint8), **arrays)  # type: ignore[arg-type]
            os.replace(tmp, target)
        except BaseException:
            os.unlink(tmp)
            raise
        return target
    except (OSError, TypeError, ValueError) as err:  # orjson's errors are TypeError/ValueError
        return Unsaved(logging.WARNING, f"state cache not saved in {directory}: {err}")


# --- reading ---------------------------------------------------------------------------------


class StaleEntry(Exception):
    """The entry was built from other files or another loader."""


def _node_class(value: Any) -> NodeClass:
    labels, taints, unschedulable = value
    return NodeClass(
        tuple((str(k), str(v)) for k, v in labels), tuple(Taint(*map(str, t)) for t in taints), bool(unschedulable)
    )


def from_entry(meta: dict, arrays: Mapping[str, np.ndarray]) -> ClusterCache:
    """The cache an entry's meta and arrays describe; ValueError (or another exception) if
    they do not fit together."""
    rows = int(meta["next_row"])
    columns = [str(c) for c in meta["columns"]]
    namespaces = meta["namespaces"]
    pod_ns, pod_row, pod_amounts = arrays["pod_ns"], arrays["pod_row"], arrays["pod_amounts"]
    sizes, pair_table, names_blob = arrays["amount_sizes"], arrays["amount_pairs"], arrays["pod_names"]
    names = orjson.loads(names_blob.tobytes())
    # Checked now, so that the table built later cannot fail (or point outside the arrays).
    if (
        not len(names) == len(pod_ns) == len(pod_row) == len(pod_amounts)
        or not all(type(n) is str for n in names)
        or pair_table.ndim != 2
        or pair_table.shape[1] != 2
        or int(sizes.sum()) != len(pair_table)
        or len(sizes)
        and sizes.min() < 0
        or len(pair_table)
        and (pair_table.min() < 0 or pair_table[:, 0].max() >= len(columns))
        or len(pod_ns)
        and (
            pod_amounts.min() < 0
            or pod_amounts.max() >= len(sizes)
            or pod_ns.min() < 0
            or pod_ns.max() >= len(namespaces)
            or pod_row.min() < 0
            or pod_row.max() >= rows
        )
    ):
        raise ValueError("pod tables do not fit together")

    def pods() -> dict:
        # Up to millions of small objects, built once, all kept: no collector passes.
        with gccontrol.paused():
            pairs = list(zip(pair_table[:, 0].tolist(), pair_table[:, 1].tolist(), strict=True))
            ends = np.cumsum(sizes).tolist()
            amounts = [tuple(pairs[end - size : end]) for size, end in zip(sizes.tolist(), ends, strict=True)]
            ns_of = [namespaces[i] for i in pod_ns.tolist()]
            return dict(
                zip(
                    zip(ns_of, names, strict=True),
                    zip(pod_row.tolist(), [amounts[i] for i in pod_amounts.tolist()], strict=True),
                    strict=True,
                )
            )

    state = ExportedState(
        version=int(meta["version"]),
        columns=columns,
        allocatable=arrays["allocatable"],
        requested=arrays["requested"],
        row_class=arrays["row_class"],
        next_row=rows,
        free_rows=[int(r) for r in meta["free_rows"]],
        row_names=meta["row_names"],
        row_hostnames=meta["row_hostnames"],
        row_zone=arrays["row_zone"],
        zones=meta["zones"],
        tree=meta["tree"],
        classes=[None if c is None else _node_class(c) for c in meta["classes"]],
        class_refs=[int(r) for r in meta["class_refs"]],
        free_class_ids=[int(i) for i in meta["free_class_ids"]],
        excess={(int(row), int(column)): int(total) for row, column, total in meta["excess"]},
        pods=pods if len(pod_ns) else {},
    )
    # The few-record kinds go through the parsers again, in file order, as they did first.
    records = ((kind, parse_object(kind, obj)) for kind, obj in meta["objects"])
    return ClusterCache.restore(state, records, map(_pod_event, meta["pods"]))


def _pod_event(event: list) -> tuple:
    """(namespace, name, unschedulable record or None) of a Recorder.pods entry."""
    if len(event) == 1:
        record = unschedulable_pod(event[0])
        assert record is not None  # recorded because it was unschedulable, and the object is the same
        return record.namespace, record.name, record
    return event[0], event[1], None


class _Digests(threading.Thread):
    """The files' digests, worked out on another thread while the entry is read."""

    def __init__(self, paths: Sequence[Path]):
        super().__init__(name="state-cache-digest", daemon=True)
        self.paths = paths
        self.digests: list[str] | None = None
        self.error: OSError | None = None
        self.start()

    def run(self) -> None:
        try:
            self.digests = file_digests(self.paths)
        except OSError as err:
            self.error = err

    def result(self) -> list[str]:
        self.join()
        if self.error is not None:
            raise self.error
        assert self.digests is not None  # run() ended without an error
        return self.digests


def _open_entry(target: Path):
    """The entry's file, opened only if it is a regular file of this user that no one else
    may write (checked on the open file, so it cannot be swapped in between)."""
    fd = os.open(target, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    try:
        st = os.fstat(fd)
        why = "it is not a regular file" if not stat.S_ISREG(st.st_mode) else untrusted(target, st)
        if why is not None:
            raise UntrustedEntry(f"entry not used: {why}")
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


class UntrustedEntry(Exception):
    """An entry (or directory) someone other than this user could have written."""


_untrusted_dirs_logged: set[str] = set()


def load(paths: Sequence[Path], directory: Path) -> tuple[ClusterCache, list[str]] | None:
    """(the cache, the warnings the first load logged) from the entry for `paths`; None when
    there is none, it is stale or untrusted, or it cannot be read (logged)."""
    target = entry_path(directory, paths)
    why = untrusted(directory) if os.path.isdir(directory) else None
    if why is not None:
        if str(directory) not in _untrusted_dirs_logged:  # once per directory, not per reload
            _untrusted_dirs_logged.add(str(directory))
            log.warning("state cache %s not used: %s (it must be this user's, writable by no one else)", directory, why)
        return None
    sweep(directory)
    digests = None
    try:
        keys = file_keys(paths)
        with _open_entry(target) as f, np.load(f, allow_pickle=False) as entry:
            digests = _Digests(paths)  # on the other core while the entry is read and restored
            meta = orjson.loads(entry["meta"].tobytes())
            if meta.get("format") != FORMAT_VERSION or meta.get("loader") != loader_tag():
                raise StaleEntry("written by another version of the loader")
            if meta.get("files") != keys:
                raise StaleEntry("the files changed since")
            arrays = {name: entry[name] for name in entry.files if name != "meta"}
        try:
            cache = from_entry(meta, arrays)
        finally:
            current = digests.result()
        if meta.get("digests") != current:
            raise StaleEntry("the files' content is not the content it was built from")
        return cache, [str(w) for w in meta["warnings"]]
    except FileNotFoundError:
        return None
    except UntrustedEntry as why:
        log.warning("state cache %s %s", target, why)
        return None
    except StaleEntry as why:
        log.info("state cache %s not used: %s", target, why)
        return None
    except Exception as err:  # noqa: BLE001 - a damaged entry must never stop a load
        log.warning("state cache %s is unreadable, parsing the files instead: %s: %s", target, type(err).__name__, err)
        return None
