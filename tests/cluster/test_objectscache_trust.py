"""The parsed-objects cache proves where an entry came from before it is used.

An entry's key (the files' real paths, sizes, mtimes, inodes, devices and the loader's source
hash) can be computed by anyone who can stat the files; what it says about the member is
used only when the entry is this user's in a directory only this user can write, and when
the SHA-256 of each object file's content it carries is that of the file now. A killed
writer's temporary file is removed by the next load.
"""

from __future__ import annotations

import io
import logging
import os
import signal
import subprocess
import sys
import time

import numpy as np
import orjson
import pytest

from estimator.cluster import objectscache
from estimator.cluster.files import load_object_files
from estimator.core.model import Component, ComponentSetsQuery, ReplicaShape
from estimator.estimate.estimate import Estimator
from tests.support.builders import GPU, node

FROM_ENTRY = "from the state cache"
OTHER_UID = 54321


def member(path, gpus_per_node: int):
    """16 nodes of `gpus_per_node` GPUs, as a kubectl JSON list, dated an hour back (recent
    files are not saved)."""
    objects = [node(f"n{i}").cpu(64).memory("256Gi").gpu(gpus_per_node).build() for i in range(16)]
    path.write_text(orjson.dumps({"apiVersion": "v1", "kind": "List", "items": objects}).decode())
    then = time.time() - 3600
    os.utime(path, (then, then))
    return path


def eight_gpu_sets(cache) -> int:
    job = ComponentSetsQuery((Component("w", 1, ReplicaShape(((GPU, 8),), namespace="ns")),), "ns")
    return Estimator(cache.snapshot, packing="first-fit").max_available_component_sets(job).sets


def load(paths, directory, caplog):
    caplog.clear()
    with caplog.at_level(logging.INFO):
        cache = load_object_files(paths, state_cache=directory, min_bytes=0)
    return cache, any(FROM_ENTRY in r.getMessage() for r in caplog.records)


def forge(entry_from, paths, directory, digests=None) -> None:
    """Copy the entry built from other files under `paths`' name, its key rewritten to
    theirs (what anyone who can stat them can do), and optionally its digests."""
    with np.load(entry_from, allow_pickle=False) as entry:
        arrays = {name: entry[name] for name in entry.files}
    meta = orjson.loads(arrays.pop("meta").tobytes())
    meta["files"] = objectscache.file_keys(paths)
    if digests is not None:
        meta["digests"] = digests
    buffer = io.BytesIO()
    np.savez(buffer, meta=np.frombuffer(orjson.dumps(meta), dtype=np.uint8), **arrays)
    objectscache.entry_path(directory, paths).write_bytes(buffer.getvalue())


@pytest.fixture
def setup(tmp_path, caplog):
    """A member with 1-GPU nodes (no 8-GPU set fits), and an entry built from one with
    8-GPU nodes (16 sets fit)."""
    cache_dir = tmp_path / "cache"
    small = member(tmp_path / "member.json", 1)
    big = member(tmp_path / "other.json", 8)
    _, used = load([big], cache_dir, caplog)
    assert not used and objectscache.entry_path(cache_dir, [big]).exists()
    return small, big, cache_dir


def test_a_forged_entry_keyed_to_the_file_is_not_served(setup, caplog):
    small, big, cache_dir = setup
    forge(objectscache.entry_path(cache_dir, [big]), [small], cache_dir)
    cache, used = load([small], cache_dir, caplog)
    assert not used
    assert eight_gpu_sets(cache) == 0, "the forged entry's member was served"
    assert "content is not the content it was built from" in caplog.text


