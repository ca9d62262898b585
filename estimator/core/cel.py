"""DRA device selectors: the CEL expressions of a DeviceClass (`spec.selectors[].cel.expression`).

A device matches a class when every expression is true. In an expression `device` has `driver`
(string), `attributes` (domain -> name -> string | int | bool | semver), `capacity` (domain ->
name -> quantity) and `allowMultipleAllocations` (bool); an unqualified name belongs to the
driver's domain. Looking up a domain or name the device lacks is an error ("no such key"), so
expressions guard with `"model" in device.attributes["gpu.example.com"]`.

Public API:
    SelectorError(Exception)     a short message (~200 characters at most), safe to log
    DeviceView.of(driver, attributes=None, capacity=None, allow_multiple=False) -> DeviceView
        attributes: name -> (type, value), type "string" | "int" | "bool" | "version";
        capacity: name -> quantity string. Frozen and hashable: memoize matches by it.
    compile_selector(expression: str) -> CompiledSelector   cached, at most CACHE_SIZE entries
    CompiledSelector.matches(device: DeviceView) -> bool
    matches_all(expressions: Sequence[str], device: DeviceView) -> bool   ([] matches)
Kubernetes logs a run-time error and counts the device as not matching; here every failure to
compile or evaluate (syntax, unknown function or variable, missing key, type mismatch, non-bool
result, invalid device data, a limit below) raises SelectorError, and nothing else escapes.

Functions, as Kubernetes enables them: quantity (`quantity`, `isQuantity`, `isInteger`,
`asInteger`, `asApproximateFloat`, `sign`, `add`, `sub`, `compareTo`, `isGreaterThan`,
`isLessThan`); semver (`semver`, `isSemver`, `major`, `minor`, `patch`, the three comparisons);
cel-go's strings extension (`charAt`, `indexOf`, `lastIndexOf`, `lowerAscii`, `upperAscii`,
`replace`, `split`, `substring`, `trim`, `join`); the Kubernetes lists library (`isSorted`, `sum`,
`min`, `max`, `indexOf`, `lastIndexOf`). Others (`find`, `sets.*`, `ip`, `cidr`, `url`, `format`,
`cel.bind`, semver's normalize flag, quantity `mul`/`div`) are unknown, hence errors.

Limits, since celpy has no cost budget: an expression has at most 10 KiB, MAX_NODES CEL nodes and
MAX_DEPTH levels (about 60 nested parentheses or 40 nested calls; evaluation recurses per level,
and this keeps it well inside Python's default recursion limit). The only loops are comprehension
macros over lists, which are finite, and an evaluation may take MAX_STEPS steps: one per node
visited and one per 32 characters or elements of each string, list or map a node yields, so work
and memory in proportion to value sizes count too (about a second of CPU at most; ordinary
selectors take tens of steps). `replace` and `join` build at most MAX_STRING characters, and
`matches` runs on re2 (linear time). A cached entry holds at most about 1 MB of parse tree.
"""

from __future__ import annotations

import operator
import re
import string as _string
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Context, Decimal
from functools import lru_cache, partial
from typing import Any, cast

import celpy
import celpy.celtypes as ct
import lark
from celpy.evaluation import Activation, CELEvalError, Evaluator

from estimator.core.resources import parse_quantity

MAX_EXPRESSION_BYTES = 10 * 1024
MAX_NODES = 1000
MAX_DEPTH = 128
MAX_STEPS = 50_000
MAX_STRING = 1 << 16
CACHE_SIZE = 256
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_EXACT = Context(prec=1000, Emax=100_000, Emin=-100_000)  # exact sums, as Go's inf.Dec
_DIGITS, _IDENTIFIER = re.compile(r"[0-9]+"), re.compile(r"[0-9A-Za-z-]+")
# unicode.IsSpace: what Go's strings.TrimSpace cuts (Python's strip() also cuts \x1c-\x1f).
_GO_SPACE = "\t\n\v\f\r \x85\xa0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + "\u2028\u2029\u202f\u205f\u3000"
_LOWER = str.maketrans(_string.ascii_uppercase, _string.ascii_lowercase)
_UPPER = str.maketrans(_string.ascii_lowercase, _string.ascii_uppercase)


