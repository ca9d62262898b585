"""The job shapes the benchmark asks about, as estimator.core.model ComponentSetsQuery.

Amounts are model units: cpu in millicores, memory in bytes, GPUs whole. Namespace
`ml-team` (its ResourceQuota in the synthetic members is generous, never the bound).
"""

from __future__ import annotations

from estimator.core.model import (
    OP_IN,
    Component,
    ComponentSetsQuery,
    NodeClaim,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    ReplicaShape,
    Toleration,
)

from benchmarks.members import GPU, POOL_LABEL, PRODUCT_LABEL

MI = 2**20
GI = 2**30
NAMESPACE = "ml-team"


def _shape(cpu_m: int, memory: int, gpus: int = 0, claim: NodeClaim = NodeClaim()) -> ReplicaShape:
    requests = [("cpu", cpu_m), ("memory", memory)]
    if gpus:
        requests.append((GPU, gpus))
    return ReplicaShape(tuple(sorted(requests)), claim, NAMESPACE)


def _query(*components: tuple[str, int, ReplicaShape]) -> ComponentSetsQuery:
    return ComponentSetsQuery(tuple(Component(n, r, s) for n, r, s in components), NAMESPACE)


# Where the affinity job may run: tolerates the inference pool's taint, must land in
# us-east-1 zones a or b on an L4 or L40S node (nodeSelector on the pool label too).
_AFFINITY = NodeClaim(
    node_selector=((POOL_LABEL, "inference"),),
    affinity_terms=(
        NodeSelectorTerm(
            match_expressions=(
                NodeSelectorRequirement("topology.kubernetes.io/zone", OP_IN, ("us-east-1a", "us-east-1b")),
                NodeSelectorRequirement(PRODUCT_LABEL, OP_IN, ("NVIDIA-L4", "NVIDIA-L40S")),
            )
        ),
    ),
    tolerations=(Toleration("dedicated", "Equal", "inference", "NoSchedule"),),
)
_AFFINITY_MASTER = NodeClaim(tolerations=_AFFINITY.tolerations)

SHAPES: dict[str, tuple[str, ComponentSetsQuery]] = {
    "pytorch-small": (
        "PyTorchJob: master 1 x {1 cpu, 2Gi}; worker 2 x {4 cpu, 16Gi, 1 GPU}",
        _query(("master", 1, _shape(1000, 2 * GI)), ("worker", 2, _shape(4000, 16 * GI, 1))),
    ),
    "pytorch-big": (
        "PyTorchJob: master 1 x {2 cpu, 8Gi}; worker 4 x {12 cpu, 96Gi, 3 GPU}",
        _query(("master", 1, _shape(2000, 8 * GI)), ("worker", 4, _shape(12000, 96 * GI, 3))),
    ),
    "flink": (
        "FlinkDeployment: jobmanager 1 x {1 cpu, 2Gi}; taskmanager 6 x {2 cpu, 4Gi}",
        _query(("jobmanager", 1, _shape(1000, 2 * GI)), ("taskmanager", 6, _shape(2000, 4 * GI))),
    ),
    "ray": (
        "RayCluster: head 1 x {2 cpu, 8Gi}; cpu-group 4 x {4 cpu, 16Gi}; gpu-group 2 x {8 cpu, 32Gi, 2 GPU}",
        _query(
            ("head", 1, _shape(2000, 8 * GI)),
            ("cpu-group", 4, _shape(4000, 16 * GI)),
            ("gpu-group", 2, _shape(8000, 32 * GI, 2)),
        ),
    ),
    "deployment": (
        "Deployment-like: web 3 x {500m cpu, 512Mi}",
        _query(("web", 3, _shape(500, 512 * MI))),
    ),
    "affinity-tolerations": (
        "PyTorchJob on the tainted inference pool: master 1 x {1 cpu, 2Gi} (toleration); worker 2 x "
        "{4 cpu, 16Gi, 1 GPU} (toleration, nodeSelector pool=inference, affinity zone In us-east-1a/b, "
        "product In L4/L40S)",
        _query(("master", 1, _shape(1000, 2 * GI, 0, _AFFINITY_MASTER)), ("worker", 2, _shape(4000, 16 * GI, 1, _AFFINITY))),
    ),
}

TARGET_SHAPE = "pytorch-small"  # the targets in docs/scenario.md are about this one
