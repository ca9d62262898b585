"""The member's own kube-scheduler judges every answer.

For each generated member (`realmembers.py`) and each of its jobs: ask our estimator
(first-fit and best) and Karmada's for MaxAvailableComponentSets, then let a real
kube-scheduler (built from the same `k8s.io/kubernetes` module as the apiserver) bind one set
of the job's pods in a fresh namespace, with its default profile and with a bin-packing
profile (NodeResourcesFit MostAllocated). Quotas are enforced by the apiserver's own quota
admission, so a refused pod counts as not bound.

- false placement: an answer >= 1 where one set binds neither left to kube-scheduler nor
  pinned (required node affinity on `metadata.name`) to our witness's nodes;
- false rejection: an answer 0 where one set binds;
- scheduler-order miss: the default profile left a set Pending although one binds (with the
  bin-packing profile or pinned to our witness): the user's job is Pending all the same;
- witness check: our best answer's k sets, every pod pinned to the node our witness gives it;
  the witness holds when kube-scheduler's own filters bind every pod.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import ssl
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from e2e.harness import oracle
from e2e.harness.cluster import KubeBed
from e2e.harness.estimators import Running
from e2e.harness.rest import ApiStatus, Rest, namespaced
from e2e.harness.procs import Proc, wait_for
from e2e.harness.realmembers import SCHEDULERS, Job, RealMember, cluster_objects, job_pods
from scheduler_client.launch import free_port
from tests.support import naive

# Quota admission on: the apiserver refuses what a quota does not admit, as in a real member.
JUDGE_DISABLED_ADMISSION = "ServiceAccount,TaintNodesByCondition,StorageObjectInUseProtection,DefaultStorageClass"
TRIAL_SECONDS = 30.0  # a set not bound (nor refused) by then counts as not bound
SETTLE_SECONDS = 30.0  # kube-scheduler's cache reaches the member's pods by then, or the judge says so
PINNED_WAITS = (1.0, 3.0)  # a refused pinned trial is tried again after each of these

_DRA_GROUP = "resource.k8s.io/v1"
_CLUSTER_PATHS = {"RuntimeClass": "/apis/node.k8s.io/v1/runtimeclasses",
                  "PriorityClass": "/apis/scheduling.k8s.io/v1/priorityclasses",
                  "DeviceClass": f"/apis/{_DRA_GROUP}/deviceclasses",
                  "ResourceSlice": f"/apis/{_DRA_GROUP}/resourceslices"}
_DUMPED = (("Node", "v1", "/api/v1/nodes"), ("Pod", "v1", "/api/v1/pods"),
           ("ResourceQuota", "v1", "/api/v1/resourcequotas"),
           ("DeviceClass", _DRA_GROUP, _CLUSTER_PATHS["DeviceClass"]),
           ("ResourceSlice", _DRA_GROUP, _CLUSTER_PATHS["ResourceSlice"]),
           ("ResourceClaim", _DRA_GROUP, f"/apis/{_DRA_GROUP}/resourceclaims"))

# kube-scheduler's self-signed serving certificate, on loopback
_INSECURE = ssl._create_unverified_context()

SCHEDULER_CONFIG = {
    "apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
    "leaderElection": {"leaderElect": False},
    "profiles": [
        {"schedulerName": SCHEDULERS[0]},
        {"schedulerName": SCHEDULERS[1], "pluginConfig": [{"name": "NodeResourcesFit", "args": {"scoringStrategy": {
            "type": "MostAllocated", "resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1}]}}}]},
    ],
}


class JudgeBed:
    """etcd + kube-apiserver (quota admission on) + kube-scheduler with two profiles."""

    def __init__(self, bin_dir: Path, work: Path, kube_version: str, etcd_version: str):
        self.scheduler_bin = bin_dir / f"kube-scheduler-{kube_version}"
        if not self.scheduler_bin.exists():
            raise FileNotFoundError(f"{self.scheduler_bin} is missing: `make e2e-kube` builds it")
        self.kube = KubeBed(bin_dir, work, kube_version, etcd_version, disabled_admission=JUDGE_DISABLED_ADMISSION)
        self.work = self.kube.work
        self.version = kube_version
        self.scheduler: Proc | None = None
        self._metrics: urllib.request.Request | None = None

    @property
    def kubeconfig(self) -> Path:
        return self.kube.kubeconfig

    def stop(self) -> None:
        if self.scheduler is not None:
            self.scheduler.stop()
        self.kube.stop()

    def start(self) -> "JudgeBed":
        self.kube.start()
        config_path = self.work / "kube-scheduler.json"
        config = copy.deepcopy(SCHEDULER_CONFIG)
        config["clientConnection"] = {"kubeconfig": str(self.kubeconfig), "qps": 500, "burst": 1000}
        config_path.write_text(json.dumps(config, indent=1))
        port = free_port()
        self.scheduler = Proc("kube-scheduler", [
            self.scheduler_bin, "--config", config_path, "--bind-address", "127.0.0.1", "--secure-port", port,
            "--authentication-kubeconfig", self.kubeconfig, "--authorization-kubeconfig", self.kubeconfig, "--v", "1",
        ], self.work).start()
        wait_for("kube-scheduler /healthz", lambda: urllib.request.urlopen(
            f"https://127.0.0.1:{port}/healthz", timeout=2, context=_INSECURE).read() == b"ok", 120, self.scheduler)
        token = json.loads(self.kubeconfig.read_text())["users"][0]["user"]["token"]
        self._metrics = urllib.request.Request(f"https://127.0.0.1:{port}/metrics",
                                               headers={"Authorization": f"Bearer {token}"})
        return self

    def scheduler_cache(self) -> dict[str, int]:
        """kube-scheduler's own count of what its cache holds ({"pods", "assumed_pods", "nodes"})
        and of binding cycles in flight ("binding"), from its /metrics."""
        assert self._metrics is not None, "start() first"
        with urllib.request.urlopen(self._metrics, timeout=10, context=_INSECURE) as response:
            return scheduler_cache_sizes(response.read().decode())


@dataclass
class Verdict:
    """One job on one member: the answers and what kube-scheduler did."""

    answers: dict[str, int]
    default_binds: bool
    binpack_binds: bool
    pinned_binds: bool | None  # None: not tried (a set bound unpinned, or no answer of ours >= 1)

    @property
    def binds(self) -> bool:
        return self.default_binds or self.binpack_binds or bool(self.pinned_binds)


@dataclass
class JudgeTally:
    members: int = 0
    jobs: int = 0
    answers: int = 0
    zero_answers: int = 0
    false_placements: dict[str, int] = field(default_factory=lambda: {"first-fit": 0, "best": 0, "karmada": 0})
    false_rejections: dict[str, int] = field(default_factory=lambda: {"first-fit": 0, "best": 0, "karmada": 0})
    witnesses_accepted: int = 0
    witnesses_tested: int = 0
    order_misses: int = 0
    binpack_only: int = 0  # order misses where the bin-packing profile bound the set
    first_fit_order: int = 0  # first-fit false rejections where best mode answered >= 1 (explained)
    contested_devices: int = 0  # ours 0 on a job asking two DRA names one device can serve (explained)
    pinned_retries: int = 0  # pinned trials refused and tried again (PINNED_WAITS)
    dra_members: int = 0
    failures: list[str] = field(default_factory=list)
    rejections: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)

    def add(self, seed: int, job: Job, verdict: Verdict, dra_names: int = 0) -> None:
        """`dra_names`: how many DRA-served resource names the job asks for (two or more may
        contest one device: docs/semantics.md)."""
        self.jobs += 1
        for who, value in verdict.answers.items():
            self.answers += 1
            self.zero_answers += value == 0
            if value >= 1 and not verdict.binds:
                self.false_placements[who] += 1
                if who != "karmada":
                    self.failures.append(f"seed {seed} {job.name}: {who} answered {value}, no set binds")
            if value == 0 and verdict.binds:
                self.false_rejections[who] += 1
                if who == "first-fit" and verdict.answers.get("best", 0) >= 1:
                    self.first_fit_order += 1  # Karmada's greedy order packed badly; best mode found a set
                elif who != "karmada" and dra_names >= 2:
                    self.contested_devices += 1  # devices two names could take count for neither
                elif who != "karmada":
                    self.rejections.append(f"seed {seed} {job.name}: {who} answered 0, a set binds")
        if verdict.binds and not verdict.default_binds:
            self.order_misses += 1
            self.binpack_only += verdict.binpack_binds

    def ours_ok(self) -> bool:
        """No false placement, every witness accepted, every false rejection explained."""
        fp = self.false_placements
        return (fp["first-fit"] == fp["best"] == 0 and not self.rejections
                and self.witnesses_accepted == self.witnesses_tested)

    def details(self) -> str:
        return (f"judge: {self.jobs} jobs, {self.zero_answers}/{self.answers} answers 0; first-fit false rejections "
                f"where best mode found a set (Karmada's greedy order) {self.first_fit_order}; false rejections of "
                f"jobs asking two DRA-served names (one device may serve both) {self.contested_devices}; scheduler-order misses "
                f"bound by the bin-packing profile {self.binpack_only}, only pinned to our witness "
                f"{self.order_misses - self.binpack_only}; pinned trials retried {self.pinned_retries}; wall seconds " + ", ".join(
                    f"{k} {v:.0f}" for k, v in self.seconds.items()))

    def line(self, version: str) -> str:
        fp, fr = self.false_placements, self.false_rejections
        return (f"judge: {self.members} members, kube-scheduler {version}: ours false placements "
                f"{fp['first-fit']}/{fp['best']} (first-fit/best), false rejections {fr['first-fit']}/{fr['best']}, "
                f"witnesses accepted {self.witnesses_accepted}/{self.witnesses_tested}, scheduler-order misses "
                f"{self.order_misses}; Karmada false placements {fp['karmada']}, false rejections {fr['karmada']}; "
                f"DRA members {self.dra_members}")


class Judge:
    def __init__(self, bed: JudgeBed, ours_ff: Running, ours_best: Running, karmada: Running, work: Path, log=print):
        self.bed, self.work, self.log = bed, work, log
        self.estimators = {"first-fit": ours_ff, "best": ours_best, "karmada": karmada}
        self.api = Rest(bed.kubeconfig)
        self.tally = JudgeTally()
        self.pool = ThreadPoolExecutor(8)
        self._namespaces: list[str] = []
        self.refusal = ""  # kube-scheduler's word on the pod of the last trial it refused
        self._cluster_objects()

    def _cluster_objects(self) -> None:
        for obj in cluster_objects():
            self.api.create(_CLUSTER_PATHS[obj["kind"]], obj)

    # -- timing --------------------------------------------------------------------------------
    def _timed(self, step: str, started: float) -> None:
        self.tally.seconds[step] = self.tally.seconds.get(step, 0.0) + time.monotonic() - started

    # -- the member ------------------------------------------------------------------------------
    def _namespace(self, name: str, member: bool = False) -> str:
        self.api.create("/api/v1/namespaces", {"metadata": {"name": name}})
        if member:  # a trial's namespace is emptied by the trial itself; its quotas stay, unused
            self._namespaces.append(name)
        return name

    def _clear(self) -> None:
        calls = [lambda: self.api.delete("/api/v1/nodes"), lambda: self.api.delete(_CLUSTER_PATHS["ResourceSlice"]),
                 lambda: self.api.delete(_CLUSTER_PATHS["DeviceClass"])]
        for ns in self._namespaces:
            calls += [lambda ns=ns: self.api.delete(namespaced(ns, "pods"), grace=0),
                      lambda ns=ns: self.api.delete(namespaced(ns, "resourcequotas")),
                      lambda ns=ns: self._delete_claims(ns)]
        for done in [self.pool.submit(call) for call in calls]:
            done.result()
        self._namespaces = []  # namespaces are never deleted (no namespace controller): each member has its own

    def _populate(self, member: RealMember) -> dict[str, str]:
        """The member's objects; returns {generator namespace: namespace used for it}."""
        self._clear()
        names = {ns: self._namespace(f"m{member.seed}-{ns}", member=True) for ns in member.namespaces()}
        # One at a time in name order: the estimators keep the order the watch delivers and
        # the snapshot-mode reference reads the dump's (name) order; first-fit depends on it.
        for node in sorted(member.nodes, key=lambda n: n["metadata"]["name"]):
            self.api.create("/api/v1/nodes", {k: v for k, v in node.items() if k != "status" and not k.startswith("_")})
        jobs = [self.pool.submit(self.api.status, f"/api/v1/nodes/{node['metadata']['name']}", node["status"])
                for node in member.nodes]
        jobs += [self.pool.submit(self.api.create, _CLUSTER_PATHS[obj["kind"]], obj)  # what a DRA driver publishes
                 for obj in member.device_classes + member.slices]
        for pod in member.pods:
            body = {k: v for k, v in pod.items() if not k.startswith("_")}
            body = dict(body, metadata=dict(body["metadata"], namespace=names[pod["metadata"]["namespace"]]))
            jobs.append(self.pool.submit(self._existing_pod, body, pod.get("_terminating", False)))
        for job in jobs:
            job.result()
        # Devices running pods hold: the allocation a scheduler wrote (before the quotas, as the pods).
        for done in [self.pool.submit(self._claim, claim, names[claim["metadata"]["namespace"]])
                     for claim in member.claims]:
            done.result()
        # After the pods and claims: quota admission would charge them otherwise.
        for done in [self.pool.submit(self._quota, quota, names[quota["metadata"]["namespace"]])
                     for quota in member.quotas]:
            done.result()
        return names

    def _claim(self, claim: dict, ns: str) -> None:
        path = namespaced(ns, "resourceclaims", _DRA_GROUP)
        self.api.create(path, dict({k: v for k, v in claim.items() if k != "status"},
                                   metadata=dict(claim["metadata"], namespace=ns)))
        self.api.status(f"{path}/{claim['metadata']['name']}", claim["status"])

    def _delete_claims(self, ns: str, settle: float = 2.0) -> None:
        """Every ResourceClaim of `ns`, finalizers first: the controller that would lift the
        scheduler's delete protection and the pod-owner garbage collection do not run here.
        Listed again until none is left (up to `settle` s): kube-scheduler may still be making
        or dropping one for a pod deleted mid-cycle, and a claim left behind would hold devices."""
        path = namespaced(ns, "resourceclaims", _DRA_GROUP)
        deadline = time.monotonic() + settle
        while True:
            claims = self.api.items(path)
            if not claims or time.monotonic() > deadline:
                return
            for claim in claims:
                item = f"{path}/{claim['metadata']['name']}"
                try:
                    if claim["metadata"].get("finalizers"):
                        self.api.call("PATCH", item, {"metadata": {"finalizers": None}},
                                      content_type="application/merge-patch+json")
                    self.api.delete(item)
                except ApiStatus as error:
                    if error.status != 404:  # gone meanwhile: what we wanted
                        raise

    def _existing_pod(self, pod: dict, terminating: bool) -> None:
        path = namespaced(pod["metadata"]["namespace"], "pods")
        self.api.create(path, {k: v for k, v in pod.items() if k != "status"})
        item = f"{path}/{pod['metadata']['name']}"
        if pod["status"] != {"phase": "Pending"}:
            self.api.status(item, pod["status"])
        if terminating:  # bound and deleted: it waits for a kubelet that never comes, still holding its node
            self.api.delete(item, grace=30)

    def _quota(self, quota: dict, namespace: str) -> None:
        body = {k: v for k, v in quota.items() if k != "status"}
        body["metadata"] = dict(body["metadata"], namespace=namespace)
        path = namespaced(namespace, "resourcequotas")
        self.api.create(path, body)
        self.api.status(f"{path}/{quota['metadata']['name']}", quota["status"])

    def _dump(self, path: Path) -> None:
        """Everything the estimators read, as one v1 List (the --objects format)."""
        items = []
        for kind, api_version, collection in _DUMPED:
            for obj in self.api.items(collection):
                items.append(dict(obj, kind=kind, apiVersion=api_version))
        path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))

    # -- answers ------------------------------------------------------------------------------------
    def _answers(self, member: RealMember, names: dict[str, str]) -> tuple[oracle.Reference, list[dict[str, int]]]:
        dump = self.work / "judge-state.json"
        self._dump(dump)
        ref = oracle.Reference(dump)
        queries = [_renamed(job.query, names) for job in member.jobs]
        expected = [ref.sets(q) for q in queries]
        for who, index in (("first-fit", 0), ("best", 1)):
            want = {i: pair[index] for i, pair in enumerate(expected)}
            if not _converged(lambda: [self.estimators[who].sets(q).value for q in queries], list(want.values()), 60):
                raise RuntimeError(f"seed {member.seed}: our {who} estimator did not converge to the snapshot answers")
        karmada = self.estimators["karmada"]
        # Karmada answers differently on purpose (sidecars, pod-level resources): wait until two
        # calls 0.1 s apart agree, after ours have converged on the same apiserver.
        answers_k = _stable(lambda: [karmada.sets(q).value for q in queries])
        out = []
        for i, (ff, best) in enumerate(expected):
            out.append({"first-fit": ff, "best": best, "karmada": answers_k[i]})
        return ref, out

    # -- trials ------------------------------------------------------------------------------------
    def _trial(self, member: RealMember, names: dict[str, str], job: Job, tag: str, scheduler: str, sets: int = 1,
               pins: dict[str, list[str]] | None = None, assumed_pins: list | None = None) -> bool:
        started = time.monotonic()
        query = job.query
        ns = self._namespace(f"m{member.seed}-{job.name}-{tag}")
        origin = {used: generated for generated, used in names.items()}[query.namespace]
        for quota in member.quotas:  # the job namespace's quotas, as they stand, in this fresh one
            if quota["metadata"]["namespace"] == origin:
                self._quota(quota, ns)
        try:
            for w, workload in enumerate(query.assumed):  # in flight: their pods come first
                if assumed_pins is not None and assumed_pins[w] is None:
                    continue  # first-fit could not place it whole: it took part of its room only in our model
                pods = job_pods(workload.components, ns, scheduler, pins=None if assumed_pins is None else assumed_pins[w],
                                prefix=f"a{w}-")
                self._bind(pods, ns)
            return self._bind(job_pods(query.components, ns, scheduler, sets=sets, pins=pins), ns)
        finally:
            self.api.delete(namespaced(ns, "pods"), grace=0)
            # No binding cycle left that could still make a claim for a pod just deleted, and
            # the next trial starts on a cache that holds the member only.
            self._settle(member)
            if member.dra:  # the claims kube-scheduler made for the pods' DRA-served resources
                self._delete_claims(ns)
            self._timed("trials", started)

    def _bind(self, pods: list[dict], ns: str) -> bool:
        """Create the pods; True when kube-scheduler binds every one before the deadline. When
        not, `self.refusal` says which pod was refused and why."""
        refusals: list[str] = []

        def create(pod: dict) -> None:
            try:
                self.api.create(namespaced(ns, "pods"), pod)
            except ApiStatus as error:
                if error.status != 403:  # 403: refused by quota admission, which counts as not bound
                    raise
                refusals.append(f"{pod['metadata']['name']}: {error.message}")

        for done in [self.pool.submit(create, pod) for pod in pods]:
            done.result()
        if refusals:
            self.refusal = refusals[0]
            return False
        deadline = time.monotonic() + TRIAL_SECONDS
        while time.monotonic() < deadline:
            items = self.api.items(namespaced(ns, "pods"))
            mine = [p for p in items if p["metadata"]["name"] in {q["metadata"]["name"] for q in pods}]
            refusals = [f"{p['metadata']['name']}: {why}" for p in mine if (why := _refusal(p)) is not None]
            if refusals:
                self.refusal = refusals[0]
                return False
            if len(mine) == len(pods) and all(p["spec"].get("nodeName") for p in mine):
                return True
            time.sleep(0.03)
        self.refusal = f"neither bound nor refused within {TRIAL_SECONDS:.0f} s"
        self.tally.failures.append(f"namespace {ns}: {self.refusal}")
        return False

    def _pinned_trial(self, member: RealMember, names: dict[str, str], job: Job, tag: str, sets: int,
                      pins: dict[str, list[str]], assumed: list | None) -> tuple[bool, list[str]]:
        """A pinned trial, tried again after each of PINNED_WAITS while refused; returns the last
        verdict and kube-scheduler's refusals. Every pod goes to a node our witness says has
        room, so a refusal can also be a view kube-scheduler has not caught up on: `_settle`
        covers its pod cache, not its view of the claims deleted after the last trial (a loaded
        CI machine refused a witness twice, one second apart, that bound in every run since).
        A witness that does not fit is refused every time; the retries are counted."""
        refusals: list[str] = []
        for attempt, wait in enumerate((0.0, *PINNED_WAITS)):
            if attempt:
                time.sleep(wait)
                self.tally.pinned_retries += 1
            if self._trial(member, names, job, f"{tag}{attempt or ''}", SCHEDULERS[0], sets=sets, pins=pins,
                           assumed_pins=assumed):
                return True, refusals
            refusals.append(self.refusal)
        return False, refusals

    def _settle(self, member: RealMember) -> None:
        """Wait until kube-scheduler's cache holds the member's own nodes and pods, nothing
        assumed, no binding cycle in flight: a trial judged on a cache still showing the last
        trial's pods would be refused room that is there, and a binding cycle still running
        for a deleted pod can make a claim after its namespace's claims were swept."""
        want = {"nodes": len(member.nodes), "pods": cached_pods(member.pods), "assumed_pods": 0, "binding": 0}
        deadline = time.monotonic() + SETTLE_SECONDS
        while True:
            seen = self.bed.scheduler_cache()
            if all(seen.get(k, 0) == v for k, v in want.items()):
                return
            if time.monotonic() > deadline:
                self.tally.failures.append(f"seed {member.seed}: kube-scheduler's cache did not settle within "
                                           f"{SETTLE_SECONDS:.0f} s: {seen}, want {want}")
                return
            time.sleep(0.03)

    # -- one member ------------------------------------------------------------------------------------
    def run_member(self, member: RealMember) -> None:
        started = time.monotonic()
        names = self._populate(member)
        self._timed("populate", started)
        started = time.monotonic()
        ref, answers = self._answers(member, names)
        self._settle(member)  # the first trial too starts on the member's pods only (each trial settles after itself)
        self._timed("answers", started)
        self.tally.members += 1
        self.tally.dra_members += member.dra
        for job, answer in zip(member.jobs, answers):
            job = Job(job.name, _renamed(job.query, names))
            self._judge_job(member, names, job, answer, ref)

    def _judge_job(self, member: RealMember, names: dict[str, str], job: Job, answer: dict[str, int],
                   ref: oracle.Reference) -> None:
        default_binds = self._trial(member, names, job, "d", SCHEDULERS[0])
        # Where the default profile binds a set, the verdict is known: the bin-packing profile
        # is asked only where it could change it.
        binpack_binds = default_binds or self._trial(member, names, job, "b", SCHEDULERS[1])
        witness = _witness(ref, job)
        assumed = _assumed_pins(ref, job)
        pinned = None
        if not (default_binds or binpack_binds) and witness is not None:
            pinned, _ = self._pinned_trial(member, names, job, "p", 1, _one_set(witness, job), assumed)
        verdict = Verdict(answer, default_binds, binpack_binds, pinned)
        served = {n for c in member.device_classes for n in _class_names(c)}
        asked = {name for c in job.query.components for name, _ in c.shape.requests if name in served}
        self.tally.add(member.seed, job, verdict, len(asked))
        if answer["best"] >= 1 and witness is not None:
            self.tally.witnesses_tested += 1
            ok, refusals = self._pinned_trial(member, names, job, "w", answer["best"], _expanded(witness), assumed)
            self.tally.witnesses_accepted += ok
            if not ok:
                self.tally.failures.append(f"seed {member.seed} {job.name}: kube-scheduler refused our best witness "
                                           f"of {answer['best']} sets: " + " | ".join(r[:200] for r in refusals))


