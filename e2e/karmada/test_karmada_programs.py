"""Our Go programs on Karmada's code (estclient, karmada-schedule) against our estimator.

Needs the binaries `make e2e-karmada` builds into .e2e/bin/; skipped without them, so a clone
without Go is unaffected (`make test` does not collect e2e/). Run by hand with
`.venv/bin/python -m pytest -q e2e/karmada`.

Oracles: estclient's numbers must equal our server's answers over direct gRPC (our own wire
encoding, not Karmada's client); karmada-schedule's targets are derived by hand from the fleet
built here (Karmada's documented rules: spread {cluster,1,1} keeps the member with the most
available replicas; a failing accurate estimator makes the scheduler use the general estimator,
computed from resourceSummary, for every member).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import grpc
import pytest

REPO = Path(__file__).resolve().parents[2]
BIN = REPO / ".e2e" / "bin"


def _versions() -> dict[str, str]:
    out = {}
    for line in (REPO / "e2e" / "versions.mk").read_text().splitlines():
        m = re.match(r"^([A-Z_]+)\s*[:?]?=\s*(\S+)", line)
        if m:
            out[m.group(1)] = m.group(2)
    return out


KV = _versions()["KARMADA_VERSION"]
ESTCLIENT = BIN / f"estclient-{KV}"
SCHEDULE = BIN / f"karmada-schedule-{KV}"

pytestmark = pytest.mark.skipif(not (ESTCLIENT.exists() and SCHEDULE.exists()),
                                reason=f"{ESTCLIENT.name}/{SCHEDULE.name} not built (make e2e-karmada)")

sys.path.insert(0, str(REPO))
from estimator.core import model  # noqa: E402
from estimator.pb import service_pb2_grpc  # noqa: E402
from scheduler_client import wire  # noqa: E402
from scheduler_client.launch import free_port as _free_port  # noqa: E402


class Ours:
    """Our estimator serving one demo member's snapshot over plaintext."""

    def __init__(self, name: str, snapshot: str, log: Path, extra: tuple = ()):
        self.name, self.port, self.health = name, _free_port(), _free_port()
        self.log = open(log, "wb")
        self.proc = subprocess.Popen(
            [str(REPO / ".venv" / "bin" / "karmada-estimator"), "--cluster-name", name, "--objects",
             str(REPO / snapshot), "--server-port", str(self.port),
             "--health-probe-bind-address", f"127.0.0.1:{self.health}", "--metrics-bind-address", "0",
             *map(str, extra)],
            stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True, cwd=REPO)
        deadline = time.monotonic() + 240
        while time.monotonic() < deadline:
            assert self.proc.poll() is None, f"{name} estimator exited; see {log}"
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.health}/readyz", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                time.sleep(0.3)
        else:
            raise AssertionError(f"{name} estimator not ready in 240 s; see {log}")
        self.channel = grpc.insecure_channel(f"127.0.0.1:{self.port}")  # unused for a TLS server
        self.stub = service_pb2_grpc.EstimatorStub(self.channel)

    @property
    def address(self) -> str:
        return f"127.0.0.1:{self.port}"

    def replicas(self, shape: model.ReplicaShape | None) -> int:
        return self.stub.MaxAvailableReplicas(wire.replicas_request(self.name, model.ReplicasQuery(shape)),
                                              timeout=30).maxReplicas

    def sets(self, query: model.ComponentSetsQuery) -> int:
        return self.stub.MaxAvailableComponentSets(wire.component_sets_request(self.name, query), timeout=30).maxSets

    def unschedulable(self, ref: model.WorkloadRef) -> int | str:
        """The answer, or the gRPC status as Go's client prints it ("code = NotFound desc = ...")."""
        try:
            return self.stub.GetUnschedulableReplicas(wire.unschedulable_request(self.name, ref),
                                                      timeout=30).unschedulableReplicas
        except grpc.RpcError as error:
            code = "".join(w.capitalize() for w in error.code().value[1].split())
            return f"code = {code} desc = {error.details()}"

    def stop(self) -> None:
        self.channel.close()
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        self.log.close()


