"""karmada-place reading a running Karmada control plane (--karmada-kubeconfig), and the
per-target components Karmada v1.19 writes into spec.clusters[].components.

The control plane is tests/client/fakekarmada.py (GET only, paged lists, bearer token, HTTPS
on demand); the estimators are fake gRPC servers that answer a fixed number of sets and record
what they are sent. Expected values are worked by hand from Karmada's code: the resource
detector's policy choice (pkg/detector/compare.go), the scheduler's estimator address
(pkg/estimator/client/service.go), its assumptions (pkg/scheduler/scheduler.go) and v1.19's
AssignReplicas (pkg/scheduler/core/common.go, PRs 7837 and 7833).
"""

from __future__ import annotations

import json

import pytest

from scheduler_client import cli
from scheduler_client.controlplane import binding_name, estimator_service
from scheduler_client.karmada import DEFAULT_GATES, MULTIPLE_POD_TEMPLATES, TargetComponent, target_components
from scheduler_client.launch import free_port
from scheduler_client.karmada.policy import matching_policy, parse_placement, parse_policy
from tests.client import fakekarmada as fk
from tests.client.test_placement import ONE_MEMBER, pytorch
from tests.support.pki import Authority

KIND = {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob"}
JOB = fk.pytorchjob("train", "ml", labels={"team": "vision"})


# --- which policy Karmada's detector applies ----------------------------------------------


def pp(name, selector, namespace="ml", priority=None, deleting=False):
    raw = fk.policy(name, namespace, {**KIND, **selector}, priority)
    if deleting:
        raw["metadata"]["deletionTimestamp"] = "2026-09-01T00:00:00Z"
    return parse_policy(raw)


def cpp(name, selector, priority=None):
    return parse_policy(fk.policy(name, None, {**KIND, **selector}, priority))


BY_NAME = {"name": "train"}
BY_LABEL = {"labelSelector": {"matchLabels": {"team": "vision"}}}
BY_KIND = {}

POLICY_CASES = [
    ("a selector naming the job beats a label selector", [pp("a-label", BY_LABEL), pp("z-name", BY_NAME)], "z-name"),
    ("a label selector beats a selector of the kind alone", [pp("a-kind", BY_KIND), pp("b-label", BY_LABEL)],
     "b-label"),
    ("spec.priority beats how specific the match is", [pp("by-name", BY_NAME), pp("kind-9", BY_KIND, priority=9)],
     "kind-9"),
    ("equal priority and match: the smallest name", [pp("beta", BY_KIND), pp("alpha", BY_KIND)], "alpha"),
    ("a negative priority loses to the default 0", [pp("low", BY_NAME, priority=-1), pp("plain", BY_KIND)], "plain"),
    ("a policy of another namespace never selects the job", [pp("other", BY_NAME, namespace="web")], None),
    ("a policy being deleted selects nothing", [pp("gone", BY_NAME, deleting=True), pp("kept", BY_KIND)], "kept"),
    ("a ClusterPropagationPolicy only when no PropagationPolicy matches",
     [cpp("cluster-wide", BY_NAME, priority=100), pp("local", BY_KIND)], "local"),
    ("a ClusterPropagationPolicy when none of the namespace's matches",
     [cpp("cluster-wide", BY_KIND), pp("local", {"labelSelector": {"matchLabels": {"team": "nlp"}}})], "cluster-wide"),
    ("another kind is not selected", [pp("jobs", {"apiVersion": "batch/v1", "kind": "Job"})], None),
]


@pytest.mark.parametrize("policies,expected", [c[1:] for c in POLICY_CASES], ids=[c[0] for c in POLICY_CASES])
def test_the_policy_karmadas_detector_applies(policies, expected):
    chosen = matching_policy(policies, JOB)
    assert (chosen.name if chosen else None) == expected


# --- where karmada-scheduler dials an estimator --------------------------------------------

SERVICE_CASES = [
    ("ExternalName: externalName and the targetPort of port 10352", fk.service("m", "10.0.0.7", 31000), False,
     "10.0.0.7:31000"),
    ("no Service: nothing, unless asked to dial Karmada's DNS name", None, False, None),
    ("no Service with --enable-scheduler-estimator: Karmada's DNS name", None, True,
     "karmada-scheduler-estimator-m.karmada-system.svc.cluster.local:10352"),
    ("a ClusterIP Service is not dialled", fk.service("m", "", 31000, kind="ClusterIP"), True, None),
    ("a Service without port 10352 is not dialled", fk.service("m", "10.0.0.7", 31000, service_port=80), True, None),
    ("an IPv6 externalName is bracketed", fk.service("m", "fd00::7", 31000), False, "[fd00::7]:31000"),
]


@pytest.mark.parametrize("service,with_missing,address", [c[1:] for c in SERVICE_CASES],
                         ids=[c[0] for c in SERVICE_CASES])
def test_the_estimator_address_karmada_scheduler_dials(service, with_missing, address):
    found = estimator_service("m", service, "karmada-system", "karmada-scheduler-estimator", 10352, with_missing)
    assert found.address == address and found.how


def test_named_target_ports_are_refused_as_karmada_refuses_them():
    service = fk.service("m", "10.0.0.7", 31000)
    service["spec"]["ports"][0]["targetPort"] = "grpc"
    found = estimator_service("m", service, "karmada-system", "karmada-scheduler-estimator", 10352, True)
    assert found.address is None and "not a number" in found.how


def test_the_binding_karmada_makes_for_a_job():
    assert binding_name(JOB) == "ml/train-pytorchjob"
    assert binding_name({"kind": "ClusterRole", "metadata": {"name": "system:x"}}) == "default/system.x-clusterrole"


# --- v1.19's spec.clusters[].components ------------------------------------------------------

GATE_ON = {**DEFAULT_GATES, MULTIPLE_POD_TEMPLATES: True}
MASTER_WORKERS = (TargetComponent("master", 1), TargetComponent("worker", 2))
COMPONENT_CASES = [
    ("gate on, two components, cluster spread 1..1: every component with its full replicas", GATE_ON, 2, ONE_MEMBER,
     MASTER_WORKERS),
    ("gate off: Karmada reads no components and writes none", DEFAULT_GATES, 2, ONE_MEMBER, ()),
    ("no 1..1 spread (a copy per member): none", GATE_ON, 2, {"replicaScheduling": ONE_MEMBER["replicaScheduling"]},
     ()),
    ("one component only: the legacy scalar result, no components", GATE_ON, 0, ONE_MEMBER, ()),
]


@pytest.mark.parametrize("gates,workers,placement,expected", [c[1:] for c in COMPONENT_CASES],
                         ids=[c[0] for c in COMPONENT_CASES])
def test_the_components_karmada_v1_19_writes(gates, workers, placement, expected):
    job = pytorch(1, workers=workers)  # workers=0: the Worker component has 0 replicas, still a component
    if workers == 0:
        job = type(job)(job.api_version, job.kind, job.namespace, job.name, job.components[:1])
    assert target_components(job, parse_placement(placement), gates) == expected


# --- the command, against a fake control plane -----------------------------------------------

GATES = ("MultiplePodTemplatesScheduling=true,SchedulingOvercommitProtection=true,"
         "CustomizedClusterResourceModeling=false")


@pytest.fixture
def plane(tmp_path):
    """member-a/b/c (16 cpu, 8 GPUs each) with estimators answering 2, 3, 4 sets; ml's policies."""
    estimators = {m: fk.serve_estimator(sets) for m, sets in (("member-a", 2), ("member-b", 3), ("member-c", 4))}
    karmada = fk.FakeKarmada(page=2)
    karmada.add(*(fk.cluster(m) for m in estimators))
    karmada.add(*(fk.service(m, "127.0.0.1", port) for m, (_, _, port) in estimators.items()))
    karmada.add(fk.policy("vision", "ml", {**KIND, "labelSelector": {"matchLabels": {"team": "vision"}}}),
                fk.policy("everything", None, {**KIND}, one_member=False))
    (tmp_path / "job.json").write_text(json.dumps(JOB))
    yield karmada, {m: servicer for m, (servicer, _, _) in estimators.items()}, tmp_path
    karmada.stop()
    for _, server, _ in estimators.values():
        server.stop(0)


def place(tmp_path, kubeconfig, *extra):
    return cli.place_json(["--job", str(tmp_path / "job.json"), "--karmada-kubeconfig", str(kubeconfig),
                           "--feature-gates", GATES, "--karmada-compatible", *extra])


def test_the_control_plane_gives_clusters_policy_estimators_and_what_is_in_flight(plane):
    karmada, estimators, tmp = plane
    karmada.add(fk.binding("ml", "earlier", ["member-c"]),  # in flight on member-c: 2 GPUs
                fk.binding("ml", "done", ["member-b"], healthy=("member-b",)),  # Healthy: released
                fk.binding("ml", "train", ["member-a"]))  # the job's own binding: left out
    code, out, error = place(tmp, karmada.kubeconfig(tmp))
    assert (code, error) == (0, "")
    # General: 8 GPUs / 2 = 4 sets, member-c 6 / 2 = 3; accurate a 2, b 3, c 4 -> a 2, b 3, c 3:
    # member-b and member-c tie at 3, member-b first by name.
    assert out["karmada"]["sets"] == {"member-a": 2, "member-b": 3, "member-c": 3}
    assert out["targets"] == [{"name": "member-b", "replicas": 0, "components": [
        {"name": "master", "replicas": 1}, {"name": "worker", "replicas": 2}]}]
    assert out["karmada"]["targets"] == out["targets"]
    assert all(m["components"] == out["targets"][0]["components"] for m in out["members"])
    assert out["controlPlane"]["policy"] == "PropagationPolicy ml/vision"
    assert out["controlPlane"]["policiesRead"] == 2
    assert [item["binding"] for item in out["controlPlane"]["inFlight"]["member-c"]] == ["ml/earlier-pytorchjob"]
    assert set(out["controlPlane"]["inFlight"]) == {"member-c"}
    # Each estimator is sent its own member's in-flight workloads, as karmada-scheduler sends them.
    sent = {m: [[(c.name, c.replicas) for c in w.components] for r in s.requests for w in r.assumedWorkloads]
            for m, s in estimators.items()}
    assert sent == {"member-a": [], "member-b": [], "member-c": [[("master", 1), ("worker", 2)]]}
    # Lists were read a page (2 items) at a time.
    assert karmada.seen.count("/apis/cluster.karmada.io/v1alpha1/clusters") == 2


def test_the_table_names_the_control_plane_and_the_components(plane, capsys):
    karmada, _, tmp = plane
    karmada.add(fk.binding("ml", "earlier", ["member-c"]))
    code = cli.main(["--job", str(tmp / "job.json"), "--karmada-kubeconfig", str(karmada.kubeconfig(tmp)),
                     "--feature-gates", GATES, "--karmada-compatible"])
    text = capsys.readouterr().out
    assert code == 0
    assert f"control plane: {karmada.url}" in text
    assert "in flight on member-c: PyTorchJob ml/earlier (master x1, worker x2" in text
    assert "components: master 1, worker 2 on member-b (spec.clusters[].components" in text
    assert "policy: PropagationPolicy ml/vision" in text


def test_with_overcommit_protection_off_nothing_in_flight_is_sent(plane):
    karmada, estimators, tmp = plane
    karmada.add(fk.binding("ml", "earlier", ["member-c"]))
    code, out, _ = place(tmp, karmada.kubeconfig(tmp), "--feature-gates",
                         "MultiplePodTemplatesScheduling=true,CustomizedClusterResourceModeling=false")
    assert code == 0 and out["karmada"]["sets"] == {"member-a": 2, "member-b": 3, "member-c": 4}
    assert [t["name"] for t in out["targets"]] == ["member-c"]
    assert not any(r.assumedWorkloads for r in estimators["member-c"].requests)
    assert any("not deducted" in w for w in out["warnings"])


def test_a_member_whose_estimator_karmada_cannot_dial_fails_the_accurate_call(plane):
    # member-a's Service is ClusterIP: karmada-scheduler has no connection to it, so its accurate
    # call fails and the scheduler drops every member's accurate answer (path c): general alone,
    # 4 sets each, member-a first by name.
    karmada, _, tmp = plane
    karmada.objects = [o for o in karmada.objects if o["metadata"]["name"] != "karmada-scheduler-estimator-member-a"]
    karmada.add(fk.service("member-a", "", 1234, kind="ClusterIP"))
    code, out, _ = place(tmp, karmada.kubeconfig(tmp))
    assert code == 0 and [t["name"] for t in out["targets"]] == ["member-a"]
    assert out["karmada"]["accurateDropped"] is True
    assert "ClusterIP" in out["controlPlane"]["estimators"]["member-a"]["how"]
    assert out["controlPlane"]["estimators"]["member-a"]["address"] is None


def test_no_matching_policy_means_karmada_would_not_propagate_the_job(plane, capsys):
    karmada, _, tmp = plane
    karmada.objects = [o for o in karmada.objects if "Policy" not in o["kind"]]
    code = cli.main(["--job", str(tmp / "job.json"), "--karmada-kubeconfig", str(karmada.kubeconfig(tmp))])
    assert code == cli.EXIT_NONE_FITS
    assert "selects PyTorchJob ml/train: Karmada would not propagate it" in capsys.readouterr().err


def test_a_policy_file_wins_over_the_control_planes(plane, tmp_path):
    karmada, _, tmp = plane
    policy = fk.policy("file", "ml", {**KIND}, one_member=False)
    (tmp / "policy.json").write_text(json.dumps(policy))
    code, out, _ = place(tmp, karmada.kubeconfig(tmp), "--policy", str(tmp / "policy.json"))
    assert code == 0 and sorted(t["name"] for t in out["targets"]) == ["member-a", "member-b", "member-c"]
    assert out["controlPlane"]["policy"] is None
    assert all(t["components"] == [] for t in out["targets"])  # no 1..1 spread: v1.19 writes none


# --- errors: the file and field, or the control plane and a distinct exit status --------------


def kubeconfig_with(tmp, **changes):
    config = {"apiVersion": "v1", "kind": "Config", "current-context": "k",
              "clusters": [{"name": "k", "cluster": {"server": "https://127.0.0.1:1"}}],
              "users": [{"name": "u", "user": {"token": "t"}}],
              "contexts": [{"name": "k", "context": {"cluster": "k", "user": "u"}}]}
    for key, value in changes.items():
        if key == "user":
            config["users"][0]["user"] = value
        elif key == "cluster":
            config["clusters"][0]["cluster"] = value
        else:
            config[key.replace("_", "-")] = value
    path = tmp / "bad-kubeconfig"
    path.write_text(json.dumps(config))
    return path


KUBECONFIG_CASES = [
    ("no current context", dict(current_context=""), "current-context"),
    ("a context that does not exist", dict(current_context="nope"), "contexts: no entry named 'nope'"),
    ("a server that is not a URL", dict(cluster={"server": "karmada:5443"}), "clusters[k].cluster.server"),
    ("a credential plugin", dict(user={"exec": {"command": "aws"}}), "users[u].user.exec"),
    ("a CA file that does not exist",
     dict(cluster={"server": "https://127.0.0.1:1", "certificate-authority": "no.crt"}),
     "clusters[k].cluster.certificate-authority: cannot read"),
    ("a client certificate without its key", dict(user={"client-certificate-data": "YWJj"}), "users[u].user"),
    ("a token file that does not exist", dict(user={"tokenFile": "token"}), "users[u].user.tokenFile"),
]


@pytest.mark.parametrize("changes,named", [c[1:] for c in KUBECONFIG_CASES], ids=[c[0] for c in KUBECONFIG_CASES])
def test_a_kubeconfig_that_cannot_be_used_names_the_file_and_field(tmp_path, changes, named, capsys):
    (tmp_path / "job.json").write_text(json.dumps(JOB))
    path = kubeconfig_with(tmp_path, **changes)
    code = cli.main(["--job", str(tmp_path / "job.json"), "--karmada-kubeconfig", str(path)])
    err = capsys.readouterr().err
    assert code == cli.EXIT_BAD_INPUT and str(path) in err and named in err


def test_a_control_plane_that_cannot_be_reached_has_its_own_exit_status(tmp_path, capsys):
    (tmp_path / "job.json").write_text(json.dumps(JOB))
    port = free_port()
    path = kubeconfig_with(tmp_path, cluster={"server": f"https://127.0.0.1:{port}"})
    code = cli.main(["--job", str(tmp_path / "job.json"), "--karmada-kubeconfig", str(path)])
    err = capsys.readouterr().err
    assert code == cli.EXIT_UNREACHABLE == 4
    assert f"cannot reach the Karmada control plane at https://127.0.0.1:{port}" in err


def test_refused_credentials_name_the_url(plane, capsys):
    karmada, _, tmp = plane
    code = cli.main(["--job", str(tmp / "job.json"), "--karmada-kubeconfig",
                     str(karmada.kubeconfig(tmp, token="wrong"))])
    err = capsys.readouterr().err
    assert code == cli.EXIT_UNREACHABLE
    assert f"GET {karmada.url}/apis/cluster.karmada.io/v1alpha1/clusters: HTTP 401" in err and "refused" in err


def test_clusters_files_and_the_control_plane_exclude_each_other(plane, capsys):
    karmada, _, tmp = plane
    code = cli.main(["--job", str(tmp / "job.json"), "--karmada-kubeconfig", str(karmada.kubeconfig(tmp)),
                     "--clusters", str(tmp / "job.json")])
    assert code == cli.EXIT_BAD_INPUT and "exclude each other" in capsys.readouterr().err


def test_a_cluster_the_control_plane_serves_that_cannot_be_read_is_named(plane, capsys):
    karmada, _, tmp = plane
    broken = fk.cluster("member-z")
    broken["status"]["resourceSummary"]["allocatable"]["cpu"] = "lots"
    karmada.add(broken)
    code = cli.main(["--job", str(tmp / "job.json"), "--karmada-kubeconfig", str(karmada.kubeconfig(tmp))])
    err = capsys.readouterr().err
    assert code == cli.EXIT_BAD_INPUT and "Cluster member-z: status.resourceSummary.allocatable" in err


@pytest.fixture(scope="module")
def https_plane(tmp_path_factory):
    ca = Authority("karmada-ca")
    karmada = fk.FakeKarmada(tls=ca.issue("karmada-apiserver", ips=("127.0.0.1",)))
    karmada.add(fk.cluster("member-a"), fk.policy("vision", "ml", {**KIND}))
    yield karmada, ca
    karmada.stop()


def test_https_with_the_kubeconfigs_certificate_authority(https_plane, tmp_path):
    karmada, ca = https_plane
    (tmp_path / "job.json").write_text(json.dumps(JOB))
    code, out, error = place(tmp_path, karmada.kubeconfig(tmp_path, ca_pem=ca.pem))
    assert (code, error) == (0, "") and out["controlPlane"]["server"].startswith("https://")
    assert [t["name"] for t in out["targets"]] == ["member-a"]


def test_https_with_another_authority_is_not_trusted(https_plane, tmp_path, capsys):
    karmada, _ = https_plane
    (tmp_path / "job.json").write_text(json.dumps(JOB))
    code = cli.main(["--job", str(tmp_path / "job.json"), "--karmada-kubeconfig",
                     str(karmada.kubeconfig(tmp_path, ca_pem=Authority("other").pem))])
    err = capsys.readouterr().err
    assert code == cli.EXIT_UNREACHABLE and "certificate is not trusted" in err


# --- --in-flight FILE: bindings named as in flight, whatever their status -------------------------


def test_in_flight_files_replace_the_control_planes_bindings(plane):
    # The control plane holds `earlier` in flight on member-c; the file names `named` on member-a,
    # reported Healthy there: a file is taken as given, so member-a's estimator is sent it and
    # member-c's nothing, and the control plane's bindings are not read at all.
    karmada, estimators, tmp = plane
    karmada.add(fk.binding("ml", "earlier", ["member-c"]))
    named = fk.binding("ml", "named", ["member-a"], healthy=("member-a",), scheduled="2020-01-01T00:00:00Z")
    (tmp / "flights.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [named]}))
    code, out, _ = place(tmp, karmada.kubeconfig(tmp), "--in-flight", str(tmp / "flights.json"))
    assert code == 0
    assert set(out["controlPlane"]["inFlight"]) == {"member-a"}
    assert out["controlPlane"]["inFlightFrom"] == str(tmp / "flights.json")
    assert [len(r.assumedWorkloads) for r in estimators["member-a"].requests] == [1]
    assert [len(r.assumedWorkloads) for r in estimators["member-c"].requests] == [0]
    assert "/apis/work.karmada.io/v1alpha2/resourcebindings" not in karmada.seen


def test_an_empty_in_flight_list_means_nothing_is_in_flight(plane):
    karmada, estimators, tmp = plane
    karmada.add(fk.binding("ml", "earlier", ["member-c"]))
    (tmp / "none.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": []}))
    code, out, _ = place(tmp, karmada.kubeconfig(tmp), "--in-flight", str(tmp / "none.json"))
    assert code == 0 and out["controlPlane"]["inFlight"] == {}
    assert not any(r.assumedWorkloads for s in estimators.values() for r in s.requests)


