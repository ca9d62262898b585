"""The separate client process of the RPC measurements.

Reads a plan (JSON on stdin) and prints results (JSON on stdout):

    {"address": "127.0.0.1:10352",
     "runs": [{"key": "...", "request_hex": "...", "concurrency": 4, "seconds": 2.0,
               "max_calls": 20000, "warmup_calls": 20}, ...]}

A run with `request_hexes` (a list) measures the new-answer path: caller i cycles through
its own slice of len(request_hexes) // concurrency variants, so no caller repeats a request
before it has sent more others than the server's answer memo holds (the harness sizes the
list); every variant must get the same answer, else the run counts a mismatch.

A run with `distinct` (and `request_hex`, the plain request it warms up on) sends each of
its `request_hexes` once, never repeated and never before it is timed, and stops when they
run out: every timed call is a request shape the server has not seen (a new job).

A `floor` entry runs the standard health Check the same way: the gRPC round trip with no
estimator work, so RPC latency minus floor is what the estimator itself adds. A one-caller
run with `paired_floor` also sends a health Check before each of its calls and times it
apart (`floor_p50_ms`): the ratio of the two p50s then compares calls that met the same
machine, call by call, instead of a floor timed minutes later.

Requests travel pre-serialised (MaxAvailableComponentSetsRequest bytes, made once by the
harness with scheduler_client.wire) with the `object` metadata the karmada-scheduler
sends, so the client spends its time on the call, not on protobuf. One caller uses the
blocking stub (lowest client overhead); several callers are that many threads, each
with a blocking stub on one shared channel, as Karmada's scheduler fans out. Latency is
per call, from just before the call to its answer; throughput is completed calls / wall
time over the measured window.
"""

from __future__ import annotations

import json
import sys
import threading
import time

import grpc

from benchmarks.resultsmd import percentile
from estimator.pb import estimator_pb2, service_pb2

SERVICE = service_pb2.DESCRIPTOR.services_by_name["Estimator"].full_name
METHOD = f"/{SERVICE}/MaxAvailableComponentSets"
HEALTH_CHECK = "/grpc.health.v1.Health/Check"
METADATA = (("object", "kind=PyTorchJob, name=ml-team/bench"),)


def _run(channel: grpc.Channel, run: dict) -> dict:
    requests = [bytes.fromhex(h) for h in run.get("request_hexes") or [run["request_hex"]]]
    distinct = bool(run.get("distinct"))
    method = run.get("method", METHOD)
    call = channel.unary_unary(method, request_serializer=None, response_deserializer=None)
    concurrency = int(run["concurrency"])
    warm = bytes.fromhex(run["request_hex"]) if distinct else requests[0]
    for _ in range(int(run.get("warmup_calls", 20))):
        answer = call(warm, metadata=METADATA, timeout=30)
    reply = None
    mismatches = 0
    if method == METHOD:
        reply = estimator_pb2.MaxAvailableComponentSetsResponse.FromString(answer)
        # The variants stand for the same job: a different answer would make the timing meaningless.
        # Distinct shapes are never sent before they are timed.
        for request in ([] if distinct else requests[1:]):
            other = estimator_pb2.MaxAvailableComponentSetsResponse.FromString(
                call(request, metadata=METADATA, timeout=30))
            mismatches += other.maxSets != reply.maxSets
    share = max(1, len(requests) // concurrency)
    per_thread = max(1, int(run.get("max_calls", 10**9)) // concurrency)
    latencies: list[list[float]] = [[] for _ in range(concurrency)]
    paired = bool(run.get("paired_floor")) and concurrency == 1
    health = channel.unary_unary(HEALTH_CHECK, request_serializer=None, response_deserializer=None)
    empty = b""  # a HealthCheckRequest with no service: the server's overall status
    floors: list[float] = []
    errors = [0] * concurrency
    start_gate = threading.Barrier(concurrency + 1)
    stop_at = [0.0]

    def caller(i: int) -> None:
        mine = latencies[i]
        own = requests[(i * share) % len(requests):][:share]
        k = 0
        start_gate.wait()
        clock = time.perf_counter
        while len(mine) < per_thread:
            if distinct and k >= len(own):
                break  # every distinct shape sent once
            request = own[k % len(own)]
            k += 1
            if paired:
                t0 = clock()
                try:
                    health(empty, timeout=30)
                except grpc.RpcError:
                    errors[i] += 1
                    continue
                floors.append(clock() - t0)
            t0 = clock()
            if t0 >= stop_at[0]:
                break
            try:
                call(request, metadata=METADATA, timeout=30)
            except grpc.RpcError:
                errors[i] += 1
                continue
            mine.append(clock() - t0)

    threads = [threading.Thread(target=caller, args=(i,), daemon=True) for i in range(concurrency)]
    for t in threads:
        t.start()
    began = time.perf_counter()
    stop_at[0] = began + float(run["seconds"])
    start_gate.wait()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - began
    flat = [x for xs in latencies for x in xs]
    return {
        "key": run.get("key", ""),
        "concurrency": concurrency,
        "calls": len(flat),
        "errors": sum(errors),
        "seconds": elapsed,
        "rps": len(flat) / elapsed if elapsed > 0 else 0.0,
        "p50_ms": percentile(flat, 50) * 1e3,
        "p90_ms": percentile(flat, 90) * 1e3,
        "p99_ms": percentile(flat, 99) * 1e3,
        "mean_ms": (sum(flat) / len(flat) * 1e3) if flat else float("nan"),
        "max_sets": reply.maxSets if reply is not None else None,
        "variants": len(requests),
        "variant_mismatches": mismatches,
        "floor_p50_ms": percentile(floors, 50) * 1e3 if floors else None,
    }


def main() -> int:
    plan = json.load(sys.stdin)
    results = []
    with grpc.insecure_channel(plan["address"]) as channel:
        grpc.channel_ready_future(channel).result(timeout=30)
        for run in plan["runs"]:
            results.append(_run(channel, run))
        floor = None
        if plan.get("floor"):
            # The transport alone: the standard health Check, answered without estimator work.
            floor = _run(channel, {**plan["floor"], "key": "floor", "concurrency": 1, "method": HEALTH_CHECK})
    json.dump({"results": results, "floor": floor}, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
