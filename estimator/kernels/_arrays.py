"""Argument checks shared by the kernel wrappers, and the `Packing` result type.

Kernels run with bounds checks off, so every shape, dtype and sign is checked here, once,
before any kernel sees the arrays. Integer arrays of a narrower dtype are widened to int64;
anything else (floats, objects, wrong rank) is a ValueError naming the argument.
"""

from __future__ import annotations

import operator
from typing import NamedTuple

import numpy as np

from ._arith import INT64_MAX as _INT64_MAX

MAX_UPPER = 2**31 - 1


class Packing(NamedTuple):
    """`sets` complete sets; placement[c, n] = replicas of component c on node n over all of them.

    `bound`: an upper bound on the sets any placement reaches (-1: not computed); the
    answer is proven optimal when sets == bound. `limiting`: the component that could not
    complete the next set (-1: none, or not known); its fits give the first bound to try.
    `work`: what computing it cost, in node visits (deterministic; best mode's budget is
    counted in it; 0: not counted).
    """

    sets: int
    placement: np.ndarray
    bound: int = -1
    limiting: int = -1
    work: int = 0


class Problem(NamedTuple):
    available: np.ndarray  # int64[N, K]
    requests: np.ndarray  # int64[C, K]
    replicas: np.ndarray  # int64[C]
    masks: np.ndarray  # bool[C, N]
    upper: int


def readonly(array: np.ndarray) -> np.ndarray:
    """A read-only view: numba compiles a separate copy of a kernel for read-only and for
    writable arrays, so every input-only argument is passed read-only and one compiled
    signature (the one `warmup()` builds) serves callers whatever their flags."""
    view = array.view()
    view.flags.writeable = False
    return view


def amounts(name: str, value: object, ndim: int) -> np.ndarray:
    """`value` as a C-contiguous int64 array of rank `ndim` (copied only when needed)."""
    array = np.asarray(value)
    if array.ndim != ndim:
        raise ValueError(f"{name} must be a {ndim}-D integer array, got shape {array.shape}")
    if array.dtype.kind not in "iu":
        raise ValueError(f"{name} must hold integers (int64 amounts), got dtype {array.dtype}")
    if array.dtype == np.uint64 and array.size and int(array.max()) > _INT64_MAX:
        raise ValueError(f"{name} has a value above the int64 range")
    return np.ascontiguousarray(array, dtype=np.int64)


def flags(name: str, value: object, ndim: int) -> np.ndarray:
    array = np.asarray(value)
    if array.ndim != ndim:
        raise ValueError(f"{name} must be a {ndim}-D bool array, got shape {array.shape}")
    if array.dtype != np.bool_:
        raise ValueError(f"{name} must have dtype bool, got {array.dtype}")
    return np.ascontiguousarray(array)


def check_upper(upper: object) -> int:
    if isinstance(upper, bool):
        raise ValueError("upper must be an int, got bool")
    try:
        value = operator.index(upper)
    except TypeError:
        raise ValueError(f"upper must be an int, got {type(upper).__name__}") from None
    if not 0 <= value <= MAX_UPPER:
        raise ValueError(f"upper must be in [0, {MAX_UPPER}], got {value}")
    return value


def _no_negatives(name: str, array: np.ndarray) -> None:
    if array.size and array.min() < 0:
        raise ValueError(f"{name} must not be negative")


def check_available(available: object, *, in_place: bool) -> np.ndarray:
    if in_place:
        # The caller reads the consumption back from this very array, so no silent copy.
        if not (
            isinstance(available, np.ndarray)
            and available.dtype == np.int64
            and available.ndim == 2
            and available.flags.c_contiguous
            and available.flags.writeable
        ):
            raise ValueError(
                "available must be a writable C-contiguous int64[N, K] numpy array "
                "(first_fit_sets consumes it in place; pass a copy)"
            )
        array = available
    else:
        array = amounts("available", available, 2)
    if array.shape[1] < 1:
        raise ValueError("available needs column 0 (pods)")
    _no_negatives("available", array)
    return array


def check_request_rows(requests: np.ndarray, k: int) -> None:
    if requests.shape[-1] != k:
        raise ValueError(f"requests have {requests.shape[-1]} columns, available has {k}")
    _no_negatives("requests", requests)
    if requests.size and not np.all(requests[..., 0] == 1):
        raise ValueError("every request row must ask for exactly 1 pod in column 0")


def problem(available, requests, replicas, masks, upper, *, in_place: bool) -> Problem:
    """Validate the arguments of the packing functions (see `first_fit_sets`)."""
    avail = check_available(available, in_place=in_place)
    n, k = avail.shape
    reqs = amounts("requests", requests, 2)
    check_request_rows(reqs, k)
    c = reqs.shape[0]
    reps = amounts("replicas", replicas, 1)
    if reps.shape != (c,):
        raise ValueError(f"replicas has shape {reps.shape}, expected ({c},) (one per request row)")
    _no_negatives("replicas", reps)
    mask = flags("masks", masks, 2)
    if mask.shape != (c, n):
        raise ValueError(f"masks has shape {mask.shape}, expected ({c}, {n}) (components x nodes)")
    if not in_place:
        avail = readonly(avail)
    return Problem(avail, readonly(reqs), readonly(reps), readonly(mask), check_upper(upper))
