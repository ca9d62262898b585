"""Kernel arrays of a member where first-fit strands GPUs: shared by the kernel and budget tests."""

from __future__ import annotations

import numpy as np


def stranding_gpu_member(n_nodes: int, seed: int, workers: int | None = None):
    """GPU nodes first in node order with as many pod slots as free GPUs, then a few cpu-only
    nodes: first-fit puts the cpu-only launcher on a GPU node and strands a GPU there for
    every set; best mode can send it to the cpu nodes. Columns: pods, cpu, gpu. Workers per
    set: `workers`, else drawn from 2-8 by the same generator after the nodes."""
    rng = np.random.default_rng(seed)
    n_gpu = n_nodes * 3 // 4
    free = rng.integers(1, 5, size=n_gpu)
    available = np.zeros((n_nodes, 3), dtype=np.int64)
    available[:n_gpu, 0] = free
    available[:n_gpu, 1] = free * 4000 + 500
    available[:n_gpu, 2] = free
    available[n_gpu:, 0] = 50
    available[n_gpu:, 1] = 64000
    requests = np.array([[1, 500, 0], [1, 4000, 1]], dtype=np.int64)
    per_set = int(rng.integers(2, 9)) if workers is None else workers
    replicas = np.array([1, per_set], dtype=np.int64)
    return available, requests, replicas, np.ones((2, n_nodes), dtype=np.bool_)
