"""Loaded configurations used against servers: the fake API server over HTTPS with client
certificates (kubeconfig data fields, tls-server-name, in-cluster, exec-plugin certificates),
exec plugins re-run on a 401 and on expiry, and a recording server that shows the headers,
query and proxy route a request takes."""

from __future__ import annotations

import json
import ssl
import threading
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from estimator.cluster.watch import ReflectorOptions, WatchClusterState
from estimator.cluster.watch.kubeclient import USER_AGENT, ApiError, KubeClient, Unavailable
from estimator.cluster.watch.kubecredentials import load_configuration
from tests.cluster.test_kubeconfig import b64, exec_kubeconfig, plugin_env, runs, service_account, write_kubeconfig
from tests.cluster.test_watch import FAST, small_cluster, wait_until
from tests.service.test_mtls import CA, SERVER_NAME
from tests.support.fakekube import FakeKube
from tests.support.kubeobjects import node_object, pod_object, reference_cache, state_view

V1 = "client.authentication.k8s.io/v1"


def node_names(client: KubeClient) -> list[str]:
    return sorted(item["metadata"]["name"] for item in json.loads(client.list_page("Node", limit=50))["items"])


def server_context(directory, ca: CA) -> ssl.SSLContext:
    """A server context with a certificate from `ca` (for 127.0.0.1, localhost and SERVER_NAME)."""
    server = ca.issue("apiserver", server=True)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "s.crt").write_bytes(server.cert)
    (directory / "s.key").write_bytes(server.key)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(directory / "s.crt", directory / "s.key")
    return context


@pytest.fixture
def mtls(tmp_path):
    """The fake over HTTPS, requiring a client certificate from `client_ca`."""
    server_ca, client_ca = CA("apiserver-ca"), CA("client-ca")
    fake = FakeKube()
    context = server_context(tmp_path / "server", server_ca)
    context.verify_mode = ssl.CERT_REQUIRED
    context.load_verify_locations(cadata=client_ca.pem.decode())
    fake.ssl_context = context
    fake.start()
    fake.put_many(node_object(f"n{i}") for i in range(3))
    yield fake, server_ca, client_ca
    fake.stop()


def test_kubeconfig_data_fields_reach_an_https_server_that_requires_a_client_certificate(tmp_path, mtls):
    fake, server_ca, client_ca = mtls
    client_pair = client_ca.issue("karmada-estimator", server=False)
    path = write_kubeconfig(tmp_path / "config", {"server": fake.url, "certificate-authority-data": b64(server_ca.pem)},
                            {"client-certificate-data": b64(client_pair.cert), "client-key-data": b64(client_pair.key),
                             "token": fake.token})
    client = KubeClient.from_flags(str(path))
    assert node_names(client) == ["n0", "n1", "n2"]
    client.close()

    stranger = CA("another-ca").issue("karmada-estimator", server=False)  # a certificate the server does not trust
    refused = write_kubeconfig(tmp_path / "refused", {"server": fake.url, "certificate-authority-data": b64(server_ca.pem)},
                               {"client-certificate-data": b64(stranger.cert), "client-key-data": b64(stranger.key),
                                "token": fake.token})
    with pytest.raises(Unavailable):
        node_names(KubeClient.from_flags(str(refused)))


def test_tls_server_name_is_the_name_checked_against_the_server_certificate(tmp_path, mtls):
    fake, server_ca, client_ca = mtls
    client_pair = client_ca.issue("karmada-estimator", server=False)
    (tmp_path / "ca.crt").write_bytes(server_ca.pem)
    (tmp_path / "c.crt").write_bytes(client_pair.cert)
    (tmp_path / "c.key").write_bytes(client_pair.key)
    user = {"client-certificate": "c.crt", "client-key": "c.key", "token": fake.token}

    def client(name: str) -> KubeClient:
        path = write_kubeconfig(tmp_path / f"config-{name}", {"server": fake.url, "certificate-authority": "ca.crt",
                                                             "tls-server-name": name}, user)
        return KubeClient.from_flags(str(path))

    assert node_names(client(SERVER_NAME)) == ["n0", "n1", "n2"]  # in the certificate's names
    with pytest.raises(Unavailable, match="SSL"):
        node_names(client("not-in-the-certificate.example"))


def test_in_cluster_configuration_reaches_the_server_and_follows_a_rotated_token(tmp_path):
    server_ca = CA("cluster-ca")
    with FakeKube(token="sa-token-1") as fake:
        fake.ssl_context = server_context(tmp_path / "server", server_ca)
        fake.put_many(node_object(f"n{i}") for i in range(2))
        sa = service_account(tmp_path / "sa", token="sa-token-1\n", ca=server_ca.pem)
        environ = {"KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": str(fake.port)}
        loader = lambda: load_configuration(environ=environ, service_account_dir=str(sa))  # noqa: E731
        client = KubeClient(loader(), loader=loader, check_every=None)
        assert node_names(client) == ["n0", "n1"]
        fake.token = "sa-token-2"  # the kubelet rotated the projected token
        (sa / "token").write_text("sa-token-2\n")
        with pytest.raises(ApiError) as refused:
            node_names(client)
        assert refused.value.status == 401
        assert node_names(client) == ["n0", "n1"] and client.credential_reloads == 1


