"""Large members (1k, 5k, 10k nodes): populate fast, converge, compare a few requests.

Node orders cannot be enumerated at this size and the plain reference is far too slow, so
the possible first-fit answers come from our first-fit kernel run on sampled node orders
(the kernel itself is tested against the plain reference in tests/). Say so when reporting.
"""

from __future__ import annotations

import random
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from estimator import kernels
from estimator.core import model
from estimator.core.resources import MAX_INT32
from e2e.harness import oracle
from e2e.harness.members import GPU, MemberState

# Karmada's estimator needs tens of seconds per component-set call at 5k nodes and minutes at
# 10k on a busy 2-core machine (karmada-scheduler itself gives up after 3 s); wait for it.
KARMADA_TIMEOUT = 1800
# From this size on only the GPU job is asked: Karmada's small-PyTorchJob call costs ~sets x nodes
# (measured 316 s at 5k nodes under load; ~4x that at 10k), the GPU job's about a quarter of it.
GPU_JOB_ONLY_FROM = 10000

NODE_TYPES = (  # (cpu, memory Gi, pods, gpus) - a few machine types, as real fleets have
    ("16", 64, 110, 0), ("32", 128, 110, 0), ("64", 256, 110, 8), ("8", 32, 110, 0), ("96", 512, 110, 4),
)


def generate_large(seed: int, nodes: int) -> MemberState:
    rng = random.Random(seed)
    state = MemberState(seed=seed)
    zones = ("zone-1", "zone-2", "zone-3")
    for i in range(nodes):
        cpu, mem, pods, gpus = rng.choice(NODE_TYPES)
        name = f"big-{i:05d}"
        allocatable = {"cpu": cpu, "memory": f"{mem}Gi", "pods": str(pods), "ephemeral-storage": "500Gi"}
        if gpus:
            allocatable[GPU] = str(gpus)
        labels = {"kubernetes.io/hostname": name, "topology.kubernetes.io/region": "r1",
                  "topology.kubernetes.io/zone": zones[i % 3]}
        spec = {"taints": [{"key": "dedicated", "value": "ml", "effect": "NoSchedule"}]} if gpus and rng.random() < 0.5 else {}
        state.nodes.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
                            "spec": spec, "status": {"capacity": dict(allocatable), "allocatable": allocatable}})
        for k in range(rng.choice((0, 1, 2))):
            requests = {"cpu": rng.choice(("2", "4", "6")), "memory": f"{rng.choice((4, 8, 16))}Gi"}
            resources = {"requests": requests}
            if gpus and rng.random() < 0.5:
                requests[GPU] = resources.setdefault("limits", {})[GPU] = str(rng.randint(1, gpus))
            state.pods.append({"apiVersion": "v1", "kind": "Pod",
                               "metadata": {"name": f"{name}-p{k}", "namespace": "team-a"},
                               "spec": {"nodeName": name, "containers": [
                                   {"name": "main", "image": "registry.invalid/app:1", "resources": resources}]},
                               "status": {"phase": "Running"}})
    tol = (model.Toleration(key="dedicated", operator="Equal", value="ml", effect="NoSchedule"),)
    small = model.ComponentSetsQuery(components=(  # the small PyTorchJob shape
        model.Component("master", 1, model.ReplicaShape((("cpu", 4000), ("memory", 8 * 1024**3)), namespace="team-b")),
        model.Component("worker", 2, model.ReplicaShape((("cpu", 8000), ("memory", 16 * 1024**3)), namespace="team-b")),
    ), namespace="team-b")
    gpu_job = model.ComponentSetsQuery(components=(
        model.Component("master", 1, model.ReplicaShape((("cpu", 8000), ("memory", 32 * 1024**3)), namespace="team-b")),
        model.Component("worker", 4, model.ReplicaShape((("cpu", 16000), ("memory", 64 * 1024**3), (GPU, 2)),
                                                       model.NodeClaim(tolerations=tol), namespace="team-b")),
    ), namespace="team-b")
    state.sets_queries = [small, gpu_job]
    state.replicas_queries = [model.ReplicasQuery(model.ReplicaShape((("cpu", 2000), ("memory", 4 * 1024**3)),
                                                                     namespace="team-b"))]
    return state


