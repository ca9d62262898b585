"""GPUs served through DRA: parsing the three kinds, and what a snapshot offers per node.

Expected amounts are worked out by hand in each case's comment from kube-scheduler's rules
(estimator/core/devices.py's docstring), not computed by the code under test.
"""

from __future__ import annotations

import pytest

from estimator.cluster.cache import ClusterCache
from estimator.core.devices import IMPLICIT_PREFIX, claim_record, device_class_record, served_names, slice_record
from tests.support.cachemutators import upsert

DRIVER = "gpu.example.com"
GPU = "nvidia.com/gpu"


def node(name, **allocatable):
    alloc = {"cpu": "8", "memory": "32Gi", "pods": "110", **allocatable}
    return {"kind": "Node", "metadata": {"name": name}, "status": {"allocatable": alloc}}


def device_class(name, resource=None, selectors=(), created="2026-01-01T00:00:00Z"):
    spec = {"selectors": [{"cel": {"expression": e}} for e in selectors]}
    if resource:
        spec["extendedResourceName"] = resource
    return {"kind": "DeviceClass", "metadata": {"name": name, "creationTimestamp": created}, "spec": spec}


def resource_slice(name, node_name, devices, pool=None, generation=1, count=1, driver=DRIVER):
    return {"kind": "ResourceSlice", "metadata": {"name": name},
            "spec": {"driver": driver, "nodeName": node_name,
                     "pool": {"name": pool or node_name, "generation": generation, "resourceSliceCount": count},
                     "devices": [{"name": d, "attributes": {"model": {"string": model}}} for d, model in devices]}}


def claim(name, *devices, namespace="ml", pool=None):
    return {"kind": "ResourceClaim", "metadata": {"name": name, "namespace": namespace},
            "status": {"allocation": {"devices": {"results": [
                {"request": "r", "driver": DRIVER, "pool": pool or p, "device": d} for p, d in devices]}}}}


def by_model(wanted):
    """A matcher standing in for CEL: the class name says which model it wants ('any': all)."""
    def matches(cls, driver, device):
        if cls.name == "broken":
            return None
        model = dict((n, v) for n, _, v in device.attributes)["model"]
        return driver == DRIVER and (wanted.get(cls.name, "any") in ("any", model))
    return matches


def cache_with(*objects, matches=None):
    cache = ClusterCache(device_matcher=matches)
    for obj in objects:
        upsert(cache, obj["kind"], obj)
    return cache


def free(snapshot, resource):
    """Free amount per node; a resource no node offers has no column, which reads as 0 everywhere."""
    if resource not in snapshot.resource_names:
        return {n: 0 for n in snapshot.node_names}
    column = snapshot.resource_names.index(resource)
    return {n: int(snapshot.available[i, column]) for i, n in enumerate(snapshot.node_names)}


def test_devices_a_class_selects_less_the_allocated_are_free_on_nodes_without_the_resource():
    # n1: 4 a100 devices, one allocated -> 3; n2 advertises 2 GPUs through its device plugin: the
    # class does not serve it (its own allocatable, 2, stays); n3 has no slice -> 0.
    cache = cache_with(node("n1"), node("n2", **{GPU: "2"}), node("n3"),
                       device_class("gpus", GPU),
                       resource_slice("s1", "n1", [(f"g{i}", "a100") for i in range(4)]),
                       resource_slice("s2", "n2", [("g0", "a100")]),
                       claim("c1", ("n1", "g2")), matches=by_model({}))
    snapshot = cache.snapshot()
    assert free(snapshot, GPU) == {"n1": 3, "n2": 2, "n3": 0}
    assert free(snapshot, IMPLICIT_PREFIX + "gpus") == {"n1": 3, "n2": 1, "n3": 0}


def test_selectors_exclude_devices_and_a_broken_selector_counts_nothing():
    # "h100s" selects 1 of the 3 devices; "broken" cannot be evaluated: nothing for it anywhere.
    cache = cache_with(node("n1"), device_class("h100s", "example.com/h100"), device_class("broken", "example.com/x"),
                       resource_slice("s1", "n1", [("g0", "a100"), ("g1", "h100"), ("g2", "a100")]),
                       matches=by_model({"h100s": "h100"}))
    snapshot = cache.snapshot()
    assert free(snapshot, "example.com/h100") == {"n1": 1}
    assert free(snapshot, "example.com/x") == {"n1": 0}
    assert cache.device_classes_failing() == {"broken"}


def test_an_incomplete_pool_counts_nothing_until_its_last_slice_arrives():
    # The pool says two slices; with one published the scheduler skips it; with both, 1 + 2 devices.
    half = resource_slice("s1", "n1", [("g0", "a100")], pool="p", count=2)
    cache = cache_with(node("n1"), device_class("gpus", GPU), half, matches=by_model({}))
    assert free(cache.snapshot(), GPU) == {"n1": 0}
    upsert(cache, "ResourceSlice", resource_slice("s2", "n1", [("g1", "a100"), ("g2", "a100")], pool="p", count=2))
    assert free(cache.snapshot(), GPU) == {"n1": 3}