@pytest.fixture(scope="module")
def members(tmp_path_factory):
    logs = tmp_path_factory.mktemp("estimators")
    started = []
    try:
        for name, snap in (("member-b", "deploy/demo/member-b.yaml"), ("member-c", "deploy/demo/member-c.yaml")):
            started.append(Ours(name, snap, logs / f"{name}.log"))
        yield {o.name: o for o in started}
    finally:
        for o in started:
            o.stop()


def run(binary: Path, request: dict, timeout: float = 120) -> dict:
    done = subprocess.run([str(binary)], input=json.dumps(request).encode(), capture_output=True, timeout=timeout)
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-3000:]
    return json.loads(done.stdout)


def bad(binary: Path, request) -> str:
    data = request if isinstance(request, str) else json.dumps(request)
    done = subprocess.run([str(binary)], input=data.encode(), capture_output=True, timeout=60)
    assert done.returncode == 2, (done.returncode, done.stdout[-500:], done.stderr[-500:])
    return done.stderr.decode()


CPU1 = model.ReplicaShape(requests=(("cpu", 1000),))
GPU_JOB = model.ReplicaShape(requests=(("cpu", 2000), ("memory", 4 << 30)))
SETS = model.ComponentSetsQuery(components=(model.Component("master", 1, CPU1), model.Component("worker", 3, GPU_JOB)),
                                namespace="default")
REF = model.WorkloadRef("apps/v1", "Deployment", "default", "web", 60.0)
SETS_CALL = {"components": [{"name": "master", "replicas": 1, "replicaRequirements": {"resourceRequest": {"cpu": "1"}}},
                            {"name": "worker", "replicas": 3,
                             "replicaRequirements": {"resourceRequest": {"cpu": "2", "memory": "4Gi"}}}],
             "namespace": "default"}


# ---- estclient -----------------------------------------------------------------------------

def test_estclient_answers_equal_direct_grpc(members):
    b, c = members["member-b"], members["member-c"]
    report = run(ESTCLIENT, {
        "estimators": {"member-b": {"address": b.address}, "member-c": {"address": c.address}},
        "repeat": 3,
        "calls": [
            {"id": "sets", "method": "MaxAvailableComponentSets", **SETS_CALL},
            {"id": "cpu", "method": "MaxAvailableReplicas", "replicaRequirements": {"resourceRequest": {"cpu": "1"}}},
            {"id": "none", "method": "MaxAvailableReplicas"},
            {"id": "unsched", "method": "GetUnschedulableReplicas", "threshold": "60s",
             "resource": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "default", "name": "web"}},
        ]})
    assert report["karmadaVersion"] == KV
    assert all(report["connections"][n]["connected"] for n in ("member-b", "member-c")), report["connections"]
    want = {
        "sets": {o.name: o.sets(SETS) for o in (b, c)},
        "cpu": {o.name: o.replicas(CPU1) for o in (b, c)},
        "none": {o.name: o.replicas(None) for o in (b, c)},
        "unsched": {o.name: o.unschedulable(REF) for o in (b, c)},
    }
    got = {r["id"]: {a["name"]: a["value"] if a["value"] is not None else a["error"] for a in r["clusters"]}
           for r in report["results"]}
    for name in ("member-b", "member-c"):
        # The demo members hold no Deployment objects: both paths must give the same error then.
        if isinstance(want["unsched"][name], str):
            assert want["unsched"][name] in got["unsched"][name]
            assert got["unsched"][name].startswith(f"gRPC request cluster({name}) estimator error")
            got["unsched"][name] = want["unsched"][name]
    assert got == want
    assert want["cpu"]["member-b"] > 0 and want["sets"]["member-b"] > 0  # the member-b demo has room
    for r in report["results"]:
        assert ("error" in r) == (r["id"] == "unsched" and isinstance(want["unsched"]["member-b"], str))
        assert r["differingRunCount"] == 0
        assert len(r["latencyNs"]) == 3 and r["latencySummaryNs"]["count"] == 3
        assert 0 < r["latencySummaryNs"]["min"] <= r["latencySummaryNs"]["p50"] <= r["latencySummaryNs"]["max"]


