"""ClusterCache: incremental updates, rows, classes, Karmada's node order, snapshots."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from estimator.cluster.cache import ClusterCache
from estimator.core.records import zone_key
from estimator.core.snapshot import ScopeRequirement
from tests.support.builders import GPU, node, pod, quota
from tests.support.cachemutators import delete_node, delete_pod, delete_quota, upsert_node, upsert_pod, upsert_quota

Gi = 2**30


def _view(snapshot):
    """name -> {resource: available} (zeros dropped), the cluster as an estimate sees it."""
    return {
        name: {r: int(v) for r, v in zip(snapshot.resource_names, snapshot.available[i]) if v}
        for i, name in enumerate(snapshot.node_names)
    }


def _available(cache, name):
    return _view(cache.snapshot())[name]


def _cache(*objects):
    cache = ClusterCache()
    for obj in objects:
        kind = obj["kind"]
        {"Node": upsert_node, "Pod": upsert_pod, "ResourceQuota": upsert_quota}[kind](cache, obj)
    return cache


# --- nodes and pods ---------------------------------------------------------------------


def test_a_node_offers_its_allocatable_counted_resources_and_pod_slots():
    n1 = node("n1").cpu("4").memory("8Gi").gpu(2).resource("example.com/fpga", 1).resource("bogus", 3).build()
    snapshot = _cache(n1).snapshot()
    assert snapshot.resource_names[0] == "pods"
    assert _view(snapshot) == {"n1": {"pods": 110, "cpu": 4000, "memory": 8 * Gi, GPU: 2, "example.com/fpga": 1}}
    assert "bogus" not in snapshot.resource_names
    assert (snapshot.allocatable == snapshot.available).all()


POD_CASES = [
    ("a running pod uses its requests and one pod slot", pod("ns", "p").on("n1").requests(cpu="1", gpu=1), {"pods": 109, "cpu": 3000, GPU: 1}),
    ("a pending bound pod counts too", pod("ns", "p").on("n1").phase("Pending").requests(cpu="1"), {"pods": 109, "cpu": 3000, GPU: 2}),
    ("a succeeded pod does not count", pod("ns", "p").on("n1").requests(cpu="1").phase("Succeeded"), {"pods": 110, "cpu": 4000, GPU: 2}),
    ("a failed pod does not count", pod("ns", "p").on("n1").requests(cpu="1").phase("Failed"), {"pods": 110, "cpu": 4000, GPU: 2}),
    ("an unbound pod does not count", pod("ns", "p").requests(cpu="1"), {"pods": 110, "cpu": 4000, GPU: 2}),
    ("requests beyond allocatable clamp at zero", pod("ns", "p").on("n1").requests(cpu="9", gpu=3), {"pods": 109}),
    ("a pod without requests still takes a slot", pod("ns", "p").on("n1"), {"pods": 109, "cpu": 4000, GPU: 2}),
]


@pytest.mark.parametrize("pod_builder, expected", [c[1:] for c in POD_CASES], ids=[c[0] for c in POD_CASES])
def test_pods_on_a_node(pod_builder, expected):
    cache = _cache(node("n1").cpu("4").gpu(2).build(), pod_builder.build())
    assert _available(cache, "n1") == expected


def test_a_pod_update_moves_its_requests():
    cache = _cache(node("n1").cpu("4").build(), node("n2").cpu("4").build())
    upsert_pod(cache, pod("ns", "p").requests(cpu="1").build())  # pending, unbound
    assert _available(cache, "n1")["cpu"] == 4000
    upsert_pod(cache, pod("ns", "p").on("n1").requests(cpu="1").build())  # bound
    assert _available(cache, "n1") == {"pods": 109, "cpu": 3000}
    upsert_pod(cache, pod("ns", "p").on("n1").requests(cpu="2").build())  # resized
    assert _available(cache, "n1") == {"pods": 109, "cpu": 2000}
    upsert_pod(cache, pod("ns", "p").on("n2").requests(cpu="2").build())  # rebound elsewhere
    assert _available(cache, "n1") == {"pods": 110, "cpu": 4000}
    assert _available(cache, "n2") == {"pods": 109, "cpu": 2000}
    upsert_pod(cache, pod("ns", "p").on("n2").requests(cpu="2").phase("Succeeded").build())
    assert _available(cache, "n2") == {"pods": 110, "cpu": 4000}
    upsert_pod(cache, pod("ns", "p").on("n2").requests(cpu="2").build())
    delete_pod(cache, "ns", "p")
    assert _available(cache, "n2") == {"pods": 110, "cpu": 4000}
    assert cache.stats()["counted_pods"] == 0


def test_deleting_an_unknown_pod_or_node_is_harmless():
    cache = _cache(node("n1").cpu("1").build())
    version = cache.version
    delete_pod(cache, "ns", "nope")
    delete_node(cache, "nope")
    assert cache.version == version


def test_pods_on_an_unknown_node_count_once_the_node_appears():
    cache = _cache(pod("ns", "early").on("n1").requests(cpu="1").build())
    assert cache.snapshot().num_nodes == 0
    assert cache.stats()["rows"] == 1
    upsert_node(cache, node("n1").cpu("4").build())
    assert _available(cache, "n1") == {"pods": 109, "cpu": 3000}


def test_a_deleted_and_re_added_node_keeps_counting_its_pods():
    cache = _cache(node("n1").cpu("4").build(), pod("ns", "p").on("n1").requests(cpu="1").build())
    delete_node(cache, "n1")
    assert cache.snapshot().num_nodes == 0
    upsert_node(cache, node("n1").cpu("4").build())
    assert _available(cache, "n1") == {"pods": 109, "cpu": 3000}


def test_a_row_left_by_a_deleted_node_is_reused():
    cache = _cache(*(node(f"n{i}").cpu("1").build() for i in range(3)))
    delete_node(cache, "n1")
    upsert_node(cache, node("n9").cpu("2").build())
    stats = cache.stats()
    assert stats["rows"] == 3 and stats["rows_ever_used"] == 3
    assert _available(cache, "n9") == {"pods": 110, "cpu": 2000}


def test_a_row_kept_for_pods_is_freed_with_its_last_pod():
    cache = _cache(node("n1").cpu("4").build(), pod("ns", "p").on("n1").build())
    delete_node(cache, "n1")
    assert cache.stats()["rows"] == 1
    delete_pod(cache, "ns", "p")
    assert cache.stats()["rows"] == 0
    upsert_node(cache, node("n2").cpu("1").build())
    assert cache.stats()["rows_ever_used"] == 1
    assert _available(cache, "n2") == {"pods": 110, "cpu": 1000}


def test_arrays_grow_past_their_initial_size_in_rows_and_columns():
    cache = ClusterCache()
    for i in range(300):
        upsert_node(cache, node(f"n{i}").cpu(str(i + 1)).resource(f"example.com/r{i % 20}", i).build())
    upsert_pod(cache, pod("ns", "p").on("n299").requests(cpu="1", **{"example.com/new": "1"}).build())
    snapshot = cache.snapshot()
    assert snapshot.num_nodes == 300 and len(snapshot.resource_names) == 23  # pods, cpu, 20 r*, new
    view = _view(snapshot)
    assert view["n0"] == {"pods": 110, "cpu": 1000}
    assert view["n299"] == {"pods": 109, "cpu": 299000, "example.com/r19": 299}
    assert view["n150"] == {"pods": 110, "cpu": 151000, "example.com/r10": 150}


# --- classes ----------------------------------------------------------------------------


def test_nodes_with_equal_labels_taints_and_cordon_share_a_class():
    cache = _cache(
        node("a").label("pool", "gpu").zone("z1").build(),
        node("b").label("pool", "gpu").zone("z1").build(),  # differs only by hostname
        node("c").label("pool", "gpu").zone("z1").taint("x").build(),
        node("d").label("pool", "gpu").zone("z1").cordon().build(),
    )
    snapshot = cache.snapshot()
    ids = dict(zip(snapshot.node_names, snapshot.node_class.tolist()))
    assert ids["a"] == ids["b"]
    assert len({ids["a"], ids["c"], ids["d"]}) == 3
    assert snapshot.hostnames == ("a", "b", "c", "d")
    assert snapshot.node_labels(1)["kubernetes.io/hostname"] == "b"
    assert "kubernetes.io/hostname" not in snapshot.classes[ids["a"]].label_dict()


def test_a_label_change_moves_a_node_to_another_class_and_frees_the_old_one():
    cache = _cache(node("a").label("pool", "x").build(), node("b").label("pool", "y").build())
    before = cache.snapshot()
    upsert_node(cache, node("b").label("pool", "x").build())
    after = cache.snapshot()
    assert after.node_class[0] == after.node_class[1]
    assert cache.stats()["node_classes"] == 1
    upsert_node(cache, node("c").label("pool", "z").build())  # reuses the freed class id
    assert len(cache.snapshot().classes) == len(before.classes) == 2
    assert cache.snapshot().classes[cache.snapshot().node_class[2]].label_dict() == {"pool": "z"}


def test_hostname_and_name_look_ups_follow_relabels_and_new_nodes():
    from estimator.core.model import NodeClaim, NodeSelectorRequirement, NodeSelectorTerm

    by_hostname = NodeClaim(node_selector=(("kubernetes.io/hostname", "web-host"),))
    by_name = NodeClaim(affinity_terms=(NodeSelectorTerm(match_fields=(NodeSelectorRequirement("metadata.name", "In", ("b",)),)),))
    cache = _cache(node("a").zone("z1").build(), node("b").zone("z2").build())
    assert not cache.snapshot().node_mask(by_hostname).any()
    assert cache.snapshot().node_mask(by_name).tolist() == [False, True]
    upsert_node(cache, node("a").zone("z1").label("kubernetes.io/hostname", "web-host").build())
    assert cache.snapshot().node_mask(by_hostname).tolist() == [True, False]
    upsert_node(cache, node("c").zone("z1").build())  # order becomes a, b, c
    upsert_node(cache, node("a0").zone("z3").build())  # order becomes a, b, a0, c
    snapshot = cache.snapshot()
    assert snapshot.node_names == ("a", "b", "a0", "c")
    assert snapshot.node_mask(by_name).tolist() == [False, True, False, False]
    assert snapshot.node_mask(by_hostname).tolist() == [True, False, False, False]


# --- Karmada's node order ---------------------------------------------------------------


class ReferenceNodeTree:
    """node_tree.go with plain lists: the oracle for the cache's numpy order."""

    def __init__(self):
        self.tree: dict[str, list[str]] = {}
        self.zones: list[str] = []

    def add(self, name, zone):
        if zone in self.tree:
            if name not in self.tree[zone]:
                self.tree[zone].append(name)
        else:
            self.zones.append(zone)
            self.tree[zone] = [name]

    def remove(self, name, zone):
        self.tree[zone].remove(name)
        if not self.tree[zone]:
            del self.tree[zone]
            self.zones.remove(zone)

    def list(self):
        out, index = [], 0
        total = sum(map(len, self.tree.values()))
        while len(out) < total:
            for zone in self.zones:
                if index < len(self.tree[zone]):
                    out.append(self.tree[zone][index])
            index += 1
        return out


