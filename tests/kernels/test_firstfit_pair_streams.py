"""The two-component first-fit kernel's steps per node (`firstfit_pair`) against the plain
rescanning reference and the general kernel, on members built to reach each step: many
sets per node (both pointers on one node, the set where the second component spills onto
the next node), the first component in the holes behind the second, the first ahead of
the second (a column only some nodes have), masks, request columns of 0, the last node
running out part-way, amounts too large for the spill's one-comparison check, 1-4
columns, up to the kernel's replica limit. The same kernel source run as plain Python,
with one deliberate fault at a time, must fail the same comparison: the members reach
what each step does."""

from __future__ import annotations

import inspect
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from estimator import kernels
from estimator.kernels import _arith, _nodefit, firstfit, firstfit_pair
from estimator.kernels._arrays import readonly
from tests.support import naive

MAX_INT32 = 2**31 - 1
SETTINGS = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _member(rng, kind: str):
    """One random member of `kind` (available, requests, replicas, masks, upper); see the
    module docstring. Sizes keep the reference's rescans cheap."""
    k = int(rng.integers(1, 5))
    few = firstfit_pair._FEW
    replicas = np.array([rng.integers(1, few + 1), rng.integers(1, few + 1)], dtype=np.int64)
    requests = rng.integers(0, 4, size=(2, k)).astype(np.int64)
    if kind == "dense":  # few nodes holding dozens of sets: the steps on one node
        n = int(rng.integers(1, 8))
        replicas = np.array([rng.integers(1, 4), rng.integers(1, 7)], dtype=np.int64)
        available = rng.integers(0, 400, size=(n, k)).astype(np.int64)
    elif kind == "huge":  # like "dense", the last column in units of 2**56: wants of a few
        # dozen replicas times a request pass int64, so the spill and the walks divide
        n, k = int(rng.integers(2, 8)), max(k, 2)  # (not pods: that would allow 2**56 sets)
        requests = rng.integers(1, 4, size=(2, k)).astype(np.int64)
        replicas = np.array([rng.integers(1, 4), rng.integers(1, 7)], dtype=np.int64)
        available = rng.integers(0, 400, size=(n, k)).astype(np.int64)
        available[:, k - 1] = rng.integers(0, 128, size=n) * 2**56  # below 2**63
        requests[:, k - 1] *= 2**56
    elif kind == "flink":  # the second a multiple of the first: the first in its holes
        n = int(rng.integers(2, 40))
        requests[1] = requests[0] * int(rng.integers(1, 4))
        replicas[0] = int(rng.integers(1, 3))
        available = rng.integers(0, 60, size=(n, k)).astype(np.int64)
    elif kind == "ahead":  # the first needs a column few nodes have: it runs ahead
        n = int(rng.integers(2, 30))
        k = max(k, 2)
        requests = rng.integers(0, 3, size=(2, k)).astype(np.int64)
        requests[0, k - 1] = int(rng.integers(1, 3))
        requests[1, k - 1] = 0
        available = rng.integers(0, 40, size=(n, k)).astype(np.int64)
        available[:, k - 1] = np.where(rng.random(n) < 0.3, rng.integers(0, 12, size=n), 0)
    else:  # "scarce": runs out part-way, often on the last node
        n = int(rng.integers(1, 12))
        available = rng.integers(0, 16, size=(n, k)).astype(np.int64)
    requests[:, 0] = 1  # pods
    if rng.random() < 0.3:  # a request column of 0 for one component
        requests[int(rng.integers(0, 2)), int(rng.integers(0, k))] = 0
        requests[:, 0] = 1
    if rng.random() < 0.4:  # runs of identical nodes
        available = np.repeat(available[: max(1, n // 3)], 3, axis=0)[:n].copy()
    n = available.shape[0]
    masks = rng.random((2, n)) < rng.choice([1.0, 0.85, 0.5])
    upper = int(rng.choice([1, 2, 7, 50, MAX_INT32]))
    return available, requests, replicas, masks, upper


KINDS = ["dense", "flink", "ahead", "scarce", "huge"]


def _mismatch(run, case) -> str | None:
    """What `run` (a pair_first_fit) gets wrong against the reference on `case`, or None."""
    available, requests, replicas, masks, upper = case
    want_sets, want_placement, want_left = naive.first_fit(available, requests, replicas, masks, upper)
    left = available.copy()
    placement = np.zeros(masks.shape, dtype=np.int64)
    info = np.array([-1, 0], dtype=np.int64)
    try:
        # Read-only inputs, as the dispatch passes them: one compiled signature.
        sets = run(left, readonly(requests), readonly(replicas), readonly(masks), 0, 1, upper, placement, info)
    except IndexError as error:  # plain Python checks bounds: an index past the end
        return f"raised {error!r}"
    if sets != want_sets:
        return f"sets {sets} != {want_sets}"
    if placement.tolist() != want_placement:
        return "placement differs"
    if left.tolist() != want_left:
        return "leftover differs"
    return None


def _check(case):
    available, requests, replicas, masks, upper = case
    assert firstfit_pair.pair_components(requests, replicas) == (0, 1)  # the pair kernel runs
    assert _mismatch(firstfit_pair.pair_first_fit, case) is None
    left = available.copy()
    got = kernels.first_fit_sets(left, requests, replicas, masks, upper)  # through the dispatch
    general_left = available.copy()
    general = firstfit.general_first_fit(general_left, requests, replicas, masks, upper)
    assert (got.sets, got.placement.tolist(), left.tolist(), got.limiting) == (
        general.sets, general.placement.tolist(), general_left.tolist(), general.limiting)


@SETTINGS
@given(st.sampled_from(KINDS), st.integers(0, 2**32 - 1))
def test_steps_per_node_pack_exactly_as_the_rescan(kind, seed):
    _check(_member(np.random.default_rng(seed), kind))


def test_a_member_with_hundreds_of_sets_per_node():
    """Two nodes holding hundreds of sets each: steps of many sets on one node, the set
    that spills onto the second node, and the end of the cluster."""
    available = np.array([[700, 2000, 900], [650, 1999, 1000]], dtype=np.int64)
    requests = np.array([[1, 1, 2], [1, 3, 1]], dtype=np.int64)
    for ra in range(1, 4):
        for rb in (1, 5, 8):
            _check((available, requests, np.array([ra, rb], dtype=np.int64), np.ones((2, 2), dtype=np.bool_),
                    MAX_INT32))


def _python_kernel(faults: tuple[tuple[str, str], ...] = ()):
    """`pair_first_fit` run as plain Python from the module's source and its helpers'
    (`_arith`, `_nodefit`, pasted in front; `mulhi` in Python), with each (old, new) in
    `faults` replaced (old must occur exactly once)."""
    source = inspect.getsource(_arith) + inspect.getsource(_nodefit) + inspect.getsource(firstfit_pair)
    source = re.sub(r"^from (__future__|\._arith|\._nodefit|\._numba) import .*\n", "", source, flags=re.M)
    for old, new in faults:
        assert source.count(old) == 1, old
        source = source.replace(old, new)

    def kernel(fn=None, **_):
        return fn if fn is not None else (lambda f: f)

    def mulhi(a, b):
        return np.uint64((int(a) * int(b)) >> 64)

    space = {"kernel": kernel, "mulhi": mulhi, "__name__": "pair_python"}
    exec(compile(source, "pair_python", "exec"), space)  # noqa: S102 (the module's own source)
    return space["pair_first_fit"]


_CORPUS_SIZE = 150


def _corpus():
    return [_member(np.random.default_rng(seed), KINDS[seed % len(KINDS)]) for seed in range(_CORPUS_SIZE)]


def test_the_kernel_source_as_plain_python_matches_the_rescan():
    run = _python_kernel()
    for case in _corpus():
        assert _mismatch(run, case) is None


_INDENT = " " * 16
_BEHIND_TAKE = "pb = p\n" + _INDENT + "    sub(available, pa, k1, k2, k3, wa0, wa1, wa2, wa3, "
FAULTS = {
    "both on one node, too many sets": ("by_set, upper - sets)", "by_set, upper - sets + 1)"),
    "both on one node, B's mask ignored": ("and masks[first, pa] and masks[second, pa]:", "and masks[first, pa]:"),
    "both on one node, p's columns not written back before the general steps": (
        "x3 >= wa3):\n" + _INDENT + "    _store(available, p, k1, k2, k3, x0, x1, x2, x3)\n",
        "x3 >= wa3):\n"),
    "both on one node, a repeated column written back after the real one": (
        "    available[p, k3] = x3\n    available[p, k2] = x2\n    available[p, k1] = x1\n",
        "    available[p, k1] = x1\n    available[p, k2] = x2\n    available[p, k3] = x3\n"),
    "spill: the next node's step starts from its columns before B's replicas": (
        "x0, x1, x2, x3 = y0 - want * b0, y1 - want * b1, y2 - want * b2, y3 - want * b3\n",
        "x0, x1, x2, x3 = y0, y1, y2, y3\n" + _INDENT + "    sub(available, q, k1, k2, k3, b0, b1, b2, b3, want)\n"),
    "spill: B takes nothing on p": ("by_b, rb - 1)", "by_b, 0)"),
    "spill: one set of A too many": ("t = 1 + t1", "t = 2 + t1"),
    "spill: B's replicas on p + 1 although it may not use it": (
        "want <= few_b\n" + _INDENT + "    and masks[second, q]\n", "want <= few_b\n"),
    "spill failing: A's share of the failed set given back": ("done + 1 - t)", "done - t)"),
    "behind failing: A's share of the failed set not kept": ("wa3, done + 1)", "wa3, done)"),
    "behind: skip ignores A's mask": ("not (masks[first, pa] and holds(", "not (holds("),
    "behind: A's share taken for one set only": (_BEHIND_TAKE + "s)", _BEHIND_TAKE + "1)"),
    "ahead: B's fill passes A's node": ("while p < pa:", "while p < n_nodes:"),
    "ahead: replicas of the incomplete set kept": (
        "b3,\n" + _INDENT + "        True,\n", "b3,\n" + _INDENT + "        False,\n"),
    "ahead: B's pointer jumps to A's node": ("pb = p\n" + _INDENT + "if s > 0:", "pb = pa\n" + _INDENT + "if s > 0:"),
    "walk: a want past its bound placed one over the fit": (
        "f = fit(available, p, k1, k2, k3, r0, r1, r2, r3, want)", "f = fit(available, p, k1, k2, k3, r0, r1, r2, r3, want) + 1"),
    "walk: a want within its bound not held to the first column": (
        "    if f * r0 > available[p, 0]:\n        f = quotient(available[p, 0], r0)\n", ""),
    "hand set: A's failed share left in placement": (
        _INDENT + "unplace(placement, second, start_b, took_b, pb)\n"
        + _INDENT + "unplace(placement, first, start_a, took_a, pa)\n",
        _INDENT + "unplace(placement, second, start_b, took_b, pb)\n"),
}


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_a_faulty_kernel_fails_the_comparison(fault):
    run = _python_kernel((FAULTS[fault],))
    with np.errstate(over="ignore"):  # a faulty kernel may overdraw a node; its int64 steps then wrap
        assert any(_mismatch(run, case) is not None for case in _corpus()), fault
