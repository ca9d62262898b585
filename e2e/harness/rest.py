"""A thin JSON client of the bed's kube-apiserver, for the judge's many small calls.

The official client validates every argument and builds models per call; the judge makes
tens of thousands of calls and needs none of that: it sends and reads JSON by path. The
bed's kubeconfig (cluster.KubeBed) names the CA file and a bearer token.
"""

from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlencode

import urllib3


class ApiStatus(Exception):
    def __init__(self, status: int, body: bytes, what: str):
        self.status = status
        try:
            self.message = json.loads(body).get("message", "")
        except ValueError:
            self.message = body[:200].decode("utf-8", "replace")
        super().__init__(f"{what}: HTTP {status}: {self.message}")


class Rest:
    def __init__(self, kubeconfig: Path, pool: int = 16):
        config = json.loads(Path(kubeconfig).read_text())
        cluster = config["clusters"][0]["cluster"]
        self.base = cluster["server"]
        self._headers = {"Authorization": f"Bearer {config['users'][0]['user']['token']}",
                         "Content-Type": "application/json", "Accept": "application/json"}
        self._http = urllib3.PoolManager(maxsize=pool, ca_certs=cluster["certificate-authority"],
                                         cert_reqs="CERT_REQUIRED", retries=False,
                                         timeout=urllib3.Timeout(connect=5, read=60))

    def call(self, method: str, path: str, body: dict | None = None, params: dict | None = None,
             content_type: str | None = None) -> dict:
        url = self.base + path + (f"?{urlencode(params)}" if params else "")
        headers = dict(self._headers, **({"Content-Type": content_type} if content_type else {}))
        response = self._http.request(method, url, body=None if body is None else json.dumps(body).encode(),
                                      headers=headers)
        if response.status >= 300:
            raise ApiStatus(response.status, response.data, f"{method} {path}")
        return json.loads(response.data) if response.data else {}

    def create(self, path: str, body: dict) -> dict:
        return self.call("POST", path, body)

    def status(self, path: str, status: dict) -> dict:
        """Merge-patch the status subresource (what a kubelet or controller would write)."""
        return self.call("PATCH", f"{path}/status", {"status": status}, content_type="application/merge-patch+json")

    def delete(self, path: str, grace: int | None = None) -> dict:
        return self.call("DELETE", path, params={"gracePeriodSeconds": grace} if grace is not None else None)

    def items(self, path: str) -> list[dict]:
        return self.call("GET", path)["items"]

    def close(self) -> None:
        self._http.clear()


def namespaced(namespace: str, plural: str, group: str = "") -> str:
    """The collection path of a namespaced kind: core when `group` is empty."""
    prefix = f"/apis/{group}" if group else "/api/v1"
    return f"{prefix}/namespaces/{namespace}/{plural}"
