"""A small fake karmada-apiserver for the client's --karmada-kubeconfig tests.

GET only, JSON only, the paths karmada-place reads: Clusters, PropagationPolicies (by
namespace), ClusterPropagationPolicies, one Service by name, ResourceBindings (all
namespaces). Lists are served `page` items at a time with `continue` tokens, as a real
apiserver honours `limit`, so the client's paging is exercised. A bearer token is checked
on every request; HTTPS with a certificate from `tests.support.pki.Authority` when `tls` is given. Every
request path is recorded in `seen`. Also here: a fake gRPC estimator that records what it is
sent, and a tiny certificate authority.
"""

from __future__ import annotations

import datetime
import json
import ssl
import tempfile
import threading
from concurrent import futures
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import grpc

from estimator.pb import estimator_pb2 as pb
from estimator.pb import service_pb2_grpc

LISTS = {
    "Cluster": ("cluster.karmada.io/v1alpha1", "/apis/cluster.karmada.io/v1alpha1/clusters"),
    "PropagationPolicy": ("policy.karmada.io/v1alpha1",
                          "/apis/policy.karmada.io/v1alpha1/namespaces/{namespace}/propagationpolicies"),
    "ClusterPropagationPolicy": ("policy.karmada.io/v1alpha1",
                                 "/apis/policy.karmada.io/v1alpha1/clusterpropagationpolicies"),
    "ResourceBinding": ("work.karmada.io/v1alpha2", "/apis/work.karmada.io/v1alpha2/resourcebindings"),
}
SERVICE = "/api/v1/namespaces/{namespace}/services/{name}"


class FakeKarmada:
    def __init__(self, token: str = "fake-token", tls: tuple[bytes, bytes] | None = None, page: int = 2):
        self.token, self.page = token, page
        self.objects: list[dict] = []
        self.seen: list[str] = []
        self.lock = threading.Lock()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_GET(self):  # noqa: N802 - http.server's name
                status, body = fake.answer(self.path, self.headers.get("Authorization", ""))
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.scheme = "http"
        if tls is not None:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            with tempfile.NamedTemporaryFile("wb", suffix=".pem") as pair:
                pair.write(tls[0] + b"\n" + tls[1])
                pair.flush()
                context.load_cert_chain(pair.name)
            self.server.socket = context.wrap_socket(self.server.socket, server_side=True)
            self.scheme = "https"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"{self.scheme}://127.0.0.1:{self.server.server_address[1]}"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def add(self, *objects: dict) -> "FakeKarmada":
        with self.lock:
            self.objects.extend(objects)
        return self

    def kubeconfig(self, directory: Path, ca_pem: bytes | None = None, token: str | None = None,
                   name: str = "kubeconfig") -> Path:
        cluster = {"server": self.url}
        if ca_pem is not None:
            (directory / "ca.crt").write_bytes(ca_pem)
            cluster["certificate-authority"] = "ca.crt"  # relative: to the kubeconfig's directory
        config = {"apiVersion": "v1", "kind": "Config", "current-context": "karmada",
                  "clusters": [{"name": "karmada", "cluster": cluster}],
                  "users": [{"name": "admin", "user": {"token": self.token if token is None else token}}],
                  "contexts": [{"name": "karmada", "context": {"cluster": "karmada", "user": "admin"}}]}
        path = directory / name
        path.write_text(json.dumps(config))
        return path

    def answer(self, raw_path: str, authorization: str) -> tuple[int, dict]:
        parts = urlsplit(raw_path)
        path, query = parts.path, parse_qs(parts.query)
        with self.lock:
            self.seen.append(path)
            objects = list(self.objects)
        if authorization != f"Bearer {self.token}":
            return 401, {"kind": "Status", "message": "Unauthorized", "code": 401}
        for kind, (_, template) in LISTS.items():
            for candidate in {o["metadata"].get("namespace", "") for o in objects} | {""}:
                if path == template.format(namespace=candidate):
                    items = sorted((o for o in objects if o["kind"] == kind
                                    and ("{namespace}" not in template or o["metadata"].get("namespace") == candidate)),
                                   key=lambda o: (o["metadata"].get("namespace", ""), o["metadata"]["name"]))
                    start = int(query.get("continue", ["0"])[0])
                    size = min(self.page, int(query.get("limit", [str(self.page)])[0]))
                    page = [{k: v for k, v in o.items() if k not in ("kind", "apiVersion")}
                            for o in items[start:start + size]]
                    more = start + size < len(items)
                    return 200, {"kind": f"{kind}List", "apiVersion": LISTS[kind][0],
                                 "metadata": {"continue": str(start + size)} if more else {}, "items": page}
        for o in objects:
            if o["kind"] == "Service" and path == SERVICE.format(**o["metadata"]):
                return 200, o
        if path.startswith("/api/v1/namespaces/") and "/services/" in path:
            return 404, {"kind": "Status", "message": "services not found", "code": 404}
        if path.startswith("/apis/policy.karmada.io/v1alpha1/namespaces/"):
            return 200, {"kind": "PropagationPolicyList", "metadata": {}, "items": []}
        return 404, {"kind": "Status", "message": "the server could not find the requested resource", "code": 404}


