"""Karmada's room: what Karmada itself does with a job, reproduced. Pure (numpy for first-fit).

Everything here follows Karmada's code (the module docstrings cite it) and nothing here is
this tool's own opinion: no recommendation, no explanation from member snapshots, no I/O.
The rest of scheduler_client (placement, doctor, report, the CLI and its I/O) imports this
room only through the names below, never the modules behind them, and nothing here imports
the tool's modules; only the vocabulary both rooms speak (interpreters: the job and its
components; dra: devices Karmada cannot see; fields, units). The import-linter contracts in
pyproject.toml hold both directions.

    policy.py        PropagationPolicy / ClusterPropagationPolicy with Karmada's admission
                     defaults; the policy Karmada's resource detector picks for a job
    gates.py         Karmada's feature gates as the scheduler reads them (--feature-gates)
    cluster.py       Cluster: what this room reads of a member (a protocol the tool's view meets)
    clusterfilter.py the scheduler's filter plugins: ClusterAffinity (with overflow groups),
                     TaintToleration, APIEnablement
    resourcemodels.py  resource models: defaults, standardisation, grading, model nodes
    clusterstatus.py the cluster status controller: resourceSummary and allocatableModelings
                     computed from a member's nodes and pods
    general.py       the general estimator: resource-summary and resource-model paths
    minimum.py       per member, the minimum over estimators that answered (not -1)
    selection.py     Karmada's order of feasible members; selectClustersByAvailableResource
    scheduler.py     the scheduler path: filter -> rank -> select -> explain, per
                     clusterAffinities term; Karmada's targets (v1.19 components) or its error

Names, by concept:
    policy: Policy, Placement, SpreadConstraint, POLICY_KINDS, PolicyError, parse_policy,
        matching_policy
    gates: MULTIPLE_POD_TEMPLATES, RESOURCE_MODELING, OVERCOMMIT_PROTECTION, DEFAULT_GATES,
        parse_gates, GateError
    filters: Cluster, affinity_rejects, taints_reject, api_rejects, overflow_order
    cluster status and models: ResourceSummary, resource_summary, allocatable_modelings,
        split_objects, StatusError; ResourceModel, ModelRange, GradeCount, ModelError,
        DEFAULT_MODELS, described_names, standardize
    general estimator: Estimate, UNKNOWN, summary_sets, model_sets, requested_names,
        extended_names, set_demand, memory_like
    minimum over estimators: merge
    order: Candidate, karmada_order
    the scheduler: outcome, KarmadaInput, KarmadaOutcome, AccurateReply, Target,
        TargetComponent, target_components, RANK_SETS, PATH_A, PATH_B, PATH_C
"""

from __future__ import annotations

from scheduler_client.karmada.cluster import Cluster
from scheduler_client.karmada.clusterfilter import affinity_rejects, api_rejects, overflow_order, taints_reject
from scheduler_client.karmada.clusterstatus import StatusError, allocatable_modelings, resource_summary, split_objects
from scheduler_client.karmada.gates import (
    DEFAULT_GATES,
    MULTIPLE_POD_TEMPLATES,
    OVERCOMMIT_PROTECTION,
    RESOURCE_MODELING,
    GateError,
    parse_gates,
)
from scheduler_client.karmada.general import (
    UNKNOWN,
    Estimate,
    ResourceSummary,
    extended_names,
    memory_like,
    model_sets,
    requested_names,
    set_demand,
    summary_sets,
)
from scheduler_client.karmada.minimum import merge
from scheduler_client.karmada.policy import (
    POLICY_KINDS,
    Placement,
    Policy,
    PolicyError,
    SpreadConstraint,
    matching_policy,
    parse_policy,
)
from scheduler_client.karmada.resourcemodels import (
    DEFAULT_MODELS,
    GradeCount,
    ModelError,
    ModelRange,
    ResourceModel,
    described_names,
    standardize,
)
from scheduler_client.karmada.scheduler import (
    PATH_A,
    PATH_B,
    PATH_C,
    RANK_SETS,
    AccurateReply,
    KarmadaInput,
    KarmadaOutcome,
    Target,
    TargetComponent,
    outcome,
    target_components,
)
from scheduler_client.karmada.selection import Candidate, karmada_order

__all__ = [
    "AccurateReply",
    "Candidate",
    "Cluster",
    "DEFAULT_GATES",
    "DEFAULT_MODELS",
    "Estimate",
    "GateError",
    "GradeCount",
    "KarmadaInput",
    "KarmadaOutcome",
    "MULTIPLE_POD_TEMPLATES",
    "ModelError",
    "ModelRange",
    "OVERCOMMIT_PROTECTION",
    "PATH_A",
    "PATH_B",
    "PATH_C",
    "POLICY_KINDS",
    "Placement",
    "Policy",
    "PolicyError",
    "RANK_SETS",
    "RESOURCE_MODELING",
    "ResourceModel",
    "ResourceSummary",
    "SpreadConstraint",
    "StatusError",
    "Target",
    "TargetComponent",
    "UNKNOWN",
    "affinity_rejects",
    "allocatable_modelings",
    "api_rejects",
    "described_names",
    "extended_names",
    "karmada_order",
    "matching_policy",
    "memory_like",
    "merge",
    "model_sets",
    "outcome",
    "overflow_order",
    "parse_gates",
    "parse_policy",
    "requested_names",
    "resource_summary",
    "set_demand",
    "split_objects",
    "standardize",
    "summary_sets",
    "taints_reject",
    "target_components",
]
