"""Fluent builders for Kubernetes objects as dicts (the shape `kubectl get -o yaml` prints).

    node("n1").cpu("4").memory("8Gi").gpu(2).zone("z1").taint("k", "v", "NoSchedule").build()
    pod("ns", "p").on("n1").requests(cpu="1", memory="1Gi").phase("Running").build()
    pod("ns", "p").unschedulable(since="2024-01-01T00:00:00Z").owner("ReplicaSet", "rs", "uid-rs").build()

Every setter returns the builder; `build()` returns a fresh dict each time. Resource names
that are not Python identifiers go through `resource(...)` or `**{"nvidia.com/gpu": "1"}`.
"""

from __future__ import annotations

import copy
from typing import Any

GPU = "nvidia.com/gpu"
OLD_TIME = "2024-01-01T00:00:00Z"


def _quantities(amounts: dict[str, Any]) -> dict[str, str]:
    out = {}
    for name, amount in amounts.items():
        out[GPU if name == "gpu" else name.replace("_", "-")] = str(amount)
    return out


class NodeBuilder:
    def __init__(self, name: str):
        self._name = name
        self._labels: dict[str, str] = {"kubernetes.io/hostname": name}
        self._allocatable: dict[str, str] = {"pods": "110"}
        self._taints: list[dict[str, str]] = []
        self._unschedulable = False

    def resource(self, name: str, amount: Any) -> NodeBuilder:
        self._allocatable[name] = str(amount)
        return self

    def cpu(self, amount: Any) -> NodeBuilder:
        return self.resource("cpu", amount)

    def memory(self, amount: Any) -> NodeBuilder:
        return self.resource("memory", amount)

    def ephemeral_storage(self, amount: Any) -> NodeBuilder:
        return self.resource("ephemeral-storage", amount)

    def gpu(self, amount: Any) -> NodeBuilder:
        return self.resource(GPU, amount)

    def pods(self, amount: Any) -> NodeBuilder:
        return self.resource("pods", amount)

    def label(self, key: str, value: str) -> NodeBuilder:
        self._labels[key] = value
        return self

    def unlabel(self, key: str) -> NodeBuilder:
        self._labels.pop(key, None)
        return self

    def zone(self, zone: str, region: str | None = None) -> NodeBuilder:
        self._labels["topology.kubernetes.io/zone"] = zone
        if region is not None:
            self._labels["topology.kubernetes.io/region"] = region
        return self

    def taint(self, key: str, value: str = "", effect: str = "NoSchedule") -> NodeBuilder:
        taint = {"key": key, "effect": effect}
        if value:
            taint["value"] = value
        self._taints.append(taint)
        return self

    def cordon(self) -> NodeBuilder:
        self._unschedulable = True
        return self

    def build(self) -> dict:
        spec: dict[str, Any] = {}
        if self._taints:
            spec["taints"] = copy.deepcopy(self._taints)
        if self._unschedulable:
            spec["unschedulable"] = True
        return {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": self._name, "labels": dict(self._labels)},
            "spec": spec,
            "status": {"allocatable": dict(self._allocatable), "capacity": dict(self._allocatable)},
        }


