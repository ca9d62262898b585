"""Start and stop local `karmada-estimator` processes (demo and tests).

Each process binds loopback only, on ports picked here; readiness is the standard gRPC
health check turning SERVING (state loaded and kernels warm).

`start()` runs `python -m estimator` (a process of its own: it imports the estimator and loads
its kernels, about 1.5 CPU-seconds); `start(fork=True)` forks it from this process after
`estimator.api.preload_estimator()`, so the modules and loaded kernels are shared and only
the estimator's own start-up runs per process (the demo's six estimators on a shared
machine). The child runs the same `karmada-estimator` main with the same flags.
"""

from __future__ import annotations

import collections
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from estimator.api import fork_estimator


class ForkedProcess:
    """The part of subprocess.Popen's interface the launcher uses, for a forked child."""

    def __init__(self, pid: int, args: list[str]):
        self.pid, self.args = pid, args
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        deadline = None if timeout is None else time.monotonic() + timeout
        while (code := self.poll()) is None:
            if deadline is not None and time.monotonic() > deadline:
                assert timeout is not None  # a deadline comes from it
                raise subprocess.TimeoutExpired(self.args, timeout)
            time.sleep(0.01)
        return code

    def send_signal(self, signum: int) -> None:
        if self.poll() is None:
            os.kill(self.pid, signum)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


_handed_out: collections.deque[int] = collections.deque(maxlen=1000)  # recent ones suffice
_handed_out_lock = threading.Lock()


def free_port() -> int:
    """A loopback port nothing listens on now, and none of the last 1000 this process handed out.

    Ports are picked before any estimator binds them, and the kernel may pick the same free
    port for two bind(0) calls (a 28-port draw repeated one in 3% of tries), so the ports
    already handed out are skipped."""
    with _handed_out_lock:
        while True:
            with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
                s.bind(("127.0.0.1", 0))
                port = s.getsockname()[1]
            if port not in _handed_out:
                _handed_out.append(port)
                return port


@dataclass
class LocalEstimator:
    member: str
    snapshots: Sequence[Path]
    packing: str = "best"
    extra_args: Sequence[str] = ()
    port: int = field(default_factory=free_port)
    probe_port: int = field(default_factory=free_port)
    process: subprocess.Popen | ForkedProcess | None = None

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        cmd = [
            sys.executable,
            "-m",
            "estimator",
            "--cluster-name",
            self.member,
            "--packing",
            self.packing,
            "--server-port",
            str(self.port),
            "--server-bind-address",
            "127.0.0.1",
            "--health-probe-bind-address",
            f"127.0.0.1:{self.probe_port}",
            "--metrics-bind-address",
            "0",
        ]
        for path in self.snapshots:
            cmd += ["--objects", str(path)]
        return cmd + list(self.extra_args)

    def start(self, log_file: IO[bytes] | None = None, fork: bool = False) -> None:
        """Start the estimator; with `fork`, forked from this process (see the module's doc:
        call `preload_estimator()` first, and create no gRPC channel in this process before)."""
        if fork:
            command = self.command()
            pid = fork_estimator(command[3:], None if log_file is None else log_file.fileno())
            self.process = ForkedProcess(pid, command)
            return
        self.process = subprocess.Popen(
            self.command(),
            stdout=log_file or subprocess.DEVNULL,
            stderr=log_file or subprocess.DEVNULL,
            env=os.environ.copy(),
        )

    def serving(self) -> bool:
        with grpc.insecure_channel(self.address) as channel:
            try:
                reply = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=0.5)
            except grpc.RpcError:
                return False
        return reply.status == health_pb2.HealthCheckResponse.SERVING

    def stop(self, timeout: float = 15.0) -> int | None:
        if self.process is None or self.process.poll() is not None:
            return None if self.process is None else self.process.returncode
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait()


def wait_serving(
    estimators: Sequence[LocalEstimator],
    timeout: float = 120.0,
    progress: Callable[[list[LocalEstimator], float], object] | None = None,
    progress_every: float = 15.0,
) -> None:
    """Block until every estimator serves; raise naming the ones that died or never got ready.

    A process that exits fails the wait at once, so `timeout` only bounds a live process that
    never gets ready; `progress(pending, waited_s)` is called every `progress_every` seconds
    while some are still starting (a loaded machine can take minutes)."""
    started = time.monotonic()
    deadline = started + timeout
    next_progress = started + progress_every
    pending = list(estimators)
    while pending:
        for est in list(pending):
            if est.process is not None and est.process.poll() is not None:
                raise RuntimeError(f"estimator for {est.member} exited with status {est.process.returncode}")
            if est.serving():
                pending.remove(est)
        now = time.monotonic()
        if pending and now > deadline:
            raise TimeoutError("estimators not ready in time: " + ", ".join(e.member for e in pending))
        if pending and progress is not None and now >= next_progress:
            progress(list(pending), now - started)
            next_progress = now + progress_every
        if pending:
            time.sleep(0.1)
