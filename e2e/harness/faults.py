"""Faults on the real apiserver; after each, ours must converge and agree with Karmada's.

Each fault runs on a populated member, disturbs it, and is timed on our first-fit
estimator (e2e/harness/faultmeasure.py): detected = the first failure it counted in its
/metrics, converged = the first moment its live answers equalled the snapshot-mode
answers of the objects dumped from the apiserver after the fault. Every fault ends with
changes that move those answers (pods filling nodes until the reference answers differ
from the ones before), so converging means the changes arrived, not that nothing moved.
Then the member is judged exactly as the differential does (first-fit parity and
best-mode checks against Karmada's estimator).

The dead link needs a fourth estimator of ours whose only way to the apiserver is a TCP
relay that silences its open connections (no FIN, no RST); it waits up to a watch's
deadline, so it runs in a thread alongside whatever the caller does next (the placement
check, which does not use the apiserver), and FaultRun.finish() collects it.
"""

from __future__ import annotations

import json
import random
import threading
import time
import traceback
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from kubernetes.utils import parse_quantity

from e2e.harness import faultmeasure, oracle
from e2e.harness.cluster import KubeBed
from e2e.harness.differential import Differential
from e2e.harness.estimators import Running, ours
from e2e.harness.faultmeasure import Row, Timing, time_fault
from e2e.harness.members import NAMESPACES, MemberState, _pod, generate

REPO = Path(__file__).resolve().parents[2]
LIMIT = 90.0  # seconds a fault may take to converge before it counts as failed
DEAD_LINK_LIMIT = 120.0  # the goal is 60 s; past twice that it is a failure, not a slow row


@dataclass
class FaultResult:
    name: str
    converged: bool
    detail: str = ""
    row: Row | None = None


# -- probes ---------------------------------------------------------------------------------

def _metrics_url(est: Running) -> str:
    argv = est.proc.argv
    return f"http://{argv[argv.index('--metrics-bind-address') + 1]}/metrics"


def _exposition(est: Running) -> str:
    with urllib.request.urlopen(_metrics_url(est), timeout=5) as response:
        return response.read().decode()


def _counters(est: Running) -> dict[str, float]:
    return faultmeasure.counters(_exposition(est))


def _failures(est: Running):
    def probe() -> float:
        for _ in range(3):
            try:
                return faultmeasure.failures(_exposition(est))
            except OSError:
                time.sleep(0.2)
        return float("nan")  # compares false both ways: a failed scrape is neither a detection nor a baseline
    return probe


@dataclass
class Snap:
    ref: oracle.Reference
    first_fit: dict
    answers: tuple


def _snap(diff: Differential, state: MemberState, name: str) -> Snap:
    path = diff.work / f"fault-{name}.json"
    diff.pop.dump(path)
    ref = oracle.Reference(path)
    ff = {i: ref.sets(q)[0] for i, q in enumerate(state.sets_queries)}
    answers = (tuple(ref.replicas(q) for q in state.replicas_queries),
               tuple(ref.unschedulable(r) for r in state.workload_refs), tuple(ff[i] for i in sorted(ff)))
    return Snap(ref, ff, answers)


def _differences(diff: Differential, est: Running, state: MemberState, box: dict):
    def probe() -> list[str] | None:
        if "error" in box:
            raise box["error"]
        snap = box.get("snap")
        return None if snap is None else diff._live_matches(est, state, snap.ref, snap.first_fit)
    return probe


# -- changes --------------------------------------------------------------------------------

def _add_pods(diff: Differential, state: MemberState, rng: random.Random, count: int, tag: str) -> list[tuple[str, str]]:
    made = []
    nodes = diff.pop.core.list_node().items
    if not nodes:
        return made
    for k in range(count):
        node = rng.choice(nodes)
        fake = {"metadata": {"name": node.metadata.name}, "status": {"allocatable": dict(node.status.allocatable or {})}}
        pod = _pod(rng, f"{tag}-{k}", rng.choice(NAMESPACES), fake, "Running")
        diff.pop.create_pod(pod)
        made.append((pod["metadata"]["namespace"], pod["metadata"]["name"]))
    return made


