"""Accurate estimators over real loopback gRPC: answers, one deadline for the fan-out,
failures as -1 with a reason, the `object` metadata, and plaintext / TLS / mutual TLS."""

from __future__ import annotations

import json
import threading
from concurrent import futures

import grpc
import pytest

from estimator.core.model import ComponentSetsQuery
from estimator.pb import estimator_pb2 as pb
from estimator.pb import service_pb2_grpc
from scheduler_client.accurate import ClientTLS, Endpoint, ask_all, ask_component_sets, karmada_service_address
from scheduler_client.cli import main
from scheduler_client.launch import free_port
from scheduler_client.sources import load_job
from tests.support.pki import Authority
from tests.support.servers import DEMO, start_server

MEMBERS = ("member-a", "member-b", "member-c")
TRAIN_BIG = load_job(DEMO / "jobs" / "train-big.yaml")
QUERY = ComponentSetsQuery(TRAIN_BIG.components, TRAIN_BIG.namespace)
SERVICE_NAME = "karmada-scheduler-estimator-member-a.karmada-system.svc"
OTHER_SERVICE_NAME = "karmada-scheduler-estimator-member-z.karmada-system.svc"


def stop_all(servers) -> None:
    with futures.ThreadPoolExecutor() as pool:  # each stop waits out its own grace period
        list(pool.map(lambda server: server.stop(0), servers))


@pytest.fixture(scope="module")
def estimators():
    servers = {m: start_server(m) for m in MEMBERS}
    yield {m: Endpoint(m, f"127.0.0.1:{s.port}") for m, s in servers.items()}
    stop_all(servers.values())


class FakeEstimator(service_pb2_grpc.EstimatorServicer):
    """Answers `sets` after `delay` seconds and records what it was sent."""

    def __init__(self, sets: int = 5, delay: float = 0.0):
        self.sets, self.delay = sets, delay
        self.requests: list[pb.MaxAvailableComponentSetsRequest] = []
        self.metadata: list[dict] = []
        self.release = threading.Event()

    def MaxAvailableComponentSets(self, request, context):
        self.requests.append(request)
        self.metadata.append(dict(context.invocation_metadata()))
        self.release.wait(self.delay)
        return pb.MaxAvailableComponentSetsResponse(maxSets=self.sets)


@pytest.fixture
def fake():
    servers = []

    def serve(sets=5, delay=0.0):
        servicer = FakeEstimator(sets, delay)
        server = grpc.server(futures.ThreadPoolExecutor(4))
        service_pb2_grpc.add_EstimatorServicer_to_server(servicer, server)
        port = server.add_insecure_port("127.0.0.1:0")
        server.start()
        servers.append((server, servicer))
        return servicer, f"127.0.0.1:{port}"

    yield serve
    for server, servicer in servers:
        servicer.release.set()
        server.stop(0)


def test_real_estimators_answer_the_scenario(estimators):
    answers = ask_all(list(estimators.values()), QUERY, TRAIN_BIG.object_key)
    assert {m: a.value for m, a in answers.items()} == {"member-a": 0, "member-b": 0, "member-c": 1}
    assert all(a.reason == "" for a in answers.values())


def test_the_request_names_the_cluster_and_carries_the_object_metadata(fake):
    servicer, address = fake(sets=7)
    answer = ask_component_sets(Endpoint("member-x", address), QUERY, TRAIN_BIG.object_key, 3.0)
    assert answer.value == 7
    request = servicer.requests[0]
    assert request.cluster == "member-x" and request.namespace == "ml-team"
    assert [(c.name, c.replicas) for c in request.components] == [("master", 1), ("worker", 2)]
    assert servicer.metadata[0]["object"] == "kind=PyTorchJob, name=ml-team/train-big"


def test_one_deadline_bounds_the_whole_fan_out_and_a_slow_estimator_counts_as_unknown(fake, estimators):
    # The slow estimator holds its answer until the test ends, so only the deadline can
    # end its call: it was asked, cut off, and the other member still answered.
    servicer, slow = fake(sets=9, delay=600.0)
    endpoints = [Endpoint("member-slow", slow), estimators["member-c"]]
    answers = ask_all(endpoints, QUERY, TRAIN_BIG.object_key, timeout=5.0)
    assert answers["member-slow"].value == -1 and "deadline exceeded" in answers["member-slow"].reason
    assert len(servicer.requests) == 1 and not servicer.release.is_set()
    assert answers["member-c"].value == 1