def test_estclient_each_mode_times_each_estimator(members):
    b, c = members["member-b"], members["member-c"]
    report = run(ESTCLIENT, {"estimators": {"member-b": {"address": b.address}, "member-c": {"address": c.address}},
                             "repeat": 2, "calls": [{"method": "MaxAvailableReplicas", "each": True,
                                                     "replicaRequirements": {"resourceRequest": {"cpu": "1"}}}]})
    r = report["results"][0]
    assert len(r["latencyNs"]) == 4  # 2 repeats x 2 clusters
    assert {a["name"]: a["value"] for a in r["clusters"]} == {"member-b": b.replicas(CPU1), "member-c": c.replicas(CPU1)}


def test_estclient_missing_and_down_estimators_fail_as_in_karmada(members):
    b = members["member-b"]
    down = _free_port()  # nothing listens there
    report = run(ESTCLIENT, {
        "estimators": {"member-b": {"address": b.address}, "member-down": {"address": f"127.0.0.1:{down}"}},
        "timeout": "2s",
        "calls": [{"method": "MaxAvailableReplicas", "clusters": ["member-b", "member-down", "member-gone"],
                   "replicaRequirements": {"resourceRequest": {"cpu": "1"}}}]})
    conn = report["connections"]
    assert conn["member-b"]["connected"] and not conn["member-down"]["connected"]
    assert f"127.0.0.1:{down}" in conn["member-down"]["error"]
    r = report["results"][0]
    by = {a["name"]: a for a in r["clusters"]}
    assert by["member-b"]["value"] == b.replicas(CPU1) and "error" not in by["member-b"]
    assert by["member-down"]["value"] is None
    assert by["member-down"]["error"] == "cluster member-down does not exist in estimator cache"
    assert by["member-gone"]["error"] == "cluster member-gone does not exist in estimator cache"
    assert "member-down" in r["error"] and "member-gone" in r["error"]


def test_estclient_mutual_tls_with_karmadas_options(members, tmp_path):
    from e2e.harness import pki

    ca = pki.CA(tmp_path, "estimator-ca")
    server_cert, server_key = ca.issue("server", "karmada-scheduler-estimator", server_names=("127.0.0.1",))
    client_cert, client_key = ca.issue("client", "karmada-scheduler", client=True)
    other = pki.CA(tmp_path, "other-ca")
    tls_server = Ours("member-b", "deploy/demo/member-b.yaml", tmp_path / "tls.log", extra=(
        "--grpc-auth-cert-file", server_cert, "--grpc-auth-key-file", server_key, "--grpc-client-ca-file", ca.cert_path))
    try:
        def call(tls: dict) -> dict:
            return run(ESTCLIENT, {"estimators": {"member-b": {"address": tls_server.address}}, "tls": tls,
                                   "timeout": "5s", "calls": [{"method": "MaxAvailableReplicas",
                                                               "replicaRequirements": {"resourceRequest": {"cpu": "1"}}}]})

        mutual = call({"caFile": str(ca.cert_path), "certFile": str(client_cert), "keyFile": str(client_key)})
        assert mutual["connections"]["member-b"]["connected"], mutual["connections"]
        assert mutual["results"][0]["clusters"] == [{"name": "member-b", "value": members["member-b"].replicas(CPU1)}]

        # The server's certificate is not signed by the CA the client trusts: Karmada's dial fails.
        wrong_ca = call({"caFile": str(other.cert_path), "certFile": str(client_cert), "keyFile": str(client_key)})
        assert not wrong_ca["connections"]["member-b"]["connected"]
        assert wrong_ca["results"][0]["clusters"][0]["value"] is None

        # No client certificate: the server refuses it, at the handshake or at the first call.
        anonymous = call({"caFile": str(ca.cert_path)})
        assert anonymous["results"][0]["clusters"][0]["value"] is None
        assert anonymous["results"][0]["clusters"][0]["error"]

        # Plaintext against a TLS server gets nothing either.
        plain = call({})
        assert plain["results"][0]["clusters"][0]["value"] is None
    finally:
        tls_server.stop()