class SelectorError(Exception):
    """An expression that cannot be compiled or evaluated on a device (a short message)."""

    def __init__(self, problem: str, expression: str | None = None):
        where = (
            ""
            if expression is None
            else " in CEL selector " + (repr(expression) if len(expression) <= 60 else repr(expression[:57]) + "...")
        )
        super().__init__(_cut(problem, 200 - len(where)) + where)


class _Fail(ValueError):
    """A library function's own error: its message becomes the SelectorError's."""


class _OverBudget(Exception):
    pass


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(limit - 3, 0)] + "..."


@dataclass(frozen=True)
class Quantity:
    """A Kubernetes quantity as CEL sees it, exact; equal by value (1Gi == 1024Mi)."""

    value: Decimal


@dataclass(frozen=True)
class Semver:
    """A semantic version; equality and order (`key`) ignore build metadata, as SemVer 2.0.0."""

    major: int
    minor: int
    patch: int
    pre: tuple[int | str, ...] = ()
    build: tuple[str, ...] = field(default=(), compare=False)

    def key(self) -> tuple[Any, ...]:
        # A release ranks above its pre-releases; numeric identifiers below alphanumeric ones;
        # of two lists with equal leading identifiers the longer ranks higher (tuple order).
        pre = tuple((0, p, "") if isinstance(p, int) else (1, 0, p) for p in self.pre)
        return (self.major, self.minor, self.patch, 0 if self.pre else 1, pre)


def _number(part: str, what: str) -> int:
    if not _DIGITS.fullmatch(part) or (len(part) > 1 and part[0] == "0") or len(part) > 20 or int(part) >= 2**64:
        raise _Fail(f"invalid {what} {part[:20]!r} in semantic version")
    return int(part)


def parse_semver(text: str) -> Semver:
    """A version as github.com/blang/semver/v4 Parse reads it (strict); raises ValueError."""
    parts = text.split(".", 2)
    if len(parts) != 3:
        raise _Fail(f"{text[:40]!r} is not a semantic version (major.minor.patch)")
    rest, plus, build = parts[2].partition("+")
    patch, dash, pre = rest.partition("-")
    pres, builds = pre.split(".") if dash else [], build.split(".") if plus else []
    for identifier in pres + builds:
        if not _IDENTIFIER.fullmatch(identifier):
            raise _Fail(f"invalid identifier {identifier[:20]!r} in semantic version")
    return Semver(
        _number(parts[0], "major"),
        _number(parts[1], "minor"),
        _number(patch, "patch"),
        tuple(_number(p, "pre-release") if p.isdigit() else p for p in pres),
        tuple(builds),
    )


def _type_name(x: Any) -> str:
    return type(x).__name__.removesuffix("Type").lower()


def _arg(x: Any, kind: type | tuple[type, ...]) -> Any:
    """x if it has the CEL type; else TypeError, which celpy reports as "no such overload"."""
    if not isinstance(x, kind):
        raise TypeError(f"unexpected {_type_name(x)} argument")
    return x


def _s(x: Any) -> str:
    return str(_arg(x, str))


def _i(x: Any) -> int:
    return int(_arg(x, ct.IntType))


def _q(x: Any) -> Decimal:
    return _arg(x, Quantity).value


def _list(x: Any, kinds: tuple[type, ...] = (object,)) -> list[Any]:
    return [_arg(item, kinds) for item in _arg(x, ct.ListType)]


def _true_unless(check: Callable[..., Any], *args: Any) -> ct.BoolType:
    try:
        check(*args)
    except _Fail:
        return ct.BoolType(False)
    return ct.BoolType(True)


def _quantity(text: Any) -> Quantity:
    try:
        return Quantity(parse_quantity(_s(text)))
    except ValueError as err:  # QuantityError
        raise _Fail(str(err)) from None


def _as_integer(q: Any) -> ct.IntType:
    value = _q(q)
    if value != value.to_integral_value() or not _INT64_MIN <= value <= _INT64_MAX:
        raise _Fail("cannot convert value to integer")
    return ct.IntType(int(value))


