"""estimator/core/resources.py: quantity parsing and resource-name classes, as tables.

Our parser is checked against `kubernetes.utils.parse_quantity` (the reference parser the
house style names) on every valid input. The reference is more lenient than Kubernetes
itself (it takes whatever Python's Decimal takes, e.g. " 1" or "1_000"), so malformed
inputs are checked against Go's resource.ParseQuantity behaviour instead: rejected.
"""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kubernetes.utils import parse_quantity as reference_parse_quantity

from estimator.core.resources import (
    MAX_INT64,
    QuantityError,
    ResourceListError,
    is_counted,
    is_extended,
    is_scalar,
    parse_quantity,
    parse_resource_list,
    quantity_to_int,
)


def cases(table):
    """pytest params from (sentence, *values) rows; the sentence is the test id."""
    return [pytest.param(*values, id=sentence) for sentence, *values in table]


VALID_QUANTITIES = [
    ("millicores", "500m"),
    ("binary mebibytes", "1536Mi"),
    ("binary kibibytes", "2Ki"),
    ("binary exbibyte", "1Ei"),
    ("decimal megabytes", "100M"),
    ("decimal kilo", "3k"),
    ("decimal giga with a fraction", "1.5G"),
    ("lower-case exponent", "1e3"),
    ("upper-case exponent", "1E3"),
    ("bare E is the exa suffix, not an exponent", "1E"),
    ("signed exponent", "1e+3"),
    ("negative exponent", "1e-3"),
    ("half a millicore", "0.5m"),
    ("fraction without a suffix", "1.5"),
    ("fraction without a leading digit", ".5"),
    ("trailing decimal point", "1."),
    ("trailing decimal point before a suffix", "1.G"),
    ("explicit plus sign", "+1"),
    ("negative number", "-2"),
    ("zero", "0"),
    ("leading zeros", "007"),
    ("fractional binary", "0.1Ki"),
    ("nano suffix", "100n"),
    ("micro suffix", "5u"),
    ("largest int64", "9223372036854775807"),
    ("long fraction", "1000000000000000.00000000000001"),
]


@pytest.mark.parametrize("text", cases(VALID_QUANTITIES))
def test_parse_quantity_equals_the_kubernetes_reference_parser(text):
    assert parse_quantity(text) == reference_parse_quantity(text)


QUANTITY_TO_INT = [
    ("cpu counts millicores", "cpu", "500m", 500),
    ("a whole cpu is a thousand millicores", "cpu", "2", 2000),
    ("half a millicore rounds up to one", "cpu", "0.5m", 1),
    ("a nanocore rounds up to one millicore", "cpu", "1n", 1),
    ("cpu with an exponent", "cpu", "1e-3", 1),
    ("quota cpu counts millicores too", "requests.cpu", "1", 1000),
    ("memory counts bytes", "memory", "1536Mi", 1536 * 2**20),
    ("a fractional byte rounds up", "memory", "1.5", 2),
    ("a thousandth of a byte rounds up to one", "memory", "1e-3", 1),
    ("exa is ten to the eighteenth", "memory", "1E", 10**18),
    ("decimal mega", "ephemeral-storage", "100M", 100 * 10**6),
    ("hugepages count bytes", "hugepages-2Mi", "64Mi", 64 * 2**20),
    ("an extended resource counts units", "nvidia.com/gpu", "3", 3),
    ("zero stays zero", "memory", "0", 0),
    ("largest int64 fits", "memory", "9223372036854775807", MAX_INT64),
    ("seven exbibytes fit", "memory", "7Ei", 7 * 2**60),
    # 1e15 cores plus 1e-14: the 29th significant digit must still round the result up.
    ("a long fraction still rounds up", "cpu", "1000000000000000.00000000000001", 10**18 + 1),
]


@pytest.mark.parametrize(("name", "text", "expected"), cases(QUANTITY_TO_INT))
def test_quantity_to_int(name, text, expected):
    assert quantity_to_int(name, text) == expected


MALFORMED_QUANTITIES = [
    ("empty string", ""),
    ("letters", "abc"),
    ("two decimal points", "1.2.3"),
    ("digits after a suffix", "1Ki5"),
    ("two signs", "--1"),
    ("space before the suffix", "1 Gi"),
    ("exponent without digits", "1e"),
    ("leading space", " 1"),
    ("trailing space", "1 "),
    ("trailing newline", "1\n"),
    ("lower-case binary kilo", "1ki"),
    ("suffix without a number", "Mi"),
    ("lone decimal point", "."),
    ("lone sign", "+"),
    ("exponent followed by a suffix", "1e3k"),
    ("digit separators", "1_000"),
    ("infinity", "Infinity"),
    ("not a number", "NaN"),
    ("hexadecimal", "0x10"),
    ("non-ASCII digit", "\uff11"),
    ("longer than any real quantity", "1" * 65),
    ("exponent beyond any range", "1e1001"),
]


@pytest.mark.parametrize("text", cases(MALFORMED_QUANTITIES))
def test_malformed_quantity_is_rejected(text):
    with pytest.raises(QuantityError):
        parse_quantity(text)
    with pytest.raises(QuantityError):
        quantity_to_int("memory", text)


def test_non_string_quantity_is_rejected():
    with pytest.raises(QuantityError):
        parse_quantity(b"1")  # type: ignore[arg-type]


OUT_OF_INT64 = [
    ("ten to the four hundredth", "memory", "1e400"),
    ("nineteen nines of exbibytes", "memory", "9999999999999999999Ei"),
    ("one past the largest int64", "memory", "9223372036854775808"),
    ("eight exbibytes is two to the sixty-third", "memory", "8Ei"),
    ("cpu overflows a thousand times sooner in millicores", "cpu", "9223372036854776"),
    ("far below the smallest int64", "memory", "-1e400"),
]


