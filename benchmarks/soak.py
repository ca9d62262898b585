"""Hostile soak: a minute of hostile traffic against one estimator while well-formed calls go on.

    python -m benchmarks.soak                       # 60 s, 64 hostile callers, 10k nodes (the goals below)
    python -m benchmarks.soak --quick               # a few seconds, small member (tests/bench smoke)

Starts its own estimator (`python -m estimator`, loopback only) on a generated member
(benchmarks.members), then for `--seconds`:

- `--callers` hostile callers in a process of their own, over `--hostile-connections`
  connections (niced: on a small machine the load generator must not starve the server it
  measures), each cycling through the request
  shapes that used to break it:
  1,024-component sets requests (27 KB, within the limits, each a new answer), the same with
  1,024 in-flight workloads, a 3.9 MB resource name, a 3 MB affinity operator, 4 MB of short
  affinity values (a valid request), a line break in `cluster`, absurd quantities, and
  undecodable bytes. Requests are serialised once; callers send bytes.
- two well-formed callers asking what a scheduler asks (the benchmark's job shapes, and
  replicas), timing each call;
- a gRPC health check every 100 ms (1 s deadline; --health-deadline);
- the server's RSS sampled every 50 ms (and its VmHWM, reset once the member is loaded).

Prints its figures (one JSON line with --json) and exits 1 when a goal is missed:
peak RSS <= --request-memory-budget + 300 MB, well-formed p99 <= 50 ms (not with --quick),
every well-formed call answered, every health check SERVING within its deadline. Nothing is
written. `run(argv)` returns the figures (tests/bench/test_soak.py runs --quick).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import grpc

from benchmarks.members import MemberSpec, ensure
from benchmarks.resultsmd import percentile
from benchmarks.shapes import SHAPES
from estimator.pb import estimator_pb2 as pb
from estimator.pb import k8s_core_pb2 as core
from estimator.pb import k8s_resource_pb2
from estimator.pb import service_pb2
from scheduler_client.launch import free_port
from scheduler_client.wire import component_sets_request, replicas_request

REPO = Path(__file__).resolve().parents[1]
CLUSTER = "soak"
SERVICE = service_pb2.DESCRIPTOR.services_by_name["Estimator"].full_name
SETS = f"/{SERVICE}/MaxAvailableComponentSets"
REPLICAS = f"/{SERVICE}/MaxAvailableReplicas"
HEALTH = "/grpc.health.v1.Health/Check"
METADATA = (("object", "kind=PyTorchJob, name=ml-team/soak"),)
MB = 2**20
RSS_MARGIN_MB = 300
P99_GOAL_MS = 50.0


def _quantity(text: str) -> bytes:
    return k8s_resource_pb2.Quantity(string=text).SerializeToString()


def _wide(components: int, cpu_m: int, assumed: bool = False) -> bytes:
    part = pb.ComponentReplicaRequirements(resourceRequestBytes={"cpu": _quantity(f"{cpu_m}m"),
                                                                 "memory": _quantity("1Gi")})
    parts = [pb.Component(name=f"c{i}", replicas=1, replicaRequirements=part) for i in range(components)]
    request = pb.MaxAvailableComponentSetsRequest(cluster=CLUSTER, namespace="ml-team",
                                                  components=parts[:3] if assumed else parts)
    if assumed:
        request.assumedWorkloads.append(pb.AssumedWorkload(namespace="ml-team", components=parts))
    return request.SerializeToString()


def _one(requirements: pb.ComponentReplicaRequirements, cluster: str = CLUSTER) -> bytes:
    return pb.MaxAvailableComponentSetsRequest(cluster=cluster, namespace="ml-team", components=[
        pb.Component(name="w", replicas=1, replicaRequirements=requirements)]).SerializeToString()


def _affinity(operator: str, values: list[str]) -> pb.ComponentReplicaRequirements:
    """One term of requirements of at most 4,096 values each (the per-requirement limit)."""
    chunks = [values[at:at + 4096] for at in range(0, len(values), 4096)][:250]
    selector = core.NodeSelector(nodeSelectorTerms=[core.NodeSelectorTerm(matchExpressions=[
        core.NodeSelectorRequirement(key="pool", operator=operator, values=chunk) for chunk in chunks])])
    return pb.ComponentReplicaRequirements(resourceRequestBytes={"cpu": _quantity("1")},
                                           nodeClaim=pb.NodeClaim(nodeAffinityBytes=selector.SerializeToString()))


def hostile_requests(scale: float, rng: random.Random) -> list[tuple[str, str, list[bytes]]]:
    """(shape, method, variants): each caller cycles through shapes, each shape through variants."""
    components = max(8, int(1024 * scale))
    big = max(1000, int(3_900_000 * scale))
    values = [f"{i % 100:02d}" for i in range(max(4096, int(1_000_000 * scale)))]
    gpu = {"nvidia.com/gpu": _quantity("1")}
    return [
        ("wide-1024", SETS, [_wide(components, 100 + i) for i in range(24)]),
        ("assumed-1024", SETS, [_wide(components, 100 + i, assumed=True) for i in range(8)]),
        ("name-3.9MB", SETS, [_one(pb.ComponentReplicaRequirements(resourceRequestBytes={f"{i}" + "x" * big: _quantity(
            "1")})) for i in range(4)]),
        ("operator-3MB", SETS, [_one(_affinity("X" * int(big * 0.77) + str(i), ["a"])) for i in range(2)]),
        ("values-4MB", SETS, [_one(_affinity("NotIn", values[i:] + values[:i])) for i in range(2)]),
        ("newline-cluster", SETS, [_one(pb.ComponentReplicaRequirements(resourceRequestBytes=gpu),
                                        cluster=f"{CLUSTER}\nE0101 00:00:00.000000 1 x.py:1] FORGED {i}")
                                   for i in range(4)]),
        ("absurd-quantity", SETS, [_one(pb.ComponentReplicaRequirements(resourceRequestBytes={
            "cpu": _quantity(text)})) for text in ("1e999999", "99999999999999999999Ei", "-1", "NaN")]),
        ("undecodable", SETS, [bytes(rng.getrandbits(8) for _ in range(rng.randrange(1, 4096))) for _ in range(8)]),
    ]


def wellformed_requests() -> list[tuple[str, bytes]]:
    from estimator.core.model import ReplicaShape, ReplicasQuery

    requests = [(SETS, component_sets_request(CLUSTER, query).SerializeToString()) for _, query in SHAPES.values()]
    for gpus in (1, 2, 4):
        query = ReplicasQuery(ReplicaShape((("cpu", 2000), ("memory", 8 * 2**30), ("nvidia.com/gpu", gpus)),
                                           namespace="ml-team"))
        requests.append((REPLICAS, replicas_request(CLUSTER, query).SerializeToString()))
    return requests


def _cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process so far."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return 0.0


def _status(pid: int) -> dict[str, int]:
    out = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                key, _, rest = line.partition(":")
                if key in ("VmRSS", "VmHWM"):
                    out[key] = int(rest.split()[0]) * 1024
    except (OSError, ValueError):
        pass
    return out


class Soak:
    def __init__(self, args: argparse.Namespace):
        self.args = args
        self.deadline = 0.0
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.hostile = Counter()
        self.wellformed_ms: list[float] = []
        self.wellformed_failures: Counter = Counter()
        self.health_ok = self.health_failed = 0
        self.health_worst_ms = 0.0
        self.peak_rss = 0

    def start_server(self, member: Path) -> None:
        self.port, self.probes = free_port(), free_port()
        self.log = open(self.args.log, "w") if self.args.log else subprocess.DEVNULL
        self.process = subprocess.Popen(
            [sys.executable, "-m", "estimator", "--cluster-name", CLUSTER, "--objects", str(member),
             "--objects-cache", "off", "--server-port", str(self.port), "--server-bind-address", "127.0.0.1",
             "--health-probe-bind-address", f"127.0.0.1:{self.probes}", "--metrics-bind-address", "0",
             "--request-memory-budget", str(self.args.budget_mb * MB), "--packing", self.args.packing,
             *self.args.server_args],
            cwd=REPO, stdout=self.log, stderr=self.log, env={**os.environ, "PYTHONPATH": str(REPO)})
        self.channel = grpc.insecure_channel(f"127.0.0.1:{self.port}", options=[
            ("grpc.max_send_message_length", 16 * MB), ("grpc.max_receive_message_length", 16 * MB)])
        health = self.channel.unary_unary(HEALTH)
        started = time.monotonic()
        while time.monotonic() - started < 300:
            if self.process.poll() is not None:
                raise RuntimeError(f"the estimator exited with {self.process.returncode}")
            try:
                if health(b"", timeout=2) == b"\x08\x01":  # status: SERVING
                    return
            except grpc.RpcError:
                pass
            time.sleep(0.2)
        raise RuntimeError("the estimator did not become ready in 300 s")

    # --- callers ---------------------------------------------------------------------------
    def hostile_process(self) -> subprocess.Popen:
        args = self.args
        return subprocess.Popen(
            [sys.executable, "-m", "benchmarks.soak", "--hostile-worker", str(self.port), "--callers", str(args.callers),
             "--scale", str(args.scale), "--seed", str(args.seed), "--seconds", str(args.seconds),
             "--hostile-connections", str(args.hostile_connections), "--shapes", args.shapes],
            cwd=REPO, stdout=subprocess.PIPE, text=True, preexec_fn=lambda: os.nice(10),
            env={**os.environ, "PYTHONPATH": str(REPO)})

    def wellformed_caller(self, index: int, requests) -> None:
        calls = {method: self.channel.unary_unary(method) for method in (SETS, REPLICAS)}
        turn = index
        while not self.stop.is_set():
            method, request = requests[turn % len(requests)]
            turn += 1
            started = time.perf_counter()
            try:
                calls[method](request, metadata=METADATA, timeout=10)
            except grpc.RpcError as error:
                with self.lock:
                    self.wellformed_failures[error.code().name] += 1
                continue
            elapsed = (time.perf_counter() - started) * 1e3
            with self.lock:
                self.wellformed_ms.append(elapsed)
            time.sleep(0.005)  # a scheduler's pace, not a flood of its own

    def health_checker(self) -> None:
        check = self.channel.unary_unary(HEALTH)
        while not self.stop.wait(0.1):
            started = time.perf_counter()
            try:
                ok = check(b"", timeout=self.args.health_deadline) == b"\x08\x01"
            except grpc.RpcError:
                ok = False
            elapsed = (time.perf_counter() - started) * 1e3
            with self.lock:
                self.health_ok += ok
                self.health_failed += not ok
                self.health_worst_ms = max(self.health_worst_ms, elapsed)

    def sampler(self) -> None:
        while not self.stop.wait(0.05):
            self.peak_rss = max(self.peak_rss, _status(self.process.pid).get("VmRSS", 0))

    # --- the run -----------------------------------------------------------------------------
    def run(self) -> dict:
        args = self.args
        member, _ = ensure(MemberSpec(args.nodes, 1, 0.65))
        self.start_server(member)
        try:
            wellformed = wellformed_requests()
            warm = {method: self.channel.unary_unary(method) for method in (SETS, REPLICAS)}
            for method, request in wellformed:
                warm[method](request, metadata=METADATA, timeout=30)
            baseline = _status(self.process.pid).get("VmRSS", 0)
            try:  # peak RSS from here on: the start-up's own peak is not the soak's
                Path(f"/proc/{self.process.pid}/clear_refs").write_text("5")
                hwm_reset = True
            except OSError:
                hwm_reset = False
            hostile = self.hostile_process()
            ready = hostile.stdout.readline()  # its requests are made: the soak starts
            if not ready.startswith("ready"):
                raise RuntimeError(f"the hostile callers did not start: {ready!r}")
            threads = [threading.Thread(target=self.wellformed_caller, args=(i, wellformed), daemon=True)
                       for i in range(2)]
            threads += [threading.Thread(target=self.health_checker, daemon=True),
                        threading.Thread(target=self.sampler, daemon=True)]
            started, cpu = time.monotonic(), _cpu_seconds(self.process.pid)
            for thread in threads:
                thread.start()
            counts = json.loads(hostile.communicate(timeout=args.seconds + 120)[0])
            self.stop.set()
            for thread in threads:
                thread.join(40)
            self.hostile = Counter({tuple(key.split(" ", 1)): count for key, count in counts.items()})
            wall = time.monotonic() - started
            cpu = _cpu_seconds(self.process.pid) - cpu
            status = _status(self.process.pid)
            alive = self.process.poll() is None
        finally:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
        peak = max(self.peak_rss, status.get("VmHWM", 0) if hwm_reset else 0)
        return {
            "nodes": args.nodes, "seconds": round(wall, 1), "callers": args.callers,
            "hostile_connections": args.hostile_connections, "packing": args.packing,
            "budget_mb": args.budget_mb, "baseline_rss_mb": round(baseline / MB), "peak_rss_mb": round(peak / MB),
            "rss_limit_mb": args.budget_mb + RSS_MARGIN_MB, "server_alive": alive,
            "server_cpu_cores": round(cpu / wall, 2), "load_average": os.getloadavg()[0],
            "hostile_calls": sum(self.hostile.values()),
            "hostile": {f"{name} {code}": count for (name, code), count in sorted(self.hostile.items())},
            "wellformed_calls": len(self.wellformed_ms), "wellformed_failures": dict(self.wellformed_failures),
            "wellformed_p50_ms": round(percentile(self.wellformed_ms, 50), 2),
            "wellformed_p99_ms": round(percentile(self.wellformed_ms, 99), 2),
            "health_ok": self.health_ok, "health_failed": self.health_failed, "health_deadline_s": args.health_deadline,
            "health_worst_ms": round(self.health_worst_ms, 1),
        }


def verdicts(figures: dict, timed: bool) -> list[str]:
    """The goals missed (empty: all met)."""
    missed = []
    if not figures["server_alive"]:
        missed.append("the estimator died")
    if figures["peak_rss_mb"] > figures["rss_limit_mb"]:
        missed.append(f"peak RSS {figures['peak_rss_mb']} MB > budget + {RSS_MARGIN_MB} MB")
    if figures["health_failed"] or not figures["health_ok"]:
        missed.append(f"{figures['health_failed']} health checks not answered SERVING in "
                      f"{figures['health_deadline_s']:g} s")
    if figures["wellformed_failures"] or not figures["wellformed_calls"]:
        missed.append(f"well-formed calls failed: {figures['wellformed_failures']}")
    if timed and not figures["wellformed_p99_ms"] <= P99_GOAL_MS:
        missed.append(f"well-formed p99 {figures['wellformed_p99_ms']} ms > {P99_GOAL_MS:g} ms")
    return missed


def hostile_worker(port: int, callers: int, scale: float, seed: int, seconds: float, connections: int,
                   only: str = "") -> None:
    """The hostile callers (a process of their own, over `connections` connections): prints
    "ready" once its requests are made, then after `seconds` one JSON object of counts by
    "shape code"."""
    shapes = [shape for shape in hostile_requests(scale, random.Random(seed))
              if not only or shape[0] in only.split(",")]
    channels = [grpc.insecure_channel(f"127.0.0.1:{port}", options=[
        ("grpc.max_send_message_length", 16 * MB), ("grpc.max_receive_message_length", 16 * MB),
        ("grpc.use_local_subchannel_pool", 1)]) for _ in range(max(1, connections))]
    counts: Counter = Counter()
    lock = threading.Lock()
    print("ready", flush=True)
    deadline = time.monotonic() + seconds

    def caller(index: int) -> None:
        channel = channels[index % len(channels)]
        calls = {method: channel.unary_unary(method) for method in (SETS, REPLICAS)}
        turn = index
        while time.monotonic() < deadline:
            name, method, variants = shapes[turn % len(shapes)]
            request = variants[(turn // len(shapes)) % len(variants)]
            turn += 1
            try:
                calls[method](request, metadata=METADATA, timeout=30)
                code = "OK"
            except grpc.RpcError as error:
                code = error.code().name
            with lock:
                counts[f"{name} {code}"] += 1

    threads = [threading.Thread(target=caller, args=(i,), daemon=True) for i in range(callers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(seconds + 60)
    time.sleep(max(0.0, deadline - time.monotonic()))  # (no callers: the soak still lasts its time)
    print(json.dumps(counts), flush=True)


def run(argv: list[str] | None = None) -> dict:
    """The figures of one soak (see the module docstring), with "missed": the goals missed."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--callers", type=int, default=64)
    parser.add_argument("--shapes", default="", help="only these hostile shapes (comma-separated names)")
    parser.add_argument("--hostile-connections", type=int, default=8,
                        help="connections the hostile callers share (the well-formed callers have their own)")
    parser.add_argument("--budget-mb", type=int, default=512, help="the server's --request-memory-budget, in MiB")
    parser.add_argument("--packing", default="best", choices=("best", "first-fit"))
    parser.add_argument("--scale", type=float, default=1.0, help="hostile payload sizes x this (1: the issue's)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--log", default="", help="write the estimator's log here")
    parser.add_argument("--health-deadline", type=float, default=1.0, help="seconds a health check may take")
    parser.add_argument("--server-arg", dest="server_args", action="append", default=[],
                        help="one more flag for the estimator (repeatable), e.g. --server-arg=--parallelism=4")
    parser.add_argument("--quick", action="store_true",
                        help="a few seconds on 500 nodes, smaller payloads; no latency goal (a smoke run)")
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON line")
    parser.add_argument("--hostile-worker", type=int, default=0, metavar="PORT", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.hostile_worker:
        hostile_worker(args.hostile_worker, args.callers, args.scale, args.seed, args.seconds,
                       args.hostile_connections, args.shapes)
        return {}
    if args.quick:  # a smoke run on a shared machine: behaviour, not timing
        args.nodes, args.seconds, args.callers, args.scale = min(args.nodes, 500), min(args.seconds, 4.0), \
            min(args.callers, 16), min(args.scale, 0.1)
        args.health_deadline = max(args.health_deadline, 5.0)
    figures = Soak(args).run()
    figures["missed"] = verdicts(figures, timed=not args.quick)
    figures["json"] = args.json
    return figures


def main(argv: list[str] | None = None) -> int:
    figures = run(argv)
    if not figures:  # a hostile worker
        return 0
    if figures.pop("json"):
        print(json.dumps(figures))
    else:
        for key, value in figures.items():
            if key == "hostile":
                for shape, count in value.items():
                    print(f"  {shape:32} {count}")
            elif key != "missed":
                print(f"{key:22} {value}")
        print("all goals met" if not figures["missed"] else "MISSED: " + "; ".join(figures["missed"]))
    return 1 if figures["missed"] else 0


if __name__ == "__main__":
    sys.exit(main())
