"""Kubernetes' CEL extension functions for DRA device selectors, on cel-python's value types.

The functions the CEL front (estimator/core/cel.py) hands celpy's evaluator, as Kubernetes
enables them for DRA: quantity (`quantity`, `isQuantity`, `isInteger`, `asInteger`,
`asApproximateFloat`, `sign`, `add`, `sub`, `compareTo`, `isGreaterThan`, `isLessThan`); semver
(`semver`, `isSemver`, `major`, `minor`, `patch`, the three comparisons); cel-go's strings
extension (`charAt`, `indexOf`, `lastIndexOf`, `lowerAscii`, `upperAscii`, `replace`, `split`,
`substring`, `trim`, `join`); the Kubernetes lists library (`isSorted`, `sum`, `min`, `max`,
`indexOf`, `lastIndexOf`); and `%`, numbers only. Others (`find`, `sets.*`, `ip`, `cidr`, `url`,
`format`, `cel.bind`, semver's normalize flag, quantity `mul`/`div`) are unknown, hence errors.

Public API:
    FUNCTIONS                    CEL name -> implementation (an Activation's `functions`)
    LibraryError(ValueError)     a function's own error; its message becomes the SelectorError's
    Quantity, Semver             the two value types the libraries add (frozen, comparable)
    to_quantity(text) -> Quantity, parse_semver(text) -> Semver   LibraryError when invalid
    as_string(x) -> str          a CEL string argument
    type_name(x) -> str          a CEL value's type as messages name it
A wrong argument type raises TypeError, which celpy reports as "no such overload". `replace`
and `join` build at most MAX_STRING characters. Pure: values in, values out.
"""

from __future__ import annotations

import operator
import re
import string as _string
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Context, Decimal
from functools import partial
from typing import Any

import celpy.celtypes as ct

from estimator.core.resources import parse_quantity

MAX_STRING = 1 << 16

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_EXACT = Context(prec=1000, Emax=100_000, Emin=-100_000)  # exact sums, as Go's inf.Dec
_DIGITS, _IDENTIFIER = re.compile(r"[0-9]+"), re.compile(r"[0-9A-Za-z-]+")
# unicode.IsSpace: what Go's strings.TrimSpace cuts (Python's strip() also cuts \x1c-\x1f).
_GO_SPACE = "\t\n\v\f\r \x85\xa0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + "\u2028\u2029\u202f\u205f\u3000"
_LOWER = str.maketrans(_string.ascii_uppercase, _string.ascii_lowercase)
_UPPER = str.maketrans(_string.ascii_lowercase, _string.ascii_uppercase)


class LibraryError(ValueError):
    """A library function's own error: its message becomes the SelectorError's."""


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
        raise LibraryError(f"invalid {what} {part[:20]!r} in semantic version")
    return int(part)


def parse_semver(text: str) -> Semver:
    """A version as github.com/blang/semver/v4 Parse reads it (strict); raises ValueError."""
    parts = text.split(".", 2)
    if len(parts) != 3:
        raise LibraryError(f"{text[:40]!r} is not a semantic version (major.minor.patch)")
    rest, plus, build = parts[2].partition("+")
    patch, dash, pre = rest.partition("-")
    pres, builds = pre.split(".") if dash else [], build.split(".") if plus else []
    for identifier in pres + builds:
        if not _IDENTIFIER.fullmatch(identifier):
            raise LibraryError(f"invalid identifier {identifier[:20]!r} in semantic version")
    return Semver(
        _number(parts[0], "major"),
        _number(parts[1], "minor"),
        _number(patch, "patch"),
        tuple(_number(p, "pre-release") if p.isdigit() else p for p in pres),
        tuple(builds),
    )


def type_name(x: Any) -> str:
    return type(x).__name__.removesuffix("Type").lower()


def _arg(x: Any, kind: type | tuple[type, ...]) -> Any:
    """x if it has the CEL type; else TypeError, which celpy reports as "no such overload"."""
    if not isinstance(x, kind):
        raise TypeError(f"unexpected {type_name(x)} argument")
    return x


def as_string(x: Any) -> str:
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
    except LibraryError:
        return ct.BoolType(False)
    return ct.BoolType(True)


def to_quantity(text: Any) -> Quantity:
    try:
        return Quantity(parse_quantity(as_string(text)))
    except ValueError as err:  # QuantityError
        raise LibraryError(str(err)) from None


