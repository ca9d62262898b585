"""First-fit on clusters of hundreds of nodes and many sets equals the naive rescan: this is
what exercises the pointer and bulk-step shortcuts (module firstfit)."""

from __future__ import annotations

import numpy as np
import pytest

from estimator import kernels
from tests.support import naive
from tests.support.kernelcheck import assert_first_fit_as_naive

MAX_INT32 = 2**31 - 1
# Columns: pods, cpu (millicores), memory (MiB here, to keep the naive oracle quick), gpu.
MASTER = [1, 50, 32, 0]


def random_cluster(seed: int, n_nodes: int = 300):
    rng = np.random.default_rng(seed)
    available = np.zeros((n_nodes, 4), dtype=np.int64)
    available[:, 0] = rng.choice([0, 2, 3, 5, 30, 110], size=n_nodes)
    available[:, 1] = rng.integers(0, 16_000, size=n_nodes)
    available[:, 2] = rng.integers(0, 64 * 1024, size=n_nodes)
    available[:, 3] = rng.choice([0, 0, 1, 2, 3, 4, 8], size=n_nodes)
    n_comp = int(rng.integers(1, 4))
    requests = np.array(
        [[1, rng.integers(1, 2000), rng.integers(0, 4096), rng.integers(0, 3)] for _ in range(n_comp)], dtype=np.int64
    )
    replicas = rng.integers(0, 4, size=n_comp).astype(np.int64)
    masks = rng.random((n_comp, n_nodes)) < 0.9
    return available, requests, replicas, masks