def apply_parallel(pop, state: MemberState, workers: int = 16) -> float:
    started = time.monotonic()
    with ThreadPoolExecutor(workers) as pool:
        # Nodes in parallel (thousands): their watch order is then not their name order, so
        # at this size live component-set answers are judged by sampled orders only.
        list(pool.map(pop.create_node, state.nodes))
        list(pool.map(pop.create_pod, state.pods))
    return time.monotonic() - started


def sampled_first_fit_answers(arrays: oracle.SetsArrays, seed: int, orders: int = 30) -> set[int]:
    """First-fit answers for the snapshot's own order, its reverse and sampled node orders."""
    rng = np.random.default_rng(seed)
    n = arrays.available.shape[0]
    perms = [np.arange(n), np.arange(n)[::-1]] + [rng.permutation(n) for _ in range(orders)]
    values = set()
    for perm in perms:
        packing = kernels.first_fit_sets(np.ascontiguousarray(arrays.available[perm]), arrays.requests, arrays.replicas,
                                         np.ascontiguousarray(arrays.masks[:, perm]), MAX_INT32)
        values.add(min(packing.sets, arrays.quota))
    return values


def judge_large(diff, nodes: int, seed: int, log=print) -> dict:
    """Populate a large member and compare; returns figures for the report."""
    t = diff.tally
    state = generate_large(seed, nodes)
    diff.pop.clear()
    took = apply_parallel(diff.pop, state)
    dump = diff.work / f"large-{nodes}.json"
    diff.pop.dump(dump)
    ref = oracle.Reference(dump)
    t.clusters += 1
    figures = {"nodes": nodes, "pods": len(state.pods), "populate_s": round(took, 1)}
    started = time.monotonic()
    for est in (diff.ours_ff, diff.ours_best):
        diffs = diff.converge(est, state, ref, {}, timeout=600)
        if diffs:
            t.not_converged += 1
            diff._report(state, dump, f"{est.name} did not converge at {nodes} nodes", {"diffs": diffs})
    figures["ours_converged_s"] = round(time.monotonic() - started, 1)
    if diff.karmada is None:
        return figures
    started = time.monotonic()
    k_diffs = diff.converge(diff.karmada, state, ref, {}, timeout=600)
    figures["karmada_converged_s"] = round(time.monotonic() - started, 1)
    if k_diffs:
        t.notes.append(f"{nodes} nodes: karmada order-free answers still differ: {k_diffs[:2]}")
    for q in state.replicas_queries:
        t.requests += 1
        k, ours = diff.karmada.replicas(q, timeout=KARMADA_TIMEOUT), diff.ours_ff.replicas(q)
        if k.value != ours.value:
            t.mismatches += 1
            diff._report(state, dump, f"MaxAvailableReplicas differs at {nodes} nodes",
                         {"karmada": str(k), "ours": str(ours)})
    for i, q in enumerate(state.sets_queries):
        if nodes >= GPU_JOB_ONLY_FROM and i == 0:
            figures["sets_0"] = "not asked at this size (Karmada needs tens of minutes for it)"
            continue
        t.requests += 1
        call = time.monotonic()
        k = diff.karmada.sets(q, timeout=KARMADA_TIMEOUT)
        figures[f"karmada_sets_{i}_s"] = round(time.monotonic() - call, 2)
        ours_ff, ours_best = diff.ours_ff.sets(q), diff.ours_best.sets(q)
        arrays = oracle.sets_arrays(ref.snapshot, q)
        values = sampled_first_fit_answers(arrays, seed + i)
        detail = {"karmada": str(k), "ours_first_fit": str(ours_ff), "ours_best": str(ours_best),
                  "sampled_first_fit_answers": sorted(values)}
        figures[f"sets_{i}"] = detail
        if k.value is None or ours_ff.value is None or ours_best.value is None:
            t.mismatches += 1
            diff._report(state, dump, f"an estimator failed at {nodes} nodes", detail)
            continue
        if ours_ff.value not in values:
            t.mismatches += 1
            diff._report(state, dump, f"our first-fit answer is not a sampled first-fit answer at {nodes} nodes", detail)
        if k.value not in values:
            t.notes.append(f"{nodes} nodes, request {i}: Karmada's {k.value} not among {len(values)} sampled "
                           f"orders' answers {sorted(values)} (unresolved at this size, not counted)")
        if ours_best.value < k.value:
            t.best_below_karmada += 1
            diff._report(state, dump, f"best mode below Karmada's answer at {nodes} nodes", detail)
    log(f"e2e: large member {figures}")
    return figures
