"""Karmada's own install routes and ours, checked against a real kube-apiserver (issue 29).

Three routes, each ending in our estimator answering over mutual TLS:

- **Karmada's Helm chart** (charts/karmada of Karmada's Go module, rendered by a Helm built
  from its Go module): only the scheduler-estimator part (installMode=component), our image,
  two members whose kubeconfig (server, CA, client certificate) reaches the bed. Every
  rendered object is applied server-side with dryRun=All; then, per member, our estimator is
  started with exactly the command line of the rendered Deployment, as a pod would run it.
- **karmadactl** (`karmadactl addons enable karmada-scheduler-estimator`, Karmada's own
  binary): run for real against the bed as the Karmada host, with our image; the Deployment
  and Secret it created are read back and served the same way.
- **Our manifests** (`karmada-estimator manifests`): every object for two members applied
  server-side (dry-run); applied for real over a chart-installed estimator and over a
  karmadactl-installed one (same Deployment and Service, UID and clusterIP kept, and the
  merged Deployment serves); the old layout over a chart install is refused (immutable
  selector), which is why the chart's is the default; uninstall deletes every object.

"As a pod would run it" (pod_argv): the container's command and args with `$(VAR)` expanded
from its env (POD_IP is a 127.x.y.z address of this run, the pod's own address); each Secret
volume written as files under a directory of this run with the Secret's keys (items and
subPath as the kubelet projects them; the karmada-cert Secret, which the chart's estimator
part does not render, is written with the chart's keys from a CA made here); every path under
a mount rewritten to that directory; the pod's wildcard addresses (`:PORT` and the gRPC
server's 0.0.0.0) bound to POD_IP, since a pod has its own network namespace. The first word,
/bin/karmada-scheduler-estimator (our image's symlink to its entrypoint) or the entrypoint
itself, becomes deploy/image/entrypoint.sh run by sh, which execs karmada-estimator.

    run(bin_dir, work, versions, log) -> {"line": "install: ...", "ok": bool, ...}
    python -m e2e.harness.install        # the same on its own (make e2e-install)
"""

from __future__ import annotations

import argparse
import base64
import os
import re
import shutil
import subprocess
import sys
import time
import traceback
import urllib.request
from importlib import metadata
from pathlib import Path

import grpc
import yaml
from grpc_health.v1 import health_pb2, health_pb2_grpc

from e2e.harness import pki, procs
from e2e.harness.cluster import KubeBed
from e2e.harness.karmadacp_apiserver import karmada_module, loopback_block
from e2e.harness.procs import Proc, wait_for
from e2e.harness.rest import ApiStatus, Rest
from e2e.harness.versions import REPO, versions as read_versions
from estimator.deploy import manifests
from estimator.pb import estimator_pb2 as pb
from estimator.pb import k8s_resource_pb2, service_pb2_grpc
from tests.support.builders import node

NAMESPACE = "karmada-system"
CHART_MEMBERS = ("member-1", "member-2")
KARMADACTL_MEMBER = "member-3"
FIELD_MANAGER = "karmada-estimator"
ENTRYPOINT = REPO / "deploy" / "image" / "entrypoint.sh"
# The first words a Deployment may give our image: the name Karmada's manifests use (a symlink
# in our image) and the image's entrypoint itself (our manifests).
IMAGE_COMMANDS = ("/bin/karmada-scheduler-estimator", manifests.ENTRYPOINT)
NODES, NODE_CPU = 2, 8  # the member: MaxAvailableReplicas for 1 CPU is NODES * NODE_CPU


def image() -> str:
    try:
        version = metadata.version("karmada-accurate-estimator")
    except metadata.PackageNotFoundError:
        version = "0.0.0"
    return f"registry.example/karmada-accurate-estimator:{version}"


# ---------------------------------------------------------------------------------------------
# A Deployment's container as a pod would run it


class PodError(ValueError):
    pass


def expand(text: str, env: dict[str, str]) -> str:
    """The kubelet's $(VAR) expansion: a defined VAR is replaced, $$ is a literal $, anything
    else stays as written."""
    def one(match: re.Match) -> str:
        if match.group(0) == "$$":
            return "$"
        name = match.group(1)
        return env[name] if name in env else match.group(0)
    return re.sub(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.-]*)\)", one, text)


