"""Load test: one estimator process, a 10k-node member, 16 callers, churn, 60 s, 0 errors.

    python -m benchmarks.load                    # the recorded runs (watch, then reload churn) -> RESULTS.md "## Load"
    python -m benchmarks.load --churn watch      # one churn mode only
    python -m benchmarks.load --nodes 300 --seconds 5 --no-write    # smoke run

What runs, each in its own process:
- the member: benchmarks/members.py's seeded synthetic cluster (10k nodes, ~90k pods),
  plus a Deployment with two pods stuck Pending (for GetUnschedulableReplicas);
- churn, one run each (`--churn both`, the default) or one of
  * `watch` (the production path): a fake Kubernetes API server
    (tests/support/fakekube.py) serving the member to the estimator's list/watch, creating and
    deleting pods bound to random nodes at --rate events/s and relabelling a node every
    few seconds, for the whole run;
  * `reload`: the member as --objects files; every --reload-interval seconds a second
    file with a new set of pods is written and the estimator gets SIGHUP;
- the estimator, with the flags the manifests use (--max-concurrent-requests 64,
  --parallelism 16), gRPC on loopback;
- this process: --callers threads on one channel (as karmada-scheduler fans out), each
  calling in a loop for --seconds: 70% MaxAvailableComponentSets over the benchmark
  shapes (some with assumed workloads), 20% MaxAvailableReplicas, 10%
  GetUnschedulableReplicas, every call with a 10 s deadline. Any non-OK answer is an error.

The machine is shared (other engineers run tests on it) and callers, estimator and churn
share its cores, so figures are noisy; the load average at start and end is recorded.
The section's text is in benchmarks/load_report.py.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shlex
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections import Counter, deque
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import grpc
import numpy as np
from grpc_health.v1 import health_pb2, health_pb2_grpc

from benchmarks.members import MemberSpec, ensure
from benchmarks.load_report import RESULTS, SECTION, section, write_section
from benchmarks.resultsmd import percentile
from benchmarks.shapes import NAMESPACE, SHAPES
from estimator.core import model
from estimator.pb import estimator_pb2 as pb
from estimator.pb import service_pb2
from scheduler_client import wire
from scheduler_client.launch import free_port
from tests.support import fakekube  # the fake API server (tests and benchmarks)

REPO = Path(__file__).resolve().parents[1]
SERVICE = service_pb2.DESCRIPTOR.services_by_name["Estimator"].full_name
METADATA = (("object", "kind=PyTorchJob, name=ml-team/load"),)
DEADLINE = 10.0
ESTIMATOR_FLAGS = ["--max-concurrent-requests", "64", "--parallelism", "16", "--log-format", "json"]
STUCK_THRESHOLD_SECONDS = 60.0



# --- the member's extra objects and the churn ---------------------------------------------


def workload_objects() -> list[dict]:
    """web/frontend: a Deployment whose new ReplicaSet has 3 running pods and 2 stuck Pending."""
    labels = {"app": "frontend"}
    deployment = fakekube.deployment_object("web", "frontend", "0b1e5c2a-load-dep", labels, cpu="500m")
    deployment["spec"]["replicas"] = 5
    replicaset = fakekube.replicaset_object("web", "frontend-6d4f", "0b1e5c2a-load-rs", deployment,
                                            template_hash="6d4f", cpu="500m")
    replicaset["spec"]["replicas"] = 5
    owner = {"name": "frontend-6d4f", "uid": "0b1e5c2a-load-rs"}
    pod_labels = {**labels, "pod-template-hash": "6d4f"}
    pods = [fakekube.pod_object("web", f"frontend-6d4f-{i}", node=None if i >= 3 else "__first__", cpu="500m",
                                labels=pod_labels, owner=owner, phase="Pending" if i >= 3 else "Running",
                                unschedulable_since="2024-01-01T00:00:00Z" if i >= 3 else None)
            for i in range(5)]
    return [deployment, replicaset, *pods]


def place_first(objects: list[dict], node: str) -> list[dict]:
    for obj in objects:
        if obj.get("spec", {}).get("nodeName") == "__first__":
            obj["spec"]["nodeName"] = node
    return objects


def churn_pod(rng: random.Random, nodes: list[str], serial: int) -> dict:
    cpu = rng.choice(["100m", "250m", "500m", "1", "2"])
    return fakekube.pod_object("churn", f"churn-{serial:08d}", node=rng.choice(nodes), cpu=cpu,
                               memory=rng.choice(["128Mi", "512Mi", "2Gi"]))


def serve_fake(args) -> int:
    """The `fake-apiserver` subcommand: serve the member and churn it until SIGTERM."""
    member = json.loads(Path(args.member).read_text())["items"]
    nodes = [o["metadata"]["name"] for o in member if o["kind"] == "Node"]
    fake = fakekube.FakeKube(history_limit=200_000, bookmark_interval=1.0).start()
    fake.load(member + place_first(workload_objects(), nodes[0]))
    kubeconfig = fake.kubeconfig(Path(args.ready).parent, "load-member")
    Path(args.ready).write_text(json.dumps({"kubeconfig": str(kubeconfig), "port": fake.port}))

    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    rng = random.Random(args.seed)
    live: deque[str] = deque()
    counts = Counter()
    serial, tick, population = 0, 0.05, args.churn_pods
    next_node_update = time.monotonic() + 3.0
    while not stop.wait(tick):
        for _ in range(max(1, round(args.rate * tick))):
            if len(live) >= population or (live and rng.random() < 0.5):
                fake.delete("Pod", live.popleft(), "churn")
                counts["pod_deleted"] += 1
            else:
                serial += 1
                pod = churn_pod(rng, nodes, serial)
                fake.put(pod)
                live.append(pod["metadata"]["name"])
                counts["pod_created"] += 1
        if time.monotonic() >= next_node_update:
            node = fake.get("Node", rng.choice(nodes))
            node["metadata"]["labels"]["bench.karmada.io/churn"] = str(counts["node_updated"])
            fake.put(node)
            counts["node_updated"] += 1
            next_node_update += 3.0
    print(json.dumps(dict(counts)), flush=True)
    fake.stop()
    return 0


# --- requests ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Request:
    name: str
    method: str
    body: bytes
    weight: float


def requests_for(cluster: str) -> list[Request]:
    sets = [(name, query) for name, (_, query) in SHAPES.items()]
    in_flight = model.AssumedWorkload(NAMESPACE, SHAPES["pytorch-small"][1].components)
    out = []
    for name, query in sets:
        body = wire.component_sets_request(cluster, query).SerializeToString()
        out.append(Request(f"sets/{name}", "MaxAvailableComponentSets", body, 0.55 / len(sets)))
        assumed = model.ComponentSetsQuery(query.components, query.namespace, (in_flight, in_flight))
        body = wire.component_sets_request(cluster, assumed).SerializeToString()
        out.append(Request(f"sets/{name}+2 assumed", "MaxAvailableComponentSets", body, 0.15 / len(sets)))
    shapes = {c.shape for _, query in sets for c in query.components}
    for i, shape in enumerate(sorted(shapes, key=repr)):
        body = wire.replicas_request(cluster, model.ReplicasQuery(shape)).SerializeToString()
        out.append(Request(f"replicas/{i}", "MaxAvailableReplicas", body, 0.20 / len(shapes)))
    ref = model.WorkloadRef("apps/v1", "Deployment", "web", "frontend", STUCK_THRESHOLD_SECONDS)
    out.append(Request("unschedulable/web/frontend", "GetUnschedulableReplicas",
                       wire.unschedulable_request(cluster, ref).SerializeToString(), 0.10))
    return out


RESPONSES = {"MaxAvailableComponentSets": (pb.MaxAvailableComponentSetsResponse, "maxSets"),
             "MaxAvailableReplicas": (pb.MaxAvailableReplicasResponse, "maxReplicas"),
             "GetUnschedulableReplicas": (pb.UnschedulableReplicasResponse, "unschedulableReplicas")}


@dataclass
class CallerLog:
    latencies: list[float] = field(default_factory=list)
    kinds: list[int] = field(default_factory=list)
    errors: Counter = field(default_factory=Counter)
    answers: dict[str, set] = field(default_factory=dict)


def caller(channel: grpc.Channel, requests: list[Request], seed: int, stop: threading.Event, log: CallerLog) -> None:
    rng = random.Random(seed)
    stubs = [channel.unary_unary(f"/{SERVICE}/{r.method}", request_serializer=None, response_deserializer=None)
             for r in requests]
    weights = [r.weight for r in requests]
    while not stop.is_set():
        i = rng.choices(range(len(requests)), weights)[0]
        started = time.perf_counter()
        try:
            reply = stubs[i](requests[i].body, timeout=DEADLINE, metadata=METADATA)
        except grpc.RpcError as error:
            log.errors[f"{requests[i].method}: {error.code().name}: {error.details()}"] += 1
            continue
        log.latencies.append(time.perf_counter() - started)
        log.kinds.append(i)
        response_type, field_name = RESPONSES[requests[i].method]
        log.answers.setdefault(requests[i].name, set()).add(getattr(response_type.FromString(reply), field_name))


# --- processes ------------------------------------------------------------------------------


def wait_serving(channel: grpc.Channel, process: subprocess.Popen, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    health = health_pb2_grpc.HealthStub(channel)
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"the estimator exited with {process.returncode} before it was ready")
        try:
            if health.Check(health_pb2.HealthCheckRequest(), timeout=1).status == health_pb2.HealthCheckResponse.SERVING:
                return
        except grpc.RpcError:
            pass
        time.sleep(0.2)
    raise SystemExit(f"the estimator was not ready after {timeout:.0f}s")


def scrape(port: int) -> dict[str, float]:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as reply:
        text = reply.read().decode()
    values = {}
    for line in text.splitlines():
        if line.startswith("karmada_scheduler_estimator_") and not line.startswith("#"):
            name, _, value = line.rpartition(" ")
            values[name] = float(value)
    return values


class Reloader:
    """`reload` churn: rewrite the second object file with new pods, then SIGHUP."""

    def __init__(self, path: Path, nodes: list[str], interval: float, pods: int, seed: int):
        self.path, self.nodes, self.interval, self.pods = path, nodes, interval, pods
        self.rng = random.Random(seed)
        self.serial = 0
        self.reloads = 0
        self.write()

    def write(self) -> None:
        pods = []
        for _ in range(self.pods):
            self.serial += 1
            pods.append(churn_pod(self.rng, self.nodes, self.serial))
        items = place_first(workload_objects(), self.nodes[0]) + pods
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
        tmp.replace(self.path)

    def run(self, process: subprocess.Popen, stop: threading.Event) -> None:
        while not stop.wait(self.interval):
            self.write()
            process.send_signal(signal.SIGHUP)
            self.reloads += 1


# --- the run ------------------------------------------------------------------------------


def environment(argv: list[str]) -> dict:
    import numba

    try:
        cpu = next(line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                   if line.startswith("model name"))
    except (OSError, StopIteration):
        cpu = platform.processor() or "unknown"
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout
    return {
        "command": " ".join(["python -m benchmarks.load", *map(shlex.quote, argv)]),
        "date": datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "machine": f"{os.cpu_count()} CPUs ({cpu}), "
                   f"{os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.0f} GiB, "
                   f"{platform.system()} {platform.release()}",
        "software": f"Python {platform.python_version()}, grpcio {grpc.__version__}, numba {numba.__version__}",
        "commit": commit.strip(),
        "loadavg_start": os.getloadavg(),
    }


def run(args, argv: list[str]) -> dict:
    env_info = environment(argv)
    path, stats = ensure(MemberSpec(nodes=args.nodes, seed=args.seed))
    member = f"bench-{args.nodes}"
    work = Path(args.work_dir or (REPO / "benchmarks" / "data" / "load"))
    work.mkdir(parents=True, exist_ok=True)
    port, probe_port, metrics_port = free_port(), free_port(), free_port()
    flags = ["--cluster-name", member, "--server-port", str(port), "--server-bind-address", "127.0.0.1",
             "--health-probe-bind-address", f"127.0.0.1:{probe_port}",
             "--metrics-bind-address", f"127.0.0.1:{metrics_port}", *ESTIMATOR_FLAGS]
    fake = reloader = None
    started = time.monotonic()
    if args.churn == "watch":
        ready = work / "fake.json"
        ready.unlink(missing_ok=True)
        fake = subprocess.Popen([sys.executable, "-m", "benchmarks.load", "fake-apiserver", "--member", str(path),
                                 "--ready", str(ready), "--rate", str(args.rate), "--churn-pods", str(args.churn_pods),
                                 "--seed", str(args.seed)], cwd=REPO, stdout=subprocess.PIPE, text=True)
        while not ready.exists():
            if fake.poll() is not None:
                raise SystemExit("the fake API server died")
            time.sleep(0.2)
        flags += ["--kubeconfig", json.loads(ready.read_text())["kubeconfig"]]
    else:
        nodes = [o["metadata"]["name"] for o in json.loads(path.read_text())["items"] if o["kind"] == "Node"]
        reloader = Reloader(work / "churn.json", nodes, args.reload_interval, args.churn_pods, args.seed)
        flags += ["--objects", str(path), "--objects", str(reloader.path)]
    log_path = work / f"estimator-{args.churn}.log"
    with log_path.open("w") as log_file:
        estimator = subprocess.Popen([sys.executable, "-m", "estimator", *flags], cwd=REPO, stdout=log_file,
                                     stderr=log_file)
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    try:
        wait_serving(channel, estimator, args.ready_timeout)
        ready_seconds = time.monotonic() - started
        requests = requests_for(member)
        for r in requests:  # warm the path once per request type
            channel.unary_unary(f"/{SERVICE}/{r.method}", request_serializer=None,
                                response_deserializer=None)(r.body, timeout=60, metadata=METADATA)

        stop = threading.Event()
        logs = [CallerLog() for _ in range(args.callers)]
        threads = [threading.Thread(target=caller, args=(channel, requests, args.seed * 1000 + i, stop, logs[i]))
                   for i in range(args.callers)]
        churner = None
        if reloader is not None:
            churner = threading.Thread(target=reloader.run, args=(estimator, stop), daemon=True)
        begin = time.monotonic()
        for t in threads:
            t.start()
        if churner:
            churner.start()
        time.sleep(args.seconds)
        stop.set()
        for t in threads:
            t.join(DEADLINE + 5)
        wall = time.monotonic() - begin
        metrics = scrape(metrics_port)
        alive = estimator.poll() is None
    finally:
        channel.close()
        if estimator.poll() is None:
            estimator.send_signal(signal.SIGTERM)
        exit_code = estimator.wait(60)
        churn = {}
        if fake is not None:
            fake.send_signal(signal.SIGTERM)
            out, _ = fake.communicate(timeout=60)
            churn = json.loads(out.strip().splitlines()[-1]) if out.strip() else {}
    if reloader is not None:
        reloaded = log_path.read_text().count("reloaded ")
        churn = {"reloads_sent": reloader.reloads, "reloads_done": reloaded,
                 "pods_per_reload": args.churn_pods}
    return summarise(args, env_info, stats, requests, logs, wall, ready_seconds, metrics, churn, alive, exit_code)


def summarise(args, env_info, stats, requests, logs, wall, ready_seconds, metrics, churn, alive, exit_code) -> dict:
    latencies = np.concatenate([np.asarray(log.latencies) for log in logs]) * 1e3
    kinds = np.concatenate([np.asarray(log.kinds, dtype=np.int64) for log in logs])
    errors = sum((log.errors for log in logs), Counter())
    answers: dict[str, set] = {}
    for log in logs:
        for name, values in log.answers.items():
            answers.setdefault(name, set()).update(values)

    def figures(values: np.ndarray) -> dict:
        if not len(values):
            return {"calls": 0}
        return {"calls": int(len(values)), "rps": round(len(values) / wall, 1),
                **{f"p{q}": round(percentile(values, q), 2) for q in (50, 90, 99)},
                "max": round(float(values.max()), 1)}

    by_method = {}
    for method in RESPONSES:
        mask = np.isin(kinds, [i for i, r in enumerate(requests) if r.method == method])
        by_method[method] = figures(latencies[mask])
    return {
        **env_info,
        "loadavg_end": os.getloadavg(),
        "nodes": stats["nodes"], "pods": stats["pods"], "callers": args.callers, "seconds": round(wall, 1),
        "churn_mode": args.churn, "churn": churn, "ready_seconds": round(ready_seconds, 1),
        "overall": figures(latencies), "by_method": by_method,
        "errors": sum(errors.values()), "error_kinds": dict(errors.most_common(5)),
        "distinct_answers": {name: len(values) for name, values in sorted(answers.items())
                             if not name.startswith("unschedulable")},
        "unschedulable_answers": sorted(answers.get("unschedulable/web/frontend", ())),
        "estimator_alive_at_end": alive, "estimator_exit_code": exit_code,
        "estimator_flags": " ".join(ESTIMATOR_FLAGS),
        "metrics": {k: v for k, v in metrics.items()
                    if "request_total" in k or "staleness" in k or k.endswith("cache_nodes")},
    }


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    if argv[:1] == ["fake-apiserver"]:
        parser.add_argument("--member", required=True)
        parser.add_argument("--ready", required=True)
        parser.add_argument("--rate", type=float, default=200.0)
        parser.add_argument("--churn-pods", type=int, default=2000)
        parser.add_argument("--seed", type=int, default=1)
        return serve_fake(parser.parse_args(argv[1:]))
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--callers", type=int, default=16)
    parser.add_argument("--churn", choices=("both", "watch", "reload"), default="both")
    parser.add_argument("--rate", type=float, default=200.0, help="watch churn: pod events per second")
    parser.add_argument("--churn-pods", type=int, default=2000,
                        help="churn pods alive at a time (watch) / written per reload (reload)")
    parser.add_argument("--reload-interval", type=float, default=10.0, help="reload churn: seconds between SIGHUPs")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--ready-timeout", type=float, default=900.0)
    parser.add_argument("--work-dir", default="", help="scratch files (default benchmarks/data/load)")
    parser.add_argument("--no-write", action="store_true", help="print the figures only, leave RESULTS.md alone")
    args = parser.parse_args(argv)
    results = []
    for mode in (("watch", "reload") if args.churn == "both" else (args.churn,)):
        results.append(run(argparse.Namespace(**{**vars(args), "churn": mode}), argv))
        print(json.dumps(results[-1], indent=1, default=list))
    if not args.no_write:
        write_section(section(results))
        print(f"wrote the '## {SECTION}' section of {RESULTS}", file=sys.stderr)
    return 0 if all(r["errors"] == 0 and r["estimator_alive_at_end"] for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
