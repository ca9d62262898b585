"""Karmada feature gates the placement depends on, parsed like --feature-gates. Pure."""

from __future__ import annotations

from typing import Mapping

MULTIPLE_POD_TEMPLATES = "MultiplePodTemplatesScheduling"
RESOURCE_MODELING = "CustomizedClusterResourceModeling"
OVERCOMMIT_PROTECTION = "SchedulingOvercommitProtection"

# Karmada's gates and their defaults (pkg/features/features.go at the v1.19 line).
DEFAULTS: Mapping[str, bool] = {
    "Failover": False,
    "GracefulEviction": True,
    "PropagateDeps": True,
    RESOURCE_MODELING: True,
    "PropagationPolicyPreemption": False,
    "MultiClusterService": False,
    "ResourceQuotaEstimate": False,
    "StatefulFailoverInjection": False,
    "PriorityBasedScheduling": True,
    "FederatedQuotaEnforcement": False,
    "LoggingAlphaOptions": False,
    "LoggingBetaOptions": True,
    "ContextualLogging": True,
    MULTIPLE_POD_TEMPLATES: False,
    "ControllerPriorityQueue": True,
    "WorkloadAffinity": False,
    OVERCOMMIT_PROTECTION: False,
}


class GateError(ValueError):
    pass


def parse_gates(text: str) -> tuple[dict[str, bool], frozenset[str]]:
    """"A=true,B=false" -> (every gate's value, the gates set explicitly); GateError names the bad one."""
    gates = dict(DEFAULTS)
    explicit = set()
    for item in filter(None, (part.strip() for part in (text or "").split(","))):
        name, sep, value = item.partition("=")
        name, value = name.strip(), value.strip().lower()
        if not sep or value not in ("true", "false"):
            raise GateError(f"{item!r}: expected Name=true or Name=false")
        if name not in DEFAULTS:
            raise GateError(f"unknown feature gate {name!r} (known: {', '.join(sorted(DEFAULTS))})")
        gates[name] = value == "true"
        explicit.add(name)
    return gates, frozenset(explicit)
