"""The objects cache's checks on the files and entries it trusts: what an entry's object files
are keyed by (`file_keys`: real path, size, mtime_ns, inode, device) and their content's
SHA-256 (`file_digests`, also on a thread: `DigestThread`); who may have written a directory
or an entry (`untrusted`, `open_entry`); and the sweep of temporary entries left by writers
that died. Used by estimator.cluster.objectscache, whose docstring tells the whole story.
"""

from __future__ import annotations

import hashlib
import logging
import os
import stat
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO

log = logging.getLogger("estimator.objectscache")

# A writer's temporary entry: TMP_PREFIX, its pid, "-", a random part.
TMP_PREFIX = ".tmp-"
# A temporary entry this old is a dead writer's even if its pid is alive again (reused).
_STALE_TMP_SECONDS = 3600
_DIGEST = "sha256"
_DIGEST_CHUNK = 16 << 20


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


def file_keys(paths: Sequence[Path]) -> list[list]:
    """What each file's entry depends on; OSError if a file cannot be stat'ed."""
    keys = []
    for path in paths:
        st = os.stat(path)
        keys.append([os.path.realpath(path), st.st_size, st.st_mtime_ns, st.st_ino, st.st_dev])
    return keys


def sweep(directory: Path) -> int:
    """Remove the temporary entries of writers that died before renaming them; returns how
    many. A writer's file is named for its pid: kept while that process lives, unless the
    file is older than an hour (the pid was reused)."""
    removed = 0
    try:
        names = [name for name in os.listdir(directory) if name.startswith(TMP_PREFIX)]
    except OSError:
        return 0
    now = time.time()
    for name in names:
        path = Path(directory) / name
        try:
            pid = int(name[len(TMP_PREFIX) :].split("-", 1)[0])
        except ValueError:
            pid = 0  # an older writer's name: judged by age alone
        try:
            age = now - path.lstat().st_mtime
            if (pid and pid != os.getpid() and not alive(pid)) or age > _STALE_TMP_SECONDS:
                path.unlink()
                removed += 1
        except OSError:
            continue
    if removed:
        log.info("removed %d temporary state cache file(s) left by writers that died in %s", removed, directory)
    return removed


def alive(pid: int) -> bool:
    """Whether process `pid` exists (another user's counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # exists, another user's
    return True


class DigestThread(threading.Thread):
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


def open_entry(target: Path) -> BinaryIO:
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
