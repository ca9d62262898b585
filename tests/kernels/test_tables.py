"""Table tests for the packing kernels: Karmada's own simulator table, the reference
scenario, and the edge cases the semantics call out. Every first-fit answer is also checked
against the naive rescanning oracle, and every best-mode answer against its witness."""

from __future__ import annotations

import numpy as np
import pytest

from estimator import kernels
from tests.support import naive
from tests.support.kernelcheck import assert_first_fit_as_naive

Gi = 2**30
Mi = 2**20
INT64_MAX = 2**63 - 1
MAX_INT32 = 2**31 - 1
COLUMNS = ("pods", "cpu", "memory", "gpu")


def nodes(*specs: dict) -> np.ndarray:
    """available[N, 4] from dicts like {"cpu": 4000, "pods": 10}; absent resources are 0."""
    return np.array([[spec.get(name, 0) for name in COLUMNS] for spec in specs], dtype=np.int64).reshape(
        len(specs), len(COLUMNS)
    )


def components(*specs: tuple[int, dict]) -> tuple[np.ndarray, np.ndarray]:
    """(requests[C, 4], replicas[C]) from (replicas, {"cpu": 500, ...}); one pod per replica."""
    requests = [[1] + [request.get(name, 0) for name in COLUMNS[1:]] for _, request in specs]
    return (
        np.array(requests, dtype=np.int64).reshape(len(specs), len(COLUMNS)),
        np.array([replicas for replicas, _ in specs], dtype=np.int64),
    )


def everywhere(n_comp: int, n_nodes: int) -> np.ndarray:
    return np.ones((n_comp, n_nodes), dtype=np.bool_)


def check_best(available, requests, replicas, masks, upper) -> kernels.Packing:
    before = available.copy()
    packing = kernels.best_sets(available, requests, replicas, masks, upper)
    assert np.array_equal(available, before), "best_sets must not write into available"
    assert packing.sets >= naive.first_fit(available, requests, replicas, masks, upper)[0]
    assert packing.sets <= upper
    assert kernels.verify_placement(available, requests, replicas, masks, packing.sets, packing.placement)
    assert naive.verify(available, requests, replicas, masks, packing.sets, packing.placement)
    return packing


# Karmada's TestSchedulingSimulator_SimulateSchedulingFF, in our arrays (cpu in millicores).
KARMADA_TABLE = [
    (
        "single component fits perfectly",
        nodes({"cpu": 4000, "memory": 8 * Gi, "pods": 10}),
        [(2, {"cpu": 1000, "memory": 2 * Gi})],
        10,
        2,
    ),
    (
        "multiple components with resource constraints",
        nodes({"cpu": 8000, "memory": 16 * Gi, "pods": 10}),
        [(2, {"cpu": 1000, "memory": 2 * Gi}), (1, {"cpu": 2000, "memory": 4 * Gi})],
        10,
        2,
    ),
    (
        "no resources available",
        nodes({"cpu": 0, "memory": 0, "pods": 10}),
        [(1, {"cpu": 1000})],
        10,
        0,
    ),
    (
        "upper bound limits scheduling",
        nodes({"cpu": 100_000, "pods": 10}),
        [(1, {"cpu": 1000})],
        3,
        3,
    ),
    (
        "multiple nodes distribution",
        nodes({"cpu": 2000, "pods": 10}, {"cpu": 2000, "pods": 10}),
        [(3, {"cpu": 1000})],
        10,
        1,
    ),
    (
        "nodes with different capacities",
        nodes(
            {"cpu": 1000, "memory": 2 * Gi, "pods": 10},
            {"cpu": 4000, "memory": 8 * Gi, "pods": 20},
            {"cpu": 8000, "memory": 16 * Gi, "pods": 30},
        ),
        [(2, {"cpu": 500, "memory": 1 * Gi}), (1, {"cpu": 2000, "memory": 4 * Gi})],
        10,
        4,
    ),
    (
        "many small nodes",
        nodes(*[{"cpu": 1000, "pods": 5}] * 4),
        [(1, {"cpu": 2000})],
        10,
        0,
    ),
]