def test_an_exec_plugin_token_is_rerun_after_a_401_and_the_watch_state_converges(tmp_path):
    with FakeKube(token="exec-token-1", bookmark_interval=0.2) as fake:
        small_cluster(fake)
        path = exec_kubeconfig(tmp_path, fake.url, V1, plugin_env(tmp_path, "exec-token-1"))
        client = KubeClient.from_flags(str(path), check_every=0.01)
        assert client.check_every is None  # plugin credentials are not reloaded periodically
        state = WatchClusterState(client=client, qps=0, burst=1, options=ReflectorOptions(**FAST))
        state.start()
        try:
            assert wait_until(state.synced, timeout=20)
            assert runs(tmp_path) == 1
            fake.token = "exec-token-2"
            (tmp_path / "plugin-token").write_text("exec-token-2")
            fake.drop_connections()
            fake.put(pod_object("shop", "after-rotation", node="n1", cpu="3"))
            expected = state_view(reference_cache(fake).snapshot())
            assert wait_until(lambda: state_view(state.cache.snapshot()) == expected, timeout=20)
            assert runs(tmp_path) == 2 and client.credential_reloads == 1
        finally:
            state.stop()


def test_an_expired_exec_credential_is_renewed_before_the_next_request_without_a_401(tmp_path):
    expiry = datetime(2030, 1, 1, tzinfo=timezone.utc)
    with FakeKube(token="exec-token-1") as fake:
        fake.put(node_object("n0"))
        path = exec_kubeconfig(tmp_path, fake.url, "client.authentication.k8s.io/v1beta1",
                               plugin_env(tmp_path, "exec-token-1", EXPIRES="2030-01-01T00:00:00Z"))
        now, monotonic = [expiry.timestamp() - 60], [0.0]
        loader = lambda: load_configuration(str(path))  # noqa: E731
        client = KubeClient(loader(), loader=loader, check_every=None, wall_clock=lambda: now[0],
                            clock=lambda: monotonic[0])
        assert node_names(client) == ["n0"] and runs(tmp_path) == 1
        fake.token = "exec-token-2"  # the server moved on; our credential still looks valid until it expires
        (tmp_path / "plugin-token").write_text("exec-token-2")
        now[0] = expiry.timestamp() - 1
        with pytest.raises(ApiError):
            node_names(client)  # still before expiry: the old token, refused (and the plugin run again)
        assert runs(tmp_path) == 2
        fake.token = "exec-token-3"
        (tmp_path / "plugin-token").write_text("exec-token-3")
        now[0], monotonic[0] = expiry.timestamp() + 1, 10.0  # past the 5 s between forced reloads too
        assert node_names(client) == ["n0"]  # expired: run again before the request, no 401 first
        assert runs(tmp_path) == 3


def test_an_exec_plugin_client_certificate_is_presented_over_tls(tmp_path, mtls):
    fake, server_ca, client_ca = mtls
    client_pair = client_ca.issue("karmada-estimator", server=False)
    (tmp_path / "exec.crt").write_bytes(client_pair.cert)
    (tmp_path / "exec.key").write_bytes(client_pair.key)
    fake.token = None  # the certificate alone authenticates
    env = plugin_env(tmp_path, CERT_FILE=tmp_path / "exec.crt", KEY_FILE=tmp_path / "exec.key")
    path = exec_kubeconfig(tmp_path, fake.url, V1, env, cluster_extra={"certificate-authority-data": b64(server_ca.pem)})
    config = load_configuration(str(path))
    assert config.authorization == "" and config.cert_pem == client_pair.cert
    assert node_names(KubeClient(config)) == ["n0", "n1", "n2"]


class Recorder:
    """An HTTP server (or proxy) that records each request's line and headers and answers an
    empty NodeList."""

    def __init__(self):
        self.seen: list[tuple[str, dict]] = []
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802
                recorder.seen.append((self.path, dict(self.headers)))
                body = b'{"kind":"NodeList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[]}'
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def recorder():
    server = Recorder()
    yield server
    server.close()


def test_requests_carry_our_user_agent_basic_auth_and_the_query_as_the_api_server_spells_it(tmp_path, recorder):
    path = write_kubeconfig(tmp_path / "config", {"server": recorder.url}, {"username": "admin", "password": "pw"})
    client = KubeClient.from_flags(str(path))
    client.list_page("Node", limit=5, continue_token="abc=", field_selector="spec.nodeName=n1")
    (line, headers), = recorder.seen
    assert line == "/api/v1/nodes?limit=5&continue=abc%3D&fieldSelector=spec.nodeName%3Dn1"
    assert headers["User-Agent"] == USER_AGENT == "karmada-accurate-estimator"
    assert headers["Accept"] == "application/json"
    assert headers["Authorization"] == "Basic YWRtaW46cHc="  # base64("admin:pw")


def test_a_proxy_url_routes_requests_through_the_proxy(tmp_path, recorder):
    path = write_kubeconfig(tmp_path / "config", {"server": "http://member.invalid:8080", "proxy-url": recorder.url},
                            {"token": "t"})
    KubeClient.from_flags(str(path)).list_page("Node", limit=1)
    (line, headers), = recorder.seen
    assert line == "http://member.invalid:8080/api/v1/nodes?limit=1"  # an absolute URI: a proxy request
    assert headers["Authorization"] == "Bearer t"
