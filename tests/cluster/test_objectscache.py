"""The parsed-state cache of object files: a load from an entry is the state a fresh parse
builds (every table of the ClusterCache, its snapshot, its answers and how later changes
apply to it), and an entry is used only for the very files and loader it was built from."""

from __future__ import annotations

import json
import logging
import os
import random
from pathlib import Path

import numpy as np
import pytest

from estimator.cluster import objectscache
from estimator.cluster.cache import ClusterCache
from estimator.cluster.files import load_object_files
from estimator.core.errors import StateLoadError
from estimator.core.records import parse_object
from estimator.core.model import Component, ComponentSetsQuery, ReplicaShape
from estimator.estimate.estimate import Estimator
from tests.support.builders import GPU, deployment, node, pod, quota, replicaset
from tests.support.cachemutators import delete_node, delete_pod, upsert_node, upsert_pod

DEMO = Path(__file__).resolve().parents[2] / "deploy" / "demo"
FROM_ENTRY = "from the state cache"


def load(paths, directory, caplog=None):
    """(cache, whether it came from an entry) for a load of `paths` with the cache at `directory`."""
    caplog.clear()
    with caplog.at_level(logging.INFO):
        cache = load_object_files(paths, state_cache=directory, min_bytes=0)
    return cache, any(FROM_ENTRY in r.getMessage() for r in caplog.records)


def internals(cache) -> dict:
    """Every table of a ClusterCache as plain values, dict orders included (they decide the
    node order and which rows and class ids are reused next)."""
    w = cache._workloads
    return {
        "version": cache._version,
        "columns": (cache._column_names, list(cache._column_index.items())),
        "rows": (list(cache._rows.items()), cache._free_rows, cache._next_row),
        "row_names": cache._row_names.tolist(), "row_hostnames": cache._row_hostnames.tolist(),
        "row_nodes": [None if s is None else (s.zone, s.class_id, s.hostname) for s in cache._row_nodes],
        "allocatable": cache._allocatable.tolist(), "requested": cache._requested.tolist(),
        "dtypes": (cache._allocatable.dtype, cache._requested.dtype, cache._row_class.dtype),
        "row_class": cache._row_class.tolist(),
        "classes": (list(cache._class_ids.items()), cache._classes, cache._class_refs, cache._free_class_ids),
        "tree": [(zone, list(nodes.items())) for zone, nodes in cache._tree._zones.items()],
        "pods": list(cache._pods.items()),
        "quotas": list(cache._quotas.items()),
        "excess": list(cache._excess.items()),
        "workloads": [[(ns, list(records.items())) for ns, records in store._live.items()]
                      for store in (w._deployments, w._replicasets, w._unschedulable)],
    }


def snapshot_view(cache) -> dict:
    s = cache.snapshot()
    return {"names": s.node_names, "resources": s.resource_names, "allocatable": s.allocatable.tolist(),
            "available": s.available.tolist(), "class": s.node_class.tolist(), "classes": s.classes,
            "hostnames": s.hostnames, "quotas": {k: list(v) for k, v in s.quotas.items()},
            "unschedulable": {k: dict(v) for k, v in s.workloads.unschedulable.items()},
            "replicasets": {k: dict(v) for k, v in s.workloads.replicasets.items()},
            "deployments": {k: dict(v) for k, v in s.workloads.deployments.items()}}


MI = 2**20


def sets_query(gpus: int, cpu: int = 50) -> ComponentSetsQuery:
    master = Component("master", 1, ReplicaShape((("cpu", cpu), ("memory", 32 * MI)), namespace="ml-team"))
    worker = Component("worker", 2, ReplicaShape((("cpu", cpu), ("memory", 32 * MI), (GPU, gpus)), namespace="ml-team"))
    return ComponentSetsQuery((master, worker), "ml-team")


def answers(cache) -> list:
    out = []
    for packing in ("first-fit", "best"):
        estimator = Estimator(cache.snapshot, packing=packing)
        for gpus in (0, 1, 2, 3):
            estimate = estimator.max_available_component_sets(sets_query(gpus))
            out.append((packing, gpus, estimate.sets, estimate.bound))
    return out


