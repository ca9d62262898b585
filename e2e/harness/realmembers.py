"""Members that look like real ones, for the kube-scheduler judge (`e2e/harness/judge.py`).

Independent of `members.py` (the differential's generator): it shares no helper with it and
with the estimator it shares only the model types a request is written in. What it puts in a
member is what real clusters have and what Karmada's estimator reads wrong or not at all:
native sidecars, init containers larger than the app, RuntimeClass overhead, pod-level
resources, terminating pods, bound Pending pods, hugepages, ephemeral storage, extended
resources other than GPUs, several taints per node, cordoned and NotReady nodes, node
affinity with every operator and `matchFields`, quotas on `limits.*`, `pods`, `count/*` and
the plain `cpu` + `requests.cpu` pair, and in-flight (assumed) workloads.

A member is plain Kubernetes objects plus jobs: each job is the request the estimators are
asked (`query`) and, derived from it by `job_pods`, the pods kube-scheduler is asked to bind.
Everything follows from one `random.Random(seed)`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from estimator.core import model

GPU = "nvidia.com/gpu"
FPGA = "example.com/fpga"
HCA = "rdma.example.com/hca"
HUGE_2M = "hugepages-2Mi"
GI, MI = 1024**3, 1024**2
NAMESPACES = ("train", "serve")
UNSCHEDULED = "judge-never"  # schedulerName of pods no scheduler may bind (none here: every populated pod is bound)
SCHEDULERS = ("default-scheduler", "bin-packing-scheduler")
# RuntimeClass name -> overhead.podFixed (what the RuntimeClass admission plugin copies into a pod).
RUNTIME_CLASSES = {"kata": {"cpu": "250m", "memory": "160Mi"}, "gvisor": {"cpu": "100m", "memory": "64Mi"}}
# PriorityClasses never preempt: a preempted pod would wait for a kubelet that never comes.
PRIORITY_CLASSES = {"high": 1000, "low": 10}
# Node taints a job may or may not tolerate (key, value, effect).
TAINTS = (("dedicated", "training", "NoSchedule"), ("gpu", "true", "NoSchedule"), ("spot", "true", "PreferNoSchedule"),
          ("team", "vision", "NoSchedule"), ("maintenance", "", "NoExecute"))
NOT_READY_TAINTS = (("node.kubernetes.io/not-ready", "", "NoSchedule"), ("node.kubernetes.io/not-ready", "", "NoExecute"))


@dataclass
class Job:
    name: str
    query: model.ComponentSetsQuery


@dataclass
class RealMember:
    seed: int
    nodes: list[dict] = field(default_factory=list)  # "_served": DRA resource name -> devices the node has
    pods: list[dict] = field(default_factory=list)  # "_terminating": deleted after creation (stays, bound)
    quotas: list[dict] = field(default_factory=list)
    jobs: list[Job] = field(default_factory=list)
    # Dynamic Resource Allocation: GPUs published by a driver instead of node allocatable.
    device_classes: list[dict] = field(default_factory=list)
    slices: list[dict] = field(default_factory=list)
    claims: list[dict] = field(default_factory=list)  # devices already allocated, with their allocation

    @property
    def dra(self) -> bool:
        return bool(self.device_classes)

    def namespaces(self) -> tuple[str, ...]:
        return NAMESPACES


def cluster_objects() -> list[dict]:
    """Cluster-wide objects every member shares: RuntimeClasses and PriorityClasses."""
    objects = [{"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": name}, "handler": name,
                "overhead": {"podFixed": dict(fixed)}} for name, fixed in RUNTIME_CLASSES.items()]
    objects += [{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": name},
                 "value": value, "preemptionPolicy": "Never"} for name, value in PRIORITY_CLASSES.items()]
    return objects


# -- nodes ------------------------------------------------------------------------------------------

def _node_count(rng: random.Random) -> int:
    roll = rng.random()
    if roll < 0.35:
        return rng.randint(1, 6)
    if roll < 0.8:
        return rng.randint(7, 20)
    return rng.randint(21, 60)


def _node(rng: random.Random, i: int, flavour: dict) -> dict:
    name = f"node-{i:02d}"
    labels = {"kubernetes.io/hostname": name, "pool": flavour["pool"], "tier": str(rng.randint(1, 6)),
              "topology.kubernetes.io/zone": rng.choice(("z1", "z2"))}
    if rng.random() < 0.5:
        labels["disk"] = rng.choice(("ssd", "hdd"))
    cpu_cores = flavour["cpu"]
    allocatable = {"cpu": f"{cpu_cores * 1000 - rng.choice((0, 100, 250))}m", "memory": f"{flavour['mem']}Gi",
                   "pods": str(flavour["pods"]), "ephemeral-storage": f"{rng.choice((20, 50, 100))}Gi"}
    if flavour.get("gpu"):
        labels["accelerator"] = flavour["accelerator"]
        allocatable[GPU] = str(flavour["gpu"])
    if rng.random() < 0.3:
        allocatable[HUGE_2M] = rng.choice(("512Mi", "1Gi", "2Gi"))
    if rng.random() < 0.2:
        allocatable[FPGA] = str(rng.randint(1, 4))
    if rng.random() < 0.15:
        allocatable[HCA] = str(rng.choice((1, 2, 8)))
    taints = [dict(zip(("key", "value", "effect"), t)) for t in rng.sample(TAINTS, rng.choice((0, 0, 0, 0, 0, 1, 1, 2, 3)))]
    spec: dict = {}
    conditions = [{"type": "Ready", "status": "True"}]
    roll = rng.random()
    if roll < 0.07:
        spec["unschedulable"] = True  # cordoned: the API server adds no taint, kube-scheduler filters on the field
    elif roll < 0.14:  # NotReady: what the node lifecycle controller writes
        conditions = [{"type": "Ready", "status": "False", "reason": "KubeletNotReady"}]
        taints += [dict(zip(("key", "value", "effect"), t)) for t in NOT_READY_TAINTS]
    for taint in taints:
        if not taint["value"]:
            del taint["value"]
    if taints:
        spec["taints"] = taints
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}, "spec": spec,
            "status": {"capacity": dict(allocatable), "allocatable": allocatable, "conditions": conditions}}


def _flavours(rng: random.Random) -> list[dict]:
    """Two to four node flavours per member, some with GPUs of different sizes."""
    flavours = []
    for k in range(rng.randint(2, 4)):
        flavour = {"pool": f"p{k}", "cpu": rng.choice((4, 8, 16, 32, 64)), "mem": rng.choice((16, 32, 64, 128, 256)),
                   "pods": rng.choice((8, 16, 32, 110))}
        if rng.random() < 0.45:
            flavour.update(gpu=rng.choice((1, 2, 4, 8)), accelerator=rng.choice(("a100", "h100", "l4")))
        flavours.append(flavour)
    return flavours


# -- pods already in the member ------------------------------------------------------------------------

def _amounts(rng: random.Random, cpu_m: int, mem: int, node: dict, extra: bool) -> dict[str, str]:
    requests = {"cpu": f"{cpu_m}m", "memory": str(mem)}
    alloc = node["status"]["allocatable"]
    if extra and rng.random() < 0.3:
        requests["ephemeral-storage"] = f"{rng.choice((1, 2, 5))}Gi"
    if extra and HUGE_2M in alloc and rng.random() < 0.4:
        requests[HUGE_2M] = rng.choice(("128Mi", "256Mi"))
    for name in (GPU, FPGA, HCA):
        if extra and name in alloc and rng.random() < 0.2:
            requests[name] = "1"
    return requests


def _container(name: str, requests: dict[str, str]) -> dict:
    # Extended resources and hugepages must have limits equal to their requests.
    limits = {k: v for k, v in requests.items() if k not in ("cpu", "memory", "ephemeral-storage")}
    resources: dict = {"requests": requests}
    if limits:
        resources["limits"] = limits
    return {"name": name, "image": "registry.invalid/app:1", "resources": resources}


def _every_container(spec: dict) -> list[dict]:
    return spec["containers"] + spec.get("initContainers", [])


def _asks(spec: dict, resource: str) -> bool:
    return any(resource in c["resources"]["requests"] for c in _every_container(spec))


def _total(spec: dict, resource: str) -> int:
    """Millicores (cpu) or bytes asked by every container, init ones included: an upper bound of the aggregate."""
    total = 0
    for c in _every_container(spec):
        value = c["resources"]["requests"].get(resource, "0")
        total += int(value[:-1]) if value.endswith("m") else int(value)
    return total


def _existing_pod(rng: random.Random, name: str, node: dict) -> dict:
    alloc = node["status"]["allocatable"]
    cpu_m = max(50, int(alloc["cpu"][:-1]) * rng.choice((2, 4, 8, 12)) // 100)  # 2-12 % of the node
    mem = int(alloc["memory"][:-2]) * GI * rng.choice((2, 4, 8, 12)) // 100
    spec: dict = {"nodeName": node["metadata"]["name"], "schedulerName": UNSCHEDULED, "restartPolicy": "Always",
                  "tolerations": [{"operator": "Exists"}],
                  "containers": [_container("app", _amounts(rng, cpu_m, mem, node, extra=True))]}
    if rng.random() < 0.25:
        spec["containers"].append(_container("helper", {"cpu": "100m", "memory": str(128 * MI)}))
    roll = rng.random()
    if roll < 0.3:  # a native sidecar: counted for the pod's whole life, on top of the app
        spec["initContainers"] = [dict(_container("proxy", {"cpu": f"{rng.choice((250, 500, 1000))}m",
                                                            "memory": str(rng.choice((256, 512)) * MI)}),
                                       restartPolicy="Always")]
    elif roll < 0.45:  # an ordinary init container larger than the app
        spec["initContainers"] = [_container("migrate", {"cpu": f"{cpu_m * rng.choice((2, 3))}m", "memory": str(mem * 2)})]
    elif roll < 0.55:  # both: the sidecar starts first and runs beside the init container
        spec["initContainers"] = [dict(_container("mesh", {"cpu": "500m", "memory": str(256 * MI)}), restartPolicy="Always"),
                                  _container("setup", {"cpu": f"{cpu_m * 2}m", "memory": str(mem)})]
    if rng.random() < 0.15:
        spec["runtimeClassName"] = rng.choice(sorted(RUNTIME_CLASSES))
    if rng.random() < 0.15 and not _asks(spec, HUGE_2M):  # pod-level requests: at least what every container asks
        spec["resources"] = {"requests": {"cpu": f"{_total(spec, 'cpu') + rng.choice((500, 1000, 2000))}m",
                                          "memory": str(_total(spec, 'memory') + rng.choice((1, 2)) * GI)}}
    if rng.random() < 0.1:
        spec["priorityClassName"] = rng.choice(sorted(PRIORITY_CLASSES))
    phase = rng.choice(("Running",) * 10 + ("Pending", "Pending", "Succeeded", "Failed"))
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "namespace": rng.choice(NAMESPACES), "labels": {"app": name}},
           "spec": spec, "status": {"phase": phase}}
    if phase == "Running" and rng.random() < 0.08:
        pod["_terminating"] = True
    return pod


def _node_pods(rng: random.Random, node: dict) -> list[dict]:
    slots = int(node["status"]["allocatable"]["pods"])
    count = rng.randint(0, min(slots - 1, rng.choice((2, 4, 8)))) if slots > 1 else 0
    return [_existing_pod(rng, f"{node['metadata']['name']}-w{k}", node) for k in range(count)]


# -- quotas -----------------------------------------------------------------------------------------------

_SCOPED = {"pods", "cpu", "memory", "requests.cpu", "requests.memory", "limits.cpu", "limits.memory"}


def _quota(rng: random.Random, name: str, namespace: str, gpus: bool) -> dict:
    cpu = rng.choice((16, 32, 64, 128, 256))
    hard: dict[str, str] = {}
    used: dict[str, str] = {}

    def put(resource: str, limit: str, taken: str) -> None:
        hard[resource], used[resource] = limit, taken

    kind = rng.choice(("requests", "plain-pair", "limits", "counts", "mixed"))
    if kind in ("requests", "mixed"):
        put("requests.cpu", str(cpu), f"{rng.randint(0, cpu * 600)}m")
        put("requests.memory", f"{cpu * 4}Gi", f"{rng.randint(0, cpu * 2)}Gi")
    if kind == "plain-pair":  # both names: Kubernetes enforces each
        put("cpu", str(cpu), f"{rng.randint(0, cpu * 500)}m")
        put("requests.cpu", str(cpu + rng.choice((-4, 0, 8))), f"{rng.randint(0, cpu * 500)}m")
    if kind in ("limits", "mixed"):
        put("limits.cpu", str(cpu), f"{rng.randint(0, cpu * 500)}m")
        put("limits.memory", f"{cpu * 4}Gi", f"{rng.randint(0, cpu)}Gi")
    if kind in ("counts", "mixed"):
        pods = rng.randint(4, 60)
        put(rng.choice(("pods", "count/pods")), str(pods), str(rng.randint(0, pods // 2)))
        put("count/configmaps", "100", "3")
    if gpus and rng.random() < 0.5:
        put(f"requests.{GPU}", str(rng.choice((2, 4, 8, 16))), str(rng.randint(0, 2)))
    if rng.random() < 0.2:
        put("requests.ephemeral-storage", f"{rng.choice((20, 100))}Gi", f"{rng.randint(0, 10)}Gi")
    spec: dict = {}
    roll = rng.random()
    if roll < 0.2:
        spec["scopeSelector"] = {"matchExpressions": [
            {"scopeName": "PriorityClass", "operator": "In", "values": [rng.choice(sorted(PRIORITY_CLASSES))]}]}
    elif roll < 0.3:
        spec["scopes"] = ["NotBestEffort"]
    elif roll < 0.35:
        spec["scopes"] = ["NotTerminating"]
    if spec:  # a scoped quota may track only pods, cpu and memory (the API server's validation)
        for resource in list(hard):
            if resource not in _SCOPED:
                del hard[resource], used[resource]
        if not hard:
            put("pods", "50", "0")
    spec["hard"] = dict(hard)
    return {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": name, "namespace": namespace},
            "spec": spec, "status": {"hard": hard, "used": used}}


# -- jobs (the requests) -------------------------------------------------------------------------------
# Most components are written for a pool, as real jobs are: an anchor node the claim admits
# (its pool, its taints tolerated, requirements it satisfies, only resources it has); the
# rest are written blind, so some answers are 0 because nothing fits.

def _requirement(rng: random.Random, anchor: dict, nodes: list[dict]) -> model.NodeSelectorRequirement:
    """A requirement the anchor satisfies."""
    labels = anchor["metadata"]["labels"]
    roll = rng.random()
    if roll < 0.25:
        others = sorted({n["metadata"]["labels"]["pool"] for n in nodes} - {labels["pool"]})
        return model.NodeSelectorRequirement("pool", "NotIn", (rng.choice(others),) if others else ("none",))
    if roll < 0.45:
        return model.NodeSelectorRequirement("disk", "Exists" if "disk" in labels else "DoesNotExist")
    if roll < 0.7:
        tier = int(labels["tier"])
        if tier > 1 and rng.random() < 0.5:
            return model.NodeSelectorRequirement("tier", "Gt", (str(rng.randint(0, tier - 1)),))
        return model.NodeSelectorRequirement("tier", "Lt", (str(rng.randint(tier + 1, 7)),))
    if roll < 0.85:
        return model.NodeSelectorRequirement("topology.kubernetes.io/zone", "In", (labels["topology.kubernetes.io/zone"],))
    if "accelerator" in labels:
        return model.NodeSelectorRequirement("accelerator", "In", (labels["accelerator"], "h100"))
    return model.NodeSelectorRequirement("accelerator", "DoesNotExist")


def _claim(rng: random.Random, anchor: dict, nodes: list[dict]) -> model.NodeClaim:
    selector: tuple = ()
    if rng.random() < 0.25:
        selector = (("pool", anchor["metadata"]["labels"]["pool"]),)
    terms = None
    roll = rng.random()
    if roll < 0.3:
        terms = (model.NodeSelectorTerm(match_expressions=(_requirement(rng, anchor, nodes),)),)
    elif roll < 0.4:  # alternatives: the anchor satisfies the first, the second is written for another node
        terms = (model.NodeSelectorTerm(match_expressions=(_requirement(rng, anchor, nodes),)),
                 model.NodeSelectorTerm(match_expressions=(_requirement(rng, rng.choice(nodes), nodes),)))
    elif roll < 0.5:
        others = [n["metadata"]["name"] for n in nodes if n is not anchor]
        fields = (model.NodeSelectorRequirement("metadata.name", "NotIn", (rng.choice(others),)),) if others else ()
        terms = (model.NodeSelectorTerm(match_fields=fields, match_expressions=(
            (_requirement(rng, anchor, nodes),) if rng.random() < 0.5 or not fields else ())),)
    tolerations = [model.Toleration(key=t["key"], operator="Exists" if "value" not in t else "Equal",
                                    value=t.get("value", ""), effect=t["effect"])
                   for t in anchor["spec"].get("taints", [])]
    for key, value, effect in TAINTS:
        if value and rng.random() < 0.2:
            tolerations.append(model.Toleration(key=key, operator="Equal", value=value, effect=effect))
    if rng.random() < 0.05:
        tolerations.append(model.Toleration(key="node.kubernetes.io/unschedulable", operator="Exists", effect="NoSchedule"))
    return model.NodeClaim(node_selector=selector, affinity_terms=terms, tolerations=tuple(dict.fromkeys(tolerations)))


def _shape(rng: random.Random, anchor: dict, nodes: list[dict], namespace: str, priority: str, gpu: bool,
           share: int) -> model.ReplicaShape:
    alloc = anchor["status"]["allocatable"]
    # A share of the anchor: a replica takes `share` % of its cpu and up to that of its memory.
    requests = {"cpu": max(100, int(alloc["cpu"][:-1]) * share // 100 // 50 * 50),
                "memory": int(alloc["memory"][:-2]) * GI * rng.randint(1, share) // 100 // MI * MI}
    if gpu and GPU in alloc:
        requests[GPU] = rng.choice([g for g in (1, 1, 1, 2, 4, 8) if g <= int(alloc[GPU])])
    elif gpu and anchor.get("_served"):  # through DRA: a name some class serves from the anchor's devices
        served = anchor["_served"]
        # Most jobs ask every GPU component for nvidia.com/gpu; some ask other classes' names.
        name = GPU if GPU in served and rng.random() < 0.85 else rng.choice(sorted(served))
        requests[name] = rng.choice([g for g in (1, 1, 1, 2, 4, 8) if g <= served[name]] or [1])
    if rng.random() < 0.2:
        requests["ephemeral-storage"] = rng.choice((1, 4, 10)) * GI
    offered = sorted(name for name in alloc if name in (HUGE_2M, FPGA, HCA))
    if offered and rng.random() < 0.2:
        name = rng.choice(offered)
        requests[name] = rng.choice((128, 256)) * MI if name == HUGE_2M else 1
    return model.ReplicaShape(requests=tuple(sorted(requests.items())), claim=_claim(rng, anchor, nodes),
                              namespace=namespace, priority_class=priority)


def _unhealthy(node: dict) -> bool:
    return node["spec"].get("unschedulable", False) or any(
        t["key"] == NOT_READY_TAINTS[0][0] for t in node["spec"].get("taints", []))


def _components(rng: random.Random, nodes: list[dict], namespace: str, prefix: str, most: int = 4) -> tuple:
    healthy = [n for n in nodes if not _unhealthy(n)] or nodes  # jobs are written for the pools that work
    gpu_nodes = [n for n in healthy if GPU in n["status"]["allocatable"] or n.get("_served")]
    gpu = bool(gpu_nodes) and rng.random() < 0.5
    priority = rng.choice(("",) * 4 + tuple(sorted(PRIORITY_CLASSES)))
    names = ("master", "worker", "ps", "evaluator")[:min(most, rng.choice((1, 2, 2, 2, 3, 4)))]
    out = []
    for c, name in enumerate(names):
        wants_gpu = gpu and (c > 0 or len(names) == 1)
        anchor = rng.choice(gpu_nodes if wants_gpu else healthy)
        if rng.random() < 0.05:  # written blind: for a node of some other member
            anchor = {k: v for k, v in rng.choice(nodes).items() if k != "_served"} | {"spec": {}}
        shape = _shape(rng, anchor, nodes, namespace, priority, wants_gpu, rng.choice((3, 6, 10, 15, 25, 40)))
        # Sized for the member: one component's replicas ask at most half of what its healthy nodes have.
        fitting = [r for r in (1, 2, 3, 4, 6, 8) if all(
            2 * r * amount <= _total_allocatable(healthy, name) for name, amount in shape.requests)] or [1]
        replicas = 1 if c == 0 and len(names) > 1 else rng.choice(fitting)
        out.append(model.Component(f"{prefix}{name}", replicas, shape))
    return tuple(out)


def _total_allocatable(nodes: list[dict], resource: str) -> int:
    total = sum(n.get("_served", {}).get(resource, 0) for n in nodes)
    for node in nodes:
        value = node["status"]["allocatable"].get(resource, "0")
        if resource == "cpu":
            total += int(value[:-1]) if value.endswith("m") else int(value) * 1000
        else:
            total += _bytes(value)
    return total


def _bytes(value: str) -> int:
    for suffix, factor in (("Gi", GI), ("Mi", MI)):
        if value.endswith(suffix):
            return int(value[:-2]) * factor
    return int(value)


def _job(rng: random.Random, nodes: list[dict], index: int) -> Job:
    namespace = rng.choice(NAMESPACES)
    components = _components(rng, nodes, namespace, "")
    assumed: tuple = ()
    if rng.random() < 0.2:
        assumed = (model.AssumedWorkload(namespace, _components(rng, nodes, namespace, "inflight-", most=1)),)
    return Job(f"job{index}", model.ComponentSetsQuery(components=components, namespace=namespace, assumed=assumed))


def generate(seed: int) -> RealMember:
    rng = random.Random(seed)
    member = RealMember(seed=seed)
    flavours = _flavours(rng)
    member.nodes = [_node(rng, i, rng.choice(flavours)) for i in range(_node_count(rng))]
    dra = random.Random(seed * 7919 + 17)  # its own stream: members without DRA stay as they were
    if dra.random() < DRA_SHARE:
        _serve_gpus_through_dra(dra, member)
    for node in member.nodes:
        member.pods.extend(_node_pods(rng, node))
    gpus = any(GPU in n["status"]["allocatable"] for n in member.nodes)
    for namespace in NAMESPACES:
        for q in range(rng.choice((0, 0, 1, 1, 2))):
            member.quotas.append(_quota(rng, f"quota-{q}", namespace, gpus))
    member.jobs = [_job(rng, member.nodes, j) for j in range(rng.choice((1, 2)))]
    return member


# -- GPUs through DRA ---------------------------------------------------------------------------------------
# A driver publishes each GPU node's devices in ResourceSlices; DeviceClasses select them and
# declare the extended resource names pods ask for. What a class selects is worked out here by
# plain rules written beside each selector (the generator's own bookkeeping for sizing jobs),
# never by the estimator's CEL evaluation; kube-scheduler judges the answers.

DRA_SHARE = 0.3
DRIVER = "gpu.example.com"
_MODELS = {"a100": ("40Gi", "80Gi"), "h100": ("80Gi",), "l4": ("24Gi",)}
# (class name, extended resource name or None, CEL selectors, the generator's rule for the same choice)
_CLASSES = (
    ("gpu.example.com", GPU, [f'device.driver == "{DRIVER}"'], lambda d: True),
    ("big-gpu", "example.com/big-gpu",
     [f'device.driver == "{DRIVER}"',
      f'device.capacity["{DRIVER}"].memory.compareTo(quantity("80Gi")) >= 0'], lambda d: d["memory"] == "80Gi"),
    ("h100", "example.com/h100",
     [f'device.driver == "{DRIVER}" && device.attributes["{DRIVER}"].model == "h100"'], lambda d: d["model"] == "h100"),
    ("new-driver", None,
     [f'device.driver == "{DRIVER}" && device.attributes["{DRIVER}"].driverVersion.isGreaterThan(semver("550.0.0"))'],
     lambda d: d["version"] > (550, 0, 0)),
)


def _serve_gpus_through_dra(rng: random.Random, member: RealMember) -> None:
    chosen = [_CLASSES[0]] + [c for c in _CLASSES[1:] if rng.random() < 0.6]
    for name, resource, selectors, _ in chosen:
        spec: dict = {"selectors": [{"cel": {"expression": e}} for e in selectors]}
        if resource:
            spec["extendedResourceName"] = resource
        member.device_classes.append({"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                                      "metadata": {"name": name}, "spec": spec})
    candidates = [n for n in member.nodes if GPU in n["status"]["allocatable"]] or member.nodes[:1]
    for node in candidates:
        if rng.random() < 0.8 or node is candidates[0]:  # the rest keep their device plugin: a mixed member
            _dra_node(rng, member, node, chosen)


def _dra_node(rng: random.Random, member: RealMember, node: dict, classes) -> None:
    name = node["metadata"]["name"]
    for key in ("allocatable", "capacity"):
        node["status"][key].pop(GPU, None)
    model = node["metadata"]["labels"].setdefault("accelerator", rng.choice(sorted(_MODELS)))
    devices = []
    for i in range(rng.randint(1, 8)):
        memory = rng.choice(_MODELS.get(model, ("40Gi",)))
        version = rng.choice(((535, 104, 5), (550, 54, 15), (560, 35, 3)))
        devices.append({"name": f"gpu-{i}", "model": model, "memory": memory, "version": version, "attributes": {
            "model": {"string": model}, "index": {"int": i}, f"{DRIVER}/driverVersion": {"version": ".".join(map(str, version))},
            "productName": {"string": f"Example {model.upper()}"}}, "capacity": {"memory": {"value": memory}}})
    allocated = [d for d in devices if rng.random() < 0.25]
    split = len(devices) > 1 and rng.random() < 0.2  # the pool published in two slices
    incomplete = split and rng.random() < 0.25  # ... of which only the first is out yet: nothing counts
    parts = [devices[: len(devices) // 2], devices[len(devices) // 2:]] if split else [devices]
    for k, part in enumerate(parts[:1] if incomplete else parts):
        member.slices.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                              "metadata": {"name": f"{name}-{DRIVER}-{k}"},
                              "spec": {"driver": DRIVER, "nodeName": name,
                                       "pool": {"name": name, "generation": 1, "resourceSliceCount": len(parts)},
                                       "devices": [{"name": d["name"], "attributes": d["attributes"],
                                                    "capacity": d["capacity"]} for d in part]}})
    for d in allocated:
        member.claims.append(_allocated_claim(rng, name, d["name"], classes[0][0]))
    if incomplete:
        return
    free = [d for d in devices if d not in allocated]
    node["_served"] = {}
    for cls, resource, _, rule in classes:
        for served in ([resource] if resource else []) + [f"deviceclass.resource.kubernetes.io/{cls}"]:
            count = sum(1 for d in free if rule(d))
            if count:
                node["_served"][served] = count


def _allocated_claim(rng: random.Random, node: str, device: str, device_class: str) -> dict:
    """A claim of a running pod: one device, allocated on `node` (the status a scheduler wrote)."""
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": f"{node}-{device}-claim", "namespace": rng.choice(NAMESPACES)},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": device_class}}]}},
            "status": {"allocation": {
                "devices": {"results": [{"request": "gpu", "driver": DRIVER, "pool": node, "device": device}]},
                "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                    {"key": "metadata.name", "operator": "In", "values": [node]}]}]}}}}


# -- the pods kube-scheduler is asked to bind --------------------------------------------------------------

def _quantity(name: str, amount: int) -> str:
    return f"{amount}m" if name == "cpu" else str(amount)


def _affinity(claim: model.NodeClaim, pin: str | None) -> dict | None:
    """The claim's required node affinity, each term ANDed with `metadata.name In [pin]` when pinned."""
    terms = list(claim.affinity_terms) if claim.affinity_terms else []
    if not terms and pin is None:
        return None
    if not terms:
        terms = [model.NodeSelectorTerm()]
    out = []
    for term in terms:
        body: dict = {}
        if term.match_expressions:
            body["matchExpressions"] = [_requirement_json(r) for r in term.match_expressions]
        fields = [_requirement_json(r) for r in term.match_fields]
        if pin is not None:
            fields.append({"key": "metadata.name", "operator": "In", "values": [pin]})
        if fields:
            body["matchFields"] = fields
        out.append(body)
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": out}}}


