"""What an estimate is asked about, free of wire types and Kubernetes objects.

Frozen (hashable) dataclasses, so a NodeClaim can key a per-snapshot mask cache.
`convert.py` builds these from protobuf messages; the placement client builds them from
job manifests. Plugins and kernels only ever see these types.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# How the node-resource plugin packs component sets: `best` never fewer than Karmada's first-fit.
PACKING_MODES = ("best", "first-fit")

# Node selector operators (k8s.io/api/core/v1 NodeSelectorOperator).
OP_IN = "In"
OP_NOT_IN = "NotIn"
OP_EXISTS = "Exists"
OP_DOES_NOT_EXIST = "DoesNotExist"
OP_GT = "Gt"
OP_LT = "Lt"
NODE_SELECTOR_OPERATORS = (OP_IN, OP_NOT_IN, OP_EXISTS, OP_DOES_NOT_EXIST, OP_GT, OP_LT)

# Toleration operators and taint effects.
TOLERATION_EQUAL = "Equal"
TOLERATION_EXISTS = "Exists"
TOLERATION_OPERATORS = (TOLERATION_EQUAL, TOLERATION_EXISTS)
NO_SCHEDULE = "NoSchedule"
PREFER_NO_SCHEDULE = "PreferNoSchedule"
NO_EXECUTE = "NoExecute"
TAINT_EFFECTS = (NO_SCHEDULE, PREFER_NO_SCHEDULE, NO_EXECUTE)

# Unique per node: filters and the cache keep it out of NodeClass (see ClusterSnapshot.hostnames).
HOSTNAME_LABEL = "kubernetes.io/hostname"
# Pod phases after which a pod holds no resources (the scheduler and Karmada skip these pods).
TERMINAL_POD_PHASES = ("Succeeded", "Failed")


@dataclass(frozen=True)
class NodeSelectorRequirement:
    key: str
    operator: str
    values: tuple[str, ...] = ()


@dataclass(frozen=True)
class NodeSelectorTerm:
    """Expressions and fields are ANDed; a term with neither matches nothing."""

    match_expressions: tuple[NodeSelectorRequirement, ...] = ()
    match_fields: tuple[NodeSelectorRequirement, ...] = ()


@dataclass(frozen=True)
class Toleration:
    key: str = ""
    operator: str = ""  # "" means Equal
    value: str = ""
    effect: str = ""  # "" matches every effect
    toleration_seconds: int | None = None


@dataclass(frozen=True)
class Taint:
    key: str
    value: str = ""
    effect: str = NO_SCHEDULE


@dataclass(frozen=True)
class NodeClass:
    """Nodes that no filter can tell apart: same labels, taints and cordon state."""

    labels: tuple[tuple[str, str], ...]
    taints: tuple[Taint, ...]
    unschedulable: bool

    def label_dict(self) -> dict[str, str]:
        return dict(self.labels)


@dataclass(frozen=True)
class NodeClaim:
    """Where a replica may run.

    `affinity_terms` is None when there is no required node affinity (also when it
    travels as zero terms, which Kubernetes treats as no constraint); terms are ORed.
    """

    node_selector: tuple[tuple[str, str], ...] = ()
    affinity_terms: tuple[NodeSelectorTerm, ...] | None = None
    tolerations: tuple[Toleration, ...] = ()

    @property
    def is_empty(self) -> bool:
        return not self.node_selector and self.affinity_terms is None and not self.tolerations


NO_CLAIM = NodeClaim()


@dataclass(frozen=True)
class ReplicaShape:
    """Per-replica requirements: requests are counted resources only, each > 0.

    Amounts are int64 units: cpu in millicores, everything else in whole units.
    A replica always takes one pod slot, so `pods` never appears in `requests`.
    """

    requests: tuple[tuple[str, int], ...] = ()
    claim: NodeClaim = NO_CLAIM
    namespace: str = ""
    priority_class: str = ""

    def request(self, name: str) -> int:
        for key, amount in self.requests:
            if key == name:
                return amount
        return 0


@dataclass(frozen=True)
class Component:
    name: str
    replicas: int
    shape: ReplicaShape = field(default_factory=ReplicaShape)


@dataclass(frozen=True)
class AssumedWorkload:
    """An in-flight set already sent to this member; its pods may not be bound yet."""

    namespace: str
    components: tuple[Component, ...]


@dataclass(frozen=True)
class ReplicasQuery:
    """MaxAvailableReplicas: `shape` is None when the request carried no requirements."""

    shape: ReplicaShape | None
    assumed: tuple[AssumedWorkload, ...] = ()


@dataclass(frozen=True)
class ComponentSetsQuery:
    """MaxAvailableComponentSets."""

    components: tuple[Component, ...]
    namespace: str = ""
    assumed: tuple[AssumedWorkload, ...] = ()


@dataclass(frozen=True)
class WorkloadRef:
    """GetUnschedulableReplicas: which workload, and how long a pod must have been stuck."""

    api_version: str
    kind: str
    namespace: str
    name: str
    threshold_seconds: float = 0.0
