"""Objects the API server accepts but that are hostile to our arithmetic or parsing.

A pod whose requests sum past int64 (two containers asking `ephemeral-storage: 8E` each),
huge label maps, unknown fields, missing optional fields: none of them may stall a
reflector, leak counts into a node's row, or change the numbers of any other object.
"""

from __future__ import annotations

import json
import threading

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from estimator.cluster.cache import ClusterCache
from estimator.cluster.watch import ReflectorOptions, TokenBucket
from estimator.cluster.watch.reflector import Reflector
from estimator.cluster.watch.specs import KIND_SPECS
from estimator.core.resources import MAX_INT64
from tests.cluster.test_watch import available, fake, wait_until, watch  # noqa: F401 - fixtures
from tests.support.cachemutators import delete_pod, upsert_node, upsert_pod
from tests.support.kubeobjects import node_object, pod_object

GI = 2**30


def hostile_pod(name: str, node: str = "n0", each: str = "8E", containers: int = 2) -> dict:
    pod = pod_object("shop", name, node=node)
    pod["spec"]["containers"] = [
        {"name": f"c{i}", "image": "registry.example/app:1",
         "resources": {"requests": {"cpu": "100m", "ephemeral-storage": each}}}
        for i in range(containers)
    ]
    return pod


# --- end to end, through the fake API server ---------------------------------------------


def test_a_pod_whose_requests_overflow_int64_does_not_stall_the_pod_stream(fake, watch):
    fake.load([node_object("n0"), node_object("n1"), pod_object("shop", "before", node="n1", cpu="1")])
    state = watch()
    assert wait_until(state.synced)
    fake.put(hostile_pod("greedy"))
    fake.put(pod_object("shop", "next", node="n1", cpu="2", memory="1Gi"))
    # The pod bound after the hostile one shows up: the stream was not stalled.
    assert wait_until(lambda: available(state, "n1")["cpu"] == 8000 - 1000 - 2000)
    pods = state.reflectors["Pod"]
    assert pods.lists == 1, "no relist loop"
    assert pods.saturated == 1 and "internal" not in pods.errors
    n0 = available(state, "n0")
    assert "ephemeral-storage" not in n0, "nothing else fits on its node"
    assert n0["cpu"] == 8000 - 200 and n0["pods"] == 109
    # Gone again: the node's row is exactly as if it had never been there.
    fake.delete("Pod", "greedy", "shop")
    assert wait_until(lambda: available(state, "n0").get("ephemeral-storage") == 100 * GI)
    assert available(state, "n0") == {"cpu": 8000, "memory": 32 * GI, "pods": 110, "ephemeral-storage": 100 * GI}


# --- the cache alone -----------------------------------------------------------------------


def test_saturated_node_sums_come_back_exactly_when_pods_leave():
    cache = ClusterCache()
    upsert_node(cache, node_object("n0"))
    big = [hostile_pod(f"big{i}", each="8E", containers=1) for i in range(3)]  # 8E fits; 2 x 8E does not
    for pod in big:
        upsert_pod(cache, pod)
    row = cache.snapshot()
    column = row.resource_names.index("ephemeral-storage")
    assert int(row.available[0, column]) == 0
    assert int(row.allocatable[0, column]) - 0 == 100 * GI
    for pod in big[1:]:
        delete_pod(cache, "shop", pod["metadata"]["name"])
    after = cache.snapshot()
    assert int(after.available[0, after.resource_names.index("ephemeral-storage")]) == 0  # 8E > 100Gi
    delete_pod(cache, "shop", "big0")
    final = cache.snapshot()
    assert int(final.available[0, final.resource_names.index("ephemeral-storage")]) == 100 * GI
    assert int(final.available[0, final.resource_names.index("cpu")]) == 8000


def test_a_refused_pod_changes_nothing():
    cache = ClusterCache()
    upsert_node(cache, node_object("n0"))
    upsert_pod(cache, pod_object("shop", "p", node="n0", cpu="1"))
    before = cache.snapshot()
    bad = pod_object("shop", "p", node="n0", cpu="3")
    bad["spec"]["containers"].append({"name": "x", "resources": {"requests": {"memory": "10Ei"}}})  # > int64
    with pytest.raises(ValueError, match="memory"):
        upsert_pod(cache, bad)
    after = cache.snapshot()
    assert after.version == before.version
    assert (after.available == before.available).all()


