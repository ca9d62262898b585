"""Devices served through Dynamic Resource Allocation: what Karmada's Cluster status cannot show. Pure.

    served_resources(nodes, counts) -> (DraResource, ...)   one member, from its objects
    invisible(resources, allocatable, names) -> those of `names` the member serves only through DRA
    member_blind(member, names)            the same for a members.Member
    annotation(resources), comment_lines(member, resources, failed)   karmada-place summarize

Kubernetes 1.36 lets a DeviceClass declare `spec.extendedResourceName` (KEP-5004): a pod asking
for `nvidia.com/gpu` on a node whose status.allocatable has none of it is served from the
node's devices of that class, published by a DRA driver in ResourceSlices. Karmada's cluster
status controller sums node allocatable only, so such devices are in no Cluster's
status.resourceSummary: Karmada's general estimator (both its paths) and Karmada's own
karmada-scheduler-estimator count 0 of them. Counts come from `estimator.api.count_dra_devices`,
the estimator's own rules; a node counts for a name only when its allocatable has none of it
(otherwise its device plugin serves the name), as the estimator decides.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from estimator.api import DraCounts, ResourceListError, parse_resource_list

# Why Karmada counts none of a resource served only through DRA (explanations end with it).
BLIND = (
    "no node advertises it in status.allocatable, so the Cluster's resourceSummary has none and Karmada's "
    "general estimator counts 0"
)


@dataclass(frozen=True)
class DraResource:
    """One resource name a member serves through DRA, over the nodes that do not advertise it."""

    name: str
    device_class: str
    nodes: int  # nodes with at least one device for it
    devices: int
    free: int  # devices no claim holds
    largest_free: int  # the most free on one node

    def text(self) -> str:
        where = "1 node" if self.nodes == 1 else f"{self.nodes} nodes"
        return (
            f"{self.devices} device(s) on {where}, {self.free} free, at most {self.largest_free} on one node, "
            f"DeviceClass {self.device_class}"
        )


def _advertised(node: Mapping) -> Mapping[str, int]:
    try:
        return parse_resource_list(
            (node.get("status") or {}).get("allocatable") or None, "status.allocatable", lambda name: True
        )
    except ResourceListError:
        return {}  # the member loader has already refused a node like this


def served_resources(nodes: Sequence[Mapping], counts: DraCounts) -> tuple[DraResource, ...]:
    """Per resource name (sorted), the devices on member nodes whose allocatable has none of it.
    Slices of nodes the member does not have count nowhere, as in the estimator."""
    totals: dict[str, list[int]] = {}  # name -> [nodes, devices, free, largest free]
    for node in nodes:
        name = (node.get("metadata") or {}).get("name", "")
        per_name = counts.nodes.get(name)
        if not per_name:
            continue
        advertised = _advertised(node)
        for resource, (devices, allocated) in per_name.items():
            if advertised.get(resource, 0) > 0 or devices <= 0:
                continue
            free = max(devices - allocated, 0)
            entry = totals.setdefault(resource, [0, 0, 0, 0])
            entry[0] += 1
            entry[1] += devices
            entry[2] += free
            entry[3] = max(entry[3], free)
    return tuple(DraResource(name, counts.served.get(name, ""), *entry) for name, entry in sorted(totals.items()))


def invisible(
    dra: Sequence[DraResource], allocatable: Mapping[str, int], names: Collection[str]
) -> tuple[DraResource, ...]:
    """The resources among `names` served through DRA where the Cluster's allocatable has none:
    Karmada's general estimator answers 0 sets for a job asking any of them."""
    return tuple(r for r in dra if r.name in names and allocatable.get(r.name, 0) <= 0)


def member_blind(member: Any, names: Collection[str]) -> tuple[DraResource, ...]:
    """invisible() for a members.Member: its DRA view against its Cluster summary (none: nothing)."""
    summary = member.summary
    return invisible(member.dra, summary.allocatable if summary is not None else {}, names)


# karmada-place summarize writes a member's DRA view on its Cluster object under this key
# (JSON: {name: {"devices", "free", "nodes", "deviceClass"}}); Karmada ignores it.
ANNOTATION = "karmada-place/dra-served"


def annotation(resources: Sequence[DraResource]) -> str:
    return json.dumps(
        {
            r.name: {"devices": r.devices, "free": r.free, "nodes": r.nodes, "deviceClass": r.device_class}
            for r in resources
        },
        sort_keys=True,
    )


def comment_lines(member: str, resources: Sequence[DraResource], failed: Iterable[str] = ()) -> list[str]:
    """`# ` lines for summarize's YAML: the DRA view beside the node-allocatable summary."""
    lines = []
    if resources:
        lines.append(f"# {member} serves through DRA (devices in ResourceSlices) what its resourceSummary cannot show,")
        lines.append("# as Karmada's cluster status controller sums node allocatable only (Karmada counts 0 of these):")
        lines += [f"#   {r.name}: {r.text()}" for r in resources]
    lines += [
        f"# {member}: DeviceClass {name} has a selector that cannot be evaluated: none of its devices are counted"
        for name in sorted(failed)
    ]
    return lines
