"""Object files read on two cores (estimator.cluster.splitload) against the one-core load.

The worker digests the common pods of the items after a cut and this process applies
them; the state must be the sequential per-record path's, cell for cell (the oracle of
test_bulkload.assert_same), at every cut, including cuts that fall inside a string (the
worker's part is then not used), and a broken file must fail with the same message.
"""

from __future__ import annotations

import os
import random

import orjson
import pytest

from estimator.cluster import files, objectscache, splitload
from estimator.cluster.cache import ClusterCache
from estimator.cluster.kubefiles import iter_objects
from estimator.core.errors import StateLoadError
from tests.cluster.test_bulkload import awkward_items, node, pod, v1_list

pytestmark = pytest.mark.skipif(not splitload.can_fork(), reason="needs fork, two CPUs and a single thread")


def _state(cache, recorder):
    meta, arrays = objectscache.to_entry(cache, recorder, [])
    return meta, {k: v.tolist() for k, v in arrays.items()}, dict(cache._pods), dict(cache._excess), cache.stats()


def _split_load(path, share, slice_bytes=256):
    objects = splitload.objects(path, min_bytes=0, head_share=share, slice_bytes=slice_bytes)
    assert objects is not None
    cache, recorder = ClusterCache(), objectscache.Recorder()
    files._load_objects(cache, path, objects, recorder, bulk=True)
    return _state(cache, recorder)


def _reference(path):
    cache, recorder = ClusterCache(), objectscache.Recorder()
    files._load_objects(cache, path, iter_objects(path), recorder, bulk=False)
    return _state(cache, recorder)


def _member(rng: random.Random) -> list:
    items = awkward_items()
    texts = ["1", "250m", "2Gi", "512Mi", "0", "1e2", "+1", "1.5Gi"]
    for i in range(60):
        items.append(node(f"r{i}", {"cpu": rng.choice(["4", "8"]), "memory": "64Gi", "pods": "110"}))
    for i in range(400):
        requests = {rng.choice(["cpu", "memory", "nvidia.com/gpu", "example.com/x"]): rng.choice(texts)}
        extra = {}
        if rng.random() < 0.05:
            extra["status"] = {"phase": rng.choice(["Succeeded", "Failed", "Running"])}
        p = pod(f"p{rng.randrange(300)}", rng.choice([f"r{rng.randrange(70)}", None, "n1"]), requests, **extra)
        if rng.random() < 0.03:
            p["spec"]["initContainers"] = [{"name": "i", "resources": {"requests": {"cpu": "3"}}}]
        if rng.random() < 0.03:
            p["spec"]["overhead"] = {"cpu": "10m"}
        if rng.random() < 0.02:  # a string holding the items' separator
            p["metadata"]["annotations"] = {"note": '},{"kind":"Pod"'}
        items.append(p)
    items.extend(awkward_items())  # every awkward object again: duplicates, moves
    return items


@pytest.mark.parametrize("seed", [1, 2])
def test_every_cut_loads_the_state_the_sequential_path_loads(tmp_path, seed):
    path = tmp_path / "member.json"
    path.write_bytes(orjson.dumps(v1_list(_member(random.Random(seed)))))
    expected = _reference(path)
    for share in (0.0, 0.1, 0.3, 0.5, 0.77, 0.95):
        assert _split_load(path, share) == expected, share


def test_api_server_lists_get_their_items_kind(tmp_path):
    items = [pod(f"p{i % 7}", ["n1", None, "n2"][i % 3], {"cpu": f"{i % 4}"}) for i in range(40)]
    for item in items:
        del item["kind"]
    path = tmp_path / "pods.json"
    path.write_bytes(orjson.dumps({"apiVersion": "v1", "kind": "PodList", "items": items}))
    expected = _reference(path)
    assert expected[-1]["counted_pods"] > 0
    assert _split_load(path, 0.4, slice_bytes=64) == expected


@pytest.mark.parametrize("share", [0.2, 0.8])
def test_a_bad_object_or_broken_json_fails_as_the_sequential_load_does(tmp_path, share):
    items = [pod(f"p{i}", "n1") for i in range(200)]
    items[150]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "lots"
    path = tmp_path / "bad.json"
    path.write_bytes(orjson.dumps(v1_list(items)))
    for text in (path.read_bytes(), path.read_bytes()[:-40] + b"{" + path.read_bytes()[-40:]):
        path.write_bytes(text)
        with pytest.raises(StateLoadError) as sequential:
            files._load_file(ClusterCache(), path, split=False)
        with pytest.raises(StateLoadError) as split:
            objects = splitload.objects(path, min_bytes=0, head_share=share, slice_bytes=128)
            files._load_objects(ClusterCache(), path, objects, None, bulk=True)
        assert str(split.value) == str(sequential.value)


@pytest.mark.parametrize("dies_after", [0, 30, 150])
def test_a_worker_that_dies_part_way_leaves_the_rest_to_this_process(tmp_path, monkeypatch, dies_after):
    path = tmp_path / "member.json"
    path.write_bytes(orjson.dumps(v1_list(_member(random.Random(3)))))
    expected = _reference(path)

    class Dying(splitload.Digester):
        digested = 0

        def digest(self, obj):
            Dying.digested += 1
            if Dying.digested > dies_after:
                os._exit(7)  # (in the worker: only it digests with splitload's Digester)
            return super().digest(obj)

    monkeypatch.setattr(splitload, "Digester", Dying)
    for share in (0.1, 0.4):
        assert _split_load(path, share) == expected, share


def test_the_callers_work_runs_once_while_the_worker_reads(tmp_path):
    path = tmp_path / "member.json"
    path.write_bytes(orjson.dumps(v1_list(_member(random.Random(4)))))
    expected = _reference(path)
    ran = []
    objects = splitload.objects(path, min_bytes=0, slice_bytes=256, meanwhile=lambda: ran.append(os.getpid()))
    assert ran == [os.getpid()]  # here, before a single object was read
    cache, recorder = ClusterCache(), objectscache.Recorder()
    files._load_objects(cache, path, objects, recorder, bulk=True)
    assert _state(cache, recorder) == expected
    assert splitload.objects(path, meanwhile=lambda: ran.append("small file")) is None  # (under MIN_BYTES)
    assert ran == [os.getpid()]


def test_work_that_fails_stops_the_worker_and_raises(tmp_path, monkeypatch):
    path = tmp_path / "member.json"
    path.write_bytes(orjson.dumps(v1_list(_member(random.Random(5)))))
    started = []
    start = splitload.forked.start
    monkeypatch.setattr(splitload.forked, "start", lambda work: started.append(start(work)) or started[-1])

    def fail():
        raise ImportError("no such module")

    with pytest.raises(ImportError):
        splitload.objects(path, min_bytes=0, meanwhile=fail)
    assert len(started) == 1 and started[0].reaped