def _secret_entries(volume: dict, data: dict[str, bytes]) -> dict[str, bytes]:
    """What a Secret volume shows: every key, or only its items under their paths."""
    items = volume["secret"].get("items")
    if not items:
        return dict(data)
    missing = [item["key"] for item in items if item["key"] not in data]
    if missing:
        raise PodError(f"Secret {volume['secret']['secretName']} has no key {', '.join(missing)}")
    return {item["path"]: data[item["key"]] for item in items}


def pod_argv(deployment: dict, secrets: dict[str, dict[str, bytes]], root: Path, pod_ip: str
             ) -> tuple[list[str], dict[str, str]]:
    """The argv and environment of the Deployment's only container, with its Secret volumes
    written under `root` (see the module's docstring). Raises PodError for what a kubelet
    would refuse: a missing Secret or key, a volume kind not handled here, a second container."""
    spec = deployment["spec"]["template"]["spec"]
    containers = spec["containers"]
    if len(containers) != 1:
        raise PodError(f"{len(containers)} containers; expected the estimator alone")
    (container,) = containers
    volumes = {v["name"]: v for v in spec.get("volumes", [])}
    env: dict[str, str] = {}
    for entry in container.get("env", []):
        if "value" in entry:
            env[entry["name"]] = expand(entry["value"], env)
        elif entry.get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == "status.podIP":
            env[entry["name"]] = pod_ip
        else:
            raise PodError(f"env {entry['name']}: only values and status.podIP are emulated")
    mounts: list[tuple[str, Path]] = []
    for mount in container.get("volumeMounts", []):
        volume = volumes.get(mount["name"])
        if volume is None:
            raise PodError(f"volumeMount {mount['name']}: no such volume")
        target = root / mount["mountPath"].lstrip("/")
        if "secret" in volume:
            name = volume["secret"]["secretName"]
            if name not in secrets:
                raise PodError(f"Secret {name} (volume {mount['name']}) does not exist")
            entries = _secret_entries(volume, secrets[name])
            if mount.get("subPath"):
                if mount["subPath"] not in entries:
                    raise PodError(f"volume {mount['name']}: no {mount['subPath']} to mount as subPath")
                entries = {"": entries[mount["subPath"]]}
            for rel, content in entries.items():
                path = target / rel if rel else target
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(content)
                path.chmod(0o600)
        elif "emptyDir" in volume:
            target.mkdir(parents=True, exist_ok=True)
        else:
            raise PodError(f"volume {mount['name']}: only Secret and emptyDir volumes are emulated")
        mounts.append((mount["mountPath"].rstrip("/"), target))
    mounts.sort(key=lambda m: -len(m[0]))

    def rewrite(value: str) -> str:
        for mount_path, target in mounts:
            if value == mount_path or value.startswith(mount_path + "/"):
                return str(target) + value[len(mount_path):]
        return value

    def word(text: str) -> str:
        text = expand(text, env)
        flag, sep, value = text.partition("=")
        if sep and flag.startswith("-"):
            if re.fullmatch(r":\d+", value):  # all of the pod's addresses: its own
                value = f"{pod_ip}{value}"
            return f"{flag}={rewrite(value)}"
        return rewrite(text)

    words = [word(w) for w in container.get("command", []) + container.get("args", [])]
    if not words:
        raise PodError("no command: the image's entrypoint would run with no arguments")
    if not any(w.startswith("--server-bind-address") for w in words):
        words.append(f"--server-bind-address={pod_ip}")  # the gRPC server's 0.0.0.0: the pod's address
    return words, {k: rewrite(v) for k, v in env.items()}


def process_argv(words: list[str]) -> list[str]:
    """Our image's first word → its entrypoint script, run by sh (it execs karmada-estimator)."""
    if words[0] not in IMAGE_COMMANDS:
        raise PodError(f"command {words[0]!r} is not one our image provides ({', '.join(IMAGE_COMMANDS)})")
    return ["sh", str(ENTRYPOINT), *words[1:]]


