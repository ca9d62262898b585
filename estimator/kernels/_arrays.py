"""Argument checks shared by the kernel wrappers, and the `Packing` result type.

Kernels run with bounds checks off, so every shape, dtype and sign is checked here, once,
before any kernel sees the arrays. Integer arrays of a narrower dtype are widened to int64;
anything else (floats, objects, wrong rank) is a ValueError naming the argument.

The scans over every value (signs, pod column) cost tens of microseconds on 10k-node
arrays, per request. Arrays the caller built from an already-checked source (the
snapshot's columns, a request's rows kept per snapshot) are checked once by `vouch` and
remembered by identity; `problem` then checks only their shapes and flags. Any other
array, including a copy or view of a vouched one, gets every check.
"""

from __future__ import annotations

import operator
import weakref
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from ._arith import INT64_MAX as _INT64_MAX

if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import TypeGuard

MAX_UPPER = 2**31 - 1


class Packing(NamedTuple):
    """`sets` complete sets; placement[c, n] = replicas of component c on node n over all of them.

    `bound`: an upper bound on the sets any placement reaches (-1: not computed); the
    answer is proven optimal when sets == bound. `limiting`: the component that could not
    complete the next set (-1: none, or not known); its fits give the first bound to try.
    `work`: what computing it cost, in node visits (deterministic; best mode's budget is
    counted in it; 0: not counted). `pool`: the nodes where some component fits a replica
    (best mode's eligible pool; -1: not counted).
    """

    sets: int
    placement: np.ndarray
    bound: int = -1
    limiting: int = -1
    work: int = 0
    pool: int = -1


class Problem(NamedTuple):
    available: np.ndarray  # int64[N, K]
    requests: np.ndarray  # int64[C, K]
    replicas: np.ndarray  # int64[C]
    masks: np.ndarray  # bool[C, N]
    upper: int


def readonly(array: np.ndarray) -> np.ndarray:
    """A read-only view (the array itself when it already is read-only): numba compiles a
    separate copy of a kernel for read-only and for writable arrays, so every input-only
    argument is passed read-only and one compiled signature (the one `warmup()` builds)
    serves callers whatever their flags."""
    if not array.flags.writeable:
        return array
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
        value = operator.index(upper)  # type: ignore[arg-type]  # any object: index()'s TypeError is the check
    except TypeError:
        raise ValueError(f"upper must be an int, got {type(upper).__name__}") from None
    if not 0 <= value <= MAX_UPPER:
        raise ValueError(f"upper must be in [0, {MAX_UPPER}], got {value}")
    return value


# Up to this many values, a request's rows and replicas are checked as a Python list: a
# numpy reduction costs a few microseconds whatever the size, per request.
_SMALL_ARRAY = 64


def _no_negatives(name: str, array: np.ndarray) -> None:
    if not array.size:
        return
    if array.size <= _SMALL_ARRAY and array.dtype.kind in "iu":
        negative = min(array.ravel().tolist()) < 0
    else:
        negative = array.min() < 0
    if negative:
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
    if not vouched(array, AMOUNTS):
        _no_negatives("available", array)
    return array


def check_request_rows(requests: np.ndarray, k: int) -> None:
    if requests.shape[-1] != k:
        raise ValueError(f"requests have {requests.shape[-1]} columns, available has {k}")
    _no_negatives("requests", requests)
    if requests.size and not np.all(requests[..., 0] == 1):
        raise ValueError("every request row must ask for exactly 1 pod in column 0")


# What a vouched array was checked as: the skipped scans differ by role.
AMOUNTS = "amounts"  # int64, C-contiguous, no negative value (available, replicas)
REQUEST_ROWS = "request rows"  # AMOUNTS, and column 0 (pods) is 1 in every row
FLAGS = "flags"  # bool, C-contiguous

