"""DRA objects through list/watch: served GPUs follow slices and claims; bad objects and a member
without the API neither crash nor stall the watch, nor raise an answer.

Expected amounts are worked out by hand in the comments (estimator/core/devices.py's rules).
"""

from __future__ import annotations

import pytest

from tests.cluster.test_watch import FAST, available, fake, small_cluster, wait_until, watch  # noqa: F401 - fixtures
from tests.support.kubeobjects import node_object

DRIVER = "gpu.example.com"
GPU = "nvidia.com/gpu"


def device_class(name="gpus", expression=f'device.driver == "{DRIVER}"', resource=GPU):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": name},
            "spec": {"selectors": [{"cel": {"expression": expression}}], "extendedResourceName": resource}}


def resource_slice(node, count, name=None):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": name or f"{node}-gpus"},
            "spec": {"driver": DRIVER, "nodeName": node, "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": f"gpu-{i}", "attributes": {"model": {"string": "a100"}}} for i in range(count)]}}


def claim(name, node, *devices):
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": name, "namespace": "ml"},
            "status": {"allocation": {"devices": {"results": [
                {"request": "r", "driver": DRIVER, "pool": node, "device": d} for d in devices]}}}}


def gpus(state, node):
    return available(state, node).get(GPU, 0)


def test_served_gpus_follow_slices_and_claims_as_they_change(fake, watch):
    # n9 advertises no GPU; its slice has 4 devices, a claim holds 1 -> 3 free; a second claim -> 1.
    fake.load([node_object("n9"), device_class(), resource_slice("n9", 4), claim("c1", "n9", "gpu-0")])
    state = watch()
    assert wait_until(lambda: state.synced() and gpus(state, "n9") == 3)
    fake.put(claim("c2", "n9", "gpu-1", "gpu-2"))
    assert wait_until(lambda: gpus(state, "n9") == 1)
    fake.delete("ResourceClaim", "c1", "ml")
    assert wait_until(lambda: gpus(state, "n9") == 2)
    fake.delete("ResourceSlice", "n9-gpus")
    assert wait_until(lambda: gpus(state, "n9") == 0)


@pytest.mark.parametrize("bad", [
    device_class("broken", 'device.attributes["gpu.example.com"].model.frobnicate()', "example.com/x"),
    device_class("typo", 'device.drivr == "x"', "example.com/y"),
    {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "bad-slice"},
     "spec": {"driver": DRIVER, "nodeName": "n9", "pool": {"name": "p", "resourceSliceCount": "two"}, "devices": []}},
    claim("ghost", "n9", "no-such-device"),
    {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "weird", "namespace": "ml"},
     "status": {"allocation": {"devices": {"results": "all of them"}}}},
], ids=["an unknown CEL function", "an attribute the device lacks", "a malformed slice",
        "a claim naming a missing device", "a malformed claim"])
def test_a_bad_dra_object_neither_stops_the_watch_nor_raises_an_answer(fake, watch, bad):
    # Good state: 2 free GPUs on n9. Whatever the bad object, n9 never shows more, and a later
    # good change still arrives (the watch goes on).
    fake.load([node_object("n9"), device_class(), resource_slice("n9", 2)])
    state = watch()
    assert wait_until(lambda: state.synced() and gpus(state, "n9") == 2)
    fake.put(bad)
    fake.put(node_object("n8"))
    assert wait_until(lambda: "n8" in state.cache.snapshot().node_names)
    assert gpus(state, "n9") == 2
    assert available(state, "n9").get("example.com/x", 0) == 0 and available(state, "n9").get("example.com/y", 0) == 0
    assert all(r.alive() for r in state.reflectors.values())


@pytest.mark.parametrize("status", [404, 403])
def test_a_member_without_the_dra_api_is_served_without_dra_devices(fake, watch, status):
    # Every list of the three DRA kinds fails: the estimator becomes ready all the same (they
    # count as none) and serves the node allocatable GPUs it has.
    small_cluster(fake)
    fake.fail_next(1000, status=status, kinds=["DeviceClass", "ResourceSlice", "ResourceClaim"])
    state = watch()
    assert wait_until(lambda: state.synced(), timeout=10)
    assert state.reflectors["DeviceClass"].not_served and state.reflectors["Node"].synced
    assert gpus(state, "n1") == 1  # node_object(gpu=1): its device plugin's GPU
