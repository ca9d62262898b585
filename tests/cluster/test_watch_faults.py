"""The live cache under API server faults: 410 Gone and relists, expired continue tokens,
dropped streams, outages, slow and failing responses, bad objects, reload."""

from __future__ import annotations

import logging
import threading

import pytest

from estimator.cli.options import build_parser
from tests.support.kubeobjects import node_object, pod_object, reference_cache, state_view
from tests.cluster.test_watch import assert_converges, available, fake, small_cluster, wait_until, watch  # noqa: F401 - fixtures


# --- faults ---------------------------------------------------------------------------------


@pytest.mark.parametrize("gone_as_event", [True, False], ids=["410 as an ERROR event", "410 as an HTTP status"])
def test_410_gone_relists_and_removes_objects_deleted_meanwhile(fake, watch, gone_as_event):
    fake.gone_as_event = gone_as_event
    small_cluster(fake, nodes=6, pods=15)
    state = watch()
    assert_converges(state, fake)
    fake.go_down()
    for i in range(0, 15, 2):
        fake.delete("Pod", f"p{i}", "shop")
    fake.delete("Node", "n5")
    fake.delete("ResourceQuota", "q", "shop")
    fake.delete("ReplicaSet", "web-abc123", "shop")
    fake.put(pod_object("shop", "born-while-away", node="n0"))
    fake.come_up(compact=True)  # the history those deletions were in is gone
    assert_converges(state, fake)
    stats = state.stats()
    assert stats["Pod"]["relists_gone"] >= 1 and stats["Pod"]["deleted_by_relist"] == 8
    assert stats["Node"]["deleted_by_relist"] == 1 and stats["ResourceQuota"]["deleted_by_relist"] == 1
    assert stats["ReplicaSet"]["deleted_by_relist"] == 1
    assert stats["Deployment"]["deleted_by_relist"] == 0
    assert state.cache.keys("ResourceQuota") == set()


def test_a_watcher_overtaken_by_compaction_gets_410_and_relists(fake, watch):
    small_cluster(fake)
    state = watch()
    assert_converges(state, fake)
    fake.drop_watches()
    fake.go_down()
    for i in range(12):
        fake.delete("Pod", f"p{i}", "shop")
    fake.compact(keep=3)
    fake.come_up()
    assert_converges(state, fake)
    assert state.stats()["Pod"]["relists_gone"] >= 1


def test_an_expired_continue_token_restarts_the_list_in_one_request(fake, watch):
    small_cluster(fake, pods=20)
    fake.expire_continue(1)
    state = watch()
    assert_converges(state, fake)
    restarted = [r for r in state.reflectors.values() if r.errors.get("continue-expired")]
    assert len(restarted) == 1 and restarted[0].lists == 1
    kind = restarted[0].kind
    limits = [limit for k, limit in fake.list_limits if k == kind]
    assert limits[-1] == 0, f"after the 410 one full list, not pages again: {limits}"
    assert limits.count(0) == 1


def test_an_expired_continue_token_during_a_relist_keeps_the_old_state_until_it_is_complete(fake, watch):
    small_cluster(fake, pods=20)
    state = watch()
    assert wait_until(state.synced)
    fake.pause_watches()
    fake.delete("Pod", "p3", "shop")
    fake.expire_continue(1)
    state.reload()
    assert_converges(state, fake)
    assert state.reflectors["Pod"].errors.get("continue-expired") or any(
        r.errors.get("continue-expired") for r in state.reflectors.values())


def test_the_max_staleness_flag_is_a_duration(tmp_path):
    args = build_parser().parse_args(["--cluster-name", "m", "--kubeconfig", "k", "--max-staleness", "2m"])
    assert args.max_staleness == 120.0
    assert build_parser().parse_args(["--cluster-name", "m"]).max_staleness == 0.0


