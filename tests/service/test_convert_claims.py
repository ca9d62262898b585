"""convert's node-claim memo (`_claims`): a new job whose components select and tolerate as an
earlier one's did gets the claim converted then, equal to a fresh conversion; the request's
limit on claim entries is counted as without the memo, refusals name the same field, and a
claim that fails to convert is never remembered."""

from __future__ import annotations

import pytest

from estimator.core.errors import InvalidRequest
from estimator.pb import estimator_pb2 as pb
from estimator.pb import k8s_core_pb2 as core
from estimator.service import convert
from tests.service.test_convert import affinity, component, expr, quantity, sets, term, toleration


def claim(values: int = 3) -> pb.NodeClaim:
    return pb.NodeClaim(
        nodeSelector={"pool": "inference"},
        nodeAffinityBytes=affinity(term([expr("zone", "In", *[f"z{i}" for i in range(values)])])),
        tolerationsBytes=[toleration(key="dedicated", operator="Equal", value="inference", effect="NoSchedule")],
    )


def job(memory: int, *claims: pb.NodeClaim) -> pb.MaxAvailableComponentSetsRequest:
    return sets(*(component(f"c{i}", 1, {"memory": quantity(str(memory + i))}, c) for i, c in enumerate(claims)))


@pytest.fixture(autouse=True)
def empty_memo():
    convert._claims.clear()
    yield
    convert._claims.clear()


def test_a_new_job_with_the_same_claims_gets_the_claim_converted_before_equal_to_a_fresh_one():
    first = convert.component_sets_query(job(1000, claim()))
    second = convert.component_sets_query(job(2000, claim()))
    assert second.components[0].shape.claim is first.components[0].shape.claim
    convert._claims.clear()
    fresh = convert.component_sets_query(job(3000, claim()))
    assert fresh.components[0].shape.claim == first.components[0].shape.claim
    assert fresh.components[0].shape.claim is not first.components[0].shape.claim


def refusal(request) -> tuple[str, str]:
    with pytest.raises(InvalidRequest) as error:
        convert.component_sets_query(request)
    return error.value.field, str(error.value)


def test_the_claim_entry_limit_counts_remembered_claims_and_refuses_at_the_same_field(monkeypatch):
    # 1 selector entry + 1 requirement + 30 values + 1 toleration = 33 entries a claim, whose
    # encoding is small enough to be remembered.
    small = claim(values=30)
    assert len(small.SerializeToString(deterministic=True)) <= convert._CLAIM_MEMO_BYTES
    many = job(10, *[small] * 497)  # 497 x 33 > 16384: the 497th claim crosses the limit
    with monkeypatch.context() as patch:
        patch.setattr(convert, "_CLAIM_MEMO_BYTES", 0)  # nothing remembered
        without = refusal(many)
        assert not convert._claims
    assert refusal(many) == without  # remembered from the second component on
    assert convert._claims
    assert without[0].startswith("components[496].replicaRequirements.nodeClaim")
    fits = job(30, *[small] * 496)  # 496 x 33 = 16368 fits, remembered claims or not
    assert convert.component_sets_query(fits).components[495].shape.claim.node_selector == (("pool", "inference"),)


def test_a_claim_that_does_not_convert_is_not_remembered():
    bad = pb.NodeClaim(tolerationsBytes=[core.Toleration(key="k", operator="Sometimes").SerializeToString()])
    for _ in range(2):
        with pytest.raises(InvalidRequest, match=r"components\[0\]\.replicaRequirements\.nodeClaim\.tolerationsBytes"):
            convert.component_sets_query(job(10, bad))
    assert not convert._claims


def test_the_memo_is_bounded():
    for i in range(convert._CLAIM_MEMO_SIZE + 20):
        convert.component_sets_query(job(10, pb.NodeClaim(nodeSelector={"pool": f"p{i}"})))
    assert len(convert._claims) <= convert._CLAIM_MEMO_SIZE
