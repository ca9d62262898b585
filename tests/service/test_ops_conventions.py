"""Karmada's operations conventions: one address may serve probes and metrics, a `version`
subcommand and --version, karmada_build_info and the process collectors."""

from __future__ import annotations

import subprocess
import sys
import urllib.request

from estimator.service.buildinfo import build_info, version_line


def test_version_subcommand_and_flag_print_karmadas_format():
    for argv in (["version"], ["--version"]):
        out = subprocess.run([sys.executable, "-m", "estimator", *argv], capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr
        assert out.stdout.startswith('karmada-estimator version: version.Info{GitVersion:"v')
        assert 'Platform:"' in out.stdout and out.stdout.strip() == version_line()


def test_build_info_has_karmadas_labels():
    assert set(build_info()) == {"git_version", "git_commit", "git_short_commit", "git_tree_state", "build_date",
                                 "go_version", "compiler", "platform"}


def test_metrics_carry_build_info_and_process_collectors():
    from estimator.service.metrics import EstimatorMetrics

    page = EstimatorMetrics().exposition().decode()
    assert 'karmada_build_info{' in page and "process_resident_memory_bytes" in page
    assert "python_gc_objects_collected_total" in page and "python_info" in page


def test_one_address_serves_probes_and_metrics():
    from estimator.cluster.filestate import FileClusterState
    from estimator.service.server import EstimatorServer, ServerConfig
    from scheduler_client.launch import free_port
    from tests.support.servers import DEMO

    port = free_port()
    server = EstimatorServer(ServerConfig(
        cluster_name="member-a", server_port=0, server_bind_address="127.0.0.1",
        health_probe_bind_address=f"127.0.0.1:{port}", metrics_bind_address=f"127.0.0.1:{port}",
        shutdown_grace_seconds=1.0), FileClusterState([DEMO / "member-a.yaml"]))
    server.start()
    try:
        assert server.wait_ready(180)
        for path in ("/healthz", "/readyz", "/metrics"):
            with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as response:
                assert response.status == 200, path
                body = response.read().decode()
        assert "karmada_build_info{" in body and "process_resident_memory_bytes" in body
    finally:
        server.stop()