def _operand(x: Any) -> Decimal:
    return Decimal(int(x)) if isinstance(x, ct.IntType) else _q(x)


def _compare(a: Any, b: Any) -> int:
    """compareTo of two quantities or two semvers; anything else is a type error."""
    ka: Any
    kb: Any
    ka, kb = (a.key(), _arg(b, Semver).key()) if isinstance(a, Semver) else (_q(a), _q(b))
    return (ka > kb) - (ka < kb)


def _find(last: bool, x: Any, y: Any, *offset: Any) -> ct.IntType:
    """indexOf / lastIndexOf of a substring (from an offset) or of a list element."""
    if isinstance(x, ct.ListType) and not offset:
        return next(
            (ct.IntType(i) for i in (range(len(x) - 1, -1, -1) if last else range(len(x))) if _equal(x[i], y)),
            ct.IntType(-1),
        )
    s, sub = _s(x), _s(y)
    off = _i(offset[0]) if offset else len(s) - (sub != "") if last else 0
    if sub == "":
        return ct.IntType(off)
    if not 0 <= off < len(s):
        raise _Fail(f"index out of range: {off}")
    return ct.IntType(s.rfind(sub, 0, off + len(sub)) if last else s.find(sub, off))


def _equal(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except TypeError:  # celpy refuses to compare values of different types: not equal
        return False


def _replace(s: Any, old: Any, new: Any, n: Any = ct.IntType(-1)) -> ct.StringType:
    s, old, new, count = _s(s), _s(old), _s(new), _i(n)
    hits = s.count(old) if old else len(s) + 1
    if len(s) + (hits if count < 0 else min(hits, count)) * (len(new) - len(old)) > MAX_STRING:
        raise _Fail(f"replace would build more than {MAX_STRING} characters")
    return ct.StringType(s.replace(old, new, count))


def _split(s: Any, sep: Any, n: Any = ct.IntType(-1)) -> ct.ListType:
    s, sep, count = _s(s), _s(sep), _i(n)
    if count == 0:
        return ct.ListType([])
    if sep:
        parts = s.split(sep, count - 1 if count > 0 else -1)
    else:  # Go explodes into characters, the last part keeping the rest
        parts = list(s)
        if 0 < count < len(parts):
            parts = parts[: count - 1] + ["".join(parts[count - 1 :])]
    return ct.ListType([ct.StringType(p) for p in parts])


def _substring(s: Any, start: Any, *end: Any) -> ct.StringType:  # code points, as Go's runes
    s, a = _s(s), _i(start)
    b = _i(end[0]) if end else len(s)
    if a > b:
        raise _Fail(f"invalid substring range. start: {a}, end: {b}")
    for i in (a, b):
        if not 0 <= i <= len(s):
            raise _Fail(f"index out of range: {i}")
    return ct.StringType(s[a:b])


def _join(items: Any, sep: Any = ct.StringType("")) -> ct.StringType:
    parts, sep = _list(items, (str,)), _s(sep)
    if sum(map(len, parts)) + len(sep) * max(len(parts) - 1, 0) > MAX_STRING:
        raise _Fail(f"join would build more than {MAX_STRING} characters")
    return ct.StringType(sep.join(parts))


_ORDERED = (
    ct.IntType,
    ct.UintType,
    ct.DoubleType,
    ct.BoolType,
    ct.StringType,
    ct.BytesType,
    ct.DurationType,
    ct.TimestampType,
)  # the lists library's comparable types


def _sum(items: Any) -> Any:
    values = _list(items, (ct.IntType, ct.UintType, ct.DoubleType, ct.DurationType))
    total = values[0] if values else ct.IntType(0)
    for value in values[1:]:
        total = total + value  # celpy's types refuse int64 overflow and mixed types
    return total


def _extreme(name: str, better: Callable[[Any, Any], bool]) -> Callable[[Any], Any]:
    def pick(items: Any) -> Any:
        values = _list(items, _ORDERED)
        if not values:
            raise _Fail(f"{name} called on empty list")
        best = values[0]
        for value in values[1:]:
            best = value if better(value, best) else best  # ties keep the first, as Go's loop
        return best

    return pick


def _modulo(a: Any, b: Any) -> Any:
    if isinstance(a, (str, bytes)):  # Python would format the string: no such CEL overload
        raise TypeError("% is defined for numbers only")
    return operator.mod(a, b)


_FUNCTIONS: dict[str, Callable[..., Any]] = {
    "_%_": _modulo,
    "quantity": _quantity,
    "isQuantity": lambda s: _true_unless(_quantity, s),
    "isInteger": lambda q: _true_unless(_as_integer, q),
    "asInteger": _as_integer,
    "asApproximateFloat": lambda q: ct.DoubleType(float(_q(q))),  # +-inf beyond float64
    "sign": lambda q: ct.IntType(int(_q(q).compare(0))),
    "add": lambda q, x: Quantity(_EXACT.add(_q(q), _operand(x))),
    "sub": lambda q, x: Quantity(_EXACT.subtract(_q(q), _operand(x))),
    "compareTo": lambda a, b: ct.IntType(_compare(a, b)),
    "isGreaterThan": lambda a, b: ct.BoolType(_compare(a, b) > 0),
    "isLessThan": lambda a, b: ct.BoolType(_compare(a, b) < 0),
    "semver": lambda s: parse_semver(_s(s)),
    "isSemver": lambda s: _true_unless(parse_semver, _s(s)),
    "major": lambda v: ct.IntType(_arg(v, Semver).major),
    "minor": lambda v: ct.IntType(_arg(v, Semver).minor),
    "patch": lambda v: ct.IntType(_arg(v, Semver).patch),
    "charAt": lambda s, i: _substring(s, i, ct.IntType(max(min(_i(i) + 1, len(_s(s))), _i(i)))),
    "indexOf": partial(_find, False),
    "lastIndexOf": partial(_find, True),
    "lowerAscii": lambda s: ct.StringType(_s(s).translate(_LOWER)),
    "upperAscii": lambda s: ct.StringType(_s(s).translate(_UPPER)),
    "replace": _replace,
    "split": _split,
    "substring": _substring,
    "trim": lambda s: ct.StringType(_s(s).strip(_GO_SPACE)),
    "join": _join,
    # Each item with the next: the shorter second list ends the pairs (strict=False on purpose).
    "isSorted": lambda xs: ct.BoolType(not any(a > b for a, b in zip(_list(xs, _ORDERED), xs[1:], strict=False))),
    "sum": _sum,
    "min": _extreme("min", operator.lt),
    "max": _extreme("max", operator.gt),
}
_ACTIVATION = Activation(functions=_FUNCTIONS)


class _Evaluator(Evaluator):
    """celpy's interpreter, counting steps against one budget shared with its macro bodies."""

    def __init__(self, ast: lark.Tree, activation: Activation, budget: list[int]):
        super().__init__(ast, activation)
        self._budget = budget

    def sub_evaluator(self, ast: lark.Tree) -> Evaluator:
        return _Evaluator(ast, self.activation, self._budget)

    def _visit_tree(self, tree: lark.Tree) -> Any:
        self._budget[0] -= 1
        if self._budget[0] < 0:
            raise _OverBudget
        result = super()._visit_tree(tree)
        if isinstance(result, (str, bytes, list, dict)):
            self._budget[0] -= len(result) >> 5
        return result

    def member_dot_arg(self, tree: lark.Tree) -> Any:
        if tree.children[1] == "min":  # a macro in celpy; Kubernetes' lists.min is a function
            member, name, *args = self.visit_children(tree)
            # The method's name comes back as its token; the argument list, if any, as a list.
            return self.method_eval(member, cast(lark.Token, name), cast(Any, args[0]) if args else None)
        return super().member_dot_arg(tree)


_CONVERT: dict[str, tuple[type | tuple[type, ...], Callable[[Any], Any]]] = {
    "string": (str, ct.StringType),
    "bool": (bool, ct.BoolType),
    "int": (int, ct.IntType),
    "version": (str, parse_semver),
    "quantity": (str, _quantity),
}


@dataclass(frozen=True)
class DeviceView:
    """One ResourceSlice device as plain hashable data (build it with `of`)."""

    driver: str
    attributes: tuple[tuple[str, str, Any], ...] = ()  # (name, type, value), sorted by name
    capacity: tuple[tuple[str, str], ...] = ()  # (name, quantity), sorted by name
    allow_multiple: bool = False
    _cel: list[Any] = field(default_factory=list, init=False, compare=False, repr=False)

    @classmethod
    def of(
        cls,
        driver: str,
        attributes: Mapping[str, tuple[str, Any]] | None = None,
        capacity: Mapping[str, str] | None = None,
        allow_multiple: bool = False,
    ) -> DeviceView:
        attrs = sorted(
            ((name, kind, value) for name, (kind, value) in (attributes or {}).items()), key=lambda entry: entry[0]
        )
        return cls(driver, tuple(attrs), tuple(sorted((capacity or {}).items())), allow_multiple)

    def cel_value(self) -> ct.MapType:
        """`device` as CEL sees it, built once; SelectorError when the device data is invalid."""
        if not self._cel:
            try:
                self._cel.append(self._build())
            except Exception as err:  # noqa: BLE001 - any bad data is this device's problem
                text = str(err) if isinstance(err, (ValueError, TypeError)) else type(err).__name__
                self._cel.append(f"device of driver {str(self.driver)[:60]!r}: {text}")
        if isinstance(self._cel[0], str):
            raise SelectorError(self._cel[0])
        return self._cel[0]

    def _build(self) -> ct.MapType:
        found: dict[str, dict[str, ct.MapType]] = {"attributes": {}, "capacity": {}}
        entries = [("attributes", *a) for a in self.attributes] + [
            ("capacity", n, "quantity", q) for n, q in self.capacity
        ]
        for kind, name, type_, value in entries:
            domain, _, key = _s(name).rpartition("/")  # "model" -> ("", "", "model")
            names = found[kind].setdefault(ct.StringType(domain or _s(self.driver)), ct.MapType())
            known = _CONVERT.get(str(type_))
            if known is None:
                raise _Fail(f"{name[:60]!r}: unknown attribute type {str(type_)[:20]!r}")
            kinds, convert = known
            if not isinstance(value, kinds) or (type_ == "int" and isinstance(value, bool)):
                raise _Fail(f"{name[:60]!r}: {type(value).__name__} is not a {type_} value")
            if key in names:
                raise _Fail(f"{kind} {name[:60]!r} given twice (qualified and unqualified?)")
            try:
                names[ct.StringType(key)] = convert(value)
            except ValueError as err:
                raise _Fail(f"{name[:60]!r}: {err}") from None
        return ct.MapType(
            {
                ct.StringType("driver"): ct.StringType(_s(self.driver)),
                **{ct.StringType(kind): ct.MapType(domains) for kind, domains in found.items()},
                ct.StringType("allowMultipleAllocations"): ct.BoolType(self.allow_multiple is True),
            }
        )


@dataclass(frozen=True, eq=False)
class CompiledSelector:
    """One checked expression; immutable, shared by every thread (from compile_selector)."""

    expression: str
    ast: lark.Tree = field(repr=False)

    def matches(self, device: DeviceView) -> bool:
        """The expression's value for `device`; SelectorError on any error or a non-bool value."""
        if not isinstance(device, DeviceView):
            raise SelectorError(f"expected a DeviceView, got {type(device).__name__}", self.expression)
        context = {"device": device.cel_value()}
        try:
            value = _Evaluator(self.ast, _ACTIVATION, [MAX_STEPS]).evaluate(context)
        except CELEvalError as err:
            raise SelectorError(_describe(err), self.expression) from None
        except _OverBudget:
            raise SelectorError(f"evaluation took more than {MAX_STEPS} steps", self.expression) from None
        except Exception as err:  # noqa: BLE001 - RecursionError, MemoryError, celpy internals
            raise SelectorError(
                f"evaluation failed: {type(err).__name__}: {_cut(str(err), 80)}", self.expression
            ) from None
        if not isinstance(value, ct.BoolType):
            raise SelectorError(f"the result is of type {_type_name(value)}, not bool", self.expression)
        return bool(value)


def _describe(err: CELEvalError) -> str:
    """celpy's error text without what would be huge (it embeds the activation: the device)."""
    head, kind, detail = (*err.args, None, None, None)[:3]
    head = str(head or "evaluation error").split(" (in activation", 1)[0]
    detail = detail[0] if isinstance(detail, tuple) and detail else None
    if isinstance(detail, str):
        if kind is _Fail:
            head = detail
        else:
            if kind is TypeError:  # celpy's own text names Python classes
                head = "no such overload"
            detail = repr(str(detail)) if kind is KeyError else _cut(detail, 100)
            head = head if detail in head else f"{head}: {detail}"
    return head if err.column is None else f"{_cut(head, 150)} (column {err.column})"


def compile_selector(expression: str) -> CompiledSelector:
    """Parse and check one expression (cached, failures too); SelectorError if it cannot run."""
    if not isinstance(expression, str):
        raise SelectorError(f"expression must be a string, got {type(expression).__name__}")
    if (
        len(expression) > MAX_EXPRESSION_BYTES
        or len(expression.encode("utf-8", "surrogatepass")) > MAX_EXPRESSION_BYTES
    ):
        raise SelectorError(f"expression longer than {MAX_EXPRESSION_BYTES} bytes", expression)
    compiled = _compile(expression)
    if isinstance(compiled, str):
        raise SelectorError(compiled, expression)
    return compiled


# Grammar rules whose one-child nodes celpy's Evaluator passes through (returns the child's
# value): dropping them leaves a fifth of the nodes, and evaluation recurses only per real level.
_PASS_THROUGH = frozenset(
    {"expr", "conditionalor", "conditionaland", "relation", "addition", "multiplication", "unary", "member"}
)


class _Position:
    """What celpy reads of a node's lark Meta (for error messages), without its 13-entry dict."""

    __slots__ = ("line", "column")

    def __init__(self, meta: Any):
        self.line, self.column = getattr(meta, "line", None), getattr(meta, "column", None)


def _skip(node: Any) -> Any:
    while (
        isinstance(node, lark.Tree)
        and node.data in _PASS_THROUGH
        and len(node.children) == 1
        and isinstance(node.children[0], lark.Tree)
    ):
        node = node.children[0]
    return node


@lru_cache(maxsize=CACHE_SIZE)
def _compile(expression: str) -> CompiledSelector | str:
    """A CompiledSelector, or the problem (a string: a cached exception would gather tracebacks)."""
    try:
        ast = _skip(celpy.CELParser().parse(expression))
    except celpy.CELParseError as err:
        return f"syntax error at line {err.line}, column {err.column}" if err.line else "syntax error"
    except Exception as err:  # noqa: BLE001 - lark internals on odd input
        return f"syntax error ({type(err).__name__})"
    nodes, stack = 0, [(ast, 1)]
    while stack:  # iterative: a recursive walk would overflow on the inputs this refuses
        node, depth = stack.pop()
        children = node.children if isinstance(node, lark.Tree) else ()
        nodes += len(children) != 1  # CEL's nodes: tokens and branches, not one-child wrappers
        if depth > MAX_DEPTH:
            return f"expression nested deeper than {MAX_DEPTH} levels"
        if nodes > MAX_NODES:
            return f"expression has more than {MAX_NODES} nodes"
        if children:
            node._meta = _Position(node._meta)
            # member_object tells a message type from a value by its first child's rule: keep it.
            node.children = [c if i == 0 and node.data == "member_object" else _skip(c) for i, c in enumerate(children)]
            stack.extend((child, depth + 1) for child in node.children)
    return CompiledSelector(expression, ast)


def matches_all(expressions: Sequence[str], device: DeviceView) -> bool:
    """True when every expression is true for `device` (an empty list matches)."""
    return all(compile_selector(expression).matches(device) for expression in expressions)
