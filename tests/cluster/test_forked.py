"""Frames from a forked child: in order, each as soon as it is whole, and the child's end."""

from __future__ import annotations

import os
import time

import pytest

from estimator.cluster import forked

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")


def _wait_for(path, seconds=30.0):
    deadline = time.monotonic() + seconds
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            raise TimeoutError(path)
        time.sleep(0.01)


def test_each_frame_arrives_while_the_child_is_still_working(tmp_path):
    def work(send):
        for i in range(3):
            send(b"frame %d " % i + bytes(range(256)) * (i * 3000))  # the last ones larger than a pipe holds
            _wait_for(tmp_path / f"got-{i}")  # the parent must take it before the child goes on

    child = forked.start(work)
    received = []
    for i, frame in enumerate(forked.frames(child)):
        received.append(frame)
        (tmp_path / f"got-{i}").touch()
    assert [frame[:8] for frame in received] == [b"frame 0 ", b"frame 1 ", b"frame 2 "]
    assert [len(frame) for frame in received] == [8 + 256 * 3000 * i for i in range(3)]
    assert child.reaped


def test_a_child_that_raises_after_some_frames_fails_after_them():
    def work(send):
        send(b"one")
        send(b"two")
        raise RuntimeError("broken")

    child = forked.start(work)
    received = []
    with pytest.raises(forked.Failed):
        for frame in forked.frames(child):
            received.append(frame)
    assert received == [b"one", b"two"]
    assert forked.result(forked.start(work)) is None


def test_result_joins_the_frames_and_kill_reaps_a_child_no_one_reads():
    assert forked.result(forked.start(lambda send: (send(b"ab"), send(b""), send(b"cd")))) == b"abcd"
    child = forked.start(lambda send: time.sleep(60))
    forked.kill(child)
    assert child.reaped
    with pytest.raises(ChildProcessError):
        os.waitpid(child.pid, 0)
    forked.kill(child)  # (again: nothing left to do)
