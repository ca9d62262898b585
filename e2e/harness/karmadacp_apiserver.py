"""Pieces of the local Karmada that are not the stack itself (karmadacp.py): Karmada's module
and CRDs from the Go module cache, the karmada-apiserver with the aggregation layer, probes,
idempotent creation, feature-gate flags, the estimators' loopback block."""

from __future__ import annotations

import os
import random
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import yaml

from e2e.harness import pki
from e2e.harness.cluster import KubeBed
from e2e.harness.rest import ApiStatus, Rest

REPO = Path(__file__).resolve().parents[2]


def gate_flag(gates: dict[str, bool]) -> str:
    return "--feature-gates=" + ",".join(f"{k}={str(v).lower()}" for k, v in sorted(gates.items()))


def karmada_module(version: str) -> Path:
    """Karmada's Go module in the module cache (its charts/ and artifacts/ are read from here)."""
    try:
        out = subprocess.run(["go", "list", "-m", "-f", "{{.Dir}}", "github.com/karmada-io/karmada"],
                             cwd=REPO / "e2e" / "karmada", capture_output=True, text=True, timeout=60,
                             env={**os.environ, "GONOSUMDB": "github.com/karmada-io/karmada"})
        if out.returncode == 0 and Path(out.stdout.strip(), "charts").is_dir():
            return Path(out.stdout.strip())
    except (OSError, subprocess.TimeoutExpired):
        pass
    cache = os.environ.get("GOMODCACHE") or str(Path.home() / "go" / "pkg" / "mod")
    path = Path(cache) / "github.com" / "karmada-io" / f"karmada@{version}"
    if not (path / "charts").is_dir():
        raise FileNotFoundError(f"Karmada's module {version} is not in the Go module cache: `make e2e-karmada-cp` fetches it")
    return path


def karmada_crds(module: Path) -> list[dict]:
    """Karmada's CRDs as its chart ships them (charts/karmada/_crds/kustomization.yaml's list).
    The chart's two patches only add a conversion webhook for v1alpha1 bindings; every program
    here speaks v1alpha2, so they are left out."""
    base = module / "charts" / "karmada" / "_crds"
    listed = yaml.safe_load((base / "kustomization.yaml").read_text())["resources"]
    return [doc for rel in listed for doc in yaml.safe_load_all((base / rel).read_text()) if doc]


def loopback_block() -> str:
    """A 127.A.B.0 block for the estimators' addresses, bindable here (picked at random so two
    runs on one machine do not meet)."""
    rng = random.Random()
    for _ in range(50):
        block = f"127.{rng.randint(2, 250)}.{rng.randint(2, 250)}"
        try:
            with socket.socket() as s:
                s.bind((f"{block}.1", 0))
            return block
        except OSError:
            continue
    raise RuntimeError("no usable 127.0.0.0/8 block for the estimators")


class KarmadaApiserver(KubeBed):
    """KubeBed's kube-apiserver plus the aggregation layer (front-proxy client certificate and
    the requestheader flags Karmada's artifacts/deploy/karmada-apiserver.yaml gives)."""

    def _setup_pki(self) -> None:
        super()._setup_pki()
        self.front_ca = pki.CA(self.pki_dir, "front-proxy-ca")
        self.front_client = self.front_ca.issue("front-proxy-client", "front-proxy-client", client=True)

    name = "karmada-apiserver"

    def extra_apiserver_args(self) -> list:
        fcert, fkey = self.front_client
        return ["--proxy-client-cert-file", fcert, "--proxy-client-key-file", fkey,
                "--requestheader-client-ca-file", self.front_ca.cert_path, "--requestheader-allowed-names", "front-proxy-client",
                "--requestheader-extra-headers-prefix", "X-Remote-Extra-", "--requestheader-group-headers", "X-Remote-Group",
                "--requestheader-username-headers", "X-Remote-User"]


def https_ok(url: str) -> bool:
    insecure = ssl._create_unverified_context()  # loopback, the component's own certificate
    return urllib.request.urlopen(url, timeout=3, context=insecure).status == 200


def answers(url: str) -> bool:
    """Any HTTP answer over TLS (the webhook registers no health checks)."""
    try:
        urllib.request.urlopen(url, timeout=3, context=ssl._create_unverified_context())
    except urllib.error.HTTPError:
        pass
    return True


def _http_ok(url: str) -> bool:
    return urllib.request.urlopen(url, timeout=3).status == 200


def create(api: Rest, path: str, obj: dict, tries: int = 20) -> dict | None:
    """POST, tolerating 409 (already there) and retrying what a starting webhook refuses."""
    for attempt in range(tries):
        try:
            return api.create(path, obj)
        except ApiStatus as error:
            if error.status == 409:
                return None
            if attempt == tries - 1 or error.status not in (403, 404, 429, 500, 502, 503, 504):
                raise
            time.sleep(0.5)
    return None


def http_ok_quiet(url: str) -> bool:
    try:
        return _http_ok(url)
    except Exception:  # noqa: BLE001 - not up yet
        return False
