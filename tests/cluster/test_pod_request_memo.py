"""The cache works out a pod's checked requests once per distinct request-relevant spec.

The memo must be invisible: records equal those computed afresh, bad pods raise every
time, and its key covers exactly the spec fields the request arithmetic reads.
"""

from __future__ import annotations

import copy

import pytest

from estimator.cluster.cache import ClusterCache
from estimator.core import records as cache_module
from estimator.core.podrequests import pod_spec_requests
from estimator.core.records import REQUEST_SPEC_FIELDS, pod_record
from tests.core.test_podrequests import CASES
from tests.support.builders import pod
from tests.support.cachemutators import upsert_pod


@pytest.fixture(autouse=True)
def empty_memo():
    cache_module._request_memo.clear()
    yield
    cache_module._request_memo.clear()


class RecordingSpec(dict):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.read: set[str] = set()

    def get(self, key, default=None):
        self.read.add(key)
        return super().get(key, default)

    def __getitem__(self, key):
        self.read.add(key)
        return super().__getitem__(key)


def test_the_key_holds_exactly_the_spec_fields_the_request_arithmetic_reads():
    read: set[str] = set()
    for _, pod_obj, _ in CASES:
        spec = RecordingSpec(pod_obj["spec"], nodeName="n1", hostname="h", schedulerName="s")
        pod_spec_requests(spec)
        read |= spec.read
    assert read == set(REQUEST_SPEC_FIELDS)


@pytest.mark.parametrize("pod_obj", [c[1] for c in CASES], ids=[c[0] for c in CASES])
def test_records_served_from_the_memo_equal_records_computed_afresh(pod_obj):
    first = copy.deepcopy(pod_obj)
    first["spec"]["nodeName"] = "n1"
    second = copy.deepcopy(first)
    second["metadata"]["name"] = "another"
    second["spec"]["nodeName"] = "n2"
    fresh = cache_module._checked_requests(first)
    a, b = pod_record(first), pod_record(second)
    counted = (first.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
    # Counted pods: one memo entry, the second pod was served from it. Finished pods
    # request nothing and never reach the memo.
    assert len(cache_module._request_memo) == (1 if counted else 0)
    if counted:
        assert (a.requests, a.saturated) == (b.requests, b.saturated) == fresh
    assert (b.namespace, b.name, b.node_name) == ("ns", "another", "n2" if counted else "")


def test_a_pod_with_a_different_request_is_not_served_another_pods_answer():
    small = pod("ns", "a").requests(cpu="1").on("n1").build()
    big = pod("ns", "b").requests(cpu="2").on("n1").build()
    assert dict(pod_record(small).requests) == {"cpu": 1000}
    assert dict(pod_record(big).requests) == {"cpu": 2000}
    as_number = pod("ns", "c").requests(cpu=1).on("n1").build()  # 1 and "1" are different JSON, same amount
    assert dict(pod_record(as_number).requests) == {"cpu": 1000}


def test_a_bad_pod_raises_every_time_and_is_not_remembered():
    bad = pod("ns", "p").requests(cpu="-1").on("n1").build()
    for _ in range(2):
        with pytest.raises(ValueError):
            pod_record(bad)
    assert not cache_module._request_memo


def test_a_tuple_where_the_api_has_a_list_still_fails_after_the_list_form_was_remembered():
    good = pod("ns", "p").requests(cpu="1").on("n1").build()
    pod_record(good)
    odd = copy.deepcopy(good)
    odd["spec"]["containers"] = tuple(odd["spec"]["containers"])
    with pytest.raises(ValueError, match="expected a list"):
        pod_record(odd)


def test_saturation_survives_the_memo():
    huge = pod("ns", "p").requests(memory="8E").requests(memory="8E").on("n1").build()
    again = copy.deepcopy(huge)
    again["metadata"]["name"] = "q"
    assert pod_record(huge).saturated == pod_record(again).saturated == ("memory",)


def test_the_memo_is_bounded(monkeypatch):
    monkeypatch.setattr(cache_module, "_REQUEST_MEMO_SIZE", 3)
    for i in range(10):
        pod_record(pod("ns", f"p{i}").requests(cpu=f"{i + 1}").on("n1").build())
        assert len(cache_module._request_memo) <= 3


def test_pods_counted_through_the_memo_add_up_on_their_node():
    cache = ClusterCache()
    for i in range(5):
        upsert_pod(cache, pod("ns", f"p{i}").requests(cpu="500m", memory="1Gi").on("n1").build())
    requested = cache._requested[cache._rows["n1"]]
    assert requested[0] == 5
    assert requested[cache._column_index["cpu"]] == 2500
    assert requested[cache._column_index["memory"]] == 5 * 2**30
