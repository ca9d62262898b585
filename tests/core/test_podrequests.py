"""Pod requests as the kube-scheduler counts them: table cases named as sentences."""

from __future__ import annotations

import pytest

from estimator.core.podrequests import pod_requests, pod_spec_requests, pod_template_requests
from tests.support.builders import GPU, pod

Gi = 2**30
Mi = 2**20

CASES = [
    ("a pod without containers' requests requests nothing", pod("ns", "p").build(), {}),
    (
        "app containers add up",
        pod("ns", "p").requests(cpu="500m", memory="1Gi").requests(cpu="250m", memory="512Mi").build(),
        {"cpu": 750, "memory": Gi + 512 * Mi},
    ),
    (
        "an extended resource is counted in whole units",
        pod("ns", "p").requests(cpu="1", gpu=2).build(),
        {"cpu": 1000, GPU: 2},
    ),
    (
        "fractional millicores round up per container",
        pod("ns", "p").requests(cpu="0.0005").requests(cpu="0.0005").build(),
        {"cpu": 2},
    ),
    (
        "a missing request defaults to the container's limit",
        pod("ns", "p").container(requests={"cpu": "1"}, limits={"cpu": "2", "memory": "1Gi"}).build(),
        {"cpu": 1000, "memory": Gi},
    ),
    (
        "limits alone become the requests",
        pod("ns", "p").limits(cpu="3", gpu=1).build(),
        {"cpu": 3000, GPU: 1},
    ),
    (
        "resources the scheduler does not count are dropped",
        pod("ns", "p").requests(cpu="1", **{"example.com/foo": "3", "kubernetes.io/x": "4", "bogus": "5"}).build(),
        {"cpu": 1000, "example.com/foo": 3, "kubernetes.io/x": 4},
    ),
    (
        "a large init container raises the pod's request",
        pod("ns", "p").requests(cpu="1").init_container(cpu="4", memory="1Gi").build(),
        {"cpu": 4000, "memory": Gi},
    ),
    (
        "a small init container does not",
        pod("ns", "p").requests(cpu="2", memory="2Gi").init_container(cpu="1", memory="1Gi").build(),
        {"cpu": 2000, "memory": 2 * Gi},
    ),
    (
        "init containers run one at a time, so only the largest counts",
        pod("ns", "p").init_container(cpu="3").init_container(cpu="2").requests(cpu="1").build(),
        {"cpu": 3000},
    ),
    (
        "a sidecar adds to the app containers",
        pod("ns", "p").init_container(sidecar=True, cpu="500m").requests(cpu="1").build(),
        {"cpu": 1500},
    ),
    (
        "an init container after a sidecar runs next to it",
        pod("ns", "p").init_container(sidecar=True, cpu="1").init_container(cpu="3").requests(cpu="1").build(),
        {"cpu": 4000},
    ),
    (
        "an init container before a sidecar does not run next to it",
        pod("ns", "p").init_container(cpu="3").init_container(sidecar=True, cpu="1").requests(cpu="1").build(),
        {"cpu": 3000},
    ),
    (
        "sidecars accumulate for later init containers",
        pod("ns", "p")
        .init_container(sidecar=True, cpu="1")
        .init_container(sidecar=True, cpu="1")
        .init_container(cpu="5")
        .requests(cpu="100m")
        .build(),
        {"cpu": 7000},
    ),
    (
        "overhead is added on top",
        pod("ns", "p").requests(cpu="1", memory="1Gi").overhead(cpu="250m", memory="120Mi").build(),
        {"cpu": 1250, "memory": Gi + 120 * Mi},
    ),
    (
        "pod-level requests replace the container sum for the resources they name",
        pod("ns", "p").requests(cpu="1", memory="1Gi", gpu=1).pod_resources(requests={"cpu": "3"}).build(),
        {"cpu": 3000, "memory": Gi, GPU: 1},
    ),
    (
        "pod-level requests can be smaller than the container sum",
        pod("ns", "p").requests(cpu="2").requests(cpu="2").pod_resources(requests={"cpu": "3"}).build(),
        {"cpu": 3000},
    ),
    (
        "overhead is added to pod-level requests too",
        pod("ns", "p").requests(cpu="1").pod_resources(requests={"cpu": "2"}).overhead(cpu="100m").build(),
        {"cpu": 2100},
    ),
    (
        "a pod-level limit defaults the pod-level request when no container asks for it",
        pod("ns", "p").requests(cpu="1").pod_resources(limits={"memory": "2Gi"}).build(),
        {"cpu": 1000, "memory": 2 * Gi},
    ),
    (
        "a pod-level limit leaves the container sum when containers ask for it",
        pod("ns", "p").requests(memory="1Gi").pod_resources(limits={"memory": "2Gi"}).build(),
        {"memory": Gi},
    ),
    (
        "a zero request is dropped",
        pod("ns", "p").requests(cpu="0", memory="1").build(),
        {"memory": 1},
    ),
    (
        "the phase does not matter to the request itself",
        pod("ns", "p").requests(cpu="1").phase("Succeeded").build(),
        {"cpu": 1000},
    ),
]


@pytest.mark.parametrize("pod_obj, expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_pod_requests(pod_obj, expected):
    assert pod_requests(pod_obj) == expected


def test_a_template_is_counted_like_a_pod():
    spec = pod("ns", "p").requests(cpu="1").init_container(sidecar=True, memory="64Mi").build()["spec"]
    assert pod_template_requests({"metadata": {"labels": {"a": "b"}}, "spec": spec}) == {"cpu": 1000, "memory": 64 * Mi}
    assert pod_spec_requests(spec) == {"cpu": 1000, "memory": 64 * Mi}


def test_yaml_numbers_are_read_as_quantities():
    spec = {"containers": [{"name": "c", "resources": {"requests": {"cpu": 2, "memory": 0.5}}}]}
    assert pod_spec_requests(spec) == {"cpu": 2000, "memory": 1}


MALFORMED = [
    (
        "a bad request names the container and the resource",
        pod("ns", "p").container("web", requests={"cpu": "lots"}).build(),
        r"container 'web': requests: cpu: 'lots' is not a quantity",
    ),
    (
        "a bad limit names the init container",
        {"spec": {"initContainers": [{"name": "setup", "resources": {"limits": {"memory": "1Gx"}}}]}},
        r"init container 'setup': limits: memory",
    ),
    (
        "a bad overhead says so",
        pod("ns", "p").overhead(cpu="1q").build(),
        r"spec.overhead: cpu",
    ),
    (
        "a container that is not a mapping is reported",
        {"spec": {"containers": ["web"]}},
        r"container #0: expected a mapping",
    ),
    (
        "requests that are not a mapping are reported",
        {"spec": {"containers": [{"name": "web", "resources": {"requests": ["cpu"]}}]}},
        r"container 'web': requests: expected a mapping",
    ),
    (
        "a quantity past int64 is refused",
        pod("ns", "p").container("big", requests={"memory": "100Ei"}).build(),
        r"container 'big': requests: memory: .*out of range",
    ),
]


@pytest.mark.parametrize("pod_obj, message", [c[1:] for c in MALFORMED], ids=[c[0] for c in MALFORMED])
def test_malformed_quantities_raise_value_error(pod_obj, message):
    with pytest.raises(ValueError, match=message):
        pod_requests(pod_obj)