def flag_value(words: list[str], flag: str, default: str = "") -> str:
    for w in words:
        if w.startswith(flag + "="):
            return w.split("=", 1)[1]
    return default


# ---------------------------------------------------------------------------------------------
# The bed: one kube-apiserver, the Karmada host and the members at once


class Bed:
    def __init__(self, bin_dir: Path, work: Path, v: dict, log):
        self.work, self.log, self.v = work, log, v
        self.kube = KubeBed(bin_dir, work / "apiserver", v["KUBERNETES_VERSION"], v["ETCD_VERSION"]).start()
        self.api = Rest(self.kube.kubeconfig)
        self.resources = self._discover()
        self.api.create("/api/v1/namespaces", {"metadata": {"name": NAMESPACE}})
        for i in range(NODES):
            built = node(f"install-{i}").cpu(NODE_CPU).memory("32Gi").pods(110).build()
            self.api.create("/api/v1/nodes", {k: v for k, v in built.items() if k != "status"})
            self.api.status(f"/api/v1/nodes/{built['metadata']['name']}", built["status"])
        # What the members' kubeconfigs carry: the apiserver's CA and a client certificate.
        self.member_cert = self.kube.ca.issue("member-client", "karmada-estimator", client=True, org="system:masters")
        # Karmada's certificates as its chart makes them (pre-install-job: cfssl): the CA is
        # server-ca.crt; karmada.crt serves and authenticates (CN system:admin, O system:masters)
        # for the chart's certHosts. karmada-scheduler presents karmada.crt to the estimators.
        pki_dir = work / "karmada-pki"
        pki_dir.mkdir(parents=True)
        self.karmada_ca = pki.CA(pki_dir, "server-ca")
        hosts = ("kubernetes.default.svc", f"*.etcd.{NAMESPACE}.svc.cluster.local", f"*.{NAMESPACE}.svc.cluster.local",
                 f"*.{NAMESPACE}.svc", "localhost", "127.0.0.1")
        self.karmada_cert = self.karmada_ca.issue("karmada", "system:admin", server_names=hosts, client=True,
                                                  org="system:masters")
        self.block = loopback_block()
        self.pod_ips = 0

    def _discover(self) -> dict[tuple[str, str], tuple[str, str, bool]]:
        """(apiVersion, kind) → (path prefix, plural, namespaced), from API discovery."""
        found = {}
        groups = [("v1", "/api/v1")] + [
            (gv["groupVersion"], f"/apis/{gv['groupVersion']}")
            for g in self.api.call("GET", "/apis")["groups"] for gv in g["versions"]]
        for api_version, prefix in groups:
            for r in self.api.call("GET", prefix)["resources"]:
                if "/" not in r["name"]:
                    found[(api_version, r["kind"])] = (prefix, r["name"], r["namespaced"])
        return found

    def path(self, obj: dict, collection: bool = False) -> str:
        key = (obj["apiVersion"], obj["kind"])
        if key not in self.resources:
            raise LookupError(f"{obj['kind']} {obj['apiVersion']}: not served by this apiserver")
        prefix, plural, namespaced = self.resources[key]
        ns = f"/namespaces/{obj['metadata'].get('namespace') or NAMESPACE}" if namespaced else ""
        base = f"{prefix}{ns}/{plural}"
        return base if collection else f"{base}/{obj['metadata']['name']}"

    def apply(self, obj: dict, *, dry_run: bool, manager: str = FIELD_MANAGER, force: bool = False) -> dict:
        params = {"fieldManager": manager}
        if dry_run:
            params["dryRun"] = "All"
        if force:
            params["force"] = "true"
        return self.api.call("PATCH", self.path(obj), obj, params=params, content_type="application/apply-patch+yaml")

    def get(self, obj: dict) -> dict:
        return self.api.call("GET", self.path(obj))

    def pod_ip(self) -> str:
        self.pod_ips += 1
        return f"{self.block}.{self.pod_ips}"

    def member_kubeconfig(self, name: str) -> dict:
        cert, key = self.member_cert
        return {"apiVersion": "v1", "kind": "Config", "current-context": name,
                "clusters": [{"name": name, "cluster": {
                    "server": self.kube.url,
                    "certificate-authority-data": base64.b64encode(self.kube.ca.cert_path.read_bytes()).decode()}}],
                "users": [{"name": name, "user": {
                    "client-certificate-data": base64.b64encode(cert.read_bytes()).decode(),
                    "client-key-data": base64.b64encode(key.read_bytes()).decode()}}],
                "contexts": [{"name": name, "context": {"cluster": name, "user": name}}]}

    def cert_secret(self, layout: manifests.Layout) -> dict[str, bytes]:
        cert, key = self.karmada_cert
        return {layout.cert_key: cert.read_bytes(), layout.key_key: key.read_bytes(),
                layout.ca_key: self.karmada_ca.cert_path.read_bytes()}

    def stop(self) -> None:
        self.api.close()
        self.kube.stop()