def _bound_pod(name: str, node: str, requests: dict, containers: int = 1) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NAMESPACES[0]},
            "spec": {"nodeName": node, "tolerations": [{"operator": "Exists"}], "containers": [
                {"name": f"c{i}", "image": "registry.invalid/app:1", "resources": {"requests": dict(requests)}}
                for i in range(containers)]},
            "status": {"phase": "Running"}}


def _fill_until_changed(diff: Differential, state: MemberState, before: tuple, tag: str) -> tuple[Snap, int]:
    """Bind pods taking a whole node's CPU, biggest node first, until the reference answers
    differ from `before`; returns the reference after them and how many it took."""
    nodes = diff.pop.core.list_node().items
    nodes.sort(key=lambda n: (-parse_quantity((n.status.allocatable or {}).get("cpu", "0")), n.metadata.name))
    snap = None
    for k, node in enumerate(nodes):
        cpu = (node.status.allocatable or {}).get("cpu", "0")
        diff.pop.create_pod(_bound_pod(f"{tag}-fill-{k}", node.metadata.name, {"cpu": cpu}))
        snap = _snap(diff, state, tag)
        if snap.answers != before:
            return snap, k + 1
    return snap or _snap(diff, state, tag), len(nodes)


# -- judging --------------------------------------------------------------------------------

def _judge(diff: Differential, state: MemberState, label: str, timing: Timing, expects_failure: bool,
           detail: str) -> FaultResult:
    t = diff.tally
    before = (t.mismatches, t.reference_wrong)
    ok = diff.run_state(state, fresh=False)  # first-fit parity with Karmada, best mode, both converge
    equal = (t.mismatches, t.reference_wrong) == before if timing.converged is not None else None
    converged = timing.converged is not None and ok
    if timing.converged is None:
        detail += f"; still differing after the limit: {timing.differences[:2]}"
    return FaultResult(label, converged, detail, Row(label, timing, expects_failure, equal))


# -- the faults -----------------------------------------------------------------------------

def pod_churn(diff: Differential, state: MemberState, seconds: float = 6.0) -> FaultResult:
    """Pods created and deleted continuously while all three estimators keep answering."""
    rng = random.Random(state.seed)
    stop = threading.Event()
    errors: list[str] = []
    churned = [0]

    def churn():
        live: list[tuple[str, str]] = []
        i = 0
        while not stop.is_set():
            try:
                live += _add_pods(diff, state, rng, 3, f"churn{i}")
                i += 1
                while len(live) > 12:
                    ns, name = live.pop(rng.randrange(len(live)))
                    diff.pop.core.delete_namespaced_pod(name, ns, grace_period_seconds=0)
                churned[0] += 4
            except Exception as error:  # noqa: BLE001 - reported below
                errors.append(f"churn: {error}")
                return

    before = _snap(diff, state, "churn").answers
    thread = threading.Thread(target=churn, daemon=True)
    thread.start()
    calls = 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for est in (diff.ours_ff, diff.ours_best, diff.karmada):
            if est is None:
                continue
            for q in state.sets_queries:
                answer = est.sets(q, timeout=10)
                calls += 1
                if answer.value is None:
                    errors.append(f"{est.name} failed during churn: {answer.error}")
    stop.set()
    thread.join(30)
    box: dict = {}

    def inject(since) -> None:  # timed from the last change: the churn ends with the fill
        box["snap"], box["fills"] = _fill_until_changed(diff, state, before, "churn")

    timing = time_fault(inject, _failures(diff.ours_ff), _differences(diff, diff.ours_ff, state, box), LIMIT)
    label = "pods created and deleted for 6 s while answering"
    result = _judge(diff, state, label, timing, False,
                    f"{calls} calls during ~{churned[0]} pod events; errors: {errors[:3]}")
    result.converged &= not errors
    return result


