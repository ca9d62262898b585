"""Watch churn benchmark: sync a big member from the fake API server, then stream pod churn.

    NUMBA_CACHE_DIR=.numba_cache .venv/bin/python -m benchmarks.watch_churn \\
        [--nodes 10000 --pods 100000 --seconds 20 --rate 12000]

The fake API server (tests/support/fakekube.py) runs in a child process at nice +10 (it stands in
for a remote machine), so the estimator process measured here holds only what the
estimator itself would: the list/watch loop
(estimator.cluster.watch.WatchClusterState, real watch client, default --kube-api-qps 20 /
--kube-api-burst 30, pages of 500), the ClusterCache, and an estimate loop.

Phases and targets (docs/scenario.md):
1. initial sync of every kind (target <= 20 s);
2. quiet: estimates (a train-small MaxAvailableComponentSets, best packing) at a steady
   pace for a few seconds -> quiet p50/p99;
3. churn: the fake creates, updates, completes and deletes pods at --rate events/s for
   --seconds while the same estimate loop runs -> events/s applied (target >= 10,000),
   lag at the end, estimate p99 during churn (target within 2x of quiet), RSS sampled
   every 0.5 s (target <= 400 MB steady);
   Phases 2-3 repeat --rounds times (default 3); latencies are pooled over the rounds, the
   sustained rate is the lowest round's;
4. backlog: watches paused, --backlog events queued, watches resumed -> the apply rate
   when the client, not the generator, is the bottleneck.

Experiment switches used while profiling (see the notes in RESULTS.md): --gc-mode,
--sync-only, --switch-interval, --estimate-window.

Prints one JSON line and writes the "Watch churn" section of benchmarks/RESULTS.md
(unless --no-write).
The objects and the fake API server process are in benchmarks/watch_churn_fake.py, the
section's text in benchmarks/watch_churn_report.py.
"""

from __future__ import annotations

import argparse
import datetime
import gc
import json
import multiprocessing
import os
import platform
import sys
import tempfile
import threading
import time
import types
from pathlib import Path

from benchmarks.resultsmd import percentile
from benchmarks.watch_churn_fake import serve_fake
from benchmarks.watch_churn_report import write_section

REPO = Path(__file__).resolve().parents[1]

Gi = 2**30


# --- measurement helpers ------------------------------------------------------------------


def rss_mb() -> float:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def train_small():
    from estimator.core.model import Component, ComponentSetsQuery, ReplicaShape

    master = ReplicaShape(requests=(("cpu", 1000), ("memory", 2 * Gi)), namespace="ml")
    worker = ReplicaShape(requests=(("cpu", 4000), ("memory", 16 * Gi), ("nvidia.com/gpu", 1)), namespace="ml")
    return ComponentSetsQuery(components=(Component("master", 1, master), Component("worker", 4, worker)),
                              namespace="ml")


class EstimateLoop:
    """Estimates at a steady pace on the state's current snapshot; latencies in ms."""

    def __init__(self, state, per_second: float):
        from estimator.estimate.estimate import Estimator

        self.estimator = Estimator(state.snapshot, packing="best")
        self.query = train_small()
        self.interval = 1.0 / per_second
        self.latencies: list[float] = []
        self.snapshot_ms: list[float] = []
        self.cpu_ms: list[float] = []  # CPU time the estimate thread itself used
        self.runqueue_ms: list[float] = []  # time it was runnable but waiting for a CPU
        self.answers: list[int] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def once(self) -> float:
        run_delay = _run_delay()
        cpu = time.thread_time()
        started = time.perf_counter()
        self.estimator.snapshot()  # what the servicer's Estimator does first: take the snapshot
        took_snapshot = time.perf_counter()
        answer = self.estimator.max_available_component_sets(self.query).sets
        elapsed = (time.perf_counter() - started) * 1000
        self.snapshot_ms.append((took_snapshot - started) * 1000)
        self.cpu_ms.append((time.thread_time() - cpu) * 1000)
        self.runqueue_ms.append((_run_delay() - run_delay) * 1000)
        self.answers.append(answer)
        return elapsed

    def run_for(self, seconds: float) -> list[float]:
        self.latencies = []
        self.snapshot_ms, self.cpu_ms, self.runqueue_ms = [], [], []
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="estimates", daemon=True)
        self._thread.start()
        time.sleep(seconds)
        return self.stop()

    def start(self) -> None:
        self.latencies = []
        self.snapshot_ms, self.cpu_ms, self.runqueue_ms = [], [], []
        self._stop.clear()
        self._thread = threading.Thread(target=self._loop, name="estimates", daemon=True)
        self._thread.start()

    def stop(self) -> list[float]:
        self._stop.set()
        if self._thread:
            self._thread.join()
        return self.latencies

    def _loop(self) -> None:
        next_at = time.perf_counter()
        while not self._stop.is_set():
            self.latencies.append(self.once())
            next_at += self.interval
            delay = next_at - time.perf_counter()
            if delay > 0:
                self._stop.wait(delay)
            else:
                next_at = time.perf_counter()


