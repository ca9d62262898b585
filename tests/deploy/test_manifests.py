"""Deploy artefacts: rendered manifests (schema-valid, names, ports, probes, RBAC), the
committed examples, the Dockerfile and .dockerignore, and the image entrypoint."""

from __future__ import annotations

import copy
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import grpc
import kubernetes_validate
import pytest
import yaml
from grpc_health.v1 import health_pb2, health_pb2_grpc

from estimator.cli import options as estimator_flags
from estimator.deploy import manifests as m
from scheduler_client.launch import free_port

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "deploy" / "examples"
EXAMPLE_ARGS = ["--cluster-name", "member-b", "--image", "karmada-accurate-estimator:0.1.0"]
# Oldest Kubernetes we support and the newest kubernetes-validate ships a schema for.
KUBERNETES_VERSIONS = ("1.30", kubernetes_validate.latest_version())

VARIANTS = {
    "defaults": m.Options(cluster_name="member-b"),
    "service monitor, preferred spread, priority class": m.Options(
        cluster_name="member-b", service_monitor=True, anti_affinity="preferred", priority_class="system-cluster-critical"
    ),
    "other namespaces, secrets and one replica": m.Options(
        cluster_name="gpu-east-1", namespace="karmada-system-2", member_namespace="estimators", replicas=1,
        tls_secret="estimator-tls", kubeconfig_secret="kcfg", packing="first-fit", max_concurrent_requests=0,
    ),
    "karmadactl's layout": m.Options(cluster_name="member-b", layout="karmadactl"),
    "the old layout (Karmada's artifacts/deploy)": m.Options(cluster_name="member-b", layout="artifacts"),
    "chart labels changed in the chart's values": m.Options(
        cluster_name="member-b", chart_labels=(("app", "estimator"), ("team", "infra"))),
}


def by_kind(objects: list[dict]) -> dict[str, dict]:
    kinds = [o["kind"] for o in objects]
    assert len(kinds) == len(set(kinds)), kinds
    return {o["kind"]: o for o in objects}


def host(options: m.Options = VARIANTS["defaults"]) -> dict[str, dict]:
    return by_kind(m.render(options, "host"))


def container(options: m.Options = VARIANTS["defaults"]) -> dict:
    (only,) = host(options)["Deployment"]["spec"]["template"]["spec"]["containers"]
    return only


# ---------------------------------------------------------------------------------------
# Schemas


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
@pytest.mark.parametrize("name", VARIANTS)
def test_every_rendered_object_is_valid_against_the_kubernetes_openapi_schema(name, version):
    objects = m.render(VARIANTS[name])
    checked = 0
    for obj in objects:
        if obj["apiVersion"] == "monitoring.coreos.com/v1":
            continue  # a CRD: no schema in kubernetes-validate (shape checked below)
        kubernetes_validate.validate(obj, version, strict=True)
        checked += 1
    assert checked == len(objects) - VARIANTS[name].service_monitor


def test_the_schema_check_is_strict_enough_to_catch_a_misspelt_field():
    deployment = copy.deepcopy(host()["Deployment"])
    deployment["spec"]["template"]["spec"]["containers"][0]["readinesProbe"] = {}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(deployment, KUBERNETES_VERSIONS[0], strict=True)


def test_the_yaml_output_parses_back_to_the_rendered_objects():
    options = VARIANTS["service monitor, preferred spread, priority class"]
    documents = [d for d in yaml.safe_load_all(m.to_yaml(options)) if d is not None]
    assert documents == m.render(options)


# ---------------------------------------------------------------------------------------
# Names, ports and selectors karmada-scheduler and Prometheus rely on


def test_the_service_has_the_name_namespace_and_port_karmada_scheduler_looks_up():
    svc = host()["Service"]
    assert svc["metadata"]["name"] == "karmada-scheduler-estimator-member-b"
    assert svc["metadata"]["namespace"] == "karmada-system"
    grpc_port = next(p for p in svc["spec"]["ports"] if p["name"] == "grpc")
    assert grpc_port["port"] == 10352 and grpc_port["protocol"] == "TCP"
    named = {p["name"]: p["containerPort"] for p in container()["ports"]}
    assert named[grpc_port["targetPort"]] == 10352


