"""Placement parity: `karmada-place --karmada-compatible` against Karmada's own scheduler.

For each seeded random fleet (2-5 members) the same Cluster objects, PropagationPolicy, job and
accurate-estimator addresses go to `karmada-schedule` (Karmada's generic scheduler, our Go
runner) and to `karmada-place --karmada-compatible -o json`. Equal means the same set of
(target cluster, replicas), or both placing nothing. Karmada is asked several times per fleet
(its cluster lister's order changes between calls); our answer must be one of its outcomes.

Members are small seeded states served by our estimator in snapshot mode. The estimator
processes are started once for a pool of members and reused by every fleet; one pool member's
estimator is started and then stopped, so fleets that include it have a down estimator, and some
fleets leave a member without any estimator (both make Karmada fall back to the general
estimator for every member).

Run alone: `python -m e2e.harness.placement --fleets 50` (needs the karmada-schedule binary).
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from e2e.harness.estimators import Running
from e2e.harness.members import GPU, NAMESPACES, generate
from e2e.harness.procs import install_signal_handlers, stop_all, wait_for
from scheduler_client.launch import free_port
from estimator.core.resources import parse_quantity

REPO = Path(__file__).resolve().parents[2]
KIND = {"PyTorchJob": ("kubeflow.org/v1", "pytorchjobs"), "Deployment": ("apps/v1", "deployments")}
POOL = 6  # members with a live estimator; one more whose estimator is stopped
REPEAT = 3


@dataclass
class Tally:
    fleets: int = 0
    equal: int = 0
    mismatches: list[str] = field(default_factory=list)
    order_dependent: int = 0  # fleets where Karmada's repeats disagreed (information)
    placed: int = 0
    error_text_differs: int = 0
    # How often each case was exercised, so a run shows what its equality covered.
    cases: dict[str, int] = field(default_factory=dict)

    def saw(self, case: str, yes: bool) -> None:
        if yes:
            self.cases[case] = self.cases.get(case, 0) + 1


def _q(text: str) -> float:
    """A Kubernetes quantity as a float (enough for summaries: both tools read the same numbers)."""
    return float(parse_quantity(str(text)))


def snapshot_objects(seed: int) -> list[dict]:
    state = generate(seed, max_nodes=5)
    return [*state.nodes, *state.pods, *state.quotas]


def resource_summary(objects: list[dict]) -> dict:
    """Cluster totals as Karmada's cluster status controller reports them (schedulable nodes'
    allocatable; requests of bound pods that are not finished)."""
    alloc: dict[str, float] = {}
    used: dict[str, float] = {"pods": 0.0}
    for o in objects:
        if o["kind"] == "Node" and not o["spec"].get("unschedulable"):
            for k, v in o["status"]["allocatable"].items():
                alloc[k] = alloc.get(k, 0.0) + _q(v)
        elif o["kind"] == "Pod" and o["spec"].get("nodeName") and o["status"]["phase"] in ("Running", "Pending"):
            used["pods"] += 1
            for c in o["spec"]["containers"]:
                for k, v in c.get("resources", {}).get("requests", {}).items():
                    used[k] = used.get(k, 0.0) + _q(v)

    def fmt(name: str, value: float) -> str:
        return f"{int(round(value * 1000))}m" if name == "cpu" else str(int(value))
    return {"allocatable": {k: fmt(k, v) for k, v in alloc.items() if k != "ephemeral-storage"},
            "allocated": {k: fmt(k, v) for k, v in used.items()}}


class Pool:
    """Our estimators, one per pool member, started once for every fleet."""

    def __init__(self, work: Path, seed: int, log=print):
        self.work, self.seed, self.log = work, seed, log
        self.members: dict[str, list[dict]] = {}
        self.running: dict[str, Running] = {}
        self.down: dict[str, str] = {}

    def start(self) -> "Pool":
        self.work.mkdir(parents=True, exist_ok=True)
        exe = Path(sys.executable).parent / "karmada-estimator"
        pending = []
        for i in range(POOL + 1):
            name = f"member-{i}"
            objects = snapshot_objects(self.seed * 1000 + i)
            self.members[name] = objects
            path = self.work / f"{name}.json"
            path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": objects}))
            port, health = free_port(), free_port()
            argv = [exe, "--cluster-name", name, "--objects", path, "--server-port", port,
                    "--server-bind-address", "127.0.0.1", "--health-probe-bind-address", f"127.0.0.1:{health}",
                    "--metrics-bind-address", "0"]
            est = Running(f"placement-{name}", argv, self.work, port, health)
            est.proc.start()
            pending.append((name, est))
        for name, est in pending:
            wait_for(f"{est.name} ready", est._ready, 300, est.proc, every=0.3)
            self.running[name] = est
        # The last member's estimator goes away: its address is then a down estimator.
        name, est = pending[-1]
        est.stop()
        del self.running[name]
        self.down[name] = f"127.0.0.1:{est.port}"
        return self

    def address(self, name: str) -> str:
        return self.down.get(name) or f"127.0.0.1:{self.running[name].port}"

    def stop(self) -> None:
        for est in self.running.values():
            est.stop()


def _cluster(name: str, objects: list[dict], rng: random.Random, kind: str) -> dict:
    summary = resource_summary(objects)
    if rng.random() < 0.2:  # the summary lags the member: the general estimator sees other numbers
        summary["allocated"]["cpu"] = f"{int(_q(summary['allocated'].get('cpu', '0')) * 1000) + rng.choice((500, 4000, 16000))}m"
    kinds = [KIND[kind]] if rng.random() > 0.07 else []  # a member that does not serve the kind
    kinds.append(KIND["Deployment"] if kind != "Deployment" else ("v1", "configmaps"))
    groups: dict[str, list] = {}
    for gv, resource in kinds:
        groups.setdefault(gv, []).append({"name": resource, "kind": {"pytorchjobs": "PyTorchJob",
                                                                      "deployments": "Deployment",
                                                                      "configmaps": "ConfigMap"}[resource]})
    spec: dict = {"syncMode": "Push"}
    status = {"conditions": [{"type": "Ready", "status": "True", "reason": "ClusterReady", "message": "",
                              "lastTransitionTime": "2025-01-01T00:00:00Z"}],
              "apiEnablements": [{"groupVersion": gv, "resources": rs} for gv, rs in groups.items()],
              "resourceSummary": summary}
    if rng.random() < 0.3:  # resource models: the general estimator counts grades instead of totals
        spec["resourceModels"] = [
            {"grade": 0, "ranges": [{"name": "cpu", "min": "0", "max": "2"}, {"name": "memory", "min": "0", "max": "4Gi"}]},
            {"grade": 1, "ranges": [{"name": "cpu", "min": "2", "max": "8"}, {"name": "memory", "min": "4Gi", "max": "32Gi"}]},
            {"grade": 2, "ranges": [{"name": "cpu", "min": "8", "max": "1024"},
                                    {"name": "memory", "min": "32Gi", "max": "4096Gi"}]}]
        status["resourceSummary"]["allocatableModelings"] = [
            {"grade": g, "count": rng.randint(0, 4)} for g in range(3)]
    labels = {"tier": rng.choice(("gold", "silver"))}
    return {"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
            "metadata": {"name": name, "labels": labels}, "spec": spec, "status": status}


def _container(rng: random.Random, gpu: bool) -> dict:
    requests = {"cpu": rng.choice(("100m", "500m", "1", "2", "4")), "memory": rng.choice(("256Mi", "1Gi", "4Gi"))}
    resources: dict = {"requests": requests}
    if gpu:
        requests[GPU] = "1"
        resources["limits"] = {GPU: "1"}
    return {"name": "main", "image": "registry.invalid/app:1", "resources": resources}


def _workload(rng: random.Random, kind: str, namespace: str) -> dict:
    meta = {"name": "job", "namespace": namespace}
    if kind == "Deployment":
        return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta,
                "spec": {"replicas": rng.randint(1, 6), "selector": {"matchLabels": {"app": "job"}},
                         "template": {"metadata": {"labels": {"app": "job"}},
                                      "spec": {"containers": [_container(rng, rng.random() < 0.2)]}}}}
    specs = {"Master": {"replicas": 1, "restartPolicy": "OnFailure",
                        "template": {"spec": {"containers": [_container(rng, False)]}}}}
    if rng.random() < 0.85:
        specs["Worker"] = {"replicas": rng.randint(1, 4), "restartPolicy": "OnFailure",
                           "template": {"spec": {"containers": [_container(rng, rng.random() < 0.3)]}}}
    return {"apiVersion": "kubeflow.org/v1", "kind": "PyTorchJob", "metadata": meta,
            "spec": {"pytorchReplicaSpecs": specs}}


def _policy(rng: random.Random, kind: str, namespace: str, names: list[str]) -> dict:
    gv = KIND[kind][0]
    placement: dict = {}
    if rng.random() < 0.6:
        placement["spreadConstraints"] = [{"spreadByField": "cluster", "minGroups": 1, "maxGroups": 1}]
    roll = rng.random()
    if roll < 0.45:
        placement["replicaScheduling"] = {"replicaSchedulingType": "Divided",
                                          "replicaDivisionPreference": "Aggregated"}
    elif roll < 0.6:
        placement["replicaScheduling"] = {"replicaSchedulingType": "Divided"}
    elif roll < 0.8:
        placement["replicaScheduling"] = {"replicaSchedulingType": "Duplicated"}
    roll = rng.random()
    if roll < 0.2:
        placement["clusterAffinity"] = {"labelSelector": {"matchLabels": {"tier": "gold"}}}
    elif roll < 0.35:
        placement["clusterAffinity"] = {"clusterNames": sorted(rng.sample(names, rng.randint(1, len(names))))}
    return {"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
            "metadata": {"name": "job", "namespace": namespace},
            "spec": {"resourceSelectors": [{"apiVersion": gv, "kind": kind}], "placement": placement}}


@dataclass
class Fleet:
    seed: int
    clusters: list[dict]
    estimators: dict[str, str]
    policy: dict
    workload: dict
    gates: dict[str, bool]

    def describe(self) -> str:
        return json.dumps({"seed": self.seed, "featureGates": self.gates, "estimators": self.estimators,
                           "clusters": [{"name": c["metadata"]["name"], "labels": c["metadata"]["labels"],
                                         "kinds": [r["kind"] for g in c["status"]["apiEnablements"] for r in g["resources"]],
                                         "resourceSummary": c["status"]["resourceSummary"],
                                         "resourceModels": bool(c["spec"].get("resourceModels"))}
                                        for c in self.clusters],
                           "policy": self.policy["spec"]["placement"], "workload": self.workload["spec"]},
                          sort_keys=True)


def make_fleet(pool: Pool, seed: int) -> Fleet:
    rng = random.Random(seed)
    live = sorted(pool.running)
    candidates = live + (sorted(pool.down) if rng.random() < 0.15 else [])
    names = sorted(rng.sample(candidates, min(len(candidates), rng.randint(2, 5))))
    # karmada-place reads multi-component jobs only (it refuses a Deployment), so every fleet's job
    # is a PyTorchJob; one without workers is the single-template case.
    kind = "PyTorchJob"
    namespace = rng.choice(NAMESPACES)
    clusters = [_cluster(n, pool.members[n], rng, kind) for n in names]
    estimators = {n: pool.address(n) for n in names}
    if rng.random() < 0.12:  # a member registered without an estimator
        del estimators[rng.choice(names)]
    gates = {"MultiplePodTemplatesScheduling": rng.random() < 0.7}
    return Fleet(seed, clusters, estimators, _policy(rng, kind, namespace, names), _workload(rng, kind, namespace), gates)


def _targets(items) -> frozenset:
    return frozenset((t["name"], int(t.get("replicas", 0))) for t in items or [])


def karmada_decision(binary: Path, fleet: Fleet) -> dict:
    request = {"featureGates": fleet.gates, "clusters": fleet.clusters,
               "estimators": {n: {"address": a} for n, a in fleet.estimators.items()},
               "timeout": "3s", "policy": fleet.policy, "workload": fleet.workload, "repeat": REPEAT}
    out = subprocess.run([str(binary)], input=json.dumps(request), capture_output=True, text=True, timeout=180)
    if out.returncode != 0:
        raise RuntimeError(f"karmada-schedule exited {out.returncode} on fleet {fleet.seed}: {out.stderr.strip()[:2000]}")
    return json.loads(out.stdout)


def ours_decision(fleet: Fleet, work: Path) -> dict:
    d = work / f"fleet-{fleet.seed}"
    d.mkdir(parents=True, exist_ok=True)
    (d / "clusters.json").write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": fleet.clusters}))
    (d / "policy.json").write_text(json.dumps(fleet.policy))
    (d / "job.json").write_text(json.dumps(fleet.workload))
    gates = ",".join(f"{k}={'true' if v else 'false'}" for k, v in fleet.gates.items())
    argv = [str(Path(sys.executable).parent / "karmada-place"), "--job", str(d / "job.json"),
            "--policy", str(d / "policy.json"), "--clusters", str(d / "clusters.json"),
            *[a for n, addr in fleet.estimators.items() for a in ("--estimator", f"{n}={addr}")],
            "--karmada-compatible", "--feature-gates", gates, "--estimator-timeout", "3s", "-o", "json"]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=180)
    if out.returncode not in (0, 3):
        return {"exit": out.returncode, "stderr": out.stderr.strip()[:2000], "targets": None}
    data = json.loads(out.stdout)
    data["exit"] = out.returncode
    return data


def run(binary: Path, work: Path, fleets: int, seed: int, log=print) -> Tally:
    tally = Tally()
    if not binary.exists():
        raise FileNotFoundError(f"{binary} is missing: `make e2e-karmada` builds it")
    started = time.monotonic()
    pool = Pool(work / "pool", seed, log).start()
    log(f"e2e: placement: {len(pool.running)} estimators of ours up (+1 stopped) "
        f"({time.monotonic() - started:.0f} s)")
    try:
        for i in range(fleets):
            fleet = make_fleet(pool, seed * 100000 + i)
            theirs = karmada_decision(binary, fleet)
            ours = ours_decision(fleet, work)
            tally.fleets += 1
            placement = fleet.policy["spec"]["placement"]
            tally.saw("down estimator", any(n in pool.down for n in fleet.estimators))
            tally.saw("member without estimator", len(fleet.estimators) < len(fleet.clusters))
            tally.saw("accurate answers dropped", bool((ours.get("karmada") or {}).get("accurateDropped")))
            tally.saw("spread {cluster,1,1}", "spreadConstraints" in placement)
            tally.saw("Duplicated", placement.get("replicaScheduling", {}).get("replicaSchedulingType") == "Duplicated")
            tally.saw("no replicaScheduling", "replicaScheduling" not in placement)
            tally.saw("cluster affinity", "clusterAffinity" in placement)
            tally.saw("resource models", any(c["spec"].get("resourceModels") for c in fleet.clusters))
            tally.saw("MultiplePodTemplatesScheduling on", fleet.gates["MultiplePodTemplatesScheduling"])
            outcomes = [_targets(o.get("targets")) for o in theirs.get("outcomes", [])] or [_targets(theirs.get("targets"))]
            if len(set(outcomes)) > 1:
                tally.order_dependent += 1
            mine = None if ours.get("targets") is None else _targets(ours["targets"])
            if mine is not None and mine in outcomes:
                tally.equal += 1
                tally.placed += bool(mine)
                if not mine:
                    k_err, o_err = theirs.get("error", ""), (ours.get("karmada") or {}).get("error", "")
                    if sorted(k_err.split()) != sorted(o_err.split()):
                        tally.error_text_differs += 1
                        log(f"e2e: placement note: fleet {fleet.seed}: both place nothing; error texts differ: "
                            f"Karmada {k_err!r}, ours {o_err!r}")
            else:
                ours_show = ({k: ours.get(k) for k in ("exit", "stderr")} if mine is None else
                             {"targets": ours["targets"], "error": ours["karmada"].get("error"),
                              "paths": ours["karmada"].get("paths"), "accurateDropped": ours["karmada"].get("accurateDropped"),
                              "members": [{k: m.get(k) for k in ("name", "estimates", "sets", "verdict")}
                                          for m in ours.get("members", [])]})
                text = (f"fleet {fleet.seed}: {fleet.describe()}\n  karmada: "
                        f"{json.dumps({k: theirs.get(k) for k in ('targets', 'error', 'outcomes', 'connections')})}\n"
                        f"  karmada-place: {json.dumps(ours_show)}")
                tally.mismatches.append(text)
                log(f"e2e: PLACEMENT MISMATCH {text}")
            if (i + 1) % 10 == 0:
                log(f"e2e: placement: {i + 1}/{fleets} fleets, {tally.equal} equal "
                    f"({time.monotonic() - started:.0f} s)")
    finally:
        pool.stop()
    log(f"e2e: placement: {tally.equal}/{tally.fleets} fleets as Karmada's scheduler ({tally.placed} placed "
        f"something; {tally.order_dependent} where Karmada's repeats differed; {tally.error_text_differs} "
        f"no-placement error texts differing); fleets per case: "
        + ", ".join(f"{k} {v}" for k, v in tally.cases.items()))
    return tally


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m e2e.harness.placement", description=__doc__.split("\n\n")[0])
    p.add_argument("--fleets", type=int, default=50)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--bin", type=Path, default=None, help="karmada-schedule binary (default .e2e/bin/karmada-schedule-VERSION)")
    p.add_argument("--work", type=Path, default=REPO / ".e2e" / "run-placement")
    args = p.parse_args(argv)
    install_signal_handlers()
    if args.bin is None:
        from e2e.harness.versions import versions
        args.bin = REPO / ".e2e" / "bin" / f"karmada-schedule-{versions()['KARMADA_VERSION']}"
    try:
        tally = run(args.bin, args.work, args.fleets, args.seed)
    finally:
        stop_all()
    return 0 if tally.equal == tally.fleets else 1


if __name__ == "__main__":
    sys.exit(main())
