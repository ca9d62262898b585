"""First-fit on sets-heavy members (hundreds of sets, a few per node, components sharing
nodes as a Flink jobmanager and its taskmanagers do) equals the plain rescanning
reference: same count, same placement, same leftover. The small random clusters of the
property tests rarely reach the bulk steps; these do, on every node."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.kernelcheck import assert_first_fit_as_naive
from tests.support.randmember import flink_arrays

MAX_INT32 = 2**31 - 1
GI = 2**30


@st.composite
def flink_like(draw):
    """pods, cpu (millicores), memory (bytes, above 2**31): small nodes holding 1-4 sets of
    a jobmanager (1 x 1 cpu, 2Gi) and taskmanagers (r x 2 cpu, 4Gi), partly used."""
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 60))
    available = np.zeros((n, 3), dtype=np.int64)
    available[:, 0] = rng.integers(0, 40, size=n)
    available[:, 1] = rng.integers(0, 80, size=n) * 500
    available[:, 2] = rng.integers(0, 48, size=n) * GI + rng.integers(0, 2, size=n) * (GI // 2)
    jm_cpu, tm_cpu = draw(st.sampled_from([(1000, 2000), (500, 2000), (2000, 1000), (1000, 1000)]))
    requests = np.array([[1, jm_cpu, 2 * GI], [1, tm_cpu, 4 * GI]], dtype=np.int64)
    replicas = np.array([draw(st.integers(0, 2)), draw(st.integers(1, 8))], dtype=np.int64)
    masks = rng.random((2, n)) < draw(st.sampled_from([1.0, 0.9, 0.6]))
    if draw(st.booleans()):  # taskmanagers first in the set
        requests, replicas, masks = requests[::-1].copy(), replicas[::-1].copy(), masks[::-1].copy()
    upper = draw(st.sampled_from([MAX_INT32, 1, 7, 50]))
    return available, requests, replicas, masks, upper


@st.composite
def mixed(draw):
    """Three components, pods or a GPU column binding, nodes of a few repeated sizes (runs of
    identical nodes: long bulk steps) with occasional odd ones between."""
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 50))
    sizes = np.array([[8, 16000, 4], [30, 64000, 8], [3, 4000, 0], [110, 96000, 2]], dtype=np.int64)
    available = sizes[rng.integers(0, len(sizes), size=n)].copy()
    odd = rng.random(n) < 0.3
    available[odd] = available[odd] * rng.integers(1, 4, size=(int(odd.sum()), 1)) // 3
    requests = np.array([[1, 500, 0], [1, 2000, 1], [1, 1000, 0]], dtype=np.int64)
    replicas = np.array([draw(st.integers(0, 2)), draw(st.integers(0, 4)), draw(st.integers(0, 6))], dtype=np.int64)
    masks = rng.random((3, n)) < 0.85
    upper = draw(st.sampled_from([MAX_INT32, 3, 40]))
    return available, requests, replicas, masks, upper


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(flink_like())
def test_flink_like_members_pack_exactly_as_the_rescan(case):
    assert_first_fit_as_naive(*case)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mixed())
def test_mixed_members_pack_exactly_as_the_rescan(case):
    assert_first_fit_as_naive(*case)


def test_a_flink_like_member_with_many_sets_per_node_run():
    """A fixed member large enough that every kind of step happens many times."""
    n = 120
    got = assert_first_fit_as_naive(*flink_arrays(7, n, pods=(20, 110), cpu_halves=(8, 80)), MAX_INT32)
    assert got.sets > 2 * n // 3  # sets-heavy, as intended