@pytest.mark.parametrize("name", VARIANTS)
def test_service_pdb_and_monitor_select_exactly_the_estimator_pods(name):
    options = VARIANTS[name]
    objects = host(options)
    deployment = objects["Deployment"]
    pod_labels = deployment["spec"]["template"]["metadata"]["labels"]
    selector = deployment["spec"]["selector"]["matchLabels"]
    assert selector.items() <= pod_labels.items()
    assert objects["Service"]["spec"]["selector"] == selector
    assert objects["PodDisruptionBudget"]["spec"]["selector"]["matchLabels"] == selector
    assert pod_labels["cluster"] == options.cluster_name
    assert deployment["spec"]["replicas"] == options.replicas
    for obj in objects.values():
        assert obj["metadata"]["name"] == f"karmada-scheduler-estimator-{options.cluster_name}"
        assert obj["metadata"]["namespace"] == options.namespace


def test_two_replicas_never_share_a_node_and_roll_without_a_surge():
    spec = host()["Deployment"]["spec"]
    assert spec["replicas"] == 2
    (term,) = spec["template"]["spec"]["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert term["topologyKey"] == "kubernetes.io/hostname"
    assert term["labelSelector"]["matchLabels"] == spec["selector"]["matchLabels"]
    assert spec["strategy"]["rollingUpdate"] == {"maxSurge": 0, "maxUnavailable": 1}
    assert host()["PodDisruptionBudget"]["spec"]["maxUnavailable"] == 1


def test_preferred_anti_affinity_spreads_when_it_can():
    spec = host(VARIANTS["service monitor, preferred spread, priority class"])["Deployment"]["spec"]["template"]["spec"]
    (preferred,) = spec["affinity"]["podAntiAffinity"]["preferredDuringSchedulingIgnoredDuringExecution"]
    assert preferred["podAffinityTerm"]["topologyKey"] == "kubernetes.io/hostname"
    assert spec["priorityClassName"] == "system-cluster-critical"


def test_probes_liveness_healthz_and_readiness_readyz_on_10351():
    c = container()
    assert c["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": 10351, "scheme": "HTTP"}
    assert c["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": 10351, "scheme": "HTTP"}
    # Liveness must not kill a pod that is still loading state: it starts late and is lenient.
    assert c["livenessProbe"]["initialDelaySeconds"] >= 10 and c["livenessProbe"]["failureThreshold"] >= 3
    assert {"--health-probe-bind-address=:10351", "--metrics-bind-address=:8080", "--server-port=10352"} <= set(c["args"])


def test_metrics_port_is_scrapable_by_annotations_and_by_the_service_monitor():
    objects = host(VARIANTS["service monitor, preferred spread, priority class"])
    annotations = objects["Deployment"]["spec"]["template"]["metadata"]["annotations"]
    assert annotations == {"prometheus.io/scrape": "true", "prometheus.io/port": "8080", "prometheus.io/path": "/metrics"}
    metrics = next(p for p in objects["Service"]["spec"]["ports"] if p["name"] == "metrics")
    assert metrics["port"] == 8080 and metrics["targetPort"] == "metrics"
    assert {"name": "metrics", "containerPort": 8080, "protocol": "TCP"} in container()["ports"]
    monitor = objects["ServiceMonitor"]
    assert monitor["spec"]["selector"]["matchLabels"].items() <= objects["Service"]["metadata"]["labels"].items()
    assert monitor["spec"]["namespaceSelector"] == {"matchNames": ["karmada-system"]}
    assert monitor["spec"]["endpoints"] == [{"port": "metrics", "path": "/metrics", "interval": "30s", "scheme": "http"}]
    assert "ServiceMonitor" not in host()


@pytest.mark.parametrize("name", VARIANTS)
def test_the_kubeconfig_and_tls_secrets_are_mounted_read_only_where_the_flags_point(name):
    options = VARIANTS[name]
    spec = host(options)["Deployment"]["spec"]["template"]["spec"]
    volumes = {v["name"]: v for v in spec["volumes"]}
    mounts = {v["name"]: v for v in spec["containers"][0]["volumeMounts"]}
    flags = dict(arg.split("=", 1) for arg in spec["containers"][0]["args"])

    assert volumes[m.LAYOUTS[options.layout].tls_volume]["secret"]["secretName"] == (
        options.tls_secret or m.LAYOUTS[options.layout].tls_secret)
    expected_kubeconfig = options.kubeconfig_secret or f"{options.cluster_name}-kubeconfig"
    assert volumes["member-kubeconfig"]["secret"]["secretName"] == expected_kubeconfig
    for volume in (m.LAYOUTS[options.layout].tls_volume, "member-kubeconfig"):
        assert mounts[volume]["readOnly"] is True
        assert volumes[volume]["secret"]["defaultMode"] == 0o440  # readable by fsGroup, not by others
    layout = m.LAYOUTS[options.layout]
    tls_dir = mounts[layout.tls_volume]["mountPath"]
    assert flags["--grpc-auth-cert-file"] == f"{tls_dir}/{layout.cert_key}"
    assert flags["--grpc-auth-key-file"] == f"{tls_dir}/{layout.key_key}"
    assert flags["--grpc-client-ca-file"] == f"{tls_dir}/{layout.ca_key}"
    # Only those three keys are projected: Karmada's karmada-cert also holds the CA's private key.
    assert volumes[layout.tls_volume]["secret"]["items"] == [{"key": k, "path": k} for k in layout.keys]
    key = f"{options.cluster_name}-kubeconfig"
    assert volumes["member-kubeconfig"]["secret"]["items"] == [{"key": key, "path": key}]
    # Karmada's Secret keeps the kubeconfig under the key <cluster>-kubeconfig.
    assert flags["--kubeconfig"] == f"{mounts['member-kubeconfig']['mountPath']}/{options.cluster_name}-kubeconfig"
    assert flags["--cluster-name"] == options.cluster_name


def test_the_pod_runs_non_root_read_only_without_capabilities_and_with_a_writable_numba_cache():
    spec = host()["Deployment"]["spec"]["template"]["spec"]
    c = spec["containers"][0]
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    assert spec["automountServiceAccountToken"] is False
    sc = c["securityContext"]
    assert sc["runAsNonRoot"] is True and sc["runAsUser"] != 0
    assert sc["readOnlyRootFilesystem"] is True
    assert sc["allowPrivilegeEscalation"] is False and sc["privileged"] is False
    assert sc["capabilities"] == {"drop": ["ALL"]}
    assert sc["seccompProfile"] == {"type": "RuntimeDefault"}

    env = {e["name"]: e["value"] for e in c["env"]}
    writable = {mount["mountPath"] for mount in c["volumeMounts"] if not mount.get("readOnly")}
    empty_dirs = {v["name"] for v in spec["volumes"] if "emptyDir" in v}
    assert {mount["name"] for mount in c["volumeMounts"] if not mount.get("readOnly")} <= empty_dirs
    assert any(env["NUMBA_CACHE_DIR"].startswith(path + "/") for path in writable)
    assert "/tmp" in writable
    for kind in ("requests", "limits"):
        assert set(c["resources"][kind]) == {"cpu", "memory"}


def test_the_pod_gets_longer_than_the_drain_before_it_is_killed():
    options = VARIANTS["defaults"]
    spec = host(options)["Deployment"]["spec"]["template"]["spec"]
    assert f"--shutdown-grace-period={options.shutdown_grace_period}" in spec["containers"][0]["args"]
    assert spec["terminationGracePeriodSeconds"] > options.shutdown_grace_period


@pytest.mark.parametrize("name", VARIANTS)
def test_the_container_flags_parse_as_the_estimator_parses_them(name):
    args = container(VARIANTS[name])["args"]
    parser = estimator_flags.build_parser()
    parsed = parser.parse_args(args)
    estimator_flags.validate(parser, parsed)
    assert parsed.cluster_name == VARIANTS[name].cluster_name and not parsed.objects
    assert parsed.kubeconfig and parsed.grpc_client_ca_file and not parsed.insecure_skip_grpc_client_verify
    assert parsed.max_concurrent_requests == VARIANTS[name].max_concurrent_requests
    assert parsed.request_memory_budget == 512 * 1024 * 1024  # rendered: the flag reaches the estimator


def test_the_request_budget_is_rendered_and_must_stay_under_the_memory_limit():
    assert "--request-memory-budget=1Gi" in container(replace(VARIANTS["defaults"], request_memory_budget="1Gi"))["args"]
    for budget, limit in (("2Gi", "2Gi"), ("1900Mi", "2Gi"), ("0", "2Gi"), ("lots", "2Gi")):
        with pytest.raises(m.OptionsError, match="--request-memory-budget"):
            m.check(replace(VARIANTS["defaults"], request_memory_budget=budget, memory_limit=limit))
    m.check(replace(VARIANTS["defaults"], request_memory_budget="1Gi", memory_limit="2Gi"))


# ---------------------------------------------------------------------------------------
# Layouts: applied over an existing Karmada install (a Deployment's selector is immutable)

# What Karmada v1.18.2 renders for member-b (charts/karmada/templates/karmada-scheduler-estimator.yaml
# with the chart's default values; pkg/karmadactl/addons/estimator/manifests.go;
# artifacts/deploy/karmada-scheduler-estimator.yaml). make e2e renders and applies the real ones.
KARMADA_INSTALLS = {
    "chart": {"selector": {"cluster": "member-b", "app": "karmada-scheduler-estimator"}, "secret": "karmada-cert",
              "files": {"/etc/karmada/pki/karmada.crt", "/etc/karmada/pki/karmada.key", "/etc/karmada/pki/server-ca.crt"}},
    "karmadactl": {"selector": {"app": "karmada-scheduler-estimator-member-b"}, "secret": "karmada-cert",
                   "files": {"/etc/karmada/pki/karmada.crt", "/etc/karmada/pki/karmada.key", "/etc/karmada/pki/ca.crt"}},
    "artifacts": {"selector": {"app": "karmada-scheduler-estimator-member-b"},
                  "secret": "karmada-scheduler-estimator-cert",
                  "files": {"/etc/karmada/pki/server/tls.crt", "/etc/karmada/pki/server/tls.key",
                            "/etc/karmada/pki/server/ca.crt"}},
}


@pytest.mark.parametrize("layout", KARMADA_INSTALLS)
def test_each_layout_has_the_selector_and_certificate_files_of_that_karmada_install(layout):
    objects = host(m.Options(cluster_name="member-b", layout=layout))
    install = KARMADA_INSTALLS[layout]
    assert objects["Deployment"]["spec"]["selector"]["matchLabels"] == install["selector"]
    assert objects["Service"]["spec"]["selector"] == install["selector"]
    spec = objects["Deployment"]["spec"]["template"]["spec"]
    flags = dict(arg.split("=", 1) for arg in spec["containers"][0]["args"])
    assert {flags[f] for f in ("--grpc-auth-cert-file", "--grpc-auth-key-file", "--grpc-client-ca-file")} == install["files"]
    secrets = {v["secret"]["secretName"] for v in spec["volumes"] if "secret" in v}
    assert secrets == {install["secret"], "member-b-kubeconfig"}


def test_the_chart_layout_is_the_default_and_its_labels_can_follow_changed_chart_values():
    assert host()["Deployment"]["spec"]["selector"]["matchLabels"] == KARMADA_INSTALLS["chart"]["selector"]
    changed = host(VARIANTS["chart labels changed in the chart's values"])["Deployment"]
    assert changed["spec"]["selector"]["matchLabels"] == {"cluster": "member-b", "app": "estimator", "team": "infra"}
    with pytest.raises(m.OptionsError, match="cluster"):
        m.render(m.Options(cluster_name="member-b", chart_labels=(("cluster", "x"),)))


def test_the_old_layout_renders_what_the_previous_default_did():
    """--layout artifacts: the selector and Secret of 0.1.0's manifests, so installs made with
    them are upgraded in place."""
    objects = host(m.Options(cluster_name="member-b", layout="artifacts"))
    spec = objects["Deployment"]["spec"]["template"]["spec"]
    assert objects["Deployment"]["spec"]["selector"]["matchLabels"] == {"app": "karmada-scheduler-estimator-member-b"}
    mounts = {v["name"]: v["mountPath"] for v in spec["containers"][0]["volumeMounts"]}
    assert mounts["server-cert"] == "/etc/karmada/pki/server"
    assert next(v for v in spec["volumes"] if v["name"] == "server-cert")["secret"]["secretName"] == (
        "karmada-scheduler-estimator-cert")


def test_one_run_renders_every_member_and_the_host_part_is_one_stream(tmp_path):
    shown = run_manifests("--cluster-name", "member-a,member-b", "--cluster-name", "member-c", "--part", "host")
    assert shown.returncode == 0, shown.stderr
    documents = [d for d in yaml.safe_load_all(shown.stdout) if d]
    assert [(d["kind"], d["metadata"]["name"]) for d in documents if d["kind"] == "Deployment"] == [
        ("Deployment", f"karmada-scheduler-estimator-member-{x}") for x in "abc"]
    assert shown.stdout.count("apply to the Karmada host cluster") == 1

    written = run_manifests("--cluster-name", "member-a,member-b", "-o", str(tmp_path))
    assert written.returncode == 0, written.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "member-a-host.yaml", "member-a-member.yaml", "member-b-host.yaml", "member-b-member.yaml"]


