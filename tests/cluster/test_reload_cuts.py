"""A reload is all or nothing, never half a file (FileClusterState.reload, kubefiles' last-line rule).

A multi-document YAML member (demo member-b's objects, one document each) is rewritten in
place, not atomically, and SIGHUP's reload runs while the writer is at a document boundary:
such a cut still parses, so reading it would serve part of the member. The reload must wait
for the file to settle and serve the whole member. A cut inside a line can parse too (a
value cut short); the file then has no final line break and is refused even when the
writer stalled long enough for the file to look settled.
"""

from __future__ import annotations

import os
import threading
import time

import pytest
import yaml

from estimator.cluster import filestate
from estimator.cluster.filestate import FileClusterState
from estimator.core.errors import StateLoadError
from tests.support.servers import DEMO

SETTLE = 0.3  # seconds: the test's settling time (2 s in production)


def documents() -> str:
    items = yaml.safe_load((DEMO / "member-b.yaml").read_text())["items"]
    return "---\n".join(yaml.safe_dump(item, sort_keys=False) for item in items)


def boundaries(text: str) -> list[int]:
    """Offsets just after each document separator: where a cut file still parses."""
    cuts, at = [], text.find("---\n")
    while at >= 0:
        cuts.append(at + 4)
        at = text.find("---\n", at + 4)
    return cuts


def aged(path, seconds: float = 30.0) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


@pytest.fixture
def quick_settle(monkeypatch):
    monkeypatch.setattr(filestate, "SETTLE_SECONDS", SETTLE, raising=False)


def test_a_reload_during_a_rewrite_at_any_document_boundary_serves_the_whole_member(tmp_path, quick_settle):
    text = documents()
    path = tmp_path / "member.yaml"
    path.write_text(text)
    aged(path)
    state = FileClusterState([path], state_cache="off")
    whole = state.snapshot()
    cuts = boundaries(text)
    assert len(cuts) >= 10
    for cut in cuts:
        path.write_text(text[:cut])  # the writer, paused at a document boundary
        outcome = {}
        reload = threading.Thread(target=lambda: outcome.setdefault("ok", state.reload()))
        reload.start()
        time.sleep(SETTLE / 3)
        path.write_text(text)  # ... finishes the file
        reload.join(30)
        assert outcome.get("ok") is True, f"cut at {cut}"
        served = state.snapshot()
        assert served.node_names == whole.node_names, f"cut at {cut}: served part of the member"
        assert (served.available == whole.available).all(), f"cut at {cut}"


def test_a_file_cut_inside_a_line_is_refused_even_when_it_looks_settled(tmp_path):
    text = documents()
    path = tmp_path / "member.yaml"
    path.write_text(text)
    aged(path)
    state = FileClusterState([path], state_cache="off")
    whole = state.snapshot()
    ends = {i + 1 for i, c in enumerate(text) if c == "\n"}
    tried = 0
    # Every cut inside the last lines of documents, where values are cut short.
    for cut in range(len(text) // 2, len(text), 89):
        if cut in ends:
            continue
        path.write_text(text[:cut])
        aged(path)  # the writer stalled: the file's time says it settled
        try:
            yaml.safe_load_all(text[:cut])
            parses = all(True for _ in yaml.safe_load_all(text[:cut]))
        except yaml.YAMLError:
            parses = False
        assert state.reload() is False, f"cut at {cut} ({text[cut - 20:cut]!r}) was served"
        tried += parses
        assert state.snapshot().node_names == whole.node_names
    assert tried > 5, "the cuts tried must include many that parse"


def test_a_first_load_of_a_file_cut_inside_a_line_fails_naming_the_file(tmp_path):
    path = tmp_path / "member.yaml"
    path.write_text(documents()[:-3])
    with pytest.raises(StateLoadError, match=r"member\.yaml: the last line has no line break"):
        FileClusterState([path], state_cache="off")


def test_files_changed_during_the_read_are_read_again_after_they_settle(tmp_path, quick_settle, monkeypatch):
    text = documents()
    path = tmp_path / "member.yaml"
    path.write_text(text)
    aged(path)
    state = FileClusterState([path], state_cache="off")
    real = filestate.load_object_files
    reads = []

    def rewritten_meanwhile(*args, **kwargs):
        cache = real(*args, **kwargs)
        if not reads:  # a writer replaces the file while the first read is under way
            path.write_text(text.replace("cpu: '12'", "cpu: '6'"))
        reads.append(cache)
        return cache

    monkeypatch.setattr(filestate, "load_object_files", rewritten_meanwhile)
    assert state.reload() is True
    assert len(reads) == 2, "the read that overlapped the rewrite must not be served"
    assert state.snapshot().available[:, state.snapshot().column("cpu")].max() <= 6000


def test_files_that_never_settle_are_refused_and_the_previous_state_kept(tmp_path, quick_settle, monkeypatch):
    path = tmp_path / "member.yaml"
    path.write_text(documents())
    aged(path)
    state = FileClusterState([path], state_cache="off")
    before = state.snapshot()
    monkeypatch.setattr(filestate, "MAX_SETTLE_WAIT", 1.0, raising=False)
    stop, writing = threading.Event(), threading.Event()

    def writer():
        while not stop.is_set():
            path.write_text(documents())
            writing.set()
            time.sleep(0.05)

    thread = threading.Thread(target=writer)
    thread.start()
    writing.wait(10)
    try:
        assert state.reload() is False
    finally:
        stop.set()
        thread.join()
    assert "kept changing" in state.last_reload_error
    assert state.snapshot() is before


def test_a_recent_file_loaded_at_start_is_reloaded_once_it_settles_if_it_changed(tmp_path, quick_settle):
    text = documents()
    path = tmp_path / "member.yaml"
    cut = boundaries(text)[1]
    path.write_text(text[:cut])  # start-up caught the writer at a boundary
    state = FileClusterState([path], state_cache="off")
    partial = state.snapshot().num_nodes
    path.write_text(text)
    deadline = time.monotonic() + 20
    while state.snapshot().num_nodes == partial and time.monotonic() < deadline:
        time.sleep(0.05)
    assert state.snapshot().num_nodes == 4