@pytest.mark.parametrize(
    "available, specs, upper, expected", [case[1:] for case in KARMADA_TABLE], ids=[case[0] for case in KARMADA_TABLE]
)
def test_first_fit_matches_karmadas_simulator_table(available, specs, upper, expected):
    requests, replicas = components(*specs)
    masks = everywhere(len(specs), available.shape[0])
    assert assert_first_fit_as_naive(available, requests, replicas, masks, upper).sets == expected
    best = check_best(available, requests, replicas, masks, upper)
    assert best.sets == naive.exhaustive(available, requests, replicas, masks, upper)[0]


# The reference scenario: three members, two training jobs (master + 2 workers).
NODE = {"pods": 110, "cpu": 12_000, "memory": 64 * Gi}
MEMBER_A = nodes({**NODE, "gpu": 2})
MEMBER_B = nodes({**NODE}, *[{**NODE, "gpu": 2}] * 3)  # node 0 is the control plane
MEMBER_C = nodes({**NODE, "gpu": 8})
MASTER = {"cpu": 50, "memory": 32 * Mi}
TRAIN_SMALL = components((1, MASTER), (2, {**MASTER, "gpu": 1}))
TRAIN_BIG = components((1, MASTER), (2, {**MASTER, "gpu": 3}))


def member_masks(available: np.ndarray, control_plane: bool) -> np.ndarray:
    masks = everywhere(2, available.shape[0])
    if control_plane:
        masks[:, 0] = False  # the control-plane taint is tolerated by neither component
    return masks


@pytest.mark.parametrize(
    "member, available, control_plane, job, expected",
    [
        ("member-a", MEMBER_A, False, TRAIN_SMALL, 1),
        ("member-a", MEMBER_A, False, TRAIN_BIG, 0),
        ("member-b", MEMBER_B, True, TRAIN_SMALL, 3),
        ("member-b", MEMBER_B, True, TRAIN_BIG, 0),
        ("member-c", MEMBER_C, False, TRAIN_SMALL, 4),
        ("member-c", MEMBER_C, False, TRAIN_BIG, 1),
    ],
    ids=[
        "member-a fits one small training set",
        "member-a has too few gpus per node for a big worker",
        "member-b fits one small set per gpu node",
        "member-b has no node with 3 gpus",
        "member-c fits four small sets on its 8 gpus",
        "member-c fits one big set",
    ],
)
def test_reference_scenario_members_answer_as_expected(member, available, control_plane, job, expected):
    requests, replicas = job
    masks = member_masks(available, control_plane)
    assert assert_first_fit_as_naive(available, requests, replicas, masks, MAX_INT32).sets == expected
    assert check_best(available, requests, replicas, masks, MAX_INT32).sets == expected


def test_the_control_plane_node_is_never_used_when_masked_out():
    requests, replicas = TRAIN_SMALL
    masks = member_masks(MEMBER_B, control_plane=True)
    packing = assert_first_fit_as_naive(MEMBER_B, requests, replicas, masks, MAX_INT32)
    assert packing.placement[:, 0].tolist() == [0, 0]
    assert packing.placement.sum(axis=1).tolist() == [3, 6]


def test_a_set_that_fails_part_way_keeps_its_consumption_as_assumed_workloads_need():
    available = nodes({"cpu": 2000, "pods": 10})
    requests, replicas = components((1, {"cpu": 1000}), (1, {"cpu": 5000}))
    left = available.copy()
    packing = kernels.first_fit_sets(left, requests, replicas, everywhere(2, 1), 1)
    assert packing.sets == 0
    assert packing.placement.tolist() == [[0], [0]]
    assert left.tolist() == [[9, 1000, 0, 0]]  # the first component's replica stays deducted
    assert_first_fit_as_naive(available, requests, replicas, everywhere(2, 1), 1)