# -- helpers (pure) ------------------------------------------------------------------------------------------

def _renamed(query, names: dict[str, str]):
    """The query with its namespaces mapped to the member's own."""
    rename = lambda c: dataclasses.replace(c, shape=dataclasses.replace(c.shape, namespace=names[c.shape.namespace]))  # noqa: E731
    assumed = tuple(dataclasses.replace(w, namespace=names[w.namespace], components=tuple(rename(c) for c in w.components))
                    for w in query.assumed)
    return dataclasses.replace(query, namespace=names[query.namespace],
                               components=tuple(rename(c) for c in query.components), assumed=assumed)


def _class_names(device_class: dict) -> tuple[str, ...]:
    """The resource names a DeviceClass serves: its extendedResourceName and its implicit name."""
    implicit = f"deviceclass.resource.kubernetes.io/{device_class['metadata']['name']}"
    explicit = device_class["spec"].get("extendedResourceName")
    return (implicit, explicit) if explicit else (implicit,)


def _refusal(pod: dict) -> str | None:
    """kube-scheduler's message where it gave up on the pod: no node fits, or the claim it makes
    for a DRA-served resource is refused by quota admission (retried for ever, never bound)."""
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c.get("type") != "PodScheduled" or c.get("status") != "False":
            continue
        message = c.get("message") or ""
        if c.get("reason") == "Unschedulable" or (c.get("reason") == "SchedulerError" and "exceeded quota" in message):
            return message or c["reason"]
    return None