@pytest.mark.parametrize("args,message", [
    (["--cluster-name", "member-a,member-a"], "given twice"),
    (["--cluster-name", "member-a,member-b", "--kubeconfig-secret", "k"], "one member"),
    (["--cluster-name", "member-a", "--layout", "karmadactl", "--chart-labels", "app=x"], "--layout chart only"),
    (["--cluster-name", "member-a", "--chart-labels", "novalue"], "KEY=VALUE"),
], ids=["a member named twice is refused", "one kubeconfig Secret for several members is refused",
        "chart labels outside the chart layout are refused", "a chart label without a value is refused"])
def test_bad_member_lists_exit_2_with_a_reason(args, message):
    result = run_manifests(*args)
    assert result.returncode == 2 and message in result.stderr, result.stderr


# ---------------------------------------------------------------------------------------
# Member side: least privilege


def test_the_member_role_reads_exactly_nodes_pods_quotas_workloads_and_dra_objects():
    objects = by_kind(m.render(VARIANTS["defaults"], "member"))
    assert set(objects) == {"Namespace", "ServiceAccount", "Secret", "ClusterRole", "ClusterRoleBinding"}
    assert objects["ClusterRole"]["rules"] == [
        {"apiGroups": [""], "resources": ["nodes", "pods", "resourcequotas"], "verbs": ["get", "list", "watch"]},
        {"apiGroups": ["apps"], "resources": ["replicasets", "deployments"], "verbs": ["get", "list", "watch"]},
        {"apiGroups": ["resource.k8s.io"], "resources": ["deviceclasses", "resourceslices", "resourceclaims"],
         "verbs": ["get", "list", "watch"]},
    ]
    binding = objects["ClusterRoleBinding"]
    assert binding["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                  "name": objects["ClusterRole"]["metadata"]["name"]}
    assert binding["subjects"] == [{"kind": "ServiceAccount", "name": objects["ServiceAccount"]["metadata"]["name"],
                                    "namespace": "karmada-scheduler-estimator"}]
    token = objects["Secret"]
    assert token["type"] == "kubernetes.io/service-account-token" and "data" not in token
    assert token["metadata"]["annotations"] == {"kubernetes.io/service-account.name": "karmada-scheduler-estimator"}
    assert token["metadata"]["namespace"] == objects["ServiceAccount"]["metadata"]["namespace"]
    assert objects["ServiceAccount"]["automountServiceAccountToken"] is False


def test_host_and_member_parts_are_disjoint_and_all_is_both():
    options = VARIANTS["defaults"]
    assert m.render(options) == m.render(options, "host") + m.render(options, "member")
    assert {o["kind"] for o in m.render(options, "host")}.isdisjoint(o["kind"] for o in m.render(options, "member"))
    assert not any(o["kind"] == "Secret" for o in m.render(options, "host")), "credentials are never rendered"


# ---------------------------------------------------------------------------------------
# The command


def run_manifests(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "estimator", "manifests", *args],
                          capture_output=True, text=True, timeout=60)