def test_an_assumed_workload_that_fits_is_deducted_once():
    available = nodes({"cpu": 4000, "pods": 10}, {"cpu": 4000, "pods": 10, "gpu": 2})
    requests, replicas = components((1, {"cpu": 500}), (2, {"cpu": 500, "gpu": 1}))
    left = available.copy()
    assert kernels.first_fit_sets(left, requests, replicas, everywhere(2, 2), 1).sets == 1
    assert left.tolist() == [[9, 3500, 0, 0], [8, 3000, 0, 0]]


def test_zero_replica_components_succeed_without_consuming():
    available = nodes({"cpu": 3000, "pods": 10})
    requests, replicas = components((0, {"cpu": 100_000}), (1, {"cpu": 1000}))
    packing = assert_first_fit_as_naive(available, requests, replicas, everywhere(2, 1), 10)
    assert packing.sets == 3
    assert packing.placement.tolist() == [[0], [3]]
    assert check_best(available, requests, replicas, everywhere(2, 1), 10).sets == 3


@pytest.mark.parametrize("upper", [0, 1, 7, MAX_INT32])
def test_all_zero_replicas_answer_the_upper_bound_without_looping(upper):
    available = nodes({"cpu": 0, "pods": 0})
    requests, replicas = components((0, {"cpu": 1000}), (0, {"gpu": 1}))
    masks = everywhere(2, 1)
    for packing in (
        kernels.first_fit_sets(available.copy(), requests, replicas, masks, upper),
        kernels.best_sets(available, requests, replicas, masks, upper),
    ):
        assert packing.sets == upper
        assert packing.placement.tolist() == [[0], [0]]


def test_no_components_answer_the_upper_bound():
    available = nodes({"cpu": 1000, "pods": 10})
    requests = np.zeros((0, 4), dtype=np.int64)
    replicas = np.zeros(0, dtype=np.int64)
    masks = np.zeros((0, 1), dtype=np.bool_)
    assert kernels.first_fit_sets(available.copy(), requests, replicas, masks, MAX_INT32).sets == MAX_INT32
    assert kernels.best_sets(available, requests, replicas, masks, 5).sets == 5


def test_zero_nodes_fit_nothing():
    available = np.zeros((0, 4), dtype=np.int64)
    requests, replicas = components((1, {"cpu": 1}))
    masks = np.zeros((1, 0), dtype=np.bool_)
    assert kernels.first_fit_sets(available.copy(), requests, replicas, masks, 10).sets == 0
    assert kernels.best_sets(available, requests, replicas, masks, 10).sets == 0
    assert kernels.sum_fit(available, requests[0], masks[0]) == 0


def test_a_requested_resource_no_node_has_fits_zero():
    available = nodes({"cpu": 64_000, "memory": 256 * Gi, "pods": 110})  # gpu column all zero
    requests, replicas = components((1, {"cpu": 100, "gpu": 1}))
    masks = everywhere(1, 1)
    assert assert_first_fit_as_naive(available, requests, replicas, masks, 10).sets == 0
    assert check_best(available, requests, replicas, masks, 10).sets == 0
    assert kernels.sum_fit(available, requests[0], masks[0]) == 0


def test_pod_slots_bound_the_fit_when_resources_are_plentiful():
    available = nodes({"cpu": 64_000, "pods": 3}, {"cpu": 64_000, "pods": 0})
    requests, replicas = components((2, {"cpu": 10}))
    masks = everywhere(1, 2)
    assert kernels.sum_fit(available, requests[0], masks[0]) == 3
    assert assert_first_fit_as_naive(available, requests, replicas, masks, 10).sets == 1
    assert check_best(available, requests, replicas, masks, 10).sets == 1


def test_a_request_for_nothing_but_a_pod_is_bounded_by_pod_slots():
    available = nodes({"pods": 4}, {"pods": 5})
    requests, replicas = components((1, {}))
    assert kernels.sum_fit(available, requests[0], everywhere(1, 2)[0]) == 9
    assert assert_first_fit_as_naive(available, requests, replicas, everywhere(1, 2), 100).sets == 9