# id(array) -> (weak reference, role). The reference tells a live array from a dead one
# whose id was reused; its callback drops the entry when the array goes.
_VOUCHED: dict[int, tuple[weakref.ref, str]] = {}


def _forget(key: int) -> Callable[[weakref.ref], None]:
    def drop(ref: weakref.ref) -> None:
        entry = _VOUCHED.get(key)
        if entry is not None and entry[0] is ref:
            _VOUCHED.pop(key, None)

    return drop


def _remember(array: np.ndarray, role: str) -> np.ndarray:
    key = id(array)
    _VOUCHED[key] = (weakref.ref(array, _forget(key)), role)
    return array


def vouched(array: object, role: str) -> TypeGuard[np.ndarray]:
    """Whether this very array was vouched for in `role` and is still alive."""
    entry = _VOUCHED.get(id(array))
    return entry is not None and entry[1] == role and entry[0]() is array


def vouch(name: str, array: np.ndarray, role: str) -> np.ndarray:
    """Check `array` once for `role`, as `problem` would, and remember it: `problem` then
    skips the scans for this array object (not for its copies or views, see
    `vouched_copy`). The array must be an int64 (bool for FLAGS) C-contiguous ndarray; its
    holder promises not to write it afterwards other than through the kernels, which only
    ever consume amounts down to zero. ValueError naming `name` when a check fails."""
    if not isinstance(array, np.ndarray) or not array.flags.c_contiguous:
        raise ValueError(f"{name} must be a C-contiguous numpy array to be vouched for")
    if role == FLAGS:
        if array.dtype != np.bool_:
            raise ValueError(f"{name} must have dtype bool, got {array.dtype}")
    elif role in (AMOUNTS, REQUEST_ROWS):
        if array.dtype != np.int64:
            raise ValueError(f"{name} must have dtype int64, got {array.dtype}")
        _no_negatives(name, array)
        if role == REQUEST_ROWS:
            if array.ndim != 2:
                raise ValueError(f"{name} must be a 2-D integer array, got shape {array.shape}")
            if array.size and not all(x == 1 for x in array[:, 0].tolist()):
                raise ValueError("every request row must ask for exactly 1 pod in column 0")
    else:
        raise ValueError(f"unknown role {role!r}")
    return _remember(array, role)


def vouched_copy(array: np.ndarray) -> np.ndarray:
    """A private, writable copy of `array`, vouched for in the same role when `array` is
    (a copy holds the same values, so the checks need not run again)."""
    copy = array.copy()
    entry = _VOUCHED.get(id(array))
    if entry is not None and entry[0]() is array:
        _remember(copy, entry[1])
    return copy


def _trusted_problem(
    avail: np.ndarray, reqs: np.ndarray, reps: np.ndarray, mask: np.ndarray, upper: object, in_place: bool
) -> Problem | None:
    """`problem` for vouched arrays: shapes and flags only. None when a shape is off, so
    the full checks run and raise their usual message."""
    if avail.ndim != 2 or reqs.ndim != 2 or reps.ndim != 1 or mask.ndim != 2:
        return None
    n, k = avail.shape
    c = reqs.shape[0]
    if k < 1 or reqs.shape[1] != k or reps.shape != (c,) or mask.shape != (c, n):
        return None
    if in_place and not avail.flags.writeable:
        return None
    if not in_place:
        avail = readonly(avail)
    return Problem(avail, readonly(reqs), readonly(reps), readonly(mask), check_upper(upper))


def problem(
    available: object, requests: object, replicas: object, masks: object, upper: object, *, in_place: bool
) -> Problem:
    """Validate the arguments of the packing functions (see `first_fit_sets`)."""
    if (
        vouched(available, AMOUNTS)
        and vouched(requests, REQUEST_ROWS)
        and vouched(replicas, AMOUNTS)
        and vouched(masks, FLAGS)
    ):
        checked = _trusted_problem(available, requests, replicas, masks, upper, in_place)
        if checked is not None:
            return checked
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
