"""A seeded random small member (nodes with cpu/memory/pods and sometimes GPUs, pods bound
to them), as a snapshot: shared by the tests that compare cached bounds with fresh ones."""

from __future__ import annotations

import random

from estimator.cluster.cache import ClusterCache
from tests.support.builders import node, pod


def random_member(seed: int, *, max_nodes: int, pod_slots: tuple[int, ...], gpu_share: float, max_pods: int,
                  max_pod_cpu: int):
    rng = random.Random(seed)
    cache = ClusterCache()
    for i in range(rng.randint(1, max_nodes)):
        builder = node(f"n{i}").cpu(rng.choice([2, 4, 8, 16])).memory(f"{rng.choice([4, 16, 64])}Gi").pods(
            rng.choice(pod_slots))
        if rng.random() < gpu_share:
            builder = builder.gpu(rng.choice([1, 2, 4, 8]))
        cache.upsert_node(builder.build())
    for j in range(rng.randint(0, max_pods)):
        cache.upsert_pod(pod("ns", f"p{j}").requests(cpu=f"{rng.randint(1, max_pod_cpu)}",
                                                     memory=f"{rng.randint(1, 8)}Gi")
                         .on(f"n{rng.randint(0, max_nodes - 1)}").build())
    return cache.snapshot()