@pytest.mark.parametrize("mode", [0o777, 0o775, 0o757])
def test_a_directory_others_can_write_is_not_used_even_for_a_genuine_entry(setup, caplog, mode):
    small, _, cache_dir = setup
    load([small], cache_dir, caplog)  # a genuine entry for the file itself
    os.chmod(cache_dir, mode)
    cache, used = load([small], cache_dir, caplog)
    assert not used and eight_gpu_sets(cache) == 0
    assert "lets others write to it" in caplog.text
    before = sorted(os.listdir(cache_dir))
    load([small], cache_dir, caplog)
    assert sorted(os.listdir(cache_dir)) == before, "nothing written into it either"


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a directory to another user needs root")
def test_a_directory_of_another_user_is_not_used_even_with_a_perfect_forgery(setup, caplog):
    small, big, cache_dir = setup
    forge(objectscache.entry_path(cache_dir, [big]), [small], cache_dir, digests=objectscache.file_digests([small]))
    os.chown(cache_dir, OTHER_UID, OTHER_UID)
    os.chmod(cache_dir, 0o777)
    cache, used = load([small], cache_dir, caplog)
    assert not used and eight_gpu_sets(cache) == 0
    assert f"belongs to uid {OTHER_UID}" in caplog.text


def test_an_entry_others_can_write_is_not_used(setup, caplog):
    small, _, cache_dir = setup
    load([small], cache_dir, caplog)
    entry = objectscache.entry_path(cache_dir, [small])
    os.chmod(entry, 0o666)
    _, used = load([small], cache_dir, caplog)
    assert not used and "lets others write to it" in caplog.text


def test_a_symlinked_entry_is_not_followed(setup, caplog, tmp_path):
    small, big, cache_dir = setup
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    # A perfect forgery (key and digests of the file), but outside the directory: a link to it.
    forge(objectscache.entry_path(cache_dir, [big]), [small], elsewhere, digests=objectscache.file_digests([small]))
    objectscache.entry_path(cache_dir, [small]).symlink_to(objectscache.entry_path(elsewhere, [small]))
    cache, used = load([small], cache_dir, caplog)
    assert not used and eight_gpu_sets(cache) == 0


def test_a_genuine_entry_is_used_and_carries_the_files_digest(setup, caplog):
    small, _, cache_dir = setup
    load([small], cache_dir, caplog)
    cache, used = load([small], cache_dir, caplog)
    assert used and eight_gpu_sets(cache) == 0
    with np.load(objectscache.entry_path(cache_dir, [small])) as entry:
        assert orjson.loads(entry["meta"].tobytes())["digests"] == objectscache.file_digests([small])
    assert (os.stat(cache_dir).st_mode & 0o077) == 0, "a new cache directory is this user's only"


def test_a_killed_writers_temporary_file_is_removed_at_the_next_load(setup, caplog):
    small, _, cache_dir = setup
    # A writer killed mid-write: its temporary file is named for its pid, as save() names it.
    writer = subprocess.Popen([sys.executable, "-c", (
        "import os, sys, time\n"
        f"f = open(os.path.join({str(cache_dir)!r}, f'.tmp-{{os.getpid()}}-x1y2.npz'), 'wb')\n"
        "f.write(b'PK' * 1000); f.flush(); print('written', flush=True); time.sleep(60)\n")],
        stdout=subprocess.PIPE, text=True)
    assert writer.stdout.readline().strip() == "written"
    live = cache_dir / f".tmp-{os.getppid()}-live.npz"  # a live process's: being written
    live.write_bytes(b"PK")
    old_style = cache_dir / ".tmp-abc123.npz"  # an older writer's name, two hours old
    old_style.write_bytes(b"PK")
    os.utime(old_style, (time.time() - 7200,) * 2)
    writer.send_signal(signal.SIGKILL)
    writer.wait(10)
    killed = [name for name in os.listdir(cache_dir) if name.startswith(f".tmp-{writer.pid}-")]
    assert killed
    load([small], cache_dir, caplog)
    left = os.listdir(cache_dir)
    assert not [name for name in left if name.startswith(f".tmp-{writer.pid}-")]
    assert old_style.name not in left
    assert live.name in left
