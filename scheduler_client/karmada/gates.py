"""Karmada feature gates the placement depends on, parsed like --feature-gates. Pure.

The table of Karmada's gates and its parser are the estimator's (estimator/core/featuregates.py,
estimator/goflags.py), so both programs accept the same gates with the same syntax:
`AllAlpha=true|false` and `AllBeta=true|false` set every alpha (beta) gate that the flag does
not name explicitly, whatever the order; values are Go booleans (true, false, 1, 0, t, F, TRUE...).
"""

from __future__ import annotations

from collections.abc import Mapping

from estimator.api import (
    ALL_GATES,
    FEATURE_GATES,
    FeatureGates,
    FlagValueError,
    UnknownFeatureGate,
    parse_feature_gates,
)

MULTIPLE_POD_TEMPLATES = "MultiplePodTemplatesScheduling"
RESOURCE_MODELING = "CustomizedClusterResourceModeling"
OVERCOMMIT_PROTECTION = "SchedulingOvercommitProtection"

# Karmada's gates and their defaults.
DEFAULT_GATES: Mapping[str, bool] = {
    name: default for name, (_, default) in FEATURE_GATES.items() if name not in ALL_GATES
}


class GateError(ValueError):
    pass


def parse_gates(text: str) -> tuple[dict[str, bool], frozenset[str]]:
    """ "A=true,B=false" -> (every gate's value, the gates set explicitly); GateError names the bad one."""
    try:
        explicit = parse_feature_gates(text or "")
    except UnknownFeatureGate as unknown:
        known = ", ".join(sorted(FEATURE_GATES))
        raise GateError(f"unknown feature gate {unknown.name!r} (known: {known})") from None
    except FlagValueError as error:
        raise GateError(str(error)) from None
    gates = FeatureGates()
    gates.merge(explicit)
    return gates.resolved(), frozenset(name for name in explicit if name not in ALL_GATES)