def test_continued_pages_come_from_the_first_pages_snapshot(fake, watch):
    """A change between pages shows up in the watch, not in the list (consistent list).

    The change is made right after the first pod page is served, and watches are paused, so
    the cache holds exactly what the list returned: the pods as of the first page's
    resourceVersion. A list whose later pages showed the newer state would lack p19 and
    hold p99-late here (the end state alone cannot tell: the watch would repair it)."""
    small_cluster(fake, pods=20)
    at_first_page = state_view(reference_cache(fake).snapshot())
    list_rv = fake.resource_version
    serve, changed = fake.list_page, threading.Event()

    def change_after_the_first_pod_page(kind, limit, token, selector):
        page = serve(kind, limit, token, selector)
        if kind == "Pod" and not token and not changed.is_set():
            changed.set()
            fake.delete("Pod", "p19", "shop")  # sorts after the first page
            fake.put(pod_object("shop", "p99-late", node="n2", cpu="3"))
            fake.put(pod_object("shop", "p0", node="n1", cpu="2"))
        return page

    fake.list_page = change_after_the_first_pod_page
    fake.pause_watches()
    state = watch()
    assert wait_until(state.synced)
    assert changed.is_set() and fake.requests[("Pod", "continue")] >= 6, "20+ pods in pages of 3"
    assert state_view(state.cache.snapshot()) == at_first_page
    assert ("shop", "p99-late") not in state.cache.keys("Pod") and ("shop", "p19") in state.cache.keys("Pod")
    assert state.reflectors["Pod"].resource_version == str(list_rv)
    fake.resume_watches()
    assert_converges(state, fake)
    assert ("Pod", str(list_rv)) in fake.watch_rvs, "the watch starts from the list's resourceVersion"
    assert state.reflectors["Pod"].lists == 1, "the watch, not a relist, brought the changes"


@pytest.mark.parametrize("mid_event", [False, True], ids=["between events", "in the middle of an event"])
def test_dropped_streams_resume_from_the_last_resource_version_without_loss(fake, watch, mid_event):
    small_cluster(fake)
    state = watch()
    assert_converges(state, fake)
    for round_ in range(5):
        for i in range(4):
            fake.put(pod_object("shop", f"r{round_}-{i}", node=f"n{i}", cpu="100m"))
        fake.delete("Pod", f"p{round_}", "shop")
        watches = fake.requests[("Pod", "watch")]
        fake.drop_watches(mid_event=mid_event)
        assert wait_until(lambda: fake.requests[("Pod", "watch")] > watches), "the client watches again"
        fake.put(node_object(f"x{round_}", zone="z1"))  # names sort after n*: the oracle feeds in key order
    assert_converges(state, fake)
    pods = state.reflectors["Pod"]
    assert pods.lists == 1 and pods.relists_gone == 0, "resumed, never relisted"
    resumed = [rv for kind, rv in fake.watch_rvs if kind == "Pod"]
    assert len(resumed) >= 3 and len(set(resumed)) >= 3, "each watch started from a newer resourceVersion"


def test_server_down_backs_off_keeps_serving_the_last_state_and_recovers(fake, watch):
    small_cluster(fake)
    waits: list[tuple[str, float]] = []

    def recorded_wait(stop: threading.Event, seconds: float) -> bool:
        waits.append((threading.current_thread().name, seconds))
        return stop.wait(seconds)

    state = watch(backoff_initial=0.05, backoff_cap=0.4, wait=recorded_wait)
    assert_converges(state, fake)
    before = state.snapshot()
    pods = state.reflectors["Pod"]
    failed_before = pods.errors.get("unavailable", 0)
    waited_before = sum(1 for name, _ in waits if name == "watch-Pod")
    fake.go_down()
    fake.put(pod_object("shop", "made-while-down", node="n0", cpu="1"))
    fake.delete("Pod", "p2", "shop")
    pod_waits = lambda: [s for name, s in waits if name == "watch-Pod"][waited_before:]  # noqa: E731
    assert wait_until(lambda: len(pod_waits()) >= 5, timeout=30), pods.errors
    assert state.synced() and state.snapshot() is before, "the last state keeps being served"
    assert state.health()[0]
    # Each failure waits before the next attempt (no hot loop) ...
    failures = pods.errors.get("unavailable", 0) - failed_before
    assert failures - len(pod_waits()) in (0, 1), (failures, pod_waits())
    # ... for a capped exponential delay: 50 ms doubling to the 400 ms cap, jitter down to half.
    delays = pod_waits()
    assert all(0.025 <= d <= 0.4 for d in delays), delays
    assert all(d >= 0.2 for d in delays[3:]), f"the 4th delay on has reached the cap: {delays}"
    assert wait_until(lambda: "last contact" in state.describe()), state.describe()
    stale = state.staleness_seconds()
    fake.come_up()  # same history: the watch resumes, no relist needed
    assert_converges(state, fake)
    assert wait_until(lambda: state.staleness_seconds() < stale), "every kind is back in contact"
    assert all(r.lists == 1 for r in state.reflectors.values())


