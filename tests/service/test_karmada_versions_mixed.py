"""Requests whose original Kubernetes-message fields and byte fields disagree, are
malformed or too large: refused with INVALID_ARGUMENT naming the field, as Karmada does."""

from __future__ import annotations

import grpc
import pytest

from estimator.core.errors import InvalidRequest
from estimator.pb import estimator_pb2 as pb
from estimator.pb import k8s_core_pb2 as core
from estimator.service import convert
from tests.service.test_karmada_versions import (  # noqa: F401 - fixtures
    EXPECTED,
    HAND_WRITTEN,
    call,
    channel,
    parsed,
    server,
    to_model,
)


# --- original and byte fields that disagree ------------------------------------------------------


def _mixed(name: str):
    return parsed("karmada-v1.18.2", name)


def _replicas_disagreeing_on_requests():
    message = _mixed("replicas_gpu_affinity")
    message.replicaRequirements.resourceRequest["cpu"].string = "4"
    return message


def _replicas_disagreeing_on_affinity():
    message = _mixed("replicas_gpu_affinity")
    message.replicaRequirements.nodeClaim.nodeAffinity.nodeSelectorTerms[0].matchExpressions[0].values[1] = "zone-c"
    return message


def _replicas_disagreeing_on_tolerations():
    message = _mixed("replicas_gpu_affinity")
    del message.replicaRequirements.nodeClaim.tolerations[1]
    return message


def _replicas_with_an_extra_original_request():
    message = _mixed("replicas_gpu_affinity")
    message.replicaRequirements.resourceRequest["memory"].string = "1Gi"
    return message


def _sets_disagreeing_on_a_worker():
    message = _mixed("sets_gpu_job")
    message.components[1].replicaRequirements.resourceRequest["nvidia.com/gpu"].string = "1"
    return message


def _sets_disagreeing_on_worker_tolerations():
    message = _mixed("sets_gpu_job")
    message.components[1].replicaRequirements.nodeClaim.tolerations[0].effect = "NoExecute"
    return message


DISAGREEING = [
    (_replicas_disagreeing_on_requests, "replicaRequirements.resourceRequest",
     "disagrees with resourceRequestBytes: cpu 4000 vs 3000"),
    (_replicas_with_an_extra_original_request, "replicaRequirements.resourceRequest",
     "disagrees with resourceRequestBytes: memory 1073741824 vs absent"),
    (_replicas_disagreeing_on_affinity, "replicaRequirements.nodeClaim.nodeAffinity",
     "disagrees with nodeAffinityBytes"),
    (_replicas_disagreeing_on_tolerations, "replicaRequirements.nodeClaim.tolerations",
     "disagrees with tolerationsBytes"),
    (_sets_disagreeing_on_a_worker, "components[1].replicaRequirements.resourceRequest",
     "disagrees with resourceRequestBytes: nvidia.com/gpu 1 vs 4"),
    (_sets_disagreeing_on_worker_tolerations, "components[1].replicaRequirements.nodeClaim.tolerations",
     "disagrees with tolerationsBytes"),
]


@pytest.mark.parametrize(("build", "field", "message"), DISAGREEING, ids=[d[0].__name__[1:] for d in DISAGREEING])
def test_disagreeing_forms_are_invalid_argument_naming_the_field(channel, build, field, message):
    request = build()
    with pytest.raises(InvalidRequest) as raised:
        to_model(request)
    assert (raised.value.field, raised.value.message) == (field, message)
    name = "replicas" if isinstance(request, pb.MaxAvailableReplicasRequest) else "sets"
    with pytest.raises(grpc.RpcError) as failed:
        call(channel, name, request.SerializeToString())
    assert failed.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert f"{field}: {message}" in failed.value.details()


def test_the_same_amount_spelled_differently_agrees(channel):
    message = _mixed("replicas_gpu_affinity")
    message.replicaRequirements.resourceRequest["cpu"].string = "3000m"
    assert to_model(message) == HAND_WRITTEN["replicas_gpu_affinity"]
    assert call(channel, "replicas", message.SerializeToString()) == EXPECTED["replicas_gpu_affinity"]


def test_an_empty_original_affinity_beside_no_bytes_is_no_constraint():
    # What v1.18 sends for an empty NodeSelector: the message, present and empty; no bytes.
    claim = _mixed("replicas_empty_claim").replicaRequirements.nodeClaim
    assert claim.HasField("nodeAffinity") and not claim.nodeAffinity.nodeSelectorTerms
    assert not claim.nodeAffinityBytes
    assert to_model(_mixed("replicas_empty_claim")) == HAND_WRITTEN["replicas_empty_claim"]


BAD_ORIGINALS = [
    ("resourceRequest", lambda r: r.resourceRequest["cpu"].__setattr__("string", "3 cores"),
     'replicaRequirements.resourceRequest["cpu"]'),
    ("empty quantity", lambda r: r.resourceRequest["cpu"].ClearField("string"),
     'replicaRequirements.resourceRequest["cpu"]'),
    ("operator", lambda r: r.nodeClaim.nodeAffinity.nodeSelectorTerms[0].matchExpressions[0]
     .__setattr__("operator", "Near"),
     "replicaRequirements.nodeClaim.nodeAffinity.nodeSelectorTerms[0].matchExpressions[0].operator"),
    ("toleration effect", lambda r: r.nodeClaim.tolerations[0].__setattr__("effect", "Sometimes"),
     "replicaRequirements.nodeClaim.tolerations[0].effect"),
]


@pytest.mark.parametrize("directory", ["karmada-v1.16.0", "karmada-v1.18.2"])
@pytest.mark.parametrize(("case", "spoil", "field"), BAD_ORIGINALS, ids=[b[0] for b in BAD_ORIGINALS])
def test_malformed_original_fields_are_refused_naming_them(directory, case, spoil, field):
    # Also beside valid bytes (v1.18.2): a malformed original field is not silently ignored.
    message = parsed(directory, "replicas_gpu_affinity")
    spoil(message.replicaRequirements)
    with pytest.raises(InvalidRequest) as raised:
        to_model(message)
    assert raised.value.field == field


def _many_requests(r):
    for i in range(100_000):
        r.resourceRequest[f"example.com/r{i}"].string = "1"


def _many_tolerations(r):
    r.nodeClaim.tolerations.extend([core.Toleration(key="k", operator="Exists")] * 100_000)


def _many_terms(r):
    term = r.nodeClaim.nodeAffinity.nodeSelectorTerms[0]
    r.nodeClaim.nodeAffinity.nodeSelectorTerms.extend([term] * convert.LIMITS["nodeSelectorTerms"])


OVER_LIMITS = [
    ("resource names", _many_requests, "replicaRequirements.resourceRequest", "has 100002 entries"),
    ("tolerations", _many_tolerations, "replicaRequirements.nodeClaim.tolerations", "has 100002 entries"),
    ("affinity terms", _many_terms, "replicaRequirements.nodeClaim.nodeAffinity.nodeSelectorTerms", "has 129 entries"),
]


@pytest.mark.parametrize(("case", "grow", "field", "text"), OVER_LIMITS, ids=[o[0] for o in OVER_LIMITS])
def test_original_fields_have_the_same_limits(case, grow, field, text):
    message = parsed("karmada-v1.16.0", "replicas_gpu_affinity")
    grow(message.replicaRequirements)
    with pytest.raises(InvalidRequest) as raised:
        to_model(message)
    assert raised.value.field == field and raised.value.message.startswith(text)
