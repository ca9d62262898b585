"""The bulk pod path of object files against the per-record path, the reference.

Both load the same file into a fresh ClusterCache; everything the cache holds (the state a
state-cache entry saves: arrays, row/column/class tables, the pod table, the version) and
every array of the snapshot must be equal. The files mix the common pods the bulk path
takes with everything it must decline (init containers, sidecars, overhead, pod-level
resources, conditions, odd quantities, duplicates, sums past int64, bad objects).
"""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import orjson
import pytest
import yaml

from benchmarks.members import MemberSpec, generate
from estimator.cluster import files, objectscache
from estimator.cluster.bulkload import BulkLoader
from estimator.cluster.cache import ClusterCache
from estimator.cluster.kubefiles import iter_objects
from estimator.core.errors import StateLoadError



def v1_list(items):
    return {"apiVersion": "v1", "kind": "List", "metadata": {}, "items": items}


def node(name, allocatable=None, labels=None, spec=None):
    labels = {"kubernetes.io/hostname": name, "topology.kubernetes.io/zone": "z1", **(labels or {})}
    return {"kind": "Node", "metadata": {"name": name, "labels": labels}, "spec": spec or {},
            "status": {"allocatable": allocatable or {"cpu": "8", "memory": "32Gi", "pods": "110"}}}


def pod(name, node_name=None, requests=None, namespace="ns", **extra):
    spec = {"containers": [{"name": "c", "resources": {"requests": requests or {"cpu": "1"}}}]}
    if node_name is not None:
        spec["nodeName"] = node_name
    obj = {"kind": "Pod", "metadata": {"name": name, "namespace": namespace}, "spec": spec, "status": {"phase": "Running"}}
    for key, value in extra.items():
        obj[key] = value
    return obj


def load(path: Path, bulk: bool, stream: bool = False):
    cache, recorder = ClusterCache(), objectscache.Recorder()
    objects = iter_objects(path, stream_from=0) if stream else iter_objects(path)
    files._load_objects(cache, path, objects, recorder, bulk)
    return cache, recorder


def assert_same(path: Path, stream: bool = False) -> ClusterCache:
    reference, ref_recorder = load(path, bulk=False, stream=stream)
    bulk, bulk_recorder = load(path, bulk=True, stream=stream)
    meta_a, arrays_a = objectscache.to_entry(reference, ref_recorder, [])
    meta_b, arrays_b = objectscache.to_entry(bulk, bulk_recorder, [])
    assert meta_a.keys() == meta_b.keys()
    for key in meta_a:
        assert meta_a[key] == meta_b[key], key
    assert arrays_a.keys() == arrays_b.keys()
    for key in arrays_a:
        assert arrays_a[key].dtype == arrays_b[key].dtype, key
        assert np.array_equal(arrays_a[key], arrays_b[key]), key
    assert reference._pods == bulk._pods
    assert reference._excess == bulk._excess
    assert reference.stats() == bulk.stats()
    a, b = reference.snapshot(), bulk.snapshot()
    assert a.version == b.version
    for field in ("node_names", "resource_names", "classes", "hostnames"):
        assert getattr(a, field) == getattr(b, field), field
    for field in ("allocatable", "available", "node_class"):
        assert getattr(a, field).dtype == getattr(b, field).dtype
        assert np.array_equal(getattr(a, field), getattr(b, field)), field
    assert a.quotas == b.quotas
    for field in ("deployments", "replicasets", "unschedulable"):
        plain = lambda index: {ns: dict(records) for ns, records in getattr(index, field).items()}  # noqa: E731
        assert plain(a.workloads) == plain(b.workloads), field
    assert reference.keys("Pod") == bulk.keys("Pod")
    return bulk


def write(tmp_path, items, name="member.json"):
    path = tmp_path / name
    path.write_bytes(orjson.dumps(v1_list(items)))
    return path


