"""Checks a witness placement: the best mode never reports sets it cannot show."""

from __future__ import annotations

import operator

import numpy as np

from ._arith import INT64_MAX, SMALL
from ._arrays import amounts, problem, readonly
from ._numba import kernel


@kernel
def placement_valid(
    available: np.ndarray,
    requests: np.ndarray,
    replicas: np.ndarray,
    masks: np.ndarray,
    sets: int,
    placement: np.ndarray,
) -> bool:
    """The check behind `verify_placement`, on arrays already checked (best mode's search
    calls it directly). Per component: no negative count, none where its mask is off, sets x replicas in
    all. Then per node holding a replica: the summed requests fit in every column. A node
    holding nothing needs no capacity check, so a placement on a few nodes of a large
    member costs one read per component and node, not one per column too."""
    n_comp, n_nodes = placement.shape
    for c in range(n_comp):
        r = replicas[c]
        if r > 0 and sets > INT64_MAX // r:
            return False  # no placement can hold more than int64 replicas
        target = sets * r
        total = 0
        for n in range(n_nodes):
            x = placement[c, n]
            if x != 0:
                if x < 0 or not masks[c, n] or x > target - total:
                    return False
                total += x
        if total != target:
            return False
    for n in range(n_nodes):
        used = False
        for c in range(n_comp):
            if placement[c, n] > 0:
                used = True
                break
        if not used:
            continue
        for k in range(available.shape[1]):
            left = available[n, k]
            for c in range(n_comp):
                x = placement[c, n]
                r = requests[c, k]
                if x > 0 and r > 0:
                    # x * r may overflow int64: multiply only when both are small.
                    if x > SMALL or r > SMALL:
                        if x > left // r:
                            return False
                    elif x * r > left:
                        return False
                    left -= x * r
    return True


def verify_placement(
    available: object, requests: object, replicas: object, masks: object, sets: object, placement: object
) -> bool:
    """True iff `placement` (int64[C, N]) places `sets` complete sets within `available`.

    Checks: non-negative, zero where masks is False, sum over n of placement[c] ==
    sets * replicas[c], and on every node and column the summed requests fit.
    """
    p = problem(available, requests, replicas, masks, 0, in_place=False)
    if isinstance(sets, bool):
        raise ValueError("sets must be an int, got bool")
    try:
        count = operator.index(sets)  # type: ignore[arg-type]  # any object: index()'s TypeError is the check
    except TypeError:
        raise ValueError(f"sets must be an int, got {type(sets).__name__}") from None
    place = amounts("placement", placement, 2)
    if place.shape != p.masks.shape or not 0 <= count <= INT64_MAX:
        return False
    return bool(placement_valid(p.available, p.requests, p.replicas, p.masks, count, readonly(place)))