class PodBuilder:
    def __init__(self, namespace: str, name: str):
        self._namespace, self._name = namespace, name
        self._labels: dict[str, str] = {}
        self._owners: list[dict[str, Any]] = []
        self._spec: dict[str, Any] = {"containers": []}
        self._status: dict[str, Any] = {"phase": "Pending"}

    def on(self, node_name: str) -> PodBuilder:
        """Bind to a node: Running, PodScheduled=True (also after `unschedulable()`)."""
        self._spec["nodeName"] = node_name
        self._status = {
            "phase": "Running" if self._status["phase"] == "Pending" else self._status["phase"],
            "conditions": [{"type": "PodScheduled", "status": "True", "lastTransitionTime": OLD_TIME}],
        }
        return self

    def container(self, name: str | None = None, requests: dict | None = None, limits: dict | None = None) -> PodBuilder:
        resources: dict[str, Any] = {}
        if requests:
            resources["requests"] = _quantities(requests)
        if limits:
            resources["limits"] = _quantities(limits)
        containers = self._spec["containers"]
        containers.append({"name": name or f"c{len(containers)}", "image": "app", "resources": resources})
        return self

    def requests(self, **amounts: Any) -> PodBuilder:
        """One app container with these requests (gpu= means nvidia.com/gpu)."""
        return self.container(requests=amounts)

    def limits(self, **amounts: Any) -> PodBuilder:
        """One app container with only limits (requests default to them)."""
        return self.container(limits=amounts)

    def init_container(self, name: str | None = None, sidecar: bool = False, **requests: Any) -> PodBuilder:
        containers = self._spec.setdefault("initContainers", [])
        container: dict[str, Any] = {"name": name or f"init{len(containers)}", "image": "init"}
        if requests:
            container["resources"] = {"requests": _quantities(requests)}
        if sidecar:
            container["restartPolicy"] = "Always"
        containers.append(container)
        return self

    def overhead(self, **amounts: Any) -> PodBuilder:
        self._spec["overhead"] = _quantities(amounts)
        return self

    def pod_resources(self, requests: dict | None = None, limits: dict | None = None) -> PodBuilder:
        resources: dict[str, Any] = {}
        if requests:
            resources["requests"] = _quantities(requests)
        if limits:
            resources["limits"] = _quantities(limits)
        self._spec["resources"] = resources
        return self

    def phase(self, phase: str) -> PodBuilder:
        self._status["phase"] = phase
        return self

    def label(self, key: str, value: str) -> PodBuilder:
        self._labels[key] = value
        return self

    def labels(self, **labels: str) -> PodBuilder:
        self._labels.update(labels)
        return self

    def owner(self, kind: str, name: str, uid: str, controller: bool = True) -> PodBuilder:
        api_version = "apps/v1" if kind in ("ReplicaSet", "Deployment", "StatefulSet", "DaemonSet") else "v1"
        self._owners.append(
            {"apiVersion": api_version, "kind": kind, "name": name, "uid": uid, "controller": controller}
        )
        return self

    def unschedulable(self, since: str = OLD_TIME, message: str = "0/1 nodes are available") -> PodBuilder:
        """Pending with PodScheduled=False, reason Unschedulable, since `since`."""
        self._status = {
            "phase": "Pending",
            "conditions": [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "Unschedulable",
                    "message": message,
                    "lastTransitionTime": since,
                }
            ],
        }
        return self

    def build(self) -> dict:
        meta: dict[str, Any] = {"name": self._name, "namespace": self._namespace}
        if self._labels:
            meta["labels"] = dict(self._labels)
        if self._owners:
            meta["ownerReferences"] = copy.deepcopy(self._owners)
        spec = copy.deepcopy(self._spec)
        if not spec["containers"]:
            spec["containers"] = [{"name": "c0", "image": "app", "resources": {}}]
        return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": copy.deepcopy(self._status)}


class QuotaBuilder:
    def __init__(self, namespace: str, name: str):
        self._namespace, self._name = namespace, name
        self._hard: dict[str, str] = {}
        self._used: dict[str, str] = {}
        self._scopes: list[str] = []
        self._expressions: list[dict[str, Any]] = []

    def hard(self, name: str, amount: Any) -> QuotaBuilder:
        self._hard[name] = str(amount)
        return self

    def used(self, name: str, amount: Any) -> QuotaBuilder:
        self._used[name] = str(amount)
        return self

    def scope(self, scope: str) -> QuotaBuilder:
        self._scopes.append(scope)
        return self

    def priority_classes(self, *names: str, operator: str = "In") -> QuotaBuilder:
        self._expressions.append({"scopeName": "PriorityClass", "operator": operator, "values": list(names)})
        return self

    def build(self) -> dict:
        spec: dict[str, Any] = {"hard": dict(self._hard)}
        if self._scopes:
            spec["scopes"] = list(self._scopes)
        if self._expressions:
            spec["scopeSelector"] = {"matchExpressions": copy.deepcopy(self._expressions)}
        return {
            "apiVersion": "v1",
            "kind": "ResourceQuota",
            "metadata": {"name": self._name, "namespace": self._namespace},
            "spec": spec,
            "status": {"hard": dict(self._hard), "used": dict(self._used)},
        }