def test_an_in_flight_file_without_bindings_is_named(tmp_path, capsys):
    (tmp_path / "job.json").write_text(json.dumps(JOB))
    (tmp_path / "clusters.json").write_text(json.dumps(fk.cluster("member-a")))
    code = cli.main(["--job", str(tmp_path / "job.json"), "--clusters", str(tmp_path / "clusters.json"),
                     "--in-flight", str(tmp_path / "job.json")])
    err = capsys.readouterr().err
    assert code == cli.EXIT_BAD_INPUT and f"{tmp_path / 'job.json'}: kind: no ResourceBinding objects" in err


def test_in_flight_files_work_without_a_control_plane(tmp_path):
    # Two members of 8 GPUs: 4 small sets each, member-a first by name. One small set in flight on
    # member-a (2 GPUs): 3 against 4, member-b.
    (tmp_path / "job.json").write_text(json.dumps(JOB))
    (tmp_path / "clusters.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [
        fk.cluster("member-a"), fk.cluster("member-b")]}))
    (tmp_path / "flights.json").write_text(json.dumps(fk.binding("ml", "earlier", ["member-a"])))
    argv = ["--job", str(tmp_path / "job.json"), "--clusters", str(tmp_path / "clusters.json"),
            "--feature-gates", GATES, "--karmada-compatible"]
    _, alone, _ = cli.place_json(argv)
    code, busy, _ = cli.place_json(argv + ["--in-flight", str(tmp_path / "flights.json")])
    assert [t["name"] for t in alone["targets"]] == ["member-a"] and alone["karmada"]["sets"]["member-a"] == 4
    assert code == 0 and [t["name"] for t in busy["targets"]] == ["member-b"]
    assert busy["karmada"]["sets"] == {"member-a": 3, "member-b": 4}
    member_a = next(m for m in busy["members"] if m["name"] == "member-a")
    assert member_a["inFlight"] and "in-flight" in member_a["estimateReasons"]["general"]
