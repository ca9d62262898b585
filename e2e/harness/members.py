"""A seeded generator of small member clusters and the requests to ask about them.

A state is plain Kubernetes objects (what the run creates through the API) plus model
queries (what both estimators are asked). Everything derives from one `random.Random`, so a
seed names a state exactly and a saved regression case can be replayed.
"""

from __future__ import annotations

import datetime
import random
from dataclasses import dataclass, field

from estimator.core import model

NAMESPACES = ("team-a", "team-b")
GPU = "nvidia.com/gpu"
ZONES = ("zone-1", "zone-2", "zone-3")
PRIORITY_CLASSES = ("", "high", "low")


@dataclass
class MemberState:
    seed: int
    nodes: list[dict] = field(default_factory=list)
    pods: list[dict] = field(default_factory=list)
    quotas: list[dict] = field(default_factory=list)
    deployments: list[dict] = field(default_factory=list)  # each carries its ReplicaSets under "_replicasets"
    sets_queries: list[model.ComponentSetsQuery] = field(default_factory=list)
    replicas_queries: list[model.ReplicasQuery] = field(default_factory=list)
    workload_refs: list[model.WorkloadRef] = field(default_factory=list)


def _cpu(rng: random.Random, choices) -> str:
    return rng.choice(choices)


def _mem(rng: random.Random, choices_gi) -> str:
    return f"{rng.choice(choices_gi)}Gi"


def _node(rng: random.Random, i: int, zoned: bool) -> dict:
    name = f"node-{i:02d}"
    gpu_node = rng.random() < 0.4
    labels = {"kubernetes.io/hostname": name, "pool": rng.choice(("a", "b")), "tier": str(rng.randint(1, 5))}
    if zoned:
        labels["topology.kubernetes.io/region"] = "r1"
        labels["topology.kubernetes.io/zone"] = rng.choice(ZONES)
    if gpu_node:
        labels["accelerator"] = rng.choice(("a100", "h100"))
    allocatable = {
        "cpu": _cpu(rng, ("4", "8", "16", "32", "3500m")),
        "memory": _mem(rng, (8, 16, 32, 64)),
        "pods": str(rng.choice((4, 8, 16, 110))),
        "ephemeral-storage": "100Gi",
    }
    if gpu_node:
        allocatable[GPU] = str(rng.choice((1, 2, 4, 8)))
    spec: dict = {}
    roll = rng.random()
    if roll < 0.15:
        spec["taints"] = [{"key": "dedicated", "value": "ml", "effect": "NoSchedule"}]
    elif roll < 0.22:
        spec["taints"] = [{"key": "spot", "value": "true", "effect": "PreferNoSchedule"}]
    elif roll < 0.27:
        spec["taints"] = [{"key": "maintenance", "effect": "NoExecute"}]
    if rng.random() < 0.1:
        spec["unschedulable"] = True
    return {
        "apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}, "spec": spec,
        "status": {"capacity": dict(allocatable), "allocatable": allocatable},
    }


def _container(rng: random.Random, name: str, gpu_ok: bool) -> dict:
    requests = {"cpu": _cpu(rng, ("100m", "250m", "500m", "1", "1500m", "2")), "memory": _mem(rng, (1, 2, 4))}
    if gpu_ok and rng.random() < 0.5:
        requests[GPU] = str(rng.choice((1, 2)))
    resources = {"requests": requests}
    if GPU in requests:
        resources["limits"] = {GPU: requests[GPU]}  # extended resources need limit == request
    return {"name": name, "image": "registry.invalid/app:1", "resources": resources}


def _pod(rng: random.Random, name: str, namespace: str, node: dict | None, phase: str) -> dict:
    gpu_ok = node is not None and GPU in node["status"]["allocatable"]
    spec: dict = {"containers": [_container(rng, "main", gpu_ok)], "restartPolicy": "Always",
                  "tolerations": [{"operator": "Exists"}]}
    if node is not None:
        spec["nodeName"] = node["metadata"]["name"]
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace, "labels": {"app": name}},
            "spec": spec, "status": {"phase": phase}}


