"""Property tests: the kernels against the naive oracle on random small clusters."""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from estimator import kernels
from estimator.kernels import firstfit, fit
from estimator.kernels._arrays import problem
from tests.support import naive
from tests.support.kernelcheck import assert_first_fit_as_naive

MAX_INT32 = 2**31 - 1
SETTINGS = settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def clusters(draw, max_nodes=6, max_amount=8):
    """(available, requests, replicas, masks, upper): at most 6 nodes, 4 columns, 3 components."""
    n_nodes = draw(st.integers(0, max_nodes))
    n_cols = draw(st.integers(1, 4))
    n_comp = draw(st.integers(1, 3))
    amount = st.integers(0, max_amount)
    available = np.array(
        draw(st.lists(st.lists(amount, min_size=n_cols, max_size=n_cols), min_size=n_nodes, max_size=n_nodes)),
        dtype=np.int64,
    ).reshape(n_nodes, n_cols)
    requests = np.array(
        [[1] + draw(st.lists(st.integers(0, 3), min_size=n_cols - 1, max_size=n_cols - 1)) for _ in range(n_comp)],
        dtype=np.int64,
    )
    replicas = np.array(draw(st.lists(st.integers(0, 3), min_size=n_comp, max_size=n_comp)), dtype=np.int64)
    masks = np.array(
        draw(st.lists(st.lists(st.booleans(), min_size=n_nodes, max_size=n_nodes), min_size=n_comp, max_size=n_comp)),
        dtype=np.bool_,
    ).reshape(n_comp, n_nodes)
    upper = draw(st.sampled_from([0, 1, 2, 3, 5, 100, MAX_INT32]))
    return available, requests, replicas, masks, upper


@SETTINGS
@given(clusters())
def test_first_fit_equals_the_naive_rescan(case):
    assert_first_fit_as_naive(*case)


@SETTINGS
@given(clusters())
def test_first_fit_with_upper_one_deducts_like_the_naive_rescan(case):
    available, requests, replicas, masks, _ = case
    left = available.copy()
    packing = kernels.first_fit_sets(left, requests, replicas, masks, 1)
    sets, _, naive_left = naive.first_fit(available, requests, replicas, masks, 1)
    assert packing.sets == sets
    assert left.tolist() == naive_left


@SETTINGS
@given(clusters(), st.integers(0, 40))
def test_first_fit_with_a_smaller_upper_is_the_same_packing_cut_short(case, upper):
    available, requests, replicas, masks, _ = case
    full = kernels.first_fit_sets(available.copy(), requests, replicas, masks, MAX_INT32)
    cut = kernels.first_fit_sets(available.copy(), requests, replicas, masks, upper)
    assert cut.sets == min(upper, full.sets)


@SETTINGS
@given(clusters(), st.randoms(use_true_random=False))
def test_first_fit_in_other_orders_equals_the_naive_rescan_in_those_orders(case, rng):
    available, requests, replicas, masks, upper = case
    n_comp, n_nodes = masks.shape
    order = list(range(n_comp))
    rng.shuffle(order)
    walks = [rng.sample(range(n_nodes), rng.randint(0, n_nodes)) for _ in range(n_comp)]
    node_order = np.zeros((n_comp, n_nodes), dtype=np.int64)
    for c, walk in enumerate(walks):
        node_order[c, : len(walk)] = walk
    lengths = np.array([len(walk) for walk in walks], dtype=np.int64)
    left = available.copy()
    if not replicas.any():
        return  # the wrapper answers this before packing
    packing = firstfit.pack(left, requests, replicas, masks, np.array(order), node_order, lengths, upper)
    sets, placement, naive_left = naive.first_fit(available, requests, replicas, masks, upper, order, walks)
    assert packing.sets == sets
    assert packing.placement.tolist() == placement
    assert left.tolist() == naive_left


@SETTINGS
@given(clusters())
def test_sum_fit_equals_the_naive_sum(case):
    available, requests, _, masks, _ = case
    for c in range(requests.shape[0]):
        assert kernels.sum_fit(available, requests[c], masks[c]) == naive.sum_fit(available, requests[c], masks[c])


