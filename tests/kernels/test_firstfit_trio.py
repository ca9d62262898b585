"""The three-component first-fit kernel (`firstfit_trio`, what Karmada's order runs for Ray
shapes) equals the plain rescanning reference: same count, placement and leftover, and
the same limiting component as the general kernel. Members from two generators: random
nodes of a few sizes (1-4 columns, zero-request columns, masks, runs of identical nodes for the
all-whole steps, an inactive fourth component) and Ray-like ones (a head and a cpu group
on cpu nodes, a gpu group on a few GPU nodes, some of them near full)."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from estimator.kernels import firstfit_trio
from tests.support.kernelcheck import assert_first_fit_as_general, few_components

MAX_INT32 = 2**31 - 1
INT64_MAX = 2**63 - 1
SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _check(available, requests, replicas, masks, upper):
    assert firstfit_trio.trio_components(requests, replicas.tolist()) is not None  # the kernel under test runs
    return assert_first_fit_as_general(available, requests, replicas, masks, upper)


def trios():
    return few_components(3)


@SETTINGS
@given(trios())
def test_three_components_pack_exactly_as_the_rescan(case):
    _check(*case)


@st.composite
def rays(draw):
    """[pods, cpu, memory, gpu] nodes, a share of them with GPUs, some near full: a head
    and a cpu group needing no GPU, a gpu group needing them, masks alike or GPU-only."""
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 60))
    available = np.zeros((n, 4), dtype=np.int64)
    available[:, 0] = rng.integers(0, 12, size=n)
    available[:, 1] = rng.integers(0, 40, size=n)
    available[:, 2] = rng.integers(0, 160, size=n)
    available[:, 3] = np.where(rng.random(n) < draw(st.sampled_from([0.1, 0.3, 0.8])), rng.integers(0, 9, size=n), 0)
    full = rng.random(n) < 0.2  # near full: a unit or two left
    available[full, 1:3] = rng.integers(0, 3, size=(int(full.sum()), 2))
    requests = np.array([[1, int(rng.integers(0, 3)), int(rng.integers(0, 9)), 0],
                         [1, int(rng.integers(1, 5)), int(rng.integers(0, 17)), 0],
                         [1, int(rng.integers(1, 9)), int(rng.integers(0, 33)), int(rng.integers(1, 3))]], dtype=np.int64)
    replicas = np.array([draw(st.integers(1, 2)), draw(st.integers(1, 8)), draw(st.integers(1, 4))], dtype=np.int64)
    masks = rng.random((3, n)) < draw(st.sampled_from([1.0, 0.9]))
    if draw(st.booleans()):
        masks[2] &= available[:, 3] > 0  # GPU-only filter for the gpu group
    upper = draw(st.sampled_from([1, 3, 17, MAX_INT32]))
    return available, requests, replicas, masks, upper


@SETTINGS
@given(rays())
def test_ray_shaped_members_pack_exactly_as_the_rescan(case):
    _check(*case)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32 - 1), st.integers(1, 8), st.integers(1, 8), st.integers(1, 8))
def test_amounts_near_the_int64_limit(seed, ra, rb, rc):
    """Free amounts near 2**63 and requests up to the largest the kernel takes: its shares,
    their sums on one node and its steps' products must not overflow."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 8))
    big = firstfit_trio._FEW_REQUEST
    available = np.zeros((n, 2), dtype=np.int64)
    available[:, 0] = rng.integers(0, 60, size=n)
    available[:, 1] = INT64_MAX - rng.integers(0, 2**40, size=n)
    requests = np.array([[1, big - int(rng.integers(0, 2**40))], [1, int(rng.integers(1, big))],
                         [1, big]], dtype=np.int64)
    masks = np.ones((3, n), dtype=np.bool_)
    _check(available, requests, np.array([ra, rb, rc], dtype=np.int64), masks, MAX_INT32)


def test_problems_it_does_not_take_go_to_the_general_kernel():
    requests = np.ones((3, 2), dtype=np.int64)
    assert firstfit_trio.trio_components(requests, [1, 9, 1]) is None  # more than _FEW replicas
    assert firstfit_trio.trio_components(requests, [1, 0, 1]) is None  # two components
    assert firstfit_trio.trio_components(np.ones((3, 5), dtype=np.int64), [1, 1, 1]) is None  # 5 columns
    assert firstfit_trio.trio_components(requests * 2**59, [1, 1, 1]) is None  # requests too big
    assert firstfit_trio.trio_components(np.ones((4, 2), dtype=np.int64), [2, 0, 3, 1]) == (0, 2, 3)


def test_warmup_compiles_the_trio_kernel():
    from estimator import kernels

    kernels.warmup()
    assert firstfit_trio.trio_first_fit.signatures
