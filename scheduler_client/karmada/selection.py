"""Karmada's order of the feasible members, and its choice by available sets. Pure.

- `karmada_order` (spreadconstraint.selectBestClustersByCluster with one group and one set
  needed): candidates sorted by overflow group (a clusterAffinities term's primary group
  first, then its overflowAffinities in order), score (equal for a new binding), then
  available sets, more first, then name; Karmada takes the first with at least one set.
- `select_by_available` (selectClustersByAvailableResource): the first N of that order,
  bigger members swapped in from the rest until their total reaches what is needed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Candidate:
    name: str
    sets: int  # merged; -1 when unknown
    eligible: bool  # passes the policy's filters and has an authentic answer
    group: int = 0  # 0: the term's primary group; i: its i-th overflow group


def karmada_order(candidates: Sequence[Candidate]) -> list[Candidate]:
    return sorted(candidates, key=lambda c: (c.group, -c.sets, c.name))


def select_by_available(ranked: Sequence[tuple[str, int]], need_count: int, need: int) -> list[tuple[str, int]] | None:
    """selectClustersByAvailableResource: the first need_count, swapping in bigger members from
    the rest, last slot first, until the total reaches `need`; None when it never does."""
    ranked = list(ranked)
    chosen, rest = ranked[:need_count], ranked[need_count:]
    slot = len(chosen) - 1
    while sum(s for _, s in chosen) < need and slot >= 0:
        best, pick = chosen[slot][1], -1
        for i, (_, sets) in enumerate(rest):
            if sets > best:
                best, pick = sets, i
        if pick >= 0:
            chosen[slot], rest[pick] = rest[pick], chosen[slot]
        slot -= 1
    return chosen if sum(s for _, s in chosen) >= need else None
