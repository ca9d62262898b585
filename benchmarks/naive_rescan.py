"""The naive reference: Karmada's Go First-Fit (SchedulingSimulator.SimulateScheduling), as is.

For every set, for every component in request order, walk ALL nodes from the first; on
each node that matches, MaxDivided = min over requested columns of available // request,
take min(remaining, MaxDivided), consume; stop the component when complete. The set fails
when a component cannot be completed. O(sets x components x nodes x columns).

Two versions over the same int64 arrays the node-resource plugin builds:

- `compiled_first_fit`: numba, the Go loop line for line, a *generous* stand-in for Go:
  node masks are precomputed (Go evaluates MatchNode, i.e. affinity and tolerations, on
  every node visit), resources are a flat row (Go uses map-backed ResourceLists and clones
  the request per node) and no per-node allocation happens. A budget of node visits caps
  its run time; `complete` says whether it finished.
- `python_first_fit`: plain Python over lists, with a wall-clock deadline checked per set.

This module, like tests/support/naive.py, is an independent reference: it never imports
estimator.kernels. It imports numba only to give the reference a compiled speed; the
product's kernels stay the only numba importer inside `estimator/`.
"""

from __future__ import annotations

import time
from typing import NamedTuple

import numba
import numpy as np


class NaiveResult(NamedTuple):
    sets: int  # complete sets placed (a lower bound when not complete)
    complete: bool  # False: the cap stopped it
    seconds: float
    visits: int  # node visits (compiled) or sets tried (python)


@numba.njit(cache=True, nogil=True)
def _rescan(available, requests, replicas, masks, upper, budget):
    n_nodes, n_cols = available.shape
    n_comp = requests.shape[0]
    sets = 0
    visits = 0
    while sets < upper:
        for c in range(n_comp):
            remaining = replicas[c]
            if remaining == 0:
                continue
            for n in range(n_nodes):  # Go: for _, node := range s.nodes (from the first, every set)
                visits += 1
                if not masks[c, n]:  # Go: MatchNode (evaluated per visit there)
                    continue
                fit = np.int64(9223372036854775807)
                for k in range(n_cols):  # Go: node.Allocatable.MaxDivided(request)
                    r = requests[c, k]
                    if r > 0:
                        q = available[n, k] // r
                        if q < fit:
                            fit = q
                if fit == 0:
                    continue
                if remaining < fit:
                    fit = remaining
                for k in range(n_cols):  # Go: SubResource(request * fit), clamped at 0
                    left = available[n, k] - requests[c, k] * fit
                    available[n, k] = left if left > 0 else 0
                remaining -= fit
                if remaining == 0:
                    break
            if remaining > 0:
                return sets, visits, True
            if visits > budget:
                return sets, visits, False
        sets += 1
    return sets, visits, True


def compiled_first_fit(available, requests, replicas, masks, upper: int, budget: int) -> NaiveResult:
    """Run the compiled Go loop on a copy of `available`, stopping after `budget` node visits."""
    avail = np.array(available, dtype=np.int64, order="C", copy=True)
    started = time.perf_counter()
    sets, visits, complete = _rescan(avail, requests, replicas, masks, upper, budget)
    return NaiveResult(int(sets), bool(complete), time.perf_counter() - started, int(visits))


def warm_compiled() -> None:
    a = np.array([[2, 4], [1, 1]], dtype=np.int64)
    r = np.array([[1, 1]], dtype=np.int64)
    compiled_first_fit(a, r, np.array([1], dtype=np.int64), np.ones((1, 2), dtype=np.bool_), 10, 10**6)


def python_first_fit(available, requests, replicas, masks, upper: int, deadline_s: float) -> NaiveResult:
    """The same loop in plain Python; gives up (complete=False) once `deadline_s` has passed."""
    avail = available.tolist()
    reqs = requests.tolist()
    reps = [int(x) for x in replicas]
    mask = masks.tolist()
    cols = [[k for k, r in enumerate(row) if r > 0] for row in reqs]
    started = time.perf_counter()
    stop = started + deadline_s
    sets = 0
    while sets < upper:
        if time.perf_counter() > stop:
            return NaiveResult(sets, False, time.perf_counter() - started, sets)
        for c, remaining in enumerate(reps):
            if remaining == 0:
                continue
            req, use, allowed = reqs[c], cols[c], mask[c]
            for n, row in enumerate(avail):
                if not allowed[n]:
                    continue
                fit = min(row[k] // req[k] for k in use)
                if fit == 0:
                    continue
                fit = min(fit, remaining)
                for k in use:
                    row[k] = max(row[k] - req[k] * fit, 0)
                remaining -= fit
                if remaining == 0:
                    break
            if remaining > 0:
                return NaiveResult(sets, True, time.perf_counter() - started, sets)
        sets += 1
    return NaiveResult(sets, True, time.perf_counter() - started, sets)
