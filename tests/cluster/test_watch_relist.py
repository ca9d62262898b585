"""Relists never tear the state estimates see: every snapshot handed out while a relist runs
shows the cluster as it was before the relist or as it is after, never pages of one mixed
with the other."""

from __future__ import annotations

import threading

from tests.cluster.test_watch import fake, small_cluster, wait_until, watch  # noqa: F401 - fixtures
from tests.support.kubeobjects import pod_object, reference_cache, state_view


def _sample_during(state, until, views: list) -> threading.Thread:
    def run():
        while not until.is_set():
            snapshot = state.snapshot()
            if snapshot is not None:
                views.append(state_view(snapshot))

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def _changes_while_not_watching(fake) -> None:
    """Pods deleted and created while the watch delivers nothing: only a relist sees them."""
    fake.pause_watches()
    for i in range(6):
        fake.delete("Pod", f"p{i}", "shop")
    for i in range(6):
        fake.put(pod_object("shop", f"q{i}", node=f"n{i % 5}", cpu="1"))


def _assert_only_before_or_after(state, fake, relist) -> None:
    before = state_view(state.snapshot())
    _changes_while_not_watching(fake)
    after = state_view(reference_cache(fake).snapshot())
    assert before != after
    views: list = []
    done = threading.Event()
    sampler = _sample_during(state, done, views)
    fake.delay = 0.05  # every page takes a while: a torn state would be seen
    relist()
    converged = wait_until(lambda: state_view(state.snapshot()) == after, timeout=20)
    done.set()
    sampler.join()
    fake.delay = 0.0
    assert converged
    torn = [view for view in views if view != before and view != after]
    assert not torn, f"{len(torn)} of {len(views)} snapshots mixed the old and the new list"
    assert any(view == before for view in views), "the sampler ran during the relist"


def test_a_reload_relist_shows_the_old_state_until_the_new_one_is_complete(fake, watch):
    small_cluster(fake)
    state = watch()
    assert wait_until(state.synced)
    _assert_only_before_or_after(state, fake, state.reload)
    assert state.reflectors["Pod"].lists == 2


def test_a_410_relist_shows_the_old_state_until_the_new_one_is_complete(fake, watch):
    small_cluster(fake)
    state = watch()
    assert wait_until(state.synced)

    def gone():
        fake.compact()
        fake.resume_watches()  # the paused watches now find their history compacted: 410

    _assert_only_before_or_after(state, fake, gone)
    assert state.reflectors["Pod"].relists_gone >= 1