@SETTINGS
@given(clusters(), st.lists(st.integers(0, 8), min_size=4, max_size=4), st.integers(0, 3), st.integers(0, 5))
def test_adding_a_node_or_capacity_never_lowers_sum_fit(case, extra_node, column, extra):
    available, requests, _, masks, _ = case
    request, mask = requests[0], masks[0]
    before = kernels.sum_fit(available, request, mask)
    grown = np.vstack([available, [extra_node[: available.shape[1]]]])
    assert kernels.sum_fit(grown, request, np.append(mask, True)) >= before
    if available.shape[0]:
        richer = available.copy()
        richer[0, column % available.shape[1]] += extra
        assert kernels.sum_fit(richer, request, mask) >= before


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_best_is_at_least_first_fit_at_most_the_optimum_and_verified(case):
    available, requests, replicas, masks, upper = case
    before = available.copy()
    best = kernels.best_sets(available, requests, replicas, masks, upper)
    assert np.array_equal(available, before), "best_sets wrote into its input"
    first_fit = naive.first_fit(available, requests, replicas, masks, upper)[0]
    optimum = naive.exhaustive(available, requests, replicas, masks, upper)[0]
    assert first_fit <= best.sets <= optimum
    assert kernels.verify_placement(available, requests, replicas, masks, best.sets, best.placement)
    assert naive.verify(available, requests, replicas, masks, best.sets, best.placement)


@SETTINGS
@given(clusters(), st.data())
def test_verify_agrees_with_the_naive_check_on_arbitrary_placements(case, data):
    available, requests, replicas, masks, _ = case
    n_comp, n_nodes = masks.shape
    row = st.lists(st.integers(-1, 4), min_size=n_nodes, max_size=n_nodes)
    placement = np.array(
        data.draw(st.lists(row, min_size=n_comp, max_size=n_comp)), dtype=np.int64
    ).reshape(n_comp, n_nodes)
    sets = data.draw(st.integers(0, 4))
    expected = naive.verify(available, requests, replicas, masks, sets, placement)
    assert kernels.verify_placement(available, requests, replicas, masks, sets, placement) == expected


@SETTINGS
@given(clusters())
def test_one_single_replica_component_packs_as_many_sets_as_sum_fit(case):
    available, requests, _, masks, _ = case
    replicas = np.array([1], dtype=np.int64)
    expected = min(kernels.sum_fit(available, requests[0], masks[0]), MAX_INT32)
    assert kernels.first_fit_sets(available.copy(), requests[:1], replicas, masks[:1], MAX_INT32).sets == expected
    assert kernels.best_sets(available, requests[:1], replicas, masks[:1], MAX_INT32).sets == expected


@st.composite
def crowded_clusters(draw):
    """Many sets per run: up to 40 nodes of a few kinds, components sharing or splitting
    their nodes, so the bulk steps (stationary groups, one or several movers) decide most
    sets. (available, requests, replicas, masks)."""
    n_nodes = draw(st.integers(1, 40))
    n_comp = draw(st.integers(1, 4))
    kinds = draw(st.lists(st.tuples(st.integers(0, 60), st.integers(0, 64), st.integers(0, 9)), min_size=1, max_size=4))
    available = np.array([kinds[draw(st.integers(0, len(kinds) - 1))] for _ in range(n_nodes)], dtype=np.int64)
    requests = np.array(
        [[1, draw(st.integers(0, 9)), draw(st.integers(0, 3))] for _ in range(n_comp)], dtype=np.int64
    )
    replicas = np.array(draw(st.lists(st.integers(0, 7), min_size=n_comp, max_size=n_comp)), dtype=np.int64)
    shared = draw(st.booleans())  # one claim for every component (the lockstep case), or each its own
    if shared:
        row = draw(st.lists(st.booleans(), min_size=n_nodes, max_size=n_nodes))
        masks = np.array([row] * n_comp, dtype=np.bool_).reshape(n_comp, n_nodes)
    else:
        masks = np.array(
            draw(st.lists(st.lists(st.booleans(), min_size=n_nodes, max_size=n_nodes), min_size=n_comp,
                          max_size=n_comp)),
            dtype=np.bool_,
        ).reshape(n_comp, n_nodes)
    return available, requests, replicas, masks


