"""Label requirements, matched the way Kubernetes matches them: the one implementation
behind node affinity (filters.py) and workload label selectors (workloads.py).

Hand-written on purpose: the semantics are Kubernetes' own (labels.Requirement.Matches),
including the corners a generic matcher gets wrong (an absent label is "not in"; Gt/Lt
compare only labels that are base-10 int64), and the tables in tests/core/test_filters.py and
tests/core/test_workloads.py hold it to them. It runs once per node class, not per node.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from estimator.core.model import (
    OP_DOES_NOT_EXIST,
    OP_EXISTS,
    OP_GT,
    OP_IN,
    OP_LT,
    OP_NOT_IN,
    NodeSelectorRequirement,
)

# strconv.ParseInt(s, 10, 64): optional sign, decimal digits, nothing else (fullmatch:
# "$" would also take a trailing newline, which Go refuses).
_INTEGER = re.compile(r"[+-]?[0-9]+")
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def parse_int64(text: str) -> int | None:
    """The value Go's strconv.ParseInt(text, 10, 64) returns, or None where it errors."""
    if not _INTEGER.fullmatch(text):
        return None
    value = int(text)
    return value if _INT64_MIN <= value <= _INT64_MAX else None


def is_int64(text: str) -> bool:
    return parse_int64(text) is not None


def requirement_matches(labels: Mapping[str, str], req: NodeSelectorRequirement) -> bool:
    """One valid requirement against a set of labels (labels.Requirement.Matches)."""
    value = labels.get(req.key)
    op = req.operator
    if op == OP_IN:
        return value is not None and value in req.values
    if op == OP_NOT_IN:
        return value is None or value not in req.values  # an absent label is "not in"
    if op == OP_EXISTS:
        return value is not None
    if op == OP_DOES_NOT_EXIST:
        return value is None
    if op in (OP_GT, OP_LT):
        have = parse_int64(value) if value is not None else None
        if have is None:
            return False  # a label that is not an integer matches neither Gt nor Lt
        want = parse_int64(req.values[0])
        assert want is not None  # a valid requirement's one value is an int64 (filters._requirement_valid)
        return have > want if op == OP_GT else have < want
    return False
