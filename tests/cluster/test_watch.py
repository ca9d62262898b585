"""List/watch against a fake API server over real HTTP, through the real watch client (kubeclient).

Each test starts tests/support/fakekube.FakeKube on loopback, writes a kubeconfig for it, and runs
estimator.cluster.watch.WatchClusterState with short timeouts and backoffs. "Converged" means the
watched cache shows estimates exactly what a fresh cache fed the fake's final objects shows.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.request

import pytest

from estimator.cli.main import cluster_state
from estimator.cli.options import build_parser
from estimator.cluster.cache import ClusterCache
from estimator.cluster.watch import KubeConfigError, ReflectorOptions, WatchClusterState
from estimator.core.errors import StateLoadError
from tests.support.fakekube import FakeKube
from tests.support.kubeobjects import deployment_object, node_object, pod_object, quota_object, reference_cache, replicaset_object, state_view

FAST = dict(page_size=3, min_watch_timeout=5.0, read_timeout_margin=5.0, min_watch_seconds=0.2,
            backoff_initial=0.02, backoff_cap=0.2, list_timeout=5.0)
OLD = "2024-01-01T00:00:00Z"


@pytest.fixture
def fake():
    server = FakeKube(bookmark_interval=0.2).start()
    yield server
    server.stop()


@pytest.fixture
def watch(fake, tmp_path):
    states = []

    def make(qps: float = 0, burst: int = 1, cache: ClusterCache | None = None, start: bool = True, **options):
        state = WatchClusterState(kubeconfig=str(fake.kubeconfig(tmp_path)), qps=qps, burst=burst, cache=cache,
                                  options=ReflectorOptions(**{**FAST, **options}))
        states.append(state)
        if start:
            state.start()
        return state

    yield make
    for state in states:
        state.stop()


def wait_until(predicate, timeout: float = 10.0, interval: float = 0.01) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return predicate()


def assert_converges(state: WatchClusterState, fake: FakeKube, timeout: float = 10.0) -> None:
    expected = lambda: state_view(reference_cache(fake).snapshot())  # noqa: E731
    wait_until(lambda: state.synced() and state_view(state.cache.snapshot()) == expected(), timeout)
    assert state.synced()
    assert state_view(state.cache.snapshot()) == expected()


def small_cluster(fake: FakeKube, nodes: int = 5, pods: int = 12) -> None:
    deployment = deployment_object("shop", "web", "uid-web", {"app": "web"})
    objects = [node_object(f"n{i}", zone=f"z{i % 2}", gpu=i % 2) for i in range(nodes)]
    objects += [pod_object("shop", f"p{i}", node=f"n{i % nodes}", cpu="250m") for i in range(pods)]
    objects += [
        quota_object("shop", "q", {"requests.cpu": "10", "pods": "50"}, {"requests.cpu": "3", "pods": "12"}),
        deployment,
        replicaset_object("shop", "web-abc123", "uid-rs", deployment),
        pod_object("shop", "web-abc123-x", labels={"app": "web", "pod-template-hash": "abc123"},
                   owner={"name": "web-abc123", "uid": "uid-rs"}, unschedulable_since=OLD, phase="Pending"),
    ]
    fake.load(objects)


def available(state: WatchClusterState, node: str) -> dict:
    snapshot = state.cache.snapshot()
    i = snapshot.node_position(node)
    return {r: int(v) for r, v in zip(snapshot.resource_names, snapshot.available[i]) if v}


# --- sync ---------------------------------------------------------------------------------


def test_the_initial_paginated_sync_equals_the_fake_objects(fake, watch):
    small_cluster(fake)
    state = watch()
    assert_converges(state, fake)
    view = state_view(state.cache.snapshot())
    assert len(view["node_order"]) == 5 and view["unschedulable_answers"] == {("shop", "web"): 1}
    assert fake.requests[("Pod", "continue")] >= 4, "13 pods in pages of 3 take several continue requests"
    assert fake.requests[("Node", "continue")] >= 1
    assert all(r.lists == 1 for r in state.reflectors.values())
    assert state.snapshot() is not None
    # Bookmarks count as contact: every kind hears from the server again after the sync.
    synced_at = time.monotonic()
    assert wait_until(lambda: min(r.last_ok for r in state.reflectors.values()) > synced_at)
    assert state.staleness_seconds() < time.monotonic() - synced_at


def test_not_synced_until_every_kind_has_listed_once(fake, watch):
    small_cluster(fake)
    fake.hold_lists(["Deployment"])
    state = watch()
    assert wait_until(lambda: all(r.status == "watching" for k, r in state.reflectors.items() if k != "Deployment"))
    assert not state.synced() and state.snapshot() is None
    assert "Deployment not synced" in state.describe()
    fake.release_lists()
    assert_converges(state, fake)


def test_a_list_that_filters_everything_out_still_follows_the_continue_token(fake, watch):
    fake.load([pod_object("a", f"done{i}", node="n0", phase="Succeeded") for i in range(7)]
              + [pod_object("z", "running", node="n0"), node_object("n0")])
    state = watch()
    assert_converges(state, fake)
    assert state.cache.stats()["counted_pods"] == 1


# --- incremental events -------------------------------------------------------------------


def test_incremental_events_of_every_kind_are_applied(fake, watch):
    small_cluster(fake)
    state = watch()
    assert_converges(state, fake)
    steps = [
        lambda: fake.put(node_object("n9", zone="z0", cpu="16")),  # a new node
        lambda: fake.put(node_object("n1", zone="z1", cpu="4", gpu=1)),  # allocatable shrinks
        lambda: fake.put(node_object("n2", zone="z0", taints=[{"key": "k", "effect": "NoSchedule"}])),
        lambda: fake.delete("Node", "n3"),  # its pods' row lives on, uncounted in the snapshot
        lambda: fake.put(pod_object("shop", "new", node="n9", cpu="2")),
        lambda: fake.put(pod_object("shop", "p0", node="n0", cpu="1")),  # resized
        lambda: fake.delete("Pod", "p1", "shop"),
        lambda: fake.put(quota_object("shop", "q", {"requests.cpu": "10", "pods": "50"}, {"requests.cpu": "5"})),
        lambda: fake.put(quota_object("other", "q2", {"pods": "3"})),
        lambda: fake.delete("ResourceQuota", "q", "shop"),
        lambda: fake.put(pod_object("shop", "web-abc123-y", labels={"app": "web", "pod-template-hash": "abc123"},
                                    owner={"name": "web-abc123", "uid": "uid-rs"}, unschedulable_since=OLD,
                                    phase="Pending")),
        lambda: fake.delete("ReplicaSet", "web-abc123", "shop"),
        lambda: fake.delete("Deployment", "web", "shop"),
    ]
    for step in steps:
        step()
        assert_converges(state, fake, timeout=5)
    assert available(state, "n9") == {"pods": 109, "cpu": 14000, "memory": 32 * 2**30 - 128 * 2**20,
                                      "ephemeral-storage": 100 * 2**30}
    assert all(r.lists == 1 for r in state.reflectors.values()), "events, not relists, did this"


def test_a_pod_leaving_the_field_selector_arrives_as_deleted_and_frees_its_node(fake, watch):
    fake.load([node_object("n0", cpu="4"), pod_object("ns", "job", node="n0", cpu="3")])
    state = watch()
    assert_converges(state, fake)
    assert available(state, "n0")["cpu"] == 1000
    fake.put(pod_object("ns", "job", node="n0", cpu="3", phase="Succeeded"))
    assert wait_until(lambda: available(state, "n0")["cpu"] == 4000)
    assert state.cache.keys("Pod") == set()
    assert fake.get("Pod", "job", "ns") is not None, "the pod still exists; only the selector dropped it"
    assert state.reflectors["Pod"].spec.field_selector == "status.phase!=Succeeded,status.phase!=Failed"


def test_the_fake_sends_deleted_when_a_pod_leaves_the_selector(fake):
    """Fidelity of the double itself: a filtered watch sees the phase change as DELETED."""
    fake.load([pod_object("ns", "job", node="n0")])
    rv = fake.resource_version
    fake.put(pod_object("ns", "job", node="n0", phase="Failed"))
    url = (f"{fake.url}/api/v1/pods?watch=true&resourceVersion={rv}&timeoutSeconds=1"
           "&fieldSelector=status.phase%21%3DSucceeded%2Cstatus.phase%21%3DFailed")
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {fake.token}"})
    with urllib.request.urlopen(request, timeout=5) as response:
        events = [json.loads(line) for line in response.read().splitlines() if line]
    assert [e["type"] for e in events if e["type"] != "BOOKMARK"] == ["DELETED"]
    assert events[0]["object"]["status"]["phase"] == "Failed"


# --- rate limiting and configuration ----------------------------------------------------------


def test_requests_are_paced_by_qps_and_burst(fake, watch):
    fake.load([node_object(f"n{i}") for i in range(6)])
    # 6 node pages of 1 + 4 other lists + 5 watches = 15 requests through one bucket (burst 1,
    # 20 qps). Its clock is frozen and waits are recorded, not slept, so the pacing is exact:
    # the k-th request waits (k - 1) / 20 s.
    token_waits: list[float] = []

    def recorded_wait(stop: threading.Event, seconds: float) -> bool:
        token_waits.append(seconds)
        return stop.is_set()

    state = watch(qps=20, burst=1, page_size=1, start=False, wait=recorded_wait)
    state.limiter._clock = lambda: 0.0
    state.limiter._last = 0.0
    state.start()
    assert wait_until(lambda: all(r.status == "watching" for r in state.reflectors.values()))
    assert len(token_waits) >= 14
    assert sorted(token_waits) == pytest.approx([k / 20 for k in range(1, len(token_waits) + 1)])


def test_master_alone_talks_to_that_url_without_credentials(tmp_path):
    with FakeKube(token=None, bookmark_interval=0.2) as fake:
        fake.load([node_object("n0")])
        state = WatchClusterState(master=fake.url, qps=0, options=ReflectorOptions(**FAST))
        state.start()
        try:
            assert wait_until(state.synced)
            assert state.cache.snapshot().node_names == ("n0",)
        finally:
            state.stop()


def test_master_overrides_the_kubeconfig_server(fake, tmp_path):
    fake.load([node_object("n0")])
    config = json.loads(fake.kubeconfig(tmp_path).read_text())
    config["clusters"][0]["cluster"]["server"] = "http://127.0.0.1:9"  # nothing listens there
    path = tmp_path / "elsewhere.kubeconfig"
    path.write_text(json.dumps(config))
    state = WatchClusterState(kubeconfig=str(path), master=fake.url, qps=0, options=ReflectorOptions(**FAST))
    state.start()
    try:
        assert wait_until(state.synced), "kubeconfig credentials, --master address"
    finally:
        state.stop()


def test_a_wrong_token_is_refused_and_retried(fake, tmp_path):
    config = json.loads(fake.kubeconfig(tmp_path).read_text())
    config["users"][0]["user"]["token"] = "wrong"
    path = tmp_path / "wrong.kubeconfig"
    path.write_text(json.dumps(config))
    state = WatchClusterState(kubeconfig=str(path), qps=0, options=ReflectorOptions(**FAST))
    state.start()
    try:
        assert wait_until(lambda: state.reflectors["Node"].errors.get("http-401", 0) >= 2)
        assert not state.synced() and state.health()[0]
    finally:
        state.stop()


def test_configuration_errors_name_the_problem(tmp_path, monkeypatch):
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    with pytest.raises(KubeConfigError, match="not running in a pod"):
        WatchClusterState()
    with pytest.raises(KubeConfigError, match="missing.kubeconfig"):
        WatchClusterState(kubeconfig=str(tmp_path / "missing.kubeconfig"))


def test_the_cli_builds_a_watch_state_from_its_flags(fake, tmp_path):
    parser = build_parser()
    path = str(fake.kubeconfig(tmp_path))
    args = parser.parse_args(["--cluster-name", "m", "--kubeconfig", path, "--kube-api-qps", "7",
                              "--kube-api-burst", "9"])
    state = cluster_state(parser, args)
    assert isinstance(state, WatchClusterState)
    assert (state.limiter.qps, state.limiter.burst) == (7.0, 9)
    assert state.client.host == fake.url
    bad = parser.parse_args(["--cluster-name", "m", "--kubeconfig", str(tmp_path / "nope")])
    with pytest.raises(StateLoadError, match="nope"):
        cluster_state(parser, bad)


def test_stop_aborts_open_watches_and_ends_every_thread(fake, watch):
    small_cluster(fake)
    state = watch(min_watch_timeout=30.0)
    assert wait_until(lambda: all(r.status == "watching" for r in state.reflectors.values()))
    fake.pause_watches()  # silent streams: nothing wakes a reader but stop() aborting it
    state.stop()  # joins for at most 5 s, while each watch would last 30-45 s
    assert not any(r.alive() for r in state.reflectors.values())


def test_a_dead_watch_loop_fails_health(fake, watch):
    class Crash(BaseException):
        pass

    class CrashingCache(ClusterCache):
        """Fault injection: a bug that escapes the loop's error handling."""

        def apply(self, kind, record):
            if kind == "ResourceQuota" and record.name == "boom":
                raise Crash("injected")
            super().apply(kind, record)

    small_cluster(fake)
    state = watch(cache=CrashingCache())
    assert wait_until(state.synced) and state.health()[0]
    fake.put(quota_object("shop", "boom", {"pods": "1"}))
    assert wait_until(lambda: not state.health()[0])
    ok, detail = state.health()
    assert "ResourceQuota" in detail and "Crash" in detail


