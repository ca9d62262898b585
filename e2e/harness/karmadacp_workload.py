"""The workload side of the local Karmada (issue 26, part 2): the fleet, the jobs, and the
training operator's part in each member.

- the PyTorchJob CRD (our own minimal one: Karmada's module carries none; the fields are kept
  as sent), applied to the karmada-apiserver and to every member;
- the fleet: the scenario's three members (docs/scenario.md) plus, on member-b, one large GPU
  node whose CPU is held by a pod with a native sidecar (Karmada's estimator counts that pod
  as less than it holds; the member's kube-scheduler counts it whole);
- jobs and PropagationPolicies as a user writes them;
- `Operator`: what the Kubeflow training operator does in a member when a PyTorchJob arrives
  (creates `<job>-master-0` and `<job>-worker-N` from the replica templates, labelled as the
  operator labels them, owned by the job; writes the job's Created/Running conditions) and what
  the member's garbage collector does when it goes (deletes its pods). No kubelet: a pod
  "runs" when kube-scheduler bound it;
- `JobOutcome` / `classify`: where a job ended up and whether it runs whole (pure).
"""

from __future__ import annotations

import copy
import threading
import time
from dataclasses import dataclass, field

from e2e.harness.rest import ApiStatus, Rest, namespaced

GROUP, VERSION, PLURAL, KIND = "kubeflow.org", "v1", "pytorchjobs", "PyTorchJob"
API_VERSION = f"{GROUP}/{VERSION}"
GPU = "nvidia.com/gpu"
OPERATOR_NAME = "pytorchjob-controller"
LABEL_JOB = "training.kubeflow.org/job-name"
LABEL_TYPE = "training.kubeflow.org/replica-type"
LABEL_INDEX = "training.kubeflow.org/replica-index"
LABEL_OPERATOR = "training.kubeflow.org/operator-name"
LABEL_ROLE = "training.kubeflow.org/job-role"
SCHEDULER = "default-scheduler"
CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def pytorchjob_crd() -> dict:
    """kubeflow.org/v1 PyTorchJob, namespaced, with a status subresource; the schema keeps
    every field (the training operator's CRD validates them; nothing here needs that)."""
    loose = {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{PLURAL}.{GROUP}"},
        "spec": {"group": GROUP, "scope": "Namespaced",
                 "names": {"kind": KIND, "listKind": f"{KIND}List", "plural": PLURAL, "singular": "pytorchjob"},
                 "versions": [{"name": VERSION, "served": True, "storage": True, "subresources": {"status": {}},
                               "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                                   "spec": loose, "status": loose}}}}]},
    }


# -- the fleet --------------------------------------------------------------------------------------

@dataclass(frozen=True)
class NodeSpec:
    name: str
    cpu: str
    memory: str
    gpu: int = 0
    control_plane: bool = False


@dataclass(frozen=True)
class MemberSpec:
    name: str
    nodes: tuple[NodeSpec, ...]
    pods: tuple[dict, ...] = ()  # already running there (bound)


def sidecar_pod(name: str, node: str, app_cpu: str, sidecar_cpu: str) -> dict:
    """A bound pod whose native sidecar (an init container with restartPolicy Always) runs for
    the pod's whole life: it holds app + sidecar. Karmada's estimator counts max(app, sidecar)."""
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "platform", "labels": {"app": name}},
            "spec": {"nodeName": node, "schedulerName": SCHEDULER,
                     "initContainers": [{"name": "mesh-proxy", "image": "proxy", "restartPolicy": "Always",
                                         "resources": {"requests": {"cpu": sidecar_cpu, "memory": "1Gi"}}}],
                     "containers": [{"name": "app", "image": "app",
                                     "resources": {"requests": {"cpu": app_cpu, "memory": "8Gi"}}}]}}


def fleet() -> tuple[MemberSpec, ...]:
    """docs/scenario.md's members; member-b also has b-big: 16 GPUs, 24 CPUs of which a pod
    with a native sidecar holds 23.1 (Karmada's estimator sees 19 held, so 5 free)."""
    return (
        MemberSpec("member-a", (NodeSpec("a-1", "12", "64Gi", 2),)),
        MemberSpec("member-b", (NodeSpec("b-cp", "12", "64Gi", 0, control_plane=True),
                                NodeSpec("b-1", "12", "64Gi", 2), NodeSpec("b-2", "12", "64Gi", 2),
                                NodeSpec("b-3", "12", "64Gi", 2), NodeSpec("b-big", "24", "128Gi", 16)),
                   (sidecar_pod("feature-store-0", "b-big", "4100m", "19"),)),
        MemberSpec("member-c", (NodeSpec("c-1", "12", "64Gi", 8),)),
    )


def node_object(spec: NodeSpec) -> tuple[dict, dict]:
    """(the Node, its status) — the status is written through the status subresource."""
    capacity = {"cpu": spec.cpu, "memory": spec.memory, "pods": "110"}
    if spec.gpu:
        capacity[GPU] = str(spec.gpu)
    labels = {"kubernetes.io/hostname": spec.name, "kubernetes.io/os": "linux"}
    node: dict = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": spec.name, "labels": labels}, "spec": {}}
    if spec.control_plane:
        labels["node-role.kubernetes.io/control-plane"] = ""
        node["spec"]["taints"] = [{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    status = {"capacity": capacity, "allocatable": dict(capacity),
              "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                              "lastHeartbeatTime": now, "lastTransitionTime": now}]}
    return node, status


def populate_member(api: Rest, member: MemberSpec) -> None:
    for spec in member.nodes:
        node, status = node_object(spec)
        api.create("/api/v1/nodes", node)
        api.status(f"/api/v1/nodes/{spec.name}", status)
    if member.pods:
        _ensure_namespace(api, "platform")
    for pod in member.pods:
        api.create(namespaced(pod["metadata"]["namespace"], "pods"), pod)


def _ensure_namespace(api: Rest, name: str) -> None:
    try:
        api.create("/api/v1/namespaces", {"metadata": {"name": name}})
    except ApiStatus as error:
        if error.status != 409:
            raise


# -- jobs and policies ------------------------------------------------------------------------------

@dataclass(frozen=True)
class Shape:
    """A PyTorchJob's replicas: master x1 and `workers` workers, each with its requests."""
    name: str
    workers: int
    master: dict
    worker: dict


SMALL = Shape("small", 2, {"cpu": "500m", "memory": "1Gi"}, {"cpu": "1", "memory": "2Gi", GPU: "1"})
BIG = Shape("big", 2, {"cpu": "500m", "memory": "1Gi"}, {"cpu": "1", "memory": "2Gi", GPU: "3"})


def _template(requests: dict) -> dict:
    limits = {k: v for k, v in requests.items() if k == GPU}  # extended resources need limit = request
    resources = {"requests": dict(requests), **({"limits": limits} if limits else {})}
    return {"spec": {"containers": [{"name": "pytorch", "image": "kubeflow/pytorch-mnist:v1",
                                     "command": ["python3", "/opt/mnist.py"], "resources": resources}]}}


def pytorchjob(name: str, namespace: str, shape: Shape, labels: dict | None = None) -> dict:
    return {"apiVersion": API_VERSION, "kind": KIND,
            "metadata": {"name": name, "namespace": namespace, "labels": {"shape": shape.name, **(labels or {})}},
            "spec": {"pytorchReplicaSpecs": {
                "Master": {"replicas": 1, "restartPolicy": "OnFailure", "template": _template(shape.master)},
                "Worker": {"replicas": shape.workers, "restartPolicy": "OnFailure", "template": _template(shape.worker)},
            }}}


def propagation_policy(name: str, namespace: str, *, one_member: bool = True, match_labels: dict | None = None,
                       priority_class: str | None = None, tolerations: list | None = None) -> dict:
    """The policy the seed documents ask for (Divided, Aggregated, cluster spread 1..1);
    one_member=False drops the spread constraint (failure 2)."""
    selector: dict = {"apiVersion": API_VERSION, "kind": KIND}
    if match_labels:
        selector["labelSelector"] = {"matchLabels": dict(match_labels)}
    placement: dict = {"replicaScheduling": {"replicaSchedulingType": "Divided",
                                             "replicaDivisionPreference": "Aggregated"}}
    if one_member:
        placement["spreadConstraints"] = [{"spreadByField": "cluster", "minGroups": 1, "maxGroups": 1}]
    if tolerations:
        placement["clusterTolerations"] = tolerations
    spec: dict = {"resourceSelectors": [selector], "placement": placement}
    if priority_class:
        spec["schedulePriority"] = {"priorityClassSource": "KubePriorityClass", "priorityClassName": priority_class}
    return {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
            "metadata": {"name": name, "namespace": namespace}, "spec": spec}


# -- the training operator's part ---------------------------------------------------------------------

def job_pods(job: dict) -> list[dict]:
    """The pods the training operator creates for a PyTorchJob: `<job>-<type>-<index>`, with
    its labels, owned by the job, templates as given (restartPolicy from the replica spec)."""
    meta = job["metadata"]
    owner = {"apiVersion": API_VERSION, "kind": KIND, "name": meta["name"], "uid": meta.get("uid", ""),
             "controller": True, "blockOwnerDeletion": True}
    pods = []
    for rtype, spec in sorted((job.get("spec") or {}).get("pytorchReplicaSpecs", {}).items()):
        replicas = int(spec.get("replicas", 1))
        template = copy.deepcopy(spec.get("template") or {})
        for index in range(replicas):
            kind = rtype.lower()
            labels = {**((template.get("metadata") or {}).get("labels") or {}),
                      LABEL_JOB: meta["name"], LABEL_TYPE: kind, LABEL_INDEX: str(index),
                      LABEL_OPERATOR: OPERATOR_NAME}
            if kind == "master":
                labels[LABEL_ROLE] = "master"
            pod_spec = copy.deepcopy(template.get("spec") or {})
            restart = spec.get("restartPolicy", "OnFailure")
            pod_spec["restartPolicy"] = "Never" if restart == "ExitCode" else restart
            pod_spec.setdefault("schedulerName", SCHEDULER)
            pods.append({"apiVersion": "v1", "kind": "Pod",
                         "metadata": {"name": f"{meta['name']}-{kind}-{index}", "namespace": meta["namespace"],
                                      "labels": labels, "ownerReferences": [owner]},
                         "spec": pod_spec})
    return pods


def pod_state(pod: dict) -> str:
    """'bound', 'pending' (kube-scheduler said Unschedulable) or 'new' (not decided yet)."""
    if pod.get("spec", {}).get("nodeName"):
        return "bound"
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c.get("type") == "PodScheduled" and c.get("status") == "False" and c.get("reason") == "Unschedulable":
            return "pending"
    return "new"


def job_status(states: list[str], workers: int, now: str) -> dict:
    """Created as soon as the pods exist (the operator writes it before any pod runs); Running
    when every pod is bound (no kubelet here: bound is as far as a pod gets)."""
    conditions = [{"type": "Created", "status": "True", "reason": "PyTorchJobCreated",
                   "message": "PyTorchJob is created.", "lastUpdateTime": now, "lastTransitionTime": now}]
    running = bool(states) and all(s == "bound" for s in states)
    if running:
        conditions.append({"type": "Running", "status": "True", "reason": "PyTorchJobRunning",
                           "message": "PyTorchJob is running.", "lastUpdateTime": now, "lastTransitionTime": now})
    status: dict = {"conditions": conditions}
    if running:
        status["startTime"] = now
        status["replicaStatuses"] = {"Master": {"active": 1}, "Worker": {"active": workers}}
    return status


class Operator:
    """The training operator's part in every member, as one polling loop (0.3 s)."""

    def __init__(self, members: dict[str, Rest], every: float = 0.3):
        self.members, self.every = members, every
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._written: dict[tuple[str, str, str], bool] = {}  # (member, ns, job) -> running written
        self.errors: list[str] = []
        self.paused: set[str] = set()  # members whose apiserver is down on purpose

    def start(self) -> "Operator":
        self._thread = threading.Thread(target=self._loop, name="pytorchjob-operator", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)

    def _loop(self) -> None:
        while not self._stop.is_set():
            for name, api in list(self.members.items()):
                if name in self.paused:
                    continue
                try:
                    self.reconcile(name, api)
                except ApiStatus as error:
                    if error.status != 429 and len(self.errors) < 50:  # 429: a new CRD's storage is starting
                        self.errors.append(f"{name}: {error}")
                except Exception as error:  # noqa: BLE001 - an apiserver going away must not end the loop
                    if len(self.errors) < 50:
                        self.errors.append(f"{name}: {error}")
            self._stop.wait(self.every)

    def reconcile(self, member: str, api: Rest) -> None:
        jobs = api.items(f"/apis/{GROUP}/{VERSION}/{PLURAL}")
        pods = api.call("GET", "/api/v1/pods", params={"labelSelector": f"{LABEL_OPERATOR}={OPERATOR_NAME}"})["items"]
        by_job: dict[tuple[str, str], list[dict]] = {}
        for pod in pods:
            key = (pod["metadata"]["namespace"], pod["metadata"]["labels"].get(LABEL_JOB, ""))
            by_job.setdefault(key, []).append(pod)
        live = set()
        for job in jobs:
            meta = job["metadata"]
            key = (meta["namespace"], meta["name"])
            live.add(key)
            if meta.get("deletionTimestamp"):
                continue
            have = {p["metadata"]["name"]: p for p in by_job.get(key, [])}
            wanted = job_pods(job)
            for pod in wanted:
                if pod["metadata"]["name"] not in have:
                    try:
                        api.create(namespaced(meta["namespace"], "pods"), pod)
                    except ApiStatus as error:
                        if error.status != 409:
                            raise
            states = [pod_state(have[p["metadata"]["name"]]) if p["metadata"]["name"] in have else "new" for p in wanted]
            running = all(s == "bound" for s in states)
            marker = (member, *key)
            if self._written.get(marker) != running:
                workers = sum(1 for p in wanted if p["metadata"]["labels"][LABEL_TYPE] == "worker")
                now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
                api.status(f"/apis/{GROUP}/{VERSION}/namespaces/{meta['namespace']}/{PLURAL}/{meta['name']}",
                           job_status(states, workers, now))
                self._written[marker] = running
        for key, owned in by_job.items():  # the member's garbage collector: the job is gone
            if key not in live:
                for pod in owned:
                    try:
                        api.delete(namespaced(key[0], "pods") + "/" + pod["metadata"]["name"], grace=0)
                    except ApiStatus as error:
                        if error.status != 404:
                            raise
                self._written.pop((member, *key), None)


# -- outcomes -------------------------------------------------------------------------------------------

@dataclass
class JobOutcome:
    name: str
    targets: list[str]  # members Karmada's binding names (spec.clusters)
    present: dict[str, list[str]] = field(default_factory=dict)  # member -> states of the job's pods there

    @property
    def members(self) -> list[str]:
        return sorted(set(self.targets) | set(self.present))

    @property
    def copied(self) -> bool:
        return len(self.members) > 1

    @property
    def pending(self) -> bool:
        return any(s == "pending" for states in self.present.values() for s in states)

    @property
    def whole(self) -> bool:
        """Runs whole in ONE member: one member only, every pod of it bound there."""
        if len(self.members) != 1:
            return False
        states = self.present.get(self.members[0], [])
        return bool(states) and all(s == "bound" for s in states)

    @property
    def waiting(self) -> bool:
        return not self.members


@dataclass
class Tally:
    jobs: int = 0
    whole: int = 0
    pending: int = 0
    copied: int = 0
    waiting: int = 0

    def add(self, outcomes: list[JobOutcome]) -> "Tally":
        for o in outcomes:
            self.jobs += 1
            self.whole += o.whole
            self.pending += o.pending
            self.copied += o.copied
            self.waiting += o.waiting
        return self

    def merged(self, other: "Tally") -> "Tally":
        return Tally(self.jobs + other.jobs, self.whole + other.whole, self.pending + other.pending,
                     self.copied + other.copied, self.waiting + other.waiting)

    def short(self) -> str:
        return f"{self.whole}/{self.pending}/{self.copied}/{self.waiting}"


def overcommitted(present_by_member: dict[str, list[str]]) -> int:
    """Members left with a Pending (Unschedulable) pod of some job."""
    return sum(1 for states in present_by_member.values() if any(s == "pending" for s in states))


def karmada_line(version: str, ours: Tally, theirs: Tally, overcommit: tuple[int, int], moved: int,
                 client: tuple[int, int] = (0, 0)) -> str:
    """The closing line of the phase (issue 26, "How it is checked")."""
    return (f"karmada: {ours.jobs} jobs through karmada-scheduler {version}: ours {ours.whole} whole in one member, "
            f"{ours.pending} with Pending pods, {ours.copied} copied, {ours.waiting} waiting; Karmada's estimator "
            f"{theirs.short()}; burst over-committed members {overcommit[0]}/{overcommit[1]}; failover moved "
            f"{moved} whole; client agrees {client[0]}/{client[1]}")
