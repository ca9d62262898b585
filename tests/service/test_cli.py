"""karmada-estimator as a process: flags, exit codes, SIGHUP reload, SIGTERM drain."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import time

import pytest

from estimator.core.model import Component, ComponentSetsQuery, ReplicaShape
from scheduler_client.accurate import Endpoint, ask_component_sets
from scheduler_client.launch import LocalEstimator, wait_serving
from tests.support.servers import DEMO

GPU_WORKERS = ComponentSetsQuery(
    (Component("worker", 2, ReplicaShape((("cpu", 50), ("nvidia.com/gpu", 1)), namespace="ml-team")),),
    "ml-team",
)


def run_cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "estimator", *args], capture_output=True, text=True, timeout=timeout)


def test_the_deprecated_snapshot_flag_still_loads_object_files_and_says_so(tmp_path):
    bad = tmp_path / "member.yaml"
    bad.write_text("kind: [unclosed\n")
    result = run_cli("--cluster-name", "m", "--snapshot", str(bad), "--metrics-bind-address", "0",
                     "--health-probe-bind-address", "0")
    # The file reached the object-file loader (its error names the file) and exit 2 as --objects.
    assert result.returncode == 2, result.stderr
    assert "--snapshot is deprecated: use --objects" in result.stderr
    assert "member.yaml" in result.stderr


def test_snapshot_and_objects_files_are_one_list():
    from estimator.cli.options import build_parser

    args = build_parser().parse_args(["--cluster-name", "m", "--snapshot", "a.yaml", "--objects", "b.yaml"])
    assert args.objects == ["a.yaml", "b.yaml"]


def test_help_says_assumed_workloads_are_always_honoured():
    shown = run_cli("--help")
    assert shown.returncode == 0
    assert "ALWAYS deducted" in shown.stdout and "--packing" in shown.stdout and "--server-port" in shown.stdout


@pytest.mark.parametrize(
    "content,expected",
    [
        ("apiVersion: v1\nkind: List\nitems:\n- kind: Node\n  apiVersion: v1\n  metadata: {name: n1}\n"
         "  status: {allocatable: {cpu: lots}}\n", "n1"),
        ("kind: [unclosed\n", "line"),
    ],
    ids=["a bad quantity names the object", "broken YAML names the line"],
)
def test_a_malformed_snapshot_exits_2_naming_the_file(tmp_path, content, expected):
    bad = tmp_path / "bad.yaml"
    bad.write_text(content)
    result = run_cli("--cluster-name", "m", "--objects", str(bad), "--metrics-bind-address", "0",
                     "--health-probe-bind-address", "0", "--server-port", "0")
    assert result.returncode == 2
    assert "bad.yaml" in result.stderr and expected in result.stderr


def test_bad_flags_exit_2():
    assert run_cli("--cluster-name", "m", "--objects", "x", "--parallelism", "0").returncode == 2
    assert run_cli("--cluster-name", "m", "--objects", "x", "--packing", "worst").returncode == 2
    assert run_cli("--objects", "x").returncode == 2  # --cluster-name is required


def test_help_lists_the_manifests_subcommand():
    shown = run_cli("--help")
    assert shown.returncode == 0
    assert "manifests" in shown.stdout and "Render the Kubernetes manifests" in shown.stdout
    sub = run_cli("manifests", "--help")
    assert sub.returncode == 0 and sub.stdout.startswith("usage: karmada-estimator manifests")


def test_the_subcommand_parses_as_the_manifests_tool_does():
    from estimator.cli.options import build_parser
    from estimator.deploy import cli as manifests_cli

    argv = ["--cluster-name", "member-b", "--packing", "first-fit", "--parallelism", "4", "--v", "3", "--part", "host"]
    args = build_parser().parse_args(["manifests", *argv])
    assert args.command == "manifests"
    assert manifests_cli.options_from(args) == manifests_cli.options_from(manifests_cli.build_parser().parse_args(argv))


def test_the_subcommand_needs_its_own_cluster_name_and_names_unknown_flags():
    missing = run_cli("manifests", "--part", "host")
    assert missing.returncode == 2 and "--cluster-name" in missing.stderr
    unknown = run_cli("manifests", "--cluster-name", "b", "--nope")
    assert unknown.returncode == 2 and "karmada-estimator manifests: error: unknown flag: --nope" in unknown.stderr
    rendered = run_cli("manifests", "--cluster-name", "member-b", "--part", "member")
    assert rendered.returncode == 0 and "kind: ClusterRole" in rendered.stdout


def test_sighup_reloads_and_a_bad_reload_keeps_serving(tmp_path):
    snapshot = tmp_path / "member.yaml"
    shutil.copy(DEMO / "member-a.yaml", snapshot)
    est = LocalEstimator("member-a", [snapshot])
    log = (tmp_path / "log.txt").open("w")
    est.start(log_file=log)
    try:
        wait_serving([est])
        ask = lambda: ask_component_sets(Endpoint("member-a", est.address), GPU_WORKERS, "test", 5).value  # noqa: E731
        assert ask() == 1  # one node, 2 GPUs

        shutil.copy(DEMO / "member-c.yaml", snapshot)  # 8 GPUs on one node
        est.process.send_signal(signal.SIGHUP)
        deadline = time.monotonic() + 20
        while ask() != 4 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert ask() == 4

        snapshot.write_text("kind: [broken\n")
        est.process.send_signal(signal.SIGHUP)
        # Wait for the reload thread's verdict rather than a fixed while (a loaded box delays it).
        deadline = time.monotonic() + 60
        while "reload failed" not in (tmp_path / "log.txt").read_text() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert ask() == 4 and est.process.poll() is None
        assert est.stop() == 0
    finally:
        est.stop()
        log.close()
    text = (tmp_path / "log.txt").read_text()
    assert "reload failed, still serving the previous state" in text


def test_verbose_logs_show_each_estimate_and_its_placement(tmp_path):
    est = LocalEstimator("member-c", [DEMO / "member-c.yaml"], extra_args=["--v", "4"])
    log = (tmp_path / "log.txt").open("w")
    est.start(log_file=log)
    try:
        wait_serving([est])
        assert ask_component_sets(Endpoint("member-c", est.address), GPU_WORKERS, "kind=PyTorchJob, name=ml-team/x", 5).value == 4
    finally:
        est.stop()
        log.close()
    text = (tmp_path / "log.txt").read_text()
    assert "MaxAvailableComponentSets object='kind=PyTorchJob, name=ml-team/x' sets=4" in text
    assert "placement of 4 sets: {'worker': {'member-c-gpu-1': 8}}" in text


def test_the_command_line_imports_neither_numba_nor_grpc_before_the_state_loads():
    # The loader's worker reads a big member file while the service's modules are imported
    # (estimator.service.launch.prepare_service): importing the entry point must stay light.
    code = "import sys, estimator.__main__; print(sorted(m for m in ('numba', 'grpc') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_the_work_done_while_a_member_file_loads_leaves_the_kernels_loaded_and_no_garbage_cycles():
    # What the server runs while the loader's worker reads (estimator.service.launch.prepare_service):
    # inside the load's paused collector, whose survivors are frozen for good afterwards.
    code = """
