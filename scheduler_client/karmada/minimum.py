"""Per member: the minimum over estimators that gave an authentic answer.

As Karmada's scheduler (mergeReplicaResults / calculateMultiTemplateAvailableSets): an
answer of -1 ("UnauthenticReplica") means "this estimator does not know" and is skipped;
the rest are combined by minimum. A member with no authentic answer has no number at all
(UNKNOWN) and cannot be chosen.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

UNKNOWN = -1


@dataclass(frozen=True)
class Merged:
    sets: int  # UNKNOWN when no estimator gave an authentic answer
    deciding: tuple[str, ...]  # the estimators whose answer is the minimum
    ignored: tuple[str, ...]  # estimators that answered -1


def merge(answers: Mapping[str, int | None]) -> Merged:
    """answers: estimator -> sets, UNKNOWN (-1), or None (not asked)."""
    authentic = {name: value for name, value in answers.items() if value is not None and value != UNKNOWN}
    ignored = tuple(name for name, value in answers.items() if value == UNKNOWN)
    if not authentic:
        return Merged(UNKNOWN, (), ignored)
    minimum = min(authentic.values())
    return Merged(minimum, tuple(name for name, value in authentic.items() if value == minimum), ignored)