def test_only_the_newest_generation_of_a_pool_counts():
    old = resource_slice("old", "n1", [("g0", "a100"), ("g1", "a100")], pool="p", generation=1)
    new = resource_slice("new", "n1", [("g0", "a100")], pool="p", generation=2)
    cache = cache_with(node("n1"), device_class("gpus", GPU), old, new, matches=by_model({}))
    assert free(cache.snapshot(), GPU) == {"n1": 1}


def test_claims_and_slices_coming_and_going_are_recounted():
    cache = cache_with(node("n1"), device_class("gpus", GPU), resource_slice("s1", "n1", [("g0", "a100"), ("g1", "a100")]),
                       matches=by_model({}))
    assert free(cache.snapshot(), GPU) == {"n1": 2}
    upsert(cache, "ResourceClaim", claim("c", ("n1", "g0"), ("n1", "g1")))
    assert free(cache.snapshot(), GPU) == {"n1": 0}
    cache.delete("ResourceClaim", ("ml", "c"))
    assert free(cache.snapshot(), GPU) == {"n1": 2}
    cache.delete("ResourceSlice", "s1")
    assert free(cache.snapshot(), GPU) == {"n1": 0}
    cache.delete("DeviceClass", "gpus")
    assert GPU not in cache.snapshot().resource_names


def test_a_tainted_device_and_a_slice_for_many_nodes_do_not_count():
    tainted = resource_slice("s1", "n1", [("g0", "a100"), ("g1", "a100")])
    tainted["spec"]["devices"][0]["taints"] = [{"key": "broken", "effect": "NoSchedule"}]
    shared = resource_slice("s2", "n1", [("x0", "a100")], pool="net")
    del shared["spec"]["nodeName"]
    shared["spec"]["allNodes"] = True
    cache = cache_with(node("n1"), device_class("gpus", GPU), tainted, shared, matches=by_model({}))
    assert free(cache.snapshot(), GPU) == {"n1": 1}


def test_the_newer_class_wins_a_name_then_the_name_sorting_first():
    older = device_class_record(device_class("b-old", GPU, created="2026-01-01T00:00:00Z"))
    newer = device_class_record(device_class("z-new", GPU, created="2026-02-01T00:00:00Z"))
    assert served_names([older, newer])[GPU].name == "z-new"
    tie_a = device_class_record(device_class("a", GPU))
    tie_b = device_class_record(device_class("b", GPU))
    assert served_names([tie_b, tie_a])[GPU].name == "a"
    assert served_names([tie_a])[IMPLICIT_PREFIX + "a"].name == "a"


@pytest.mark.parametrize("parse, obj, says", [
    (slice_record, {"metadata": {"name": "s"}, "spec": {"driver": DRIVER, "pool": {"name": "p", "generation": -1},
                                                        "devices": []}}, "generation"),
    (slice_record, {"metadata": {"name": "s"}, "spec": {"driver": DRIVER, "pool": {"name": "p"},
                                                        "devices": [{"name": "d", "attributes": {"a": {}}}]}},
     "exactly one of"),
    (slice_record, {"metadata": {"name": "s"}, "spec": {"driver": DRIVER, "pool": {"name": "p"}, "devices": "many"}},
     "spec.devices"),
    (device_class_record, {"metadata": {"name": "c"}, "spec": {"selectors": [{"cel": {}}]}}, "expression"),
    (claim_record, {"metadata": {"name": "c", "namespace": "n"},
                    "status": {"allocation": {"devices": {"results": [{"driver": DRIVER, "pool": "p"}]}}}}, "device"),
], ids=["a negative generation", "an attribute without a type", "devices not a list",
        "a selector without an expression", "an allocation without its device"])
def test_malformed_objects_are_refused_naming_the_field(parse, obj, says):
    with pytest.raises(ValueError, match=says):
        parse(obj)


def test_a_malformed_object_changes_nothing():
    cache = cache_with(node("n1"), device_class("gpus", GPU), resource_slice("s1", "n1", [("g0", "a100")]),
                       matches=by_model({}))
    before = free(cache.snapshot(), GPU)
    with pytest.raises(ValueError):
        upsert(cache, "ResourceSlice", {"metadata": {"name": "s1"}, "spec": {"driver": DRIVER, "pool": {"name": "p"},
                                                                              "devices": [{"name": ""}]}})
    assert free(cache.snapshot(), GPU) == before == {"n1": 1}


def test_a_claim_naming_a_device_no_slice_has_takes_nothing():
    cache = cache_with(node("n1"), device_class("gpus", GPU), resource_slice("s1", "n1", [("g0", "a100")]),
                       claim("ghost", ("n1", "missing")), matches=by_model({}))
    assert free(cache.snapshot(), GPU) == {"n1": 1}


