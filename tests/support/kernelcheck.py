"""The first-fit kernel checked against the naive rescan (tests/support/naive.py), for the
kernel tests that each compare it on their own members."""

from __future__ import annotations

from estimator import kernels
from tests.support import naive


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