def _in_background(box: dict, changes) -> None:
    """Make the changes in a thread, so detection is polled while they are being made; the
    reference they end with goes to box["snap"] (or their error to box["error"])."""
    def run() -> None:
        try:
            changes()
        except Exception as error:  # noqa: BLE001 - raised by the differences probe
            box["error"] = error
    threading.Thread(target=run, daemon=True).start()


def _restart_in_background(bed: KubeBed, diff: Differential, state: MemberState, before: tuple, box: dict,
                           rng: random.Random, tag: str, since) -> None:
    def run() -> None:
        try:
            bed.start_apiserver()
            box["back"] = since()
            _add_pods(diff, state, rng, 4, f"{tag}-pods")
            box["snap"], box["fills"] = _fill_until_changed(diff, state, before, tag)
        except Exception as error:  # noqa: BLE001 - raised by the differences probe
            box["error"] = error
    threading.Thread(target=run, daemon=True).start()


def apiserver_kill9(diff: Differential, bed: KubeBed, state: MemberState) -> FaultResult:
    """kill -9 of the apiserver, changes after its restart; every estimator must catch up."""
    before = _snap(diff, state, "kill9").answers
    box: dict = {}

    def inject(since) -> None:
        bed.apiserver.kill9()
        _restart_in_background(bed, diff, state, before, box, random.Random(state.seed + 1), "after-restart", since)

    timing = time_fault(inject, _failures(diff.ours_ff), _differences(diff, diff.ours_ff, state, box), LIMIT)
    timing.back = box.get("back")
    return _judge(diff, state, "kill -9 of kube-apiserver, restarted at once", timing, True,
                  f"apiserver back after {timing.back} s; {box.get('fills')} filler pods moved the answers")


def compaction_410(diff: Differential, bed: KubeBed, state: MemberState) -> FaultResult:
    """Changes, etcd compaction at the head revision, apiserver restart: resumed watches get 410."""
    rng = random.Random(state.seed + 2)
    made = _add_pods(diff, state, rng, 6, "before-compact")
    for ns, name in made[:3]:
        diff.pop.core.delete_namespaced_pod(name, ns, grace_period_seconds=0)
    before = _snap(diff, state, "compact").answers
    gone_before = _counters(diff.ours_ff).get(faultmeasure.PREFIX + "relists_gone_total", 0)
    box: dict = {}

    def inject(since) -> None:
        box["revision"] = bed.compact_etcd()
        bed.apiserver.kill9()
        _restart_in_background(bed, diff, state, before, box, rng, "after-compact", since)

    timing = time_fault(inject, _failures(diff.ours_ff), _differences(diff, diff.ours_ff, state, box), LIMIT)
    timing.back = box.get("back")
    gone = _counters(diff.ours_ff).get(faultmeasure.PREFIX + "relists_gone_total", 0) - gone_before
    return _judge(diff, state, "etcd compacted at its head, kube-apiserver killed and restarted (410 on resume)",
                  timing, True, f"compacted at revision {box.get('revision')}; our first-fit estimator relisted "
                  f"{gone:.0f} kinds after 410 Gone; {box.get('fills')} filler pods moved the answers")


