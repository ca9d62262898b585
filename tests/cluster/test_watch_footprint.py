"""The watch client's footprint: it lists and watches over urllib3 with our own kubeconfig
loader, without importing the `kubernetes` package at all (its client alone is about 23 MB
of RSS for five GET paths whose bodies are parsed by us), and still sends the query and the
bearer token, and maps refusals as before."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from estimator.cluster.watch.kubeclient import ApiError, Gone, KubeClient, Unavailable
from tests.support.fakekube import FakeKube
from tests.support.kubeobjects import node_object, pod_object

_PROBE = r"""
import json, sys
from estimator.cluster.watch.kubeclient import KubeClient
client = KubeClient.from_flags(kubeconfig=sys.argv[1])
page = json.loads(client.list_page("Node", limit=10))
heavy = sorted(m for m in sys.modules if m == "kubernetes" or m.startswith("kubernetes."))
print(json.dumps({"items": len(page["items"]), "heavy": heavy}))
"""


def test_listing_imports_no_kubernetes_package(tmp_path):
    with FakeKube() as fake:
        fake.put_many(node_object(f"n{i}") for i in range(3))
        done = subprocess.run([sys.executable, "-c", _PROBE, str(fake.kubeconfig(tmp_path))], capture_output=True,
                              text=True, timeout=120, cwd=Path(__file__).resolve().parents[2])
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result == {"items": 3, "heavy": []}


def test_pages_watch_token_and_errors(tmp_path):
    with FakeKube() as fake:
        fake.put_many(node_object(f"n{i}") for i in range(5))
        fake.put(pod_object("default", "p0", node="n0"))
        client = KubeClient.from_flags(kubeconfig=str(fake.kubeconfig(tmp_path)))
        first = json.loads(client.list_page("Node", limit=2))
        assert len(first["items"]) == 2 and first["metadata"]["continue"]
        rest = json.loads(client.list_page("Node", limit=10, continue_token=first["metadata"]["continue"]))
        names = [o["metadata"]["name"] for o in first["items"] + rest["items"]]
        assert sorted(names) == [f"n{i}" for i in range(5)]
        pods = json.loads(client.list_page("Pod", limit=10, field_selector="spec.nodeName=n0"))
        assert [p["metadata"]["name"] for p in pods["items"]] == ["p0"]
        assert not json.loads(client.list_page("Pod", limit=10, field_selector="spec.nodeName=n9"))["items"]

        fake.expire_continue(1)
        with pytest.raises(Gone):
            client.list_page("Node", limit=2, continue_token=first["metadata"]["continue"])

        fake.fail_next(1, 503)
        with pytest.raises(Unavailable):
            client.list_page("Node", limit=2)

        fake.token = "rotated"  # our token is now refused: 401 is an ApiError, not a crash
        with pytest.raises(ApiError) as refused:
            client.list_page("Node", limit=2)
        assert refused.value.status == 401
        client.close()
