"""A real Karmada control plane on loopback, with members and estimators (issue 26, part 1).

`Stack` brings up, from the binaries `make e2e-karmada-cp` builds into .e2e/bin/:

- karmada-apiserver: etcd + kube-apiserver (the e2e KubeBed) with the aggregation layer's
  front-proxy certificates, Karmada's CRDs applied from Karmada's own Go module
  (charts/karmada/_crds/bases, read from the module cache at run time), and our PyTorchJob CRD;
- karmada-aggregated-apiserver: Cluster objects, served through the `v1alpha1.cluster.karmada.io`
  APIService (Service `karmada-aggregated-apiserver` as in Karmada's artifacts/deploy);
- karmada-webhook with Karmada's artifacts/deploy/webhook-configuration.yaml (its URLs pointed
  at the webhook's loopback port): it adds the policies' permanent-id label the scheduler needs,
  validates components and enforces FederatedResourceQuota;
- karmada-controller-manager (cluster failover: --enable-no-execute-taint-eviction, a
  ClusterTaintPolicy tainting a NotReady cluster NoExecute) and karmada-scheduler with
  --enable-scheduler-estimator and mutual TLS to the estimators;
- three members (judge.JudgeBed: etcd + kube-apiserver + kube-scheduler each), registered as
  Push Clusters with their credentials in a Secret, as `karmadactl join` registers them;
- one estimator per member, ours or Karmada's, started with the command line Karmada's chart
  gives /bin/karmada-scheduler-estimator and found by karmada-scheduler as Karmada's is: the
  ExternalName Service `karmada-scheduler-estimator-<cluster>` in karmada-system, port 10352.

`python -m e2e.harness.karmadacp` runs the scenarios (karmadacp_scenarios.py) and prints the
`karmada: ...` line; `--keep` leaves one control plane (ours) running, `--down` removes it
(karmadacp_keep.py). The karmada-apiserver, Karmada's module and CRDs and small helpers are in
karmadacp_apiserver.py, the members' side in karmadacp_workload.py. docs/karmada-local.md is
the user's guide.
"""

from __future__ import annotations

import base64
import json
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

from e2e.harness import karmadacp_workload as wl
from e2e.harness.judge import JudgeBed
from e2e.harness.karmadacp_apiserver import (
    KarmadaApiserver, answers, create, gate_flag, http_ok_quiet, https_ok, karmada_crds, karmada_module, loopback_block)
from e2e.harness.procs import Proc, wait_for
from e2e.harness.rest import Rest
from scheduler_client.launch import free_port

REPO = Path(__file__).resolve().parents[2]
SYSTEM_NS, CLUSTER_NS = "karmada-system", "karmada-cluster"
ESTIMATOR_PREFIX, ESTIMATOR_PORT = "karmada-scheduler-estimator", 10352
AGGREGATED_SERVICE = "karmada-aggregated-apiserver"
CLUSTERS = "/apis/cluster.karmada.io/v1alpha1/clusters"
# The gates issue 26 asks for, on every Karmada program; failover and federated quota need theirs.
GATES = {"MultiplePodTemplatesScheduling": True, "SchedulingOvercommitProtection": True,
         "PriorityBasedScheduling": True, "Failover": True, "FederatedQuotaEnforcement": True}
# The scheduler alone: CustomizedClusterResourceModeling off, the documented cure of failure 3
# (the default resource models know only cpu and memory, so every GPU job would fit 0 times).
SCHEDULER_GATES = {**GATES, "CustomizedClusterResourceModeling": False}
ESTIMATOR_GATES = {"SchedulingOvercommitProtection": True}  # the chart's schedulerEstimator.featureGates