def cached_pods(pods: list[dict]) -> int:
    """How many of a member's pods kube-scheduler's cache holds: every bound one but those
    that have finished (Succeeded or Failed), which hold nothing."""
    return sum(1 for p in pods if p["spec"].get("nodeName") and p["status"].get("phase") not in ("Succeeded", "Failed"))


def scheduler_cache_sizes(metrics: str) -> dict[str, int]:
    """{"pods", "assumed_pods", "nodes"} from `scheduler_cache_size`, and "binding" from
    `scheduler_goroutines` (absent until the first binding), out of kube-scheduler's /metrics."""
    wanted = ("scheduler_cache_size", "scheduler_goroutines")
    lines = "\n".join(line for line in metrics.splitlines() if line.startswith(wanted))
    sizes: dict[str, int] = {}
    for family in text_string_to_metric_families(lines + "\n"):
        for sample in family.samples:
            if family.name == "scheduler_cache_size":
                sizes[sample.labels["type"]] = int(sample.value)
            elif sample.labels.get("operation") == "binding":
                sizes["binding"] = int(sample.value)
    return sizes


def _converged(ask, want, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if ask() == want:
            return True
        time.sleep(0.05)
    return False


def _stable(ask, timeout: float = 10.0):
    last = ask()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        time.sleep(0.1)
        now = ask()
        if now == last:
            return now
        last = now
    return last


def _witness(ref: oracle.Reference, job: Job) -> dict[str, dict[str, int]] | None:
    """Our best answer's placement, {component: {node: replicas}}, from the snapshot-mode run."""
    estimate = ref.best.max_available_component_sets(job.query)
    return estimate.witness() if estimate.sets >= 1 else None


def _expanded(witness: dict[str, dict[str, int]]) -> dict[str, list[str]]:
    return {component: [node for node, count in placed.items() for _ in range(count)]
            for component, placed in witness.items()}


def _one_set(witness: dict[str, dict[str, int]], job: Job) -> dict[str, list[str]]:
    """One set out of the witness: any replicas[c] of its slots (a part of a placement that fits fits)."""
    expanded = _expanded(witness)
    return {c.name: expanded[c.name][:c.replicas] for c in job.query.components}


def _assumed_pins(ref: oracle.Reference, job: Job) -> list | None:
    """Where our first-fit deduction puts each in-flight workload (None for one it cannot place
    whole), computed with the plain reference first-fit in the snapshot's node order. Each is
    placed on the member as it is: the generator sends at most one per job."""
    if not job.query.assumed:
        return None
    snapshot = ref.snapshot
    pins: list = []
    for workload in job.query.assumed:
        arrays = oracle.sets_arrays(snapshot, dataclasses.replace(job.query, components=workload.components, assumed=()))
        sets, placement, _ = naive.first_fit(arrays.available, arrays.requests, arrays.replicas, arrays.masks, 1)
        pins.append(None if sets < 1 else {
            c.name: [snapshot.node_names[n] for n, count in enumerate(placement[i]) for _ in range(count)]
            for i, c in enumerate(workload.components)})
    return pins


# -- the phase ------------------------------------------------------------------------------------------------

def run(bin_dir: Path, work: Path, versions: dict[str, str], members: int, seed: int, log=print) -> JudgeTally:
    """A judge bed, our two estimators and Karmada's on it, and `members` generated members."""
    from e2e.harness.estimators import karmadas, ours
    from e2e.harness.realmembers import generate

    work.mkdir(parents=True, exist_ok=True)
    bed = JudgeBed(bin_dir, work, versions["KUBERNETES_VERSION"], versions["ETCD_VERSION"]).start()
    karmada_bin = bin_dir / f"karmada-scheduler-estimator-{versions['KARMADA_VERSION']}"
    estimators = [ours(bed.kubeconfig, work, "first-fit", name="judge-ours-first-fit").launch(),
                  ours(bed.kubeconfig, work, "best", name="judge-ours-best").launch(),
                  karmadas(karmada_bin, bed.kubeconfig, work, name="judge-karmada").launch()]
    try:
        for est in estimators:
            est.wait_ready()
        judge = Judge(bed, *estimators, work, log)
        started = time.monotonic()
        for i in range(members):
            judge.run_member(generate(seed + i))
            if (i + 1) % 25 == 0:
                t = judge.tally
                log(f"judge: {i + 1}/{members} members, {t.jobs} jobs, {t.zero_answers}/{t.answers} answers 0 "
                    f"({time.monotonic() - started:.0f} s)")
        return judge.tally
    finally:  # its processes go as soon as it is done: the rest of the run needs the cores
        for est in estimators:
            est.stop()
        bed.stop()


def run_process(bin_dir: Path, work: Path, versions: dict[str, str], members: int, seed: int, log=print) -> JudgeTally:
    """`run` in a process of its own (`python -m e2e.harness.judge`): beside the differential,
    a thread would share its interpreter lock. Its progress lines go to this process's output."""
    import subprocess
    import sys

    work.mkdir(parents=True, exist_ok=True)
    out = work / "tally.json"
    out.unlink(missing_ok=True)
    done = subprocess.run([sys.executable, "-m", "e2e.harness.judge", "--members", str(members), "--seed", str(seed),
                           "--bin-dir", str(bin_dir), "--work", str(work), "--json", str(out), "--quiet"],
                          stdin=subprocess.DEVNULL, check=False)
    if not out.exists():
        raise RuntimeError(f"the judge exited {done.returncode} without a tally (see its output above)")
    return JudgeTally(**json.loads(out.read_text()))


def main(argv=None) -> int:
    import argparse

    from e2e.harness.versions import REPO, versions

    p = argparse.ArgumentParser(prog="python -m e2e.harness.judge", description=__doc__)
    p.add_argument("--members", type=int, default=200)
    p.add_argument("--seed", type=int, default=500000)
    p.add_argument("--bin-dir", type=Path, default=REPO / ".e2e" / "bin")
    p.add_argument("--work", type=Path, default=REPO / ".e2e" / "judge")
    p.add_argument("--json", type=Path, help="write the tally here (what make e2e reads)")
    p.add_argument("--quiet", action="store_true", help="progress lines only (the caller prints the verdict)")
    p.add_argument("--write-results", action="store_true",
                   help="write this run's figures into benchmarks/RESULTS.md (section 'Judged by kube-scheduler')")
    args = p.parse_args(argv)
    v = versions()
    from e2e.harness import procs

    procs.install_signal_handlers()
    try:
        tally = run(args.bin_dir, args.work, v, args.members, args.seed, log=lambda m: print(m, flush=True))
    finally:
        procs.stop_all()
    if args.json is not None:
        args.json.write_text(json.dumps(dataclasses.asdict(tally)))
    if not args.quiet:
        for line in tally.failures[:20] + tally.rejections[:20]:
            print(f"judge: FAILURE {line}")
        print(tally.details())
        print(tally.line(v["KUBERNETES_VERSION"]))
    if args.write_results:
        write_results(tally, v, args)
    return 0 if tally.ours_ok() else 1


def write_results(tally: JudgeTally, v: dict[str, str], args) -> None:
    """The figures, ours beside Karmada's, into benchmarks/RESULTS.md."""
    import subprocess

    from benchmarks.resultsmd import replace_section
    from e2e.harness.versions import REPO

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    fp, fr = tally.false_placements, tally.false_rejections
    jobs = tally.jobs
    text = f"""## Judged by kube-scheduler

`python -m e2e.harness.judge --members {args.members} --seed {args.seed} --write-results` at {commit}
({time.strftime('%Y-%m-%d')}): {tally.members} generated members that look like real ones
(e2e/harness/realmembers.py; {tally.dra_members} of them serve their GPUs through DRA), {jobs} jobs, one
set of each created in a fresh namespace and bound, or not, by kube-scheduler {v['KUBERNETES_VERSION']}
(default and bin-packing profiles) on an apiserver enforcing quotas; `make e2e` runs the same
and prints the `judge:` line. Definitions: docs/semantics.md, "The judge".

| estimator | false placements (job Pending) | false rejections (a set binds) |
|---|---|---|
| ours, `--packing first-fit` | {fp['first-fit']} | {fr['first-fit']} |
| ours, `--packing best` | {fp['best']} | {fr['best']} |
| Karmada's karmada-scheduler-estimator {v['KARMADA_VERSION']} | {fp['karmada']} | {fr['karmada']} |

Our false rejections, explained (docs/semantics.md): {tally.first_fit_order} of first-fit where best
mode found a set (Karmada's greedy order); {tally.contested_devices} (over both modes) on jobs asking
two DRA-served names one device may serve; {len(tally.rejections)} unexplained.

Our best-mode witnesses pinned pod by pod to their nodes: {tally.witnesses_accepted} of
{tally.witnesses_tested} bound by kube-scheduler's own filters. Scheduler-order misses (the
default profile left a set Pending that binds otherwise): {tally.order_misses}
({tally.binpack_only} bound by the bin-packing profile). Answers 0: {tally.zero_answers} of
{tally.answers}. Wall time: {", ".join(f"{k} {s:.0f} s" for k, s in tally.seconds.items())}.
"""
    replace_section(REPO / "benchmarks" / "RESULTS.md", "## Judged by kube-scheduler", text)


if __name__ == "__main__":
    import sys
    sys.exit(main())