def _as_integer(q: Any) -> ct.IntType:
    value = _q(q)
    if value != value.to_integral_value() or not _INT64_MIN <= value <= _INT64_MAX:
        raise LibraryError("cannot convert value to integer")
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
    s, sub = as_string(x), as_string(y)
    off = _i(offset[0]) if offset else len(s) - (sub != "") if last else 0
    if sub == "":
        return ct.IntType(off)
    if not 0 <= off < len(s):
        raise LibraryError(f"index out of range: {off}")
    return ct.IntType(s.rfind(sub, 0, off + len(sub)) if last else s.find(sub, off))


def _equal(a: Any, b: Any) -> bool:
    try:
        return bool(a == b)
    except TypeError:  # celpy refuses to compare values of different types: not equal
        return False


def _replace(s: Any, old: Any, new: Any, n: Any = ct.IntType(-1)) -> ct.StringType:
    s, old, new, count = as_string(s), as_string(old), as_string(new), _i(n)
    hits = s.count(old) if old else len(s) + 1
    if len(s) + (hits if count < 0 else min(hits, count)) * (len(new) - len(old)) > MAX_STRING:
        raise LibraryError(f"replace would build more than {MAX_STRING} characters")
    return ct.StringType(s.replace(old, new, count))


def _split(s: Any, sep: Any, n: Any = ct.IntType(-1)) -> ct.ListType:
    s, sep, count = as_string(s), as_string(sep), _i(n)
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
    s, a = as_string(s), _i(start)
    b = _i(end[0]) if end else len(s)
    if a > b:
        raise LibraryError(f"invalid substring range. start: {a}, end: {b}")
    for i in (a, b):
        if not 0 <= i <= len(s):
            raise LibraryError(f"index out of range: {i}")
    return ct.StringType(s[a:b])


def _join(items: Any, sep: Any = ct.StringType("")) -> ct.StringType:
    parts, sep = _list(items, (str,)), as_string(sep)
    if sum(map(len, parts)) + len(sep) * max(len(parts) - 1, 0) > MAX_STRING:
        raise LibraryError(f"join would build more than {MAX_STRING} characters")
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
            raise LibraryError(f"{name} called on empty list")
        best = values[0]
        for value in values[1:]:
            best = value if better(value, best) else best  # ties keep the first, as Go's loop
        return best

    return pick


def _modulo(a: Any, b: Any) -> Any:
    if isinstance(a, (str, bytes)):  # Python would format the string: no such CEL overload
        raise TypeError("% is defined for numbers only")
    return operator.mod(a, b)


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "_%_": _modulo,
    "quantity": to_quantity,
    "isQuantity": lambda s: _true_unless(to_quantity, s),
    "isInteger": lambda q: _true_unless(_as_integer, q),
    "asInteger": _as_integer,
    "asApproximateFloat": lambda q: ct.DoubleType(float(_q(q))),  # +-inf beyond float64
    "sign": lambda q: ct.IntType(int(_q(q).compare(0))),
    "add": lambda q, x: Quantity(_EXACT.add(_q(q), _operand(x))),
    "sub": lambda q, x: Quantity(_EXACT.subtract(_q(q), _operand(x))),
    "compareTo": lambda a, b: ct.IntType(_compare(a, b)),
    "isGreaterThan": lambda a, b: ct.BoolType(_compare(a, b) > 0),
    "isLessThan": lambda a, b: ct.BoolType(_compare(a, b) < 0),
    "semver": lambda s: parse_semver(as_string(s)),
    "isSemver": lambda s: _true_unless(parse_semver, as_string(s)),
    "major": lambda v: ct.IntType(_arg(v, Semver).major),
    "minor": lambda v: ct.IntType(_arg(v, Semver).minor),
    "patch": lambda v: ct.IntType(_arg(v, Semver).patch),
    "charAt": lambda s, i: _substring(s, i, ct.IntType(max(min(_i(i) + 1, len(as_string(s))), _i(i)))),
    "indexOf": partial(_find, False),
    "lastIndexOf": partial(_find, True),
    "lowerAscii": lambda s: ct.StringType(as_string(s).translate(_LOWER)),
    "upperAscii": lambda s: ct.StringType(as_string(s).translate(_UPPER)),
    "replace": _replace,
    "split": _split,
    "substring": _substring,
    "trim": lambda s: ct.StringType(as_string(s).strip(_GO_SPACE)),
    "join": _join,
    # Each item with the next: the shorter second list ends the pairs (strict=False on purpose).
    "isSorted": lambda xs: ct.BoolType(not any(a > b for a, b in zip(_list(xs, _ORDERED), xs[1:], strict=False))),
    "sum": _sum,
    "min": _extreme("min", operator.lt),
    "max": _extreme("max", operator.gt),
}