def _requirement_json(r: model.NodeSelectorRequirement) -> dict:
    body = {"key": r.key, "operator": r.operator}
    if r.values:
        body["values"] = list(r.values)
    return body


def _toleration_json(t: model.Toleration) -> dict:
    body = {"key": t.key, "operator": t.operator or "Equal", "value": t.value, "effect": t.effect}
    return {k: v for k, v in body.items() if v}


def replica_pod(name: str, namespace: str, component: model.Component, scheduler: str, pin: str | None = None) -> dict:
    """One replica as a pod: one container asking exactly the request's amounts, limits equal
    (so quotas on `limits.*` admit it as the job's own Guaranteed pods would be admitted)."""
    shape = component.shape
    amounts = {k: _quantity(k, v) for k, v in shape.requests}
    container = {"name": "main", "image": "registry.invalid/job:1",
                 "resources": {"requests": dict(amounts), "limits": dict(amounts)}}
    spec: dict = {"schedulerName": scheduler, "containers": [container], "restartPolicy": "Never",
                  "terminationGracePeriodSeconds": 0}
    if shape.claim.node_selector:
        spec["nodeSelector"] = dict(shape.claim.node_selector)
    affinity = _affinity(shape.claim, pin)
    if affinity:
        spec["affinity"] = affinity
    if shape.claim.tolerations:
        spec["tolerations"] = [_toleration_json(t) for t in shape.claim.tolerations]
    if shape.priority_class:
        spec["priorityClassName"] = shape.priority_class
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace,
                                                           "labels": {"judge/component": component.name}}, "spec": spec}


def job_pods(components, namespace: str, scheduler: str, sets: int = 1,
             pins: dict[str, list[str]] | None = None, prefix: str = "") -> list[dict]:
    """`sets` sets of the components' replicas; with `pins`, replica r of component c goes to
    pins[c.name][r] (a placement's nodes, one entry per replica)."""
    pods = []
    for component in components:
        for r in range(sets * component.replicas):
            pin = pins[component.name][r] if pins is not None else None
            pods.append(replica_pod(f"{prefix}{component.name}-{r}", namespace, component, scheduler, pin))
    return pods
