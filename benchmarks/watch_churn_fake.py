"""The member and the churn of benchmarks/watch_churn.py: realistic Node and Pod objects (what a
kube-apiserver returns, managedFields included) and the fake API server child process that
serves them and generates the churn on command."""

from __future__ import annotations

import json
import os
import random
import time

ZONES = ("zone-a", "zone-b", "zone-c")


# --- realistic objects (what a kube-apiserver returns, managedFields included) -------------


def make_node(i: int) -> dict:
    gpu = i % 4 == 0
    name = f"node-{i:05d}"
    labels = {
        "kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
        "topology.kubernetes.io/region": "region-1", "topology.kubernetes.io/zone": ZONES[i % 3],
        "node.kubernetes.io/instance-type": "gpu.8x" if gpu else "cpu.16x",
        "pool": "gpu" if gpu else "general",
    }
    allocatable = {"cpu": "63500m", "memory": "251Gi", "pods": "110", "ephemeral-storage": "900Gi",
                   "hugepages-2Mi": "0"}
    if gpu:
        allocatable["nvidia.com/gpu"] = "8"
    return {
        "kind": "Node", "apiVersion": "v1",
        "metadata": {"name": name, "labels": labels,
                     "annotations": {"node.alpha.kubernetes.io/ttl": "0",
                                     "volumes.kubernetes.io/controller-managed-attach-detach": "true"}},
        "spec": {"podCIDR": f"10.{i // 250}.{i % 250}.0/24", "providerID": f"cloud://{name}",
                 "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}] if gpu else []},
        "status": {"allocatable": allocatable, "capacity": dict(allocatable),
                   "conditions": [{"type": t, "status": "False" if t != "Ready" else "True",
                                   "lastHeartbeatTime": "2024-05-01T10:00:00Z",
                                   "lastTransitionTime": "2024-05-01T09:00:00Z", "reason": f"Kubelet{t}",
                                   "message": f"kubelet reports {t}"}
                                  for t in ("MemoryPressure", "DiskPressure", "PIDPressure", "Ready")],
                   "addresses": [{"type": "InternalIP", "address": f"10.0.{i // 250}.{i % 250}"},
                                 {"type": "Hostname", "address": name}],
                   "nodeInfo": {"kubeletVersion": "v1.30.1", "containerRuntimeVersion": "containerd://1.7.13",
                                "osImage": "Ubuntu 22.04.4 LTS", "kernelVersion": "5.15.0-105-generic",
                                "architecture": "amd64", "operatingSystem": "linux"}},
    }


def make_pod(namespace: str, name: str, node: str | None, cpu: str, memory: str, phase: str = "Running",
             restarts: int = 0) -> dict:
    app = name.rsplit("-", 2)[0]
    rs = name.rsplit("-", 1)[0]
    ts = "2024-05-01T10:00:00Z"
    conditions = [{"type": t, "status": "True", "lastProbeTime": None, "lastTransitionTime": ts}
                  for t in ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled")]
    return {
        "kind": "Pod", "apiVersion": "v1",
        "metadata": {
            "name": name, "generateName": rs + "-", "namespace": namespace,
            "labels": {"app": app, "pod-template-hash": "7d9f8c6b5", "team": namespace},
            "annotations": {"kubectl.kubernetes.io/restartedAt": ts, "prometheus.io/scrape": "true"},
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs,
                                 "uid": f"uid-{rs}", "controller": True, "blockOwnerDeletion": True}],
            "managedFields": [
                {"manager": "kube-controller-manager", "operation": "Update", "apiVersion": "v1", "time": ts,
                 "fieldsType": "FieldsV1", "fieldsV1": {"f:metadata": {"f:generateName": {}, "f:labels": {
                     ".": {}, "f:app": {}, "f:pod-template-hash": {}}, "f:ownerReferences": {}},
                     "f:spec": {"f:containers": {'k:{"name":"main"}': {".": {}, "f:image": {}, "f:name": {},
                                                                        "f:resources": {}}}}}},
                {"manager": "kubelet", "operation": "Update", "apiVersion": "v1", "time": ts,
                 "fieldsType": "FieldsV1", "subresource": "status",
                 "fieldsV1": {"f:status": {"f:conditions": {}, "f:containerStatuses": {}, "f:hostIP": {},
                                           "f:phase": {}, "f:podIP": {}, "f:startTime": {}}}}],
        },
        "spec": {
            "containers": [{
                "name": "main", "image": f"registry.example.com/{namespace}/{app}:1.4.2",
                "ports": [{"containerPort": 8080, "protocol": "TCP", "name": "http"}],
                "env": [{"name": "LOG_LEVEL", "value": "info"}, {"name": "POD_NAME", "valueFrom": {
                    "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.name"}}}],
                "resources": {"requests": {"cpu": cpu, "memory": memory}, "limits": {"memory": memory}},
                "volumeMounts": [{"name": "kube-api-access", "readOnly": True,
                                  "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount"}],
                "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
                "imagePullPolicy": "IfNotPresent"}],
            "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
            "serviceAccountName": "default", "nodeName": node, "schedulerName": "default-scheduler",
            "tolerations": [{"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute",
                             "tolerationSeconds": 300},
                            {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute",
                             "tolerationSeconds": 300}],
            "volumes": [{"name": "kube-api-access", "projected": {"defaultMode": 420, "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}}]}}],
            "priority": 0, "enableServiceLinks": True, "preemptionPolicy": "PreemptLowerPriority",
        },
        "status": {
            "phase": phase, "conditions": conditions, "hostIP": "10.0.0.1", "podIP": "10.244.1.7",
            "podIPs": [{"ip": "10.244.1.7"}], "startTime": ts, "qosClass": "Burstable",
            "containerStatuses": [{"name": "main", "ready": True, "restartCount": restarts, "started": True,
                                   "state": {"running": {"startedAt": ts}},
                                   "image": f"registry.example.com/{namespace}/{app}:1.4.2",
                                   "imageID": "registry.example.com/app@sha256:" + "0" * 64,
                                   "containerID": "containerd://" + "f" * 64}],
        },
    }


POD_SHAPES = (("250m", "512Mi"), ("500m", "1Gi"), ("1", "2Gi"), ("100m", "256Mi"), ("2", "4Gi"))


# --- the fake API server process ----------------------------------------------------------


def serve_fake(conn, nodes: int, pods: int, seed: int, nice: int) -> None:
    from tests.support.fakekube import FakeKube

    os.nice(nice)  # the fake stands in for a remote API server: it must not outrank the estimator
    rng = random.Random(seed)
    fake = FakeKube(history_limit=80_000, bookmark_interval=1.0, token="bench-token").start()
    node_names = [f"node-{i:05d}" for i in range(nodes)]
    fake.load(make_node(i) for i in range(nodes))
    batch = []
    for i in range(pods):
        namespace = f"team-{i % 50:02d}"
        name = f"app{i % 400:03d}-7d9f8c6b5-{i:06x}"
        cpu, memory = POD_SHAPES[i % len(POD_SHAPES)]
        batch.append(make_pod(namespace, name, node_names[(i * 7919) % nodes], cpu, memory))
        if len(batch) == 5000:
            fake.load(batch)
            batch = []
    fake.load(batch)
    del batch
    counter = [pods]
    # Churn events are rendered from pre-serialized templates (a few bytes.replace per event)
    # so that the generator, which shares nothing with the estimator, is not the bottleneck.
    templates = {}
    for shape, (cpu, memory) in enumerate(POD_SHAPES):
        for phase in ("Running", "Succeeded"):
            for restarts in range(5):
                obj = make_pod("@NS@", "@APP@-7d9f8c6b5-@ID@", "@NODE@", cpu, memory, phase, restarts)
                obj["metadata"].update(resourceVersion="@RV@", uid="uid-@ID@",
                                       creationTimestamp="2024-05-01T10:00:00Z")
                templates[shape, phase, restarts] = json.dumps(obj, separators=(",", ":")).encode()

    def render(i: int, phase: str = "Running", restarts: int = 0) -> tuple:
        namespace, app, ident = f"team-{i % 50:02d}", f"app{i % 400:03d}", f"{i:06x}"
        name = f"{app}-7d9f8c6b5-{ident}"
        node = node_names[(i * 7919) % nodes]
        data = (templates[i % len(POD_SHAPES), phase, restarts].replace(b"@NS@", namespace.encode())
                .replace(b"@APP@", app.encode()).replace(b"@ID@", ident.encode()).replace(b"@NODE@", node.encode()))
        fields = {"metadata.name": name, "metadata.namespace": namespace, "status.phase": phase,
                  "spec.nodeName": node}
        return ("put", name, namespace, data, fields)

    live_ids = list(range(pods))

    def churn_one() -> tuple:
        """One pod change: create (35%), delete (25%), complete (10%, leaves the selector), update (30%)."""
        roll = rng.random()
        if roll < 0.35 or not live_ids:
            i = counter[0]
            counter[0] += 1
            live_ids.append(i)
            return render(i)
        index = rng.randrange(len(live_ids))
        i = live_ids[index]
        if roll < 0.70:
            live_ids[index] = live_ids[-1]
            live_ids.pop()
            if roll < 0.60:
                return ("delete", f"app{i % 400:03d}-7d9f8c6b5-{i:06x}", f"team-{i % 50:02d}")
            return render(i, "Succeeded")
        return render(i, "Running", rng.randrange(1, 5))

    def apply(changes: list) -> None:
        for change in changes:
            if change[0] == "put":
                fake.put_encoded("Pod", change[1], change[2], change[3], change[4])
            else:
                fake.delete("Pod", change[1], change[2])

    conn.send({"url": fake.url, "rv": fake.resource_version})
    while True:
        command = conn.recv()
        if command[0] == "stop":
            fake.stop()
            conn.send("stopped")
            return
        if command[0] == "churn":
            _, rate, seconds = command
            started = time.monotonic()
            made = 0
            while True:
                elapsed = time.monotonic() - started
                if elapsed >= seconds:
                    break
                due = int(rate * elapsed) - made
                if due <= 0:
                    time.sleep(0.002)
                    continue
                due = min(due, 500)
                apply([churn_one() for _ in range(due)])
                made += due
            conn.send({"events": made, "seconds": time.monotonic() - started, "rv": fake.resource_version})
        elif command[0] == "backlog":
            fake.pause_watches()
            started = time.monotonic()
            for _ in range(0, command[1], 500):
                apply([churn_one() for _ in range(500)])
            made_in = time.monotonic() - started
            rv = fake.resource_version
            conn.send({"rv": rv, "generated_in": made_in})
            conn.recv()  # "go"
            fake.resume_watches()
            conn.send("resumed")