def secret_data(secret: dict) -> dict[str, bytes]:
    data = {k: base64.b64decode(v) for k, v in (secret.get("data") or {}).items()}
    data.update({k: v.encode() for k, v in (secret.get("stringData") or {}).items()})
    return data


# ---------------------------------------------------------------------------------------------
# Serving: start what the Deployment says, ask it over mutual TLS


def serve_check(bed: Bed, deployment: dict, secrets: dict[str, dict[str, bytes]], label: str,
                client_files: tuple[bytes, bytes, bytes]) -> str:
    """Start our estimator as the Deployment's pod would and ask it: gRPC health SERVING and
    MaxAvailableReplicas over mutual TLS, plaintext and certificate-less TLS refused. Returns ""
    when all holds, else what did not."""
    cluster = deployment["metadata"]["name"].removeprefix(manifests.COMPONENT + "-")
    pod_ip = bed.pod_ip()
    root = bed.work / "pods" / label
    shutil.rmtree(root, ignore_errors=True)
    words, env = pod_argv(deployment, secrets, root, pod_ip)
    argv = process_argv(words)
    port = int(flag_value(words, "--server-port", "10352"))
    health = flag_value(words, "--health-probe-bind-address")
    env = {**env, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
           "PYTHONUNBUFFERED": "1",
           # The image seeds its cache from kernels compiled at build time; here the checkout's cache is the seed.
           "NUMBA_CACHE_DIR": env.get("NUMBA_CACHE_DIR") or os.environ.get("NUMBA_CACHE_DIR", str(REPO / ".numba_cache"))}
    if "NUMBA_CACHE_DIR" in {e["name"] for e in deployment["spec"]["template"]["spec"]["containers"][0].get("env", [])}:
        env["KARMADA_ESTIMATOR_NUMBA_SEED"] = os.environ.get("NUMBA_CACHE_DIR", str(REPO / ".numba_cache"))
    (bed.work / "pods").mkdir(exist_ok=True)
    proc = Proc(f"estimator-{label}", argv, bed.work / "pods", env=env).start()
    try:
        wait_for(f"{label}: /readyz at {health}", lambda: urllib.request.urlopen(
            f"http://{health}/readyz", timeout=2).status == 200, 240, proc, every=0.3)
        ca, cert, key = client_files
        target = f"{pod_ip}:{port}"
        server_name = f"{manifests.COMPONENT}-{cluster}.{NAMESPACE}.svc.cluster.local"  # what karmada-scheduler dials
        options = (("grpc.ssl_target_name_override", server_name),)
        problems = []
        with grpc.secure_channel(target, grpc.ssl_channel_credentials(ca, key, cert), options) as channel:
            status = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=10).status
            if status != health_pb2.HealthCheckResponse.SERVING:
                problems.append(f"health {status}")
            request = pb.MaxAvailableReplicasRequest(cluster=cluster, replicaRequirements=pb.ReplicaRequirements(
                resourceRequestBytes={"cpu": k8s_resource_pb2.Quantity(string="1").SerializeToString()}))
            answer = service_pb2_grpc.EstimatorStub(channel).MaxAvailableReplicas(request, timeout=10).maxReplicas
            if answer != NODES * NODE_CPU:
                problems.append(f"MaxAvailableReplicas {answer}, expected {NODES * NODE_CPU}")
        for what, credentials in (("plaintext", None), ("TLS without a client certificate",
                                                         grpc.ssl_channel_credentials(ca))):
            channel = (grpc.insecure_channel(target) if credentials is None
                       else grpc.secure_channel(target, credentials, options))
            with channel:
                try:
                    health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=3)
                    problems.append(f"{what} was answered")
                except grpc.RpcError:
                    pass
        bed.log(f"install: {label}: {' '.join(words[:1])} ... served mTLS at {target} as {server_name}: "
                f"{'ok' if not problems else '; '.join(problems)}")
        return "; ".join(problems)
    finally:
        proc.stop()