def random_objects(seed: int) -> list[dict]:
    """A member that exercises every table: zones, taints, cordons, repeated node names (an
    update), pods on nodes never listed, terminal and unschedulable pods (one later bound),
    sums beyond int64, quotas, workloads and kinds the cache ignores."""
    rng = random.Random(seed)
    objects = []
    node_count = rng.randint(3, 40)
    for i in range(node_count):
        b = node(f"n{i}").cpu(rng.choice([2, 4, 16])).memory(f"{rng.choice([4, 64])}Gi").pods(rng.choice([3, 110]))
        if rng.random() < 0.5:
            b = b.gpu(rng.choice([1, 2, 8]))
        if rng.random() < 0.6:
            b = b.zone(f"z{rng.randint(0, 2)}", region="r1")
        if rng.random() < 0.2:
            b = b.taint("dedicated", rng.choice(["a", "b"]))
        if rng.random() < 0.1:
            b = b.cordon()
        objects.append(b.build())
    for i in rng.sample(range(node_count), k=min(3, node_count)):  # updates, one moving zone
        objects.append(node(f"n{i}").cpu(8).memory("8Gi").zone("z9").build())
    for j in range(rng.randint(0, 150)):
        target = f"n{rng.randint(0, node_count + 3)}"  # a few pods on nodes that never appear
        b = pod(rng.choice(["ns", "ml-team", "other"]), f"p{j}").requests(
            cpu=f"{rng.randint(1, 3000)}m", memory=f"{rng.randint(1, 4)}Gi", **({GPU: 1} if rng.random() < 0.2 else {}))
        r = rng.random()
        if r < 0.1:
            b = b.unschedulable()
        elif r < 0.15:
            b = b.on(target).phase("Succeeded")
        else:
            b = b.on(target)
        objects.append(b.build())
    objects.append(pod("ns", "late").unschedulable().build())
    objects.append(pod("ns", "late").on("n0").requests(cpu="100m").build())  # no longer unschedulable
    objects.append(pod("ns", "stuck").unschedulable().labels(app="web").build())
    for k in range(2):  # two at 8E on one node: the node's sum leaves int64
        objects.append(pod("big", f"huge{k}").on("n1").requests(memory="8E").build())
    dep = deployment("ns", "web").build()
    objects += [dep, replicaset("ns", "web-1").owned_by(dep).build(), quota("ml-team", "q").hard("pods", 50).build(),
                {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "ns"}}]
    return objects


HOUR_NS = 3600 * 10**9


def age(path: Path, ns: int = HOUR_NS) -> Path:
    """Date the file back: files modified in the last seconds are not saved (their time may
    not show the next change)."""
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns - ns))
    return path