def test_one_command_renders_a_member_and_writes_split_files(tmp_path):
    shown = run_manifests("--cluster-name", "member-b", "--image", "example/estimator:1", "--part", "host")
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout == m.to_yaml(m.Options(cluster_name="member-b", image="example/estimator:1"), "host")

    written = run_manifests("--cluster-name", "member-b", "--service-monitor", "-o", str(tmp_path))
    assert written.returncode == 0, written.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["member-b-host.yaml", "member-b-member.yaml"]
    host_docs = list(yaml.safe_load_all((tmp_path / "member-b-host.yaml").read_text()))
    assert [d["kind"] for d in host_docs] == ["Deployment", "Service", "PodDisruptionBudget", "ServiceMonitor"]
    assert "apply to member cluster member-b" in (tmp_path / "member-b-member.yaml").read_text()


@pytest.mark.parametrize(
    "args,message",
    [
        (["--cluster-name", "Member_B"], "DNS label"),
        (["--cluster-name", "m" * (m.MAX_CLUSTER_NAME + 1)], "at most 35"),
        (["--cluster-name", "member-b", "--replicas", "0"], "--replicas"),
        (["--cluster-name", "member-b", "--part", "everything"], "--part"),
    ],
    ids=["upper case and underscores are refused", "a name too long for the Service is refused",
         "zero replicas are refused", "an unknown part is refused"],
)
def test_bad_options_exit_2_with_a_reason(args, message):
    result = run_manifests(*args)
    assert result.returncode == 2 and message in result.stderr