def node_deletion(diff: Differential, state: MemberState) -> FaultResult:
    """Nodes deleted while pods stay bound to them."""
    pods = diff.pop.core.list_pod_for_all_namespaces().items
    bound = sorted({p.spec.node_name for p in pods if p.spec.node_name})
    victims = bound[: max(1, len(bound) // 3)]
    before = _snap(diff, state, "nodes").answers
    box: dict = {}

    def changes() -> None:
        for name in victims:
            diff.pop.core.delete_node(name, grace_period_seconds=0)
        box["snap"] = _snap(diff, state, "nodes")

    def inject(since) -> None:
        _in_background(box, changes)

    timing = time_fault(inject, _failures(diff.ours_ff), _differences(diff, diff.ours_ff, state, box), LIMIT)
    changed = "snap" in box and box["snap"].answers != before
    return _judge(diff, state, "nodes deleted with pods still bound", timing, False,
                  f"deleted {victims}; answers moved: {'yes' if changed else 'no'}")


def hostile_pods(diff: Differential, state: MemberState) -> FaultResult:
    """A pod whose two containers ask ephemeral-storage 8E each (the sum is beyond int64),
    bound to a node through the API; then ordinary pods that must show up."""
    nodes = sorted(n.metadata.name for n in diff.pop.core.list_node().items)
    box: dict = {}

    def changes() -> None:
        diff.pop.create_pod(_bound_pod("hostile-8e", nodes[0], {"ephemeral-storage": "8E"}, containers=2))
        after_hostile = _snap(diff, state, "hostile").answers
        box["snap"], box["fills"] = _fill_until_changed(diff, state, after_hostile, "after-hostile")

    def inject(since) -> None:
        _in_background(box, changes)

    saturated = faultmeasure.PREFIX + "saturated_objects_total"
    count_before = _counters(diff.ours_ff).get(saturated, 0)
    timing = time_fault(inject, _failures(diff.ours_ff), _differences(diff, diff.ours_ff, state, box), LIMIT)
    count = _counters(diff.ours_ff).get(saturated, 0) - count_before
    return _judge(diff, state, "pod bound through the API with 2 x ephemeral-storage 8E, then ordinary pods",
                  timing, True, f"our estimator counted {count:.0f} saturated objects; {box.get('fills')} "
                  "ordinary pods after it moved the answers")


def _relay_class():
    """The relay of the tests (tests/cluster/test_watch_deadlink.py), reused rather than copied."""
    from tests.cluster.test_watch_deadlink import Relay  # noqa: PLC0415 - test-tree module, imported on use
    return Relay


class Relayed:
    """A TCP relay to the apiserver and a first-fit estimator of ours reaching it only
    through the relay, started in a thread (an estimator takes seconds to load its kernels)
    while other faults run."""

    def __init__(self, diff: Differential, bed: KubeBed):
        self.relay = _relay_class()(bed.port)
        self.work = diff.work / "dead-link"
        self.work.mkdir(exist_ok=True)
        config = json.loads(bed.kubeconfig.read_text())
        config["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{self.relay.port}"
        kubeconfig = self.work / "kubeconfig"
        kubeconfig.write_text(json.dumps(config))
        self.est = ours(kubeconfig, self.work, "first-fit", name="ours-first-fit-relay")
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._start, name="relayed-estimator", daemon=True)
        self._thread.start()

    def _start(self) -> None:
        try:
            self.est.start()
        except BaseException as error:  # noqa: BLE001 - raised by ready()
            self.error = error

    def ready(self) -> Running:
        self._thread.join()
        if self.error is not None:
            raise self.error
        return self.est

    def stop(self) -> None:
        self._thread.join()
        self.est.stop()
        self.relay.close()


def dead_link(diff: Differential, relayed: Relayed, state: MemberState, log=print) -> FaultResult:
    """Our estimator reaches the apiserver only through a relay; the relay silences its open
    connections (TCP still acknowledges, no byte passes, nothing is closed), then the member
    changes. The estimator must notice and converge through a fresh connection."""
    relay = relayed.relay
    try:
        est = relayed.ready()
        judge = Differential(diff.pop, relayed.work, est, diff.ours_best, diff.karmada, diff.regressions, log)
        judge.tally = diff.tally  # its verdicts count in the closing line
        start = _snap(judge, state, "dead-link")
        lag = judge.converge(est, state, start.ref, start.first_fit, timeout=60)
        if lag:
            return FaultResult("dead link", False, f"the relayed estimator never converged before the fault: {lag[:2]}")
        box: dict = {}
        opened = relay.connections

        def inject(since) -> None:
            relay.silence()
            box["snap"], box["fills"] = _fill_until_changed(judge, state, start.answers, "after-silence")

        timing = time_fault(inject, _failures(est), _differences(judge, est, state, box), DEAD_LINK_LIMIT)
        errors = faultmeasure.labelled(_exposition(est), faultmeasure.PREFIX + "errors_total", "reason")
        return _judge(judge, state, "link silenced without FIN/RST (TCP relay; the kernel still acknowledges)",
                      timing, True, f"{relay.connections - opened} new connections through the relay; "
                      f"{box.get('fills')} filler pods moved the answers; watch failures by reason {errors}")
    finally:
        relayed.stop()


class FaultRun:
    """The faults run so far, and the dead link still running in its thread."""

    def __init__(self, results: list[FaultResult], log):
        self.results, self.log = results, log
        self._late: list[FaultResult] = []
        self._thread: threading.Thread | None = None
        self._done: list[FaultResult] | None = None

    def start_late(self, name: str, step) -> None:
        def run() -> None:
            try:
                result = step()
            except Exception as error:  # noqa: BLE001 - a fault that cannot be run is a failed fault
                result = FaultResult(name, False, _failure(error))
            _report(result, self.log)
            self._late.append(result)
        self._thread = threading.Thread(target=run, name=f"fault-{name}", daemon=True)
        self._thread.start()

    def finish(self, timeout: float = 600) -> list[FaultResult]:
        """Wait for the dead link, print the fault table; every fault's result."""
        if self._done is not None:
            return self._done
        if self._thread is not None:
            self._thread.join(timeout)
            if self._thread.is_alive():
                self._late.append(FaultResult("dead link", False, f"still running after {timeout:.0f} s"))
        done = self.results + self._late
        rows = [r.row for r in done if r.row is not None]
        self.log("e2e: fault table (real kube-apiserver; detected/converged timed on our first-fit estimator):")
        self.log(faultmeasure.table(rows))
        self._done = done
        return done

    # A caller that treats the run as the list of results waits for the dead link there.
    def __iter__(self):
        return iter(self.finish())

    def __len__(self) -> int:
        return len(self.finish())


def _failure(error: BaseException) -> str:
    where = traceback.extract_tb(error.__traceback__)[-1]
    return f"{type(error).__name__}: {error} (at {Path(where.filename).name}:{where.lineno})"


def _report(result: FaultResult, log) -> None:
    log(f"e2e: fault {result.name}: {'converged' if result.converged else 'FAILED'} {result.detail}")


def _member(seed: int) -> tuple[MemberState, int]:
    state = generate(seed, max_nodes=12)
    while len(state.nodes) < 6:  # a member with room for the disturbance to matter
        seed += 1000
        state = generate(seed, max_nodes=12)
    return state, seed


def run_all(diff: Differential, bed: KubeBed, seed: int, log=print) -> FaultRun:
    """Runs the faults one after another, then starts the dead link in a thread: call
    finish() on the result (after other work that leaves the apiserver alone)."""
    results = []
    relayed: list[Relayed] = []
    for name, step in (
        ("churn", lambda s: pod_churn(diff, s)),
        ("kill9", lambda s: apiserver_kill9(diff, bed, s)),
        ("compact", lambda s: compaction_410(diff, bed, s)),
        # After the last apiserver restart: its backoff is not grown by them when the link dies.
        ("relay", None),
        ("nodes", lambda s: node_deletion(diff, s)),
        ("hostile", lambda s: hostile_pods(diff, s)),
    ):
        if step is None:
            relayed.append(Relayed(diff, bed))
            continue
        state, seed = _member(seed)
        diff.pop.clear()
        diff.pop.apply(state)
        try:
            result = step(state)
        except Exception as error:  # noqa: BLE001 - a fault that cannot be run is a failed fault
            result = FaultResult(name, False, _failure(error))
        _report(result, log)
        results.append(result)
        seed += 1
    run = FaultRun(results, log)
    state, seed = _member(seed)

    def late() -> FaultResult:
        diff.pop.clear()
        diff.pop.apply(state)
        return dead_link(diff, relayed[0], state, log)

    run.start_late("dead link", late)
    return run
