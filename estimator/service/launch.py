"""Running the service: serve one configuration until SIGTERM/SIGINT drains it, and start
estimators forked from a process that loaded the service once (the demo's eight).

What the command line (estimator/cli/) hands over is a ServerConfig and a cluster state; this
module owns what happens to the process from then on: the server's start and its exit status,
the signals (SIGHUP reloads the state), the drain, and the fork discipline. Importing it stays
light (no gRPC, no numba): the command line imports it before any state is loaded, and the
server's modules are imported on first use (or by `prepare_service`, meanwhile).
"""

from __future__ import annotations

import gc
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

from estimator.service.httpendpoints import BindAddressError

if TYPE_CHECKING:
    from types import FrameType

    from estimator.cluster.sources import ClusterState
    from estimator.service.server import ServerConfig

log = logging.getLogger("estimator")


def prepare_service() -> None:
    """The service's modules (grpc, numba and the kernels: about 0.3 s of one core) imported
    and its kernels loaded (about 0.2 s from numba's cache), while the loader's forked
    worker reads the second part of a big member file; the server's own warm-up then finds
    them loaded."""
    started = time.perf_counter()
    import estimator.service.server  # noqa: F401
    from estimator import kernels
    from estimator.cluster import gccontrol

    kernels.warmup()
    # This runs inside the load's paused collector, which freezes what is alive at its end:
    # without a pass here a first compilation's garbage cycles would stay for good (about
    # 400 MB of RSS at 50k nodes with an empty numba cache; 30 ms with a warm one).
    gccontrol.sweep("kernel warm-up")
    log.info(
        "service imported and kernels loaded in %.2fs while the member file was read", time.perf_counter() - started
    )


def serve(config: ServerConfig, state: ClusterState) -> int:
    """Serve estimates from `state` until SIGTERM or SIGINT, then drain; SIGHUP reloads the
    state. The exit status: 0 after a clean drain, 2 when an address cannot be bound, 1 when
    the server cannot start otherwise."""
    from estimator.service.server import EstimatorServer

    try:
        server = EstimatorServer(config, state)
        server.start()
    except BindAddressError as error:
        log.error("%s", error)
        return 2
    except (OSError, RuntimeError) as error:
        log.error("cannot start: %s", error)
        return 1
    _wait_for_a_stop_signal(state)
    server.stop()
    # A call still running past the grace period was cancelled for its client, but Python
    # cannot interrupt its worker thread; do not let it hold the process open.
    stuck = [t for t in threading.enumerate() if t.is_alive() and not t.daemon and t is not threading.current_thread()]
    if stuck:
        log.warning("exiting with %d call(s) still running past the grace period", len(stuck))
        logging.shutdown()
        os._exit(0)
    return 0


def _wait_for_a_stop_signal(state: ClusterState) -> None:
    stop = threading.Event()

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        log.info("received %s, draining", signal.Signals(signum).name)
        stop.set()

    def on_hangup(_signum: int, _frame: FrameType | None) -> None:
        threading.Thread(target=state.reload, name="reload", daemon=True).start()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGHUP, on_hangup)
    while not stop.wait(1.0):
        pass


def preload() -> None:
    """Import what serving from object files needs and load every kernel, in this process.

    For a launcher that starts several estimators with `fork_serve`: each child then starts
    with the modules and the loaded kernels it shares with this process, instead of paying
    about 1.5 CPU-seconds to import and load them again (the kernels are loaded before any
    child reports ready, as in a process of its own)."""
    from estimator import kernels
    from estimator.cluster.filestate import FileClusterState  # noqa: F401
    from estimator.service.server import EstimatorServer  # noqa: F401

    kernels.warmup()
    # Out of the collector's reach from now on, here and in the children: their first
    # collection then scans only what they create, and does not copy the shared pages.
    gc.collect()
    gc.freeze()


def fork_serve(main: Callable[[list[str]], int], argv: Sequence[str], output_fd: int | None = None) -> int:
    """Run `main(argv)` in a child forked from this process; return the child's pid. `main` is
    the command line's (estimator.cli.main.main: flags in, exit status out).

    The child's stdin is /dev/null, its stdout and stderr `output_fd` (/dev/null if None),
    and every other inherited descriptor is closed, as subprocess does; it exits with main's
    status. Linux only. This process must run no other Python thread (one could hold a lock the
    child needs; numpy's BLAS pool handles fork itself) and must not have created a gRPC channel
    or server yet (gRPC's core does not survive a fork); RuntimeError on the first."""
    if not sys.platform.startswith("linux"):
        raise RuntimeError("fork_serve needs Linux")
    if threading.active_count() != 1:
        raise RuntimeError(f"fork_serve needs a single-threaded process, found {threading.active_count()} threads")
    for stream in (sys.stdout, sys.stderr):
        stream.flush()  # or the child would write this process's buffered output again
    pid = os.fork()
    if pid:
        return pid
    status = 1
    try:
        null = os.open(os.devnull, os.O_RDWR)
        os.dup2(null, 0)
        os.dup2(null if output_fd is None else output_fd, 1)
        os.dup2(null if output_fd is None else output_fd, 2)
        os.closerange(3, os.sysconf("SC_OPEN_MAX"))
        status = main(list(argv))
    except SystemExit as done:  # argparse's exits
        status = done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
    except BaseException:  # noqa: BLE001 - reported on the child's stderr, then its exit status
        import traceback

        traceback.print_exc()
    finally:
        try:
            logging.shutdown()
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(status)
