"""A member whose GPUs are served through DRA, at benchmark size: same answers, same speed?

`python -m benchmarks.dra [--nodes 10000]` takes the benchmark's synthetic member
(benchmarks/members.py) and writes its DRA twin: every GPU node advertises no `nvidia.com/gpu`
and a driver publishes its GPUs in a ResourceSlice instead; a DeviceClass declares
`extendedResourceName: nvidia.com/gpu` with a CEL selector; every GPU a running pod holds is
held by an allocated ResourceClaim instead. Both members have the same free GPUs on the same
nodes, so an estimator must give the same answers on both, and Karmada's gives 0 on the twin.

It starts one estimator (best mode) on each member and asks each GPU shape of
benchmarks/shapes.py: the answers must be equal (exit 1 otherwise), and on the twin the RPC
p50 is divided by the paired empty RPC (a health Check sent before each call, as `make bench`
pairs them) for a new answer (request shapes the server has not answered) and a repeated one.
Goal (issue 25): RPC p50 <= 2x the paired empty RPC at 10k nodes. Prints one JSON line.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from benchmarks import members
from benchmarks.members import GPU
from benchmarks.run_server import REPO, Server, rpc_runs
from benchmarks.shapes import SHAPES

DRIVER = "gpu.example.com"
CLASS = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": DRIVER},
         "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}], "extendedResourceName": GPU}}
GOAL = 2.0


def dra_twin(objects: dict) -> dict:
    """The same member with its GPUs published by a DRA driver and held by claims."""
    items = [CLASS]
    held: dict[str, int] = {}
    for obj in objects["items"]:
        if obj["kind"] == "Pod" and obj.get("spec", {}).get("nodeName"):
            gpus = sum(int(c.get("resources", {}).get("requests", {}).get(GPU, 0)) for c in obj["spec"]["containers"])
            if gpus and obj.get("status", {}).get("phase") not in ("Succeeded", "Failed"):
                node = obj["spec"]["nodeName"]
                first = held.get(node, 0)
                held[node] = first + gpus
                items.append(_claim(obj, node, range(first, first + gpus)))
        items.append(obj)
    for obj in objects["items"]:
        if obj["kind"] != "Node" or GPU not in obj["status"].get("allocatable", {}):
            continue
        count = int(obj["status"]["allocatable"].pop(GPU))
        obj["status"].get("capacity", {}).pop(GPU, None)
        name = obj["metadata"]["name"]
        items.append({"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": f"{name}-gpu"},
                      "spec": {"driver": DRIVER, "nodeName": name, "pool": {"name": name, "generation": 1,
                                                                            "resourceSliceCount": 1},
                               "devices": [{"name": f"gpu-{i}", "attributes": {"index": {"int": i}}}
                                           for i in range(count)]}})
    return {"apiVersion": "v1", "kind": "List", "items": items}


def _claim(pod: dict, node: str, devices) -> dict:
    meta = pod["metadata"]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": f"{meta['name']}-gpus", "namespace": meta["namespace"]},
            "status": {"allocation": {"devices": {"results": [
                {"request": "gpus", "driver": DRIVER, "pool": node, "device": f"gpu-{i}"} for i in devices]}}}}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.dra", description=__doc__.split("\n\n")[0])
    p.add_argument("--nodes", type=int, default=10_000)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--rpc-seconds", type=float, default=3.0)
    p.add_argument("--write", action="store_true", help="put the figures in benchmarks/RESULTS.md")
    argv = sys.argv[1:] if argv is None else list(argv)
    args = p.parse_args(argv)
    spec = members.MemberSpec(args.nodes, args.seed, 0.65)
    plain, _ = members.ensure(spec)
    work = Path(tempfile.mkdtemp(prefix="bench-dra-"))
    twin = work / f"{spec.name}-dra.json"
    twin.write_text(json.dumps(dra_twin(json.loads(plain.read_text()))))
    shapes = [name for name, (_, query) in SHAPES.items()
              if any(dict(c.shape.requests).get(GPU) for c in query.components)]
    run_args = argparse.Namespace(concurrency=[1], rpc_seconds=args.rpc_seconds)
    results = {}
    for label, path in (("device plugin", plain), ("DRA", twin)):
        server = Server(spec.name, path, "best", str(REPO / ".numba_cache"), work)
        started = time.perf_counter()
        server.start()
        ready = time.perf_counter() - started
        try:
            results[label] = {"ready_s": ready, "runs": rpc_runs(server, spec.name, shapes, run_args)}
        finally:
            server.stop()
    report = {"nodes": args.nodes, "shapes": {}, "goal": f"RPC p50 <= {GOAL}x the paired empty RPC"}
    ok = True
    for shape in shapes:
        plain_run, dra_run = results["device plugin"]["runs"], results["DRA"]["runs"]
        new, repeat = dra_run[f"{shape}/1"], dra_run[f"{shape}/1/repeat"]
        plain_new = plain_run[f"{shape}/1"]
        row = {"sets_device_plugin": plain_new["max_sets"], "sets_dra": new["max_sets"],
               "new_ratio_device_plugin": plain_new["p50_ms"] / plain_new["floor_p50_ms"],
               "new_p50_ms": new["p50_ms"], "new_ratio": new["p50_ms"] / new["floor_p50_ms"],
               "repeat_p50_ms": repeat["p50_ms"], "repeat_ratio": repeat["p50_ms"] / repeat["floor_p50_ms"]}
        ok &= row["sets_device_plugin"] == row["sets_dra"] and row["new_ratio"] <= GOAL and row["repeat_ratio"] <= GOAL
        report["shapes"][shape] = row
    report["ready_s"] = {label: r["ready_s"] for label, r in results.items()}
    report["met"] = ok
    print(json.dumps(report))
    if args.write:
        write_results(report, argv)
    return 0 if ok else 1


def write_results(report: dict, argv) -> None:
    import subprocess

    from benchmarks.resultsmd import replace_section

    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    rows = "\n".join(
        f"| {shape} | {r['sets_device_plugin']} | {r['sets_dra']} | {r['new_p50_ms']:.3f} ms ({r['new_ratio']:.2f}x) | "
        f"{r['repeat_p50_ms']:.3f} ms ({r['repeat_ratio']:.2f}x) | {r['new_ratio_device_plugin']:.2f}x |"
        for shape, r in report["shapes"].items())
    ready = report["ready_s"]
    text = f"""## GPUs served through DRA

`python -m benchmarks.dra {' '.join(argv)}` at {commit} ({time.strftime('%Y-%m-%d')}, `make bench`
runs it): the {report['nodes']:,}-node benchmark member and its DRA twin, whose GPU nodes
advertise no `nvidia.com/gpu` and whose GPUs a driver publishes in ResourceSlices (a DeviceClass
with `extendedResourceName: nvidia.com/gpu`, every GPU a running pod holds held by an allocated
claim). Same free GPUs on the same nodes, so the answers must be equal; on the twin, the RPC p50
of a new answer and of a repeated one over the empty RPC paired call by call (goal
{report['goal']}). Server ready: {ready['device plugin']:.1f} s (device plugin), {ready['DRA']:.1f} s (DRA twin).
Goal met: {'yes' if report['met'] else 'NO'}.

| shape | sets, device plugin | sets, DRA | DRA: new answer p50 (/ empty RPC) | DRA: repeated p50 (/ empty RPC) | device plugin: new answer / empty RPC |
|---|---|---|---|---|---|
{rows}
"""
    replace_section(REPO / "benchmarks" / "RESULTS.md", "## GPUs served through DRA", text)


if __name__ == "__main__":
    sys.exit(main())
