"""Accuracy: first-fit and best against the exhaustive optimum on random small members.

Each member has 1-8 nodes and 1-3 components over columns [pods, cpu, memory, gpu] in
small integer units (so the exhaustive search stays fast), GPUs fragmented (0-8 free per
node), and random node masks standing in for selectors/taints (a component may use a node
with probability 0.85). Per member:

- `optimum`: tests/support/naive.exhaustive (depth-first over every aggregated placement);
- `first-fit` and `best`: the public kernels (estimator.kernels), the same calls the
  node-resource plugin makes;
- every witness placement (both modes) is re-checked by tests/support/naive.verify, which shares
  no code with the kernels; an answer above the optimum or a witness that fails the check
  is an OVER-PROMISE (must be 0);
- first-fit must also equal tests/support/naive.first_fit (Karmada's rescan, literally).
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from estimator import kernels

from tests.support import naive  # the independent oracle

UPPER = 2**31 - 1


def random_member(rng: np.random.Generator):
    n = int(rng.integers(1, 9))
    c = int(rng.integers(1, 4))
    available = np.zeros((n, 4), dtype=np.int64)
    available[:, 0] = rng.integers(1, 11, size=n)  # pod slots left
    available[:, 1] = rng.integers(0, 17, size=n)  # cpu (cores)
    available[:, 2] = rng.integers(0, 33, size=n)  # memory (GiB)
    available[:, 3] = rng.choice([0, 1, 2, 3, 4, 8], size=n, p=[0.25, 0.2, 0.2, 0.1, 0.15, 0.1])  # free GPUs
    requests = np.zeros((c, 4), dtype=np.int64)
    requests[:, 0] = 1
    requests[:, 1] = rng.integers(0, 5, size=c)
    requests[:, 2] = rng.integers(0, 9, size=c)
    requests[:, 3] = rng.choice([0, 1, 2, 3], size=c, p=[0.45, 0.35, 0.15, 0.05])
    replicas = rng.integers(1, 4, size=c).astype(np.int64)
    masks = rng.random((c, n)) < 0.85
    return available, requests, replicas, masks


def _check(member) -> dict:
    available, requests, replicas, masks = member
    optimum, witness = naive.exhaustive(available, requests, replicas, masks, UPPER)
    assert naive.verify(available, requests, replicas, masks, optimum, witness), "oracle witness invalid"
    ff = kernels.first_fit_sets(available.copy(), requests, replicas, masks, UPPER)
    best = kernels.best_sets(available, requests, replicas, masks, UPPER)
    karmada = naive.first_fit(available, requests, replicas, masks, UPPER)[0]
    out = {"nodes": available.shape[0], "components": requests.shape[0], "optimum": optimum}
    for mode, packing in (("first-fit", ff), ("best", best)):
        ok = naive.verify(available, requests, replicas, masks, packing.sets, packing.placement)
        out[mode] = packing.sets
        out[f"{mode}_witness_ok"] = bool(ok)
    out["karmada_parity"] = ff.sets == karmada
    return out


def _histogram(values: list[int]) -> dict[str, int]:
    bins = {"0": 0, "1": 0, "2": 0, "3-5": 0, "6+": 0}
    for v in values:
        key = str(v) if v < 3 else ("3-5" if v < 6 else "6+")
        bins[key] += 1
    return bins


def run(count: int, seed: int = 7, progress: Callable[[int], None] | None = None) -> dict:
    """Summary over `count` random members (and the gap histograms the plots draw)."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(count):
        rows.append(_check(random_member(rng)))
        if progress is not None:
            progress(i + 1)
    summary: dict = {"members": count, "seed": seed, "max_nodes": 8, "max_components": 3,
                     "parity_mismatches": sum(not r["karmada_parity"] for r in rows),
                     "optimum_histogram": _histogram([r["optimum"] for r in rows])}
    for mode in ("first-fit", "best"):
        gaps = np.array([r["optimum"] - r[mode] for r in rows], dtype=np.int64)
        positive = [r for r in rows if r["optimum"] > 0]
        relative = [(r["optimum"] - r[mode]) / r["optimum"] for r in positive]
        over = sum(1 for r in rows if r[mode] > r["optimum"] or not r[f"{mode}_witness_ok"])
        hist = {"0": int((gaps == 0).sum()), "1": int((gaps == 1).sum()), "2": int((gaps == 2).sum()),
                "3+": int((gaps >= 3).sum())}
        nonzero = np.array([r["optimum"] - r[mode] for r in positive], dtype=np.int64)
        summary[mode] = {
            "optimal": int((gaps == 0).sum()),
            "optimal_rate": float((gaps == 0).mean()),
            "optimal_rate_nonzero": float((nonzero == 0).mean()) if len(nonzero) else 1.0,
            "mean_gap_sets": float(gaps.clip(min=0).mean()),
            "mean_relative_gap": float(np.mean(relative)) if relative else 0.0,
            "max_gap_sets": int(gaps.max(initial=0)),
            "over_promises": int(over),
            "witnesses_checked": count,
            "gap_histogram": hist,
        }
    summary["members_optimum_above_0"] = sum(r["optimum"] > 0 for r in rows)
    summary["best_above_first_fit"] = sum(r["best"] > r["first-fit"] for r in rows)
    summary["best_below_first_fit"] = sum(r["best"] < r["first-fit"] for r in rows)
    return summary
