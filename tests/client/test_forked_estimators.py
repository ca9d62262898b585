"""Estimators forked from a process that loaded the kernels once (`LocalEstimator.start(fork=True)`,
what `make demo` does): same answers as estimators started as processes of their own, the
same exit statuses, and refused where a fork would not be safe."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from estimator.api import fork_estimator
from scheduler_client.launch import ForkedProcess
from tests.support.servers import REPO

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork_estimator is Linux only")

# Runs in a fresh interpreter: the test process has gRPC channels of its own, and gRPC's core
# does not survive a fork. Each member gets one forked estimator per packing mode and one
# spawned (`python -m estimator`) first-fit estimator, the independent start-up path.
_SCRIPT = r"""
import json, sys
from pathlib import Path
from estimator.api import ComponentSetsQuery, preload_estimator
from scheduler_client import accurate
from scheduler_client.launch import LocalEstimator, wait_serving
from scheduler_client.sources import load_job

demo = Path("deploy/demo")
members = ("member-a", "member-b", "member-c")
preload_estimator()
forked = [LocalEstimator(m, [demo / f"{m}.yaml"], packing=p) for p in ("best", "first-fit") for m in members]
bad = LocalEstimator("member-a", [demo / "no-such-file.yaml"])
bad_flag = LocalEstimator("member-a", [demo / "member-a.yaml"], extra_args=["--server-port", "x"])
for est in forked + [bad, bad_flag]:
    est.start(fork=True)
spawned = [LocalEstimator(m, [demo / f"{m}.yaml"], packing="first-fit") for m in members]
for est in spawned:
    est.start()
out = {"exit": {}}
for name, est in (("bad file", bad), ("bad flag", bad_flag)):
    try:
        wait_serving([est], timeout=120)
    except RuntimeError as error:
        out["exit"][name] = str(error)
try:
    wait_serving(forked + spawned, timeout=600)
    for job in ("train-small", "train-big"):
        spec = load_job(demo / "jobs" / f"{job}.yaml")
        query = ComponentSetsQuery(spec.components, spec.namespace)
        for label, group in (("forked best", forked[:3]), ("forked first-fit", forked[3:]), ("spawned first-fit", spawned)):
            answers = accurate.ask_all([accurate.Endpoint(e.member, e.address) for e in group], query, spec.object_key)
            out[f"{job} {label}"] = [answers[m].value for m in members]
finally:
    out["stop"] = [est.stop() for est in forked + spawned]
print(json.dumps(out))
"""


@pytest.mark.slow
@linux_only
def test_forked_estimators_answer_as_spawned_ones_and_exit_cleanly():
    result = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True, timeout=900, cwd=REPO)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout.strip().splitlines()[-1])
    # The demo's scenario: member-b has the GPUs in total but not per node for train-big.
    assert out["train-big forked best"] == out["train-big forked first-fit"] == [0, 0, 1]
    assert out["train-small forked best"] == out["train-small forked first-fit"] == [1, 3, 4]
    for job in ("train-small", "train-big"):
        assert out[f"{job} forked first-fit"] == out[f"{job} spawned first-fit"]
    # A clean drain on SIGTERM exits 0, forked or not.
    assert out["stop"] == [0] * 9
    # Exit statuses as documented for karmada-estimator: 2 on a bad object file or flag.
    assert out["exit"] == {"bad file": "estimator for member-a exited with status 2",
                           "bad flag": "estimator for member-a exited with status 2"}


@linux_only
def test_fork_is_refused_with_other_threads_running():
    release = threading.Event()
    worker = threading.Thread(target=release.wait)
    worker.start()
    try:
        with pytest.raises(RuntimeError, match="single-threaded"):
            fork_estimator(["--cluster-name", "x"])
    finally:
        release.set()
        worker.join()


@linux_only
def test_forked_process_handle_polls_waits_and_signals():
    pid = os.fork()
    if pid == 0:  # a child that touches nothing of the parent's
        try:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            signal.pause()
        finally:
            os._exit(0)
    child = ForkedProcess(pid, ["sleeper"])
    assert child.poll() is None
    with pytest.raises(subprocess.TimeoutExpired):
        child.wait(timeout=0.05)
    child.send_signal(signal.SIGTERM)
    assert child.wait(timeout=30) == -signal.SIGTERM
    child.kill()  # already gone: a no-op, not an error
    assert child.poll() == -signal.SIGTERM

    pid = os.fork()
    if pid == 0:
        os._exit(3)
    exited = ForkedProcess(pid, ["three"])
    deadline = time.monotonic() + 30
    while exited.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert exited.returncode == 3