ZONE_CASES = [
    ("no topology labels give the empty zone", {}, ""),
    ("region and zone join", {"topology.kubernetes.io/region": "r", "topology.kubernetes.io/zone": "z"}, "r:\x00:z"),
    ("the legacy labels are the fallback", {"failure-domain.beta.kubernetes.io/zone": "z"}, ":\x00:z"),
    (
        "a present new label wins even when empty",
        {"topology.kubernetes.io/zone": "", "failure-domain.beta.kubernetes.io/zone": "old"},
        "",
    ),
]


@pytest.mark.parametrize("labels, expected", [c[1:] for c in ZONE_CASES], ids=[c[0] for c in ZONE_CASES])
def test_zone_key(labels, expected):
    assert zone_key(labels) == expected


def test_nodes_interleave_round_robin_across_zones_in_first_seen_order():
    cache, reference = ClusterCache(), ReferenceNodeTree()
    layout = [("a1", "za"), ("b1", "zb"), ("a2", "za"), ("a3", "za"), ("c1", "zc"), ("b2", "zb"), ("n1", None)]
    for name, zone in layout:
        builder = node(name).cpu("1")
        if zone:
            builder.zone(zone)
        upsert_node(cache, builder.build())
        reference.add(name, zone_key({"topology.kubernetes.io/zone": zone} if zone else {}))
    assert cache.snapshot().node_names == ("a1", "b1", "c1", "n1", "a2", "b2", "a3")
    assert list(cache.snapshot().node_names) == reference.list()


