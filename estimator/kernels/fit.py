"""Per-node fit ("MaxDivided"), MaxAvailableReplicas, and the upper bound on sets.

fit(n, request) = min over k with request[k] > 0 of available[n, k] // request[k]. Column 0
is pods and every request asks for one pod, so the fit is bounded by the pod slots left.
"""

from __future__ import annotations

import numpy as np

from ._arrays import amounts, check_available, check_request_rows, flags, readonly
from ._numba import kernel

INT64_MAX = np.iinfo(np.int64).max
_SMALL = 2**31 - 1  # two values up to this multiply without overflow


@kernel
def _node_fit(available: np.ndarray, n: int, request: np.ndarray) -> int:
    # Divide only in a column that binds and asks for more than one unit (pods and most
    # extended resources ask for 1): int64 division dominates this loop otherwise.
    best = INT64_MAX
    for k in range(available.shape[1]):
        r = request[k]
        if r > 0:
            a = available[n, k]
            if r == 1:
                best = min(best, a)
            elif best > _SMALL or r > _SMALL:
                best = min(best, a // r)
            elif best * r > a:
                best = a // r
    return best


@kernel
def _sum_fit(available: np.ndarray, request: np.ndarray, mask: np.ndarray) -> int:
    total = 0
    for n in range(available.shape[0]):
        if mask[n]:
            f = _node_fit(available, n, request)
            if f > INT64_MAX - total:
                return INT64_MAX
            total += f
    return total


@kernel
def _fit_table(available: np.ndarray, requests: np.ndarray, masks: np.ndarray, out: np.ndarray) -> None:
    """out[c, n] = fit of one replica of c on n, 0 where c may not run."""
    for c in range(requests.shape[0]):
        row = requests[c]
        for n in range(available.shape[0]):
            out[c, n] = _node_fit(available, n, row) if masks[c, n] else 0


@kernel
def _set_bound(
    available: np.ndarray, requests: np.ndarray, replicas: np.ndarray, fits: np.ndarray, upper: int
) -> int:
    """An upper bound on the number of complete sets that any placement can reach.

    Per component: floor(sum of its per-node fits / replicas). Per resource k, jointly: a node
    can give the set at most min(available[n, k], sum over c of fit(c, n) * requests[c, k]),
    and a set needs sum over c of replicas[c] * requests[c, k]. Saturated sums skip a bound
    rather than under-estimate it.
    """
    n_nodes, n_cols = available.shape
    bound = upper
    for c in range(requests.shape[0]):
        if replicas[c] == 0:
            continue
        total = 0
        saturated = False
        for n in range(n_nodes):
            f = fits[c, n]
            if f > INT64_MAX - total:
                saturated = True
                break
            total += f
        if not saturated:
            bound = min(bound, total // replicas[c])
    for k in range(n_cols):
        demand = 0
        demand_saturated = False
        for c in range(requests.shape[0]):
            r = requests[c, k]
            if r > 0 and replicas[c] > 0:
                if replicas[c] > (INT64_MAX - demand) // r:
                    demand_saturated = True
                    break
                demand += replicas[c] * r
        if demand == 0 and not demand_saturated:
            continue
        supply = 0
        supply_saturated = False
        for n in range(n_nodes):
            usable = 0
            for c in range(requests.shape[0]):
                if replicas[c] > 0 and requests[c, k] > 0:
                    # fits[c, n] <= available[n, k] // requests[c, k]: no overflow.
                    part = fits[c, n] * requests[c, k]
                    usable = INT64_MAX if part > INT64_MAX - usable else usable + part
            usable = min(usable, available[n, k])
            if usable > INT64_MAX - supply:
                supply_saturated = True
                break
            supply += usable
        if supply_saturated:
            continue
        if demand_saturated:
            return 0  # a set needs more than int64 of k, and the cluster has less
        bound = min(bound, supply // demand)
    return bound


def sum_fit(available: np.ndarray, request: np.ndarray, mask: np.ndarray) -> int:
    """MaxAvailableReplicas: sum over nodes with mask[n] of the fit of `request` (int64-saturating)."""
    avail = check_available(available, in_place=False)
    row = amounts("request", request, 1)
    check_request_rows(row, avail.shape[1])
    flag = flags("mask", mask, 1)
    if flag.shape != (avail.shape[0],):
        raise ValueError(f"mask has shape {flag.shape}, expected ({avail.shape[0]},) (one per node)")
    return int(_sum_fit(readonly(avail), readonly(row), readonly(flag)))