def test_the_committed_examples_are_what_the_command_renders_now(tmp_path):
    assert run_manifests(*EXAMPLE_ARGS, "-o", str(tmp_path)).returncode == 0
    for rendered in tmp_path.iterdir():
        committed = EXAMPLES / rendered.name
        assert committed.exists(), f"missing {committed}; run: karmada-estimator manifests {' '.join(EXAMPLE_ARGS)} -o deploy/examples"
        assert committed.read_text() == rendered.read_text(), (
            f"{committed} is stale; run: karmada-estimator manifests {' '.join(EXAMPLE_ARGS)} -o deploy/examples")


# ---------------------------------------------------------------------------------------
# Dockerfile, .dockerignore, entrypoint


def dockerfile_instructions() -> list[tuple[str, str]]:
    text = re.sub(r"\\\n", " ", (REPO / "Dockerfile").read_text())
    rows = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            keyword, _, rest = line.partition(" ")
            rows.append((keyword.upper(), rest.strip()))
    return rows


def dockerignored(path: str, patterns: list[str]) -> bool:
    """Docker's rules: patterns in order, the last match wins, `!` re-includes, a pattern
    matching a parent directory matches everything under it."""
    def regex(pattern: str) -> re.Pattern:
        out, i = "", 0
        while i < len(pattern):
            if pattern.startswith("**/", i):
                out, i = out + "(.*/)?", i + 3
            elif pattern.startswith("**", i):
                out, i = out + ".*", i + 2
            elif pattern[i] == "*":
                out, i = out + "[^/]*", i + 1
            elif pattern[i] == "?":
                out, i = out + "[^/]", i + 1
            else:
                out, i = out + re.escape(pattern[i]), i + 1
        return re.compile(out + "$")

    parts = path.split("/")
    candidates = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    ignored = False
    for pattern in patterns:
        negate = pattern.startswith("!")
        rx = regex(os.path.normpath(pattern.lstrip("!")))
        if any(rx.match(candidate) for candidate in candidates):
            ignored = not negate
    return ignored