def test_estclient_rejects_bad_input_naming_the_field():
    assert "calls[0].method" in bad(ESTCLIENT, {"estimators": {"m": {"address": "127.0.0.1:1"}},
                                                "calls": [{"method": "Nope"}]})
    assert "estimators.m.address" in bad(ESTCLIENT, {"estimators": {"m": {"address": "nohost"}},
                                                     "calls": [{"method": "MaxAvailableReplicas"}]})
    assert "calls[0].components" in bad(ESTCLIENT, {"estimators": {"m": {"address": "127.0.0.1:1"}},
                                                    "calls": [{"method": "MaxAvailableComponentSets"}]})
    assert "tls" in bad(ESTCLIENT, {"estimators": {"m": {"address": "127.0.0.1:1"}}, "tls": {"certFile": "x"},
                                    "calls": [{"method": "MaxAvailableReplicas"}]})
    assert "unknown field" in bad(ESTCLIENT, {"estimators": {}, "colls": []})
    assert "invalid request JSON" in bad(ESTCLIENT, "{not json")


# ---- karmada-schedule -------------------------------------------------------------------------

def cluster(name: str, cpu: int, kinds=(("apps/v1", "deployments", "Deployment"),)) -> dict:
    """A Ready member whose resourceSummary lets the general estimator place `cpu` 1-CPU replicas."""
    groups: dict[str, list] = {}
    for gv, resource, kind in kinds:
        groups.setdefault(gv, []).append({"name": resource, "kind": kind})
    return {"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster", "metadata": {"name": name},
            "spec": {"syncMode": "Push"},
            "status": {"conditions": [{"type": "Ready", "status": "True", "reason": "ClusterReady", "message": "",
                                       "lastTransitionTime": "2025-01-01T00:00:00Z"}],
                       "apiEnablements": [{"groupVersion": gv, "resources": rs} for gv, rs in groups.items()],
                       "resourceSummary": {"allocatable": {"cpu": str(cpu), "memory": "4096Gi", "pods": "5000"},
                                           "allocated": {"cpu": "0", "memory": "0", "pods": "0"}}}}


def binding(replicas: int, placement: dict) -> dict:
    return {"apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
            "metadata": {"name": "web-deployment", "namespace": "default"},
            "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment", "namespace": "default", "name": "web"},
                     "replicas": replicas,
                     "replicaRequirements": {"resourceRequest": {"cpu": "1"}},
                     "placement": placement}}


ONE_CLUSTER = {"spreadConstraints": [{"spreadByField": "cluster", "minGroups": 1, "maxGroups": 1}],
               "replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Aggregated"}}


@pytest.fixture(scope="module")
def ranked(members):
    """(low, high): the members ordered by our estimator's answer for one CPU (must differ)."""
    b, c = members["member-b"], members["member-c"]
    xb, xc = b.replicas(CPU1), c.replicas(CPU1)
    if xb == xc:
        pytest.skip(f"member-b and member-c answer the same ({xb}); the fleet cannot tell the paths apart")
    low, high = sorted((b, c), key=lambda o: o.replicas(CPU1))
    # The general estimator prefers the member the accurate one ranks lower; both exceed its answers.
    general = {low.name: 600, high.name: 500}
    assert max(xb, xc) < 500
    return low, high, general


def test_schedule_prefers_the_accurate_estimate_when_every_estimator_answers(ranked):
    low, high, general = ranked
    out = run(SCHEDULE, {"clusters": [cluster(n, cpu) for n, cpu in general.items()],
                         "estimators": {o.name: {"address": o.address} for o in (low, high)},
                         "binding": binding(1, ONE_CLUSTER), "repeat": 3})
    assert out["karmadaVersion"] == KV
    assert out["targets"] == [{"name": high.name, "replicas": 1}], out
    assert [o["count"] for o in out["outcomes"]] == [3]


@pytest.mark.parametrize("fault", ["missing", "down"])
def test_schedule_falls_back_to_general_for_every_member_when_one_estimator_fails(ranked, fault):
    low, high, general = ranked
    estimators = {high.name: {"address": high.address}}
    if fault == "down":
        estimators[low.name] = {"address": f"127.0.0.1:{_free_port()}"}
    out = run(SCHEDULE, {"clusters": [cluster(n, cpu) for n, cpu in general.items()], "estimators": estimators,
                         "timeout": "2s", "binding": binding(1, ONE_CLUSTER)})
    # Karmada drops the accurate answers of every member, so the general estimator's favourite wins.
    assert out["targets"] == [{"name": low.name, "replicas": 1}], out
    assert not out["connections"].get(low.name, {}).get("connected", False)


