"""Credentials rotate under a running estimator: the kubeconfig's tokenFile, its client
certificate and key, and the CA that signs the API server's certificate are files that
change on disk. The fake API server checks the token on every request and the client
certificate on every TLS handshake; after rotation it accepts only the new ones."""

from __future__ import annotations

import ssl

import pytest

from estimator.cluster.watch import ReflectorOptions, WatchClusterState
from estimator.cluster.watch.kubeclient import KubeClient
from tests.cluster.test_watch import FAST, small_cluster, wait_until
from tests.service.test_mtls import CA
from tests.support.fakekube import FakeKube
from tests.support.kubeobjects import pod_object, reference_cache, state_view


class Credentials:
    def __init__(self, directory):
        self.dir = directory
        self.ca_file, self.cert_file, self.key_file = (directory / "ca.crt", directory / "client.crt",
                                                       directory / "client.key")
        self.token_file = directory / "token"

    def issue(self, fake: FakeKube, generation: int) -> None:
        """New server CA and server certificate, new client CA and client certificate, new
        token: the fake accepts only these from now on, and the files say so."""
        server_ca, client_ca = CA(f"apiserver-ca-{generation}"), CA(f"client-ca-{generation}")
        server = server_ca.issue("fake-apiserver", server=True)
        client = client_ca.issue("karmada-estimator", server=False)
        (self.dir / "server.crt").write_bytes(server.cert)
        (self.dir / "server.key").write_bytes(server.key)
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(self.dir / "server.crt", self.dir / "server.key")
        context.verify_mode = ssl.CERT_REQUIRED
        context.load_verify_locations(cadata=client_ca.pem.decode())
        token = f"token-{generation}"
        fake.ssl_context, fake.token = context, token
        self.ca_file.write_bytes(server_ca.pem)
        self.cert_file.write_bytes(client.cert)
        self.key_file.write_bytes(client.key)
        self.token_file.write_text(token + "\n")


@pytest.fixture
def tls(tmp_path):
    fake = FakeKube(bookmark_interval=0.2)
    credentials = Credentials(tmp_path)
    credentials.issue(fake, 1)
    fake.start()
    kubeconfig = fake.kubeconfig(tmp_path, token_file=credentials.token_file, ca_file=credentials.ca_file,
                                 cert_file=credentials.cert_file, key_file=credentials.key_file)
    states = []

    def make(check_every):
        client = KubeClient.from_flags(str(kubeconfig), check_every=check_every)
        state = WatchClusterState(client=client, qps=0, burst=1, options=ReflectorOptions(**FAST))
        states.append(state)
        state.start()
        return state

    yield fake, credentials, make
    for state in states:
        state.stop()
    fake.stop()


def _rotate_and_converge(fake, credentials, state) -> None:
    credentials.issue(fake, 2)
    fake.drop_connections()  # every request from now on must present the new credentials
    fake.put(pod_object("shop", "after-rotation", node="n1", cpu="3"))
    expected = state_view(reference_cache(fake).snapshot())
    assert wait_until(lambda: state_view(state.cache.snapshot()) == expected, timeout=20)
    assert state.client.credential_reloads >= 1


def test_rotated_token_certificate_and_ca_are_picked_up_periodically(tls):
    fake, credentials, make = tls
    small_cluster(fake)
    state = make(check_every=0.5)
    assert wait_until(state.synced, timeout=20)
    _rotate_and_converge(fake, credentials, state)


def test_a_401_or_a_tls_failure_rereads_the_credentials_at_once(tls):
    fake, credentials, make = tls
    small_cluster(fake)
    state = make(check_every=None)  # no periodic check: only the failures can trigger it
    assert wait_until(state.synced, timeout=20)
    _rotate_and_converge(fake, credentials, state)


def test_a_token_rotated_alone_is_reread_after_a_401(tls):
    fake, credentials, make = tls
    small_cluster(fake)
    state = make(check_every=None)
    assert wait_until(state.synced, timeout=20)
    fake.token = "token-rotated"
    credentials.token_file.write_text("token-rotated")
    fake.drop_connections()
    fake.put(pod_object("shop", "after-token", node="n2", cpu="1"))
    expected = state_view(reference_cache(fake).snapshot())
    assert wait_until(lambda: state_view(state.cache.snapshot()) == expected, timeout=20)
    assert state.client.credential_reloads == 1
    assert any(key.startswith("http-401") for r in state.reflectors.values() for key in r.errors)