# --- property: nothing the API server accepts stalls a reflector or moves other numbers -------


class _Stream:
    def __init__(self, lines: list[bytes]):
        self._lines = lines

    def lines(self):
        yield from self._lines

    def abort(self) -> None:
        pass

    def close(self) -> None:
        pass


class ScriptedClient:
    """The KubeClient seam, serving one list and one watch stream from memory."""

    host = "scripted"

    def __init__(self, items: list[dict], events: list[dict]):
        self.items, self.events = items, events

    def list_page(self, kind, *, limit, continue_token="", field_selector="", timeout=60.0) -> bytes:
        return json.dumps({"metadata": {"resourceVersion": "10"}, "items": self.items}).encode()

    def watch(self, kind, *, resource_version, timeout_seconds, read_timeout, field_selector=""):
        return _Stream([json.dumps(event).encode() for event in self.events])

    def close(self) -> None:
        pass

    def fresh_connections(self) -> None:
        pass


RESOURCES = ("cpu", "memory", "ephemeral-storage", "nvidia.com/gpu", "hugepages-2Mi", "example.com/dongle")
QUANTITIES = st.one_of(
    st.integers(0, MAX_INT64).map(str),
    st.sampled_from(["8E", "9E", "7Ei", "9223372036854775807", "9223372036854775807m", "100Pi", "500m", "0",
                     "1e18", "8000P", "0.000001", "1n", "10E", "1Ei"]),
    st.integers(0, 999).map(lambda n: f"{n}m"),
)
RESOURCE_LIST = st.one_of(st.none(), st.dictionaries(st.sampled_from(RESOURCES), QUANTITIES, max_size=4))


def _unknown(draw) -> dict:
    return {f"zz{draw(st.integers(0, 9))}": draw(st.one_of(st.integers(), st.text(max_size=5), st.none(),
                                                           st.lists(st.integers(), max_size=3)))}


@st.composite
def accepted_pods(draw, index: int):
    """A pod the API server would store: valid names, non-negative quantities (no upper
    bound but the Quantity format's), any label map, fields we do not know, optional
    fields left out."""
    meta = {"name": f"h{index}", "uid": f"uid-h{index}", "resourceVersion": str(20 + index)}
    if draw(st.booleans()):
        meta["namespace"] = draw(st.sampled_from(["shop", "other"]))
    size = draw(st.sampled_from([0, 1, 50, 2000]))
    if size:
        meta["labels"] = {f"k{j}.example.com/key-{j}": "v" * 63 for j in range(size)}
    if draw(st.booleans()):
        meta.update(_unknown(draw))
    containers = []
    for i in range(draw(st.integers(0, 3))):
        container = {"name": f"c{i}"}
        resources = {}
        for part in ("requests", "limits"):
            amounts = draw(RESOURCE_LIST)
            if amounts is not None:
                resources[part] = amounts
        if resources or draw(st.booleans()):
            container["resources"] = resources
        if draw(st.booleans()):
            container.update(_unknown(draw))
        containers.append(container)
    spec = {"containers": containers}
    if draw(st.booleans()):
        spec["initContainers"] = [{"name": "init", "restartPolicy": draw(st.sampled_from(["Always", None])),
                                   "resources": {"requests": draw(RESOURCE_LIST) or {}}}]
    if draw(st.booleans()):
        spec["overhead"] = draw(RESOURCE_LIST) or {}
    node = draw(st.sampled_from(["n0", "ghost", None]))
    if node:
        spec["nodeName"] = node
    if draw(st.booleans()):
        spec.update(_unknown(draw))
    pod = {"kind": "Pod", "apiVersion": "v1", "metadata": meta, "spec": spec}
    phase = draw(st.sampled_from(["Running", "Pending", "", None, "missing"]))
    if phase != "missing":
        pod["status"] = {"phase": phase} if phase is not None else {}
    if draw(st.booleans()):
        pod.update(_unknown(draw))
    return pod


def _view(snapshot, node: str) -> dict:
    i = snapshot.node_position(node)
    return {r: int(v) for r, v in zip(snapshot.resource_names, snapshot.available[i]) if v}