def test_an_emptied_zone_is_removed_and_comes_back_last():
    cache = _cache(node("a1").zone("za").build(), node("b1").zone("zb").build(), node("a2").zone("za").build())
    delete_node(cache, "a1")
    delete_node(cache, "a2")
    upsert_node(cache, node("a3").zone("za").build())
    upsert_node(cache, node("b2").zone("zb").build())
    assert cache.snapshot().node_names == ("b1", "a3", "b2")


def test_a_node_changing_zone_moves_to_the_end_of_its_new_zone():
    cache = _cache(
        node("a1").zone("za").build(), node("b1").zone("zb").build(), node("a2").zone("za").build(), node("b2").zone("zb").build()
    )
    upsert_node(cache, node("a1").zone("zb").build())
    assert cache.snapshot().node_names == ("a2", "b1", "b2", "a1")
    upsert_node(cache, node("a1").zone("zb").label("x", "y").build())  # same zone: stays
    assert cache.snapshot().node_names == ("a2", "b1", "b2", "a1")


def test_the_same_zone_in_another_region_is_another_zone():
    cache = _cache(node("a").zone("z1", region="r1").build(), node("b").zone("z1", region="r2").build(), node("c").zone("z1", region="r1").build())
    assert cache.snapshot().node_names == ("a", "b", "c")


