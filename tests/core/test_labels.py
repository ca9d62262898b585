"""estimator/core/labels.py: int64 label values and requirement matching, Kubernetes' semantics."""

from __future__ import annotations

import pytest

from estimator.core.labels import is_int64, parse_int64, requirement_matches
from estimator.core.model import NodeSelectorRequirement as Req
from estimator.core.workloads import label_selector

INT64 = [
    ("plain digits", "42", 42),
    ("a plus sign", "+7", 7),
    ("a minus sign", "-7", -7),
    ("leading zeros", "007", 7),
    ("the largest int64", "9223372036854775807", 2**63 - 1),
    ("the smallest int64", "-9223372036854775808", -(2**63)),
    ("one past the largest", "9223372036854775808", None),
    ("one past the smallest", "-9223372036854775809", None),
    ("a trailing newline (Python's $ would take it, Go does not)", "5\n", None),
    ("underscores (Python's int takes them, Go does not)", "1_000", None),
    ("spaces", " 5", None),
    ("a fraction", "1.5", None),
    ("an exponent", "1e3", None),
    ("non-ASCII digits", "\u0661", None),
    ("a bare sign", "-", None),
    ("empty", "", None),
]


@pytest.mark.parametrize("text, expected", [pytest.param(t, e, id=s) for s, t, e in INT64])
def test_parse_int64_is_go_strconv_parseint(text, expected):
    assert parse_int64(text) == expected
    assert is_int64(text) is (expected is not None)


LABELS = {"zone": "a", "rank": "10", "gpu": ""}
MATCHES = [
    ("In holds for a listed value", Req("zone", "In", ("a", "b")), True),
    ("In fails for an absent label", Req("region", "In", ("a",)), False),
    ("NotIn holds for an absent label", Req("region", "NotIn", ("a",)), True),
    ("NotIn fails for a listed value", Req("zone", "NotIn", ("a",)), False),
    ("Exists holds for an empty value", Req("gpu", "Exists"), True),
    ("DoesNotExist fails for an empty value", Req("gpu", "DoesNotExist"), False),
    ("Gt compares as integers, not strings", Req("rank", "Gt", ("9",)), True),
    ("Lt compares as integers, not strings", Req("rank", "Lt", ("9",)), False),
    ("Gt on a non-integer label fails", Req("zone", "Gt", ("0",)), False),
    ("Lt on an absent label fails", Req("region", "Lt", ("100",)), False),
    ("an unknown operator matches nothing", Req("zone", "Near", ("a",)), False),
]


@pytest.mark.parametrize("req, expected", [pytest.param(r, e, id=s) for s, r, e in MATCHES])
def test_requirement_matches(req, expected):
    assert requirement_matches(LABELS, req) is expected


def test_workload_selectors_use_the_same_semantics():
    selector = label_selector({"matchLabels": {"zone": "a"},
                               "matchExpressions": [{"key": "region", "operator": "NotIn", "values": ["x"]},
                                                    {"key": "gpu", "operator": "Exists"}]})
    assert selector.matches(LABELS)
    assert not selector.matches({**LABELS, "region": "x"})
    assert not selector.matches({"zone": "a", "region": "y"})  # gpu missing
    # One set of values, two spellings: equal selectors (records compare by value).
    same = [label_selector({"matchExpressions": [{"key": "k", "operator": "In", "values": values}]})
            for values in (["b", "a"], ["a", "b", "a"])]
    assert same[0] == same[1]
