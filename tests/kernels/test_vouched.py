"""Vouched arrays: checked once, then the kernels skip the scans over every value. The
answers must be those of the fully checked path, and anything not vouched for in its role
(a copy, a view, another role, a dead array's reused id) is checked as before."""

from __future__ import annotations

import gc

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings

from estimator import kernels
from estimator.kernels import _arrays
from estimator.kernels._arrays import AMOUNTS, FLAGS, REQUEST_ROWS, vouch, vouched, vouched_copy
from tests.kernels.test_properties import clusters
from tests.support import naive

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def vouched_problem(available, requests, replicas, masks):
    """Private copies of the arrays, vouched for as the node-resource plugin does."""
    return (vouch("available", available.copy(), AMOUNTS), vouch("requests", requests.copy(), REQUEST_ROWS),
            vouch("replicas", replicas.copy(), AMOUNTS), vouch("masks", masks.copy(), FLAGS))


@SETTINGS
@given(clusters())
def test_vouched_arrays_get_the_answers_of_the_checked_path_and_of_the_naive_rescan(case):
    available, requests, replicas, masks, upper = case
    avail, reqs, reps, mask = vouched_problem(available, requests, replicas, masks)
    assert vouched(avail, AMOUNTS) and vouched(reqs, REQUEST_ROWS)

    work = vouched_copy(avail)
    assert vouched(work, AMOUNTS)
    fast = kernels.first_fit_sets(work, reqs, reps, mask, upper)
    checked_left = available.copy()
    checked = kernels.first_fit_sets(checked_left, requests, replicas, masks, upper)
    sets, placement, naive_left = naive.first_fit(available, requests, replicas, masks, upper)
    assert fast.sets == checked.sets == sets
    assert fast.placement.tolist() == checked.placement.tolist() == placement
    assert work.tolist() == checked_left.tolist() == naive_left

    assert kernels.set_bound(avail, reqs, reps, mask, upper) == kernels.set_bound(available, requests, replicas,
                                                                                   masks, upper)
    best_fast = kernels.best_sets(avail, reqs, reps, mask, upper, budget=1.0)
    best_checked = kernels.best_sets(available, requests, replicas, masks, upper, budget=1.0)
    assert (best_fast.sets, best_fast.bound, best_fast.placement.tolist()) == (
        best_checked.sets, best_checked.bound, best_checked.placement.tolist())
    for c in range(reqs.shape[0]):
        assert kernels.sum_fit(avail, reqs[c], mask[c]) == kernels.sum_fit(available, requests[c], masks[c])
    assert np.array_equal(avail, available), "vouched inputs are not consumed"


def small():
    available = np.array([[4, 8], [2, 3]], dtype=np.int64)
    requests = np.array([[1, 2]], dtype=np.int64)
    replicas = np.array([1], dtype=np.int64)
    masks = np.ones((1, 2), dtype=np.bool_)
    return available, requests, replicas, masks


@pytest.mark.parametrize("name, array, role, message", [
    ("available", np.array([[1, -1]], dtype=np.int64), AMOUNTS, "available must not be negative"),
    ("requests", np.array([[2, 1]], dtype=np.int64), REQUEST_ROWS, "exactly 1 pod in column 0"),
    ("requests", np.array([[1, -3]], dtype=np.int64), REQUEST_ROWS, "requests must not be negative"),
    ("replicas", np.array([1, 2], dtype=np.int32), AMOUNTS, "replicas must have dtype int64"),
    ("masks", np.ones((1, 2), dtype=np.int64), FLAGS, "masks must have dtype bool"),
    ("available", np.zeros((4, 4), dtype=np.int64)[:, ::2], AMOUNTS, "C-contiguous"),
])
def test_vouching_runs_the_checks_and_names_the_argument(name, array, role, message):
    with pytest.raises(ValueError, match=message):
        vouch(name, array, role)
    assert not vouched(array, role)


def test_a_copy_or_view_of_a_vouched_array_is_checked_in_full():
    available, requests, replicas, masks = vouched_problem(*small())
    plain_copy = available.copy()
    assert not vouched(plain_copy, AMOUNTS)
    plain_copy[1, 1] = -5
    with pytest.raises(ValueError, match="available must not be negative"):
        kernels.first_fit_sets(plain_copy, requests, replicas, masks, 10)
    assert not vouched(available[:1], AMOUNTS)
    assert not vouched(vouched_copy(np.ones((2, 2), dtype=np.int64)), AMOUNTS), "an unvouched source stays unvouched"


def test_a_vouched_array_in_another_role_is_checked_for_that_role():
    available, _, replicas, masks = vouched_problem(*small())
    rows = vouch("rows", np.array([[2, 1]], dtype=np.int64), AMOUNTS)  # fine as amounts, not as request rows
    with pytest.raises(ValueError, match="exactly 1 pod in column 0"):
        kernels.first_fit_sets(vouched_copy(available), rows, replicas, masks, 10)


def test_shapes_and_flags_of_vouched_arrays_are_still_checked():
    available, requests, replicas, masks = vouched_problem(*small())
    wrong_masks = vouch("masks", np.ones((1, 3), dtype=np.bool_), FLAGS)
    with pytest.raises(ValueError, match=r"masks has shape \(1, 3\), expected \(1, 2\)"):
        kernels.first_fit_sets(vouched_copy(available), requests, replicas, wrong_masks, 10)
    with pytest.raises(ValueError, match=r"replicas has shape \(2,\)"):
        kernels.best_sets(available, requests, vouch("replicas", np.ones(2, dtype=np.int64), AMOUNTS), masks, 10)
    available.setflags(write=False)
    with pytest.raises(ValueError, match="writable C-contiguous"):
        kernels.first_fit_sets(available, requests, replicas, masks, 10)
    with pytest.raises(ValueError, match="upper must be in"):
        kernels.first_fit_sets(vouched_copy(available), requests, replicas, masks, -1)


def test_a_dead_array_is_forgotten():
    array = vouch("available", np.ones((3, 2), dtype=np.int64), AMOUNTS)
    key = id(array)
    assert key in _arrays._VOUCHED
    del array
    gc.collect()
    assert key not in _arrays._VOUCHED


def test_vouched_arrays_skip_the_scans_and_others_do_not(monkeypatch):
    available, requests, replicas, masks = vouched_problem(*small())  # vouching scans, once
    scanned = []
    monkeypatch.setattr(_arrays, "_no_negatives", lambda name, array: scanned.append(name))
    kernels.first_fit_sets(vouched_copy(available), requests, replicas, masks, 10)
    kernels.best_sets(available, requests, replicas, masks, 10)
    assert scanned == []
    kernels.first_fit_sets(available.copy(), requests, replicas, masks, 10)
    assert scanned == ["available", "requests", "replicas"]  # one unvouched array: every check
