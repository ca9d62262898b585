"""The scenarios of issue 26 (part 3) on a real Karmada control plane, each run twice: on one
stack whose members have our estimators and, at the same time, on an identical stack whose
members have Karmada's own karmada-scheduler-estimator (same version). Side by side.

Per stack, in this order (each scenario in its own namespace, emptied before the next):
1. seed failure 1, gate off: karmada-controller-manager and karmada-scheduler start with
   MultiplePodTemplatesScheduling=false; train-big with the one-member policy;
   then both restart with the gates on (the rest of the run);
2. the reference job: train-big, policy Divided/Aggregated with a cluster spread 1..1;
3. seed failure 2, no spread constraint: the same job and policy without the constraint;
4. the burst: 30 jobs (20 small, 10 big; half schedulePriority high, half low) created at once;
5. federated quota: a FederatedResourceQuota of 6 GPUs in the namespace, 6 small jobs (12 GPUs);
6. seed failure 4, a member without an accurate estimator: member-a's estimator stopped;
7. seed failure 3, resource models blind to GPUs: karmada-scheduler restarted with
   CustomizedClusterResourceModeling on (its default), member-a's estimator back;
8. failover: 5 small jobs; the member holding most of them loses its kube-apiserver; Karmada
   (Failover gate, NoExecute taint eviction, the ClusterTaintPolicy) moves them.
Before each seed scenario `karmada-place doctor` is asked about the job, policy and gates;
during the burst `karmada-place` is asked about every decision karmada-scheduler makes, through
the control plane (karmadacp_client.py: what "agree" means, and why a job may not).
A job's outcome is read from its ResourceBinding (spec.clusters) and from the members
(where the job is, its pods bound or Unschedulable), once every job is decided and the view
has been still for a moment.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path

from e2e.harness import karmadacp_client as kc
from e2e.harness import karmadacp_workload as wl
from e2e.harness.karmadacp import CLUSTERS, SCHEDULER_GATES, Stack, create
from e2e.harness.rest import ApiStatus

JOBS = f"/apis/{wl.GROUP}/{wl.VERSION}/namespaces/{{ns}}/{wl.PLURAL}"
BINDINGS = "/apis/work.karmada.io/v1alpha2/namespaces/{ns}/resourcebindings"
POLICIES = "/apis/policy.karmada.io/v1alpha1/namespaces/{ns}/propagationpolicies"
QUOTAS = "/apis/policy.karmada.io/v1alpha1/namespaces/{ns}/federatedresourcequotas"
NAMESPACES = ("seed-gate", "seed-ok", "seed-spread", "burst", "quota", "seed-estimator", "seed-models", "failover")
GATE_OFF = {"MultiplePodTemplatesScheduling": False}


@dataclass
class Scenario:
    name: str
    outcomes: list = field(default_factory=list)  # [JobOutcome]
    doctor: list = field(default_factory=list)  # the failures karmada-place doctor named, e.g. [1]
    overcommitted: int = 0
    moved_whole: int = 0
    moved: int = 0
    note: str = ""
    client: dict = field(default_factory=dict)  # the burst: karmada-place beside karmada-scheduler

    def tally(self) -> wl.Tally:
        return wl.Tally().add(self.outcomes)

    def summary(self) -> str:
        t = self.tally()
        where = ", ".join(f"{o.name}->{'+'.join(o.members) or '-'}{'(P)' if o.pending else ''}"
                          for o in self.outcomes[:3])
        more = f" ... ({len(self.outcomes)} jobs)" if len(self.outcomes) > 3 else ""
        doctor = f"; doctor: failure {', '.join(map(str, self.doctor))}" if self.doctor else ""
        return f"W/P/C/Q {t.short()} [{where}{more}]{doctor}{('; ' + self.note) if self.note else ''}"


# -- observing -------------------------------------------------------------------------------------

def _binding_targets(binding: dict) -> list[str]:
    return [c["name"] for c in (binding.get("spec") or {}).get("clusters") or []]


def _scheduled(binding: dict) -> bool:
    return any(c.get("type") == "Scheduled" for c in (binding.get("status") or {}).get("conditions") or [])


def observe(stack: Stack, ns: str, jobs: dict[str, int], skip: frozenset = frozenset()) -> tuple[list, bool]:
    """(outcomes, decided): every job's targets and, per member it is in, its pods' states.
    `jobs` maps a job to its pod count; `skip` members are not asked (their apiserver is down)."""
    bindings = {b["metadata"]["name"]: b for b in stack.api.items(BINDINGS.format(ns=ns))}
    present: dict[str, dict[str, list[str]]] = {job: {} for job in jobs}
    for member, api in stack.member_api.items():
        if member in skip:
            continue
        there = {j["metadata"]["name"] for j in api.items(JOBS.format(ns=ns))}
        pods = api.call("GET", f"/api/v1/namespaces/{ns}/pods",
                        params={"labelSelector": f"{wl.LABEL_OPERATOR}={wl.OPERATOR_NAME}"})["items"]
        for job in there & set(jobs):
            present[job][member] = sorted(wl.pod_state(p) for p in pods if p["metadata"]["labels"].get(wl.LABEL_JOB) == job)
    outcomes, decided = [], True
    for job, count in jobs.items():
        binding = bindings.get(f"{job}-pytorchjob")
        targets = [t for t in _binding_targets(binding)] if binding else []
        outcome = wl.JobOutcome(job, targets, present[job])
        outcomes.append(outcome)
        if binding is None or not _scheduled(binding):
            decided = False
        for member in set(targets) - skip:
            states = present[job].get(member)
            if states is None or len(states) < count or "new" in states:
                decided = False
    return outcomes, decided


def settle(stack: Stack, ns: str, jobs: dict[str, int], timeout: float = 60, still: float = 2.0,
           skip: frozenset = frozenset()) -> tuple[list, bool]:
    """Observe until every job is decided and nothing changed for `still` seconds."""
    deadline = time.monotonic() + timeout
    last, since = None, time.monotonic()
    outcomes, decided = [], False
    while time.monotonic() < deadline:
        outcomes, decided = observe(stack, ns, jobs, skip)
        view = [(o.targets, o.present) for o in outcomes]
        if view != last:
            last, since = view, time.monotonic()
        elif decided and time.monotonic() - since >= still:
            return outcomes, True
        time.sleep(0.3)
    return outcomes, False


def member_pending(stack: Stack, skip: frozenset = frozenset()) -> dict[str, list[str]]:
    """Every member's job pod states (all namespaces)."""
    out = {}
    for member, api in stack.member_api.items():
        if member not in skip:
            pods = api.call("GET", "/api/v1/pods", params={"labelSelector": f"{wl.LABEL_OPERATOR}={wl.OPERATOR_NAME}"})
            out[member] = [wl.pod_state(p) for p in pods["items"]]
    return out