def test_an_unreachable_estimator_counts_as_unknown_without_waiting_for_the_deadline():
    # Refused at once, so the reason is "unreachable", not the deadline running out.
    address = f"127.0.0.1:{free_port()}"
    answer = ask_component_sets(Endpoint("member-gone", address), QUERY, TRAIN_BIG.object_key, 60.0)
    assert answer.value == -1 and f"unreachable at {address}" in answer.reason
    assert "deadline" not in answer.reason


def test_an_estimator_error_is_kept_as_the_reason(estimators):
    wrong = Endpoint("member-z", estimators["member-a"].address)  # the server serves member-a only
    answer = ask_component_sets(wrong, QUERY, TRAIN_BIG.object_key, 3.0)
    assert answer.value == -1 and "does not match" in answer.reason


def test_karmadas_service_naming():
    assert karmada_service_address("member-a") == "karmada-scheduler-estimator-member-a.karmada-system.svc:10352"
    assert karmada_service_address("m", "ns", "est", 1) == "est-m.ns.svc:1"


# --- TLS ----------------------------------------------------------------------------------




@pytest.fixture(scope="module")
def pki(tmp_path_factory):
    directory = tmp_path_factory.mktemp("client-pki")
    ca, other = Authority("test-ca"), Authority("other-ca")

    def write(name, content):
        path = directory / name
        path.write_bytes(content)
        return str(path)

    server_cert, server_key = ca.issue("estimator", dns=("localhost",), ips=("127.0.0.1",))
    named_cert, named_key = ca.issue("estimator", dns=(SERVICE_NAME,))
    client_cert, client_key = ca.issue("karmada-scheduler")
    return {
        "ca": write("ca.crt", ca.pem), "other_ca": write("other.crt", other.pem),
        "server": {"grpc_auth_cert_file": write("s.crt", server_cert), "grpc_auth_key_file": write("s.key", server_key)},
        "named": {"grpc_auth_cert_file": write("n.crt", named_cert), "grpc_auth_key_file": write("n.key", named_key)},
        "client_cert": write("c.crt", client_cert), "client_key": write("c.key", client_key),
    }


@pytest.fixture(scope="module")
def tls_servers(pki):
    servers = {
        "tls": start_server("member-a", **pki["server"]),
        "mtls": start_server("member-a", **pki["server"], grpc_client_ca_file=pki["ca"]),
        "named": start_server("member-a", **pki["named"], grpc_client_ca_file=pki["ca"]),
    }
    yield {kind: f"127.0.0.1:{s.port}" for kind, s in servers.items()}
    stop_all(servers.values())


TLS_CASES = [
    ("TLS verified with the CA", "tls", dict(ca_file="ca"), 0),
    ("mutual TLS with the client certificate", "mtls", dict(ca_file="ca", cert_file="client_cert",
                                                           key_file="client_key"), 0),
    ("mutual TLS without a client certificate is refused", "mtls", dict(ca_file="ca"), -1),
    ("a server certificate from another CA is refused", "tls", dict(ca_file="other_ca"), -1),
    ("plaintext to a TLS estimator fails", "tls", dict(), -1),
    ("skip-verify accepts a certificate for another name", "named",
     dict(insecure_skip_verify=True, cert_file="client_cert", key_file="client_key"), 0),
    ("verification by address fails for a certificate for another name", "named",
     dict(ca_file="ca", cert_file="client_cert", key_file="client_key"), -1),
    ("by address, the server name the certificate holds is verified instead", "named",
     dict(ca_file="ca", cert_file="client_cert", key_file="client_key", server_name=SERVICE_NAME), 0),
    ("a server name the certificate does not hold is refused", "named",
     dict(ca_file="ca", cert_file="client_cert", key_file="client_key", server_name=OTHER_SERVICE_NAME), -1),
    ("the server name still needs the certificate's CA", "named",
     dict(ca_file="other_ca", cert_file="client_cert", key_file="client_key", server_name=SERVICE_NAME), -1),
]


@pytest.mark.parametrize("server,options,sets", [c[1:] for c in TLS_CASES], ids=[c[0] for c in TLS_CASES])
def test_connection_security(pki, tls_servers, server, options, sets):
    options = dict(options)
    server_name = options.pop("server_name", "")
    files = {k: (pki[v] if isinstance(v, str) else v) for k, v in options.items()}
    tls = ClientTLS.from_files(**files)
    endpoint = Endpoint("member-a", tls_servers[server], tls=tls, server_name=server_name)
    answer = ask_component_sets(endpoint, QUERY, TRAIN_BIG.object_key, 3.0)
    assert answer.value == sets, answer.reason
    if sets < 0:
        assert answer.reason


