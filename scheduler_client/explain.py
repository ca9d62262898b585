"""Why a member cannot host a component set, computed from its snapshot. Pure (numpy only).

Per component, over the nodes that pass its filters: the largest free amount of each
requested resource on ONE node ("no node has 3 free nvidia.com/gpu for component worker;
largest free on one node: 2"), free pod slots, and how many replicas those nodes fit at
once. When every component fits on its own, the set-level demand against the free total.
Filter failures are broken down by cause (cordon, taint, nodeSelector, affinity).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np

from estimator.api import (
    NO_EXECUTE,
    NO_SCHEDULE,
    UNSCHEDULABLE_TAINT,
    ClusterSnapshot,
    Component,
    NodeClaim,
    node_passes,
    taints_tolerated,
    tolerates,
)
from scheduler_client.karmada import set_demand
from scheduler_client.units import human

# Breaking filter failures down is per node; past this many nodes a sample is enough.
_BREAKDOWN_NODES = 20_000


def _free(snapshot: ClusterSnapshot, mask: np.ndarray, name: str) -> np.ndarray:
    column = snapshot.column(name)
    if column is None:
        return np.zeros(int(mask.sum()), dtype=np.int64)
    return snapshot.available[mask, column]


def _filter_breakdown(snapshot: ClusterSnapshot, claim: NodeClaim) -> str:
    causes: Counter[str] = Counter()
    for i in range(min(snapshot.num_nodes, _BREAKDOWN_NODES)):
        node_class = snapshot.classes[int(snapshot.node_class[i])]
        labels = snapshot.node_labels(i)
        if node_passes(labels, node_class.taints, node_class.unschedulable, snapshot.node_names[i], claim):
            continue
        if node_class.unschedulable and not tolerates(claim.tolerations, UNSCHEDULABLE_TAINT):
            causes["cordoned"] += 1
        elif not taints_tolerated(node_class.taints, claim.tolerations):
            bad = next(
                t
                for t in node_class.taints
                if t.effect in (NO_SCHEDULE, NO_EXECUTE) and not tolerates(claim.tolerations, t)
            )
            causes[f"taint {bad.key}:{bad.effect} not tolerated"] += 1
        elif any(labels.get(k) != v for k, v in claim.node_selector):
            key, value = next((k, v) for k, v in claim.node_selector if labels.get(k) != v)
            causes[f"nodeSelector {key}={value} not matched"] += 1
        else:
            causes["required node affinity not matched"] += 1
    return "; ".join(f"{count} node{'s' if count > 1 else ''}: {cause}" for cause, count in causes.most_common())


def _fit_per_node(snapshot: ClusterSnapshot, mask: np.ndarray, component: Component) -> np.ndarray:
    fit = snapshot.available[mask, 0].copy()  # pod slots
    for name, amount in component.shape.requests:
        fit = np.minimum(fit, _free(snapshot, mask, name) // amount)
    return fit


def component_blockers(snapshot: ClusterSnapshot, components: Sequence[Component]) -> list[str]:
    """Reasons, per component, that no placement of even one set exists; [] if none found."""
    if snapshot.num_nodes == 0:
        return ["the member has no nodes"]
    reasons: list[str] = []
    for c in components:
        if c.replicas <= 0:
            continue
        mask = snapshot.node_mask(c.shape.claim)
        if not mask.any():
            reasons.append(
                f"no node passes component {c.name}'s node filters ({_filter_breakdown(snapshot, c.shape.claim)})"
            )
            continue
        short = False
        for name, amount in c.shape.requests:
            largest = int(_free(snapshot, mask, name).max())
            if largest < amount:
                short = True
                reasons.append(
                    f"no node has {human(name, amount)} free {name} for component {c.name}; "
                    f"largest free on one node: {human(name, largest)}"
                )
        if short:
            continue
        if int(snapshot.available[mask, 0].max()) < 1:
            reasons.append(f"no node that component {c.name} may use has a free pod slot")
            continue
        fit = _fit_per_node(snapshot, mask, c)
        if int(fit.sum()) < c.replicas:
            names = np.asarray(snapshot.node_names, dtype=object)[mask]
            holders = ", ".join(f"{n}: {int(f)}" for n, f in zip(names, fit, strict=True) if f > 0)
            reasons.append(
                f"component {c.name} needs {c.replicas} replicas at once; the nodes it may use fit "
                f"{int(fit.sum())} ({holders})"
            )
    if reasons:
        return reasons
    union = np.zeros(snapshot.num_nodes, dtype=bool)
    for c in components:
        union |= snapshot.node_mask(c.shape.claim)
    pods = sum(c.replicas for c in components)
    if int(snapshot.available[union, 0].sum()) < pods:
        reasons.append(
            f"one set is {pods} pods; the nodes its components may use have "
            f"{int(snapshot.available[union, 0].sum())} free pod slots in total"
        )
    for name, need in sorted(set_demand(components).items()):
        total = int(_free(snapshot, union, name).sum())
        if total < need:
            reasons.append(
                f"one set needs {human(name, need)} {name}; the nodes its components may use have "
                f"{human(name, total)} free in total"
            )
    return reasons