def shaped_cluster(shape: str, n_nodes: int = 300):
    """The shapes the shortcuts are built for: a cpu-only master with gpu workers."""
    available = np.zeros((n_nodes, 4), dtype=np.int64)
    available[:] = [110, 12_000, 64 * 1024, 0]
    if shape == "cpu nodes first, then 8-gpu nodes":
        available[n_nodes // 5 :, 3] = 8
    elif shape == "small gpu nodes first, cpu nodes last":
        available[: n_nodes * 4 // 5, [0, 3]] = 2
    elif shape == "alternating small gpu and cpu nodes":
        available[::2, [0, 3]] = 2
    elif shape == "few cpu nodes, then odd gpu counts":
        available[:3, 0] = 7
        available[3:, 3] = np.resize([3, 5, 1, 0, 7], n_nodes - 3)
    elif shape == "gpu nodes with little cpu left":
        available[:, 1] = np.resize([120, 4000, 60], n_nodes)
        available[:, 3] = np.resize([8, 2, 4], n_nodes)
    return available


@pytest.mark.parametrize("seed", range(8))
def test_first_fit_on_300_random_nodes_equals_the_naive_rescan(seed):
    assert_first_fit_as_naive(*random_cluster(seed), MAX_INT32)


SHAPES = [
    "cpu nodes first, then 8-gpu nodes",
    "small gpu nodes first, cpu nodes last",
    "alternating small gpu and cpu nodes",
    "few cpu nodes, then odd gpu counts",
    "gpu nodes with little cpu left",
]
JOBS = {
    "master then 2 workers": ([MASTER, [1, 50, 32, 1]], [1, 2]),
    "3 workers then master": ([[1, 50, 32, 1], MASTER], [3, 1]),
    "master, 2-gpu workers, then a sidecar": ([MASTER, [1, 100, 64, 2], [1, 10, 8, 0]], [1, 2, 3]),
}


@pytest.mark.parametrize("job", list(JOBS), ids=list(JOBS))
@pytest.mark.parametrize("shape", SHAPES, ids=SHAPES)
def test_first_fit_on_gpu_shaped_clusters_equals_the_naive_rescan(shape, job):
    available = shaped_cluster(shape)
    requests, replicas = (np.array(x, dtype=np.int64) for x in JOBS[job])
    masks = np.ones((len(replicas), available.shape[0]), dtype=np.bool_)
    masks[0, ::7] = False  # some nodes the first component may not use
    packing = assert_first_fit_as_naive(available, requests, replicas, masks, MAX_INT32)
    assert packing.sets > 0
    best = kernels.best_sets(available, requests, replicas, masks, MAX_INT32)
    assert best.sets >= packing.sets
    assert kernels.verify_placement(available, requests, replicas, masks, best.sets, best.placement)


@pytest.mark.parametrize("upper", [1, 2, 7, 40, 333])
def test_first_fit_stopped_by_upper_mid_run_equals_the_naive_rescan(upper):
    available = shaped_cluster("cpu nodes first, then 8-gpu nodes")
    requests, replicas = (np.array(x, dtype=np.int64) for x in JOBS["master then 2 workers"])
    masks = np.ones((2, available.shape[0]), dtype=np.bool_)
    assert assert_first_fit_as_naive(available, requests, replicas, masks, upper).sets == upper


def test_repeated_assumed_deductions_equal_the_naive_rescan():
    available = shaped_cluster("few cpu nodes, then odd gpu counts")
    requests, replicas = (np.array(x, dtype=np.int64) for x in JOBS["master, 2-gpu workers, then a sidecar"])
    masks = np.ones((3, available.shape[0]), dtype=np.bool_)
    left, naive_left = available.copy(), available.tolist()
    for _ in range(60):
        kernels.first_fit_sets(left, requests, replicas, masks, 1)
        naive_left = naive.first_fit(naive_left, requests, replicas, masks, 1)[2]
        assert left.tolist() == naive_left


def test_best_reaches_the_bound_where_first_fit_wastes_a_third_of_the_gpus():
    available = shaped_cluster("small gpu nodes first, cpu nodes last", n_nodes=2000)
    requests, replicas = (np.array(x, dtype=np.int64) for x in JOBS["master then 2 workers"])
    masks = np.ones((2, 2000), dtype=np.bool_)
    first_fit = kernels.first_fit_sets(available.copy(), requests, replicas, masks, MAX_INT32)
    best = kernels.best_sets(available, requests, replicas, masks, MAX_INT32)
    assert first_fit.sets == 1066
    assert best.sets == 1600  # every gpu used: 1600 nodes x 2 gpus / 2 workers
    assert kernels.verify_placement(available, requests, replicas, masks, best.sets, best.placement)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("shape", SHAPES[:3], ids=SHAPES[:3])
def test_first_fit_in_best_mode_orders_equals_the_naive_rescan_in_those_orders(shape, seed):
    """The kernel behind best mode walks other component and node orders; the shortcuts
    must hold there too (there, a node is private to its component only by fit or mask)."""
    from estimator.kernels import firstfit

    rng = np.random.default_rng(seed)
    available = shaped_cluster(shape, n_nodes=200)
    requests, replicas = (np.array(x, dtype=np.int64) for x in JOBS["master, 2-gpu workers, then a sidecar"])
    n_comp, n_nodes = len(replicas), available.shape[0]
    masks = rng.random((n_comp, n_nodes)) < 0.9
    order = rng.permutation(n_comp)
    walks = [rng.permutation(n_nodes)[: rng.integers(n_nodes // 2, n_nodes + 1)] for _ in range(n_comp)]
    if seed % 2:  # runs of consecutive nodes, as the sorted orders produce
        walks = [np.sort(walk) for walk in walks]
    node_order = np.zeros((n_comp, n_nodes), dtype=np.int64)
    for c, walk in enumerate(walks):
        node_order[c, : len(walk)] = walk
    lengths = np.array([len(walk) for walk in walks], dtype=np.int64)
    for scale, upper in ((1, MAX_INT32), (7, 1)):  # set by set; and 7 sets' worth as one set
        left = available.copy()
        packing = firstfit.pack(left, requests, replicas * scale, masks, order, node_order, lengths, upper)
        expected = naive.first_fit(available, requests, replicas * scale, masks, upper, order, walks)
        assert (packing.sets, packing.placement.tolist(), left.tolist()) == expected
