"""Work done in a forked child that hands back bytes, a frame at a time: the loader's
second core (splitload's worker) and the parsed-state writer (files._save_state).

The child writes each frame into an anonymous spool file and then its length into a pipe,
so it never waits for the parent (which may be busy with its own part for seconds) while
the parent can take every frame as soon as it is whole. The child runs only the work it
is given, never logs, and leaves with os._exit, so nothing of the parent (atexit handlers,
buffered output, locks) runs twice. Forking is only safe while every other thread is a
daemon that the work cannot meet (the service's log writer): `possible()` says so.
"""

from __future__ import annotations

import os
import signal
import struct
import tempfile
import threading
from collections.abc import Callable, Iterator

_LENGTH = struct.Struct("<Q")  # one frame's length, written into the pipe once the frame is spooled


class Failed(Exception):
    """The child stopped before its work was done (it raised, or was killed)."""


class Child:
    def __init__(self, pid: int, reader: int, spool: int):
        self.pid = pid
        self.reader = reader  # the pipe's read end: the length of each frame, once it is whole
        self.spool = spool  # the frames, one after another
        self.reaped = False

    def _reap(self, stop: bool) -> int:
        if stop:
            os.kill(self.pid, signal.SIGKILL)
        _, status = os.waitpid(self.pid, 0)
        os.close(self.reader)
        os.close(self.spool)
        self.reaped = True
        return status


def possible() -> bool:
    """fork is there and every other thread of this process is a daemon."""
    others = [t for t in threading.enumerate() if t is not threading.current_thread()]
    return hasattr(os, "fork") and all(t.daemon for t in others)


def _spool() -> int:
    if hasattr(os, "memfd_create"):
        return os.memfd_create("forked-frames", os.MFD_CLOEXEC)
    with tempfile.TemporaryFile() as file:  # (unlinked: gone with its last descriptor)
        return os.dup(file.fileno())


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def start(work: Callable[[Callable[[bytes], None]], None]) -> Child:
    """Fork a child that runs work(send); every send(frame) reaches `frames` in order. The
    child exits 0 once `work` returns, 1 if it raised."""
    spool = _spool()
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        status = 1
        try:
            os.close(reader)

            def send(frame: bytes) -> None:
                _write_all(spool, frame)
                _write_all(writer, _LENGTH.pack(len(frame)))

            work(send)
            status = 0
        except BaseException:  # noqa: BLE001 - the parent sees the status
            pass
        finally:
            os._exit(status)
    os.close(writer)
    return Child(pid, reader, spool)


def frames(child: Child) -> Iterator[bytes]:
    """Each frame the child sends, as soon as it is whole; once the child has exited it is
    reaped, and Failed raised unless it exited with status 0. Stopping early leaves the
    child to `kill`."""
    offset = 0
    while True:
        header = b""
        while len(header) < _LENGTH.size:
            more = os.read(child.reader, _LENGTH.size - len(header))
            if not more:
                break
            header += more
        if len(header) < _LENGTH.size:
            break  # the pipe's end: the child has exited (a partial length: it died writing it)
        (size,) = _LENGTH.unpack(header)
        parts = []
        while size:
            part = os.pread(child.spool, size, offset)
            if not part:
                raise Failed("a frame's length ran past its spool")
            parts.append(part)
            offset += len(part)
            size -= len(part)
        yield b"".join(parts) if len(parts) != 1 else parts[0]
    if child._reap(stop=False) != 0:
        raise Failed(f"the child (pid {child.pid}) did not finish its work")


def result(child: Child) -> bytes | None:
    """Everything the child sent, once it has exited; None unless it exited with status 0."""
    try:
        return b"".join(frames(child))
    except Failed:
        return None


def kill(child: Child) -> None:
    """Stop the child and reap it, unless that was done (its frames are not wanted)."""
    if not child.reaped:
        child._reap(stop=True)