def write_member(tmp_path: Path, objects: list[dict], name: str = "member.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
    return age(path)


def assert_same(fresh, cached) -> None:
    assert internals(cached) == internals(fresh)
    assert snapshot_view(cached) == snapshot_view(fresh)
    assert answers(cached) == answers(fresh)


@pytest.mark.parametrize("seed", range(12))
def test_a_load_from_the_entry_is_the_fresh_parse_and_later_changes_apply_alike(tmp_path, caplog, seed):
    path = write_member(tmp_path, random_objects(seed))
    first, used = load([path], tmp_path / "cache", caplog)
    assert not used and list((tmp_path / "cache").glob("objects-*.npz"))
    cached, used = load([path], tmp_path / "cache", caplog)
    assert used
    fresh = load_object_files([path], state_cache=None)
    assert_same(fresh, cached)
    assert internals(first) == internals(fresh)
    # The per-pod and per-row tables an entry restores are the ones later deltas need.
    rng = random.Random(seed)
    for cache in (fresh, cached):
        delete_node(cache, "n0")
        delete_pod(cache, "big", "huge0")
        delete_pod(cache, "ns", "stuck")
        upsert_node(cache, node("brand-new").cpu(4).memory("4Gi").zone("z1", region="r1").build())
        upsert_pod(cache, pod("ns", "later").on("brand-new").requests(cpu="1").build())
    for name in rng.sample([f"p{j}" for j in range(150)], k=40):
        for cache in (fresh, cached):
            delete_pod(cache, "ns", name)
            delete_pod(cache, "other", name)
    assert_same(fresh, cached)


@pytest.mark.parametrize("seed", range(4))
def test_export_then_restore_gives_the_same_cache_without_the_disk(tmp_path, seed):
    """ClusterCache.export() and restore() alone: nodes and counted pods come back table for
    table, the few-record kinds and unschedulable pods as the saver hands them in again."""
    objects = random_objects(seed)
    cache = load_object_files([write_member(tmp_path, objects)], state_cache=None)
    few = [(obj["kind"], parse_object(obj["kind"], obj)) for obj in objects
           if obj["kind"] in ("ResourceQuota", "ReplicaSet", "Deployment")]
    unschedulable = [(namespace, name, record) for namespace, records in cache._workloads.live_unschedulable().items()
                     for name, record in records.items()]
    assert_same(cache, ClusterCache.restore(cache.export(), few, unschedulable))


@pytest.mark.parametrize("member", ["member-a", "member-b", "member-c"])
def test_bundled_demo_members_load_alike_from_their_entry(tmp_path, caplog, member):
    _, used = load([DEMO / f"{member}.yaml"], tmp_path, caplog)
    assert not used
    cached, used = load([DEMO / f"{member}.yaml"], tmp_path, caplog)
    assert used
    assert_same(load_object_files([DEMO / f"{member}.yaml"], state_cache=None), cached)


def test_several_files_share_one_entry_and_keep_their_order(tmp_path, caplog):
    objects = random_objects(3)
    paths = [write_member(tmp_path, objects[:20], "a.json"), write_member(tmp_path, objects[20:], "b.json")]
    load(paths, tmp_path / "c", caplog)
    cached, used = load(paths, tmp_path / "c", caplog)
    assert used
    assert_same(load_object_files(paths, state_cache=None), cached)
    _, used = load(paths[::-1], tmp_path / "c", caplog)  # another list of files: another entry
    assert not used


def test_the_ignored_kinds_warning_is_logged_on_both_paths(tmp_path, caplog):
    path = write_member(tmp_path, random_objects(1))
    for expect_entry in (False, True):
        _, used = load([path], tmp_path / "c", caplog)
        assert used == expect_entry
        assert [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING] == [
            f"ignored 1 objects of other kinds (ConfigMap: 1) in {path}"]


@pytest.mark.parametrize("change", ["touch", "size", "replaced", "loader"])
def test_a_changed_file_or_loader_is_parsed_again(tmp_path, caplog, monkeypatch, change):
    objects = random_objects(5)
    path = write_member(tmp_path, objects)
    load([path], tmp_path / "c", caplog)
    st = path.stat()
    if change == "touch":
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    elif change == "size":
        with path.open("a") as f:
            f.write("\n")
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))  # the same time: the size alone tells
    elif change == "replaced":  # other content, same size and mtime: only the inode tells
        other = write_member(tmp_path, objects[::-1], "other.json")
        assert other.stat().st_size == st.st_size
        os.utime(other, ns=(st.st_atime_ns, st.st_mtime_ns))
        os.replace(other, path)
    else:
        monkeypatch.setattr(objectscache, "loader_tag", lambda: "another loader")
    cache, used = load([path], tmp_path / "c", caplog)
    assert not used
    assert "not used" in caplog.text
    assert_same(load_object_files([path], state_cache=None), cache)
    _, used = load([path], tmp_path / "c", caplog)  # the new entry replaced the stale one
    assert used
    assert len(list((tmp_path / "c").iterdir())) == 1


@pytest.mark.parametrize("damage", ["garbage", "truncated", "empty", "bad tables"])
def test_a_damaged_entry_is_logged_and_the_files_parsed(tmp_path, caplog, damage):
    path = write_member(tmp_path, random_objects(7))
    load([path], tmp_path / "c", caplog)
    (entry,) = (tmp_path / "c").glob("objects-*.npz")
    data = entry.read_bytes()
    if damage == "garbage":
        entry.write_bytes(os.urandom(len(data)))
    elif damage == "truncated":
        entry.write_bytes(data[: len(data) // 2])
    elif damage == "empty":
        entry.write_bytes(b"")
    else:  # a well-formed npz whose tables do not fit together
        with np.load(entry) as e:
            arrays = {k: e[k] for k in e.files}
        arrays["pod_row"] = arrays["pod_row"][:-1]
        arrays["row_zone"] = arrays["row_zone"][:1]
        np.savez(entry, **arrays)
    cache, used = load([path], tmp_path / "c", caplog)
    assert not used
    assert any(r.levelno == logging.WARNING and "unreadable" in r.getMessage() for r in caplog.records)
    assert_same(load_object_files([path], state_cache=None), cache)


def test_bad_files_still_fail_and_leave_no_entry(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"kind": "List", "items": [node("n1").cpu(1).build(), {"kind": "Pod", "metadata": {}}]}))
    age(path)
    with pytest.raises(StateLoadError, match=r"bad.json: object #1 \(Pod <no name>\): metadata.name is missing"):
        load_object_files([path], state_cache=tmp_path / "c", min_bytes=0)
    assert not (tmp_path / "c").exists() or not list((tmp_path / "c").iterdir())
    with pytest.raises(StateLoadError, match="no such file"):
        load_object_files([tmp_path / "missing.json"], state_cache=tmp_path / "c", min_bytes=0)