def test_slow_responses_and_read_timeouts_are_retried(fake, watch):
    small_cluster(fake)
    fake.delay = 0.6
    state = watch(list_timeout=0.3)
    errors = lambda: state.stats()["Node"]["errors"]  # noqa: E731
    assert wait_until(lambda: errors().get("silent", 0) >= 1), f"a read timeout counts as a silent connection: {errors()}"
    assert not state.synced()
    fake.delay = 0.05
    assert_converges(state, fake)


@pytest.mark.parametrize("status", [500, 503, 429])
def test_server_errors_are_retried_with_backoff(fake, watch, status):
    small_cluster(fake)
    fake.fail_next(6, status=status)
    state = watch()
    assert_converges(state, fake)
    assert sum(r.errors.get("unavailable", 0) for r in state.reflectors.values()) == 6


def test_a_forbidden_kind_is_retried_and_logged_as_an_error(fake, watch, caplog):
    small_cluster(fake)
    fake.fail_next(2, status=403, kinds=["ResourceQuota"])
    with caplog.at_level(logging.ERROR, logger="estimator.watch"):
        state = watch()
        assert_converges(state, fake)
    assert state.reflectors["ResourceQuota"].errors == {"http-403": 2}
    assert any("403" in r.getMessage() for r in caplog.records)


def test_a_malformed_object_is_logged_and_skipped(fake, watch, caplog):
    small_cluster(fake)
    bad_node = node_object("bad-node", cpu="lots")
    fake.put(bad_node)
    state = watch()
    assert_converges(state, fake)
    with caplog.at_level(logging.WARNING, logger="estimator.watch"):
        fake.put(pod_object("shop", "bad-pod", node="n0", cpu="1.5.5"))
        fake.put({"kind": "ResourceQuota", "apiVersion": "v1", "metadata": {"name": "bq", "namespace": "shop"},
                  "status": {"hard": {"pods": "many"}}})
        fake.put(pod_object("shop", "good-after", node="n0", cpu="1"))
        assert_converges(state, fake)
    assert state.cache.keys("Pod") >= {("shop", "good-after")}
    assert ("shop", "bad-pod") not in state.cache.keys("Pod")
    assert state.stats()["Pod"]["malformed"] == 1 and state.stats()["Node"]["malformed"] == 1
    assert any("bad-pod" in r.getMessage() for r in caplog.records)
    assert state.health()[0]


def test_a_bad_update_keeps_the_last_good_state_of_that_object(fake, watch):
    fake.load([node_object("n0", cpu="4")])
    state = watch()
    assert wait_until(state.synced)
    fake.put(node_object("n0", cpu="-"))
    fake.put(node_object("marker"))
    assert wait_until(lambda: state.cache.snapshot().node_position("marker") is not None)
    assert available(state, "n0")["cpu"] == 4000


def test_reload_relists_every_kind(fake, watch):
    small_cluster(fake)
    state = watch()
    assert_converges(state, fake)
    fake.put(pod_object("shop", "late", node="n0"))
    assert state.reload() is True
    assert wait_until(lambda: all(r.lists == 2 for r in state.reflectors.values()))
    assert_converges(state, fake)
