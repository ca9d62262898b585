"""Core model queries (estimator.api) -> estimator protobuf requests, for our placement client and tests.

The reverse of estimator/service/convert.py: convert(wire(query)) == query for every query the
wire can carry. What it cannot carry, by the protocol's design:
- one namespace per set: a component's `shape.namespace` is not sent; the receiver gives
  every component the request's (or assumed workload's) namespace;
- zero affinity terms: they travel as empty bytes, which means no constraint (None);
- requests are sent as given; the receiver drops `pods`, uncounted names and amounts <= 0.

Requirements are written in both of Karmada's forms, as its v1.18 scheduler does: the
original message fields (resourceRequest, nodeAffinity, tolerations), which v1.16/v1.17
estimators read, and the *Bytes fields, which v1.19 reads; v1.18 estimators prefer the
bytes. Both forms carry the same objects, so any reader sees the same requirements.
Kubernetes objects inside the bytes fields are encoded as Go's corev1 Marshal does
(every string field written, even when empty), so the bytes match what karmada-scheduler
sends. Quantities use a canonical string: cpu in millicores ("1500m", or "2" when whole),
everything else as a plain integer.
"""

from __future__ import annotations

from collections.abc import Iterable

from estimator import api
from estimator.pb import estimator_pb2 as pb
from estimator.pb import k8s_core_pb2 as core
from estimator.pb import k8s_resource_pb2 as k8s_resource

__all__ = ["component_sets_request", "quantity_string", "replicas_request", "unschedulable_request"]

_NANOSECONDS_PER_SECOND = 10**9


def component_sets_request(cluster: str, query: api.ComponentSetsQuery) -> pb.MaxAvailableComponentSetsRequest:
    return pb.MaxAvailableComponentSetsRequest(
        cluster=cluster,
        components=_components(query.components),
        namespace=query.namespace,
        assumedWorkloads=_assumed_workloads(query.assumed),
    )


def replicas_request(cluster: str, query: api.ReplicasQuery) -> pb.MaxAvailableReplicasRequest:
    request = pb.MaxAvailableReplicasRequest(cluster=cluster, assumedWorkloads=_assumed_workloads(query.assumed))
    if query.shape is not None:  # None travels as an unset replicaRequirements
        shape = query.shape
        requirements = request.replicaRequirements
        requirements.SetInParent()
        requirements.namespace = shape.namespace
        requirements.priorityClassName = shape.priority_class
        _fill_requirements(requirements, shape)
    return request


def unschedulable_request(cluster: str, ref: api.WorkloadRef) -> pb.UnschedulableReplicasRequest:
    return pb.UnschedulableReplicasRequest(
        cluster=cluster,
        resource=pb.ObjectReference(apiVersion=ref.api_version, kind=ref.kind, namespace=ref.namespace, name=ref.name),
        unschedulableThreshold=round(ref.threshold_seconds * _NANOSECONDS_PER_SECOND),  # a Go time.Duration
    )


def quantity_string(name: str, amount: int) -> str:
    """The canonical quantity string of an int64 amount in the model's units."""
    if api.uses_milli_units(name):
        return str(amount // 1000) if amount % 1000 == 0 else f"{amount}m"
    return str(amount)


# ---------------------------------------------------------------------------------------


def _assumed_workloads(workloads: Iterable[api.AssumedWorkload]) -> list[pb.AssumedWorkload]:
    return [pb.AssumedWorkload(namespace=w.namespace, components=_components(w.components)) for w in workloads]


def _components(components: Iterable[api.Component]) -> list[pb.Component]:
    converted = []
    for component in components:
        message = pb.Component(name=component.name, replicas=component.replicas)
        # Always present, as the Go scheduler sends it, even when it asks for nothing.
        requirements = message.replicaRequirements
        requirements.SetInParent()
        requirements.priorityClassName = component.shape.priority_class
        _fill_requirements(requirements, component.shape)
        converted.append(message)
    return converted


def _fill_requirements(
    requirements: pb.ReplicaRequirements | pb.ComponentReplicaRequirements, shape: api.ReplicaShape
) -> None:
    for name, amount in shape.requests:
        quantity = k8s_resource.Quantity(string=quantity_string(name, amount))
        requirements.resourceRequest[name].CopyFrom(quantity)
        requirements.resourceRequestBytes[name] = quantity.SerializeToString()
    if not shape.claim.is_empty:
        requirements.nodeClaim.CopyFrom(_node_claim(shape.claim))


def _node_claim(claim: api.NodeClaim) -> pb.NodeClaim:
    message = pb.NodeClaim(nodeSelector=dict(claim.node_selector))
    if claim.affinity_terms:  # zero terms means no constraint: neither form is sent
        selector = core.NodeSelector(nodeSelectorTerms=[_term(term) for term in claim.affinity_terms])
        message.nodeAffinity.CopyFrom(selector)
        message.nodeAffinityBytes = selector.SerializeToString()
    tolerations = [_toleration(t) for t in claim.tolerations]
    message.tolerations.extend(tolerations)
    message.tolerationsBytes.extend(t.SerializeToString() for t in tolerations)
    return message


def _term(term: api.NodeSelectorTerm) -> core.NodeSelectorTerm:
    return core.NodeSelectorTerm(
        matchExpressions=[_requirement(r) for r in term.match_expressions],
        matchFields=[_requirement(r) for r in term.match_fields],
    )


def _requirement(requirement: api.NodeSelectorRequirement) -> core.NodeSelectorRequirement:
    return core.NodeSelectorRequirement(key=requirement.key, operator=requirement.operator, values=requirement.values)


def _toleration(toleration: api.Toleration) -> core.Toleration:
    message = core.Toleration(
        key=toleration.key, operator=toleration.operator, value=toleration.value, effect=toleration.effect
    )
    if toleration.toleration_seconds is not None:
        message.tolerationSeconds = toleration.toleration_seconds
    return message
