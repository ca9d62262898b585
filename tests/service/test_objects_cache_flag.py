"""--objects-cache: where the parsed-state cache of --objects files lives, or off."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from estimator.cli.main import cluster_state
from estimator.cli.options import build_parser
from estimator.cluster import filestate, objectscache
from tests.support.servers import DEMO


def given_cache_dir(monkeypatch, argv: list[str]):
    """The state-cache directory `karmada-estimator argv` hands the object-file loader."""
    seen = []

    def load(paths, state_cache, background=False, meanwhile=None):
        seen.append(state_cache)
        from estimator.cluster.files import load_object_files
        return load_object_files(paths, state_cache=None)

    monkeypatch.setattr(filestate, "load_object_files", load)
    parser = build_parser()
    args = parser.parse_args(["--cluster-name", "m", "--objects", str(DEMO / "member-a.yaml"), *argv])
    cluster_state(parser, args)
    assert len(seen) == 1
    return seen[0]


def test_the_flag_sets_the_directory_or_turns_the_cache_off(monkeypatch, tmp_path):
    monkeypatch.delenv(objectscache.ENV, raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert given_cache_dir(monkeypatch, ["--objects-cache", str(tmp_path / "c")]) == tmp_path / "c"
    assert given_cache_dir(monkeypatch, ["--objects-cache", "off"]) is None
    assert given_cache_dir(monkeypatch, []) == tmp_path / "xdg" / "karmada-estimator" / "objects"


def test_the_flag_wins_over_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv(objectscache.ENV, "off")
    assert given_cache_dir(monkeypatch, []) is None
    assert given_cache_dir(monkeypatch, ["--objects-cache", str(tmp_path)]) == Path(tmp_path)


def test_the_flag_without_object_files_is_refused():
    result = subprocess.run([sys.executable, "-m", "estimator", "--cluster-name", "m", "--objects-cache", "/tmp/x",
                             "--kubeconfig", "/nonexistent"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 2
    assert "--objects-cache applies to --objects files only" in result.stderr