def dockerignore_patterns() -> list[str]:
    lines = (REPO / ".dockerignore").read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def test_every_path_the_dockerfile_copies_exists_and_is_in_the_build_context():
    patterns = dockerignore_patterns()
    copies = [rest.split() for keyword, rest in dockerfile_instructions() if keyword == "COPY"]
    sources = [src for words in copies if not any(w.startswith("--from") for w in words) for src in words[:-1]]
    assert set(sources) >= {"pyproject.toml", "README.md", "estimator/", "deploy/image/entrypoint.sh"}
    for source in sources:
        path = REPO / source
        assert path.exists(), f"Dockerfile copies {source}, which does not exist"
        files = [p for p in path.rglob("*") if p.is_file()] if path.is_dir() else [path]
        kept = [f for f in files if not dockerignored(f.relative_to(REPO).as_posix(), patterns)]
        assert len(kept) == len([f for f in files if "__pycache__" not in f.parts]), (
            f"part of {source} is excluded by .dockerignore")


@pytest.mark.parametrize("path,ignored", [
    (".venv/bin/python", True), (".git/HEAD", True), ("tests/service/test_cli.py", True), (".numba_cache/x.nbi", True),
    ("benchmarks/data/member-10000-s1-u65-g1.json", True), ("deploy/demo/member-a.yaml", True),
    ("estimator/__pycache__/server.cpython-311.pyc", True),
    ("estimator/service/server.py", False), ("estimator/pb/estimator_pb2.py", False), ("pyproject.toml", False),
    ("deploy/image/entrypoint.sh", False),
])
def test_dockerignore_keeps_the_context_to_what_the_image_needs(path, ignored):
    assert dockerignored(path, dockerignore_patterns()) is ignored


