"""First-fit's limiting component bound given first-fit's own answer (`fit.first_fit_bound`,
`set_bound(..., first_fit=True)`): a job of one component skips the pass over the nodes, and
the bound is the one the pass gives, on random clusters and at int64's edge."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from estimator import kernels
from estimator.kernels import firstfit, fit
from estimator.kernels._arrays import problem, readonly
from tests.kernels.test_properties import clusters

INT64_MAX = 2**63 - 1
MAX_INT32 = 2**31 - 1


@st.composite
def one_component_jobs(draw):
    """A cluster whose job has one component with replicas (the others have none)."""
    available, requests, replicas, masks, upper = draw(clusters(max_nodes=8, max_amount=12))
    keep = draw(st.integers(0, len(replicas) - 1))
    replicas = np.zeros_like(replicas)
    replicas[keep] = draw(st.integers(1, 4))
    return available, requests, replicas, masks, upper


def assert_as_the_pass(available, requests, replicas, masks, upper):
    first_fit = kernels.first_fit_sets(available.copy(), requests, replicas, masks, upper)
    p = problem(available, requests, replicas, masks, upper, in_place=False)
    expected = fit.component_bound(p.available, p.requests, p.replicas, p.masks, first_fit.limiting, p.upper)
    assert (
        fit.first_fit_bound(p.available, p.requests, p.replicas, p.masks, p.upper, first_fit.sets, first_fit.limiting)
        == expected
    )
    staged = kernels.set_bound(available, requests, replicas, masks, upper, first_fit.sets, first_fit.limiting)
    assert (
        kernels.set_bound(
            available, requests, replicas, masks, upper, first_fit.sets, first_fit.limiting, first_fit=True
        )
        == staged
    )
    assert kernels.first_fit_bounded(available.copy(), requests, replicas, masks, upper).bound == staged


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(one_component_jobs(), clusters()))
def test_the_bound_from_first_fits_answer_is_the_bound_of_the_pass(case):
    assert_as_the_pass(*case)


def test_a_fit_sum_past_int64_still_takes_the_pass():
    # 2**62 pod slots on each of 4 nodes, replicas of 2**61: the fits add up past int64,
    # so the pass (saturating, as before) gives the bound, not first-fit's count.
    available = np.full((4, 1), 2**62, dtype=np.int64)
    requests = np.ones((1, 1), dtype=np.int64)
    replicas = np.array([2**61], dtype=np.int64)
    masks = np.ones((1, 4), dtype=np.bool_)
    assert_as_the_pass(available, requests, replicas, masks, MAX_INT32)


def test_a_one_component_job_on_a_large_member_skips_the_pass(monkeypatch):
    rng = np.random.default_rng(7)
    available = np.column_stack([rng.integers(0, 110, 2000), rng.integers(0, 64_000, 2000)]).astype(np.int64)
    requests = np.array([[1, 500]], dtype=np.int64)
    replicas = np.array([3], dtype=np.int64)
    masks = np.ones((1, 2000), dtype=np.bool_)
    expected = kernels.set_bound(available, requests, replicas, masks, MAX_INT32, -1, 0)
    monkeypatch.setattr(fit, "_sum_fit", None)  # any pass would fail
    first_fit = kernels.first_fit_sets(available.copy(), requests, replicas, masks, MAX_INT32)
    assert (
        kernels.set_bound(
            available, requests, replicas, masks, MAX_INT32, first_fit.sets, first_fit.limiting, first_fit=True
        )
        == expected
        == first_fit.sets
    )
    assert kernels.best_sets(available, requests, replicas, masks, MAX_INT32, budget=1.0).bound == expected


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(one_component_jobs(), clusters(max_nodes=8, max_amount=12)))
def test_first_fit_with_its_bound_in_one_call_is_first_fit_bounded(case):
    """`first_fit_with_bound` (first-fit and the bound's stages in one kernel call, on a
    copy) answers as `first_fit_bounded` and leaves `available` as it was."""
    available, requests, replicas, masks, upper = case
    before = available.copy()
    one_call = kernels.first_fit_with_bound(available, requests, replicas, masks, upper)
    bounded = kernels.first_fit_bounded(available.copy(), requests, replicas, masks, upper)
    assert (one_call.sets, one_call.placement.tolist(), one_call.bound, one_call.limiting, one_call.work) == (
        bounded.sets,
        bounded.placement.tolist(),
        bounded.bound,
        bounded.limiting,
        bounded.work,
    )
    assert available.tolist() == before.tolist()


def _fit_sum_and_pool_by_hand(available, requests, replicas, masks, c):
    """What the staged passes mean, in plain Python: the sum over c's nodes of min(a // r)
    (saturating at int64), and the nodes where some component with replicas fits one."""
    total = 0
    for n, row in enumerate(available.tolist()):
        if masks[c, n]:
            total += min([a // r for a, r in zip(row, requests[c].tolist()) if r > 0], default=INT64_MAX)
    pool = [
        n
        for n, row in enumerate(available.tolist())
        if any(
            replicas[x] > 0 and masks[x, n] and all(a >= r for a, r in zip(row, requests[x].tolist()))
            for x in range(len(replicas))
        )
    ]
    totals = [min(sum(int(available[n, k]) for n in pool), INT64_MAX) for k in range(available.shape[1])]
    return min(total, INT64_MAX), pool, totals


def _staged_bound_by_hand(available, requests, replicas, masks, upper, sets, limiting):
    """(bound, pool size) the staged first-fit's stages reach from first-fit's answer, in
    plain Python: first-fit's own count for a lone component; else the limiting component's
    fit sum // its replicas (upper without one), then, where that leaves room above
    first-fit, min with each column's pool total // what a set needs of it (pool size None:
    that stage did not run)."""
    if sets >= upper:
        return upper, None
    active = [c for c in range(len(replicas)) if replicas[c] > 0]
    if limiting >= 0 and replicas[limiting] > 0 and len(active) == 1:
        return sets, None
    if limiting >= 0 and replicas[limiting] > 0:
        total, pool, totals = _fit_sum_and_pool_by_hand(available, requests, replicas, masks, limiting)
        bound = min(upper, total // int(replicas[limiting]))
    else:
        _, pool, totals = _fit_sum_and_pool_by_hand(available, requests, replicas, masks, 0)
        bound = upper
    if bound <= sets:
        return bound, None
    for k in range(available.shape[1]):
        demand = sum(int(replicas[c]) * int(requests[c, k]) for c in active)
        if demand > 0:
            bound = min(bound, totals[k] // demand)
    return bound, len(pool)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(max_nodes=8, max_amount=12))
def test_the_staged_kernel_reaches_the_bound_of_its_stages(case):
    """`firstfit.staged_first_fit`'s bound and pool size (the column-total stage worked out
    inside the kernel) against its stages in plain Python, from first-fit's own answer."""
    available, requests, replicas, masks, upper = case
    if not replicas.any():
        return
    p = problem(available, requests, replicas, masks, upper, in_place=False)
    first_fit = kernels.first_fit_sets(available.copy(), requests, replicas, masks, upper)
    packing, pool = firstfit.staged_first_fit(p.available, p.requests, p.replicas, p.masks, p.upper)
    bound, size = _staged_bound_by_hand(available, requests, replicas, masks, upper, first_fit.sets, first_fit.limiting)
    assert (packing.sets, packing.bound) == (first_fit.sets, bound)
    assert (packing.pool, pool is None) == ((-1, True) if size is None else (size, False))
    if pool is not None:
        assert (pool.count, pool.bound) == (size, bound)