def _run_delay() -> float:
    """Seconds this thread has spent runnable but not running (Linux schedstat), or 0."""
    try:
        with open("/proc/thread-self/schedstat") as schedstat:
            return int(schedstat.read().split()[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return 0.0


def _slowest(loop: "EstimateLoop", share: float = 0.01) -> dict:
    """Where the slowest 1% of estimates spent their time: own CPU, waiting for a CPU
    (run queue), and the rest (blocked: the GIL or a lock)."""
    order = sorted(range(len(loop.latencies)), key=loop.latencies.__getitem__, reverse=True)
    worst = order[: max(1, int(len(order) * share))]
    mean = lambda values: round(sum(values) / len(values), 3)  # noqa: E731
    wall = [loop.latencies[i] for i in worst]
    cpu = [loop.cpu_ms[i] for i in worst]
    queue = [loop.runqueue_ms[i] for i in worst]
    return {"count": len(worst), "wall_ms": mean(wall), "own_cpu_ms": mean(cpu), "run_queue_ms": mean(queue),
            "blocked_ms": mean([max(0.0, w - c - q) for w, c, q in zip(wall, cpu, queue)])}


def machine() -> dict:
    model = "unknown"
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            for line in cpuinfo:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return {"nproc": os.cpu_count(), "cpu": model, "python": platform.python_version(),
            "load_avg_1m_at_start": round(os.getloadavg()[0], 2)}


# --- the benchmark --------------------------------------------------------------------------


def run(args) -> dict:
    from estimator import kernels
    from estimator.cluster.watch import EstimatePriority, ReflectorOptions, WatchClusterState
    from tests.support.fakekube import FakeKube

    kernels.warmup()
    if args.switch_interval:
        sys.setswitchinterval(args.switch_interval)
    context = multiprocessing.get_context("spawn")
    parent, child = context.Pipe()
    server = context.Process(target=serve_fake, args=(child, args.nodes, args.pods, args.seed, args.fake_nice), daemon=True)
    t0 = time.monotonic()
    server.start()
    info = parent.recv()
    generated_in = time.monotonic() - t0
    directory = tempfile.mkdtemp(prefix="watch-churn-")
    fake_for_config = FakeKube(token="bench-token")
    fake_for_config._host, fake_for_config._port = "127.0.0.1", int(info["url"].rsplit(":", 1)[1])
    kubeconfig = fake_for_config.kubeconfig(Path(directory))

    rss_before = rss_mb()
    priority = None if args.estimate_window is None else EstimatePriority(window=args.estimate_window)
    state = WatchClusterState(kubeconfig=str(kubeconfig), qps=args.qps, burst=args.burst,
                              options=ReflectorOptions(page_size=args.page_size), estimate_priority=priority)
    if args.gc_mode == "freeze-before":
        gc.collect()
        gc.freeze()
    elif args.gc_mode == "off-during-sync":
        gc.disable()
    gc_before = [g["collections"] for g in gc.get_stats()]
    started, cpu_started = time.monotonic(), time.process_time()
    state.start()
    while not state.synced():
        time.sleep(0.01)
    sync_seconds = time.monotonic() - started
    sync_cpu = time.process_time() - cpu_started
    gc.enable()
    gc_during_sync = [g["collections"] - b for g, b in zip(gc.get_stats(), gc_before)]
    if args.sync_only:
        print(json.dumps({"gc_mode": args.gc_mode, "sync_s": round(sync_seconds, 2), "sync_cpu_s": round(sync_cpu, 2),
                          "gc_collections_during_sync": gc_during_sync, "rss_mb": round(rss_mb()),
                          "load": os.getloadavg()[0]}))
        state.stop()
        parent.send(("stop",))
        parent.recv()
        sys.exit(0)
    throttled = {kind: round(s["throttled_seconds"], 2) for kind, s in state.stats().items()}
    snapshot = state.snapshot()
    stats = state.cache.stats()
    gc.collect()
    objects_tracked = len(gc.get_objects())
    rss_synced = rss_mb()
    pages = sum(s["list_pages"] for s in state.stats().values())

    loop = EstimateLoop(state, args.estimates_per_second)
    for _ in range(20):
        loop.once()  # warm the per-snapshot caches and numba dispatch
    pod = state.reflectors["Pod"]
    rss_samples: list[float] = []
    gc_pauses: dict[int, list[float]] = {0: [], 1: [], 2: []}
    gc_started = [0.0]

    def on_gc(phase: str, info: dict) -> None:
        if phase == "start":
            gc_started[0] = time.perf_counter()
        else:
            gc_pauses[info["generation"]].append((time.perf_counter() - gc_started[0]) * 1000)

    def one_round() -> dict:
        """A quiet phase, then sustained churn with the same estimate loop running."""
        quiet = loop.run_for(args.quiet_seconds)
        round_ = {"quiet": quiet, "quiet_snapshot_ms": loop.snapshot_ms,
                  "quiet_detail": (list(loop.cpu_ms), list(loop.runqueue_ms))}
        events_before = pod.events
        sampling = threading.Event()

        def sample() -> None:
            while not sampling.wait(0.5):
                rss_samples.append(rss_mb())

        gc.callbacks.append(on_gc)
        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        loop.start()
        churn_started = time.monotonic()
        parent.send(("churn", args.rate, args.seconds))
        produced = parent.recv()
        churn_wall = time.monotonic() - churn_started
        applied_in_window = pod.events - events_before
        lag_events = produced["rv"] - int(pod.resource_version or 0)
        catch_up_started = time.monotonic()
        while int(pod.resource_version or 0) < produced["rv"] and time.monotonic() - catch_up_started < 60:
            time.sleep(0.005)
        catch_up = time.monotonic() - catch_up_started
        churn = loop.stop()
        gc.callbacks.remove(on_gc)
        sampling.set()
        sampler.join()
        round_.update(churn=churn, churn_snapshot_ms=loop.snapshot_ms,
                      churn_detail=(list(loop.cpu_ms), list(loop.runqueue_ms)),
                      produced=produced, applied_in_window=applied_in_window, lag_events=lag_events,
                      catch_up=catch_up, rate=(pod.events - events_before) / (churn_wall + catch_up))
        round_["ratio"] = percentile(churn, 99) / percentile(quiet, 99)
        return round_

    rounds = [one_round() for _ in range(max(1, args.rounds))]
    first = rounds[0]
    quiet = [x for r in rounds for x in r["quiet"]]
    churn = [x for r in rounds for x in r["churn"]]
    quiet_snapshot_ms = [x for r in rounds for x in r["quiet_snapshot_ms"]]
    churn_snapshot_ms = [x for r in rounds for x in r["churn_snapshot_ms"]]
    quiet_slowest = _slowest(types.SimpleNamespace(
        latencies=quiet, cpu_ms=[x for r in rounds for x in r["quiet_detail"][0]],
        runqueue_ms=[x for r in rounds for x in r["quiet_detail"][1]]))
    churn_slowest = _slowest(types.SimpleNamespace(
        latencies=churn, cpu_ms=[x for r in rounds for x in r["churn_detail"][0]],
        runqueue_ms=[x for r in rounds for x in r["churn_detail"][1]]))
    produced, applied_in_window = first["produced"], first["applied_in_window"]
    lag_events, catch_up = first["lag_events"], first["catch_up"]
    sustained_rate = min(r["rate"] for r in rounds)

    # Backlog: how fast the client applies when the generator is not the limit.
    parent.send(("backlog", args.backlog))
    backlog = parent.recv()
    events_before = pod.events
    parent.send(("go",))
    parent.recv()
    backlog_started = time.monotonic()
    while int(pod.resource_version or 0) < backlog["rv"] and time.monotonic() - backlog_started < 120:
        time.sleep(0.002)
    backlog_seconds = time.monotonic() - backlog_started
    backlog_applied = pod.events - events_before

    gc.collect()
    rss_end = rss_mb()
    final_stats = state.cache.stats()
    watch_stats = state.stats()
    state.stop()
    parent.send(("stop",))
    parent.recv()
    server.join(10)

    quiet_p99, churn_p99 = percentile(quiet, 99), percentile(churn, 99)
    steady = rss_samples[len(rss_samples) // 2:] or [rss_end]
    result = {
        "benchmark": "watch_churn",
        "nodes": args.nodes, "pods": args.pods, "churn_rate_target": args.rate, "churn_seconds": args.seconds,
        "qps": args.qps, "burst": args.burst, "page_size": args.page_size, "fake_nice": args.fake_nice,
        "fake_server_generation_s": round(generated_in, 2),
        "initial_sync_s": round(sync_seconds, 2),
        "initial_sync_cpu_s": round(sync_cpu, 2),
        "initial_sync_throttled_s": throttled,
        "list_pages": pages,
        "synced_nodes": snapshot.num_nodes, "synced_counted_pods": stats["counted_pods"],
        "events_generated": produced["events"], "generator_rate": round(produced["events"] / produced["seconds"]),
        "events_applied_during_churn": applied_in_window,
        "events_per_s_applied_sustained": round(sustained_rate),
        "lag_events_at_churn_end": lag_events, "catch_up_s": round(catch_up, 3),
        "backlog_events": backlog_applied, "backlog_apply_s": round(backlog_seconds, 2),
        "events_per_s_applied_backlog": round(backlog_applied / backlog_seconds) if backlog_seconds else None,
        "estimates_per_s": args.estimates_per_second,
        "estimate_quiet_p50_ms": round(percentile(quiet, 50), 3), "estimate_quiet_p99_ms": round(quiet_p99, 3),
        "estimate_churn_p50_ms": round(percentile(churn, 50), 3), "estimate_churn_p99_ms": round(churn_p99, 3),
        "estimate_churn_over_quiet_p99": round(churn_p99 / quiet_p99, 2),
        "rounds": len(rounds),
        "per_round_churn_over_quiet_p99": [round(r["ratio"], 2) for r in rounds],
        "per_round_events_per_s": [round(r["rate"]) for r in rounds],
        "estimates_quiet": len(quiet), "estimates_churn": len(churn),
        "slowest_1pct_quiet": quiet_slowest, "slowest_1pct_churn": churn_slowest,
        "gc_during_churn": {f"gen{g}": {"count": len(p), "max_ms": round(max(p), 2) if p else 0,
                                        "total_ms": round(sum(p), 1)} for g, p in gc_pauses.items()},
        "snapshot_quiet_p99_ms": round(percentile(quiet_snapshot_ms, 99), 3),
        "snapshot_churn_p50_ms": round(percentile(churn_snapshot_ms, 50), 3),
        "snapshot_churn_p99_ms": round(percentile(churn_snapshot_ms, 99), 3),
        "gc_objects_after_sync": objects_tracked, "gc_counts": gc.get_count(), "gc_stats": gc.get_stats(),
        "estimate_priority_paused_s": round(state.priority.paused_seconds, 2),
        "rss_mb_before_sync": round(rss_before), "rss_mb_synced": round(rss_synced),
        "rss_mb_churn_steady_max": round(max(steady)), "rss_mb_churn_max": round(max(rss_samples or [rss_end])),
        "rss_mb_end": round(rss_end),
        "final_counted_pods": final_stats["counted_pods"],
        "pod_watch": {k: watch_stats["Pod"][k] for k in ("events", "bookmarks", "lists", "relists_gone", "errors")},
        "machine": machine(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    }
    result["targets"] = {
        "initial_sync_le_20s": result["initial_sync_s"] <= 20,
        "events_per_s_ge_10000": result["events_per_s_applied_sustained"] >= 10_000,
        "rss_le_400mb": result["rss_mb_churn_steady_max"] <= 400,
        "churn_p99_within_2x_quiet": result["estimate_churn_over_quiet_p99"] <= 2.0,
    }
    return result


def command_line(args) -> str:
    text = (f"NUMBA_CACHE_DIR=.numba_cache .venv/bin/python -m benchmarks.watch_churn --nodes {args.nodes} "
            f"--pods {args.pods} --seconds {args.seconds:g} --rate {args.rate} --qps {args.qps:g} "
            f"--burst {args.burst} --page-size {args.page_size} --backlog {args.backlog} --seed {args.seed} "
            f"--quiet-seconds {args.quiet_seconds:g} --estimates-per-second {args.estimates_per_second:g} "
            f"--rounds {args.rounds} "
            f"--fake-nice {args.fake_nice}")
    if args.estimate_window is not None:
        text += f" --estimate-window {args.estimate_window:g}"
    if args.switch_interval:
        text += f" --switch-interval {args.switch_interval:g}"
    if args.gc_mode != "default":
        text += f" --gc-mode {args.gc_mode}"
    return text


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--pods", type=int, default=100_000)
    parser.add_argument("--seconds", type=float, default=20.0, help="length of the sustained churn phase")
    parser.add_argument("--rate", type=int, default=12_000, help="pod events per second the fake generates")
    parser.add_argument("--backlog", type=int, default=50_000, help="events queued for the backlog phase")
    parser.add_argument("--qps", type=float, default=20.0, help="--kube-api-qps (the CLI default)")
    parser.add_argument("--burst", type=int, default=30, help="--kube-api-burst (the CLI default)")
    parser.add_argument("--page-size", type=int, default=500)
    parser.add_argument("--quiet-seconds", type=float, default=8.0)
    parser.add_argument("--rounds", type=int, default=3,
                        help="quiet + churn rounds after the sync; latencies are pooled over all rounds")
    parser.add_argument("--estimates-per-second", type=float, default=50.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--fake-nice", type=int, default=10,
                        help="nice increment of the fake API server process (it stands in for a remote machine)")
    parser.add_argument("--estimate-window", type=float, default=None,
                        help="EstimatePriority window in seconds (default: WatchClusterState's; 0 disables)")
    parser.add_argument("--gc-mode", choices=("default", "freeze-before", "off-during-sync"), default="default",
                        help="experiment: how the collector runs during the initial sync")
    parser.add_argument("--sync-only", action="store_true", help="experiment: stop after the initial sync")
    parser.add_argument("--switch-interval", type=float, default=None,
                        help="sys.setswitchinterval for the estimator process (default: leave as is)")
    parser.add_argument("--no-write", action="store_true", help="do not update benchmarks/RESULTS.md")
    args = parser.parse_args(argv)
    result = run(args)
    result["command"] = command_line(args)
    print(json.dumps(result))
    if not args.no_write:
        write_section(REPO / "benchmarks" / "RESULTS.md", result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