# --- snapshots --------------------------------------------------------------------------


def test_a_snapshot_is_reused_until_something_changes():
    cache = _cache(node("n1").cpu("4").build())
    first = cache.snapshot()
    assert cache.snapshot() is first
    upsert_node(cache, node("n1").cpu("4").build())  # a heartbeat: nothing estimates see
    assert cache.snapshot() is first
    upsert_pod(cache, pod("ns", "p").phase("Succeeded").build())  # nothing to count
    assert cache.snapshot() is first
    upsert_node(cache, node("n1").cpu("5").build())
    second = cache.snapshot()
    assert second is not first and second.version > first.version
    assert first.available[0, 1] == 4000 and second.available[0, 1] == 5000  # the old copy is untouched


def test_snapshot_arrays_are_read_only():
    snapshot = _cache(node("n1").cpu("4").build()).snapshot()
    for array in (snapshot.allocatable, snapshot.available, snapshot.node_class):
        with pytest.raises(ValueError):
            array[0] = 0
    assert snapshot.allocatable.dtype == np.int64 and snapshot.node_class.dtype == np.int32


def test_quotas_are_grouped_by_namespace_with_scopes_and_int_amounts():
    cache = _cache(
        quota("ml", "gpu").hard("requests.nvidia.com/gpu", 8).used("requests.nvidia.com/gpu", 2).build(),
        quota("ml", "cpu").hard("requests.cpu", "10").used("requests.cpu", "1500m").scope("NotBestEffort").priority_classes("high").build(),
        quota("web", "pods").hard("pods", 10).build(),
    )
    quotas = cache.snapshot().quotas
    assert sorted(quotas) == ["ml", "web"]
    cpu, gpu = quotas["ml"]
    assert (cpu.name, gpu.name) == ("cpu", "gpu")
    assert cpu.hard == {"requests.cpu": 10000} and cpu.used == {"requests.cpu": 1500}
    assert cpu.scopes == (ScopeRequirement("NotBestEffort", "Exists"), ScopeRequirement("PriorityClass", "In", ("high",)))
    assert gpu.used == {"requests.nvidia.com/gpu": 2}
    delete_quota(cache, "ml", "gpu")
    assert [q.name for q in cache.snapshot().quotas["ml"]] == ["cpu"]