def test_the_image_runs_the_entrypoint_as_the_manifests_expect():
    rows = dockerfile_instructions()
    env = {}
    for keyword, rest in rows:
        if keyword == "ENV":
            env.update(dict(word.split("=", 1) for word in shlex.split(rest)))
    entrypoint = next(yaml.safe_load(rest) for keyword, rest in rows if keyword == "ENTRYPOINT")
    cmd = next(yaml.safe_load(rest) for keyword, rest in rows if keyword == "CMD")
    user = [rest for keyword, rest in rows if keyword == "USER"][-1]
    copied_to = {words.split()[-1]: words.split()[0] for keyword, words in rows if keyword == "COPY"}

    assert entrypoint == [m.ENTRYPOINT] and container()["command"] == [m.ENTRYPOINT]
    assert copied_to[m.ENTRYPOINT] == "deploy/image/entrypoint.sh"
    assert os.access(REPO / "deploy" / "image" / "entrypoint.sh", os.X_OK)
    assert env["NUMBA_CACHE_DIR"] == m.NUMBA_CACHE_DIR
    assert env["NUMBA_CPU_NAME"] == "generic"
    assert user == f"{m.RUN_AS}:{m.RUN_AS}"
    exposed = {int(p) for keyword, rest in rows if keyword == "EXPOSE" for p in rest.split()}
    assert exposed == {m.GRPC_PORT, m.HEALTH_PORT, m.METRICS_PORT}
    with pytest.raises(SystemExit) as shown:  # the default CMD is --help
        estimator_flags.build_parser().parse_args(cmd)
    assert shown.value.code == 0
    warm = next(rest for keyword, rest in rows if keyword == "RUN" and "warmup" in rest)
    assert "from estimator import kernels; kernels.warmup()" in warm
    assert f"NUMBA_CACHE_DIR={env['KARMADA_ESTIMATOR_NUMBA_SEED']}" in warm


KERNEL_STATS = """
import importlib, json, pkgutil
from numba.core.registry import CPUDispatcher
from estimator import kernels
kernels.warmup()
hits = misses = 0
for info in pkgutil.iter_modules(kernels.__path__):
    module = importlib.import_module("estimator.kernels." + info.name)
    for value in vars(module).values():
        if isinstance(value, CPUDispatcher) and value.__module__ == module.__name__:
            hits += sum(value.stats.cache_hits.values())
            misses += sum(value.stats.cache_misses.values())
print(json.dumps({"hits": hits, "misses": misses}))
"""


def kernel_stats(cache_dir: Path) -> dict:
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache_dir), NUMBA_CPU_NAME="generic")
    # A hang guard only: compiling every kernel into an empty cache took 2+ minutes on a third of a core.
    done = subprocess.run([sys.executable, "-c", KERNEL_STATS], env=env, capture_output=True, text=True,
                          timeout=900, cwd=REPO)
    assert done.returncode == 0, done.stderr
    return yaml.safe_load(done.stdout.splitlines()[-1])


