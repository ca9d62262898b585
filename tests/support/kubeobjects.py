"""Wire-shaped Kubernetes objects for the fake API server, and the oracle: what a cache fed
the fake's final objects looks like."""

from __future__ import annotations

import itertools
import json
from typing import TYPE_CHECKING, Any

from tests.support.cachemutators import upsert

if TYPE_CHECKING:
    from tests.support.fakekube import FakeKube


# --- object builders (wire-shaped dicts, as the API server returns them) -------------------

_counter = itertools.count()


def node_object(name: str, cpu: str = "8", memory: str = "32Gi", pods: int = 110, gpu: int = 0,
                zone: str | None = None, labels: dict | None = None, taints: list | None = None,
                unschedulable: bool = False) -> dict:
    allocatable = {"cpu": cpu, "memory": memory, "pods": str(pods), "ephemeral-storage": "100Gi"}
    if gpu:
        allocatable["nvidia.com/gpu"] = str(gpu)
    all_labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", **(labels or {})}
    if zone:
        all_labels["topology.kubernetes.io/zone"] = zone
    spec: dict[str, Any] = {}
    if taints:
        spec["taints"] = taints
    if unschedulable:
        spec["unschedulable"] = True
    return {
        "kind": "Node",
        "apiVersion": "v1",
        "metadata": {"name": name, "labels": all_labels},
        "spec": spec,
        "status": {"allocatable": allocatable, "capacity": dict(allocatable),
                   "conditions": [{"type": "Ready", "status": "True"}]},
    }


def pod_object(namespace: str, name: str, node: str | None = None, cpu: str = "100m", memory: str = "128Mi",
               gpu: int = 0, phase: str = "Running", labels: dict | None = None, owner: dict | None = None,
               unschedulable_since: str | None = None) -> dict:
    requests = {"cpu": cpu, "memory": memory}
    if gpu:
        requests["nvidia.com/gpu"] = str(gpu)
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "labels": dict(labels or {})}
    if owner:
        meta["ownerReferences"] = [{"apiVersion": "apps/v1", "kind": owner.get("kind", "ReplicaSet"),
                                    "name": owner["name"], "uid": owner["uid"], "controller": True}]
    spec: dict[str, Any] = {"containers": [{"name": "main", "image": "registry.example/app:1",
                                            "resources": {"requests": requests}}]}
    status: dict[str, Any] = {"phase": phase}
    if node:
        spec["nodeName"] = node
        status["conditions"] = [{"type": "PodScheduled", "status": "True"}]
    elif unschedulable_since:
        status["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                 "lastTransitionTime": unschedulable_since}]
    return {"kind": "Pod", "apiVersion": "v1", "metadata": meta, "spec": spec, "status": status}


def quota_object(namespace: str, name: str, hard: dict, used: dict | None = None) -> dict:
    return {"kind": "ResourceQuota", "apiVersion": "v1", "metadata": {"name": name, "namespace": namespace},
            "spec": {"hard": dict(hard)}, "status": {"hard": dict(hard), "used": dict(used or {})}}


def _template(labels: dict, cpu: str) -> dict:
    return {"metadata": {"labels": dict(labels)},
            "spec": {"containers": [{"name": "main", "image": "registry.example/app:1",
                                     "resources": {"requests": {"cpu": cpu}}}]}}


def deployment_object(namespace: str, name: str, uid: str, labels: dict, cpu: str = "100m") -> dict:
    return {"kind": "Deployment", "apiVersion": "apps/v1",
            "metadata": {"name": name, "namespace": namespace, "uid": uid},
            "spec": {"replicas": 1, "selector": {"matchLabels": dict(labels)}, "template": _template(labels, cpu)}}


def replicaset_object(namespace: str, name: str, uid: str, deployment: dict, template_hash: str = "abc123",
                      cpu: str | None = None) -> dict:
    labels = dict(deployment["spec"]["selector"]["matchLabels"])
    template = json.loads(json.dumps(deployment["spec"]["template"]))
    if cpu is not None:
        template["spec"]["containers"][0]["resources"]["requests"]["cpu"] = cpu
    template["metadata"]["labels"]["pod-template-hash"] = template_hash
    return {"kind": "ReplicaSet", "apiVersion": "apps/v1",
            "metadata": {"name": name, "namespace": namespace, "uid": uid,
                         "labels": {**labels, "pod-template-hash": template_hash},
                         "creationTimestamp": "2024-01-01T00:00:00Z",
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment",
                                              "name": deployment["metadata"]["name"],
                                              "uid": deployment["metadata"]["uid"], "controller": True}]},
            "spec": {"replicas": 1, "selector": {"matchLabels": labels}, "template": template}}


# --- the oracle: what a cache fed the fake's final objects looks like -------------------------

def reference_cache(fake: FakeKube, skip_malformed: bool = True):
    """A fresh ClusterCache fed the fake's current objects, kind by kind in key order (the
    order a list returns them), pods filtered by the estimator's field selector."""
    from estimator.cluster.cache import KINDS, ClusterCache
    from estimator.core.model import TERMINAL_POD_PHASES

    cache = ClusterCache()
    for kind in KINDS:  # the cache's own order: nodes first
        for obj in fake.objects(kind):
            if kind == "Pod" and (obj.get("status") or {}).get("phase") in TERMINAL_POD_PHASES:
                continue
            try:
                upsert(cache, kind, obj)
            except (ValueError, TypeError, AttributeError, KeyError):
                if not skip_malformed:
                    raise
    return cache


def state_view(snapshot, now: float = 2_000_000_000.0) -> dict:
    """Everything an estimate can observe in a snapshot, free of history-dependent numbering
    (resource column order, class ids): node order, per-node amounts by resource name, each
    node's class and hostname, quotas, workload records and GetUnschedulableReplicas answers."""
    from estimator.core.model import WorkloadRef

    names = snapshot.resource_names
    nodes = []
    for i, name in enumerate(snapshot.node_names):
        allocatable = {r: int(v) for r, v in zip(names, snapshot.allocatable[i]) if v}
        available = {r: int(v) for r, v in zip(names, snapshot.available[i]) if v}
        node_class = snapshot.classes[int(snapshot.node_class[i])]
        hostname = snapshot.hostnames[i] if snapshot.hostnames else None
        nodes.append((name, allocatable, available, node_class, hostname))
    workloads = snapshot.workloads
    plain = lambda by_ns: {ns: dict(records) for ns, records in by_ns.items()}  # noqa: E731
    answers = {}
    for namespace, deployments in workloads.deployments.items():
        for name in deployments:
            ref = WorkloadRef("apps/v1", "Deployment", namespace, name, 0.0)
            answers[(namespace, name)] = workloads.count_unschedulable(ref, now)
    return {
        "node_order": tuple(snapshot.node_names),
        "nodes": nodes,
        "quotas": {ns: tuple(records) for ns, records in snapshot.quotas.items()},
        "deployments": plain(workloads.deployments),
        "replicasets": plain(workloads.replicasets),
        "unschedulable": plain(workloads.unschedulable),
        "unschedulable_answers": answers,
    }
