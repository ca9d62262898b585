"""Work done in a forked child that hands back bytes through a pipe: the loader's second
core (splitload's worker) and the parsed-state writer (files._save_state).

The child runs only the work it is given, never logs, and leaves with os._exit, so nothing
of the parent (atexit handlers, buffered output, locks) runs twice. Forking is only safe
while every other thread is a daemon that the work cannot meet (the service's log writer):
`possible()` says so.
"""

from __future__ import annotations

import os
import signal
import threading
from typing import Callable, NamedTuple


class Child(NamedTuple):
    pid: int
    reader: int  # the read end of the pipe the child writes its result into


def possible() -> bool:
    """fork is there and every other thread of this process is a daemon."""
    others = [t for t in threading.enumerate() if t is not threading.current_thread()]
    return hasattr(os, "fork") and all(t.daemon for t in others)


def start(work: Callable[[], bytes]) -> Child:
    """Fork a child that runs `work` and writes what it returns into the pipe; it exits 0
    once all is written, 1 if `work` raised."""
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        status = 1
        try:
            os.close(reader)
            data = memoryview(work())
            while data:
                data = data[os.write(writer, data):]
            status = 0
        except BaseException:  # noqa: BLE001 - the parent sees the status
            pass
        finally:
            os._exit(status)
    os.close(writer)
    return Child(pid, reader)


def result(child: Child) -> bytes | None:
    """Everything the child wrote, once it has exited; None unless it exited with status 0."""
    chunks = []
    with os.fdopen(child.reader, "rb") as stream:
        while chunk := stream.read(1 << 22):
            chunks.append(chunk)
    _, status = os.waitpid(child.pid, 0)
    return b"".join(chunks) if status == 0 else None


def kill(child: Child) -> None:
    """Stop the child and reap it (its result is not wanted)."""
    os.kill(child.pid, signal.SIGKILL)
    os.close(child.reader)
    os.waitpid(child.pid, 0)
