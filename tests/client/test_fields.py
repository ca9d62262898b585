"""The Cluster, policy and job readers share one field reader: the same wrong shape gets the
same wording, each reader's own error type, and the path of the field."""

from __future__ import annotations

import pytest

from scheduler_client.clusters import ClusterError, parse_cluster
from scheduler_client.fields import FieldError
from scheduler_client.interpreters import InterpretError, interpret
from scheduler_client.karmada import PolicyError, parse_policy

CASES = [
    (lambda: parse_cluster({"kind": "Cluster", "metadata": {"name": "a"}, "spec": {"taints": "x"}}),
     ClusterError, "spec.taints", "must be a list, got str"),
    (lambda: parse_cluster({"kind": "Cluster", "metadata": ["a"]}),
     ClusterError, "metadata", "must be an object, got list"),
    (lambda: parse_policy({"kind": "PropagationPolicy", "spec": {"placement": {"spreadConstraints": {}}}}),
     PolicyError, "spec.placement.spreadConstraints", "must be a list, got dict"),
    (lambda: parse_policy({"kind": "PropagationPolicy", "spec": 3}),
     PolicyError, "spec", "must be an object, got int"),
    (lambda: interpret({"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": "j"},
                        "spec": "x"}),
     InterpretError, "spec", "must be an object, got str"),
    (lambda: interpret({"apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet", "metadata": {"name": "j"},
                        "spec": {"replicatedJobs": "x"}}),
     InterpretError, "spec.replicatedJobs", "must be a list, got str"),
]


@pytest.mark.parametrize("call, kind, field, message", CASES)
def test_wrong_shapes_are_named_the_same_way_by_every_reader(call, kind, field, message):
    with pytest.raises(kind) as caught:
        call()
    assert isinstance(caught.value, FieldError)
    assert (caught.value.field, caught.value.message) == (field, message)
    assert str(caught.value) == f"{field}: {message}"


def test_absent_values_read_as_empty():
    from scheduler_client.fields import mapping, sequence

    assert mapping(None, "x") == {} and sequence(None, "x") == []
    with pytest.raises(FieldError, match=r"^a\.b: must be a list, got int$"):
        sequence(1, "a.b")
