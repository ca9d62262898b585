"""estimator/core/cel.py: DRA device selectors (CEL), Kubernetes' semantics.

The expected values are written by hand from the Kubernetes and cel-go documentation (the
examples in the quantity, semver and lists libraries, cel-go's strings extension, the DRA
docs, semver.org's precedence rules), never computed by the module under test.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from estimator.core import cel
from estimator.core.cel import DeviceView, SelectorError, compile_selector, matches_all

GPU = DeviceView.of(
    "gpu.example.com",
    {
        "model": ("string", "a100"),  # unqualified: the driver's domain
        "gpu.example.com/family": ("string", "ampere"),
        "numa.example.com/node": ("int", 1),
        "cores": ("int", 108),
        "mig": ("bool", True),
        "driverVersion": ("version", "1.2.3-rc.1"),
    },
    {"memory": "80Gi", "other.example.com/slots": "4"},
)
A = 'device.attributes["gpu.example.com"]'
C = 'device.capacity["gpu.example.com"]'

DEVICE = [
    ("the driver is compared as a string", 'device.driver == "gpu.example.com"', True),
    ("another driver does not match", 'device.driver == "other.example.com"', False),
    ("an unqualified attribute is in the driver's domain", f'{A}.model == "a100"', True),
    ("an attribute can be indexed by name", f'{A}["model"] == "a100"', True),
    ("a qualified attribute of the driver's domain", f'{A}.family == "ampere"', True),
    ("a qualified attribute of another domain", 'device.attributes["numa.example.com"].node == 1', True),
    ("an int attribute compares as a number", f"{A}.cores > 100", True),
    ("a bool attribute is a bool", f"{A}.mig", True),
    ("the in guard is true for a present attribute", f'"model" in {A}', True),
    ("the in guard is false for an absent attribute", f'"memory" in {A}', False),
    ("the in guard is false for an absent domain", '"nvidia.com" in device.attributes', False),
    ("a false guard short-circuits the lookup it protects", f'"absent" in {A} && {A}.absent == "x"', False),
    ("has() tests an attribute", f"has({A}.model) && !has({A}.absent)", True),
    ("allowMultipleAllocations defaults to false", "device.allowMultipleAllocations == false", True),
    ("a version attribute is a semver (a pre-release is below its release)",
     f'{A}.driverVersion.isLessThan(semver("1.2.3"))', True),
    ("a version attribute has a major number", f"{A}.driverVersion.major() == 1", True),
    ("capacity is a quantity", f'{C}.memory.compareTo(quantity("80Gi")) == 0', True),
    ("capacity compares across units", f'{C}.memory.isGreaterThan(quantity("40000Mi"))', True),
    ("qualified capacity of another domain", 'device.capacity["other.example.com"].slots.asInteger() == 4', True),
    ("a comprehension over an attribute map's keys", f'{A}.exists(k, k == "cores")', True),
]

QUANTITY = [
    ("1Gi equals 1024Mi", 'quantity("1Gi").compareTo(quantity("1024Mi")) == 0', True),
    ("1500m is less than 2", 'quantity("1500m").compareTo(quantity("2")) == -1', True),
    ("2 is more than 1500m", 'quantity("2").compareTo(quantity("1500m")) == 1', True),
    ("200M equals 0.2G", 'quantity("200M").compareTo(quantity("0.2G")) == 0', True),
    ("50M is less than 50Mi", 'quantity("50M").compareTo(quantity("50Mi")) == -1', True),
    ("quantities are equal by value", 'quantity("1Gi") == quantity("1024Mi")', True),
    ("isGreaterThan holds for a larger quantity", 'quantity("150Mi").isGreaterThan(quantity("100Mi"))', True),
    ("isGreaterThan fails for a smaller quantity", 'quantity("50Mi").isGreaterThan(quantity("100Mi"))', False),
    ("isLessThan holds for a smaller quantity", 'quantity("50M").isLessThan(quantity("100M"))', True),
    ("isLessThan fails for a larger quantity", 'quantity("100M").isLessThan(quantity("50M"))', False),
    ("50k is an integer", 'quantity("50k").isInteger()', True),
    ("1500m is not an integer", 'quantity("1500m").isInteger()', False),
    ("a quantity past int64 is not an integer", 'quantity("9999999999999999999999999999999999999G").isInteger()', False),
    ("asInteger of 50k is 50000", 'quantity("50k").asInteger() == 50000', True),
    ("asInteger of 1Gi is 2^30", 'quantity("1Gi").asInteger() == 1073741824', True),
    ("asApproximateFloat after sub", 'quantity("50k").sub(20000).asApproximateFloat() == 30000.0', True),
    ("asApproximateFloat of 1500m is 1.5", 'quantity("1500m").asApproximateFloat() == 1.5', True),
    ("the sign of a negative quantity", 'quantity("-1").sign() == -1', True),
    ("the sign of zero", 'quantity("0").sign() == 0', True),
    ("the sign of a positive quantity", 'quantity("3Mi").sign() == 1', True),
    ("add a quantity", 'quantity("50k").add(quantity("20k")) == quantity("70k")', True),
    ("add an int", 'quantity("50k").add(20) == quantity("50020")', True),
    ("sub a quantity", 'quantity("50k").sub(quantity("20k")) == quantity("30k")', True),
    ("add and sub chained", 'quantity("50k").add(20).sub(quantity("100k")).sub(-50000) == quantity("20")', True),
    ("isQuantity accepts 1.3Gi", 'isQuantity("1.3Gi")', True),
    ("isQuantity refuses an upper-case K", 'isQuantity("200K")', False),
    ("isQuantity refuses a comma", 'isQuantity("1,3G")', False),
]

SEMVER = [
    ("a pre-release is below its release", 'semver("1.0.0-alpha").isLessThan(semver("1.0.0"))', True),
    ("equal versions compare 0", 'semver("1.2.3").compareTo(semver("1.2.3")) == 0', True),
    ("a lower version compares -1", 'semver("1.2.3").compareTo(semver("2.0.0")) == -1', True),
    ("a higher version compares 1", 'semver("1.2.3").compareTo(semver("0.1.2")) == 1', True),
    ("numbers compare numerically, not as text", 'semver("1.10.0").isGreaterThan(semver("1.9.0"))', True),
    ("build metadata does not count", 'semver("1.0.0+build.1").compareTo(semver("1.0.0+build.2")) == 0', True),
    ("major, minor and patch", 'semver("1.2.3").major() == 1 && semver("1.2.3").minor() == 2 && semver("1.2.3").patch() == 3', True),
    ("isSemver accepts a full version", 'isSemver("1.0.0-rc.1+build.5")', True),
    ("isSemver refuses a word", 'isSemver("hello")', False),
    ("isSemver refuses a leading v", 'isSemver("v1.0.0")', False),
    ("isSemver refuses a missing patch", 'isSemver("1.0")', False),
    ("isSemver refuses a leading zero", 'isSemver("01.0.0")', False),
    ("isSemver refuses a numeric pre-release with a leading zero", 'isSemver("1.0.0-01")', False),
    ("isSemver refuses an empty pre-release identifier", 'isSemver("1.0.0-alpha..1")', False),
    ("isSemver refuses empty build metadata", 'isSemver("1.0.0+")', False),
]
# semver.org, item 11: 1.0.0-alpha < 1.0.0-alpha.1 < 1.0.0-alpha.beta < 1.0.0-beta < 1.0.0-beta.2
# < 1.0.0-beta.11 < 1.0.0-rc.1 < 1.0.0.
PRECEDENCE = ["1.0.0-alpha", "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta", "1.0.0-beta.2",
              "1.0.0-beta.11", "1.0.0-rc.1", "1.0.0"]

STRINGS = [
    ("charAt picks a character", "'hello'.charAt(4) == 'o'", True),
    ("charAt at the end is empty", "'hello'.charAt(5) == ''", True),
    ("charAt counts code points", "'ÆbÆ'.charAt(1) == 'b'", True),
    ("indexOf of empty is 0", "'hello mellow'.indexOf('') == 0", True),
    ("indexOf finds the first", "'hello mellow'.indexOf('ello') == 1", True),
    ("indexOf of an absent substring is -1", "'hello mellow'.indexOf('jello') == -1", True),
    ("indexOf of empty from an offset is the offset", "'hello mellow'.indexOf('', 2) == 2", True),
    ("indexOf from an offset", "'hello mellow'.indexOf('ello', 2) == 7", True),
    ("lastIndexOf of empty is the length", "'hello mellow'.lastIndexOf('') == 12", True),
    ("lastIndexOf finds the last", "'hello mellow'.lastIndexOf('ello') == 7", True),
    ("lastIndexOf of an absent substring is -1", "'hello mellow'.lastIndexOf('jello') == -1", True),
    ("lastIndexOf up to an offset", "'hello mellow'.lastIndexOf('ello', 6) == 1", True),
    ("lowerAscii lowers ASCII only", "'TacoCÆt Xii'.lowerAscii() == 'tacocÆt xii'", True),
    ("upperAscii raises ASCII only", "'TacoCÆt Xii'.upperAscii() == 'TACOCÆT XII'", True),
    ("replace replaces all", "'hello hello'.replace('he', 'we') == 'wello wello'", True),
    ("replace with -1 replaces all", "'hello hello'.replace('he', 'we', -1) == 'wello wello'", True),
    ("replace with 1 replaces the first", "'hello hello'.replace('he', 'we', 1) == 'wello hello'", True),
    ("replace with 0 replaces none", "'hello hello'.replace('he', 'we', 0) == 'hello hello'", True),
    ("split splits at every separator", "'hello hello hello'.split(' ') == ['hello', 'hello', 'hello']", True),
    ("split with 0 is empty", "'hello hello hello'.split(' ', 0) == []", True),
    ("split with 1 is the whole string", "'hello hello hello'.split(' ', 1) == ['hello hello hello']", True),
    ("split with 2 keeps the rest", "'hello hello hello'.split(' ', 2) == ['hello', 'hello hello']", True),
    ("split with -1 splits at every separator", "'hello hello hello'.split(' ', -1) == ['hello', 'hello', 'hello']", True),
    ("split at empty makes characters", "'abc'.split('') == ['a', 'b', 'c']", True),
    ("substring from a start", "'tacocat'.substring(4) == 'cat'", True),
    ("substring from a start to an end", "'tacocat'.substring(0, 4) == 'taco'", True),
    ("trim cuts white space", "'  \\ttrim\\n    '.trim() == 'trim'", True),
    ("join with no separator", "['hello', 'mellow'].join() == 'hellomellow'", True),
    ("join with a separator", "['hello', 'mellow'].join(' ') == 'hello mellow'", True),
    ("join of an empty list", "[].join() == '' && [].join('/') == ''", True),
    ("matches runs a regular expression", "'a100-80gb'.matches('^a100-[0-9]+gb$')", True),
    ("matches runs in linear time (re2)", "'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa!'.matches('^(a+)+$')", False),
]

LISTS = [
    ("ints in order are sorted", "[1, 2, 3].isSorted()", True),
    ("strings with a repeat in order are sorted", "['a', 'b', 'b', 'c'].isSorted()", True),
    ("doubles out of order are not sorted", "[2.0, 1.0].isSorted()", False),
    ("one element is sorted", "[1].isSorted()", True),
    ("the empty list is sorted", "[].isSorted()", True),
    ("sum of ints", "[1, 3].sum() == 4", True),
    ("sum of doubles", "[1.0, 3.0].sum() == 4.0", True),
    ("sum of the empty list is 0", "[].sum() == 0", True),
    ("min", "[1, 3].min() == 1", True),
    ("max", "[1, 3].max() == 3", True),
    ("min of one element", "[1].min() == 1", True),
    ("indexOf finds the first", "[1, 2, 2, 3].indexOf(2) == 1", True),
    ("lastIndexOf finds the last", "['a', 'b', 'b', 'c'].lastIndexOf('b') == 2", True),
    ("indexOf of an absent element is -1", "[1.0].indexOf(1.1) == -1", True),
    ("indexOf in the empty list is -1", "[].indexOf('string') == -1", True),
]

CORE = [  # plain CEL, still right after the compiler drops celpy's pass-through parse nodes
    ("map literals by index and by field", '{"a": 1}["a"] == 1 && {"a": 1}.a == 1', True),
    ("list indexing and concatenation", "[1, 2][1] == 2 && [1] + [2] == [1, 2]", True),
    ("string concatenation and the standard string functions",
     '"a" + "b" == "ab" && "abc".startsWith("a") && "abc".endsWith("c") && "abc".contains("b")', True),
    ("integer division and remainder", "7 / 2 == 3 && 7 % 2 == 1 && -(1) == -1", True),
    ("conversions", 'int("5") == 5 && string(5) == "5" && double(1) == 1.0', True),
    ("a conditional", "true ? false : true", False),
    ("in over a list", '1 in [1, 2] && !("x" in ["a"])', True),
    ("map and filter", "[1, 2].map(x, x * 2) == [2, 4] && [1, 2, 3].filter(x, x > 1) == [2, 3]", True),
    ("exists_one", "[1, 2].exists_one(x, x == 1)", True),
    ("durations and timestamps", 'duration("1h") > duration("1m") && timestamp("2024-01-01T00:00:00Z") < timestamp("2025-01-01T00:00:00Z")', True),
    ("type() against a type name", "type(1) == int", True),
]

CASES = DEVICE + QUANTITY + SEMVER + STRINGS + LISTS + CORE


@pytest.mark.parametrize("expression, expected", [pytest.param(e, x, id=s) for s, e, x in CASES])
def test_expression_value(expression, expected):
    assert compile_selector(expression).matches(GPU) is expected


@pytest.mark.parametrize("lower, higher", [pytest.param(a, b, id=f"{a} < {b}") for a, b in zip(PRECEDENCE, PRECEDENCE[1:])])
def test_semver_precedence_follows_semver_org(lower, higher):
    assert compile_selector(f'semver("{lower}").compareTo(semver("{higher}")) == -1').matches(GPU)
    assert compile_selector(f'semver("{higher}").isGreaterThan(semver("{lower}"))').matches(GPU)


RUNTIME_ERRORS = [
    ("a missing attribute is no such key", f'{A}.absent == "x"'),
    ("a missing attribute by index is no such key", f'{A}["absent"] == "x"'),
    ("a missing domain is no such key", 'device.attributes["absent.example.com"].model == "a100"'),
    ("a missing capacity is no such key", f'{C}.absent.isInteger()'),
    ("an unknown method", "device.driver.frobnicate()"),
    ("an unknown function", "frobnicate(1) == 1"),
    ("an unknown library (sets)", "sets.contains([1], [1])"),
    ("an undeclared variable", 'request.name == "x"'),
    ("a string result is not a bool", "device.driver"),
    ("an int result is not a bool", "1 + 1"),
    ("a map result is not a bool", "device.attributes"),
    ("an invalid quantity", 'quantity("200K").sign() == 1'),
    ("asInteger of a fraction", 'quantity("1.5").asInteger() == 1'),
    ("a quantity compared to a semver", 'quantity("1Gi").compareTo(semver("1.0.0")) == 0'),
    ("a semver compared to a quantity", 'semver("1.0.0").isLessThan(quantity("1"))'),
    ("a quantity compared to an int", 'quantity("1").compareTo(1) == 0'),
    ("a quantity ordered with <", 'quantity("1") < quantity("2")'),
    ("an invalid semver", 'semver("1.0").major() == 1'),
    ("charAt past the end", "'hello'.charAt(6) == ''"),
    ("indexOf from an offset past the end", "'hello mellow'.indexOf('ello', 20) == -1"),
    ("lastIndexOf from a negative offset", "'hello mellow'.lastIndexOf('ello', -1) == -1"),
    ("substring from a negative start", "'tacocat'.substring(-1) == ''"),
    ("substring with the end before the start", "'tacocat'.substring(2, 1) == ''"),
    ("join of a list with a non-string", "[1, 2].join() == '12'"),
    ("min of the empty list", "[].min() == 0"),
    ("max of the empty list", "[].max() == 0"),
    ("sum of strings", "['a', 'b'].sum() == 'ab'"),
    ("int overflow", "9223372036854775807 + 1 > 0"),
    ("division by zero", "1 / 0 == 1"),
    ("string formatting with % (Python's, not CEL's)", "'%d' % 5 == '5'"),
    ("a replace that would build a huge string",
     "'ab'.replace('a', '" + "x" * 1000 + "').replace('x', '" + "y" * 1000 + "').size() > 0"),
    ("large lists built in a comprehension run out of steps",
     "'" + "a" * 4000 + "'.split('').map(x, '" + "a" * 4000 + "'.split('')).size() > 0"),
    ("nested comprehensions over the step budget",
     "[" + ",".join(["0"] * 200) + "].all(x, [" + ",".join(["0"] * 200) + "].all(y, x == y))"),
]


@pytest.mark.parametrize("expression", [pytest.param(e, id=s) for s, e in RUNTIME_ERRORS])
def test_runtime_error_is_reported(expression):
    selector = compile_selector(expression)
    with pytest.raises(SelectorError) as raised:
        selector.matches(GPU)
    message = str(raised.value)
    assert len(message) <= 205 and "activation" not in message.lower()


COMPILE_ERRORS = [
    ("a dangling operator", "device.driver =="),
    ("an unknown operator", 'device.driver === "x"'),
    ("an unclosed string", 'device.driver == "x'),
    ("an empty expression", ""),
    ("an expression over 10 KiB", "true && " * 1300 + "true"),
    ("an expression under 10 KiB characters but over 10 KiB bytes", "'" + "é" * 5200 + "' != ''"),
    ("5000 nested parentheses", "(" * 5000 + "true" + ")" * 5000),
    ("a deep chain of negations", "!" * 2000 + "true"),
    ("more than 1000 nodes (a flat list, not deep)", "[" + ",".join(["1"] * 1000) + "].size() > 0"),
]


@pytest.mark.parametrize("expression", [pytest.param(e, id=s) for s, e in COMPILE_ERRORS])
def test_compile_error_is_reported(expression):
    with pytest.raises(SelectorError) as raised:  # not RecursionError, not a lark exception
        compile_selector(expression)
    assert len(str(raised.value)) <= 205


def test_a_large_flat_expression_within_the_node_limit_compiles_and_runs():
    assert compile_selector("[" + ",".join(["1"] * 400) + "].size() == 400").matches(GPU)


def test_a_failed_compile_is_reported_again_from_the_cache():
    for _ in range(2):
        with pytest.raises(SelectorError, match="syntax error"):
            compile_selector("device.driver ==")


def test_a_non_string_expression_is_reported():
    with pytest.raises(SelectorError):
        compile_selector(None)  # type: ignore[arg-type]


NESTED = [  # as deep as MAX_DEPTH allows for each construct; one level more is refused
    ("parentheses", lambda n: "(" * n + "true" + ")" * n, 62),
    ("function calls", lambda n: "string(" * n + "1" + ")" * n + ' == "1"', 41),
    ("list literals", lambda n: "[" * n + "1" + "]" * n + ".size() == 1", 40),
    ("comprehensions", lambda n: "[1].all(x, " * n + "true" + ")" * n, 61),
    ("negations", lambda n: "!" * n + ("false" if n % 2 else "true"), 125),
    ("a chain of ||", lambda n: " || ".join(["false"] * n) + " || true", 125),
]


@pytest.mark.parametrize("build, deepest", [pytest.param(b, n, id=s) for s, b, n in NESTED])
def test_nesting_just_inside_the_depth_limit_evaluates_without_recursion_error(build, deepest):
    assert compile_selector(build(deepest)).matches(GPU) is True
    with pytest.raises(SelectorError, match="nested deeper"):
        compile_selector(build(deepest + 1))


def test_the_compile_cache_stays_bounded_and_reuses_entries():
    first = compile_selector("device.driver != 'x'")
    assert compile_selector("device.driver != 'x'") is first
    for i in range(cel.CACHE_SIZE + 50):
        compile_selector(f"{A}.cores > {i}")
    info = cel._compile.cache_info()
    assert info.currsize <= cel.CACHE_SIZE == 256


BAD_DEVICES = [
    ("a version that is not a semantic version", DeviceView.of("d", {"v": ("version", "1.0")})),
    ("an int past int64", DeviceView.of("d", {"n": ("int", 2**63)})),
    ("a bool given as an int", DeviceView.of("d", {"n": ("int", True)})),
    ("a string given as an int", DeviceView.of("d", {"n": ("string", 5)})),
    ("an unknown attribute type", DeviceView.of("d", {"n": ("float", 1.5)})),
    ("an attribute both qualified and not", DeviceView.of("d", {"n": ("int", 1), "d/n": ("int", 2)})),
    ("a capacity that is not a quantity", DeviceView.of("d", capacity={"memory": "lots"})),
]


@pytest.mark.parametrize("device", [pytest.param(d, id=s) for s, d in BAD_DEVICES])
def test_invalid_device_data_is_reported(device):
    for _ in range(2):  # the conversion is memoized, the error raised each time
        with pytest.raises(SelectorError, match="device of driver 'd'"):
            compile_selector("true").matches(device)


def test_a_non_device_is_reported():
    with pytest.raises(SelectorError):
        compile_selector("true").matches({"driver": "d"})  # type: ignore[arg-type]


def test_device_views_are_equal_and_hashable_by_content():
    one = DeviceView.of("d", {"a": ("int", 1), "b": ("string", "x")}, {"m": "1Gi"})
    two = DeviceView.of("d", {"b": ("string", "x"), "a": ("int", 1)}, {"m": "1Gi"})
    one.cel_value()  # the memoized conversion takes no part in equality or hashing
    assert one == two and hash(one) == hash(two) and len({one, two}) == 1
    assert one != DeviceView.of("d", {"a": ("int", 2), "b": ("string", "x")}, {"m": "1Gi"})


def test_allow_multiple_allocations_is_visible():
    shared = DeviceView.of("d", allow_multiple=True)
    assert compile_selector("device.allowMultipleAllocations").matches(shared)


MATCHES_ALL = [
    ("an empty list matches", [], True),
    ("all true matches", ['device.driver == "gpu.example.com"', f"{A}.cores == 108"], True),
    ("one false does not match", ['device.driver == "gpu.example.com"', f"{A}.cores == 1"], False),
]


@pytest.mark.parametrize("expressions, expected", [pytest.param(e, x, id=s) for s, e, x in MATCHES_ALL])
def test_matches_all(expressions, expected):
    assert matches_all(expressions, GPU) is expected


def test_matches_all_reports_an_error_rather_than_matching():
    with pytest.raises(SelectorError):
        matches_all(['device.driver == "gpu.example.com"', f'{A}.absent == "x"'], GPU)


def test_the_message_is_short_even_for_a_large_device():
    big = DeviceView.of("d", {f"attr{i}": ("string", "v" * 60) for i in range(200)})
    with pytest.raises(SelectorError) as raised:
        compile_selector('device.attributes["d"].absent == "x"' + " && true" * 50).matches(big)
    message = str(raised.value)
    assert len(message) <= 205 and "no such member" in message and "vvvv" not in message


CEL_ALPHABET = st.sampled_from(list("()[]{}.,:?!<>=&|+-*/% \"'\\0123456789abcdefxyz_") + [
    "device", "attributes", "capacity", "driver", "quantity(", "semver(", ".all(", ".map(", ".split(",
    ".min()", "in", "true", "null", "1Gi", "1.0.0", "\u00e9", "\x00",
])


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(CEL_ALPHABET, max_size=40).map("".join))
def test_any_input_raises_nothing_but_selector_error(expression):
    try:
        result = compile_selector(expression).matches(GPU)
    except SelectorError:
        return
    assert result in (True, False)