@SETTINGS
@given(crowded_clusters(), st.sampled_from([1, 3, 17, MAX_INT32]))
def test_first_fit_on_crowded_clusters_equals_the_naive_rescan(case, upper):
    available, requests, replicas, masks = case
    left = available.copy()
    packing = kernels.first_fit_sets(left, requests, replicas, masks, upper)
    sets, placement, naive_left = naive.first_fit(available, requests, replicas, masks, upper)
    assert (packing.sets, packing.placement.tolist(), left.tolist()) == (sets, placement, naive_left)


@SETTINGS
@given(crowded_clusters(), st.randoms(use_true_random=False))
def test_first_fit_on_crowded_clusters_in_other_orders_equals_the_naive_rescan(case, rng):
    available, requests, replicas, masks = case
    if not replicas.any():
        return  # the wrapper answers this before packing
    n_comp, n_nodes = masks.shape
    order = list(range(n_comp))
    rng.shuffle(order)
    walks = [sorted(rng.sample(range(n_nodes), rng.randint(0, n_nodes))) if rng.random() < 0.5
             else rng.sample(range(n_nodes), rng.randint(0, n_nodes)) for _ in range(n_comp)]
    node_order = np.zeros((n_comp, n_nodes), dtype=np.int64)
    for c, walk in enumerate(walks):
        node_order[c, : len(walk)] = walk
    lengths = np.array([len(walk) for walk in walks], dtype=np.int64)
    left = available.copy()
    packing = firstfit.pack(left, requests, replicas, masks, np.array(order), node_order, lengths, MAX_INT32)
    expected = naive.first_fit(available, requests, replicas, masks, MAX_INT32, order, walks)
    assert (packing.sets, packing.placement.tolist(), left.tolist()) == expected


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(), st.integers(-1, 2))
def test_the_bound_is_never_below_the_optimum(case, first):
    available, requests, replicas, masks, upper = case
    optimum = naive.exhaustive(available, requests, replicas, masks, upper)[0]
    first = min(first, len(replicas) - 1)
    assert optimum <= kernels.set_bound(available, requests, replicas, masks, upper, first=first) <= upper
    # Stopping at the first relaxation that reaches a feasible answer never cuts below it.
    reach = naive.first_fit(available, requests, replicas, masks, upper)[0]
    assert optimum <= kernels.set_bound(available, requests, replicas, masks, upper, reach=reach, first=first)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters())
def test_the_fits_pass_for_a_known_bound_gives_the_fits_of_the_bound_pass(case):
    # Best mode with a known bound takes only the fits (fit.node_fits) and keeps the bound.
    available, requests, replicas, masks, upper = case
    expected = [[naive.node_fit(available[n].tolist(), requests[c].tolist()) if masks[c, n] and replicas.any() else 0
                 for n in range(available.shape[0])] for c in range(requests.shape[0])]
    p = problem(available, requests, replicas, masks, upper, in_place=False)  # as best mode passes them
    assert fit.node_fits(p.available, p.requests, p.replicas, p.masks).tolist() == expected
    assert fit.bounds(p.available, p.requests, p.replicas, p.masks, upper)[1].tolist() == expected


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(), st.sampled_from([0, 0.5, 4.0, None]))
def test_best_with_any_budget_sits_between_first_fit_and_its_bound(case, budget):
    available, requests, replicas, masks, upper = case
    best = kernels.best_sets(available, requests, replicas, masks, upper, budget=budget)
    first_fit = naive.first_fit(available, requests, replicas, masks, upper)[0]
    optimum = naive.exhaustive(available, requests, replicas, masks, upper)[0]
    assert first_fit <= best.sets <= optimum <= best.bound
    assert naive.verify(available, requests, replicas, masks, best.sets, best.placement)
    if budget == 0:
        assert best.sets == first_fit  # no search: first-fit's answer, with its bound


@SETTINGS
@given(clusters())
def test_first_fit_bounded_is_first_fit_with_a_bound_above_the_optimum(case):
    available, requests, replicas, masks, upper = case
    left = available.copy()
    packing = kernels.first_fit_bounded(left, requests, replicas, masks, upper)
    sets, placement, naive_left = naive.first_fit(available, requests, replicas, masks, upper)
    assert (packing.sets, packing.placement.tolist(), left.tolist()) == (sets, placement, naive_left)
    assert naive.exhaustive(available, requests, replicas, masks, upper)[0] <= packing.bound <= upper
