"""The server side of benchmarks.run: a real `karmada-estimator` process per member and mode,
its start-up milestones read from its own klog-format log, and the RPC client process."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

from benchmarks.shapes import SHAPES
from estimator.estimate.estimate import ANSWERS_PER_SNAPSHOT

REPO = Path(__file__).resolve().parents[1]


# klog's header (`I1201 20:48:43.123456 12345 server.py:88] ...`, local time, no year).
_LOG_TIME = re.compile(r"^[IWEF](\d{4} \d\d:\d\d:\d\d\.\d{6}) ")


def _klog_stamp(text: str, now: float | None = None) -> float:
    """Epoch seconds of a klog header time; the year is the one that puts it nearest to now."""
    now = time.time() if now is None else now
    year = datetime.fromtimestamp(now).year
    stamps = [datetime.strptime(f"{y}{text}", "%Y%m%d %H:%M:%S.%f").timestamp() for y in (year - 1, year)]
    return min(stamps, key=lambda s: abs(s - now))


STATE_CACHE_HIT = "from the state cache"  # estimator.cluster.files logs it when an entry was read


def _log_times(text: str) -> dict:
    """Seconds since the epoch of the start-up milestones in a text-format server log."""
    out = {}
    for line in text.splitlines():
        match = _LOG_TIME.match(line)
        if not match:
            continue
        stamp = _klog_stamp(match.group(1))
        if "loaded" in line and "nodes from" in line and "loaded" not in out:
            out["loaded"] = stamp
        elif "listening on port" in line:
            out.setdefault("listening", stamp)
        elif "kernels ready in" in line:
            out["kernels_ready"] = stamp
            out["kernels_seconds"] = float(re.search(r"kernels ready in ([0-9.]+)s", line).group(1))
        elif "readiness changed: ready" in line:
            out.setdefault("ready", stamp)
    return out


def _rss(pid: int) -> dict:
    fields = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(("VmRSS:", "VmHWM:")):
                fields[line.split(":")[0]] = int(line.split()[1]) / 1024
    except OSError:
        pass
    return {"rss_mb": fields.get("VmRSS"), "rss_peak_mb": fields.get("VmHWM")}


class Server:
    """A real `karmada-estimator` process on one member file (scheduler_client.launch)."""

    def __init__(self, member: str, path: Path, mode: str, cache_dir: str, log_dir: Path,
                 objects_cache: str = "off"):
        """`cache_dir`: the numba cache; `objects_cache`: the estimator's --objects-cache
        (off: every start parses the member file)."""
        from scheduler_client.launch import LocalEstimator

        self.est = LocalEstimator(member, [path], packing=mode, extra_args=("--objects-cache", objects_cache))
        self.log_path = log_dir / f"{member}-{mode}-{Path(cache_dir).name}.log"
        self.cache_dir = cache_dir

    def start(self, timeout: float = 600.0) -> dict:
        import grpc
        from grpc_health.v1 import health_pb2, health_pb2_grpc

        env = dict(os.environ, NUMBA_CACHE_DIR=self.cache_dir)
        log = self.log_path.open("w")
        # One channel, reconnecting every 20-50 ms while the port is closed: cheap polling that
        # takes little CPU from the starting server on a 2-core machine.
        channel = grpc.insecure_channel(self.est.address, options=[
            ("grpc.initial_reconnect_backoff_ms", 20), ("grpc.min_reconnect_backoff_ms", 20),
            ("grpc.max_reconnect_backoff_ms", 50)])
        health = health_pb2_grpc.HealthStub(channel)
        wall0 = time.time()
        t0 = time.perf_counter()
        self.est.process = subprocess.Popen(self.est.command(), stdout=log, stderr=log, env=env, cwd=REPO)
        deadline = t0 + timeout
        try:
            while True:
                if self.est.process.poll() is not None:
                    raise RuntimeError(f"estimator exited with {self.est.process.returncode}; log: {self.log_path}\n"
                                       + self.log_path.read_text()[-3000:])
                try:
                    reply = health.Check(health_pb2.HealthCheckRequest(), timeout=0.25, wait_for_ready=True)
                    if reply.status == health_pb2.HealthCheckResponse.SERVING:
                        break
                    time.sleep(0.02)
                except grpc.RpcError:
                    pass
                if time.perf_counter() > deadline:
                    self.stop()
                    raise TimeoutError(f"estimator not ready in {timeout}s; log: {self.log_path}")
        finally:
            channel.close()
        ready = time.perf_counter() - t0
        time.sleep(0.05)
        text = self.log_path.read_text()
        marks = _log_times(text)
        # What this start did with the member file, from the server's own log line.
        phases = {"ready_s": ready, "objects": "cache" if STATE_CACHE_HIT in text else "parsed"}
        if "loaded" in marks:
            phases["start_to_loaded_s"] = marks["loaded"] - wall0  # interpreter + imports + load
        if "kernels_seconds" in marks:
            phases["kernels_s"] = marks["kernels_seconds"]
        return phases

    @property
    def address(self) -> str:
        return self.est.address

    def rss(self) -> dict:
        return _rss(self.est.process.pid)

    def stop(self) -> None:
        self.est.stop()


# Longer than the answer memo with a margin for concurrent puts; 16 callers' variants stay
# within the conversion memo.
VARIANTS_PER_CALLER = ANSWERS_PER_SNAPSHOT + 8


def new_answer_variants(base, concurrency: int) -> list[str]:
    """Requests for the same job that the answer memo cannot share: each differs only in its
    components' priority class (no quota of the bench members is scoped by one; the client
    checks every variant gets the same answer). Each caller gets its own slice, longer than
    the memo, so every call is computed afresh; the total stays below the conversion memo's
    size, which a scheduler re-asking its few shapes after a watch event would also hit."""
    out = []
    for i in range(VARIANTS_PER_CALLER * concurrency):
        m = type(base)()
        m.CopyFrom(base)
        for component in m.components:
            component.replicaRequirements.priorityClassName = f"bench-variant-{i}"
        out.append(m.SerializeToString().hex())
    return out


# A new-job run sends each of these once, never repeated: more than a one-caller run of a few
# seconds makes at about 1 ms a call (the run stops early if it runs out).
NEW_SHAPES_PER_RUN = 6000


def new_shape_variants(member: str, query, count: int = NEW_SHAPES_PER_RUN) -> list[str]:
    """Requests for the job as a stream of distinct jobs would send them: request i asks
    for i more bytes of memory in every component (run_measure.new_shape), so no two share
    a shape and none was answered before (the conversion, plan, bound and answer memos all
    miss). The answers may differ from the base request's in principle; the bytes added
    are too few to change them on the benchmark members, and the client does not compare
    them."""
    from benchmarks.run_measure import new_shape
    from scheduler_client.wire import component_sets_request

    return [component_sets_request(member, new_shape(query, i)).SerializeToString().hex()
            for i in range(1, count + 1)]


def rpc_runs(server: Server, member: str, shapes, args) -> dict:
    """One client process, every shape x concurrency, plus the health-check floor."""
    from estimator.pb import estimator_pb2  # noqa: F401  (loaded for wire below)
    from grpc_health.v1 import health_pb2
    from scheduler_client.wire import component_sets_request

    runs = []
    for shape in shapes:
        base = component_sets_request(member, SHAPES[shape][1])
        request = base.SerializeToString().hex()
        for c in args.concurrency:
            # Repeat: one request again and again on one snapshot, answered from the memo.
            runs.append({"key": f"{shape}/{c}/repeat", "request_hex": request, "concurrency": c,
                         "seconds": args.rpc_seconds, "warmup_calls": 20, "paired_floor": c == 1})
            # New answer: what a changing cluster costs (every watch event starts a new memo).
            runs.append({"key": f"{shape}/{c}", "request_hexes": new_answer_variants(base, c),
                         "concurrency": c, "seconds": args.rpc_seconds, "warmup_calls": 20, "paired_floor": c == 1})
        # New job: every timed call a request shape the server has never seen, one caller,
        # paired with the empty RPC call by call (warmed up on the plain request).
        runs.append({"key": f"{shape}/1/new-shape", "request_hex": request,
                     "request_hexes": new_shape_variants(member, SHAPES[shape][1]),
                     "distinct": True, "concurrency": 1, "seconds": args.rpc_seconds, "warmup_calls": 20,
                     "paired_floor": True})
    plan = {"address": server.address, "runs": runs,
            "floor": {"request_hex": health_pb2.HealthCheckRequest().SerializeToString().hex(),
                      "seconds": args.rpc_seconds}}
    out = subprocess.run([sys.executable, "-m", "benchmarks.rpc_client"], input=json.dumps(plan),
                         capture_output=True, text=True, cwd=REPO, timeout=600 + 10 * len(runs) * args.rpc_seconds)
    if out.returncode != 0:
        raise RuntimeError(f"rpc client failed ({out.returncode}):\n{out.stderr[-3000:]}")
    data = json.loads(out.stdout)
    return {r["key"]: r for r in data["results"]} | {"floor": data.get("floor")}