# --- objects --------------------------------------------------------------------------------


def cluster(name: str, labels: dict | None = None, cpu: str = "16", gpu: str = "8", memory: str = "64Gi",
            allocating: dict | None = None) -> dict:
    return {"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
            "metadata": {"name": name, "labels": labels or {}},
            "spec": {"syncMode": "Push"},
            "status": {"resourceSummary": {"allocatable": {"cpu": cpu, "memory": memory, "nvidia.com/gpu": gpu,
                                                           "pods": "110"},
                                           "allocated": {}, "allocating": allocating or {}}}}


def service(member: str, host: str, port: int, kind: str = "ExternalName", service_port: int = 10352) -> dict:
    spec: dict = {"type": kind, "ports": [{"protocol": "TCP", "port": service_port, "targetPort": port}]}
    if kind == "ExternalName":
        spec["externalName"] = host
    return {"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": f"karmada-scheduler-estimator-{member}", "namespace": "karmada-system"},
            "spec": spec}


def policy(name: str, namespace: str | None, selector: dict, priority: int | None = None,
           one_member: bool = True) -> dict:
    placement: dict = {"replicaScheduling": {"replicaSchedulingType": "Divided",
                                             "replicaDivisionPreference": "Aggregated"}}
    if one_member:
        placement["spreadConstraints"] = [{"spreadByField": "cluster", "minGroups": 1, "maxGroups": 1}]
    spec: dict = {"resourceSelectors": [selector], "placement": placement}
    if priority is not None:
        spec["priority"] = priority
    kind = "PropagationPolicy" if namespace else "ClusterPropagationPolicy"
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    return {"apiVersion": "policy.karmada.io/v1alpha1", "kind": kind, "metadata": meta, "spec": spec}


def binding(namespace: str, job: str, members: list[str], *, healthy: tuple[str, ...] = (),
            scheduled: str | None = "now", gpu_per_worker: str = "1", workers: int = 2) -> dict:
    """A PyTorchJob's ResourceBinding as Karmada writes it (components from its interpreter)."""
    if scheduled == "now":
        scheduled = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    status: dict = {"aggregatedStatus": [{"clusterName": m, "applied": True, "health": "Healthy"} for m in healthy]}
    if scheduled:
        status["lastScheduledTime"] = scheduled
    return {"apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
            "metadata": {"name": f"{job}-pytorchjob", "namespace": namespace},
            "spec": {"resource": {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "namespace": namespace,
                                  "name": job},
                     "components": [
                         {"name": "master", "replicas": 1,
                          "replicaRequirements": {"resourceRequest": {"cpu": "500m", "memory": "1Gi"}}},
                         {"name": "worker", "replicas": workers,
                          "replicaRequirements": {"resourceRequest": {"cpu": "1", "memory": "2Gi",
                                                                      "nvidia.com/gpu": gpu_per_worker},
                                                  "nodeClaim": {"nodeSelector": {"pool": "gpu"}}}}],
                     "clusters": [{"name": m} for m in members]},
            "status": status}


def pytorchjob(name: str, namespace: str, labels: dict | None = None, gpu: str = "1") -> dict:
    def template(requests):
        limits = {k: v for k, v in requests.items() if k == "nvidia.com/gpu"}
        resources = {"requests": requests, **({"limits": limits} if limits else {})}
        return {"spec": {"containers": [{"name": "pytorch", "image": "x", "resources": resources}]}}
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob",
            "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
            "spec": {"pytorchReplicaSpecs": {
                "Master": {"replicas": 1, "template": template({"cpu": "500m", "memory": "1Gi"})},
                "Worker": {"replicas": 2, "template": template({"cpu": "1", "memory": "2Gi", "nvidia.com/gpu": gpu})}}}}


# --- estimators and certificates ------------------------------------------------------------


class FakeEstimator(service_pb2_grpc.EstimatorServicer):
    """Answers `sets` and records every MaxAvailableComponentSets request."""

    def __init__(self, sets: int):
        self.sets = sets
        self.requests: list[pb.MaxAvailableComponentSetsRequest] = []

    def MaxAvailableComponentSets(self, request, context):  # noqa: N802 - the gRPC method
        self.requests.append(request)
        return pb.MaxAvailableComponentSetsResponse(maxSets=self.sets)


def serve_estimator(sets: int) -> tuple[FakeEstimator, grpc.Server, int]:
    servicer = FakeEstimator(sets)
    server = grpc.server(futures.ThreadPoolExecutor(2))
    service_pb2_grpc.add_EstimatorServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    return servicer, server, port