FRAMINGS = [
    ("one chunk per event", dict(chunking="event")),
    ("events split over chunks with extensions", dict(chunking="split")),
    ("many events per chunk", dict(chunking="coalesced")),
    ("chunk framing trickling in 7-byte writes", dict(chunking="split", trickle=True)),
    ("a close-delimited body without chunked encoding", dict(chunked=False)),
]


@pytest.mark.parametrize("framing", [f[1] for f in FRAMINGS], ids=[f[0] for f in FRAMINGS])
def test_every_watch_body_framing_is_decoded(fake, watch, framing):
    for name, value in framing.items():
        setattr(fake, name, value)
    small_cluster(fake)
    state = watch()
    assert_converges(state, fake)
    for round_ in range(3):
        fake.put_many([pod_object("shop", f"f{round_}-{i}", node=f"n{i % 5}", cpu="50m") for i in range(6)])
        fake.delete("Pod", f"p{round_}", "shop")
        fake.put(quota_object("shop", "q", {"pods": "50"}, {"pods": str(round_)}))
        assert_converges(state, fake)
        watches = fake.requests[("Pod", "watch")]
        fake.drop_watches(mid_event=round_ == 1)
        assert wait_until(lambda: fake.requests[("Pod", "watch")] > watches)
    assert_converges(state, fake)
    assert all(r.lists == 1 for r in state.reflectors.values()), "decoded and resumed, never relisted"
