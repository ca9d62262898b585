"""Child processes that are always stopped: own process group, SIGTERM then SIGKILL, atexit."""

from __future__ import annotations

import atexit
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Callable, Sequence

_LIVE: list["Proc"] = []


class Proc:
    """One child in its own session, so a kill reaches everything it forked."""

    def __init__(self, name: str, argv: Sequence[str], log_dir: Path, env: dict | None = None):
        self.name, self.argv = name, [str(a) for a in argv]
        self.log_path = log_dir / f"{name}.log"
        self.env = env
        self.popen: subprocess.Popen | None = None

    def start(self) -> "Proc":
        log = open(self.log_path, "ab")
        log.write(f"\n=== start {' '.join(self.argv)}\n".encode())
        log.flush()
        self.popen = subprocess.Popen(
            self.argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
            env={**os.environ, **(self.env or {})},
        )
        log.close()
        _LIVE.append(self)
        return self

    @property
    def pid(self) -> int:
        assert self.popen is not None
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def kill9(self) -> None:
        """SIGKILL the whole group at once, as a crash would."""
        if self.alive():
            os.killpg(self.popen.pid, signal.SIGKILL)
            self.popen.wait()

    def stop(self, grace: float = 5.0) -> None:
        if self.popen is None:
            return
        if self.popen.poll() is None:
            try:
                os.killpg(self.popen.pid, signal.SIGTERM)
                self.popen.wait(grace)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                pass
        try:  # also reaps grandchildren left in the group
            os.killpg(self.popen.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.popen.wait()
        if self in _LIVE:
            _LIVE.remove(self)

    def tail(self, lines: int = 30) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""


def stop_all() -> None:
    for proc in reversed(list(_LIVE)):
        proc.stop(grace=2.0)


atexit.register(stop_all)


def _on_signal(signum, _frame):
    stop_all()
    raise SystemExit(128 + signum)


def install_signal_handlers() -> None:
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGHUP, _on_signal)


def wait_for(what: str, check: Callable[[], bool], timeout: float, proc: Proc | None = None, every: float = 0.2) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and not proc.alive():
            raise RuntimeError(f"{proc.name} exited ({proc.popen.returncode}) while waiting for {what}:\n{proc.tail()}")
        try:
            if check():
                return
        except Exception:  # not up yet
            pass
        time.sleep(every)
    tail = f":\n{proc.tail()}" if proc is not None else ""
    raise TimeoutError(f"timed out after {timeout:.0f}s waiting for {what}{tail}")
