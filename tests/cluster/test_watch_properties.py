"""Property: whatever the API server does and whatever faults hit the connection, once things
are quiet the watched cache equals a cache rebuilt from the server's final objects.

Hypothesis plays random sequences of object changes (every kind) interleaved with faults
(dropped streams, mid-event cuts, compaction, restarts with and without history, slow and
failing responses, expired continue tokens) against tests/support/fakekube.FakeKube while the real
list/watch loop runs. Nothing lost, nothing extra: node order, per-node amounts, classes,
quotas, workload records and GetUnschedulableReplicas answers, and every kind's key set.

Karmada's node order follows the order in which nodes and zones were *observed*; a relist
cannot reconstruct that for nodes that were re-created or re-zoned while nobody watched, nor
can a fresh cache know that a zone was first seen through a node deleted since. So the
generator keeps the order well defined: node names only ever grow (n000, n001, ...), a node
keeps its zone, and one anchor node per zone, created first, is never deleted (zone order is
then fixed, and within a zone creation order == key order == list order). Zone churn itself
is covered by the cache's order oracle in test_cache.py.
"""

from __future__ import annotations

import os
import tempfile
import time

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from estimator.cluster.watch import ReflectorOptions, WatchClusterState
from tests.support.fakekube import FakeKube
from tests.support.kubeobjects import deployment_object, node_object, pod_object, quota_object, reference_cache, replicaset_object, state_view

ZONES = ("za", "zb", "zc")
NAMESPACES = ("ns1", "ns2")
OLD = "2024-01-01T00:00:00Z"
KINDS = ("Node", "Pod", "ResourceQuota", "ReplicaSet", "Deployment")

small = st.integers(0, 1_000)
OPS = st.one_of(
    st.tuples(st.just("node+"), st.sampled_from(ZONES), st.integers(1, 16), st.integers(0, 2)),
    st.tuples(st.just("node~"), small, st.integers(1, 16), st.booleans(), st.booleans()),
    st.tuples(st.just("node-"), small),
    st.tuples(st.just("pod+"), st.sampled_from(NAMESPACES), small, st.sampled_from(["bound", "unbound", "stuck",
                                                                                      "elsewhere"]),
              st.sampled_from(["100m", "500m", "2"])),
    st.tuples(st.just("pod~"), small, st.sampled_from(["Running", "Pending", "Succeeded", "Failed"])),
    st.tuples(st.just("pod-"), small),
    st.tuples(st.just("quota"), st.sampled_from(NAMESPACES), st.integers(0, 2), st.integers(0, 20)),
    st.tuples(st.just("quota-"), st.sampled_from(NAMESPACES), st.integers(0, 2)),
    st.tuples(st.just("deploy"), st.sampled_from(NAMESPACES), st.integers(0, 2), st.sampled_from(["100m", "1"])),
    st.tuples(st.just("deploy-"), st.sampled_from(NAMESPACES), st.integers(0, 2)),
    st.tuples(st.just("rs"), st.sampled_from(NAMESPACES), st.integers(0, 2), st.sampled_from(["100m", "1"])),
    st.tuples(st.just("rs-"), st.sampled_from(NAMESPACES), st.integers(0, 2)),
    # faults
    st.tuples(st.just("drop"), st.booleans()),
    st.tuples(st.just("compact"), st.integers(0, 5)),
    st.tuples(st.just("restart"), st.booleans(), st.sampled_from([0.0, 0.05, 0.2])),
    st.tuples(st.just("slow"), st.sampled_from([0.0, 0.01, 0.03])),
    st.tuples(st.just("fail"), st.integers(1, 3), st.sampled_from([500, 503, 429])),
    st.tuples(st.just("expire-continue"),),
    st.tuples(st.just("pause"), st.sampled_from([0.0, 0.02, 0.1])),
)