# -- acting --------------------------------------------------------------------------------------------

def submit(stack: Stack, ns: str, policies: list[dict], jobs: list[dict]) -> dict[str, int]:
    for policy in policies:
        create(stack.api, POLICIES.format(ns=ns), policy)
    with ThreadPoolExecutor(10) as pool:  # "at once"
        list(pool.map(lambda job: create(stack.api, JOBS.format(ns=ns), job), jobs))
    return {j["metadata"]["name"]: 1 + j["spec"]["pytorchReplicaSpecs"]["Worker"]["replicas"] for j in jobs}


def cleanup(stack: Stack, ns: str, skip: frozenset = frozenset(), timeout: float = 60) -> None:
    """Delete the namespace's jobs, then their ResourceBindings (kube-controller-manager's garbage
    collector does that in a real control plane: the binding is owned by the job), then policies
    and quotas; wait until no member holds a job or a job pod of the namespace."""
    api = stack.api
    for path in (JOBS, BINDINGS, POLICIES, QUOTAS):
        for obj in api.items(path.format(ns=ns)):
            try:
                api.delete(f"{path.format(ns=ns)}/{obj['metadata']['name']}")
            except ApiStatus as error:
                if error.status != 404:
                    raise

    def empty() -> bool:
        for member, mapi in stack.member_api.items():
            if member in skip:
                continue
            if mapi.items(JOBS.format(ns=ns)) or mapi.items(f"/api/v1/namespaces/{ns}/pods"):
                return False
        return not api.items(BINDINGS.format(ns=ns))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not empty():
        time.sleep(0.3)


