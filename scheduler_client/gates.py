"""Karmada feature gates the placement depends on, parsed like --feature-gates. Pure.

As component-base's feature gates: `AllAlpha=true|false` and `AllBeta=true|false` set every
alpha (beta) gate that the same flag does not name explicitly, whatever the order.
"""

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


ALPHA, BETA = "Alpha", "Beta"
ALL_ALPHA, ALL_BETA = "AllAlpha", "AllBeta"
# Pre-release stage per gate (Karmada's pkg/features); AllAlpha / AllBeta act on these.
STAGES: Mapping[str, str] = {
    "Failover": BETA,
    "GracefulEviction": BETA,
    "PropagateDeps": BETA,
    RESOURCE_MODELING: BETA,
    "PropagationPolicyPreemption": ALPHA,
    "MultiClusterService": ALPHA,
    "ResourceQuotaEstimate": ALPHA,
    "StatefulFailoverInjection": ALPHA,
    "PriorityBasedScheduling": BETA,  # on by default at the v1.19 line, alpha (off) up to v1.18
    "FederatedQuotaEnforcement": ALPHA,
    "LoggingAlphaOptions": ALPHA,
    "LoggingBetaOptions": BETA,
    "ContextualLogging": BETA,
    MULTIPLE_POD_TEMPLATES: ALPHA,
    "ControllerPriorityQueue": BETA,
    "WorkloadAffinity": ALPHA,
    OVERCOMMIT_PROTECTION: ALPHA,
}


class GateError(ValueError):
    pass


def parse_gates(text: str) -> tuple[dict[str, bool], frozenset[str]]:
    """"A=true,B=false" -> (every gate's value, the gates set explicitly); GateError names the bad one."""
    gates = dict(DEFAULTS)
    explicit: dict[str, bool] = {}
    stages: dict[str, bool] = {}
    for item in filter(None, (part.strip() for part in (text or "").split(","))):
        name, sep, value = item.partition("=")
        name, value = name.strip(), value.strip().lower()
        if not sep or value not in ("true", "false"):
            raise GateError(f"{item!r}: expected Name=true or Name=false")
        if name in (ALL_ALPHA, ALL_BETA):
            stages[ALPHA if name == ALL_ALPHA else BETA] = value == "true"
            continue
        if name not in DEFAULTS:
            known = ", ".join(sorted([*DEFAULTS, ALL_ALPHA, ALL_BETA]))
            raise GateError(f"unknown feature gate {name!r} (known: {known})")
        explicit[name] = value == "true"
    for name, stage in STAGES.items():
        if stage in stages and name not in explicit:
            gates[name] = stages[stage]
    gates.update(explicit)
    return gates, frozenset(explicit)