def test_the_pool_column_totals_lower_the_staged_bound():
    # Two components of 2 cpu each, one replica apiece, on three nodes of 3 cpu: first-fit
    # places one set; the limiting component fits one replica per node (bound 3), but the
    # pool's 9 cpu hold only 2 sets of 4 cpu: the bound the stages reach is 2.
    available = np.array([[10, 3]] * 3, dtype=np.int64)
    requests = np.array([[1, 2], [1, 2]], dtype=np.int64)
    replicas = np.array([1, 1], dtype=np.int64)
    masks = np.ones((2, 3), dtype=np.bool_)
    p = problem(available, requests, replicas, masks, MAX_INT32, in_place=False)
    packing, pool = firstfit.staged_first_fit(p.available, p.requests, p.replicas, p.masks, p.upper)
    assert (packing.sets, packing.bound, packing.pool) == (1, 2, 3)
    assert pool is not None and (pool.count, pool.bound) == (3, 2)


# Scales for the amounts: as drawn; just below the column passes' limit (their float
# estimate of each quotient is then least exact); near int64's edge (the node-by-node
# passes' division by multiplication and saturation; the column passes refuse it).
_SCALES = {"drawn": 1, "below the column limit": (fit.COLUMNAR_LIMIT - 1) // 8, "int64 edge": 2**58}


def _scaled(available, requests, scale: int):
    """available and requests (but pods) times `scale`, less one here and there (so a
    quotient is not always exact), clipped below int64's edge."""
    if scale == 1:
        return available, requests
    if scale == 2**58:
        return np.minimum(available, 31) * scale, requests
    big = np.minimum(available, 8) * scale - (available % 2)
    reqs = requests.copy()
    reqs[:, 1:] = requests[:, 1:] * (scale // 4) + (requests[:, 1:] % 3 == 1)
    return np.maximum(big, 0), reqs


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(), st.integers(0, 3), st.sampled_from(sorted(_SCALES)))
def test_the_staged_passes_fit_sum_and_pool_are_what_they_mean(case, c, scale):
    """Both forms of the bound's passes, node by node and column by column, against plain
    Python; the column form runs exactly where its pass over the layout allows it."""
    available, requests, replicas, masks, _ = case
    available, requests = _scaled(available, requests, _SCALES[scale])
    c = min(c, len(replicas) - 1)
    p = problem(available, requests, replicas, masks, MAX_INT32, in_place=False)
    n_nodes, n_cols = available.shape
    want_total, want_pool, want_totals = _fit_sum_and_pool_by_hand(available, requests, replicas, masks, c)
    usable = np.empty(n_nodes, dtype=np.bool_)
    totals = np.empty(n_cols, dtype=np.int64)
    total = fit.fit_sum(p.available, p.requests[c], p.masks[c], fit.magics_buffer(n_cols))
    count = fit.pool_pass(p.available, p.requests, p.replicas, p.masks, usable, totals)
    assert total == want_total
    assert np.flatnonzero(usable).tolist() == want_pool and count == len(want_pool)
    assert totals.tolist() == want_totals

    columns = fit.column_layout(p.available)
    small = int(available.max(initial=0)) < fit.COLUMNAR_LIMIT
    assert (columns is not None) == (small and all(t < 2**62 for t in available.sum(axis=0, dtype=object)))
    assert fit.columnar_requests(p.requests) == (int(requests.max()) < fit.COLUMNAR_LIMIT)
    if columns is None or not fit.columnar_requests(p.requests):
        return
    assert columns.tolist() == available.T.tolist()
    flags = np.empty((2, n_nodes), dtype=np.bool_)
    assert fit.column_fit_sum(columns, p.requests[c], p.masks[c], np.empty(n_nodes, dtype=np.int64)) == want_total
    count = fit.column_pool(columns, p.requests, p.replicas, p.masks, flags[0], flags[1], totals)
    assert np.flatnonzero(flags[1]).tolist() == want_pool and count == len(want_pool)
    assert totals.tolist() == want_totals


def test_the_column_division_is_exact_up_to_its_limit():
    """Quotients the float estimate gets least right: dividends just around multiples of
    large and small divisors, up to COLUMNAR_LIMIT - 1, checked against Python's //."""
    limit = fit.COLUMNAR_LIMIT
    rng = np.random.default_rng(7)
    divisors = [1, 2, 3, 7, 1000, 2**31 - 1, 2**32 + 1, 10**12 + 39, limit // 3, limit - 1]
    divisors += rng.integers(1, limit, 200).tolist()
    for r in divisors:
        top = (limit - 1) // r * r  # the largest multiple below the limit
        dividends = {0, 1, r - 1, r, r + 1, top - 1, top, min(top + r - 1, limit - 1), limit - 1}
        dividends |= {int(x) for x in rng.integers(0, limit, 40)}
        dividends |= {max(0, int(q) * r + d) for q in rng.integers(0, (limit - 1) // r + 1, 20) for d in (-1, 0, 1)}
        xs = np.array(sorted(x for x in dividends if 0 <= x < limit), dtype=np.int64)
        request = readonly(np.array([1, r], dtype=np.int64))  # as the staged kernel passes it: one signature
        columns = readonly(np.vstack([np.full(xs.shape, limit - 1, dtype=np.int64), xs]))  # pods never the least
        fits = np.empty(xs.shape[0], dtype=np.int64)
        for n, x in enumerate(xs.tolist()):  # one node at a time: the sum is that node's quotient
            mask = np.zeros(xs.shape[0], dtype=np.bool_)
            mask[n] = True
            assert fit.column_fit_sum(columns, request, readonly(mask), fits) == x // r, (x, r)


def test_the_column_layout_refuses_what_its_passes_cannot_add_or_divide():
    """None (the node-by-node passes) for an amount at COLUMNAR_LIMIT, for a column whose
    total reaches 2**62 from amounts each below the limit (more nodes than one chunk of the
    check holds), and for int64's largest amount (whose sum would wrap); else the columns."""
    limit = fit.COLUMNAR_LIMIT

    def layout(column):
        available = np.column_stack([np.ones(len(column), dtype=np.int64), np.array(column, dtype=np.int64)])
        return fit.column_layout(available)

    assert layout([limit - 1] * 4000).tolist()[1] == [limit - 1] * 4000
    assert layout([limit - 1] * 4096 + [2**20]) is None  # 2**62 - 4096 + 2**20: past 2**62
    assert layout([0, limit, 0]) is None
    assert layout([5] * 5000 + [INT64_MAX, INT64_MAX]) is None


def test_a_new_shape_gets_the_same_bound_with_or_without_the_column_layout():
    """The staged kernel's bound from its column passes (the layout given, or worked out by
    the wrapper) and from its node-by-node passes (amounts at COLUMNAR_LIMIT and above, no
    layout) equals `set_bound`'s, whose passes are node by node; a layout of the wrong
    shape is refused."""
    rng = np.random.default_rng(11)
    for scale in (1, fit.COLUMNAR_LIMIT):
        available = rng.integers(0, 9, (40, 3)).astype(np.int64) * np.array([1, scale, scale])
        requests = np.array([[1, 2 * scale, 3 * scale], [1, 3 * scale, 1 * scale]], dtype=np.int64)
        replicas = np.array([1, 3], dtype=np.int64)
        masks = rng.random((2, 40)) < 0.8
        layout = fit.column_layout(available)
        assert (layout is None) == (scale > 1)
        first_fit = kernels.first_fit_sets(available.copy(), requests, replicas, masks, MAX_INT32)
        expected = kernels.set_bound(
            available, requests, replicas, masks, MAX_INT32, first_fit.sets, first_fit.limiting
        )
        for by_column in (layout, None):
            assert (
                kernels.first_fit_with_bound(available, requests, replicas, masks, MAX_INT32, by_column).bound
                == expected
            )
            assert (
                kernels.best_sets(available, requests, replicas, masks, MAX_INT32, budget=0, by_column=by_column).bound
                == expected
            )
    with pytest.raises(ValueError, match="by_column"):
        kernels.best_sets(available, requests, replicas, masks, MAX_INT32, by_column=np.zeros((3, 39), dtype=np.int64))