def test_schedule_without_spread_constraint_copies_to_every_member(ranked):
    low, high, general = ranked
    out = run(SCHEDULE, {"clusters": [cluster(n, cpu) for n, cpu in general.items()],
                         "estimators": {o.name: {"address": o.address} for o in (low, high)},
                         "binding": binding(7, {})})
    assert sorted(map(json.dumps, out["targets"])) == sorted(
        json.dumps({"name": n, "replicas": 7}) for n in general)


def test_schedule_reports_karmadas_error_when_nothing_fits(ranked):
    low, high, _ = ranked
    out = run(SCHEDULE, {"clusters": [cluster(low.name, 10, kinds=()), cluster(high.name, 10, kinds=())],
                         "estimators": {}, "enableSchedulerEstimator": False, "binding": binding(1, ONE_CLUSTER)})
    assert out["targets"] == [] and out["fitError"] is True
    assert out["error"] == "0/2 clusters are available: 2 cluster(s) did not have the API resource."


def test_schedule_policy_and_deployment_go_through_karmadas_detector(ranked):
    low, high, general = ranked
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"},
                  "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                           "template": {"metadata": {"labels": {"app": "web"}},
                                        "spec": {"containers": [{"name": "c", "image": "nginx",
                                                                 "resources": {"requests": {"cpu": "1"}}}]}}}}
    policy = {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
              "metadata": {"name": "web", "namespace": "default"},
              "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}],
                       "placement": {"spreadConstraints": [{"maxGroups": 1}],
                                     "replicaScheduling": {"replicaDivisionPreference": "Aggregated"}}}}
    out = run(SCHEDULE, {"clusters": [cluster(n, cpu) for n, cpu in general.items()],
                         "estimators": {o.name: {"address": o.address} for o in (low, high)},
                         "policy": policy, "workload": deployment})
    spec = out["binding"]
    assert spec["replicas"] == 2
    assert spec["replicaRequirements"]["resourceRequest"] == {"cpu": "1"}
    # Defaults: spread by cluster with minGroups 1 (webhook), Divided (CRD default).
    assert spec["placement"]["spreadConstraints"] == [{"spreadByField": "cluster", "maxGroups": 1, "minGroups": 1}]
    assert spec["placement"]["replicaScheduling"]["replicaSchedulingType"] == "Divided"
    assert out["targets"] == [{"name": high.name, "replicas": 2}], out


def test_schedule_tries_cluster_affinities_term_by_term(ranked):
    low, high, general = ranked
    clusters = [cluster(n, cpu) for n, cpu in general.items()]
    estimators = {o.name: {"address": o.address} for o in (low, high)}
    terms = [{"affinityName": "nowhere", "clusterNames": ["member-zz"]},
             {"affinityName": "low-only", "clusterNames": [low.name]}]
    out = run(SCHEDULE, {"clusters": clusters, "estimators": estimators,
                         "binding": binding(1, {**ONE_CLUSTER, "clusterAffinities": terms})})
    assert out["targets"] == [{"name": low.name, "replicas": 1}] and out["affinityName"] == "low-only", out

    out = run(SCHEDULE, {"clusters": clusters, "estimators": estimators,
                         "binding": binding(1, {**ONE_CLUSTER, "clusterAffinities": terms[:1]})})
    assert out["targets"] == [] and out["fitError"] is True
    assert out["error"].startswith("0/2 clusters are available: 2 cluster(s) did not match the placement cluster affinity")


def test_schedule_rejects_bad_input_naming_the_field():
    assert "clusters" in bad(SCHEDULE, {"clusters": []})
    assert "policy, workload" in bad(SCHEDULE, {"clusters": [cluster("a", 1)]})
    assert "featureGates" in bad(SCHEDULE, {"clusters": [cluster("a", 1)], "featureGates": {"NoSuchGate": True},
                                            "binding": binding(1, {})})
    assert "clusters[1].metadata.name" in bad(SCHEDULE, {"clusters": [cluster("a", 1), cluster("a", 1)],
                                                         "binding": binding(1, {})})