def doctor(stack: Stack, ns: str, job: dict, policy: dict, gates: dict, without: tuple = ()) -> list:
    """The failures `karmada-place doctor` names for this job, policy and gates (before submitting)."""
    work = stack.work / "doctor"
    work.mkdir(exist_ok=True)
    files = {"job": work / f"{ns}-job.json", "policy": work / f"{ns}-policy.json", "clusters": work / f"{ns}-clusters.json"}
    files["job"].write_text(json.dumps(job))
    files["policy"].write_text(json.dumps(policy))
    clusters = [{"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster", **c} for c in stack.api.items(CLUSTERS)]
    files["clusters"].write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": clusters}))
    argv = [str(Path(sys.executable).parent / "karmada-place"), "doctor", "--job", str(files["job"]),
            "--policy", str(files["policy"]), "--clusters", str(files["clusters"]), "-o", "json",
            "--feature-gates", ",".join(f"{k}={str(v).lower()}" for k, v in sorted(gates.items()))]
    for member, (ip, port) in stack.estimator_at.items():
        if member not in without:
            argv += ["--estimator", f"{member}={ip}:{port}"]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
        findings = json.loads(done.stdout)["findings"]
    except Exception as error:  # noqa: BLE001 - a report of what the tool said, not a check of it
        return [f"doctor failed: {error}"]
    return sorted({f["failure"] for f in findings if f.get("failure")})


# -- the scenarios ---------------------------------------------------------------------------------------

def _seed(stack: Stack, ns: str, name: str, one_member: bool = True, gates: dict | None = None,
          without: tuple = ()) -> Scenario:
    job = wl.pytorchjob("train-big", ns, wl.BIG)
    policy = wl.propagation_policy("train", ns, one_member=one_member)
    scenario = Scenario(name, doctor=doctor(stack, ns, job, policy, gates or stack.gates_sched, without))
    jobs = submit(stack, ns, [policy], [job])
    scenario.outcomes, ok = settle(stack, ns, jobs)
    scenario.note = "" if ok else "not settled in 60 s"
    cleanup(stack, ns)
    return scenario


def _burst(stack: Stack, ns: str) -> Scenario:
    jobs = []
    for i in range(30):
        shape = wl.BIG if i % 3 == 2 else wl.SMALL
        priority = "high" if i % 2 == 0 else "low"
        jobs.append(wl.pytorchjob(f"job-{i:02d}-{shape.name}-{priority}", ns, shape, labels={"priority": priority}))
    policies = [wl.propagation_policy(f"burst-{p}", ns, match_labels={"priority": p}, priority_class=f"e2e-{p}")
                for p in ("high", "low")]
    scenario = Scenario("burst")
    cert, key = stack.grpc_cert
    asker = kc.Asker(stack.api, ns, jobs, stack.procs["karmada-scheduler"].log_path, stack.work / "karmada-place",
                     lambda job_file: kc.client_argv(job_file, stack.kubeconfig, stack.gates_sched,
                                                     stack.karmada.ca.cert_path, cert, key)).start()
    try:
        scenario.outcomes, ok = settle(stack, ns, submit(stack, ns, policies, jobs), timeout=120, still=4.0)
    finally:
        asker.stop()
    try:
        scenario.client = _client_verdict(stack, scenario.outcomes, asker)
    except Exception as error:  # noqa: BLE001 - the client's count is a report; the burst stands without it
        scenario.client = {"agree": 0, "asked": 0, "jobs": len(jobs), "error": f"{type(error).__name__}: {error}"}
        stack.log(f"karmada[{stack.name}]: burst: client agreement not counted: {error}")
    scenario.overcommitted = wl.overcommitted(member_pending(stack))
    whole = {p: sum(1 for o in scenario.outcomes if o.whole and o.name.endswith(p)) for p in ("high", "low")}
    scenario.note = (f"over-committed members {scenario.overcommitted}; whole: {whole['high']} of 15 high priority, "
                     f"{whole['low']} of 15 low" + ("" if ok else "; not settled in 120 s"))
    cleanup(stack, ns)
    return scenario


def _client_verdict(stack: Stack, outcomes: list, asker: kc.Asker) -> dict:
    """`client agrees A/B` for one stack's burst, each disagreement explained (karmadacp_client.py)."""
    answers = {m: kc.estimator_answers(stack.procs[f"estimator-{m}"].log_path.read_text(errors="replace"))
               for m in stack.members if f"estimator-{m}" in stack.procs}
    verdict = kc.agreement({o.name: tuple(sorted(o.targets)) for o in outcomes}, asker.asks, asker.ns, answers)
    for line in verdict.lines:
        stack.log(f"karmada[{stack.name}]: burst: client: {line}")
    return {"agree": verdict.agree, "asked": verdict.asked, "jobs": verdict.jobs, "explained": verdict.explained,
            "asks": sum(len(a) for a in asker.asks.values()), "lines": verdict.lines, "errors": asker.errors}


