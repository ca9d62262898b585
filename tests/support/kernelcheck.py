"""The first-fit kernel checked against the naive rescan (tests/support/naive.py), for the
kernel tests that each compare it on their own members; and the random members with a few
active components that the two- and three-component kernels' tests share."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from estimator import kernels
from estimator.kernels import firstfit
from tests.support import naive

MAX_INT32 = 2**31 - 1


def assert_first_fit_as_naive(available, requests, replicas, masks, upper) -> kernels.Packing:
    """first_fit_sets on a copy of `available`: the same sets, placement and leftover as the
    naive rescan; the packing."""
    left = available.copy()
    packing = kernels.first_fit_sets(left, requests, replicas, masks, upper)
    sets, placement, naive_left = naive.first_fit(available, requests, replicas, masks, upper)
    assert packing.sets == sets
    assert packing.placement.tolist() == placement
    assert left.tolist() == naive_left
    return packing


def assert_first_fit_as_general(available, requests, replicas, masks, upper) -> kernels.Packing:
    """`assert_first_fit_as_naive`, and the same sets, placement and limiting component as
    the general kernel (`firstfit.general_first_fit`), which the specialised kernels stand
    in for; the packing."""
    got = assert_first_fit_as_naive(available, requests, replicas, masks, upper)
    general = firstfit.general_first_fit(available.copy(), requests, replicas, masks, upper)
    assert got.sets == general.sets and got.limiting == general.limiting
    assert got.placement.tolist() == general.placement.tolist()
    assert got.work > 0 or available.shape[0] == 0 or upper == 0
    return got


@st.composite
def few_components(draw, active: int):
    """`active` components with 1-8 replicas (maybe an inactive one anywhere among them),
    1-4 columns, 1-30 nodes of a few sizes (some hold a fraction of a set, some dozens),
    sometimes in runs of identical nodes (the steps of several sets); columns past pods may
    ask for 0."""
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 31))
    k = int(draw(st.integers(1, 4)))
    scale = draw(st.sampled_from([4, 12, 60]))
    available = rng.integers(0, scale, size=(n, k)).astype(np.int64)
    if draw(st.booleans()):
        available = np.repeat(available[: max(1, n // 5)], 5, axis=0)[:n].copy()
        n = available.shape[0]
    requests = rng.integers(0, 4, size=(active, k)).astype(np.int64)
    requests[:, 0] = 1  # pods
    replicas = np.array([draw(st.integers(1, 8)) for _ in range(active)], dtype=np.int64)
    masks = rng.random((active, n)) < draw(st.sampled_from([1.0, 0.8, 0.5]))
    at = draw(st.sampled_from([None, *range(active + 1)]))
    if at is not None:  # an inactive component: the kernel skips it, its row stays 0
        requests = np.insert(requests, at, np.r_[1, rng.integers(0, 3, size=k - 1)], axis=0)
        replicas = np.insert(replicas, at, 0)
        masks = np.insert(masks, at, rng.random(n) < 0.5, axis=0)
    upper = draw(st.sampled_from([0, 1, 2, 5, 40, MAX_INT32]))
    return available, requests, replicas, masks, upper