# --- one device, several names -------------------------------------------------------------------

@pytest.mark.parametrize("groups, wanted, expected", [
    # 3 devices A or B can take, 1 only A, 2 only B: A and B select different devices, so the
    # shared 3 count for neither (a B pod may take the one an A pod needed).
    ([(frozenset("AB"), 3), (frozenset("A"), 1), (frozenset("B"), 2)], "AB", {"A": 1, "B": 2}),
    # Only one name wanted: it gets every device it can take.
    ([(frozenset("AB"), 3), (frozenset("A"), 1)], "A", {"A": 4}),
    # A device a name not wanted could also take is uncontested: C is not asked for.
    ([(frozenset("AC"), 5), (frozenset("B"), 1)], "AB", {"A": 5, "B": 1}),
    # A and B take exactly the same 5 devices (a class's two names): split 3 + 2.
    ([(frozenset("ABC"), 4), (frozenset("AB"), 1)], "AB", {"A": 3, "B": 2}),
], ids=["devices names with different device sets contest count for none", "one wanted name takes all it can",
        "only wanted names contest a device", "names with the same devices share them evenly"])
def test_each_device_counts_once(groups, wanted, expected):
    from estimator.core.devices import partition
    assert partition(groups, wanted) == expected


def test_a_job_asking_two_names_one_device_serves_gets_it_once():
    # n1 has one free device, selected by both classes. A set asking one of each cannot fit
    # (kube-scheduler: "cannot allocate all claims"); a set asking one of either fits once.
    from estimator.core.model import Component, ComponentSetsQuery, ReplicaShape
    from estimator.estimate.estimate import Estimator

    cache = cache_with(node("n1"), device_class("any", "example.com/any"), device_class("big", "example.com/big"),
                       resource_slice("s1", "n1", [("g0", "a100")]), matches=by_model({}))
    snapshot = cache.snapshot()

    def sets(*names):
        components = tuple(Component(f"c{i}", 1, ReplicaShape(((n, 1),))) for i, n in enumerate(names))
        return Estimator(lambda: snapshot, "best").max_available_component_sets(ComponentSetsQuery(components)).sets

    assert sets("example.com/any") == 1 and sets("example.com/big") == 1
    assert sets("example.com/any", "example.com/big") == 0


def test_devices_an_in_flight_workload_took_leave_the_names_that_could_have_used_them():
    # n1: g0, g1 are h100 (classes "h" and "any" select them), g2, g3 a100 ("any" only).
    # In flight: 2 replicas of example.com/h -> g0, g1, which "any" could have used: 2 left for it.
    from estimator.core.model import AssumedWorkload, Component, ComponentSetsQuery, ReplicaShape
    from estimator.estimate.estimate import Estimator

    cache = cache_with(node("n1"), device_class("h", "example.com/h"), device_class("any", "example.com/any"),
                       resource_slice("s1", "n1", [("g0", "h100"), ("g1", "h100"), ("g2", "a100"), ("g3", "a100")]),
                       matches=by_model({"h": "h100"}))
    snapshot = cache.snapshot()
    in_flight = AssumedWorkload("", (Component("inflight", 2, ReplicaShape((("example.com/h", 1),))),))
    job = (Component("w", 1, ReplicaShape((("example.com/any", 1),))),)
    estimator = Estimator(lambda: snapshot, "best")
    assert estimator.max_available_component_sets(ComponentSetsQuery(job)).sets == 4
    assert estimator.max_available_component_sets(ComponentSetsQuery(job, assumed=(in_flight,))).sets == 2


def test_a_class_asked_by_its_implicit_name_is_charged_to_its_extended_resource_quota():
    # 4 free devices; quota requests.nvidia.com/gpu: 3 free. A set asks 2 devices by the implicit
    # name: quota admission charges the claim to requests.nvidia.com/gpu, so 1 set, not 2.
    from estimator.core.model import Component, ComponentSetsQuery, ReplicaShape
    from estimator.estimate.estimate import Estimator

    quota = {"kind": "ResourceQuota", "metadata": {"name": "q", "namespace": "ml"},
             "spec": {"hard": {f"requests.{GPU}": "8"}},
             "status": {"hard": {f"requests.{GPU}": "8"}, "used": {f"requests.{GPU}": "5"}}}
    cache = cache_with(node("n1"), device_class("gpus", GPU), quota,
                       resource_slice("s1", "n1", [(f"g{i}", "a100") for i in range(4)]), matches=by_model({}))
    snapshot = cache.snapshot()
    job = (Component("w", 1, ReplicaShape(((IMPLICIT_PREFIX + "gpus", 2),), namespace="ml")),)
    assert Estimator(lambda: snapshot, "best").max_available_component_sets(ComponentSetsQuery(job, "ml")).sets == 1
