"""benchmarks.run (through run_server) reads start-up milestones from the server's own klog-format log lines."""
import logging
import time

from benchmarks.run_server import _klog_stamp, _log_times
from estimator.service.logsetup import KlogTextFormatter


def _line(message: str, created: float, level: int = logging.INFO) -> str:
    record = logging.LogRecord("estimator", level, __file__, 1, message, None, None)
    record.created = created
    return KlogTextFormatter().format(record)


def test_milestones_are_read_from_klog_headers():
    t0 = time.time() - 30.0
    text = "\n".join([
        _line("loaded 10000 nodes from member.json", t0 + 1.25),
        _line("gRPC Estimator for cluster m listening on port 10352 (packing best)", t0 + 1.5),
        _line("something else entirely", t0 + 1.6, logging.WARNING),
        _line("kernels ready in 0.80s", t0 + 2.5),
        _line("readiness changed: ready", t0 + 2.75),
        _line("readiness changed: ready", t0 + 9.0),  # a later flap does not move the first
    ])
    marks = _log_times(text)
    assert set(marks) == {"loaded", "listening", "kernels_ready", "kernels_seconds", "ready"}
    for key, want in [("loaded", 1.25), ("listening", 1.5), ("kernels_ready", 2.5), ("ready", 2.75)]:
        assert abs(marks[key] - (t0 + want)) < 1e-5, key
    assert marks["kernels_seconds"] == 0.8


def test_a_header_without_a_year_takes_the_year_nearest_now():
    now = time.mktime((2027, 1, 1, 0, 0, 30, 0, 0, -1))  # just after new year, local time
    stamp = _klog_stamp("1231 23:59:50.000000", now)
    assert abs((now - stamp) - 40.0) < 1e-6


def test_the_state_cache_hit_marker_is_the_loaders_own_log_line(tmp_path, caplog):
    # benchmarks.run splits start-up figures by it: a parsed file vs one read from --objects-cache.
    import os
    import shutil

    from benchmarks.run_server import STATE_CACHE_HIT
    from estimator.cluster.files import load_object_files
    from tests.support.servers import DEMO

    member = tmp_path / "member-a.yaml"
    shutil.copy(DEMO / "member-a.yaml", member)
    os.utime(member, ns=(1_000_000_000, 1_000_000_000))  # not "just modified": the loader saves it
    with caplog.at_level(logging.INFO):
        load_object_files([member], state_cache=tmp_path / "c", min_bytes=0)
        assert STATE_CACHE_HIT not in caplog.text
        load_object_files([member], state_cache=tmp_path / "c", min_bytes=0)
    assert STATE_CACHE_HIT in caplog.text
