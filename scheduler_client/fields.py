"""Reading fields of a decoded YAML/JSON object, with errors that name the field. Pure.

The one implementation behind the Cluster, policy and job readers: each raises its own
FieldError subclass (ClusterError, PolicyError, InterpretError) so callers can tell which
file kind was wrong, while the checks and their wording stay the same everywhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class FieldError(ValueError):
    """A value that cannot be used; `field` is its path ("spec.placement.spreadConstraints[0]")."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


def mapping(value: Any, field: str, error: type[FieldError] = FieldError) -> Mapping:
    """`value` if it is an object; {} when absent (null); `error` naming `field` otherwise."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise error(field, f"must be an object, got {type(value).__name__}")
    return value


def sequence(value: Any, field: str, error: type[FieldError] = FieldError) -> list:
    """`value` if it is a list; [] when absent (null); `error` naming `field` otherwise."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise error(field, f"must be a list, got {type(value).__name__}")
    return value