def _quota(rng: random.Random, name: str, namespace: str) -> dict:
    hard_cpu = rng.choice((4, 8, 16, 40, 100))
    hard = {"requests.cpu": str(hard_cpu), "requests.memory": f"{rng.choice((16, 64, 256))}Gi"}
    used = {"requests.cpu": f"{rng.randint(0, hard_cpu * 400)}m", "requests.memory": f"{rng.randint(0, 4)}Gi"}
    if rng.random() < 0.5:
        gpus = rng.choice((1, 2, 4, 8))
        hard[f"requests.{GPU}"] = str(gpus)
        used[f"requests.{GPU}"] = str(rng.randint(0, gpus // 2))
    if rng.random() < 0.3:
        hard["memory"] = "40Gi"
        used["memory"] = "3Gi"
    spec: dict = {"hard": hard}
    roll = rng.random()
    if roll < 0.3:
        op = rng.choice(("In", "NotIn", "Exists", "DoesNotExist"))
        expression = {"scopeName": "PriorityClass", "operator": op}
        if op in ("In", "NotIn"):
            expression["values"] = [rng.choice(("high", "low"))]
        spec["scopeSelector"] = {"matchExpressions": [expression]}
    elif roll < 0.4:  # a scope no request falls under, for us as for Karmada (NotBestEffort differs: semantics.md)
        spec["scopes"] = ["Terminating"]
    return {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": name, "namespace": namespace},
            "spec": spec, "status": {"hard": dict(hard), "used": used}}


def _claim(rng: random.Random, nodes: list[dict]) -> model.NodeClaim:
    selector: tuple = ()
    terms = None
    tolerations: tuple = ()
    roll = rng.random()
    if roll < 0.1:
        selector = (("pool", rng.choice(("a", "b"))),)
    elif roll < 0.15:
        selector = (("accelerator", rng.choice(("a100", "h100"))),)
    roll = rng.random()
    if roll < 0.08:
        terms = (model.NodeSelectorTerm(match_expressions=(
            model.NodeSelectorRequirement("tier", rng.choice(("Gt", "Lt")), (str(rng.randint(1, 4)),)),)),)
    elif roll < 0.14:
        terms = (
            model.NodeSelectorTerm(match_expressions=(model.NodeSelectorRequirement("pool", "In", ("a",)),)),
            model.NodeSelectorTerm(match_expressions=(model.NodeSelectorRequirement("accelerator", "Exists"),)),
        )
    elif roll < 0.18 and nodes:
        name = rng.choice(nodes)["metadata"]["name"]
        terms = (model.NodeSelectorTerm(match_fields=(
            model.NodeSelectorRequirement("metadata.name", rng.choice(("In", "NotIn")), (name,)),)),)
    roll = rng.random()
    if roll < 0.3:
        tolerations = (model.Toleration(key="dedicated", operator="Equal", value="ml", effect="NoSchedule"),)
    elif roll < 0.38:
        tolerations = (model.Toleration(key="node.kubernetes.io/unschedulable", operator="Exists", effect="NoSchedule"),)
    elif roll < 0.45:
        tolerations = (model.Toleration(operator="Exists"),)
    return model.NodeClaim(node_selector=selector, affinity_terms=terms, tolerations=tolerations)


def _shape(rng: random.Random, nodes: list[dict], namespace: str, gpu: bool) -> model.ReplicaShape:
    requests = {"cpu": rng.choice((100, 250, 500, 1000, 1500, 2000, 3000)),
                "memory": rng.choice((256, 512, 1024, 2048, 4096)) * 1024**2}
    if gpu:
        requests[GPU] = rng.choice((1, 1, 2, 4))
    if rng.random() < 0.1:
        del requests["memory"]
    return model.ReplicaShape(requests=tuple(sorted(requests.items())), claim=_claim(rng, nodes),
                              namespace=namespace, priority_class=rng.choice(PRIORITY_CLASSES))


def _deployment(rng: random.Random, name: str, namespace: str, now: datetime.datetime) -> tuple[dict, list[dict]]:
    """A Deployment, its ReplicaSets (one current, maybe one old) and their Pending pods."""
    template = {"metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "main", "image": f"registry.invalid/{name}:2",
                                         "resources": {"requests": {"cpu": "64"}}}]}}
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": namespace},
                  "spec": {"replicas": 3, "selector": {"matchLabels": {"app": name}}, "template": template},
                  "_replicasets": []}
    pods = []
    for revision, current in ((1, False), (2, True)):
        if not current and rng.random() < 0.5:
            continue
        pod_hash = f"{name}h{revision}"[-10:].replace("-", "x")
        rs_template = {"metadata": {"labels": {"app": name, "pod-template-hash": pod_hash}},
                       "spec": dict(template["spec"])}
        if not current:  # an older revision: different image
            rs_template["spec"] = {"containers": [dict(template["spec"]["containers"][0], image=f"registry.invalid/{name}:1")]}
        rs_name = f"{name}-{pod_hash}"
        deployment["_replicasets"].append({
            "apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": rs_name, "namespace": namespace, "labels": rs_template["metadata"]["labels"],
                         "annotations": {"deployment.kubernetes.io/revision": str(revision)}},
            "spec": {"replicas": 3 if current else 0,
                     "selector": {"matchLabels": {"app": name, "pod-template-hash": pod_hash}}, "template": rs_template},
        })
        for k in range(rng.randint(0, 3)):
            age = rng.choice((20, 400, 3000))
            stamp = (now - datetime.timedelta(seconds=age)).strftime("%Y-%m-%dT%H:%M:%SZ")
            unschedulable = rng.random() < 0.8
            condition = {"type": "PodScheduled", "status": "False", "lastTransitionTime": stamp,
                         "reason": "Unschedulable" if unschedulable else "SchedulerError", "message": "0/12 nodes"}
            pods.append({"apiVersion": "v1", "kind": "Pod",
                         "metadata": {"name": f"{rs_name}-{k}", "namespace": namespace,
                                      "labels": rs_template["metadata"]["labels"], "_owner": rs_name},
                         "spec": rs_template["spec"], "status": {"phase": "Pending", "conditions": [condition]}})
    return deployment, pods


