"""The quota plugin's reason names the resource that set its answer, with the free amount and
one set's need, whatever the order and number of resources the quota bounds."""

from __future__ import annotations

from estimator.core.resources import MAX_INT32
from estimator.estimate.framework import Code
from tests.estimate.test_resourcequota import quota, sets


def test_reason_names_the_tightest_resource_not_the_last_one_tried():
    # train(): 3 pods, 150m cpu and 2 gpus a set. pods admit 10, cpu 4, gpu 2.
    result = sets(quota(name="big", hard={"pods": 40, "requests.cpu": 1000, "requests.nvidia.com/gpu": 5},
                        used={"pods": 10, "requests.cpu": 400, "requests.nvidia.com/gpu": 1}))
    assert (result.value, result.code) == (2, Code.SUCCESS)
    assert result.reason == "ResourceQuota ml/big: nvidia.com/gpu free 4, needed 2 each"


def test_a_tie_keeps_the_first_resource_that_reached_the_answer():
    # cpu admits 3 (450m free / 150m), gpu 3 (6 free / 2): the demand lists cpu first.
    result = sets(quota(name="tie", hard={"requests.nvidia.com/gpu": 6, "requests.cpu": 450},
                        used={"requests.nvidia.com/gpu": 0, "requests.cpu": 0}))
    assert result.value == 3
    assert result.reason == "ResourceQuota ml/tie: cpu free 450, needed 150 each"


def test_overused_quota_reports_zero_free():
    result = sets(quota(name="over", hard={"requests.cpu": 100}, used={"requests.cpu": 250}))
    assert (result.value, result.code) == (0, Code.UNSCHEDULABLE)
    assert result.reason == "ResourceQuota ml/over: cpu free 0, needed 150 each"


def test_a_quota_on_resources_the_set_does_not_ask_for_gives_no_reason():
    result = sets(quota(name="storage", hard={"requests.storage": 10}, used={"requests.storage": 0}))
    assert (result.value, result.reason) == (MAX_INT32, "")
