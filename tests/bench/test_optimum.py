"""benchmarks/optimum.py, the exact optimum of the 20-200-node quality members, agrees with
tests/support/naive.exhaustive wherever that can run, from any certified lower bound; and
the quality generators make the members their docstrings promise."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from benchmarks import quality
from benchmarks.optimum import optimum
from tests.kernels.test_properties import clusters
from tests.support import naive


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_the_frontier_optimum_is_the_exhaustive_one(case):
    available, requests, replicas, masks, upper = case
    expected = naive.exhaustive(available, requests, replicas, masks, upper)[0]
    assert optimum(available, requests, replicas, masks, upper) == expected
    lower = naive.first_fit(available, requests, replicas, masks, upper)[0]
    assert optimum(available, requests, replicas, masks, upper, lower) == expected


@pytest.mark.parametrize("seed", range(25))
def test_the_frontier_optimum_matches_exhaustive_on_generated_gpu_members(seed):
    """The quality generators' own kind of member, cut to a size naive.exhaustive can take."""
    rng = np.random.default_rng(seed)
    available, requests, replicas, masks, upper = quality.gpu_pools(rng)
    keep = rng.choice(available.shape[0], size=6, replace=False)
    available, masks = available[np.sort(keep)], masks[:, np.sort(keep)]
    replicas = np.minimum(replicas, 3)
    assert optimum(available, requests, replicas, masks, upper) == naive.exhaustive(
        available, requests, replicas, masks, upper)[0]


@pytest.mark.parametrize("seed", range(40))
def test_a_fenced_pool_keeps_every_component_on_its_1_to_8_nodes(seed):
    available, requests, replicas, masks, upper, fence = quality.fenced_pool(np.random.default_rng(seed))
    assert 500 <= available.shape[0] <= 2000 and 1 <= len(fence) <= 8 and 1 <= len(replicas) <= 4
    outside = np.setdiff1d(np.arange(available.shape[0]), fence)
    assert not masks[:, outside].any()
    assert (available[outside, 0] > 0).all()  # the other nodes have room: only labels keep the job off them


@pytest.mark.parametrize("seed", range(40))
def test_gpu_pool_members_have_20_to_200_nodes_of_2_to_4_gpu_sizes(seed):
    available, requests, replicas, masks, upper = quality.gpu_pools(np.random.default_rng(seed))
    assert 20 <= available.shape[0] <= 200 and 1 <= len(replicas) <= 3
    assert (requests[:, 0] == 1).all() and (replicas >= 1).all()


def test_every_generator_runs_against_its_optimum_with_no_over_promise():
    result = quality.small_members(6, seed=11)
    assert set(result) == set(quality.GENERATORS)
    for name, g in result.items():
        for label, s in g["modes"].items():
            assert s["over_promises"] == s["below_first_fit"] == s["bound_below_optimum"] == 0, (name, label)
            assert (s["mean_search_work"] is None) == (label == "first-fit")
