"""The value syntax of Karmada's Go flags, read the way its binary reads them. Pure.

The Go binary parses flags with pflag (plus klog's and component-base's logging flags), so a
manifest written for it may use Go's value syntax: `--enable-pprof` bare or `=true|1|t|T|...`,
`-v 4`, `-v=4`, `-v4`, `--log_dir` or `--log-dir`, durations such as `5s`, and
`--feature-gates=A=true,B=false` repeated. The value parsers below accept exactly what Go's
accept and fail with Go's wording, so an error reads the same as from Karmada's binary.

Command-line syntax, not the model (that is estimator/core/): the estimator's command line
(estimator/cli/options.py) hands these parsers to argparse, the manifests renderer checks the
flag values it writes with them, and the placement client reads Go durations and feature
gates with them, through estimator.api.
"""

from __future__ import annotations

import re
from decimal import Decimal

import durationpy

from estimator.core.featuregates import FEATURE_GATES
from estimator.core.resources import QuantityError, parse_quantity


class FlagValueError(ValueError):
    """A flag value Go's parser would refuse; the message is Go's reason."""


# --- Go scalar syntax --------------------------------------------------------------------

_GO_TRUE = ("1", "t", "T", "TRUE", "true", "True")
_GO_FALSE = ("0", "f", "F", "FALSE", "false", "False")


def parse_bool(text: str) -> bool:
    """strconv.ParseBool."""
    if text in _GO_TRUE:
        return True
    if text in _GO_FALSE:
        return False
    raise FlagValueError(f'strconv.ParseBool: parsing "{text}": invalid syntax')


_GO_INT = re.compile(r"[+-]?(0[xX][0-9a-fA-F_]+|0[oO][0-7_]+|0[bB][01_]+|0[0-7_]*|[1-9][0-9_]*)")


def parse_int(text: str, bits: int = 64) -> int:
    """strconv.ParseInt(text, 0, bits): base prefixes, a leading 0 means octal, `_` separators."""
    if not _GO_INT.fullmatch(text) or "__" in text or text.endswith("_"):
        raise FlagValueError(f'strconv.ParseInt: parsing "{text}": invalid syntax')
    sign, digits = (-1, text[1:]) if text[0] == "-" else (1, text.lstrip("+"))
    digits = digits.replace("_", "")
    if len(digits) > 1 and digits[0] == "0" and digits[1] in "0123456789":
        value = int(digits, 8)  # Go: "010" is 8
    else:
        value = int(digits, 0)
    value *= sign
    if not -(1 << (bits - 1)) <= value < (1 << (bits - 1)):
        raise FlagValueError(f'strconv.ParseInt: parsing "{text}": value out of range')
    return value


def parse_uint(text: str, base: int = 0, bits: int = 64) -> int:
    """strconv.ParseUint(text, base, bits)."""
    if text.startswith(("+", "-")) or (base == 10 and not text.isdigit()):
        raise FlagValueError(f'strconv.ParseUint: parsing "{text}": invalid syntax')
    try:
        value = parse_int(text, bits + 1) if base == 0 else int(text, base)
    except FlagValueError:
        raise FlagValueError(f'strconv.ParseUint: parsing "{text}": invalid syntax') from None
    if value >= 1 << bits:
        raise FlagValueError(f'strconv.ParseUint: parsing "{text}": value out of range')
    return value


_GO_FLOAT = re.compile(r"[+-]?((\d[\d_]*)?\.?\d[\d_]*([eE][+-]?\d+)?|\d[\d_]*\.|inf|infinity|nan)", re.I)


def parse_float32(text: str) -> float:
    """strconv.ParseFloat(text, 32) for the decimal forms a manifest uses."""
    if not _GO_FLOAT.fullmatch(text):
        raise FlagValueError(f'strconv.ParseFloat: parsing "{text}": invalid syntax')
    value = float(text.replace("_", ""))
    if abs(value) > 3.4028234663852886e38 and value != float("inf") and value != float("-inf"):
        raise FlagValueError(f'strconv.ParseFloat: parsing "{text}": value out of range')
    return value


# durationpy does the parsing. It also knows days, weeks, months and years, which Go's
# time.ParseDuration refuses, so Go's unit set is checked first, with Go's wording.
_GO_DURATION_UNITS = frozenset({"ns", "us", "µs", "μs", "ms", "s", "m", "h"})
_DURATION_PART = re.compile(r"([\d.]*)([^\d.]*)")  # findall ends with an empty match
_MAX_DURATION_SECONDS = (2**63 - 1) / 1e9  # a Go time.Duration is int64 nanoseconds