import importlib, pkgutil, weakref
from numba.core.dispatcher import Dispatcher
from estimator.service import launch
import estimator.kernels as kernels
from estimator.cluster import gccontrol

def compiled():
    found = {}
    for module in pkgutil.iter_modules(kernels.__path__):
        loaded = importlib.import_module(f"estimator.kernels.{module.name}")
        for name, value in vars(loaded).items():
            if isinstance(value, Dispatcher):
                found[f"{module.name}.{name}"] = len(value.signatures)
    return found

class Cycle:
    pass

before = compiled()
with gccontrol.paused():
    cycle = Cycle()
    cycle.me = cycle
    ref = weakref.ref(cycle)
    del cycle
    launch.prepare_service()
    print(ref() is None)
after = compiled()
kernels.warmup()
print(sum(before.values()), sum(after.values()) > 0, compiled() == after)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["True", "0", "True", "True"]


def test_the_help_states_the_search_floor_best_mode_uses():
    # The command line may not import the kernels (numba) to read it, so the help repeats it.
    from estimator.kernels import best

    out = subprocess.run([sys.executable, "-m", "estimator", "--help"], capture_output=True, text=True, check=True)
    assert f"at least {best._MIN_SEARCH_WORK:,} node visits" in " ".join(out.stdout.split())
