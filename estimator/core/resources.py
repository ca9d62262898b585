"""Resource names and quantities, the way Kubernetes counts them.

Pure functions, no I/O. Quantities become exact integers at the edge (cpu in millicores,
everything else in whole units, fractions rounded up as resource.Quantity.Value() does),
so capacity arithmetic downstream is fixed-width int64 with no floats.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from decimal import ROUND_CEILING, Decimal, localcontext
from functools import lru_cache
from typing import Any

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"

MAX_INT32 = 2**31 - 1
MAX_INT64 = 2**63 - 1

_HUGEPAGES_PREFIX = "hugepages-"
_ATTACHABLE_VOLUMES_PREFIX = "attachable-volumes-"
_NATIVE_DOMAIN = "kubernetes.io/"
_REQUESTS_PREFIX = "requests."

# A qualified name (optional DNS-subdomain prefix + "/" + name), as validation.IsQualifiedName.
_QUALIFIED_NAME_PART = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")

# <sign><digits>[.<digits>]<suffix>, suffix binary SI, decimal SI, or an e/E exponent.
# Used with fullmatch: "$" would also accept a trailing newline, which Kubernetes rejects.
_QUANTITY = re.compile(
    r"(?P<sign>[+-]?)(?P<number>[0-9]+(?:\.[0-9]*)?|\.[0-9]+)"
    r"(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E|[eE][+-]?[0-9]+|)"
)
_BINARY_SUFFIX = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL_SUFFIX = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
# Longer strings are not quantities anyone means; refusing them bounds the parse cost.
_MAX_QUANTITY_LENGTH = 64


class QuantityError(ValueError):
    """A string that is not a Kubernetes quantity, or one too large for int64."""


class ResourceListError(ValueError):
    """A ResourceList that cannot be read. `where` names the list (e.g. "status.allocatable"),
    `name` the resource ("" when the list itself is wrong), `problem` what is wrong; callers
    with their own error type re-raise from these three."""

    def __init__(self, where: str, name: str, problem: str):
        self.where, self.name, self.problem = where, name, problem
        super().__init__(f"{where}: {name}: {problem}" if name else f"{where}: {problem}")


def _is_qualified_name(value: str) -> bool:
    prefix, slash, name = value.rpartition("/")
    if slash and (not prefix or len(prefix) > 253 or not _DNS1123_SUBDOMAIN.match(prefix)):
        return False
    return 0 < len(name) <= 63 and bool(_QUALIFIED_NAME_PART.match(name))


def is_prefixed_native(name: str) -> bool:
    return _NATIVE_DOMAIN in name


def is_native(name: str) -> bool:
    return "/" not in name or is_prefixed_native(name)


def is_extended(name: str) -> bool:
    """Extended resources: domain-prefixed, not *kubernetes.io/, valid as a quota name."""
    if is_native(name) or name.startswith(_REQUESTS_PREFIX):
        return False
    return _is_qualified_name(_REQUESTS_PREFIX + name)


def is_hugepages(name: str) -> bool:
    return name.startswith(_HUGEPAGES_PREFIX)


def is_scalar(name: str) -> bool:
    """Scalar resources as the scheduler tracks them (util.IsScalarResourceName)."""
    return (
        is_extended(name)
        or is_hugepages(name)
        or is_prefixed_native(name)
        or name.startswith(_ATTACHABLE_VOLUMES_PREFIX)
    )


def is_counted(name: str) -> bool:
    """Names a node-fit check looks at: cpu, memory, ephemeral-storage and scalars.

    `pods` is not counted here: every replica takes exactly one pod slot.
    """
    return name in (CPU, MEMORY, EPHEMERAL_STORAGE) or is_scalar(name)


@lru_cache(maxsize=4096)
def parse_quantity(text: str) -> Decimal:
    """Parse a Kubernetes quantity string exactly (no rounding)."""
    if not isinstance(text, str):
        raise QuantityError(f"quantity must be a string, got {type(text).__name__}")
    if len(text) > _MAX_QUANTITY_LENGTH:
        raise QuantityError(f"quantity {text[:20]!r}... is longer than {_MAX_QUANTITY_LENGTH} characters")
    match = _QUANTITY.fullmatch(text)
    if match is None:
        raise QuantityError(f"{text!r} is not a quantity (expected e.g. 500m, 2, 1536Mi, 1e3)")
    number = Decimal(match["number"])  # exact: the constructor ignores the context
    suffix = match["suffix"]
    # Arithmetic (negation included) rounds to the context precision, so do all of it here.
    with localcontext() as ctx:
        ctx.prec = 400
        ctx.Emax = 10_000
        ctx.Emin = -10_000
        if match["sign"] == "-":
            number = -number
        if suffix in _BINARY_SUFFIX:
            return number * (2 ** _BINARY_SUFFIX[suffix])
        if suffix in _DECIMAL_SUFFIX:
            return number.scaleb(_DECIMAL_SUFFIX[suffix])
        exponent = int(suffix[1:])
        if abs(exponent) > 1000:
            raise QuantityError(f"{text!r}: exponent out of range")
        return number.scaleb(exponent)


def uses_milli_units(name: str) -> bool:
    """cpu (and quota names for cpu) are counted in millicores."""
    return name in (CPU, "requests.cpu", "limits.cpu")


# The forms kubectl prints (digits, an optional integer SI suffix): read with integer
# arithmetic, without the Decimal parse; a million pods' requests are mostly these.
_PLAIN_QUANTITY = re.compile(r"([0-9]{1,18})(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei|)")
_PLAIN_SCALE = {
    "": 1,
    "k": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "P": 10**15,
    "E": 10**18,
    "Ki": 1 << 10,
    "Mi": 1 << 20,
    "Gi": 1 << 30,
    "Ti": 1 << 40,
    "Pi": 1 << 50,
    "Ei": 1 << 60,
}


# Longest name + text `quantity_to_int` keeps in its cache: 8,192 entries of at most this
# many characters stay a few MB whatever a request or a file names (a qualified resource
# name is at most 317 characters, a quantity 64); longer ones are worked out every time.
_CACHED_CHARACTERS = 512


def quantity_to_int(name: str, text: str) -> int:
    """A quantity as the int64 the scheduler compares: MilliValue() for cpu, else Value().

    Both round up, so 0.5m cpu is 1 millicore. Raises QuantityError past int64.
    """
    if len(name) + len(text) > _CACHED_CHARACTERS:
        return _quantity_to_int(name, text)
    return _cached_quantity_to_int(name, text)


def _quantity_to_int(name: str, text: str) -> int:
    plain = _PLAIN_QUANTITY.fullmatch(text)
    if plain is not None:
        number, suffix = plain.groups()
        milli = uses_milli_units(name)
        if suffix == "m":
            value = int(number) if milli else -(-int(number) // 1000)  # Value() rounds up
        else:
            value = int(number) * _PLAIN_SCALE[suffix] * (1000 if milli else 1)
        if value <= MAX_INT64:
            return value
    return _exact_quantity_to_int(name, text)  # every other form, and the out-of-range message


_cached_quantity_to_int = lru_cache(maxsize=8192)(_quantity_to_int)
quantity_to_int.cache_clear = _cached_quantity_to_int.cache_clear  # type: ignore[attr-defined]


def _exact_quantity_to_int(name: str, text: str) -> int:
    """quantity_to_int for any form: the Decimal parse of the whole grammar."""
    value = parse_quantity(text)
    with localcontext() as ctx:
        # The default 28 digits would round a long fraction away before the ceiling.
        ctx.prec = 400
        if uses_milli_units(name):
            value = value * 1000
        as_int = int(value.to_integral_value(rounding=ROUND_CEILING))
    if not -MAX_INT64 - 1 <= as_int <= MAX_INT64:
        # The name may be a client's: quoted and cut, as every client value in a message.
        shown = repr(name) if len(name) <= 200 else f"{name[:200]!r}...({len(name)} characters)"
        raise QuantityError(f"{shown}={text!r} is out of range for a 64-bit count")
    return as_int


def quantity_text(value: Any) -> str:
    """A quantity as written in a YAML or JSON file: YAML turns `cpu: 2` into an int and
    `cpu: 0.5` into a float, kubectl prints strings; anything else is refused."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        raise QuantityError(f"{value!r} is not a quantity")
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value)  # "nan" and "inf" then fail to parse, as they should
    raise QuantityError(f"expected a quantity string, got {type(value).__name__}")


