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

Here: the directory, saving and loading. What an entry holds, and the cache it describes, is
estimator.cluster.objectsentry (with `loader_tag`); the checks on the files, the directory and
an entry, and the sweep of temporary entries, are estimator.cluster.objectstrust.

`KARMADA_ESTIMATOR_STATE_CACHE` sets the directory, or turns the cache off (`off`);
otherwise `$XDG_CACHE_HOME/karmada-estimator/objects` (absolute XDG paths only) or
`~/.cache/karmada-estimator/objects`.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import orjson

from estimator.cluster.cache import ClusterCache
from estimator.cluster.objectsentry import Recorder, entry_tables, from_entry
from estimator.cluster.objectstrust import (
    TMP_PREFIX,
    DigestThread,
    UntrustedEntry,
    file_digests,
    file_keys,
    open_entry,
    sweep,
    untrusted,
)

__all__ = [
    "ENV",
    "FORMAT_VERSION",
    "LOADER_MODULES",
    "MIN_BYTES",
    "OFF",
    "RECENT_NS",
    "Recorder",
    "StaleEntry",
    "Unsaved",
    "UntrustedEntry",
    "default_dir",
    "entry_path",
    "file_digests",
    "file_keys",
    "entry_tables",
    "from_entry",
    "load",
    "loader_tag",
    "save",
    "sweep",
    "to_entry",
    "untrusted",
]  # the entry's (de)serialisation (objectsentry) and the checks (objectstrust) are re-exported

log = logging.getLogger("estimator.objectscache")

FORMAT_VERSION = 3  # 3: content digests
# Modules whose code decides what state a file loads into; a change to any of them makes
# every entry stale.
LOADER_MODULES = (
    "estimator.cluster.files",
    "estimator.cluster.bulkload",
    "estimator.cluster.kubefiles",
    "estimator.cluster.jsonitems",
    "estimator.cluster.splitload",
    "estimator.cluster.cache",
    "estimator.cluster.nodetable",
    "estimator.cluster.bulkwriter",
    "estimator.cluster.deviceoverlay",
    "estimator.cluster.nodetree",
    "estimator.cluster.objectscache",
    "estimator.cluster.objectsentry",
    "estimator.cluster.objectstrust",
    "estimator.core.records",
    "estimator.core.podrequests",
    "estimator.core.resources",
    "estimator.core.workloads",
    "estimator.core.model",
    "estimator.core.snapshot",
    "estimator.core.labels",
)


@functools.cache
def loader_tag() -> str:
    """A hash of the loader modules' source (and the format and Python version)."""
    import importlib

    digest = hashlib.sha256(f"format {FORMAT_VERSION} python {sys.version_info[:2]}\0".encode())
    for name in LOADER_MODULES:
        source = getattr(importlib.import_module(name), "__file__", None)
        digest.update(name.encode() + b"\0" + (Path(source).read_bytes() if source else b"") + b"\0")
    return digest.hexdigest()


ENV = "KARMADA_ESTIMATOR_STATE_CACHE"
OFF = ("off", "none", "0", "false", "no")
# Smaller files parse in well under a second: an entry would save little.
MIN_BYTES = 4 << 20
_PREFIX = "objects-"
# File times tick coarsely (the kernel's clock tick, not the nanoseconds they show): a file
# rewritten within one tick at the same size keeps its key. Files modified this recently are
# not saved, so a later change always moves the time past the one saved (as git does).
RECENT_NS = 2 * 10**9


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


def entry_path(directory: Path, paths: Sequence[Path]) -> Path:
    """One entry per list of files (by real path): a changed file replaces its entry."""
    names = orjson.dumps([os.path.realpath(p) for p in paths])
    return Path(directory) / f"{_PREFIX}{hashlib.sha256(names).hexdigest()[:32]}.npz"


def to_entry(cache: ClusterCache, recorder: Recorder, keys: list) -> tuple[dict, dict[str, np.ndarray]]:
    """The entry of a finished load (`keys`: its files, as `file_keys` gave them): the JSON
    meta (before its digests) and the arrays, as `save` writes them."""
    tables, arrays = entry_tables(cache, recorder)
    meta: dict[str, Any] = {"format": FORMAT_VERSION, "loader": loader_tag(), "files": keys}
    meta.update(tables)
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
        fd, tmp = tempfile.mkstemp(prefix=f"{TMP_PREFIX}{os.getpid()}-", suffix=".npz", dir=directory)
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


class StaleEntry(Exception):
    """The entry was built from other files or another loader."""


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
        with open_entry(target) as f, np.load(f, allow_pickle=False) as entry:
            digests = DigestThread(paths)  # on the other core while the entry is read and restored
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