@pytest.mark.parametrize(("name", "text"), cases(OUT_OF_INT64))
def test_quantity_beyond_int64_is_rejected(name, text):
    parse_quantity(text)  # a valid quantity...
    with pytest.raises(QuantityError, match="out of range"):
        quantity_to_int(name, text)  # ...that no int64 count can hold


def test_parse_quantity_is_exact():
    assert parse_quantity("0.1") == Decimal("0.1")
    assert parse_quantity("1Ki") == 1024


# (sentence, name, is_extended, is_scalar, is_counted)
RESOURCE_NAMES = [
    ("a vendor device is extended", "nvidia.com/gpu", True, True, True),
    ("hugepages are scalar but not extended", "hugepages-2Mi", False, True, True),
    ("attachable volumes are scalar but not extended", "attachable-volumes-aws-ebs", False, True, True),
    ("a kubernetes.io subdomain is native, yet scalar", "example.kubernetes.io/foo", False, True, True),
    ("the kubernetes.io domain is native, yet scalar", "kubernetes.io/foo", False, True, True),
    ("pods are never counted: a replica always takes one slot", "pods", False, False, False),
    ("cpu is counted but not scalar", "cpu", False, False, True),
    ("memory is counted but not scalar", "memory", False, False, True),
    ("ephemeral storage is counted but not scalar", "ephemeral-storage", False, False, True),
    ("an unknown plain name is ignored", "foo", False, False, False),
    ("a quota name is not a resource", "requests.nvidia.com/gpu", False, False, False),
    ("an upper-case domain is not a valid prefix", "Nvidia.com/gpu", False, False, False),
    ("two slashes are not a qualified name", "a.com/b/c", False, False, False),
    ("a domain with an empty name is not a qualified name", "nvidia.com/", False, False, False),
    ("the empty name", "", False, False, False),
]


@pytest.mark.parametrize(("name", "extended", "scalar", "counted"), cases(RESOURCE_NAMES))
def test_resource_name_classes(name, extended, scalar, counted):
    assert (is_extended(name), is_scalar(name), is_counted(name)) == (extended, scalar, counted)


_SUFFIXES = ["", "n", "u", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]


@st.composite
def quantity_strings(draw):
    """Any string of Kubernetes' quantity grammar: sign, digits[.digits], SI suffix or exponent.

    At most 9 digits: the reference multiplies by the suffix (up to 2**60, 19 digits) in
    Decimal's default 28-digit context, so longer numbers would make *it* inexact.
    """
    sign = draw(st.sampled_from(["", "+", "-"]))
    whole = draw(st.from_regex(r"[0-9]{0,5}", fullmatch=True))
    fraction = draw(st.from_regex(r"[0-9]{0,4}", fullmatch=True))
    number = whole + ("." + fraction if draw(st.booleans()) else "")
    if not any(c.isdigit() for c in number):
        number = "0" + number
    exponent = draw(st.from_regex(r"[eE][+-]?[0-9]{1,3}", fullmatch=True))
    suffix = draw(st.sampled_from([*_SUFFIXES, exponent]))
    return sign + number + suffix


# No deadline: one example stalled 250 ms by a busy machine failed the run ("Unreliable test timings").
@settings(deadline=None)
@given(quantity_strings())
def test_parse_quantity_equals_the_reference_on_generated_quantities(text):
    assert parse_quantity(text) == reference_parse_quantity(text)


# --- ResourceList reading -------------------------------------------------------------------

RESOURCE_LISTS = [
    ("an absent list reads as empty", None, {}, {}),
    ("strings from kubectl", {"cpu": "1500m", "memory": "1Gi"}, {}, {"cpu": 1500, "memory": 2**30}),
    ("YAML numbers: int and float", {"cpu": 2, "memory": 0.5}, {}, {"cpu": 2000, "memory": 1}),
    ("keep picks names before parsing", {"cpu": "1", "example.com/junk": "not-a-quantity"},
     {"keep": lambda name: name == "cpu"}, {"cpu": 1000}),
    ("negative amounts pass unless refused", {"cpu": "-1"}, {}, {"cpu": -1000}),
]


@pytest.mark.parametrize("resource_list, kwargs, expected", cases(RESOURCE_LISTS))
def test_parse_resource_list(resource_list, kwargs, expected):
    assert parse_resource_list(resource_list, "spec.overhead", **kwargs) == expected


BAD_RESOURCE_LISTS = [
    ("a list is not a mapping", ["cpu"], {}, "", "status.allocatable: expected a mapping of resource names"),
    ("a malformed quantity names the resource", {"cpu": "lots"}, {}, "cpu",
     r"status.allocatable: cpu: 'lots' is not a quantity"),
    ("a bool is not a quantity", {"memory": True}, {}, "memory", r"status.allocatable: memory: True is not"),
    ("null is not a quantity", {"memory": None}, {}, "memory", "memory: expected a quantity string, got NoneType"),
    ("a negative count is refused on request", {"pods": "-3"}, {"allow_negative": False}, "pods",
     r"status.allocatable: pods: '-3' is negative"),
]


@pytest.mark.parametrize("resource_list, kwargs, name, message", cases(BAD_RESOURCE_LISTS))
def test_parse_resource_list_names_the_field(resource_list, kwargs, name, message):
    with pytest.raises(ResourceListError, match=message) as info:
        parse_resource_list(resource_list, "status.allocatable", **kwargs)
    assert (info.value.where, info.value.name) == ("status.allocatable", name)
    assert isinstance(info.value, ValueError)  # callers that catch ValueError keep working