def parse_resource_list(
    resource_list: Any,
    where: str,
    keep: Callable[[str], bool] | None = None,
    allow_negative: bool = True,
) -> dict[str, int]:
    """A ResourceList (name -> quantity) as int64 units (`quantity_to_int`), the one reader of
    requests, limits, overhead, allocatable, capacity and quota amounts.

    None (an absent list) reads as empty. `keep` picks the names to read (default: all);
    the rest are not even parsed. `allow_negative=False` refuses negative amounts (the API
    server refuses them where a count would otherwise wrap sums). ResourceListError names
    `where` and the resource.
    """
    if resource_list is None:
        return {}
    if not isinstance(resource_list, dict) and not isinstance(resource_list, Mapping):  # dict: the fast common case
        raise ResourceListError(
            where, "", f"expected a mapping of resource names to quantities, got {type(resource_list).__name__}"
        )
    parsed: dict[str, int] = {}
    for name, value in resource_list.items():
        if keep is not None and not keep(name):
            continue
        try:
            amount = quantity_to_int(name, value if isinstance(value, str) else quantity_text(value))
        except QuantityError as err:
            raise ResourceListError(where, str(name), str(err)) from None
        if amount < 0 and not allow_negative:
            raise ResourceListError(where, str(name), f"{value!r} is negative")
        parsed[name] = amount
    return parsed
