"""Karmada's own encoded requests (tests/support/data/wire-vectors) convert to the models
they describe, and our encoding of each converts to the same model."""

from __future__ import annotations

import pytest
from estimator.core.model import (
    NO_CLAIM,
    AssumedWorkload,
    Component,
    ComponentSetsQuery,
    NodeClaim,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    ReplicaShape,
    ReplicasQuery,
    Toleration,
    WorkloadRef,
)
from estimator.pb import estimator_pb2 as pb
from estimator.service import convert
from scheduler_client import wire
from tests.service.test_convert import MI, VECTORS_DIR, to_model


# --- Karmada's vectors, converted ------------------------------------------------------------------

def vector(name: str, message_type):
    return message_type.FromString((VECTORS_DIR / name).read_bytes())


def shape(namespace: str, *requests: tuple[str, int], claim=NO_CLAIM, priority="") -> ReplicaShape:
    return ReplicaShape(requests=requests, claim=claim, namespace=namespace, priority_class=priority)


VECTOR_CLAIM = NodeClaim(
    node_selector=(("accelerator", "h100"),),
    affinity_terms=(
        NodeSelectorTerm(
            match_expressions=(
                NodeSelectorRequirement("topology.kubernetes.io/zone", "In", ("zone-a", "zone-b")),
                NodeSelectorRequirement("gpu-count", "Gt", ("3",)),
            )
        ),
        NodeSelectorTerm(match_fields=(NodeSelectorRequirement("metadata.name", "In", ("gpu-node-7",)),)),
    ),
    tolerations=(
        Toleration("nvidia.com/gpu", "Exists", "", "NoSchedule"),
        Toleration("dedicated", "Equal", "ml", "NoExecute", toleration_seconds=300),
    ),
)
SMALL_TRAINING_SET = (
    Component("master", 1, shape("ml-team", ("cpu", 50), ("memory", 32 * MI))),
    Component("worker", 2, shape("ml-team", ("cpu", 50), ("memory", 32 * MI), ("nvidia.com/gpu", 1))),
)
ASSUMED_SMALL_SET = (AssumedWorkload("ml-team", SMALL_TRAINING_SET),)


def test_vector_sets_with_claims_and_assumed():
    request = vector("sets_with_claims_and_assumed.bin", pb.MaxAvailableComponentSetsRequest)
    query = convert.component_sets_query(request)
    assert query == ComponentSetsQuery(
        components=(
            Component("master", 1, shape("ml-team", ("cpu", 50), ("memory", 32 * MI))),
            Component(
                "worker",
                2,
                shape(
                    "ml-team",
                    ("cpu", 50),
                    ("memory", 32 * MI),
                    ("nvidia.com/gpu", 3),
                    claim=VECTOR_CLAIM,
                    priority="high-priority",
                ),
            ),
        ),
        namespace="ml-team",
        assumed=ASSUMED_SMALL_SET,
    )


def test_vector_sets_train_small():
    query = convert.component_sets_query(vector("sets_train_small.bin", pb.MaxAvailableComponentSetsRequest))
    assert query == ComponentSetsQuery(components=SMALL_TRAINING_SET, namespace="ml-team")


def test_vector_replicas_with_claims():
    query = convert.replicas_query(vector("replicas_with_claims.bin", pb.MaxAvailableReplicasRequest))
    expected_shape = shape(
        "web",
        ("cpu", 1500),
        ("ephemeral-storage", 10**9),
        ("hugepages-2Mi", 64 * MI),
        ("memory", 1536 * MI),
        claim=VECTOR_CLAIM,
        priority="critical",
    )
    assert query == ReplicasQuery(shape=expected_shape, assumed=ASSUMED_SMALL_SET)


def test_vector_replicas_without_requirements():
    query = convert.replicas_query(vector("replicas_no_requirements.bin", pb.MaxAvailableReplicasRequest))
    assert query == ReplicasQuery(shape=None)


def test_vector_unschedulable_deployment():
    ref = convert.workload_ref(vector("unschedulable_deployment.bin", pb.UnschedulableReplicasRequest))
    assert ref == WorkloadRef("apps/v1", "Deployment", "web", "frontend", threshold_seconds=60.0)


REQUEST_VECTORS = [
    ("sets_train_small.bin", pb.MaxAvailableComponentSetsRequest, wire.component_sets_request),
    ("sets_train_big.bin", pb.MaxAvailableComponentSetsRequest, wire.component_sets_request),
    ("sets_with_claims_and_assumed.bin", pb.MaxAvailableComponentSetsRequest, wire.component_sets_request),
    ("replicas_with_claims.bin", pb.MaxAvailableReplicasRequest, wire.replicas_request),
    ("replicas_no_requirements.bin", pb.MaxAvailableReplicasRequest, wire.replicas_request),
    ("unschedulable_deployment.bin", pb.UnschedulableReplicasRequest, wire.unschedulable_request),
]


@pytest.mark.parametrize(("name", "message_type", "encode"), REQUEST_VECTORS, ids=[v[0] for v in REQUEST_VECTORS])
def test_our_encoding_of_a_vector_converts_to_the_same_model(name, message_type, encode):
    original = vector(name, message_type)
    converted = to_model(original)
    again = message_type.FromString(encode(original.cluster, converted).SerializeToString())
    assert to_model(again) == converted
