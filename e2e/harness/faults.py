"""Faults on the real apiserver; after each, ours must converge and agree with Karmada's.

Each fault runs on a populated member, disturbs it, then judges the member exactly as the
differential does (live answers converge to the snapshot-mode reference of the dumped
objects, first-fit parity and best-mode checks against Karmada's estimator).
"""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass

from e2e.harness.cluster import KubeBed
from e2e.harness.differential import Differential
from e2e.harness.members import NAMESPACES, MemberState, _pod, generate


@dataclass
class FaultResult:
    name: str
    converged: bool
    detail: str = ""


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
    ok = not errors and diff.run_state(state, fresh=False)
    return FaultResult("pod churn while answering", ok,
                       f"{calls} calls during ~{churned[0]} pod events; errors: {errors[:3]}")


def apiserver_kill9(diff: Differential, bed: KubeBed, state: MemberState) -> FaultResult:
    """kill -9 of the apiserver, changes after its restart; every estimator must catch up."""
    bed.restart_apiserver(kill9=True)
    _add_pods(diff, state, random.Random(state.seed + 1), 6, "after-restart")
    ok = diff.run_state(state, fresh=False)
    return FaultResult("kill -9 and restart of the apiserver", ok)


def compaction_410(diff: Differential, bed: KubeBed, state: MemberState) -> FaultResult:
    """Changes, etcd compaction at the head revision, apiserver restart: resumed watches get 410."""
    rng = random.Random(state.seed + 2)
    made = _add_pods(diff, state, rng, 6, "before-compact")
    for ns, name in made[:3]:
        diff.pop.core.delete_namespaced_pod(name, ns, grace_period_seconds=0)
    log_path = diff.ours_ff.proc.log_path
    before = log_path.read_text(errors="replace").count(" 410 ")
    revision = bed.compact_etcd()
    bed.restart_apiserver(kill9=True)
    _add_pods(diff, state, rng, 4, "after-compact")
    ok = diff.run_state(state, fresh=False)
    gone = log_path.read_text(errors="replace").count(" 410 ") - before
    return FaultResult("etcd compaction (410 on resume) + apiserver restart", ok,
                       f"compacted at revision {revision}; our first-fit estimator logged {gone} watch 410s and relisted")


def node_deletion(diff: Differential, state: MemberState) -> FaultResult:
    """Nodes deleted while pods stay bound to them."""
    pods = diff.pop.core.list_pod_for_all_namespaces().items
    bound = sorted({p.spec.node_name for p in pods if p.spec.node_name})
    victims = bound[: max(1, len(bound) // 3)]
    for name in victims:
        diff.pop.core.delete_node(name, grace_period_seconds=0)
    ok = diff.run_state(state, fresh=False)
    return FaultResult("node deletion with pods bound", ok, f"deleted {victims}")


def run_all(diff: Differential, bed: KubeBed, seed: int, log=print) -> list[FaultResult]:
    results = []
    for name, step in (
        ("churn", lambda s: pod_churn(diff, s)),
        ("kill9", lambda s: apiserver_kill9(diff, bed, s)),
        ("compact", lambda s: compaction_410(diff, bed, s)),
        ("nodes", lambda s: node_deletion(diff, s)),
    ):
        state = generate(seed, max_nodes=12)
        while len(state.nodes) < 6:  # a member with room for the disturbance to matter
            seed += 1000
            state = generate(seed, max_nodes=12)
        diff.pop.clear()
        diff.pop.apply(state)
        try:
            result = step(state)
        except Exception as error:  # noqa: BLE001 - a fault that cannot be run is a failed fault
            result = FaultResult(name, False, f"{type(error).__name__}: {error}")
        log(f"e2e: fault {result.name}: {'converged' if result.converged else 'FAILED'} {result.detail}")
        results.append(result)
        seed += 1
    return results