N1 = {"cpu": 8000, "memory": 32 * GI, "pods": 110, "ephemeral-storage": 100 * GI}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.integers(1, 4).flatmap(lambda n: st.tuples(*[accepted_pods(i) for i in range(n)])), st.booleans())
def test_no_accepted_pod_stalls_the_reflector_or_moves_other_numbers(hostile, in_list):
    cache = ClusterCache()
    upsert_node(cache, node_object("n0"))
    upsert_node(cache, node_object("n1"))
    benign = pod_object("shop", "benign", node="n0", cpu="500m", memory="1Gi")
    sentinel = pod_object("shop", "sentinel", node="n1", cpu="2", memory="1Gi")
    items = [benign] + (list(hostile) if in_list else [])
    events = [] if in_list else [{"type": "ADDED", "object": pod} for pod in hostile]
    events += [{"type": "MODIFIED", "object": pod} for pod in hostile]
    events.append({"type": "ADDED", "object": sentinel})
    events += [{"type": "DELETED", "object": pod} for pod in hostile]
    spec = next(s for s in KIND_SPECS if s.kind == "Pod")
    reflector = Reflector(spec, ScriptedClient(items, events), cache, TokenBucket(0, 1), threading.Event(),
                          ReflectorOptions(min_watch_seconds=0))
    reflector._list()
    # n1 is nobody's node but the sentinel's: hostile pods elsewhere leave it alone.
    assert _view(cache.snapshot(), "n1") == N1
    assert reflector._watch()
    # The sentinel, after every hostile event, was applied; once the hostile pods are gone
    # both nodes hold exactly the benign numbers (no leaked counts).
    final = cache.snapshot()
    assert _view(final, "n1") == {**N1, "cpu": 6000, "memory": 31 * GI, "pods": 109}
    assert _view(final, "n0") == {**N1, "cpu": 7500, "memory": 31 * GI, "pods": 109}
    assert final.node_names == ("n0", "n1"), "a pod on an unknown node leaves no row once deleted"
    assert reflector.lists == 1 and not reflector.errors


@st.composite
def accepted_nodes(draw, index: int):
    """A node the API server would store: any allocatable amounts its quantities allow,
    any label map and taints, unknown fields, optional fields left out."""
    node = {"kind": "Node", "apiVersion": "v1", "metadata": {"name": f"h{index}", "resourceVersion": str(20 + index)}}
    size = draw(st.sampled_from([0, 1, 2000]))
    if size:
        node["metadata"]["labels"] = {f"k{j}.example.com/key-{j}": "v" * 63 for j in range(size)}
    if draw(st.booleans()):
        node["spec"] = {"taints": [{"key": "k", "effect": "NoSchedule"}], **_unknown(draw)}
    allocatable = draw(RESOURCE_LIST)
    if allocatable is not None:
        node["status"] = {"allocatable": allocatable, **_unknown(draw)}
    if draw(st.booleans()):
        node.update(_unknown(draw))
    return node


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(st.integers(1, 3).flatmap(lambda n: st.tuples(*[accepted_nodes(i) for i in range(n)])))
def test_no_accepted_node_stalls_the_reflector_or_moves_other_numbers(hostile):
    cache = ClusterCache()
    benign = [node_object("n0"), node_object("n1")]
    upsert_pod(cache, pod_object("shop", "on-n1", node="n1", cpu="1", memory="1Gi"))
    events = [{"type": "MODIFIED", "object": node} for node in hostile]
    events.append({"type": "ADDED", "object": node_object("n2")})  # after every hostile event
    events += [{"type": "DELETED", "object": node} for node in hostile]
    spec = next(s for s in KIND_SPECS if s.kind == "Node")
    reflector = Reflector(spec, ScriptedClient(benign + list(hostile), events), cache, TokenBucket(0, 1),
                          threading.Event(), ReflectorOptions(min_watch_seconds=0))
    reflector._list()
    assert _view(cache.snapshot(), "n1") == {**N1, "cpu": 7000, "memory": 31 * GI, "pods": 109}
    assert reflector._watch()
    final = cache.snapshot()
    assert final.node_names == ("n0", "n1", "n2")
    assert _view(final, "n0") == N1 and _view(final, "n2") == N1
    assert _view(final, "n1") == {**N1, "cpu": 7000, "memory": 31 * GI, "pods": 109}
    assert reflector.lists == 1 and not reflector.errors
