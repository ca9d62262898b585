"""Choosing ONE member for a job whose components must land together. Pure.

Karmada (spreadconstraint.selectBestClustersByCluster with one group and one set needed):
candidates sorted by overflow group (a clusterAffinities term's primary group first, then its
overflowAffinities in order), score (equal for a new binding), then available sets, more
first, then name; the first with at least one set is chosen. `tightest` keeps big holes for big jobs:
fewest sets first (at least one), then name.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

KARMADA = "karmada"
TIGHTEST = "tightest"
STRATEGIES = (KARMADA, TIGHTEST)


@dataclass(frozen=True)
class Candidate:
    name: str
    sets: int  # merged; -1 when unknown
    eligible: bool  # passes the policy's filters and has an authentic answer
    group: int = 0  # 0: the term's primary group; i: its i-th overflow group


def karmada_order(candidates: Sequence[Candidate]) -> list[Candidate]:
    return sorted(candidates, key=lambda c: (c.group, -c.sets, c.name))


def choose(candidates: Sequence[Candidate], strategy: str = KARMADA) -> Candidate | None:
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {', '.join(STRATEGIES)}, got {strategy!r}")
    fitting = [c for c in candidates if c.eligible and c.sets >= 1]
    if not fitting:
        return None
    if strategy == TIGHTEST:
        return min(fitting, key=lambda c: (c.group, c.sets, c.name))
    return karmada_order(fitting)[0]