# ---------------------------------------------------------------------------------------------
# Route 1: Karmada's Helm chart

COMMON_STAND_IN = {
    # Karmada's chart depends on Bitnami's `common` library chart (charts.bitnami.com), which
    # `helm dependency build` downloads; no chart repository is reachable here, so this library
    # of ours defines the two helpers the chart includes, with Bitnami's documented results
    # (image: [registry/]repository:tag or @digest, global.imageRegistry first; pull secrets:
    # global.imagePullSecrets and each image's pullSecrets).
    "Chart.yaml": "apiVersion: v2\nname: common\nversion: 2.31.4\ntype: library\n"
                  "description: stand-in for bitnami/common (only common.images.*)\n",
    "templates/_images.tpl": """{{- define "common.images.image" -}}
{{- $registry := .imageRoot.registry -}}
{{- if and .global .global.imageRegistry -}}{{- $registry = .global.imageRegistry -}}{{- end -}}
{{- $name := .imageRoot.repository -}}
{{- if $registry -}}{{- $name = printf "%s/%s" $registry $name -}}{{- end -}}
{{- if .imageRoot.digest -}}{{- printf "%s@%s" $name .imageRoot.digest -}}
{{- else -}}{{- printf "%s:%s" $name (.imageRoot.tag | toString) -}}{{- end -}}
{{- end -}}
{{- define "common.images.pullSecrets" -}}
{{- $secrets := list -}}
{{- if .global -}}{{- range .global.imagePullSecrets -}}{{- $secrets = append $secrets (. | toString) -}}{{- end -}}{{- end -}}
{{- range .images -}}{{- range .pullSecrets -}}{{- $secrets = append $secrets (. | toString) -}}{{- end -}}{{- end -}}
{{- if $secrets }}
imagePullSecrets:
{{- range $secrets | uniq }}
  - name: {{ . }}
{{- end }}
{{- end }}
{{- end -}}
""",
}


def render_chart(helm: Path, module: Path, bed: Bed, work: Path) -> list[dict]:
    chart = work / "chart" / "karmada"
    shutil.rmtree(chart.parent, ignore_errors=True)
    shutil.copytree(module / "charts" / "karmada", chart)
    for root, dirs, files in os.walk(chart):  # the module cache is read-only
        for name in dirs + files:
            os.chmod(os.path.join(root, name), 0o755 if name in dirs else 0o644)
    if not (chart / "charts" / "common").exists():
        for rel, text in COMMON_STAND_IN.items():
            (chart / "charts" / "common" / rel).parent.mkdir(parents=True, exist_ok=True)
            (chart / "charts" / "common" / rel).write_text(text)
    registry, _, rest = image().partition("/")
    repository, _, tag = rest.partition(":")
    cert, key = bed.member_cert
    values = {
        "installMode": "component", "components": ["schedulerEstimator"],
        "schedulerEstimator": {
            "image": {"registry": registry, "repository": repository, "tag": tag},
            "memberClusters": [{"clusterName": m, "replicaCount": 2, "kubeconfig": {
                "server": bed.kube.url, "caCrt": bed.kube.ca.cert_path.read_text(),
                "crt": cert.read_text(), "key": key.read_text()}} for m in CHART_MEMBERS]}}
    (work / "chart" / "values.yaml").write_text(yaml.safe_dump(values))
    done = subprocess.run([str(helm), "template", "karmada", str(chart), "--namespace", NAMESPACE,
                           "--values", str(work / "chart" / "values.yaml"),
                           "--show-only", "templates/karmada-scheduler-estimator.yaml"],
                          capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(f"helm template failed: {done.stderr.strip()[:2000]}")
    (work / "chart" / "rendered.yaml").write_text(done.stdout)
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc]


