"""etcd + kube-apiserver on loopback, built from Go modules; a kubeconfig and clients for them."""

from __future__ import annotations

import json
import secrets
import shutil
import ssl
import urllib.request
from pathlib import Path

from e2e.harness import pki
from e2e.harness.procs import Proc, wait_for
from scheduler_client.launch import free_port

# Admission: no controller manager runs, so nothing would create ServiceAccounts, compute
# quota usage or lift the not-ready taint new nodes get; the run sets all of that itself.
DISABLED_ADMISSION = "ServiceAccount,ResourceQuota,TaintNodesByCondition,StorageObjectInUseProtection,DefaultStorageClass"


class KubeBed:
    def __init__(self, bin_dir: Path, work: Path, kube_version: str, etcd_version: str,
                 disabled_admission: str = DISABLED_ADMISSION):
        self.disabled_admission = disabled_admission
        self.etcd_bin = bin_dir / f"etcd-{etcd_version}"
        self.apiserver_bin = bin_dir / f"kube-apiserver-{kube_version}"
        for path in (self.etcd_bin, self.apiserver_bin):
            if not path.exists():
                raise FileNotFoundError(f"{path} is missing: run `make e2e` (it builds the peers first)")
        self.work = work = work.resolve()  # the kubeconfig names files by absolute path
        self.pki_dir = work / "pki"
        self.pki_dir.mkdir(parents=True, exist_ok=True)
        self.etcd_port, self.etcd_peer_port, self.port = free_port(), free_port(), free_port()
        self.token = secrets.token_hex(16)
        self.etcd: Proc | None = None
        self.apiserver: Proc | None = None
        self.kubeconfig = work / "kubeconfig"
        self._setup_pki()

    def _setup_pki(self) -> None:
        self.ca = pki.CA(self.pki_dir, "kube-ca")
        self.serving = self.ca.issue("apiserver", "kube-apiserver",
                                     server_names=("127.0.0.1", "localhost", "kubernetes.default.svc"))
        self.sa_private, self.sa_public = pki.service_account_keys(self.pki_dir)
        tokens = self.pki_dir / "tokens.csv"
        tokens.write_text(f'{self.token},e2e-admin,e2e-admin-uid,"system:masters"\n')
        tokens.chmod(0o600)
        self.tokens = tokens
        self.kubeconfig.write_text(json.dumps({
            "apiVersion": "v1", "kind": "Config", "current-context": "e2e",
            "clusters": [{"name": "e2e", "cluster": {"server": self.url, "certificate-authority": str(self.ca.cert_path)}}],
            "users": [{"name": "e2e-admin", "user": {"token": self.token}}],
            "contexts": [{"name": "e2e", "context": {"cluster": "e2e", "user": "e2e-admin"}}],
        }, indent=1))

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    @property
    def etcd_url(self) -> str:
        return f"http://127.0.0.1:{self.etcd_port}"

    def start(self) -> "KubeBed":
        self.start_etcd()
        self.start_apiserver()
        return self

    def start_etcd(self) -> None:
        data = self.work / "etcd-data"
        shutil.rmtree(data, ignore_errors=True)
        peer = f"http://127.0.0.1:{self.etcd_peer_port}"
        self.etcd = Proc("etcd", [
            self.etcd_bin, "--name", "e2e", "--data-dir", data,
            "--listen-client-urls", self.etcd_url, "--advertise-client-urls", self.etcd_url,
            "--listen-peer-urls", peer, "--initial-advertise-peer-urls", peer,
            "--initial-cluster", f"e2e={peer}", "--unsafe-no-fsync", "--log-level", "warn",
            "--quota-backend-bytes", str(4 * 1024**3),
        ], self.work).start()
        wait_for("etcd health", lambda: b'"health":"true"' in urllib.request.urlopen(
            f"{self.etcd_url}/health", timeout=2).read(), 60, self.etcd)

    name = "kube-apiserver"

    def extra_apiserver_args(self) -> list:
        """Flags a subclass adds to the apiserver's command line (the aggregation layer, say)."""
        return []

    def start_apiserver(self) -> None:
        cert, key = self.serving
        self.apiserver = Proc(self.name, [
            self.apiserver_bin,
            "--etcd-servers", self.etcd_url, "--etcd-compaction-interval", "0",
            "--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1", "--secure-port", str(self.port),
            "--tls-cert-file", cert, "--tls-private-key-file", key, "--client-ca-file", self.ca.cert_path,
            "--token-auth-file", self.tokens, "--authorization-mode", "RBAC",
            "--service-account-issuer", "https://kubernetes.default.svc",
            "--service-account-key-file", self.sa_public, "--service-account-signing-key-file", self.sa_private,
            "--service-cluster-ip-range", "10.96.0.0/16", "--disable-admission-plugins", self.disabled_admission,
            "--enable-priority-and-fairness=false", "--profiling=false", "--max-requests-inflight", "2000",
            "--max-mutating-requests-inflight", "1000", "--v", "1", *self.extra_apiserver_args(),
        ], self.work).start()
        wait_for(f"{self.name} /readyz", self._ready, 180, self.apiserver, every=0.5)

    def _ssl(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.ca.cert_path))

    def _ready(self) -> bool:
        request = urllib.request.Request(f"{self.url}/readyz", headers={"Authorization": f"Bearer {self.token}"})
        return urllib.request.urlopen(request, timeout=3, context=self._ssl()).read() == b"ok"

    def restart_apiserver(self, kill9: bool = True) -> None:
        assert self.apiserver is not None
        if kill9:
            self.apiserver.kill9()
        else:
            self.apiserver.stop()
        self.start_apiserver()

    def etcd_call(self, path: str, body: dict) -> dict:
        request = urllib.request.Request(f"{self.etcd_url}{path}", data=json.dumps(body).encode(), method="POST")
        return json.loads(urllib.request.urlopen(request, timeout=10).read())

    def compact_etcd(self) -> int:
        """Compact etcd at its current revision: older resource versions are gone (watches get 410)."""
        revision = int(self.etcd_call("/v3/kv/range", {"key": "AA=="})["header"]["revision"])
        self.etcd_call("/v3/kv/compaction", {"revision": revision, "physical": True})
        return revision

    def stop(self) -> None:
        for proc in (self.apiserver, self.etcd):
            if proc is not None:
                proc.stop()

    def __enter__(self) -> "KubeBed":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