class _WorkloadBuilder:
    """Shared by Deployment and ReplicaSet: selector, pod template, owner, uid."""

    kind = ""

    def __init__(self, namespace: str, name: str):
        self._namespace, self._name = namespace, name
        self._uid = f"uid-{self.kind.lower()}-{namespace}-{name}"
        self._match_labels: dict[str, str] = {"app": name}
        self._template_labels: dict[str, str] = {"app": name}
        self._labels: dict[str, str] = {}
        self._requests: dict[str, str] = {"cpu": "100m"}
        self._owners: list[dict[str, Any]] = []
        self._created = OLD_TIME
        self._replicas = 1

    def uid(self, uid: str):
        self._uid = uid
        return self

    def selector(self, **labels: str):
        self._match_labels = dict(labels)
        return self

    def template_labels(self, **labels: str):
        self._template_labels = dict(labels)
        return self

    def template_requests(self, **amounts: Any):
        self._requests = _quantities(amounts)
        return self

    def replicas(self, count: int):
        self._replicas = count
        return self

    def created(self, timestamp: str):
        self._created = timestamp
        return self

    def _template(self) -> dict:
        return {
            "metadata": {"labels": dict(self._template_labels)},
            "spec": {"containers": [{"name": "app", "image": "app", "resources": {"requests": dict(self._requests)}}]},
        }

    def build(self) -> dict:
        meta: dict[str, Any] = {
            "name": self._name,
            "namespace": self._namespace,
            "uid": self._uid,
            "creationTimestamp": self._created,
        }
        if self._labels:
            meta["labels"] = dict(self._labels)
        if self._owners:
            meta["ownerReferences"] = copy.deepcopy(self._owners)
        return {
            "apiVersion": "apps/v1",
            "kind": self.kind,
            "metadata": meta,
            "spec": {
                "replicas": self._replicas,
                "selector": {"matchLabels": dict(self._match_labels)},
                "template": self._template(),
            },
        }


class DeploymentBuilder(_WorkloadBuilder):
    kind = "Deployment"


class ReplicaSetBuilder(_WorkloadBuilder):
    kind = "ReplicaSet"

    def owned_by(self, deployment: dict, template_hash: str = "5d8f7c9b6") -> ReplicaSetBuilder:
        """Controlled by `deployment` (a built dict), with its selector and template plus the hash label."""
        meta = deployment["metadata"]
        self._owners = [
            {"apiVersion": "apps/v1", "kind": "Deployment", "name": meta["name"], "uid": meta["uid"], "controller": True}
        ]
        spec = deployment["spec"]
        self._match_labels = dict(spec["selector"]["matchLabels"])
        self._template_labels = {**spec["template"]["metadata"]["labels"], "pod-template-hash": template_hash}
        self._labels = dict(self._template_labels)
        self._requests = dict(spec["template"]["spec"]["containers"][0]["resources"]["requests"])
        return self


def node(name: str) -> NodeBuilder:
    return NodeBuilder(name)


def pod(namespace: str, name: str) -> PodBuilder:
    return PodBuilder(namespace, name)


def quota(namespace: str, name: str) -> QuotaBuilder:
    return QuotaBuilder(namespace, name)


def deployment(namespace: str, name: str) -> DeploymentBuilder:
    return DeploymentBuilder(namespace, name)


def replicaset(namespace: str, name: str) -> ReplicaSetBuilder:
    return ReplicaSetBuilder(namespace, name)


def pods_of(replicaset_obj: dict, count: int, prefix: str | None = None) -> list[PodBuilder]:
    """Pod builders controlled by a built ReplicaSet, carrying its template labels."""
    meta = replicaset_obj["metadata"]
    labels = replicaset_obj["spec"]["template"]["metadata"]["labels"]
    return [
        pod(meta["namespace"], f"{prefix or meta['name']}-{i}").labels(**labels).owner("ReplicaSet", meta["name"], meta["uid"])
        for i in range(count)
    ]