class Stack:
    """One Karmada control plane, its members and one estimator per member (`kind`: ours or karmada)."""

    def __init__(self, name: str, kind: str, bin_dir: Path, work: Path, versions: dict, log=print):
        self.name, self.kind, self.log = name, kind, log
        self.bin_dir, self.versions = bin_dir, versions
        self.work = work.resolve()
        self.karmada_version = versions["KARMADA_VERSION"]
        for prog in ("aggregated-apiserver", "controller-manager", "scheduler", "webhook", "scheduler-estimator"):
            path = self.bin(prog)
            if not path.exists():
                raise FileNotFoundError(f"{path} is missing: `make e2e-karmada-cp` builds it")
        self.module = karmada_module(self.karmada_version)
        self.fleet = wl.fleet()
        self.procs: dict[str, Proc] = {}
        self.members: dict[str, JudgeBed] = {}
        self.member_api: dict[str, Rest] = {}
        self.estimator_at: dict[str, tuple[str, int]] = {}
        self.operator: wl.Operator | None = None
        self.api: Rest | None = None
        self.gates = dict(GATES)
        self.scheduler_gates = dict(SCHEDULER_GATES)

    def bin(self, prog: str) -> Path:
        return self.bin_dir / f"karmada-{prog}-{self.karmada_version}"

    @property
    def kubeconfig(self) -> Path:
        return self.karmada.kubeconfig

    # -- bring-up -------------------------------------------------------------------------------
    def start(self, cm_gates: dict | None = None) -> "Stack":
        """Everything, in order; `cm_gates` for the first karmada-controller-manager (the
        scheduler starts with `self.scheduler_gates`)."""
        started = time.monotonic()
        self.work.mkdir(parents=True, exist_ok=True)
        kube, etcd = self.versions["KUBERNETES_VERSION"], self.versions["ETCD_VERSION"]
        self.karmada = KarmadaApiserver(self.bin_dir, self.work / "karmada-apiserver", kube, etcd)
        for spec in self.fleet:
            self.members[spec.name] = JudgeBed(self.bin_dir, self.work / spec.name, kube, etcd)
        with ThreadPoolExecutor(4) as pool:  # the four apiservers load at once
            for done in [pool.submit(self.karmada.start)] + [pool.submit(m.start) for m in self.members.values()]:
                done.result()
        self.api = Rest(self.karmada.kubeconfig)
        for name, bed in self.members.items():
            self.member_api[name] = Rest(bed.kubeconfig)
        self.log(f"karmada[{self.name}]: karmada-apiserver and {len(self.members)} members up "
                 f"({time.monotonic() - started:.0f} s)")
        self._control_plane_objects()
        self._start_aggregated_apiserver()
        self._start_webhook()
        for spec in self.fleet:
            api = self.member_api[spec.name]
            create(api, wl.CRD_PATH, wl.pytorchjob_crd())
            wl.populate_member(api, spec)
        self._start_estimators()
        self._register_clusters()
        self.start_controller_manager(cm_gates)
        self.start_scheduler()
        self._wait_clusters_ready()
        self._policy_objects()
        self.operator = wl.Operator(self.member_api).start()
        self.log(f"karmada[{self.name}]: control plane ready with {self.kind} estimators "
                 f"({time.monotonic() - started:.0f} s)")
        return self

    def _control_plane_objects(self) -> None:
        api = self.api
        for ns, labels in ((SYSTEM_NS, {}), (CLUSTER_NS, {"karmada.io/system": "true"})):
            create(api, "/api/v1/namespaces", {"metadata": {"name": ns, "labels": labels}})
        crds = karmada_crds(self.module) + [wl.pytorchjob_crd()]
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda crd: create(api, wl.CRD_PATH, crd), crds))
        for crd in crds:
            name = crd["metadata"]["name"]
            wait_for(f"CRD {name} established", lambda n=name: any(
                c["type"] == "Established" and c["status"] == "True"
                for c in api.call("GET", f"{wl.CRD_PATH}/{n}").get("status", {}).get("conditions", [])), 60)

    def _start_aggregated_apiserver(self) -> None:
        ca = self.karmada.ca
        dns = f"{AGGREGATED_SERVICE}.{SYSTEM_NS}.svc"
        cert, key = ca.issue("aggregated-apiserver", AGGREGATED_SERVICE, server_names=("127.0.0.1", "localhost", dns))
        port, metrics, health = free_port(), free_port(), free_port()
        kc = self.karmada.kubeconfig
        self._proc("karmada-aggregated-apiserver", [
            self.bin("aggregated-apiserver"), "--kubeconfig", kc, "--authentication-kubeconfig", kc,
            "--authorization-kubeconfig", kc, "--etcd-servers", self.karmada.etcd_url,
            "--tls-cert-file", cert, "--tls-private-key-file", key, "--tls-min-version", "VersionTLS13",
            "--bind-address", "127.0.0.1", "--secure-port", port, gate_flag(self.gates),
            "--enable-priority-and-fairness=false", "--audit-log-path", "-", "--audit-log-maxage", "0",
            "--audit-log-maxbackup", "0", "--v", "1",
        ])
        wait_for("karmada-aggregated-apiserver /readyz", lambda: https_ok(f"https://127.0.0.1:{port}/readyz"), 120,
                 self.procs["karmada-aggregated-apiserver"])
        # Karmada's artifacts/deploy/karmada-aggregated-apiserver-apiservice.yaml: the APIService and
        # an ExternalName Service; here the Service names the loopback address and the port.
        create(self.api, f"/api/v1/namespaces/{SYSTEM_NS}/services", {
            "metadata": {"name": AGGREGATED_SERVICE, "namespace": SYSTEM_NS},
            "spec": {"type": "ExternalName", "externalName": "127.0.0.1",
                     "ports": [{"port": port, "targetPort": port, "protocol": "TCP"}]}})
        create(self.api, "/apis/apiregistration.k8s.io/v1/apiservices", {
            "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
            "metadata": {"name": "v1alpha1.cluster.karmada.io", "labels": {"app": AGGREGATED_SERVICE}},
            "spec": {"caBundle": base64.b64encode(ca.cert_path.read_bytes()).decode(), "group": "cluster.karmada.io",
                     "groupPriorityMinimum": 2000, "version": "v1alpha1", "versionPriority": 10,
                     "service": {"name": AGGREGATED_SERVICE, "namespace": SYSTEM_NS, "port": port}}})
        wait_for("Cluster API through the aggregation layer", lambda: self.api.call("GET", CLUSTERS) is not None, 120)

    def _start_webhook(self) -> None:
        ca = self.karmada.ca
        ca.issue("karmada-webhook", "karmada-webhook", server_names=("127.0.0.1", "localhost"))
        port, metrics, health = free_port(), free_port(), free_port()
        self._proc("karmada-webhook", [
            self.bin("webhook"), "--kubeconfig", self.karmada.kubeconfig, "--bind-address", "127.0.0.1",
            "--secure-port", port, "--cert-dir", self.karmada.pki_dir, "--tls-cert-file-name", "karmada-webhook.crt",
            "--tls-private-key-file-name", "karmada-webhook.key", "--metrics-bind-address", f"127.0.0.1:{metrics}",
            "--health-probe-bind-address", f"127.0.0.1:{health}", gate_flag(self.gates),
            "--allow-no-execute-taint-policy=true", "--v", "2",
        ])
        wait_for("karmada-webhook serving", lambda: answers(f"https://127.0.0.1:{port}/convert"), 120,
                 self.procs["karmada-webhook"])
        text = (self.module / "artifacts" / "deploy" / "webhook-configuration.yaml").read_text()
        text = text.replace("https://karmada-webhook.karmada-system.svc:443", f"https://127.0.0.1:{port}")
        text = text.replace("{{caBundle}}", base64.b64encode(ca.cert_path.read_bytes()).decode())
        text = text.replace("timeoutSeconds: 3", "timeoutSeconds: 10")  # a shared 2-core machine
        for doc in yaml.safe_load_all(text):
            if doc:
                plural = {"MutatingWebhookConfiguration": "mutatingwebhookconfigurations",
                          "ValidatingWebhookConfiguration": "validatingwebhookconfigurations"}[doc["kind"]]
                create(self.api, f"/apis/admissionregistration.k8s.io/v1/{plural}", doc)

    # -- estimators -------------------------------------------------------------------------------
    def _start_estimators(self) -> None:
        block = loopback_block()
        names = [spec.name for spec in self.fleet]
        for i, name in enumerate(names):
            self.estimator_at[name] = (f"{block}.{i + 1}", free_port())
        # One certificate for the estimators and the scheduler, as the chart's karmada.crt
        # (server and client), from the karmada CA (the chart's server-ca.crt).
        self.grpc_cert = self.karmada.ca.issue("karmada", "karmada", client=True,
                                               server_names=tuple(ip for ip, _ in self.estimator_at.values()))
        for name in names:
            self.start_estimator(name, wait=False)
        for name in names:
            self.wait_estimator(name)
            ip, port = self.estimator_at[name]
            create(self.api, f"/api/v1/namespaces/{SYSTEM_NS}/services", self.estimator_service(name))

    def estimator_service(self, cluster: str) -> dict:
        ip, port = self.estimator_at[cluster]
        return {"metadata": {"name": f"{ESTIMATOR_PREFIX}-{cluster}", "namespace": SYSTEM_NS, "labels": {"cluster": cluster}},
                "spec": {"type": "ExternalName", "externalName": ip,
                         "ports": [{"protocol": "TCP", "port": ESTIMATOR_PORT, "targetPort": port}]}}

    def estimator_argv(self, cluster: str) -> list:
        """Karmada chart's command line for /bin/karmada-scheduler-estimator, with $(POD_IP) the
        member's loopback address; the gRPC port is given because the pods here share a host."""
        ip, port = self.estimator_at[cluster]
        cert, key = self.grpc_cert
        exe = (Path(sys.executable).parent / "karmada-estimator") if self.kind == "ours" else self.bin("scheduler-estimator")
        self._estimator_health = getattr(self, "_estimator_health", {})
        health = self._estimator_health.setdefault(cluster, free_port())
        return [exe, f"--kubeconfig={self.members[cluster].kubeconfig}", f"--cluster-name={cluster}",
                f"--grpc-auth-cert-file={cert}", f"--grpc-auth-key-file={key}",
                f"--grpc-client-ca-file={self.karmada.ca.cert_path}",
                f"--metrics-bind-address={ip}:{free_port()}", f"--health-probe-bind-address={ip}:{health}",
                "--v=2", gate_flag(ESTIMATOR_GATES), f"--server-port={port}"]

    def start_estimator(self, cluster: str, wait: bool = True) -> None:
        self._proc(f"estimator-{cluster}", self.estimator_argv(cluster))
        if wait:
            self.wait_estimator(cluster)

    def wait_estimator(self, cluster: str) -> None:
        ip, _ = self.estimator_at[cluster]
        health = self._estimator_health[cluster]
        wait_for(f"estimator of {cluster}", lambda: any(
            http_ok_quiet(f"http://{ip}:{health}{p}") for p in ("/readyz", "/healthz")), 240, self.procs[f"estimator-{cluster}"])

    def stop_estimator(self, cluster: str) -> None:
        proc = self.procs.pop(f"estimator-{cluster}", None)
        if proc is not None:
            proc.stop()

    # -- members --------------------------------------------------------------------------------
    def _register_clusters(self) -> None:
        """What `karmadactl join` writes: a Secret with the member's CA and token (and the
        impersonator's), then a Push Cluster naming them, its id the member's kube-system UID."""
        for name, bed in self.members.items():
            kube = bed.kube
            token = base64.b64encode(kube.token.encode()).decode()
            labels = {"karmada.io/system": "true"}
            create(self.api, f"/api/v1/namespaces/{CLUSTER_NS}/secrets", {
                "metadata": {"name": name, "namespace": CLUSTER_NS, "labels": labels},
                "data": {"caBundle": base64.b64encode(kube.ca.cert_path.read_bytes()).decode(), "token": token}})
            create(self.api, f"/api/v1/namespaces/{CLUSTER_NS}/secrets", {
                "metadata": {"name": f"{name}-impersonator", "namespace": CLUSTER_NS, "labels": labels},
                "data": {"token": token}})
            uid = self.member_api[name].call("GET", "/api/v1/namespaces/kube-system")["metadata"]["uid"]
            create(self.api, CLUSTERS, {
                "apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster", "metadata": {"name": name},
                "spec": {"syncMode": "Push", "apiEndpoint": kube.url, "id": uid,
                         "secretRef": {"namespace": CLUSTER_NS, "name": name},
                         "impersonatorSecretRef": {"namespace": CLUSTER_NS, "name": f"{name}-impersonator"}}})

    def cluster(self, name: str) -> dict:
        return self.api.call("GET", f"{CLUSTERS}/{name}")

    def cluster_ready(self, name: str) -> bool:
        obj = self.cluster(name)
        ready = any(c["type"] == "Ready" and c["status"] == "True" for c in obj.get("status", {}).get("conditions", []))
        return ready and not obj.get("spec", {}).get("taints") and bool(obj.get("status", {}).get("apiEnablements"))

    def _wait_clusters_ready(self, timeout: float = 180) -> None:
        for name in self.members:
            wait_for(f"Cluster {name} Ready and untainted", lambda n=name: self.cluster_ready(n), timeout,
                     self.procs["karmada-controller-manager"], every=0.5)

    def _policy_objects(self) -> None:
        create(self.api, "/apis/policy.karmada.io/v1alpha1/clustertaintpolicies", {
            "apiVersion": "policy.karmada.io/v1alpha1", "kind": "ClusterTaintPolicy",
            "metadata": {"name": "not-ready-no-execute"},
            "spec": {"addOnConditions": [{"conditionType": "Ready", "operator": "NotIn", "statusValues": ["True"]}],
                     "removeOnConditions": [{"conditionType": "Ready", "operator": "In", "statusValues": ["True"]}],
                     "taints": [{"key": "cluster.karmada.io/not-ready", "effect": "NoExecute"}]}})
        for name, value in (("e2e-high", 1000), ("e2e-low", 100)):
            create(self.api, "/apis/scheduling.k8s.io/v1/priorityclasses", {
                "apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                "metadata": {"name": name}, "value": value, "preemptionPolicy": "Never"})

    # -- Karmada's controllers --------------------------------------------------------------------
    def start_controller_manager(self, gates: dict | None = None) -> None:
        self.gates_cm = dict(gates or self.gates)
        self._proc("karmada-controller-manager", [
            self.bin("controller-manager"), "--kubeconfig", self.karmada.kubeconfig, "--leader-elect=false",
            "--cluster-status-update-frequency=2s", "--cluster-monitor-period=2s", "--cluster-failure-threshold=6s",
            "--cluster-success-threshold=2s", "--cluster-monitor-grace-period=20s", "--cluster-startup-grace-period=30s",
            "--enable-no-execute-taint-eviction=true", "--controllers=*", gate_flag(self.gates_cm),
            f"--metrics-bind-address=127.0.0.1:{free_port()}", f"--health-probe-bind-address=127.0.0.1:{free_port()}",
            "--kube-api-qps=200", "--kube-api-burst=400", "--v=2",
        ])

    def start_scheduler(self, gates: dict | None = None) -> None:
        self.gates_sched = dict(gates or self.scheduler_gates)
        cert, key = self.grpc_cert
        self._proc("karmada-scheduler", [
            self.bin("scheduler"), "--kubeconfig", self.karmada.kubeconfig, "--leader-elect=false",
            f"--metrics-bind-address=127.0.0.1:{free_port()}", f"--health-probe-bind-address=127.0.0.1:{free_port()}",
            "--enable-scheduler-estimator=true", f"--scheduler-estimator-ca-file={self.karmada.ca.cert_path}",
            f"--scheduler-estimator-cert-file={cert}", f"--scheduler-estimator-key-file={key}",
            f"--scheduler-estimator-service-namespace={SYSTEM_NS}", f"--scheduler-estimator-service-prefix={ESTIMATOR_PREFIX}",
            f"--scheduler-estimator-port={ESTIMATOR_PORT}", gate_flag(self.gates_sched),
            "--kube-api-qps=200", "--kube-api-burst=400", "--v=4",
        ])
        self.wait_estimator_connections()

    def wait_estimator_connections(self, timeout: float = 60) -> None:
        """karmada-scheduler logs one line per estimator it connected to; wait for every member's."""
        proc = self.procs["karmada-scheduler"]
        want = {name for name in self.members if f"estimator-{name}" in self.procs}

        def connected() -> bool:
            text = proc.log_path.read_text(errors="replace").rsplit("=== start", 1)[-1]
            return all(f"of cluster({name}) has been established" in text for name in want)
        wait_for("karmada-scheduler's estimator connections", connected, timeout, proc, every=0.3)

    def restart(self, component: str, gates: dict | None = None) -> None:
        self.procs.pop(component).stop()
        if component == "karmada-scheduler":
            self.start_scheduler(gates)
        else:
            self.start_controller_manager(gates)

    # -- plumbing -------------------------------------------------------------------------------
    def _proc(self, name: str, argv: list) -> Proc:
        proc = Proc(name, argv, self.work).start()
        self.procs[name] = proc
        return proc

    def stop(self) -> None:
        if self.operator is not None:
            self.operator.stop()
        for proc in reversed(list(self.procs.values())):
            proc.stop(grace=2.0)
        self.procs.clear()
        for bed in self.members.values():
            bed.stop()
        if hasattr(self, "karmada"):
            self.karmada.stop()

    def pids(self) -> list[int]:
        beds = [self.karmada.etcd, self.karmada.apiserver]
        for bed in self.members.values():
            beds += [bed.kube.etcd, bed.kube.apiserver, bed.scheduler]
        return [p.pid for p in beds + list(self.procs.values()) if p is not None and p.alive()]


# -- the command ------------------------------------------------------------------------------------

def main(argv=None) -> int:
    import argparse

    from e2e.harness import karmadacp_keep, karmadacp_scenarios, procs
    from e2e.harness.versions import versions

    p = argparse.ArgumentParser(prog="python -m e2e.harness.karmadacp", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--bin-dir", type=Path, default=REPO / ".e2e" / "bin")
    p.add_argument("--work", type=Path, default=None,
                   help="working directory (default .e2e/karmadacp, or .e2e/karmada-local with --keep)")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--keep", action="store_true",
                      help="bring up one control plane with our estimators and leave it running")
    mode.add_argument("--down", action="store_true", help="tear down the control plane --keep left running")
    mode.add_argument("--serve", type=Path, help=argparse.SUPPRESS)  # the kept plane's owner process
    p.add_argument("--estimators", choices=("ours", "karmada"), default="ours",
                   help="with --keep: whose estimator each member gets (default ours)")
    p.add_argument("--json", type=Path, help="write the result here")
    p.add_argument("--quiet", action="store_true", help="progress lines only (the caller prints the line)")
    args = p.parse_args(argv)
    v = versions()
    if args.down:
        return karmadacp_keep.down(args.work or REPO / ".e2e" / "karmada-local")
    if args.serve:
        return karmadacp_keep.serve(args.serve, args.bin_dir, v, args.estimators)
    procs.install_signal_handlers()
    if args.keep:
        return karmadacp_keep.keep(args.bin_dir, args.work or REPO / ".e2e" / "karmada-local", v, args.estimators)
    try:
        result = karmadacp_scenarios.run(args.bin_dir, args.work or REPO / ".e2e" / "karmadacp", v,
                                         log=lambda m: print(m, flush=True))
    finally:
        procs.stop_all()
    if args.json is not None:
        args.json.write_text(json.dumps(result, indent=1))
    if not args.quiet:
        print(result["line"], flush=True)
    return 0 if result["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
