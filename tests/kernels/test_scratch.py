"""The general first-fit kernel's per-thread scratch (`firstfit._mark`, reused across calls
instead of a node-sized allocation per call): whatever an earlier call left in it, the
answer, placement and leftover are the rescan's; threads answering at once each get their
own."""

from __future__ import annotations

import threading

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from estimator import kernels
from estimator.kernels import firstfit
from tests.support import naive

SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _member(seed: int):
    """Three components of a few replicas on nodes holding several sets each, so the bulk
    steps run and mark the nodes their stationary components stay on."""
    rng = np.random.default_rng(seed)
    n, k = int(rng.integers(1, 30)), int(rng.integers(1, 4))
    available = rng.integers(0, 120, size=(n, k)).astype(np.int64)
    requests = rng.integers(0, 4, size=(3, k)).astype(np.int64)
    requests[:, 0] = 1
    replicas = rng.integers(0, 4, size=3).astype(np.int64)
    masks = rng.random((3, n)) < rng.choice([1.0, 0.8])
    return available, requests, replicas, masks, int(rng.choice([3, 40, 2**31 - 1]))


def _general_as_naive(case) -> None:
    available, requests, replicas, masks, upper = case
    left = available.copy()
    got = firstfit.general_first_fit(left, requests, replicas, masks, upper)
    sets, placement, naive_left = naive.first_fit(available, requests, replicas, masks, upper)
    assert (got.sets, got.placement.tolist(), left.tolist()) == (sets, placement, naive_left)


@SETTINGS
@given(st.integers(0, 2**32 - 1), st.integers(0, 6))
def test_whatever_the_scratch_holds_the_answer_is_the_rescans(seed, stale):
    case = _member(seed)
    # Stale stamps from "earlier calls": small values, the ones a new call's steps use.
    mark = firstfit._mark(case[0].shape[0])
    mark[:] = np.random.default_rng(seed).integers(0, stale + 1, size=mark.shape[0])
    _general_as_naive(case)


def test_threads_packing_at_once_get_their_own_scratch():
    """Eight threads, each packing its own members over and over (the kernels release the
    GIL): every answer is the one packed alone."""
    cases = [_member(seed) for seed in range(40)]
    alone = []
    for available, requests, replicas, masks, upper in cases:
        packing = kernels.first_fit_sets(available.copy(), requests, replicas, masks, upper)
        alone.append((packing.sets, packing.placement.tolist()))
    wrong = []

    def run(offset: int) -> None:
        for r in range(30):
            i = (offset + r) % len(cases)
            available, requests, replicas, masks, upper = cases[i]
            packing = firstfit.general_first_fit(available.copy(), requests, replicas, masks, upper)
            if (packing.sets, packing.placement.tolist()) != alone[i]:
                wrong.append(i)

    threads = [threading.Thread(target=run, args=(t * 5,)) for t in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert wrong == []