def test_the_entrypoint_seeds_the_writable_cache_so_kernels_load_without_compiling(tmp_path):
    seed, emptydir = tmp_path / "seed", tmp_path / "emptydir" / "numba"
    built = kernel_stats(seed)  # what the Dockerfile's RUN does at build time
    assert built["misses"] > 0 or built["hits"] > 0
    env = dict(os.environ, KARMADA_ESTIMATOR_NUMBA_SEED=str(seed), NUMBA_CACHE_DIR=str(emptydir),
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    started = subprocess.run(["sh", str(REPO / "deploy" / "image" / "entrypoint.sh"), "--help"], env=env,
                             capture_output=True, text=True, timeout=60)
    assert started.returncode == 0, started.stderr
    assert "karmada-estimator" in started.stdout  # exec'd the estimator with our arguments
    assert any(emptydir.rglob("*.nbi")), "no kernel index was copied"
    loaded = kernel_stats(emptydir)
    assert loaded["misses"] == 0 and loaded["hits"] >= 1, loaded


def test_the_entrypoint_still_starts_the_estimator_without_a_seed(tmp_path):
    env = dict(os.environ, KARMADA_ESTIMATOR_NUMBA_SEED=str(tmp_path / "absent"), NUMBA_CACHE_DIR=str(tmp_path / "c"),
               PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    started = subprocess.run(["sh", str(REPO / "deploy" / "image" / "entrypoint.sh"), "manifests", "--cluster-name",
                              "member-b", "--part", "member"], env=env, capture_output=True, text=True, timeout=60)
    assert started.returncode == 0, started.stderr
    assert "kind: ClusterRole" in started.stdout


@pytest.mark.skipif(shutil.which("sh") is None, reason="needs a POSIX shell")
def test_the_entrypoint_is_valid_posix_shell():
    assert subprocess.run(["sh", "-n", str(REPO / "deploy" / "image" / "entrypoint.sh")]).returncode == 0


def test_the_build_context_alone_installs_an_estimator_that_serves(tmp_path):
    """What `pip install .` does in the Dockerfile's build stage, on exactly the files the
    .dockerignore lets into the context; then the installed copy (not the repository)
    serves the demo member and drains on SIGTERM."""
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                            capture_output=True, text=True, check=True).stdout.split()
    patterns = dockerignore_patterns()
    context = tmp_path / "context"
    for name in listed:
        if (REPO / name).is_file() and not dockerignored(name, patterns):
            (context / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, context / name)
    wheels, site = tmp_path / "wheels", tmp_path / "site"
    for command in (lambda: ["wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(wheels), str(context)],
                    lambda: ["install", "--no-deps", "-q", "--target", str(site), *map(str, wheels.glob("*.whl"))]):
        done = subprocess.run([sys.executable, "-m", "pip", *command()], capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr

    port = free_port()
    env = dict(os.environ, PYTHONPATH=str(site), NUMBA_CACHE_DIR=str(tmp_path / "numba"), NUMBA_CPU_NAME="generic")
    process = subprocess.Popen(
        [sys.executable, "-c", "import estimator, sys; assert estimator.__file__.startswith(sys.argv[1]); "
                               "from estimator.__main__ import main; sys.exit(main(sys.argv[2:]))",
         str(site), "--cluster-name", "member-a", "--objects", str(REPO / "deploy" / "demo" / "member-a.yaml"),
         "--server-port", str(port), "--server-bind-address", "127.0.0.1", "--health-probe-bind-address", "0",
         "--metrics-bind-address", "0"],
        env=env, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            # A hang guard only (a process that dies fails at once): compiling the kernels into the
            # empty cache took 2+ minutes on a third of a loaded core.
            deadline = time.monotonic() + 900
            while True:
                assert process.poll() is None, process.communicate()[1]
                try:
                    status = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(), timeout=1).status
                    if status == health_pb2.HealthCheckResponse.SERVING:
                        break
                except grpc.RpcError:
                    pass
                assert time.monotonic() < deadline, "the installed estimator never became ready"
                time.sleep(0.2)
        process.send_signal(signal.SIGTERM)
        assert process.wait(30) == 0
    finally:
        if process.poll() is None:
            process.kill()