def test_a_malformed_object_changes_nothing():
    cache = _cache(node("n1").cpu("4").build())
    version = cache.version
    with pytest.raises(ValueError, match="cpu"):
        upsert_pod(cache, pod("ns", "p").on("n1").container("web", requests={"cpu": "x"}).build())
    with pytest.raises(ValueError, match="status.allocatable: memory"):
        upsert_node(cache, node("n1").memory("lots").build())
    with pytest.raises(ValueError, match="metadata.name"):
        upsert_node(cache, {"kind": "Node", "metadata": {}})
    assert cache.version == version and _available(cache, "n1") == {"pods": 110, "cpu": 4000}


def test_readers_never_see_half_an_update():
    cache = _cache(node("n1").cpu("100").build(), node("n2").cpu("100").build())
    for i in range(10):
        upsert_pod(cache, pod("ns", f"p{i}").on("n1").requests(cpu="1").build())
    moves, snapshots, bad = 2000, 0, []

    def mover():
        for i in range(moves):
            target = ("n1", "n2")[i % 2]
            upsert_pod(cache, pod("ns", f"p{i % 10}").on(target).requests(cpu="1").build())

    thread = threading.Thread(target=mover)
    thread.start()
    try:
        # Read for as long as the mover moves pods (a count, not a time span).
        while thread.is_alive() or snapshots == 0:
            snapshot = cache.snapshot()
            snapshots += 1
            used = (snapshot.allocatable - snapshot.available).sum(axis=0)
            if used[0] != 10 or used[1] != 10_000:
                bad.append(used.tolist())
    finally:
        thread.join()
    assert bad == [] and snapshots > 0
    assert cache.snapshot().version > 0


def test_a_pod_update_reuses_the_node_order_and_look_ups():
    # What keeps a snapshot cheap on a big cluster: a pod changes amounts only, so the next
    # snapshot copies the arrays but does not sort nodes again or rebuild its name tuples.
    # (The time itself is measured by benchmarks/snapshot_build.py, not asserted here.)
    cache = ClusterCache()
    for i in range(1000):
        upsert_node(cache, node(f"n{i}").cpu("32").memory("128Gi").gpu(8).zone(f"z{i % 3}").label("pool", f"p{i % 4}")
                          .build())
    first = cache.snapshot()
    for i in range(20):
        upsert_pod(cache, pod("ns", f"p{i}").on(f"n{i}").requests(cpu="1").build())
        snapshot = cache.snapshot()
        assert snapshot.version > first.version
        assert snapshot.available[snapshot.node_names.index(f"n{i}"), snapshot.column("cpu")] == 31_000
    # The same objects, not equal copies: a re-sort would build a new names tuple.
    for field in ("node_names", "hostnames", "classes", "resource_names"):
        assert getattr(snapshot, field) is getattr(first, field), f"{field} was rebuilt for a pod update"
    upsert_node(cache, node("n1000").cpu("32").build())  # a new node does change the order
    assert cache.snapshot().node_names is not first.node_names


# --- property: any history == a fresh cache of the final objects ------------------------