def check_chart(bed: Bed, helm: Path, module: Path, log) -> tuple[bool, list[dict]]:
    docs = render_chart(helm, module, bed, bed.work)
    kinds = sorted(f"{d['kind']}/{d['metadata']['name']}" for d in docs)
    deployments = [d for d in docs if d["kind"] == "Deployment"]
    ok = len(deployments) == len(CHART_MEMBERS)
    for d in deployments:
        images = [c["image"] for c in d["spec"]["template"]["spec"]["containers"]]
        if images != [image()]:
            log(f"install: chart: {d['metadata']['name']} runs {images}, not {image()}")
            ok = False
    for doc in docs:
        bed.apply(doc, dry_run=True, manager="helm")
    log(f"install: chart: rendered and applied (dry-run): {', '.join(kinds)}")
    secrets = {d["metadata"]["name"]: secret_data(d) for d in docs if d["kind"] == "Secret"}
    secrets["karmada-cert"] = bed.cert_secret(manifests.LAYOUTS["chart"])
    for d in deployments:
        problem = serve_check(bed, d, secrets, f"chart-{d['metadata']['name']}", client_files(bed, "chart"))
        ok &= not problem
    return ok, docs


def client_files(bed: Bed, layout: str) -> tuple[bytes, bytes, bytes]:
    """karmada-scheduler's side as the same install configures it: the CA and karmada.crt/key."""
    data = bed.cert_secret(manifests.LAYOUTS[layout])
    lay = manifests.LAYOUTS[layout]
    return data[lay.ca_key], data[lay.cert_key], data[lay.key_key]


# ---------------------------------------------------------------------------------------------
# Route 2: karmadactl addons enable karmada-scheduler-estimator


def check_karmadactl(bed: Bed, karmadactl: Path, log) -> bool:
    member_config = bed.work / f"{KARMADACTL_MEMBER}.kubeconfig"
    member_config.write_text(yaml.safe_dump(bed.member_kubeconfig(KARMADACTL_MEMBER)))
    argv = [str(karmadactl), "addons", "enable", "karmada-scheduler-estimator", "--cluster", KARMADACTL_MEMBER,
            "--kubeconfig", str(bed.kube.kubeconfig), "--karmada-kubeconfig", str(bed.kube.kubeconfig),
            "--member-kubeconfig", str(member_config), "--member-context", KARMADACTL_MEMBER,
            "--karmada-scheduler-estimator-image", image(), "--namespace", NAMESPACE,
            "--pod-timeout", "1"]  # no kubelet here: nothing rolls out; karmadactl only warns
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    (bed.work / "karmadactl.log").write_text(done.stdout + done.stderr)
    if done.returncode != 0:
        raise RuntimeError(f"karmadactl addons enable exited {done.returncode}: {done.stderr.strip()[-1500:]}")
    name = f"{manifests.COMPONENT}-{KARMADACTL_MEMBER}"
    deployment = bed.api.call("GET", f"/apis/apps/v1/namespaces/{NAMESPACE}/deployments/{name}")
    kubeconfig = bed.api.call("GET", f"/api/v1/namespaces/{NAMESPACE}/secrets/{KARMADACTL_MEMBER}-kubeconfig")
    secrets = {f"{KARMADACTL_MEMBER}-kubeconfig": secret_data(kubeconfig),
               "karmada-cert": bed.cert_secret(manifests.LAYOUTS["karmadactl"])}
    log(f"install: karmadactl: created Deployment, Service and Secret for {KARMADACTL_MEMBER}; image "
        f"{deployment['spec']['template']['spec']['containers'][0]['image']}")
    problem = serve_check(bed, deployment, secrets, f"karmadactl-{name}", client_files(bed, "karmadactl"))
    return not problem


# ---------------------------------------------------------------------------------------------
# Route 3: our manifests