# karmada-place through an address, the certificate naming the Service (a port-forward):
# member-a's estimator answers 0 sets for train-big (two GPUs a node, a worker asks 3).
SERVER_NAME_CASES = [
    ("without a server name, hostname verification fails and the reason says what to give", [], -1,
     "the server's certificate does not name 127.0.0.1 (hostname verification); give a name it holds with "
     "--estimator-server-name"),
    ("--estimator-server-name NAME for every member", [SERVICE_NAME], 0, "scheduler-estimator at 127.0.0.1:"),
    ("--estimator-server-name MEMBER=NAME for one member", [f"member-a={SERVICE_NAME}"], 0,
     "scheduler-estimator at 127.0.0.1:"),
    ("a member's own name wins over the name for every member", [OTHER_SERVICE_NAME, f"member-a={SERVICE_NAME}"], 0,
     "scheduler-estimator at 127.0.0.1:"),
    ("a name the certificate does not hold is refused", [OTHER_SERVICE_NAME], -1,
     f"the server's certificate does not name {OTHER_SERVICE_NAME} (hostname verification)"),
]


@pytest.mark.parametrize("names,accurate,reason", [c[1:] for c in SERVER_NAME_CASES],
                         ids=[c[0] for c in SERVER_NAME_CASES])
def test_karmada_place_verifies_the_server_name_given(capsys, pki, tls_servers, names, accurate, reason):
    code = main(["--job", str(DEMO / "jobs" / "train-big.yaml"), "--member", f"member-a={DEMO / 'member-a.yaml'}",
                 "--estimator", f"member-a={tls_servers['named']}", "--estimator-ca-file", pki["ca"],
                 "--estimator-cert-file", pki["client_cert"], "--estimator-key-file", pki["client_key"],
                 *[a for name in names for a in ("--estimator-server-name", name)], "-o", "json"])
    out, err = capsys.readouterr()
    assert code in (0, 3, 5), err
    (member,) = json.loads(out)["members"]
    assert member["estimates"]["accurate"] == accurate, member["estimateReasons"]["accurate"]
    assert reason in member["estimateReasons"]["accurate"]


SERVER_NAME_ERRORS = [
    ("a member that does not exist", ["member-z=" + SERVICE_NAME], "no member member-z (members: member-a)"),
    ("the same member twice", [f"member-a={SERVICE_NAME}", f"member-a={OTHER_SERVICE_NAME}"],
     "--estimator-server-name: given twice for member-a"),
    ("a name for every member twice", [SERVICE_NAME, OTHER_SERVICE_NAME],
     "--estimator-server-name: given twice for every member"),
    ("something that is no host name", ["member-a=not a name"], "'not a name' is not a host name"),
]


@pytest.mark.parametrize("names,words", [c[1:] for c in SERVER_NAME_ERRORS], ids=[c[0] for c in SERVER_NAME_ERRORS])
def test_a_bad_server_name_is_bad_input(capsys, names, words):
    code = main(["--job", str(DEMO / "jobs" / "train-big.yaml"), "--member", f"member-a={DEMO / 'member-a.yaml'}",
                 *[a for name in names for a in ("--estimator-server-name", name)]])
    assert code == 2 and words in capsys.readouterr().err


SERVER_NAME_WARNINGS = [
    ("in plaintext no name is verified", [], "dialled in plaintext, where no name is verified"),
    ("skip-verify checks no name", ["--insecure-skip-estimator-verify"], "is not used with --insecure-skip"),
]


@pytest.mark.parametrize("flags,words", [c[1:] for c in SERVER_NAME_WARNINGS],
                         ids=[c[0] for c in SERVER_NAME_WARNINGS])
def test_a_server_name_that_cannot_be_used_is_warned_about(capsys, flags, words):
    main(["--job", str(DEMO / "jobs" / "train-big.yaml"), "--member", f"member-a={DEMO / 'member-a.yaml'}",
          "--estimator-server-name", SERVICE_NAME, *flags, "-o", "json"])
    assert any(words in w for w in json.loads(capsys.readouterr().out)["warnings"])
