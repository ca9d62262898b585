"""Start-up time and memory: `make demo` on a cold kernel cache, warm start-to-ready and RSS.

    python -m benchmarks.startup [--nodes 1000,10000,50000] [--repeats 3] [--skip-demo] [--skip-imports]
                                 [--loader-nodes 10000,50000] [--watch-nodes 1000]

1. **Demo to tables**, timed from spawning `python -m scheduler_client.demo` to its first
   table, each case on its own NUMBA_CACHE_DIR, empty at first: `make install`'s kernel
   compile, then the demo on that cache (a fresh machine right after installing); the demo on
   an empty cache (stale after a kernel edit: it compiles once, then starts six estimators);
   and `--compile-in-each` on an empty cache (the earlier start-up: all six compile at once).
   CPU seconds are the demo's and all its estimators' (user + sys), which the machine's load
   inflates much less than wall time.
2. **Warm start-to-ready and memory** per member size: a real `karmada-estimator` on a
   benchmarks/members.py file (the `benchmarks.run.Server` harness, so "ready" means what it
   means in the rest of RESULTS.md: spawn to gRPC health SERVING), 20 estimates, then
   /proc/PID/status: VmRSS, its anonymous and file-backed parts, the peak (VmHWM), and the
   LLVM library pages the server released after warm-up (from its log).
3. **Where memory goes**: a fresh interpreter importing the server's dependencies one at a
   time, VmRSS after each.
4. **The loader's heap** (`--loader-nodes`): anonymous memory a member file leaves behind,
   parsed a slice of items at a time (the loader) and whole (the earlier loader).
5. **Watch mode** (`--watch-nodes`): start-to-ready and memory of `--kubeconfig` against the
   fake API server (tests/support/fakekube.py).

Writes the "## Start-up and memory" section of benchmarks/RESULTS.md and
benchmarks/results/startup.json (a partial run keeps the other parts' last figures; to
re-render the section from that file: `python -m benchmarks.startup --render-only`).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

from benchmarks.startup_report import write_section

REPO = Path(__file__).resolve().parents[1]
TABLES_MARK = "Accurate estimators: complete sets"

IMPORT_STEPS = ["numpy", "yaml", "orjson", "grpc", "grpc_health.v1.health", "grpc_reflection.v1alpha.reflection",
                "prometheus_client", "estimator.cluster.files", "llvmlite.binding", "numba", "estimator.kernels",
                "WARMUP", "estimator.service.server", "estimator.__main__", "SEAL", "RELEASE"]
_IMPORT_PROBE = r"""
import importlib, json, sys, time
from estimator.service import procmem
steps = json.loads(sys.argv[1])
print(json.dumps({"step": "interpreter", **procmem.status_mb()}), flush=True)
for step in steps:
    t = time.perf_counter()
    if step == "WARMUP":
        from estimator import kernels
        kernels.warmup()
    elif step == "RELEASE":
        procmem.release_clean_file_pages("libllvmlite")
    elif step == "SEAL":
        from estimator import kernels
        kernels.seal()
        procmem.trim_heap()
    else:
        importlib.import_module(step)
    print(json.dumps({"step": step, "s": time.perf_counter() - t, **procmem.status_mb()}), flush=True)
print(json.dumps({"step": "kubernetes loaded", "value": "kubernetes" in sys.modules}), flush=True)
"""

# Loading a member file in-process as `--objects` does: sliced (the loader), or with the
# whole document parsed at once (the earlier loader, by raising the slicing threshold).
_LOADER_PROBE = r"""
import json, sys, time
from estimator.cluster import kubefiles
from estimator.service import procmem
path, whole, trim = sys.argv[1], sys.argv[2] == "1", sys.argv[3] == "1"
if whole:
    kubefiles.iter_objects.__defaults__ = (1 << 62,)
from estimator.cluster.filestate import FileClusterState
import estimator.service.server
base = procmem.status_mb()
started, cpu = time.perf_counter(), time.process_time()
FileClusterState([path], state_cache="off")  # the parser, not a state-cache read
load_s, cpu_s = time.perf_counter() - started, time.process_time() - cpu
if trim:
    procmem.trim_heap()