def test_masks_exclude_nodes_per_component():
    available = nodes({"cpu": 4000, "pods": 10}, {"cpu": 4000, "pods": 10, "gpu": 4})
    requests, replicas = components((1, {"cpu": 1000}), (1, {"cpu": 1000, "gpu": 1}))
    masks = np.array([[False, True], [True, True]])
    packing = assert_first_fit_as_naive(available, requests, replicas, masks, 10)
    assert packing.sets == 2  # node 1 holds both: 4 cpu = 2 masters + 2 workers
    assert packing.placement.tolist() == [[0, 2], [0, 2]]
    assert kernels.sum_fit(available, requests[0], masks[0]) == 4


def test_sum_fit_adds_per_node_fits_over_masked_nodes():
    available = nodes({"cpu": 2500, "pods": 10}, {"cpu": 7000, "pods": 2}, {"cpu": 9000, "pods": 10})
    request = components((1, {"cpu": 1000}))[0][0]
    assert kernels.sum_fit(available, request, np.array([True, True, False])) == 2 + 2
    assert kernels.sum_fit(available, request, np.array([True, True, True])) == 2 + 2 + 9


def test_sum_fit_saturates_at_int64():
    available = np.array([[2**62, 2**62]] * 3, dtype=np.int64)
    assert kernels.sum_fit(available, np.array([1, 1]), np.ones(3, dtype=np.bool_)) == INT64_MAX


# First-fit is not optimal; best mode finds the optimum on these.
SUBOPTIMAL = [
    (
        "a master on the only gpu node takes the pod slot a worker needs",
        nodes({"cpu": 8000, "pods": 2, "gpu": 2}, {"cpu": 8000, "pods": 110}),
        [(1, {"cpu": 100}), (2, {"cpu": 100, "gpu": 1})],
        0,
        1,
    ),
    (
        "a master on the gpu node takes the cpu a worker needs",
        nodes({"cpu": 1000, "pods": 110, "gpu": 2}, {"cpu": 8000, "pods": 110}),
        [(1, {"cpu": 500}), (2, {"cpu": 500, "gpu": 1})],
        0,
        1,
    ),
    (
        "a 2-gpu worker first in order takes the only node a 3-gpu worker fits",
        nodes({"pods": 110, "gpu": 4}, {"pods": 110, "gpu": 2}),
        [(1, {"gpu": 2}), (1, {"gpu": 3})],
        0,
        1,
    ),
    (
        "masters spread over small gpu nodes waste a third of the gpus",
        nodes(*[{"cpu": 8000, "pods": 2, "gpu": 2}] * 4, {"cpu": 8000, "pods": 110}),
        [(1, {"cpu": 100}), (2, {"cpu": 100, "gpu": 1})],
        2,
        4,
    ),
]


# In raw arrays: cases found by random search where only packing k sets in bulk gets there,
# at k = U (the bound) or, below a loose bound, by bisection.
RAW_SUBOPTIMAL = [
    (
        "a pods-only pair whose first component may use only the first node",
        np.array([[7], [7], [5]]),
        np.array([[1], [1]]),
        np.array([1, 1]),
        np.array([[True, False, False], [True, True, True]]),
        4,
        7,
    ),
    (
        "four components on four partly masked nodes, one bound above the optimum",
        np.array([[6, 2], [3, 7], [8, 7], [7, 1]]),
        np.array([[1, 0], [1, 1], [1, 1], [1, 2]]),
        np.array([1, 2, 1, 0]),
        np.array([[0, 0, 1, 1], [0, 1, 1, 1], [1, 1, 1, 1], [1, 1, 0, 1]], dtype=np.bool_),
        3,
        4,
    ),
]


def _specs_case(available, specs, first_fit, optimum):
    requests, replicas = components(*specs)
    return available, requests, replicas, everywhere(len(specs), available.shape[0]), first_fit, optimum


