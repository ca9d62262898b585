"""Seeded random members shared by several test files: a small member as a snapshot (nodes
with cpu/memory/pods and sometimes GPUs, pods bound to them; the tests that compare cached
bounds with fresh ones), and a Flink-like member as kernel arrays (the two-component
first-fit tests)."""

from __future__ import annotations

import random

import numpy as np

from estimator.cluster.cache import ClusterCache
from tests.support.builders import node, pod
from tests.support.cachemutators import upsert_node, upsert_pod


def random_member(seed: int, *, max_nodes: int, pod_slots: tuple[int, ...], gpu_share: float, max_pods: int,
                  max_pod_cpu: int):
    rng = random.Random(seed)
    cache = ClusterCache()
    for i in range(rng.randint(1, max_nodes)):
        builder = node(f"n{i}").cpu(rng.choice([2, 4, 8, 16])).memory(f"{rng.choice([4, 16, 64])}Gi").pods(
            rng.choice(pod_slots))
        if rng.random() < gpu_share:
            builder = builder.gpu(rng.choice([1, 2, 4, 8]))
        upsert_node(cache, builder.build())
    for j in range(rng.randint(0, max_pods)):
        upsert_pod(cache, pod("ns", f"p{j}").requests(cpu=f"{rng.randint(1, max_pod_cpu)}",
                                                     memory=f"{rng.randint(1, 8)}Gi")
                         .on(f"n{rng.randint(0, max_nodes - 1)}").build())
    return cache.snapshot()


GI = 2**30


def flink_arrays(seed: int, n: int, *, pods: tuple[int, int], cpu_halves: tuple[int, int],
                 mask_share: float | None = None):
    """(available, requests, replicas, masks) of n partly used nodes (columns pods, cpu in
    millicores, memory; cpu in steps of 500m from `cpu_halves`) and Flink's jobmanager
    1 x {1 pod, 1 cpu, 2Gi} + taskmanagers 6 x {1 pod, 2 cpu, 4Gi}; each node open to a
    component with probability `mask_share` (None: every node)."""
    rng = np.random.default_rng(seed)
    available = np.zeros((n, 3), dtype=np.int64)
    available[:, 0] = rng.integers(*pods, size=n)
    available[:, 1] = rng.integers(*cpu_halves, size=n) * 500
    available[:, 2] = rng.integers(16, 200, size=n) * GI
    requests = np.array([[1, 1000, 2 * GI], [1, 2000, 4 * GI]], dtype=np.int64)
    replicas = np.array([1, 6], dtype=np.int64)
    masks = np.ones((2, n), dtype=np.bool_) if mask_share is None else rng.random((2, n)) < mask_share
    return available, requests, replicas, masks
