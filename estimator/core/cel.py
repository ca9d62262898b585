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

Functions, as Kubernetes enables them (quantity, semver, cel-go's strings extension, the
Kubernetes lists library): estimator/core/cellib.py, which names them and the ones left out
(unknown, hence errors).

Limits, since celpy has no cost budget: an expression has at most 10 KiB, MAX_NODES CEL nodes and
MAX_DEPTH levels (about 60 nested parentheses or 40 nested calls; evaluation recurses per level,
and this keeps it well inside Python's default recursion limit). The only loops are comprehension
macros over lists, which are finite, and an evaluation may take MAX_STEPS steps: one per node
visited and one per 32 characters or elements of each string, list or map a node yields, so work
and memory in proportion to value sizes count too (about a second of CPU at most; ordinary
selectors take tens of steps). `replace` and `join` build at most cellib.MAX_STRING characters, and
`matches` runs on re2 (linear time). A cached entry holds at most about 1 MB of parse tree.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, cast

import celpy
import celpy.celtypes as ct
import lark
from celpy.evaluation import Activation, CELEvalError, Evaluator

from estimator.core import cellib
from estimator.core.cellib import LibraryError, as_string, parse_semver, to_quantity, type_name

MAX_EXPRESSION_BYTES = 10 * 1024
MAX_NODES = 1000
MAX_DEPTH = 128
MAX_STEPS = 50_000
CACHE_SIZE = 256


class SelectorError(Exception):
    """An expression that cannot be compiled or evaluated on a device (a short message)."""

    def __init__(self, problem: str, expression: str | None = None):
        where = (
            ""
            if expression is None
            else " in CEL selector " + (repr(expression) if len(expression) <= 60 else repr(expression[:57]) + "...")
        )
        super().__init__(_cut(problem, 200 - len(where)) + where)


class _OverBudget(Exception):
    pass


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: max(limit - 3, 0)] + "..."


_ACTIVATION = Activation(functions=cellib.FUNCTIONS)


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
    "quantity": (str, to_quantity),
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
            domain, _, key = as_string(name).rpartition("/")  # "model" -> ("", "", "model")
            names = found[kind].setdefault(ct.StringType(domain or as_string(self.driver)), ct.MapType())
            known = _CONVERT.get(str(type_))
            if known is None:
                raise LibraryError(f"{name[:60]!r}: unknown attribute type {str(type_)[:20]!r}")
            kinds, convert = known
            if not isinstance(value, kinds) or (type_ == "int" and isinstance(value, bool)):
                raise LibraryError(f"{name[:60]!r}: {type(value).__name__} is not a {type_} value")
            if key in names:
                raise LibraryError(f"{kind} {name[:60]!r} given twice (qualified and unqualified?)")
            try:
                names[ct.StringType(key)] = convert(value)
            except ValueError as err:
                raise LibraryError(f"{name[:60]!r}: {err}") from None
        return ct.MapType(
            {
                ct.StringType("driver"): ct.StringType(as_string(self.driver)),
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
            raise SelectorError(f"the result is of type {type_name(value)}, not bool", self.expression)
        return bool(value)


def _describe(err: CELEvalError) -> str:
    """celpy's error text without what would be huge (it embeds the activation: the device)."""
    head, kind, detail = (*err.args, None, None, None)[:3]
    head = str(head or "evaluation error").split(" (in activation", 1)[0]
    detail = detail[0] if isinstance(detail, tuple) and detail else None
    if isinstance(detail, str):
        if kind is LibraryError:
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