def ours(members, layout: str = manifests.DEFAULT_LAYOUT, part: str = "all") -> list[dict]:
    return [doc for m in members for doc in manifests.render(manifests.Options(
        cluster_name=m, layout=layout, image=image(), anti_affinity="preferred"), part)]


def check_ours(bed: Bed, chart_docs: list[dict], karmadactl_done: bool, log) -> bool:
    ok = True
    # 1. Every object, two members, both parts: server-side dry-run (a Namespace for real, so
    #    the objects in it can be checked).
    applied = []
    for doc in ours(CHART_MEMBERS):
        bed.apply(doc, dry_run=True)
        if doc["kind"] == "Namespace":
            bed.apply(doc, dry_run=False)
        applied.append(doc["kind"])
    log(f"install: ours: {len(applied)} objects for {', '.join(CHART_MEMBERS)} applied (dry-run): {', '.join(applied)}")

    # 2. Over a chart-installed estimator: the chart's objects for one member created as Helm 3
    #    creates them, then ours applied server-side with --force-conflicts.
    member = CHART_MEMBERS[0]
    name = f"{manifests.COMPONENT}-{member}"
    chart_objects = [d for d in chart_docs if d["metadata"]["name"] in (name, f"{member}-kubeconfig")]
    for doc in chart_objects:
        bed.api.call("POST", bed.path(doc, collection=True), doc, params={"fieldManager": "helm"})
    before = {d["kind"]: bed.get(d) for d in chart_objects}
    old = ours([member], layout="artifacts", part="host")[0]
    try:
        bed.apply(old, dry_run=True, force=True)
        log("install: ours: the old layout was accepted over a chart install (expected: selector immutable)")
        ok = False
    except ApiStatus as error:
        if error.status != 422 or "immutable" not in error.message:
            log(f"install: ours: the old layout over a chart install: unexpected {error}")
            ok = False
    ok &= upgrade(bed, before, ours([member], part="host"), "chart", log)
    after = bed.get(before["Deployment"])
    secrets = {f"{member}-kubeconfig": secret_data(next(d for d in chart_objects if d["kind"] == "Secret")),
               "karmada-cert": bed.cert_secret(manifests.LAYOUTS["chart"])}
    problem = serve_check(bed, after, secrets, f"ours-over-chart-{name}", client_files(bed, "chart"))
    ok &= not problem

    # 3. Over a karmadactl-installed estimator: --layout karmadactl.
    if karmadactl_done:
        kname = f"{manifests.COMPONENT}-{KARMADACTL_MEMBER}"
        before_k = {kind: bed.api.call("GET", f"{prefix}/namespaces/{NAMESPACE}/{plural}/{kname}")
                    for kind, prefix, plural in (("Deployment", "/apis/apps/v1", "deployments"),
                                                 ("Service", "/api/v1", "services"))}
        ok &= upgrade(bed, before_k, ours([KARMADACTL_MEMBER], layout="karmadactl", part="host"), "karmadactl", log)

    # 4. Uninstall: every object ours rendered, deleted; nothing of them left (a Namespace counts
    #    once it is Terminating: no namespace controller runs here to finish it).
    everything = ours(CHART_MEMBERS) + (ours([KARMADACTL_MEMBER], layout="karmadactl") if karmadactl_done else [])
    left = []
    for doc in reversed(everything):
        try:
            bed.api.call("DELETE", bed.path(doc), params={"propagationPolicy": "Background"})
        except ApiStatus as error:
            if error.status != 404:
                raise
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        left = []
        for doc in everything:
            try:
                if not bed.get(doc)["metadata"].get("deletionTimestamp"):
                    left.append(f"{doc['kind']}/{doc['metadata']['name']}")
            except ApiStatus as error:
                if error.status != 404:
                    raise
        if not left:
            break
        time.sleep(0.5)
    log(f"install: ours: uninstall: {len(everything)} objects deleted" + (f"; still there: {left}" if left else ""))
    return ok and not left