def awkward_items():
    sidecar = pod("sidecar", "n1")
    sidecar["spec"]["initContainers"] = [
        {"name": "proxy", "restartPolicy": "Always", "resources": {"requests": {"cpu": "250m", "memory": "64Mi"}}},
        {"name": "init", "resources": {"requests": {"cpu": "3"}}},
    ]
    overhead = pod("overhead", "n2", {"cpu": "1"})
    overhead["spec"]["overhead"] = {"cpu": "100m", "memory": "10Mi"}
    pod_level = pod("pod-level", "n2", {"cpu": "1"})
    pod_level["spec"]["resources"] = {"requests": {"cpu": "2", "memory": "1Gi"}}
    limits_only = pod("limits-only", "n1")
    limits_only["spec"]["containers"] = [
        {"name": "a", "resources": {"limits": {"cpu": "2", "memory": "1Gi"}, "requests": {"cpu": "500m"}}},
        {"name": "b", "resources": {"limits": {"example.com/widget": "3"}}},
        {"name": "c"},
        {"name": "d", "resources": None},
        {"name": "e", "resources": {"requests": {}, "limits": {}}},
    ]
    no_containers = pod("no-containers", "n1")
    del no_containers["spec"]["containers"]
    conditions = pod("pending", None, {"cpu": "2"}, status={
        "phase": "Pending",
        "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                        "lastTransitionTime": "2026-01-01T00:00:00Z"}]})
    conditions["metadata"]["ownerReferences"] = [
        {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "u1", "controller": True}]
    conditions_bound = pod("ready", "n1", {"cpu": "1"}, status={
        "phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]})
    return [
        pod("early", "n3", {"cpu": "1", "memory": "1Gi"}),  # before its node: a row without a node
        node("n1", labels={"pool": "a"}),
        node("n2", {"cpu": "16", "memory": "64Gi", "pods": "110", "nvidia.com/gpu": "4", "ephemeral-storage": "100Gi"},
             spec={"taints": [{"key": "gpu", "value": "yes", "effect": "NoSchedule"}]}),
        node("n3", labels={"pool": "a"}, spec={"unschedulable": True}),
        pod("plain", "n1"),
        pod("odd", "n1", {"cpu": "0.5", "memory": "1e3", "ephemeral-storage": "1.5Gi", "nvidia.com/gpu": "+1"}),
        pod("milli-memory", "n2", {"memory": "1500m", "cpu": "1m", "hugepages-2Mi": "4Mi"}),
        pod("zero", "n2", {"cpu": "0", "memory": "0"}),
        pod("extended", "n2", {"nvidia.com/gpu": "2", "example.com/fpga": "1", "foo": "3"}),
        pod("suffixes", "n2", {"cpu": "2k", "memory": "3M", "ephemeral-storage": "1Ti", "example.com/x": "1Ki"}),
        pod("big", "n2", {"memory": "5E"}),
        pod("big-too", "n2", {"memory": "5E"}),  # the sum leaves int64: kept exactly aside
        pod("saturated", "n1", {"cpu": "1"}),
        pod("done", "n1", status={"phase": "Succeeded"}),
        pod("failed", "n1", status={"phase": "Failed"}),
        pod("unbound"),
        pod("no-status", "n1", status=None),
        pod("empty-node-name", ""),
        pod("default-ns", "n1", namespace=None),
        pod("ghost", "gone", {"cpu": "2"}),  # a node never listed
        sidecar, overhead, pod_level, limits_only, no_containers, conditions, conditions_bound,
        pod("plain", "n2", {"cpu": "3"}),  # listed again: moves
        pod("ghost", "n1", {"cpu": "2"}),  # moves off the node-less row, which is freed
        pod("reuse", "other", {"cpu": "1"}),  # takes the freed row
        pod("pending", "n1", {"cpu": "2"}),  # no longer unschedulable
        node("n4", {"cpu": "4", "memory": "1e3", "pods": "10", "example.com/dev": "2", "foo": "1", "hugepages-2Mi": "1Gi"},
             labels={"failure-domain.beta.kubernetes.io/zone": "old", "topology.kubernetes.io/region": "r"}),
        node("n5", {"cpu": "4", "memory": "1e3", "pods": "10", "example.com/dev": "2", "foo": "1", "hugepages-2Mi": "1Gi"},
             spec={"taints": [{"key": "b", "effect": "NoExecute"}, {"key": "a", "value": "1", "effect": "NoSchedule"}],
                   "unschedulable": True}),
        node("n6", None, labels={"pool": "a"}),
        {"kind": "Node", "metadata": {"name": "bare"}},
        {"kind": "Node", "metadata": {"name": "int-label", "labels": {"n": 1}}, "status": {"allocatable": {"cpu": 2}}},
        {"kind": "Node", "metadata": {"name": "no-alloc"}, "spec": None, "status": {}},
        node("n1", {"cpu": "8", "memory": "32Gi", "pods": "110"}, labels={"pool": "a"}),  # a heartbeat
        node("n6", {"cpu": "2", "memory": "4Gi", "pods": "20"}, labels={"pool": "b"}),  # changes
        node("gone", {"cpu": "1", "pods": "5"}),  # after its pods
        {"kind": "ResourceQuota", "metadata": {"name": "q", "namespace": "ns"},
         "status": {"hard": {"cpu": "10"}, "used": {"cpu": "4"}}},
        {"kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "ns"}},
    ]


def test_awkward_objects_load_the_same_both_ways(tmp_path):
    items = awkward_items()
    saturated = next(i for i in items if i["metadata"]["name"] == "saturated")
    saturated["spec"]["containers"] *= 2
    saturated["spec"]["containers"][0]["resources"]["requests"] = {"memory": "8E"}
    saturated["spec"]["containers"][1] = {"name": "c2", "resources": {"requests": {"memory": "8E"}}}
    path = write(tmp_path, items)
    cache = assert_same(path)
    assert cache._excess  # the two 5E pods: the case was exercised
    assert assert_same(path, stream=True)._excess


def test_the_bulk_path_takes_the_common_pods_and_declines_the_rest(tmp_path):
    cache = ClusterCache()
    bulk = BulkLoader(cache)
    assert bulk.pod(pod("plain", "n1"))
    assert bulk.pod(pod("done", "n1", status={"phase": "Succeeded"}))
    declined = [item for item in awkward_items() if item.get("kind") == "Pod" and not BulkLoader(ClusterCache()).pod(item)]
    names = {item["metadata"]["name"] for item in declined}
    assert {"sidecar", "overhead", "pod-level", "pending", "ready", "default-ns"} <= names
    assert "odd" not in names  # quantities not in plain form go through the exact parser
    assert not bulk.pod(pod("plain", "n2"))  # held already
    assert bulk.node(node("n2")) and not bulk.node(node("n2"))  # the second: a heartbeat, per record
    assert not bulk.node(node("n1"))  # its pods made its row first
    assert not bulk.node({"kind": "Node", "metadata": {"name": "x", "labels": {"n": 1}}})
    bulk.flush()
    assert bulk.applied == 1


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_members_load_the_same_both_ways(tmp_path, seed):
    rng = random.Random(seed)
    texts = ["1", "250m", "0.25", "2Gi", "512Mi", "1k", "3", "1500m", "100", "7Ki", "1e2", "0", "64", "12M"]
    names = ["cpu", "memory", "ephemeral-storage", "nvidia.com/gpu", "example.com/thing", "hugepages-1Gi"]
    items = [node(f"n{i}", {"cpu": rng.choice(["4", "8", "16"]), "memory": "64Gi", "pods": "110",
                           rng.choice(names[2:]): rng.choice(["1", "4", "100Gi"])}) for i in range(40)]
    for i in range(1500):
        containers = []
        for c in range(rng.randint(0, 3)):
            resources = {}
            for part in ("requests", "limits"):
                if rng.random() < 0.6:
                    resources[part] = {rng.choice(names): rng.choice(texts) for _ in range(rng.randint(0, 3))}
            containers.append({"name": f"c{c}", "resources": resources})
        obj = pod(f"p{i % 1300}", f"n{rng.randrange(45)}" if rng.random() < 0.95 else None,
                  namespace=rng.choice(["a", "b"]))
        obj["spec"]["containers"] = containers
        obj["status"]["phase"] = rng.choice(["Running", "Running", "Pending", "Succeeded"])
        if rng.random() < 0.03:
            obj["spec"]["initContainers"] = [{"name": "i", "resources": {"requests": {"cpu": "5"}}}]
        items.insert(rng.randrange(len(items) + 1), obj)
    path = write(tmp_path, items)
    assert_same(path)
    assert_same(path, stream=True)


def test_a_generated_benchmark_member_loads_the_same_both_ways(tmp_path):
    member, _ = generate(MemberSpec(300))
    path = tmp_path / "member.json"
    path.write_bytes(orjson.dumps(member))
    assert assert_same(path, stream=True).stats()["counted_pods"] > 1000


@pytest.mark.parametrize("bad, message", [
    ({"kind": "Node", "metadata": {"name": "t"}, "spec": {"taints": 5}}, "not iterable"),
    ({"kind": "Node", "metadata": {"name": "t"}, "spec": {"taints": [{"effect": "NoSchedule"}]}}, "has no key"),
    ({"kind": "Node", "metadata": {"name": "t"}, "status": {"allocatable": {"cpu": "-1"}}}, "negative"),
    ({"kind": "Node", "metadata": {"name": "t"}, "status": {"allocatable": {"pods": True}}}, "pods"),
    ({"kind": "Node", "metadata": {"name": "t"}, "status": {"allocatable": {"cpu": ["1"]}}}, "cpu"),
    ({"kind": "Node", "metadata": {"name": "t", "labels": ["a"]}}, "metadata.labels"),
    ({"kind": "Node", "metadata": {}}, "metadata.name"),
    ({"kind": ["Node"], "metadata": {"name": "x"}}, "has no kind"),
    (pod("neg", "n1", {"cpu": "-1"}), "negative"),
    (pod("word", "n1", {"memory": "lots"}), "is not a quantity"),
    (pod("huge", "n1", {"memory": "99999999999999999999"}), "out of range"),
    (pod("list", "n1", {"cpu": ["1"]}), "cpu"),
    (pod("node", 7), "spec.nodeName"),
    ({"kind": "Pod", "metadata": {"namespace": "ns"}, "spec": {}}, "metadata.name"),
    ({"kind": "Pod", "metadata": {"name": "s"}, "spec": ["x"]}, "spec: expected a mapping"),
])
def test_bad_pods_raise_the_same_message_both_ways(tmp_path, bad, message):
    path = write(tmp_path, [node("n1"), pod("fine", "n1"), bad, pod("after", "n1")])
    errors = []
    for bulk in (False, True):
        with pytest.raises(StateLoadError) as err:
            load(path, bulk)
        errors.append(str(err.value))
    assert errors[0] == errors[1]
    assert str(path) in errors[1] and "object #2" in errors[1] and message in errors[1]
    with pytest.raises(StateLoadError):
        files.load_object_files([path], state_cache=None)


def test_yaml_files_take_the_same_path(tmp_path):
    path = tmp_path / "member.yaml"
    path.write_text(yaml.safe_dump_all(awkward_items()[:12]))
    assert_same(path)


def _cache_state(cache):
    meta, arrays = objectscache.to_entry(cache, objectscache.Recorder(), [])
    return meta, {k: v.tolist() for k, v in arrays.items()}, dict(cache._pods), cache.stats()


def _loaded(pods_before=()):
    """A cache with nodes n0..n3 and `pods_before` (digests) taken, and its loader."""
    cache = ClusterCache()
    loader = BulkLoader(cache)
    for i in range(4):
        assert loader.node(node(f"n{i}", {"cpu": "8", "memory": "32Gi", "pods": "110", "nvidia.com/gpu": "4"}))
    for digest in pods_before:
        assert loader.take(digest)
    loader.flush()
    return cache, loader


def _run(digests):
    return tuple(list(column) for column in zip(*digests))


def _pod_digest(name, node_name, cpu=1000, namespace="ns", gpu=0):
    requests = (("cpu", cpu),) + ((("nvidia.com/gpu", gpu),) if gpu else ())
    return namespace, name, node_name, requests


@pytest.mark.parametrize("why, before, run", [
    ("a pod twice in the run", [], [_pod_digest("a", "n1"), _pod_digest("b", "n2"), _pod_digest("a", "n3")]),
    ("a pod held before", [_pod_digest("b", "n0")], [_pod_digest("a", "n1"), _pod_digest("b", "n2")]),
    ("a pod not counted, held before", [_pod_digest("b", "n0")], [_pod_digest("b", "")]),
    ("a node with no row yet", [], [_pod_digest("a", "n1"), _pod_digest("b", "elsewhere")]),
    ("a resource with no column yet", [], [_pod_digest("a", "n1"), ("ns", "b", "n2", (("example.com/x", 1),))]),
])
def test_a_run_take_run_declines_leaves_the_cache_untouched(why, before, run):
    cache, loader = _loaded(before)
    state = _cache_state(cache)
    assert not loader.take_run(_run(run)), why
    loader.flush()
    assert _cache_state(cache) == state, why


def test_a_run_taken_at_once_ends_as_its_pods_taken_one_by_one():
    rng = random.Random(7)
    before = [_pod_digest(f"old{i}", f"n{i % 4}") for i in range(5)]
    run = [_pod_digest(f"p{i}", rng.choice(["n0", "n1", "n2", "n3", ""]), rng.randrange(1, 4000),
                       namespace=rng.choice(["ns", "other"]), gpu=rng.choice([0, 0, 1, 2])) for i in range(200)]
    at_once, loader = _loaded(before)
    assert loader.take_run(_run(run))
    loader.flush()
    one_by_one, reference = _loaded(before)
    for digest in run:
        assert reference.take(digest)
    reference.flush()
    assert _cache_state(at_once) == _cache_state(one_by_one)
    assert loader.applied == reference.applied == 5 + sum(1 for d in run if d[2])