def generate(seed: int, max_nodes: int = 12, now: datetime.datetime | None = None) -> MemberState:
    rng = random.Random(seed)
    now = now or datetime.datetime.now(datetime.timezone.utc)
    state = MemberState(seed=seed)
    count = rng.choice((1, 1, 2, 3)) if rng.random() < 0.2 else rng.randint(2, max_nodes)
    zoned = rng.random() < 0.6
    state.nodes = [_node(rng, i, zoned) for i in range(count)]
    for node in state.nodes:
        for k in range(rng.randint(0, 4)):
            phase = rng.choice(("Running",) * 6 + ("Pending", "Succeeded", "Failed"))
            state.pods.append(_pod(rng, f"{node['metadata']['name']}-p{k}", rng.choice(NAMESPACES), node, phase))
    for namespace in NAMESPACES:
        for q in range(rng.choice((0, 0, 1, 2))):
            state.quotas.append(_quota(rng, f"quota-{q}", namespace))
        for d in range(rng.choice((0, 1, 2))):
            deployment, pods = _deployment(rng, f"web-{d}", namespace, now)
            state.deployments.append(deployment)
            state.pods.extend(pods)
    any_gpu = any(GPU in n["status"]["allocatable"] for n in state.nodes)
    for q in range(3):
        namespace = rng.choice(NAMESPACES)
        components = []
        for c in range(rng.choice((1, 2, 2, 3))):
            gpu = any_gpu and rng.random() < 0.4
            components.append(model.Component(f"c{c}", rng.choice((1, 1, 2, 3, 4)), _shape(rng, state.nodes, namespace, gpu)))
        state.sets_queries.append(model.ComponentSetsQuery(components=tuple(components), namespace=namespace))
    for q in range(2):
        state.replicas_queries.append(model.ReplicasQuery(
            _shape(rng, state.nodes, rng.choice(NAMESPACES), any_gpu and rng.random() < 0.3)))
    state.replicas_queries.append(model.ReplicasQuery(None))  # free pod slots: order cannot matter
    for deployment in state.deployments:
        meta = deployment["metadata"]
        state.workload_refs.append(model.WorkloadRef("apps/v1", "Deployment", meta["namespace"], meta["name"],
                                                     rng.choice((0.0, 60.0, 1000.0))))
    state.workload_refs.append(model.WorkloadRef("apps/v1", "Deployment", "team-a", "absent", 0.0))
    return state
