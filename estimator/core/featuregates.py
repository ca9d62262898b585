"""Karmada's feature gates: every gate its binaries accept, with stage and default, and how
a set of explicit values resolves (AllAlpha / AllBeta). Pure.

The syntax of a `--feature-gates` value (`A=true,B=false`, Go booleans) is read by
estimator.goflags.parse_feature_gates, against the table here; the placement client
(scheduler_client/karmada/gates.py) uses both, through estimator.api.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# Every gate Karmada's binaries accept in v1.16.0 .. v1.19.0-rc.0 and its newest stage and
# default (pkg/features). AllAlpha/AllBeta set every alpha/beta gate not named explicitly.
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
