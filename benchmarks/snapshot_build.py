"""How long ClusterCache.snapshot() takes after one pod update on a big cluster.

The unit tests check why it is cheap (a pod update does not re-sort the nodes or rebuild the
name tuples); this measures it, which only means something on a quiet machine.

    python -m benchmarks.snapshot_build [--nodes 10000] [--updates 20]

Prints min and median milliseconds over the updates; nothing is written to RESULTS.md.
"""

from __future__ import annotations

import argparse
import statistics
import time

from estimator.cluster.cache import ClusterCache
from tests.support.cachemutators import upsert_node, upsert_pod


def _node(i: int) -> dict:
    labels = {"kubernetes.io/hostname": f"n{i}", "topology.kubernetes.io/zone": f"z{i % 3}", "pool": f"p{i % 4}"}
    amounts = {"cpu": "32", "memory": "128Gi", "nvidia.com/gpu": "8", "pods": "110"}
    return {"kind": "Node", "metadata": {"name": f"n{i}", "labels": labels},
            "status": {"allocatable": amounts, "capacity": amounts}}


def _pod(i: int) -> dict:
    return {"kind": "Pod", "metadata": {"namespace": "bench", "name": f"p{i}"},
            "spec": {"nodeName": f"n{i}", "containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
            "status": {"phase": "Running"}}


def measure(nodes: int, updates: int) -> list[float]:
    """Milliseconds per snapshot() right after one pod update, `updates` times."""
    cache = ClusterCache()
    for i in range(nodes):
        upsert_node(cache, _node(i))
    cache.snapshot()
    took = []
    for i in range(updates):
        upsert_pod(cache, _pod(i % nodes))
        started = time.perf_counter()
        cache.snapshot()
        took.append((time.perf_counter() - started) * 1e3)
    return took


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=10_000)
    parser.add_argument("--updates", type=int, default=20)
    args = parser.parse_args(argv)
    if args.nodes < 1 or args.updates < 1:
        parser.error("--nodes and --updates must be >= 1")
    took = measure(args.nodes, args.updates)
    print(f"snapshot after a pod update, {args.nodes} nodes, {args.updates} updates: "
          f"min {min(took):.2f} ms, median {statistics.median(took):.2f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