def parse_duration(text: str) -> float:
    """time.ParseDuration, in seconds (to the microsecond: durationpy returns a timedelta)."""
    body = text[1:] if text[:1] in "+-" else text
    if body == "0":
        return 0.0
    if not body:
        raise FlagValueError(f'time: invalid duration "{text}"')
    for number, unit in _DURATION_PART.findall(body)[:-1]:  # Go's wording for what Go refuses
        if not any(c.isdigit() for c in number):
            raise FlagValueError(f'time: invalid duration "{text}"')
        if not unit:
            raise FlagValueError(f'time: missing unit in duration "{text}"')
        if unit not in _GO_DURATION_UNITS:
            raise FlagValueError(f'time: unknown unit "{unit}" in duration "{text}"')
    try:
        seconds = durationpy.from_str(text).total_seconds()
    except durationpy.DurationError:
        raise FlagValueError(f'time: invalid duration "{text}"') from None
    if abs(seconds) > _MAX_DURATION_SECONDS:
        raise FlagValueError(f'time: invalid duration "{text}"')
    return seconds


def parse_verbosity(text: str) -> int:
    """component-base's -v: strconv.ParseUint(text, 10, 31)."""
    return parse_uint(text, base=10, bits=31)


def parse_vmodule(text: str) -> list[tuple[str, int]]:
    """component-base's --vmodule: comma-separated pattern=N, empty items ignored."""
    items = []
    for pat in text.split(","):
        if not pat:
            continue
        parts = pat.split("=")
        if len(parts) != 2 or not parts[0] or not parts[1]:
            raise FlagValueError(f'"{pat}" does not have the pattern=N format')
        try:
            level = parse_uint(parts[1], base=10, bits=31)
        except FlagValueError as error:
            raise FlagValueError(f'parsing verbosity in "{pat}": {error}') from None
        items.append((parts[0], level))
    return items


_SEVERITIES = ("INFO", "WARNING", "ERROR", "FATAL")


def parse_severity(text: str) -> int:
    """klog's --stderrthreshold: a severity name (any case) or its number 0..3."""
    if text.upper() in _SEVERITIES:
        return _SEVERITIES.index(text.upper())
    try:
        value = parse_int(text, 32)
    except FlagValueError:
        raise FlagValueError(f'strconv.ParseInt: parsing "{text}": invalid syntax') from None
    if not 0 <= value < len(_SEVERITIES):
        raise FlagValueError(f"unknown severity level {value}")
    return value


def parse_trace_location(text: str) -> tuple[str, int] | None:
    """klog's --log_backtrace_at: file.ext:N, or empty for none."""
    if text == "":
        return None
    parts = text.split(":")
    if len(parts) != 2 or "." not in parts[0]:
        raise FlagValueError("syntax error: expect file.go:234")
    try:
        line = parse_int(parts[1], 64)
    except FlagValueError:
        raise FlagValueError("syntax error: expect file.go:234") from None
    return (parts[0], line)


def parse_byte_quantity(text: str) -> int:
    """A Kubernetes quantity of bytes (--log-*-info-buffer-size)."""
    try:
        value = parse_quantity(text)
    except QuantityError as error:
        raise FlagValueError(str(error)) from None
    return int(value.to_integral_value()) if value >= Decimal(0) else 0


def parse_logging_format(text: str) -> str:
    """--logging-format: checked later (estimator.service.logoptions.LogOptions.validate), as
    component-base does."""
    return text


# --- Feature gates -------------------------------------------------------------------------


def parse_feature_gates(text: str, known: dict[str, tuple[str, bool]] | None = None) -> dict[str, bool]:
    """One --feature-gates value, as component-base's featuregate.Set reads it; an unknown
    gate (not in `known`, by default Karmada's table estimator.core.featuregates.FEATURE_GATES)
    is refused with its wording. The one parser of --feature-gates: the placement client
    (scheduler_client/karmada/gates.py) uses it too."""
    known = FEATURE_GATES if known is None else known
    gates: dict[str, bool] = {}
    for item in text.split(","):
        if not item:
            continue
        name, sep, raw = item.partition("=")
        name = name.strip()
        if not sep:
            raise FlagValueError(f"missing bool value for {name}")
        raw = raw.strip()
        try:
            gates[name] = parse_bool(raw)
        except FlagValueError as error:
            raise FlagValueError(f"invalid value of {name}={raw}, err: {error}") from None
    for name in gates:
        if name not in known:
            raise UnknownFeatureGate(name)
    return gates


class UnknownFeatureGate(FlagValueError):
    """A gate no Karmada release of the supported range defines; `name` is the gate."""

    def __init__(self, name: str):
        super().__init__(f"unrecognized feature gate: {name}")
        self.name = name


# --- argv normalisation --------------------------------------------------------------------


def normalize_argv(argv: list[str], bool_flags: set[str]) -> list[str]:
    """What pflag accepts but argparse does not: `_` and `-` are the same in flag names
    (component-base's WordSepNormalizeFunc), and a bare boolean flag means `=true`, never
    taking the next word as its value. Stops at `--`."""
    out: list[str] = []
    for i, arg in enumerate(argv):
        if arg == "--":
            out.extend(argv[i:])
            break
        if arg.startswith("--") and len(arg) > 2:
            name, sep, value = arg[2:].partition("=")
            name = name.replace("_", "-")
            if name in bool_flags and not sep:
                arg = f"--{name}=true"
            else:
                arg = f"--{name}{sep}{value}"
        out.append(arg)
    return out
