"""Seeded synthetic member clusters, written as `kubectl get nodes,pods,resourcequotas -A -o json`.

The same (nodes, seed, utilisation) always gives the same bytes, so benchmarks/data/ is a
cache, never committed: `python -m benchmarks.members --nodes 10000` regenerates a file.

What a member looks like (shares of the node count; every pool spread over five zones in
two regions, with uneven zone sizes):

    pool        share  per node                         taints / state
    cpu          40%   64 cpu, 256Gi, 110 pods
    gpu4         28%   48 cpu, 384Gi, 4 x NVIDIA-L40S
    gpu8         20%   96 cpu, 1Ti,   8 x NVIDIA-A100
    inference    12%   32 cpu, 192Gi, 4 x NVIDIA-L4      dedicated=inference:NoSchedule
    system      3 nodes 16 cpu, 64Gi                     control-plane:NoSchedule
    any pool     3% cordoned                             spec.unschedulable + its taint

Node names are `<member>-<pool>-<8 hex>`, listed sorted by name as kubectl prints them, so
within each zone Karmada's order walks the cpu pool first, then gpu4, gpu8, inference: a
GPU worker's first-fit walk passes every CPU node first, as in real clusters named per pool.

Pods fill each node to its own utilisation, drawn from Beta(2.6, 1.4) (mean 0.65): GPU
nodes get training/inference pods of 1, 2 or 4 GPUs (so free GPUs are fragmented: a 8-GPU
node often has 1-3 left), CPU nodes get pods of 0.5-8 cpu; every node runs a
node-exporter DaemonSet pod. A few Succeeded pods (not counted) and Pending pods (no
node) are added, and a generous ResourceQuota in `ml-team` (never the binding bound).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

GENERATOR_VERSION = 1
DATA_DIR = Path(__file__).resolve().parent / "data"
GPU = "nvidia.com/gpu"
POOL_LABEL = "bench.karmada.io/pool"
PRODUCT_LABEL = "nvidia.com/gpu.product"
INFERENCE_TAINT = ("dedicated", "inference", "NoSchedule")
CONTROL_PLANE_TAINT = ("node-role.kubernetes.io/control-plane", "", "NoSchedule")
CORDON_TAINT = ("node.kubernetes.io/unschedulable", "", "NoSchedule")
ZONES = (  # (region, zone, weight)
    ("us-east-1", "us-east-1a", 0.30),
    ("us-east-1", "us-east-1b", 0.25),
    ("us-east-1", "us-east-1c", 0.20),
    ("us-west-2", "us-west-2a", 0.15),
    ("us-west-2", "us-west-2b", 0.10),
)
CORDONED_SHARE = 0.03
SYSTEM_NODES = 3
GIB = 2**30


@dataclass(frozen=True)
class Pool:
    name: str
    share: float
    cpu: int  # cores
    memory_gib: int
    gpus: int = 0
    product: str = ""
    taint: tuple[str, str, str] | None = None
    gpu_pod_sizes: tuple[int, ...] = ()


POOLS = (
    Pool("cpu", 0.40, 64, 256),
    Pool("gpu4", 0.28, 48, 384, 4, "NVIDIA-L40S", None, (1, 1, 2, 4)),
    Pool("gpu8", 0.20, 96, 1024, 8, "NVIDIA-A100-SXM4-80GB", None, (1, 2, 2, 4)),
    Pool("inference", 0.12, 32, 192, 4, "NVIDIA-L4", INFERENCE_TAINT, (1, 1, 2)),
)
SYSTEM_POOL = Pool("system", 0.0, 16, 64, taint=CONTROL_PLANE_TAINT)


@dataclass(frozen=True)
class MemberSpec:
    nodes: int
    seed: int = 1
    utilisation: float = 0.65

    @property
    def name(self) -> str:
        return f"bench-{self.nodes}"

    def path(self, data_dir: Path = DATA_DIR) -> Path:
        u = round(self.utilisation * 100)
        return Path(data_dir) / f"member-{self.nodes}-s{self.seed}-u{u}-g{GENERATOR_VERSION}.json"


def _taints(*taints) -> list[dict]:
    out = []
    for key, value, effect in taints:
        taint = {"effect": effect, "key": key}
        if value:
            taint["value"] = value
        out.append(taint)
    return out


def _node(name: str, pool: Pool, region: str, zone: str, cordoned: bool) -> dict:
    labels = {
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/hostname": name,
        "kubernetes.io/os": "linux",
        "node.kubernetes.io/instance-type": f"{pool.name}-{pool.cpu}c-{pool.memory_gib}g",
        POOL_LABEL: pool.name,
        "topology.kubernetes.io/region": region,
        "topology.kubernetes.io/zone": zone,
    }
    if pool.taint == CONTROL_PLANE_TAINT:
        labels["node-role.kubernetes.io/control-plane"] = ""
    allocatable = {
        "cpu": str(pool.cpu),
        "ephemeral-storage": "400Gi",
        "memory": f"{pool.memory_gib}Gi",
        "pods": "110",
    }
    if pool.gpus:
        labels[PRODUCT_LABEL] = pool.product
        labels["nvidia.com/gpu.present"] = "true"
        allocatable[GPU] = str(pool.gpus)
    spec: dict = {}
    taints = [t for t in (pool.taint, CORDON_TAINT if cordoned else None) if t]
    if taints:
        spec["taints"] = _taints(*taints)
    if cordoned:
        spec["unschedulable"] = True
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"labels": labels, "name": name, "resourceVersion": "1000"},
        "spec": spec,
        "status": {"allocatable": allocatable, "capacity": dict(allocatable)},
    }


def _pod(namespace: str, name: str, node: str | None, requests: dict[str, str], phase: str = "Running") -> dict:
    spec: dict = {
        "containers": [{"image": "registry.example/app:1", "name": "main", "resources": {"requests": requests}}],
        "schedulerName": "default-scheduler",
    }
    if node:
        spec["nodeName"] = node
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
        "status": {"phase": phase},
    }


def _names(rng: np.random.Generator, prefix: str, count: int) -> list[str]:
    names: set[str] = set()
    out = []
    while len(out) < count:
        for value in rng.integers(0, 16**8, size=count - len(out)):
            name = f"{prefix}-{int(value):08x}"
            if name not in names:
                names.add(name)
                out.append(name)
    return out


def generate(spec: MemberSpec) -> tuple[dict, dict]:
    """(the v1 List, stats) for `spec`; deterministic in spec."""
    rng = np.random.default_rng(spec.seed * 1_000_003 + spec.nodes)
    n_system = min(SYSTEM_NODES, max(spec.nodes // 100, 0))
    n_pools = spec.nodes - n_system
    counts = [int(n_pools * p.share) for p in POOLS]
    counts[0] += n_pools - sum(counts)
    zone_weights = np.array([w for _, _, w in ZONES])
    nodes: list[tuple[str, Pool, str, str, bool]] = []
    for pool, count in [(SYSTEM_POOL, n_system), *zip(POOLS, counts)]:
        zones = rng.choice(len(ZONES), size=count, p=zone_weights / zone_weights.sum())
        cordoned = rng.random(count) < (CORDONED_SHARE if pool is not SYSTEM_POOL else 0.0)
        for name, z, c in zip(_names(rng, f"{spec.name}-{pool.name}", count), zones, cordoned):
            nodes.append((name, pool, ZONES[z][0], ZONES[z][1], bool(c)))
    nodes.sort(key=lambda n: n[0])  # kubectl lists by name
    util = rng.beta(2.6 * spec.utilisation / 0.65, 1.4, size=len(nodes)).clip(0, 1)
    node_objects, pods = [], []
    gpu_total = gpu_used = 0
    free_hist: dict[int, int] = {}
    serial = 0
    for (name, pool, region, zone, cordoned), u in zip(nodes, util):
        node_objects.append(_node(name, pool, region, zone, cordoned))
        pods.append(_pod("kube-system", f"node-exporter-{name[-8:]}", name, {"cpu": "100m", "memory": "128Mi"}))
        if pool is SYSTEM_POOL:
            continue
        namespace = "inference" if pool.name == "inference" else "ml-team"
        if pool.gpus:
            target = int(round(u * pool.gpus))
            used = 0
            cpu_per_gpu = pool.cpu * 1000 * 6 // (10 * pool.gpus)  # GPU pods leave cpu for more GPU pods
            mem_per_gpu = pool.memory_gib * 6 // (10 * pool.gpus)
            while used < target:
                sizes = [g for g in pool.gpu_pod_sizes if g <= target - used]
                g = int(rng.choice(sizes))
                serial += 1
                cpu = int(cpu_per_gpu * g * rng.uniform(0.3, 1.0))
                requests = {"cpu": f"{cpu}m", "memory": f"{mem_per_gpu * g}Gi", GPU: str(g)}
                pods.append(_pod(namespace, f"gpu-job-{serial:07d}", name, requests))
                used += g
            gpu_total += pool.gpus
            gpu_used += used
            free_hist[pool.gpus - used] = free_hist.get(pool.gpus - used, 0) + 1
        else:
            budget = int(u * (pool.cpu - 1) * 1000)
            while budget >= 500:
                cpu = int(rng.choice([500, 1000, 2000, 4000, 8000]))
                if cpu > budget:
                    cpu = 500
                serial += 1
                memory = int(cpu * 4 * rng.uniform(0.5, 1.5))  # MiB: ~4Gi per core
                pods.append(_pod("analytics", f"svc-{serial:07d}", name, {"cpu": f"{cpu}m", "memory": f"{memory}Mi"}))
                budget -= cpu
    # Pods that must not count: finished ones on nodes, and pending ones without a node.
    for i in range(max(1, spec.nodes // 200)):
        node = nodes[int(rng.integers(len(nodes)))][0]
        pods.append(_pod("analytics", f"batch-done-{i:05d}", node, {"cpu": "4", "memory": "8Gi"}, "Succeeded"))
        pods.append(_pod("ml-team", f"pending-{i:05d}", None, {"cpu": "1", GPU: "8"}, "Pending"))
    pods.sort(key=lambda p: (p["metadata"]["namespace"], p["metadata"]["name"]))
    quota = {
        "apiVersion": "v1",
        "kind": "ResourceQuota",
        "metadata": {"name": "ml-team-quota", "namespace": "ml-team"},
        "spec": {"hard": {"requests.cpu": "10M", f"requests.{GPU}": "1M", "pods": "10M"}},
        "status": {
            "hard": {"requests.cpu": "10M", f"requests.{GPU}": "1M", "pods": "10M"},
            "used": {"requests.cpu": "0", f"requests.{GPU}": str(gpu_used), "pods": str(len(pods))},
        },
    }
    member = {"apiVersion": "v1", "kind": "List", "items": [*node_objects, *pods, quota], "metadata": {}}
    stats = {
        "nodes": len(node_objects),
        "pods": len(pods),
        "pools": {p.name: c for p, c in zip(POOLS, counts)} | {"system": n_system},
        "cordoned": sum(1 for n in nodes if n[4]),
        "gpus": gpu_total,
        "gpus_free": gpu_total - gpu_used,
        "gpu_nodes_by_free": dict(sorted(free_hist.items())),
    }
    return member, stats


def ensure(spec: MemberSpec, *, force: bool = False, data_dir: Path = DATA_DIR) -> tuple[Path, dict]:
    """Write the member file unless an identical one is there; returns (path, stats)."""
    path = spec.path(data_dir)
    stats_path = path.with_suffix(".stats.json")
    if not force and path.exists() and stats_path.exists():
        return path, json.loads(stats_path.read_text())
    member, stats = generate(spec)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    with tmp.open("w") as f:
        json.dump(member, f, separators=(",", ":"))
    tmp.replace(path)
    stats_path.write_text(json.dumps(stats, indent=1))
    return path, stats


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[1000, 5000, 10000, 50000])
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--utilisation", type=float, default=0.65)
    parser.add_argument("--force", action="store_true", help="rewrite even if the file exists")
    parser.add_argument("--data-dir", type=Path, default=DATA_DIR)
    args = parser.parse_args(argv)
    for n in args.nodes:
        path, stats = ensure(MemberSpec(n, args.seed, args.utilisation), force=args.force, data_dir=args.data_dir)
        print(f"{path}: {stats['nodes']} nodes, {stats['pods']} pods, {stats['gpus_free']}/{stats['gpus']} GPUs free")
    return 0


if __name__ == "__main__":
    sys.exit(main())
