"""The two-component first-fit kernel (`firstfit_pair`, what Karmada's order runs for Flink
and PyTorchJob shapes) equals the plain rescanning reference: same count, placement and
leftover, and the same limiting component as the general kernel. The members are built to
reach each of its paths: a share that fits whole on the pointer's node, walks, a failing
set (each component), 1-4 columns, steps of several sets on the pointers' nodes, and the
first component behind the second while the second runs out of nodes."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from estimator.kernels import firstfit_pair
from tests.support.kernelcheck import assert_first_fit_as_general, few_components
from tests.support.randmember import flink_arrays

MAX_INT32 = 2**31 - 1
INT64_MAX = 2**63 - 1
SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _check(available, requests, replicas, masks, upper):
    assert firstfit_pair.pair_components(requests, replicas) is not None  # the kernel under test runs
    return assert_first_fit_as_general(available, requests, replicas, masks, upper)


def pairs():
    return few_components(2)


@SETTINGS
@given(pairs())
def test_two_components_pack_exactly_as_the_rescan(case):
    _check(*case)


@st.composite
def behind(draw):
    """A small first component on a big node 0 and a second that needs a column only a few
    later nodes have (a master and its GPU workers): the first stays behind the second
    for many sets, and the second may run out of nodes part-way."""
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 40))
    available = np.zeros((n, 3), dtype=np.int64)
    available[:, 0] = rng.integers(0, 30, size=n)
    available[:, 1] = rng.integers(0, 40, size=n)
    available[:, 2] = np.where(rng.random(n) < 0.3, rng.integers(0, 9, size=n), 0)
    available[0] = [draw(st.integers(1, 200)), draw(st.integers(1, 200)), 0]
    requests = np.array([[1, int(rng.integers(0, 3)), 0], [1, int(rng.integers(0, 5)), int(rng.integers(1, 3))]],
                        dtype=np.int64)
    replicas = np.array([draw(st.integers(1, 3)), draw(st.integers(1, 8))], dtype=np.int64)
    masks = rng.random((2, n)) < draw(st.sampled_from([1.0, 0.9]))
    masks[0, 0] = True
    upper = draw(st.sampled_from([1, 3, 17, MAX_INT32]))
    return available, requests, replicas, masks, upper


@SETTINGS
@given(behind())
def test_first_component_behind_the_second_packs_exactly_as_the_rescan(case):
    _check(*case)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32 - 1), st.integers(1, 8), st.integers(1, 8))
def test_amounts_near_the_int64_limit(seed, ra, rb):
    """Free amounts near 2**63 and requests up to the largest the kernel takes: its shares
    and its steps' products must not overflow."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 8))
    big = firstfit_pair._FEW_REQUEST
    available = np.zeros((n, 2), dtype=np.int64)
    available[:, 0] = rng.integers(0, 60, size=n)
    available[:, 1] = INT64_MAX - rng.integers(0, 2**40, size=n)
    requests = np.array([[1, big - int(rng.integers(0, 2**40))], [1, int(rng.integers(1, big))]], dtype=np.int64)
    masks = np.ones((2, n), dtype=np.bool_)
    _check(available, requests, np.array([ra, rb], dtype=np.int64), masks, MAX_INT32)


def test_a_sets_heavy_flink_member():
    """Jobmanager 1 x {1 pod, 1 cpu, 2Gi} and taskmanagers 6 x {1 pod, 2 cpu, 4Gi} on 150
    partly used nodes (a few sets each): the benchmark's shape, small enough for the
    reference."""
    n = 150
    got = _check(*flink_arrays(11, n, pods=(60, 110), cpu_halves=(2, 90), mask_share=0.9), MAX_INT32)
    assert got.sets > n  # sets-heavy, as intended


def test_problems_it_does_not_take_go_to_the_general_kernel():
    requests = np.array([[1, 1], [1, 1]], dtype=np.int64)
    assert firstfit_pair.pair_components(requests, np.array([1, 9])) is None  # more than _FEW replicas
    assert firstfit_pair.pair_components(requests, np.array([1, 0])) is None  # one component
    assert firstfit_pair.pair_components(np.ones((2, 5), dtype=np.int64), np.array([1, 1])) is None  # 5 columns
    assert firstfit_pair.pair_components(requests * 2**60, np.array([1, 1])) is None  # requests too big
    assert firstfit_pair.pair_components(np.ones((3, 2), dtype=np.int64), np.array([0, 2, 3])) == (1, 2)