NODE_NAMES = [f"n{i}" for i in range(5)]
POD_NAMES = [f"p{i}" for i in range(6)]

node_op = st.tuples(
    st.just("node"),
    st.sampled_from(NODE_NAMES),
    st.sampled_from([None, "za", "zb", "zc"]),
    st.integers(1, 8),
    st.sampled_from(["gpu", "cpu"]),
    st.booleans(),
)
pod_op = st.tuples(
    st.just("pod"),
    st.sampled_from(POD_NAMES),
    st.sampled_from([None, *NODE_NAMES, "ghost"]),
    st.sampled_from(["Running", "Pending", "Succeeded", "Failed"]),
    st.integers(0, 3),
    st.booleans(),
)
delete_op = st.tuples(st.sampled_from(["del-node", "del-pod"]), st.sampled_from(NODE_NAMES + POD_NAMES))


def _node_obj(name, zone, cpu, pool, tainted):
    builder = node(name).cpu(cpu).label("pool", pool)
    if pool == "gpu":
        builder.gpu(cpu % 3)
    if zone:
        builder.zone(zone)
    if tainted:
        builder.taint("dedicated", pool)
    return builder.build()


def _pod_obj(name, node_name, phase, cpu, unschedulable):
    builder = pod("ns", name).label("app", "x")
    if unschedulable and node_name is None:
        builder.unschedulable()
    if node_name:
        builder.on(node_name)
    builder.requests(cpu=f"{cpu * 250}m", **({GPU: str(cpu % 2)} if cpu else {}))
    return builder.phase(phase).build() if node_name or not unschedulable else builder.build()


def _canonical(snapshot):
    resources = set(snapshot.resource_names)
    out = {}
    for i, name in enumerate(snapshot.node_names):
        alloc = dict(zip(snapshot.resource_names, snapshot.allocatable[i].tolist()))
        avail = dict(zip(snapshot.resource_names, snapshot.available[i].tolist()))
        out[name] = (
            {r: alloc[r] for r in sorted(resources) if alloc[r]},
            {r: avail[r] for r in sorted(resources) if avail[r]},
            snapshot.classes[snapshot.node_class[i]],
            snapshot.hostnames[i],
        )
    unschedulable = {ns: dict(pods) for ns, pods in snapshot.workloads.unschedulable.items()}
    return out, unschedulable


@settings(max_examples=200, deadline=None)
@given(ops=st.lists(st.one_of(node_op, pod_op, delete_op), max_size=40))
def test_any_history_gives_the_snapshot_of_its_final_objects(ops):
    cache, reference = ClusterCache(), ReferenceNodeTree()
    nodes, pods, zones = {}, {}, {}
    for op in ops:
        if op[0] == "node":
            obj = _node_obj(*op[1:])
            upsert_node(cache, obj)
            nodes[op[1]] = obj
            zone = zone_key(obj["metadata"]["labels"])
            if op[1] in zones and zones[op[1]] != zone:
                reference.remove(op[1], zones[op[1]])
            reference.add(op[1], zone)
            zones[op[1]] = zone
        elif op[0] == "pod":
            obj = _pod_obj(*op[1:])
            upsert_pod(cache, obj)
            pods[op[1]] = obj
        elif op[0] == "del-node":
            delete_node(cache, op[1])
            if nodes.pop(op[1], None) is not None:
                reference.remove(op[1], zones.pop(op[1]))
        else:
            delete_pod(cache, "ns", op[1])
            pods.pop(op[1], None)
    fresh = ClusterCache()
    for obj in nodes.values():
        upsert_node(fresh, obj)
    for obj in pods.values():
        upsert_pod(fresh, obj)
    incremental = cache.snapshot()
    assert list(incremental.node_names) == reference.list()
    assert _canonical(incremental) == _canonical(fresh.snapshot())
    assert cache.stats()["counted_pods"] == fresh.stats()["counted_pods"]
    assert cache.stats()["rows"] == fresh.stats()["rows"]