def _quota(stack: Stack, ns: str) -> Scenario:
    create(stack.api, QUOTAS.format(ns=ns), {
        "apiVersion": "policy.karmada.io/v1alpha1", "kind": "FederatedResourceQuota",
        "metadata": {"name": "gpus", "namespace": ns}, "spec": {"overall": {wl.GPU: "6"}}})
    time.sleep(1.0)  # the quota's status (used 0) first
    jobs = [wl.pytorchjob(f"q-{i}", ns, wl.SMALL) for i in range(6)]
    scenario = Scenario("quota")
    scenario.outcomes, ok = settle(stack, ns, submit(stack, ns, [wl.propagation_policy("train", ns)], jobs),
                                   timeout=60, still=4.0)
    used = (stack.api.call("GET", f"{QUOTAS.format(ns=ns)}/gpus").get("status") or {}).get("overallUsed", {})
    scenario.note = f"quota 6 GPUs, used {used.get(wl.GPU, '0')}" + ("" if ok else "; not settled in 60 s")
    cleanup(stack, ns)
    return scenario


def _failover(stack: Stack, ns: str) -> Scenario:
    jobs = submit(stack, ns, [wl.propagation_policy("train", ns)], [wl.pytorchjob(f"f-{i}", ns, wl.SMALL) for i in range(5)])
    before, _ = settle(stack, ns, jobs, timeout=60, still=2.0)
    counts: dict[str, int] = {}
    for o in before:
        if o.whole:
            counts[o.members[0]] = counts.get(o.members[0], 0) + 1
    scenario = Scenario("failover")
    if not counts:
        scenario.outcomes, scenario.note = before, "no job ran before the failure"
        return scenario
    lost = max(sorted(counts), key=lambda m: counts[m])
    on_lost = {o.name for o in before if o.whole and o.members == [lost]}
    stack.operator.paused.add(lost)
    stack.members[lost].kube.apiserver.kill9()
    started = time.monotonic()
    skip = frozenset({lost})

    def moved() -> bool:
        outcomes, decided = observe(stack, ns, jobs, skip)
        return decided and all(lost not in o.targets for o in outcomes if o.name in on_lost)
    deadline = started + 120
    while time.monotonic() < deadline and not moved():
        time.sleep(0.5)
    after, ok = settle(stack, ns, jobs, timeout=30, still=3.0, skip=skip)
    for o in after:  # what is left on the lost member is not running anywhere a user can see
        o.present.pop(lost, None)
        o.targets = [t for t in o.targets if t != lost]
    scenario.outcomes = after
    scenario.moved = sum(1 for o in after if o.name in on_lost and o.members)
    scenario.moved_whole = sum(1 for o in after if o.name in on_lost and o.whole)
    scenario.note = (f"{lost} lost with {len(on_lost)} jobs: {scenario.moved_whole} moved whole, "
                     f"{scenario.moved - scenario.moved_whole} moved with Pending pods, {len(on_lost) - scenario.moved} "
                     f"waiting ({time.monotonic() - started:.0f} s)" + ("" if ok else "; not settled"))
    return scenario


def run_stack(stack: Stack, log) -> list[Scenario]:
    """Every scenario on one stack (already started with the gate off), in the order above."""
    for ns in NAMESPACES:
        create(stack.api, "/api/v1/namespaces", {"metadata": {"name": ns}})
    tag = stack.name
    out = []

    def step(scenario: Scenario) -> None:
        out.append(scenario)
        log(f"karmada[{tag}]: {scenario.name}: {scenario.summary()}")

    step(_seed(stack, "seed-gate", "failure 1 (gate off)", gates={**SCHEDULER_GATES, **GATE_OFF}))
    stack.restart("karmada-controller-manager", stack.gates)
    stack.restart("karmada-scheduler", SCHEDULER_GATES)
    step(_seed(stack, "seed-ok", "reference job"))
    step(_seed(stack, "seed-spread", "failure 2 (no spread constraint)", one_member=False))
    step(_burst(stack, "burst"))
    step(_quota(stack, "quota"))
    stack.stop_estimator("member-a")
    step(_seed(stack, "seed-estimator", "failure 4 (member-a without estimator)", without=("member-a",)))
    stack.start_estimator("member-a")
    models = {**SCHEDULER_GATES, "CustomizedClusterResourceModeling": True}
    stack.restart("karmada-scheduler", models)
    step(_seed(stack, "seed-models", "failure 3 (resource models)"))
    stack.restart("karmada-scheduler", SCHEDULER_GATES)
    step(_failover(stack, "failover"))
    return out


# -- the phase -------------------------------------------------------------------------------------------