def upgrade(bed: Bed, before: dict[str, dict], docs: list[dict], installed_by: str, log) -> bool:
    """Ours applied for real over an install; the same Deployment (UID, selector) and Service
    (UID, clusterIP, selector) stay, and the Deployment's pods would run our command line."""
    problems = []
    result = {}
    for doc in docs:
        result[doc["kind"]] = bed.apply(doc, dry_run=False, force=True)
    for kind in ("Deployment", "Service"):
        old, new = before[kind], result[kind]
        if old["metadata"]["uid"] != new["metadata"]["uid"]:
            problems.append(f"{kind} replaced")
    if before["Service"]["spec"]["clusterIP"] != result["Service"]["spec"]["clusterIP"]:
        problems.append("Service clusterIP changed")
    if before["Service"]["spec"]["selector"] != result["Service"]["spec"]["selector"]:
        problems.append("Service selector changed")
    if before["Deployment"]["spec"]["selector"] != result["Deployment"]["spec"]["selector"]:
        problems.append("Deployment selector changed")
    container = result["Deployment"]["spec"]["template"]["spec"]["containers"]
    if len(container) != 1 or container[0]["command"] != [manifests.ENTRYPOINT]:
        problems.append(f"the pods would run {[c.get('command') for c in container]}")
    log(f"install: ours over {installed_by}'s install: Deployment and Service kept (UID, selector, clusterIP "
        f"{result['Service']['spec']['clusterIP']}): {'ok' if not problems else '; '.join(problems)}")
    return not problems


# ---------------------------------------------------------------------------------------------


def run(bin_dir: Path, work: Path, versions: dict, log=print) -> dict:
    """The three routes on one bed; never raises (a route that fails is `no` with its reason)."""
    started = time.monotonic()
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    helm = bin_dir / f"helm-{versions.get('HELM_VERSION', '')}"
    karmadactl = bin_dir / f"karmadactl-{versions['KARMADA_VERSION']}"
    verdict = {"chart": False, "karmadactl": False, "ours": False}
    notes: list[str] = []
    bed = None
    chart_docs: list[dict] = []
    try:
        bed = Bed(bin_dir, work, versions, log)
        for route in ("chart", "karmadactl", "ours"):
            try:
                if route == "chart":
                    if not helm.exists():
                        raise FileNotFoundError(f"{helm} is missing: `make e2e-install-tools` builds it")
                    verdict["chart"], chart_docs = check_chart(bed, helm, karmada_module(versions["KARMADA_VERSION"]), log)
                elif route == "karmadactl":
                    if not karmadactl.exists():
                        raise FileNotFoundError(f"{karmadactl} is missing: `make e2e-install-tools` builds it")
                    verdict["karmadactl"] = check_karmadactl(bed, karmadactl, log)
                else:
                    if not chart_docs:
                        raise RuntimeError("needs the chart's objects (route 1 did not render)")
                    verdict["ours"] = check_ours(bed, chart_docs, verdict["karmadactl"], log)
            except Exception as error:  # noqa: BLE001 - one route's failure must not hide the others
                notes.append(f"{route}: {error}")
                log(f"install: {route} FAILED: {error}")
                log(traceback.format_exc(limit=4))
    except Exception as error:  # noqa: BLE001 - the bed itself
        notes.append(f"bed: {error}")
        log(f"install: the bed could not start: {error}")
    finally:
        if bed is not None:
            bed.stop()
    yes = {True: "yes", False: "no"}
    line = (f"install: Karmada chart {versions['KARMADA_VERSION']} rendered, applied (dry-run) and served: "
            f"{yes[verdict['chart']]}; karmadactl manifest served: {yes[verdict['karmadactl']]}; "
            f"our manifests applied: {yes[verdict['ours']]}")
    return {"line": line, "ok": all(verdict.values()), **verdict, "notes": notes,
            "seconds": time.monotonic() - started}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m e2e.harness.install", description=__doc__.split("\n\n")[0])
    p.add_argument("--bin-dir", type=Path, default=REPO / ".e2e" / "bin")
    p.add_argument("--work", type=Path, default=REPO / ".e2e" / "install")
    args = p.parse_args(argv)
    procs.install_signal_handlers()
    try:
        result = run(args.bin_dir, args.work, read_versions(), print)
    finally:
        procs.stop_all()
    print(f"install: {result['seconds']:.0f} s")
    print(result["line"])
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
