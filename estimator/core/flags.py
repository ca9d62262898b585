"""Karmada's scheduler-estimator command line, read the way its Go binary reads it. Pure.

The Go binary parses flags with pflag (plus klog's and component-base's logging flags), so a
manifest written for it may use Go's value syntax: `--enable-pprof` bare or `=true|1|t|T|...`,
`-v 4`, `-v=4`, `-v4`, `--log_dir` or `--log-dir`, durations such as `5s`, and
`--feature-gates=A=true,B=false` repeated. The value parsers below accept exactly what Go's
accept and fail with Go's wording, so an error reads the same as from Karmada's binary.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field
from decimal import Decimal

import durationpy

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


def vmodule_level(patterns: list[tuple[str, int]], path: str) -> int | None:
    """klog's matching: a pattern without '/' matches the file's base name without extension;
    one with '/' matches the path without extension. First match wins."""
    stem = path.rsplit(".", 1)[0] if path.endswith(".py") else path
    base = stem.rsplit("/", 1)[-1]
    for pattern, level in patterns:
        subject = stem if "/" in pattern else base
        if fnmatch.fnmatchcase(subject, pattern) or ("/" in pattern and fnmatch.fnmatchcase(stem, "*/" + pattern)):
            return level
    return None


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
    """--logging-format: checked later (see LogOptions.validate), as component-base does."""
    return text


# --- Feature gates -------------------------------------------------------------------------

# Every gate Karmada's binaries accept in v1.16.0 .. v1.19.0-rc.0 and its newest stage and
# default (pkg/features). AllAlpha/AllBeta set every alpha/beta gate not named explicitly.
# The one parser of --feature-gates: the placement client (scheduler_client/karmada/gates.py) uses it too.
ALPHA, BETA = "ALPHA", "BETA"
ALL_GATES = ("AllAlpha", "AllBeta")
FEATURE_GATES: dict[str, tuple[str, bool]] = {
    "AllAlpha": (ALPHA, False),
    "AllBeta": (BETA, False),
    "ContextualLogging": (BETA, True),
    "ControllerPriorityQueue": (BETA, True),
    "CustomizedClusterResourceModeling": (BETA, True),
    "Failover": (BETA, False),
    "FederatedQuotaEnforcement": (ALPHA, False),
    "GracefulEviction": (BETA, True),
    "LoggingAlphaOptions": (ALPHA, False),
    "LoggingBetaOptions": (BETA, True),
    "MultiClusterService": (ALPHA, False),
    "MultiplePodTemplatesScheduling": (ALPHA, False),
    "PriorityBasedScheduling": (ALPHA, False),
    "PropagateDeps": (BETA, True),
    "PropagationPolicyPreemption": (ALPHA, False),
    "ResourceQuotaEstimate": (ALPHA, False),
    "SchedulingOvercommitProtection": (ALPHA, False),
    "StatefulFailoverInjection": (ALPHA, False),
    "WorkloadAffinity": (ALPHA, False),
}


def parse_feature_gates(text: str, known: dict[str, tuple[str, bool]] | None = None) -> dict[str, bool]:
    """One --feature-gates value, as component-base's featuregate.Set reads it; an unknown
    gate is refused with its wording."""
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


@dataclass
class FeatureGates:
    explicit: dict[str, bool] = field(default_factory=dict)

    def merge(self, gates: dict[str, bool]) -> None:
        self.explicit.update(gates)  # a later --feature-gates overrides an earlier one per gate

    def resolved(self) -> dict[str, bool]:
        """Every gate's value (AllAlpha/AllBeta themselves left out)."""
        return {name: self.enabled(name) for name in FEATURE_GATES if name not in ALL_GATES}

    def enabled(self, name: str) -> bool:
        if name in self.explicit:
            return self.explicit[name]
        stage, default = FEATURE_GATES[name]
        all_flag = "AllAlpha" if stage == ALPHA else "AllBeta"
        if name not in ("AllAlpha", "AllBeta") and all_flag in self.explicit:
            return self.explicit[all_flag]
        return default


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


# --- logging options -------------------------------------------------------------------------


@dataclass
class LogOptions:
    """component-base's logging configuration plus klog's own flags, as parsed."""

    format: str = "text"
    verbosity: int = 0
    vmodule: list[tuple[str, int]] = field(default_factory=list)
    flush_frequency: float = 5.0
    split_stream: bool = False
    info_buffer_size: int = 0
    # klog
    logtostderr: bool = True
    alsologtostderr: bool = False
    log_dir: str = ""
    log_file: str = ""
    log_file_max_size_mb: int = 1800
    stderrthreshold: int = 2  # ERROR
    alsologtostderrthreshold: int = 0  # INFO (klog v2.140, Karmada v1.19)
    legacy_stderr_threshold: bool = True  # --legacy_stderr_threshold_behavior (klog v2.140, Karmada v1.19)
    skip_headers: bool = False
    add_dir_header: bool = False
    backtrace_at: tuple[str, int] | None = None

    def validate(self, gates: FeatureGates, *, text_split: bool, text_buffer: int, json_split: bool,
                 json_buffer: int) -> list[str]:
        """component-base's ValidateAndApply: the format must exist and be allowed by its gate,
        split streams and buffers need LoggingAlphaOptions. Returns error strings naming fields."""
        errors = []
        if self.format not in ("text", "json"):
            errors.append(f'--logging-format: format: Invalid value: "{self.format}": Unsupported log format')
        elif self.format == "json" and not gates.enabled("LoggingBetaOptions"):
            errors.append("--logging-format: format: Forbidden: Log format json is disabled, "
                          "see LoggingBetaOptions feature")
        if not gates.enabled("LoggingAlphaOptions"):
            for given, flag, name in (
                (text_split, "--log-text-split-stream", "options.text.splitStream"),
                (text_buffer, "--log-text-info-buffer-size", "options.text.infoBufferSize"),
                (json_split, "--log-json-split-stream", "options.json.splitStream"),
                (json_buffer, "--log-json-info-buffer-size", "options.json.infoBufferSize"),
            ):
                if given:
                    errors.append(f"{flag}: {name}: Forbidden: Feature LoggingAlphaOptions is disabled")
        if self.format == "json":
            self.split_stream, self.info_buffer_size = json_split, json_buffer
        else:
            self.split_stream, self.info_buffer_size = text_split, text_buffer
        return errors
