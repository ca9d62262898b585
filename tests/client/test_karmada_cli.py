"""karmada-place --karmada-compatible against real estimators over loopback gRPC: Karmada's
path (c), where one member's missing or failing accurate estimator makes Karmada drop the
accurate answers of every member.

Demo fleet with resource models off (CustomizedClusterResourceModeling=false), train-big:
Karmada's general estimator (cluster totals) counts member-a 0, member-b 1, member-c 1; the
accurate estimators answer 0, 0, 1. With every answer Karmada takes member-c; on the general
estimator alone, member-b (1 set, and b before c by name).
"""

from __future__ import annotations

import json
import socket

import pytest

from scheduler_client.cli import main
from tests.support.servers import DEMO, start_server

MEMBERS = ("member-a", "member-b", "member-c")
BASE = ["--job", str(DEMO / "jobs" / "train-big.yaml"), "--policy", str(DEMO / "policies" / "one-member.yaml"),
        "--clusters", str(DEMO / "clusters.yaml"),
        *[a for m in MEMBERS for a in ("--member", f"{m}={DEMO / (m + '.yaml')}")],
        "--feature-gates", "MultiplePodTemplatesScheduling=true,CustomizedClusterResourceModeling=false",
        "--estimator-timeout", "2s", "-o", "json"]


@pytest.fixture(scope="module")
def addresses():
    servers = {m: start_server(m) for m in MEMBERS}
    yield {m: f"127.0.0.1:{s.port}" for m, s in servers.items()}
    for server in servers.values():
        server.stop(0)


def closed_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"127.0.0.1:{s.getsockname()[1]}"


def place(capsys, estimators, *extra):
    code = main([*BASE, *[a for m, addr in estimators.items() for a in ("--estimator", f"{m}={addr}")], *extra])
    return code, json.loads(capsys.readouterr().out)


def test_every_estimator_answering_lets_karmada_take_member_c(capsys, addresses):
    code, data = place(capsys, addresses, "--karmada-compatible")
    assert code == 0 and [t["name"] for t in data["targets"]] == ["member-c"]
    assert data["karmada"]["accurateDropped"] is False and data["karmada"]["paths"] == []


@pytest.mark.parametrize("which", ["missing", "unreachable"],
                         ids=["A member without an estimator", "A member whose estimator is unreachable"])
def test_one_bad_estimator_makes_karmada_use_the_general_estimator_alone(capsys, addresses, which):
    estimators = dict(addresses)
    if which == "missing":
        del estimators["member-a"]
    else:
        estimators["member-a"] = closed_port()
    code, data = place(capsys, estimators, "--karmada-compatible")
    assert code == 0 and [t["name"] for t in data["targets"]] == ["member-b"]
    assert data["karmada"]["accurateDropped"] is True
    (path,) = data["karmada"]["paths"]
    assert path["path"] == "c" and path["decisive"] is True and "member-a" in path["text"]
    members = {m["name"]: m for m in data["members"]}
    assert members["member-b"]["sets"] == 1 and members["member-b"]["verdict"] == "chosen"


def test_the_default_mode_recommends_member_c_and_states_karmadas_member_b(capsys, addresses):
    estimators = {m: a for m, a in addresses.items() if m != "member-a"}
    code, data = place(capsys, estimators)
    assert code == 0 and data["selected"] == "member-c" and data["karmadaCompatible"] is False
    assert [t["name"] for t in data["karmada"]["targets"]] == ["member-b"]
    code = main([*BASE[:-2], *[a for m, addr in estimators.items() for a in ("--estimator", f"{m}={addr}")]])
    out = capsys.readouterr().out
    assert "selected: member-c" in out and "Karmada would place it on: member-b" in out
    assert "Karmada path (c)" in out