def _one(kind: str, bin_dir: Path, work: Path, versions: dict, log, results: dict) -> None:
    stack = Stack(kind, kind, bin_dir, work / kind, versions, log)
    stack.scheduler_gates = {**SCHEDULER_GATES, **GATE_OFF}
    try:
        stack.start(cm_gates={**stack.gates, **GATE_OFF})
        results[kind] = run_stack(stack, log)
        if stack.operator.errors:
            log(f"karmada[{kind}]: operator errors (first 3): {stack.operator.errors[:3]}")
    except BaseException as error:  # noqa: BLE001 - reported by run()
        results[kind] = error
    finally:
        stack.stop()


def run(bin_dir: Path, work: Path, versions: dict, log=print) -> dict:
    """Both stacks at once (ours, Karmada's), every scenario on each; the `karmada: ...` line."""
    import shutil

    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    started = time.monotonic()
    results: dict = {}
    threads = [threading.Thread(target=_one, args=(kind, bin_dir, work, versions, log, results), name=f"karmada-{kind}")
               for kind in ("ours", "karmada")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for kind in ("ours", "karmada"):
        if isinstance(results.get(kind), BaseException):
            raise RuntimeError(f"the {kind} stack failed: {results[kind]}") from results[kind]
    ours, theirs = results["ours"], results["karmada"]
    t_ours = wl.Tally()
    t_theirs = wl.Tally()
    for a, b in zip(ours, theirs):
        t_ours, t_theirs = t_ours.merged(a.tally()), t_theirs.merged(b.tally())
        log(f"karmada: {a.name:<40} ours {a.tally().short():<9} Karmada's {b.tally().short():<9}"
            + (f" ({a.note} | {b.note})" if a.note or b.note else ""))
    b_ours = next(s for s in ours if s.name == "burst")
    b_theirs = next(s for s in theirs if s.name == "burst")
    f_ours = next(s for s in ours if s.name == "failover")
    client = (b_ours.client.get("agree", 0) + b_theirs.client.get("agree", 0),
              b_ours.client.get("asked", 0) + b_theirs.client.get("asked", 0))
    log(f"karmada: burst, karmada-place agrees with karmada-scheduler: ours {b_ours.client.get('agree', 0)}/"
        f"{b_ours.client.get('asked', 0)}, Karmada's estimator {b_theirs.client.get('agree', 0)}/"
        f"{b_theirs.client.get('asked', 0)} (of {b_ours.client.get('jobs', 0)} jobs each; disagreements whose inputs "
        f"differed from Karmada's: {b_ours.client.get('explained', 0)}, {b_theirs.client.get('explained', 0)})")
    line = wl.karmada_line(versions["KARMADA_VERSION"], t_ours, t_theirs,
                           (b_ours.overcommitted, b_theirs.overcommitted), f_ours.moved_whole, client)
    # The goals hold where the set-up is the one the issue asks for; the seed failures are
    # misconfigurations no estimator can undo (reported side by side above).
    set_up = [s for s in ours if not s.name.startswith("failure")]
    ok = (sum(s.tally().pending for s in set_up) == 0 and sum(s.tally().copied for s in set_up) == 0
          and b_ours.overcommitted == 0 and f_ours.moved_whole == f_ours.moved)
    return {"line": line, "ok": ok, "seconds": round(time.monotonic() - started, 1),
            "ours": [_plain(s) for s in ours], "karmada": [_plain(s) for s in theirs],
            "todo": "",
            "client": {"ours": b_ours.client, "karmada": b_theirs.client}}


def run_process(bin_dir: Path, work: Path, versions: dict, log=print) -> dict:
    """`run` in a process of its own (`python -m e2e.harness.karmadacp`), as judge.run_process:
    beside other phases a thread would share their interpreter lock. Progress lines go to this
    process's output; the result is the dict `run` returns."""
    work.mkdir(parents=True, exist_ok=True)
    out = work.parent / f"{work.name}-result.json"
    out.unlink(missing_ok=True)
    done = subprocess.run([sys.executable, "-m", "e2e.harness.karmadacp", "--bin-dir", str(bin_dir), "--work", str(work),
                           "--json", str(out), "--quiet"], stdin=subprocess.DEVNULL, check=False)
    if not out.exists():
        raise RuntimeError(f"the Karmada control-plane phase exited {done.returncode} without a result (see its output above)")
    return json.loads(out.read_text())


def _plain(s: Scenario) -> dict:
    d = asdict(s)
    d["tally"] = asdict(s.tally())
    return d
