"""Both cluster-state sources honour the ClusterState protocol the server reads them by:
every method exists, callable as the protocol calls it, returning what the protocol says."""

from __future__ import annotations

import inspect

import pytest

from estimator.cluster.filestate import FileClusterState
from estimator.cluster.sources import ClusterState
from estimator.cluster.watch import WatchClusterState

METHODS = [name for name, member in vars(ClusterState).items()
           if inspect.isfunction(member) and not name.startswith("_")]


def test_the_protocol_names_what_the_server_uses():
    assert sorted(METHODS) == ["describe", "health", "reload", "snapshot", "staleness_seconds", "start", "stop",
                               "synced"]


@pytest.mark.parametrize("implementation", [FileClusterState, WatchClusterState])
@pytest.mark.parametrize("name", METHODS)
def test_signature_matches_the_protocol(implementation, name):
    wanted = inspect.signature(getattr(ClusterState, name))
    actual = inspect.signature(getattr(implementation, name))
    # Equal, or narrower where the protocol allows None (files always have a snapshot).
    narrower = {wanted.return_annotation, wanted.return_annotation.removesuffix(" | None")}
    assert actual.return_annotation in narrower, f"{implementation.__name__}.{name}"
    extra = [p for p in list(actual.parameters.values())[len(wanted.parameters):]
             if p.default is inspect.Parameter.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    assert not extra, f"{implementation.__name__}.{name} needs arguments the server does not pass: {extra}"


def test_file_reload_returns_false_and_keeps_the_state_when_the_file_breaks(tmp_path):
    path = tmp_path / "member.yaml"
    path.write_text("kind: Node\nmetadata: {name: n1}\nstatus: {allocatable: {cpu: '2', pods: '10'}}\n")
    state = FileClusterState([path])
    assert state.reload() is True
    path.write_text("kind: Node\nmetadata: {name: [\n")
    assert state.reload() is False
    assert state.snapshot().node_names == ("n1",)