def test_files_changed_while_parsed_are_not_saved(tmp_path, caplog, monkeypatch):
    path = write_member(tmp_path, random_objects(2))
    real = objectscache.file_keys
    calls = []

    def moving(paths):
        calls.append(1)
        keys = real(paths)
        return keys if len(calls) == 1 else [[*k[:2], k[2] + 1, *k[3:]] for k in keys]

    monkeypatch.setattr(objectscache, "file_keys", moving)
    load([path], tmp_path / "c", caplog)
    assert not (tmp_path / "c").exists() or not list((tmp_path / "c").iterdir())
    assert "changed while they were loaded" in caplog.text


def test_values_json_cannot_keep_are_not_saved_but_load(tmp_path, caplog):
    # An unquoted YAML timestamp parses to a datetime; JSON would bring it back as text.
    path = tmp_path / "m.yaml"
    path.write_text("kind: ReplicaSet\napiVersion: apps/v1\nmetadata:\n  name: rs\n  namespace: ns\n"
                    "  creationTimestamp: 2024-01-02T03:04:05Z\n---\n" + json.dumps(node("n1").cpu(1).build()))
    age(path)
    cache, used = load([path], tmp_path / "c", caplog)
    assert not used and cache.stats()["replicasets"] == 1
    assert "not saved" in caplog.text
    assert not list((tmp_path / "c").glob("objects-*"))


def test_small_files_and_a_disabled_cache_write_nothing(tmp_path):
    path = write_member(tmp_path, random_objects(4))
    load_object_files([path], state_cache=tmp_path / "small")  # the default threshold: far below it
    load_object_files([path], state_cache=None, min_bytes=0)
    assert not (tmp_path / "small").exists()


def test_a_file_modified_seconds_ago_is_not_saved(tmp_path, caplog):
    # Its time may not move when it is rewritten within the same clock tick at the same size.
    path = write_member(tmp_path, random_objects(4))
    age(path, -HOUR_NS)  # back to now
    _, used = load([path], tmp_path / "c", caplog)
    assert "modified in the last 2 s" in caplog.text
    assert not (tmp_path / "c").exists() or not list((tmp_path / "c").iterdir())
    age(path)
    load([path], tmp_path / "c", caplog)
    _, used = load([path], tmp_path / "c", caplog)
    assert used


def test_an_unwritable_directory_only_warns(tmp_path, caplog):
    path = write_member(tmp_path, random_objects(4))
    blocker = tmp_path / "file"
    blocker.write_text("")
    caplog.set_level(logging.WARNING)
    cache = load_object_files([path], state_cache=blocker / "sub", min_bytes=0)
    assert cache.stats()["nodes"] > 0
    assert "state cache not saved" in caplog.text


def test_the_default_directory(tmp_path):
    assert objectscache.default_dir({objectscache.ENV: "off"}) is None
    assert objectscache.default_dir({objectscache.ENV: str(tmp_path)}) == tmp_path
    assert objectscache.default_dir({"XDG_CACHE_HOME": "/x"}) == Path("/x/karmada-estimator/objects")
    assert objectscache.default_dir({"XDG_CACHE_HOME": "relative", "HOME": "/h"}) == Path(
        "/h/.cache/karmada-estimator/objects")


def test_a_background_writer_saves_the_same_entry_and_its_parent_logs_the_outcome(tmp_path, caplog, monkeypatch):
    from estimator.cluster import files, forked
    monkeypatch.setattr(forked, "possible", lambda: True)
    path = write_member(tmp_path, random_objects(6))
    age(path)
    caplog.set_level(logging.INFO)
    parent = os.getpid()
    fresh = load_object_files([path], state_cache=tmp_path / "c", min_bytes=0, background=True)
    files.wait_for_saves(60)
    assert os.getpid() == parent  # the writer never came back into the caller
    assert "in the background" in caplog.text
    cached, used = load([path], tmp_path / "c", caplog)
    assert used
    assert_same(fresh, cached)


def test_a_background_writer_reports_why_it_saved_nothing(tmp_path, caplog, monkeypatch):
    from estimator.cluster import files, forked
    monkeypatch.setattr(forked, "possible", lambda: True)
    path = write_member(tmp_path, random_objects(4))
    blocker = tmp_path / "file"
    blocker.write_text("")
    age(path)
    caplog.set_level(logging.INFO)
    load_object_files([path], state_cache=blocker / "sub", min_bytes=0, background=True)
    files.wait_for_saves(60)
    assert "state cache not saved" in caplog.text


def test_without_fork_the_entry_is_written_before_the_load_returns(tmp_path, caplog, monkeypatch):
    from estimator.cluster import forked
    monkeypatch.setattr(forked, "possible", lambda: False)
    path = write_member(tmp_path, random_objects(4))
    age(path)
    load_object_files([path], state_cache=tmp_path / "c", min_bytes=0, background=True)
    assert list((tmp_path / "c").glob("objects-*"))