after = procmem.status_mb()
print(json.dumps({"load_s": load_s, "load_cpu_s": cpu_s, "anon_growth_mb": after["RssAnon"] - base["RssAnon"],
                  "rss_mb": after["VmRSS"], "peak_mb": after["VmHWM"]}))
"""
LOADER_VARIANTS = [  # label, whole document at once, PYTHONMALLOC=malloc, malloc_trim after the load
    ("earlier: the whole document parsed at once", True, False, True),
    ("now: a slice of items at a time", False, False, True),
    ("now + PYTHONMALLOC=malloc", False, True, True)]


def _load() -> str:
    return " / ".join(f"{x:.1f}" for x in os.getloadavg())


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _pid_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _status(pid: int) -> dict:
    from estimator.service.procmem import status_mb

    return status_mb(f"/proc/{pid}/status")


# --- 1. the demo ------------------------------------------------------------------------------


def demo_run(cache_dir: str, compile_in_each: bool) -> dict:
    cmd = [sys.executable, "-m", "scheduler_client.demo"] + (["--compile-in-each"] if compile_in_each else [])
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir)
    load_before, cpu_before = _load(), _children_cpu()
    started = time.monotonic()
    tables = None
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=REPO,
                          env=env) as proc:
        output = []
        for line in proc.stdout:
            output.append(line)
            if tables is None and TABLES_MARK in line:
                tables = time.monotonic() - started
        code = proc.wait()
    total = time.monotonic() - started
    if code != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {code}:\n" + "".join(output[-30:]))
    return {"command": " ".join(["python", "-m", "scheduler_client.demo"] + cmd[3:]), "tables_s": tables,
            "total_s": total, "cpu_s": _children_cpu() - cpu_before, "load_before": load_before,
            "load_after": _load()}


def warm_step(cache_dir: str) -> dict:
    """What `make install` now adds: one process compiling every kernel into an empty cache."""
    load_before, cpu_before = _load(), _children_cpu()
    started = time.monotonic()
    subprocess.run([sys.executable, "-c", "from estimator.kernels import warmup; warmup()"], check=True, cwd=REPO,
                   env=dict(os.environ, NUMBA_CACHE_DIR=cache_dir))
    return {"case": "`make install`'s kernel compile (empty cache)", "command": "python -c 'from estimator.kernels "
            "import warmup; warmup()'", "tables_s": None, "total_s": time.monotonic() - started,
            "cpu_s": _children_cpu() - cpu_before, "load_before": load_before, "load_after": _load()}


def demo_runs() -> list[dict]:
    runs = []
    with tempfile.TemporaryDirectory(prefix="startup-install-") as installed, \
            tempfile.TemporaryDirectory(prefix="startup-once-") as once, \
            tempfile.TemporaryDirectory(prefix="startup-each-") as each:
        cases = [(lambda: warm_step(installed), None),
                 (lambda: demo_run(installed, False), "after `make install` (cache filled by it): make demo now"),
                 (lambda: demo_run(once, False), "stale cache (e.g. a kernel edited): the demo compiles once"),
                 (lambda: demo_run(each, True), "stale cache, every estimator compiles (the start-up before)")]
        for run, case in cases:
            runs.append(run() if case is None else {"case": case, **run()})
            print(runs[-1], flush=True)
    return runs


# --- 2. warm ready and RSS ---------------------------------------------------------------------


def _estimates(address: str, cluster: str, calls: int = 20) -> None:
    import grpc

    from estimator.pb import estimator_pb2 as pb
    from estimator.pb import k8s_resource_pb2, service_pb2_grpc

    def q(text: str) -> bytes:
        return k8s_resource_pb2.Quantity(string=text).SerializeToString()

    def component(name: str, replicas: int, requests: dict) -> pb.Component:
        return pb.Component(name=name, replicas=replicas, replicaRequirements=pb.ComponentReplicaRequirements(
            resourceRequestBytes={k: q(v) for k, v in requests.items()}))

    sets = pb.MaxAvailableComponentSetsRequest(cluster=cluster, namespace="default", components=[
        component("master", 1, {"cpu": "1", "memory": "2Gi"}),
        component("worker", 2, {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": "1"})])
    replicas = pb.MaxAvailableReplicasRequest(cluster=cluster, replicaRequirements=pb.ReplicaRequirements(
        namespace="default", resourceRequestBytes={"cpu": q("500m"), "memory": q("512Mi")}))
    with grpc.insecure_channel(address) as channel:
        stub = service_pb2_grpc.EstimatorStub(channel)
        for _ in range(calls // 2):
            stub.MaxAvailableComponentSets(sets, timeout=120)
            stub.MaxAvailableReplicas(replicas, timeout=120)


_RELEASED = re.compile(r"released (\d+) MB of LLVM library pages")


def size_runs(nodes: int, repeats: int, cache_dir: str, log_dir: Path) -> dict:
    from benchmarks import members
    from benchmarks.run import Server

    path, stats = members.ensure(members.MemberSpec(nodes))
    starts = []
    # The first start parses the member file with `--objects-cache off`; the second parses it
    # into a fresh --objects-cache (and saves its state there), the `repeats` after it read the
    # state back; each start's log says whether it parsed.
    objects_cache = tempfile.mkdtemp(prefix=f"objects-cache-{nodes}-", dir=log_dir)
    for i in range(2 + repeats):
        server = Server(f"bench-{nodes}", path, "best", cache_dir, log_dir, "off" if i == 0 else objects_cache)
        load = _load()
        phases = server.start()
        if i == 1 and phases.get("objects") == "parsed":
            phases["objects"] = "saved"
        pid = server.est.process.pid
        phases["cpu_at_ready_s"] = _pid_cpu(pid)
        phases["load"] = load
        if i <= 2:  # memory once per kind of start (parsed, parsed and saved, from the cache)
            _estimates(server.address, f"bench-{nodes}")
            time.sleep(0.5)
            phases["status_mb"] = _status(pid)
            match = _RELEASED.search(server.log_path.read_text())
            phases["llvm_released_mb"] = int(match.group(1)) if match else None
        server.stop()
        starts.append(phases)
        print(nodes, phases, flush=True)
    by = {}
    for how in ("parsed", "saved", "cache"):
        runs = [s for s in starts if s.get("objects") == how]
        if runs:
            by[how] = {"ready_median_s": statistics.median(s["ready_s"] for s in runs),
                       "cpu_median_s": statistics.median(s["cpu_at_ready_s"] for s in runs)}
    return {"nodes": nodes, "pods": stats["pods"], "file_mb": path.stat().st_size / 2**20, "starts": starts,
            "by_objects": by, **by.get("cache", by.get("parsed", {}))}


# --- watch mode ----------------------------------------------------------------------------


def watch_run(nodes: int, cache_dir: str) -> dict:
    """`karmada-estimator --kubeconfig` against tests/support/fakekube.py holding `nodes` nodes and 9 pods
    each: spawn to /readyz 200, then /proc/PID/status after 2 s."""
    import urllib.request

    from scheduler_client.launch import free_port
    from tests.support.fakekube import FakeKube
    from tests.support.kubeobjects import node_object, pod_object

    with FakeKube() as fake, tempfile.TemporaryDirectory(prefix="startup-watch-") as tmp:
        fake.put_many(node_object(f"n{i}") for i in range(nodes))
        fake.put_many(pod_object("default", f"p{i}", node=f"n{i % nodes}") for i in range(9 * nodes))
        health, port = free_port(), free_port()
        load = _load()
        started = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "estimator", "--kubeconfig", str(fake.kubeconfig(Path(tmp))),
                                 "--cluster-name", f"watch-{nodes}", f"--server-port={port}",
                                 f"--health-probe-bind-address=127.0.0.1:{health}", "--metrics-bind-address=0"],
                                cwd=REPO, env=dict(os.environ, NUMBA_CACHE_DIR=cache_dir),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            while True:
                if proc.poll() is not None:
                    raise RuntimeError(f"the estimator exited with {proc.returncode} before it was ready")
                try:
                    with urllib.request.urlopen(f"http://127.0.0.1:{health}/readyz", timeout=1) as answer:
                        if answer.status == 200:
                            break
                except OSError:
                    pass
                time.sleep(0.05)
            ready = time.perf_counter() - started
            cpu = _pid_cpu(proc.pid)
            time.sleep(2)
            status = _status(proc.pid)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
    row = {"nodes": nodes, "pods": 9 * nodes, "ready_s": ready, "cpu_at_ready_s": cpu, "load": load,
           "status_mb": status}
    print(row, flush=True)
    return row


# --- 3. imports ----------------------------------------------------------------------------------


def import_steps(cache_dir: str) -> list[dict]:
    env = dict(os.environ, NUMBA_CACHE_DIR=cache_dir)
    done = subprocess.run([sys.executable, "-c", _IMPORT_PROBE, json.dumps(IMPORT_STEPS)], capture_output=True,
                          text=True, cwd=REPO, env=env, timeout=900, check=True)
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


def loader_runs(nodes: int) -> list[dict]:
    from benchmarks import members

    path, stats = members.ensure(members.MemberSpec(nodes))
    rows = []
    for label, whole, malloc, trim in LOADER_VARIANTS:
        env = dict(os.environ)
        if malloc:
            env["PYTHONMALLOC"] = "malloc"
        load = _load()
        done = subprocess.run([sys.executable, "-c", _LOADER_PROBE, str(path), "1" if whole else "0",
                               "1" if trim else "0"], cwd=REPO, env=env,
                              capture_output=True, text=True, timeout=3600, check=True)
        rows.append({"nodes": nodes, "pods": stats["pods"], "variant": label, "load": load,
                     **json.loads(done.stdout.strip().splitlines()[-1])})
        print(rows[-1], flush=True)
    return rows


# --- the section -------------------------------------------------------------------------------


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.startup", description=__doc__.splitlines()[0])
    p.add_argument("--nodes", default="1000,10000,50000", help="member sizes for warm ready and RSS ('' for none)")
    p.add_argument("--repeats", type=int, default=3, help="starts per size after the first two (which parse the member file: with --objects-cache off, then into a fresh cache); they read --objects-cache")
    p.add_argument("--skip-demo", action="store_true", help="leave out the cold/warm demo runs")
    p.add_argument("--skip-imports", action="store_true", help="leave out the per-import memory table")
    p.add_argument("--watch-nodes", default="", help="member sizes for watch mode against the fake API server "
                   "(e.g. 1000)")
    p.add_argument("--loader-nodes", default="", help="member sizes for the loader-heap table (e.g. 10000,50000)")
    p.add_argument("--render-only", action="store_true", help="rewrite the section from results/startup.json")
    args = p.parse_args(argv)
    out = REPO / "benchmarks" / "results" / "startup.json"
    if args.render_only:
        print(write_section(json.loads(out.read_text())))
        return 0
    command = "python -m benchmarks.startup " + shlex.join(argv if argv is not None else sys.argv[1:])
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=REPO).stdout
    meta = {"command": command.strip(), "commit": commit.strip(),
            "date": f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M UTC}", "cpus": os.cpu_count()}
    result: dict = {}
    # Warm starts use the cache the checkout uses anyway, filled here first.
    from estimator.kernels._numba import CACHE_DIR

    subprocess.run([sys.executable, "-c", "from estimator import kernels; kernels.warmup()"], check=True, cwd=REPO,
                   env=dict(os.environ, NUMBA_CACHE_DIR=CACHE_DIR))
    if not args.skip_imports:
        result["imports"] = import_steps(CACHE_DIR)
    sizes = [int(n) for n in args.nodes.split(",") if n.strip()]
    if sizes:
        with tempfile.TemporaryDirectory(prefix="startup-logs-") as logs:
            result["sizes"] = [size_runs(n, args.repeats, CACHE_DIR, Path(logs)) for n in sizes]
    watch_sizes = [int(n) for n in args.watch_nodes.split(",") if n.strip()]
    if watch_sizes:
        result["watch"] = [watch_run(n, CACHE_DIR) for n in watch_sizes]
    loader_sizes = [int(n) for n in args.loader_nodes.split(",") if n.strip()]
    if loader_sizes:
        result["loader"] = [row for n in loader_sizes for row in loader_runs(n)]
    if not args.skip_demo:
        result["demo"] = demo_runs()
    previous = json.loads(out.read_text()) if out.exists() else {}
    # A partial run (--skip-*, --nodes '') keeps the other parts' last figures, each with its own run.
    merged = {**previous, **result, "meta": {**previous.get("meta", {}), **{part: meta for part in result}}}
    out.write_text(json.dumps(merged, indent=1))
    print(write_section(merged))
    return 0


if __name__ == "__main__":
    sys.exit(main())