@pytest.mark.parametrize(
    "available, requests, replicas, masks, first_fit, optimum",
    [_specs_case(*case[1:]) for case in SUBOPTIMAL] + [case[1:] for case in RAW_SUBOPTIMAL],
    ids=[case[0] for case in SUBOPTIMAL + RAW_SUBOPTIMAL],
)
def test_best_mode_beats_first_fit_and_reaches_the_optimum(available, requests, replicas, masks, first_fit, optimum):
    assert assert_first_fit_as_naive(available, requests, replicas, masks, MAX_INT32).sets == first_fit
    assert naive.exhaustive(available, requests, replicas, masks, MAX_INT32)[0] == optimum
    assert check_best(available, requests, replicas, masks, MAX_INT32).sets == optimum


def test_best_mode_never_exceeds_upper():
    available, specs = SUBOPTIMAL[3][1], SUBOPTIMAL[3][2]
    requests, replicas = components(*specs)
    masks = everywhere(2, available.shape[0])
    assert check_best(available, requests, replicas, masks, 3).sets == 3


def test_products_beyond_int64_are_refused_not_wrapped():
    # 4 replicas x 2**62 bytes of memory per set overflows int64; nothing may fit.
    available = np.array([[10, 2**62], [10, 2**62]], dtype=np.int64)
    requests = np.array([[1, 2**62]], dtype=np.int64)
    replicas = np.array([4], dtype=np.int64)
    masks = everywhere(1, 2)
    assert assert_first_fit_as_naive(available, requests, replicas, masks, 10).sets == 0
    assert check_best(available, requests, replicas, masks, 10).sets == 0
    two = np.array([2])
    assert not kernels.verify_placement(available, requests, two, masks, 1, np.array([[2, 0]]))  # 2**63 on a node
    assert not kernels.verify_placement(available, requests, np.array([4]), masks, 1, np.array([[4, 0]]))
    assert not kernels.verify_placement(available, requests, np.array([2**62]), masks, 4, np.array([[1, 1]]))
    assert kernels.verify_placement(available, requests, two, masks, 1, np.array([[1, 1]]))


def test_verify_rejects_each_kind_of_bad_witness():
    available = nodes({"cpu": 2000, "pods": 10}, {"cpu": 2000, "pods": 10})
    requests, replicas = components((2, {"cpu": 1000}))
    masks = np.array([[True, False]])
    ok = np.array([[2, 0]])
    assert kernels.verify_placement(available, requests, replicas, masks, 1, ok)
    assert not kernels.verify_placement(available, requests, replicas, masks, 1, np.array([[1, 1]]))  # masked
    assert not kernels.verify_placement(available, requests, replicas, masks, 1, np.array([[3, -1]]))  # negative
    assert not kernels.verify_placement(available, requests, replicas, masks, 2, ok)  # wrong total
    assert not kernels.verify_placement(available, requests, replicas, np.ones((1, 2), bool), 2, np.array([[3, 1]]))
    assert not kernels.verify_placement(available, requests, replicas, masks, 1, np.array([[2, 0, 0]]))  # shape
    assert not kernels.verify_placement(available, requests, replicas, masks, -1, ok)


BAD_ARGUMENTS = [
    ("float amounts", dict(available=np.ones((1, 2), dtype=np.float64)), "integers"),
    ("a 1-D available", dict(available=np.ones(2, dtype=np.int64)), "2-D"),
    ("no pods column", dict(available=np.ones((1, 0), dtype=np.int64), requests=np.ones((1, 0), np.int64)), "pods"),
    ("negative available", dict(available=np.array([[1, -1]])), "negative"),
    ("a request without its pod", dict(requests=np.array([[0, 1]])), "1 pod"),
    ("mismatched columns", dict(requests=np.array([[1, 1, 1]])), "columns"),
    ("negative replicas", dict(replicas=np.array([-1])), "negative"),
    ("replicas of the wrong length", dict(replicas=np.array([1, 1])), "replicas"),
    ("integer masks", dict(masks=np.ones((1, 1), dtype=np.int64)), "bool"),
    ("masks of the wrong shape", dict(masks=np.ones((1, 2), dtype=np.bool_)), "masks"),
    ("an upper beyond int32", dict(upper=2**31), "upper"),
    ("a negative upper", dict(upper=-1), "upper"),
    ("a float upper", dict(upper=1.0), "upper"),
]


