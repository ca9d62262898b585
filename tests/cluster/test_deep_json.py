"""JSON nested deeper than any Kubernetes object is a bad object file, not a crash: the
reader raises ObjectFileError naming the file, and the estimator exits 2 saying so (it
used to end in a RecursionError traceback, exit 1), small files and big streamed ones alike."""

from __future__ import annotations

import subprocess
import sys

import pytest

from estimator.cluster.kubefiles import ObjectFileError, read_objects
from tests.support.servers import REPO

DEPTH = 100_000


def deep_list(path):
    path.write_text("[" * DEPTH + "]" * DEPTH)
    return path


def deep_item_in_a_big_list(path):
    # Over kubefiles.STREAM_FROM_BYTES: read a slice at a time (and split across two cores).
    nodes = ",".join('{"kind":"Node","metadata":{"name":"n%d"}}' % i for i in range(120_000))
    path.write_text('{"kind":"List","items":[' + nodes + "," + "[" * DEPTH + "]" * DEPTH + "]}")
    return path


@pytest.mark.parametrize("make", [deep_list, deep_item_in_a_big_list])
def test_deep_json_is_an_object_file_error_naming_the_file(tmp_path, make):
    path = make(tmp_path / "deep.json")
    with pytest.raises(ObjectFileError, match=r"deep\.json: invalid JSON: nested deeper"):
        read_objects(path)


@pytest.mark.parametrize("make", [deep_list, deep_item_in_a_big_list])
def test_the_estimator_exits_2_naming_the_file(tmp_path, make):
    path = make(tmp_path / "deep.json")
    done = subprocess.run([sys.executable, "-m", "estimator", "--cluster-name", "m", "--objects", str(path),
                           "--objects-cache", "off", "--health-probe-bind-address", "0", "--metrics-bind-address", "0",
                           "--server-port", "0"], capture_output=True, text=True, timeout=120, cwd=REPO)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    assert f"{path}: invalid JSON: nested deeper" in done.stderr