class Driver:
    """Turns generated op tuples into changes on the fake, choosing targets among live objects."""

    def __init__(self, fake: FakeKube):
        self.fake = fake
        self.next_node = 0
        self.zones: dict[str, str] = {}  # live node -> its (fixed) zone
        for zone in ZONES:  # anchors: never deleted, so zones keep their first-seen order
            self.add_node(zone, 4, 0)
        self.anchors = set(self.zones)
        self.pods: dict[tuple[str, str], dict] = {}
        self.next_pod = 0

    def add_node(self, zone: str, cpu: int, gpu: int) -> None:
        name = f"n{self.next_node:03d}"
        self.next_node += 1
        self.zones[name] = zone
        self.fake.put(node_object(name, cpu=str(cpu), gpu=gpu, zone=zone))

    def _pick(self, items, index):
        items = sorted(items)
        return items[index % len(items)] if items else None

    def apply(self, op: tuple) -> None:
        fake, kind = self.fake, op[0]
        if kind == "node+":
            self.add_node(*op[1:])
        elif kind == "node~":
            name = self._pick(self.zones, op[1])
            if name:
                taints = [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}] if op[3] else None
                fake.put(node_object(name, cpu=str(op[2]), zone=self.zones[name], taints=taints,
                                     unschedulable=op[4], labels={"pool": "gpu" if op[3] else "cpu"}))
        elif kind == "node-":
            name = self._pick(set(self.zones) - self.anchors, op[1])
            if name:
                del self.zones[name]
                fake.delete("Node", name)
        elif kind == "pod+":
            _, namespace, index, where, cpu = op
            name = f"pod{self.next_pod}"
            self.next_pod += 1
            node = self._pick(self.zones, index) if where == "bound" else ("gone-node" if where == "elsewhere" else None)
            labels = {"app": f"app{index % 3}", "pod-template-hash": "h1"}
            owner = {"name": f"app{index % 3}-h1", "uid": f"{namespace}-rs{index % 3}"}
            obj = pod_object(namespace, name, node=node, cpu=cpu, labels=labels, owner=owner,
                             phase="Running" if node else "Pending",
                             unschedulable_since=OLD if where == "stuck" else None)
            self.pods[(namespace, name)] = obj
            fake.put(obj)
        elif kind == "pod~":
            key = self._pick(self.pods, op[1])
            if key:
                obj = self.pods[key]
                obj["status"]["phase"] = op[2]
                obj["metadata"].pop("resourceVersion", None)
                fake.put(obj)
        elif kind == "pod-":
            key = self._pick(self.pods, op[1])
            if key:
                del self.pods[key]
                fake.delete("Pod", key[1], key[0])
        elif kind == "quota":
            _, namespace, index, used = op
            fake.put(quota_object(namespace, f"q{index}", {"requests.cpu": "20", "pods": "30"},
                                  {"requests.cpu": str(used), "pods": str(used)}))
        elif kind == "quota-":
            fake.delete("ResourceQuota", f"q{op[2]}", op[1])
        elif kind == "deploy":
            _, namespace, index, cpu = op
            fake.put(deployment_object(namespace, f"app{index}", f"{namespace}-d{index}", {"app": f"app{index}"}, cpu))
        elif kind == "deploy-":
            fake.delete("Deployment", f"app{op[2]}", op[1])
        elif kind == "rs":
            _, namespace, index, cpu = op
            owner = deployment_object(namespace, f"app{index}", f"{namespace}-d{index}", {"app": f"app{index}"})
            fake.put(replicaset_object(namespace, f"app{index}-h1", f"{namespace}-rs{index}", owner,
                                       template_hash="h1", cpu=cpu))
        elif kind == "rs-":
            fake.delete("ReplicaSet", f"app{op[2]}-h1", op[1])
        elif kind == "drop":
            fake.drop_watches(mid_event=op[1])
        elif kind == "compact":
            fake.compact(keep=op[1])
        elif kind == "restart":
            _, compact, down_for = op
            fake.go_down()
            time.sleep(down_for)
            fake.come_up(compact=compact)
        elif kind == "slow":
            fake.delay = op[1]
        elif kind == "fail":
            fake.fail_next(op[1], status=op[2])
        elif kind == "expire-continue":
            fake.expire_continue(1)
        elif kind == "pause":
            time.sleep(op[1])
        else:  # pragma: no cover - the strategy and the driver disagree
            raise AssertionError(op)


def _converged(state: WatchClusterState, fake: FakeKube) -> bool:
    if not state.synced():
        return False
    expected = reference_cache(fake)
    return (state_view(state.cache.snapshot()) == state_view(expected.snapshot())
            and all(state.cache.keys(kind) == expected.keys(kind) for kind in KINDS))


# WATCH_PROPERTY_EXAMPLES=500 for a longer hunt; 25 keeps `make test` quick.
@settings(max_examples=int(os.environ.get("WATCH_PROPERTY_EXAMPLES", 25)), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(initial_nodes=st.integers(0, 6), initial_pods=st.integers(0, 12), ops=st.lists(OPS, max_size=40))
def test_once_quiet_the_cache_equals_a_cache_rebuilt_from_the_servers_objects(initial_nodes, initial_pods, ops):
    with FakeKube(bookmark_interval=0.05) as fake, tempfile.TemporaryDirectory() as directory:
        driver = Driver(fake)
        for i in range(initial_nodes):
            driver.add_node(ZONES[i % len(ZONES)], 8, i % 2)
        for i in range(initial_pods):
            driver.apply(("pod+", NAMESPACES[i % 2], i, "bound" if i % 4 else "stuck", "100m"))
        options = ReflectorOptions(page_size=2, min_watch_timeout=2.0, read_timeout_margin=2.0, min_watch_seconds=0.05,
                                   backoff_initial=0.005, backoff_cap=0.05, list_timeout=2.0)
        state = WatchClusterState(kubeconfig=str(fake.kubeconfig(directory)), qps=0, options=options)
        state.start()
        try:
            for op in ops:
                driver.apply(op)
            fake.delay = 0.0
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline and not _converged(state, fake):
                time.sleep(0.02)
            assert state.health()[0], state.health()
            assert state.synced(), state.describe()
            expected = reference_cache(fake)
            assert state_view(state.cache.snapshot()) == state_view(expected.snapshot())
            for kind in KINDS:
                assert state.cache.keys(kind) == expected.keys(kind), kind
            # What estimates get: the published snapshot catches up within its 20 ms lag.
            time.sleep(state.snapshot_max_lag * 1.5)
            assert state_view(state.snapshot()) == state_view(expected.snapshot())
        finally:
            state.stop()
