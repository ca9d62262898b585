"""convert.remembered: a repeated request converts once, and answers exactly as converting it
afresh; failures are never remembered; oversized requests are converted every time."""

from __future__ import annotations

import pytest

from estimator.core.errors import InvalidRequest
from estimator.pb import estimator_pb2 as pb
from estimator.service import convert


def sets_request(gpu: str = "1", namespace: str = "ml-team",
                 order=("cpu", "nvidia.com/gpu")) -> pb.MaxAvailableComponentSetsRequest:
    amounts = {"cpu": "2", "nvidia.com/gpu": gpu}
    requirements = pb.ComponentReplicaRequirements()
    for name in order:  # insertion order of the map differs, the request does not
        requirements.resourceRequest[name].string = amounts[name]
    worker = pb.Component(name="worker", replicas=2, replicaRequirements=requirements)
    return pb.MaxAvailableComponentSetsRequest(cluster="m", namespace=namespace, components=[worker])


def test_a_repeat_is_converted_once_and_equals_a_fresh_conversion():
    first = convert.remembered(convert.component_sets_query, sets_request())
    again = convert.remembered(convert.component_sets_query, sets_request(order=("nvidia.com/gpu", "cpu")))
    assert again is first
    assert first == convert.component_sets_query(sets_request())
    assert first.components[0].shape.requests == (("cpu", 2000), ("nvidia.com/gpu", 1))


def test_different_requests_get_their_own_answers():
    one = convert.remembered(convert.component_sets_query, sets_request("1"))
    two = convert.remembered(convert.component_sets_query, sets_request("2"))
    other_namespace = convert.remembered(convert.component_sets_query, sets_request("1", "other"))
    assert one.components[0].shape.requests[1] == ("nvidia.com/gpu", 1)
    assert two.components[0].shape.requests[1] == ("nvidia.com/gpu", 2)
    assert other_namespace.namespace == "other" and other_namespace.components[0].shape.namespace == "other"


def test_a_bad_request_fails_every_time():
    bad = sets_request("two")
    for _ in range(2):
        with pytest.raises(InvalidRequest,
                           match=r'components\[0\]\.replicaRequirements\.resourceRequest\["nvidia.com/gpu"\]'):
            convert.remembered(convert.component_sets_query, bad)


def test_replica_requests_are_remembered_apart_from_set_requests():
    request = pb.MaxAvailableReplicasRequest(cluster="m", replicaRequirements=pb.ReplicaRequirements(
        namespace="ml-team", resourceRequest={"cpu": {"string": "500m"}}))
    query = convert.remembered(convert.replicas_query, request)
    assert query is convert.remembered(convert.replicas_query, request)
    assert query.shape.requests == (("cpu", 500),)


def test_an_oversized_request_is_converted_afresh_each_time():
    request = sets_request()
    # Over 4 KB in values each within the 1,024 characters a string may have.
    request.components[0].replicaRequirements.nodeClaim.nodeSelector.update({f"k{i}": "v" * 1000 for i in range(5)})
    first = convert.remembered(convert.component_sets_query, request)
    again = convert.remembered(convert.component_sets_query, request)
    assert first == again and first is not again
    assert dict(first.components[0].shape.claim.node_selector) == {f"k{i}": "v" * 1000 for i in range(5)}
