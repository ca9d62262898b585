"""One implementation of collector control: paused regions, freezing the loaded state."""

from __future__ import annotations

import gc
import json
import weakref

import pytest

from estimator.cluster import gccontrol
from estimator.cluster.filestate import FileClusterState


@pytest.fixture(autouse=True)
def restore_collector():
    was = gc.isenabled()
    yield
    gc.unfreeze()
    gc.enable() if was else gc.disable()


def test_paused_regions_nest_and_restore_the_collector():
    gc.enable()
    with gccontrol.paused():
        assert not gc.isenabled()
        with gccontrol.paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer region is still open
    assert gc.isenabled()
    gc.disable()
    with gccontrol.paused():
        pass
    assert not gc.isenabled()  # left as it was found


def test_paused_restores_the_collector_when_the_body_raises():
    gc.enable()
    with pytest.raises(RuntimeError):
        with gccontrol.paused():
            raise RuntimeError("boom")
    assert gc.isenabled()


def test_settle_freezes_and_thaw_gives_back():
    keep = [[i] for i in range(1000)]
    gccontrol.settle("test", collect=False)
    assert gc.get_freeze_count() >= 1000
    gccontrol.thaw()
    assert gc.get_freeze_count() == 0
    del keep


def _member(path):
    items = [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
              "status": {"allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"}}}]
    items += [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"p{i}", "namespace": "ns"},
               "spec": {"nodeName": "n1", "containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}]},
               "status": {"phase": "Running"}} for i in range(50)]
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    return path


class _Cycle:
    pass


def test_a_file_state_freezes_its_records_but_not_garbage_from_before(tmp_path):
    gc.enable()
    garbage = _Cycle()
    garbage.me = garbage
    dead = weakref.ref(garbage)
    del garbage
    state = FileClusterState([_member(tmp_path / "m.json")])
    assert dead() is None  # collected before freezing, not kept forever
    assert gc.get_freeze_count() > 50
    assert gc.isenabled()
    assert state.snapshot().num_nodes == 1


def test_a_reload_thaws_the_previous_state_so_its_cycles_can_go(tmp_path):
    gc.enable()
    state = FileClusterState([_member(tmp_path / "m.json")])
    old = state._cache
    old.cycle = old  # a cycle through the state being replaced
    gone = weakref.ref(old)
    del old
    assert state.reload()
    assert gone() is None
