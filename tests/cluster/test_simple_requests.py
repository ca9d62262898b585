"""The common pod's requests take a short path (podrequests.simple_requests); it must give
what the general path gives, in the same order, and leave every error to the general path."""

from __future__ import annotations

import random

import pytest

from estimator.core import podrequests
from estimator.core.podrequests import general_spec_requests, pod_spec_requests
from tests.core.test_podrequests import CASES

VALUES = ["500m", "1", "0", "2Gi", "1.5", "0.0005", "-1", "8E", "9E", "1e3", "abc", "", 2, 0.5, None, True, [1]]
NAMES = ["cpu", "memory", "ephemeral-storage", "nvidia.com/gpu", "hugepages-2Mi", "pods", "example.com/foo",
         "bad name/x", "kubernetes.io/batteries", "attachable-volumes-aws-ebs", 7]


def _resource_list(rng: random.Random):
    r = rng.random()
    if r < 0.1:
        return rng.choice([None, "", [], {}, "cpu"])
    return {rng.choice(NAMES): rng.choice(VALUES) if rng.random() < 0.3 else rng.choice(VALUES[:6])
            for _ in range(rng.randint(0, 4))}


def _container(rng: random.Random):
    if rng.random() < 0.05:
        return rng.choice(["c", None, 3])
    container = {"name": f"c{rng.randint(0, 3)}"}
    r = rng.random()
    if r < 0.05:
        container["resources"] = rng.choice(["", [], "x"])
    elif r < 0.9:
        resources = {}
        if rng.random() < 0.8:
            resources["requests"] = _resource_list(rng)
        if rng.random() < 0.4:
            resources["limits"] = _resource_list(rng)
        container["resources"] = resources
    return container


def random_spec(rng: random.Random) -> dict:
    spec = {"containers": [_container(rng) for _ in range(rng.randint(0, 3))]}
    r = rng.random()
    if r < 0.05:
        spec["containers"] = rng.choice(["", None, {}, "x"])
    if rng.random() < 0.1:
        spec["initContainers"] = rng.choice([[], [_container(rng)], ""])
    if rng.random() < 0.1:
        spec["resources"] = rng.choice([{}, {"requests": _resource_list(rng)}, ""])
    if rng.random() < 0.1:
        spec["overhead"] = rng.choice([None, {}, "", _resource_list(rng)])
    return spec


def outcome(function, spec):
    try:
        result = function(spec)
    except (ValueError, TypeError, AttributeError) as err:
        return type(err), str(err)
    return list(result.items())  # order too: it decides the order records are summed in


def test_random_specs_answer_or_fail_alike_on_both_paths():
    rng = random.Random(11)
    short = 0
    for _ in range(5000):
        spec = random_spec(rng)
        assert outcome(pod_spec_requests, spec) == outcome(general_spec_requests, spec), spec
        short += podrequests.simple_requests(spec) is not None
    assert short > 1000  # the short path is really taken


@pytest.mark.parametrize("pod_obj", [case[1] for case in CASES], ids=[case[0] for case in CASES])
def test_the_table_cases_answer_alike_on_both_paths(pod_obj):
    spec = pod_obj["spec"]
    assert outcome(pod_spec_requests, spec) == outcome(general_spec_requests, spec)