@pytest.mark.parametrize("changes, message", [case[1:] for case in BAD_ARGUMENTS], ids=[c[0] for c in BAD_ARGUMENTS])
def test_wrappers_refuse_bad_arguments_with_a_clear_message(changes, message):
    args = dict(
        available=np.array([[10, 4]], dtype=np.int64),
        requests=np.array([[1, 1]], dtype=np.int64),
        replicas=np.array([1], dtype=np.int64),
        masks=np.ones((1, 1), dtype=np.bool_),
        upper=5,
    )
    args.update(changes)
    with pytest.raises(ValueError, match=message):
        kernels.best_sets(**args)
    if args["available"].dtype == np.int64 and args["available"].ndim == 2:
        with pytest.raises(ValueError, match=message):
            kernels.first_fit_sets(args.pop("available").copy(), **args)


def test_first_fit_refuses_an_available_it_could_not_consume_in_place():
    requests, replicas, masks = np.array([[1, 1]]), np.array([1]), np.ones((1, 1), dtype=np.bool_)
    frozen = np.array([[10, 4]], dtype=np.int64)
    frozen.flags.writeable = False
    for available in (np.array([[10, 4]], dtype=np.int32), frozen, np.array([[10, 0, 4, 0]])[:, ::2], [[10, 4]]):
        with pytest.raises(ValueError, match="in place"):
            kernels.first_fit_sets(available, requests, replicas, masks, 1)


def test_narrower_integer_and_read_only_inputs_are_accepted():
    available = np.array([[10, 4], [10, 4]], dtype=np.int32)
    available.flags.writeable = False
    requests = np.array([[1, 1]], dtype=np.uint8)
    replicas = [2]
    masks = np.ones((1, 2), dtype=np.bool_)
    assert kernels.best_sets(available, requests, replicas, masks, 100).sets == 4
    assert kernels.sum_fit(available, requests[0], masks[0]) == 8
    packing = kernels.best_sets(available, requests, replicas, masks, 100)
    assert kernels.verify_placement(available, requests, replicas, masks, packing.sets, packing.placement)


def test_warmup_compiles_the_one_signature_every_call_uses():
    from estimator.kernels import best, firstfit, fit, witness

    kernels.warmup()
    # Calls with every kind of input the wrappers accept (read-only, narrower, strided).
    available = np.array([[3, 8, 1], [2, 8, 0], [4, 2, 2]], dtype=np.int32)[::-1]
    available.flags.writeable = False
    requests = np.array([[1, 2, 0], [1, 1, 1]], dtype=np.int16)
    replicas, masks = np.array([1, 1], dtype=np.uint16), np.ones((2, 3), dtype=np.bool_)
    kernels.sum_fit(available, requests[1], masks[1])
    packing = kernels.best_sets(available, requests, replicas, masks, 10)
    kernels.verify_placement(available, requests, replicas, masks, packing.sets, packing.placement)
    kernels.first_fit_sets(np.array(available, dtype=np.int64), requests, replicas, masks, 10)
    dispatchers = [
        value
        for module in (best, firstfit, fit, witness)
        for value in vars(module).values()
        if hasattr(value, "signatures") and hasattr(value, "py_func")
    ]
    assert dispatchers
    for dispatcher in dispatchers:
        assert len(dispatcher.signatures) <= 1, (dispatcher.py_func.__name__, dispatcher.signatures)
    entries = (fit._sum_fit, fit._bounds, firstfit._first_fit, best._node_orders)
    for entry in (*entries, witness.placement_valid):
        assert len(entry.signatures) == 1, entry.py_func.__name__
