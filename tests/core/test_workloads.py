"""GetUnschedulableReplicas through the cache: Deployments and the label-found job kinds."""

from __future__ import annotations

from functools import partial

import pytest

from estimator.cluster.cache import ClusterCache
from estimator.core import errors
from estimator.core.model import WorkloadRef
from estimator.core.workloads import SUPPORTED_KINDS, parse_time, template_key
from tests.support.builders import OLD_TIME, deployment, pod, pods_of, replicaset
from tests.support.cachemutators import (
    delete_deployment, delete_pod, delete_replicaset, upsert_deployment, upsert_pod, upsert_replicaset,
)

NOW = parse_time("2024-01-01T00:10:00Z")  # ten minutes after OLD_TIME
RECENT = "2024-01-01T00:09:30Z"  # thirty seconds before NOW


def _cache(*objects):
    cache = ClusterCache()
    feed = {
        "Pod": partial(upsert_pod, cache),
        "Deployment": partial(upsert_deployment, cache),
        "ReplicaSet": partial(upsert_replicaset, cache),
    }
    for obj in objects:
        feed[obj["kind"]](obj)
    return cache


def _count(cache, kind="Deployment", name="web", api_version="apps/v1", threshold=60.0, namespace="ns", now=NOW):
    ref = WorkloadRef(api_version, kind, namespace, name, threshold)
    return cache.snapshot().workloads.count_unschedulable(ref, now)


DEP = deployment("ns", "web").build()
RS = replicaset("ns", "web-5d8f7c9b6").owned_by(DEP).build()


def stuck(rs=RS, count=1, since=OLD_TIME, prefix=None):
    return [b.unschedulable(since=since).build() for b in pods_of(rs, count, prefix)]


def _without_time(pod_obj):
    del pod_obj["status"]["conditions"][0]["lastTransitionTime"]
    return pod_obj


def _without_labels(obj):
    del obj["metadata"]["labels"]
    return obj


def _without_owner(obj):
    del obj["metadata"]["ownerReferences"]
    return obj


DEPLOYMENT_CASES = [
    ("pods stuck longer than the threshold count", [DEP, RS, *stuck(count=2)], 60.0, 2),
    ("pods stuck for less than the threshold do not", [DEP, RS, *stuck(since=RECENT)], 60.0, 0),
    ("a threshold of zero counts every stuck pod", [DEP, RS, *stuck(since=RECENT)], 0.0, 1),
    ("a negative threshold counts as zero", [DEP, RS, *stuck(since=RECENT)], -100.0, 1),
    ("running pods do not count", [DEP, RS, pods_of(RS, 1)[0].on("n1").build()], 60.0, 0),
    (
        "a pod scheduled after being stuck does not count",
        [DEP, RS, pods_of(RS, 1)[0].unschedulable().on("n1").build()],
        60.0,
        0,
    ),
    ("no new ReplicaSet means nothing to count", [DEP, *stuck()], 60.0, 0),
    (
        "pods of an old ReplicaSet do not count",
        [
            DEP,
            RS,
            old := replicaset("ns", "web-old").owned_by(DEP, "0ld").template_requests(cpu="1").build(),
            *stuck(old, 2),
        ],
        60.0,
        0,
    ),
    (
        "a ReplicaSet controlled by another owner is not the new one",
        [DEP, stranger := replicaset("ns", "web-x").owned_by(deployment("ns", "web").uid("other").build()).build(), *stuck(stranger)],
        60.0,
        0,
    ),
    (
        "a ReplicaSet whose labels miss the selector is not the new one",
        [DEP, off := _without_labels(replicaset("ns", "web-y").owned_by(DEP).build()), *stuck(off)],
        60.0,
        0,
    ),
    (
        "a ReplicaSet without a controller is not the new one, even when uids are missing",
        [
            deployment("ns", "web").uid("").build(),
            free := _without_owner(replicaset("ns", "web-z").owned_by(deployment("ns", "web").uid("").build()).build()),
            *stuck(free),
        ],
        60.0,
        0,
    ),
    (
        "pods controlled by something else do not count",
        [DEP, RS, pod("ns", "orphan").labels(app="web").unschedulable().build()],
        60.0,
        0,
    ),
    (
        "pods that no longer match the selector do not count",
        [DEP, RS, pods_of(RS, 1)[0].label("app", "moved").unschedulable().build()],
        60.0,
        0,
    ),
    (
        "a pod whose condition has no time counts as stuck since forever",
        [DEP, RS, _without_time(pods_of(RS, 1)[0].unschedulable().build())],
        3600.0,
        1,
    ),
]


@pytest.mark.parametrize("objects, threshold, expected", [c[1:] for c in DEPLOYMENT_CASES], ids=[c[0] for c in DEPLOYMENT_CASES])
def test_deployment_unschedulable_replicas(objects, threshold, expected):
    assert _count(_cache(*objects), threshold=threshold) == expected


def test_the_oldest_matching_replicaset_is_the_new_one():
    older = replicaset("ns", "web-b").owned_by(DEP, "b").created("2023-06-01T00:00:00Z").build()
    newer = replicaset("ns", "web-a").owned_by(DEP, "a").created("2023-07-01T00:00:00Z").build()
    cache = _cache(DEP, newer, older, *stuck(newer, 3), *stuck(older, 1))
    assert _count(cache) == 1
    index = cache.snapshot().workloads
    assert index.new_replicaset(index.deployments["ns"]["web"]).name == "web-b"


def test_equal_creation_times_fall_back_to_the_name():
    first = replicaset("ns", "web-a").owned_by(DEP, "a").build()
    second = replicaset("ns", "web-b").owned_by(DEP, "b").build()
    assert _count(_cache(DEP, second, first, *stuck(first, 2), *stuck(second, 1))) == 2


def test_the_template_comparison_ignores_the_hash_label_and_quantity_spelling():
    a = {"metadata": {"labels": {"app": "x", "pod-template-hash": "1"}}, "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1000m"}}}]}}
    b = {"metadata": {"labels": {"app": "x"}, "creationTimestamp": None}, "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}], "volumes": []}}
    c = {"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "2"}}}]}}
    assert template_key(a) == template_key(b) != template_key(c)


def test_updates_and_deletes_change_the_answer():
    cache = _cache(DEP, RS, *stuck(count=3))
    assert _count(cache) == 3
    upsert_pod(cache, pods_of(RS, 1)[0].on("n1").build())  # web-5d8f7c9b6-0 got scheduled
    assert _count(cache) == 2
    delete_pod(cache, "ns", "web-5d8f7c9b6-1")
    assert _count(cache) == 1
    delete_replicaset(cache, "ns", RS["metadata"]["name"])
    assert _count(cache) == 0
    delete_deployment(cache, "ns", "web")
    with pytest.raises(errors.NotFound, match="Deployment ns/web"):
        _count(cache)


def test_only_unschedulable_pods_are_kept():
    cache = _cache(DEP, RS, *stuck(count=2), *(b.on("n1").build() for b in pods_of(RS, 5, prefix="ok")))
    assert cache.stats()["unschedulable_pods"] == 2


def test_a_missing_deployment_is_not_found():
    with pytest.raises(errors.NotFound, match="ns/absent"):
        _count(_cache(DEP), name="absent")


def test_an_unchanged_namespace_is_shared_between_indexes():
    cache = _cache(DEP, RS, *stuck(), pod("other", "p").unschedulable().build())
    before = cache.snapshot().workloads
    upsert_pod(cache, pod("other", "q").unschedulable().build())
    after = cache.snapshot().workloads
    assert after.unschedulable["ns"] is before.unschedulable["ns"]
    assert after.unschedulable["other"] is not before.unschedulable["other"]


LABEL_KIND_CASES = [
    ("a PyTorchJob's pods carry the training job-name label", "kubeflow.org/v1", "PyTorchJob", {"training.kubeflow.org/job-name": "train"}),
    ("a TFJob's too", "kubeflow.org/v1", "TFJob", {"training.kubeflow.org/job-name": "train"}),
    ("an MPIJob's too", "kubeflow.org/v2beta1", "MPIJob", {"training.kubeflow.org/job-name": "train"}),
    ("an XGBoostJob's too", "kubeflow.org/v1", "XGBoostJob", {"training.kubeflow.org/job-name": "train"}),
    ("a PaddleJob's too", "kubeflow.org/v1", "PaddleJob", {"training.kubeflow.org/job-name": "train"}),
    ("a TrainJob runs as a JobSet of its name", "trainer.kubeflow.org/v1alpha1", "TrainJob", {"jobset.sigs.k8s.io/jobset-name": "train"}),
    ("a JobSet labels its pods", "jobset.x-k8s.io/v1alpha2", "JobSet", {"jobset.sigs.k8s.io/jobset-name": "train"}),
    ("a RayCluster labels its pods", "ray.io/v1", "RayCluster", {"ray.io/cluster": "train"}),
    ("a Volcano Job labels its pods", "batch.volcano.sh/v1alpha1", "Job", {"volcano.sh/job-name": "train"}),
    ("a FlinkDeployment's pods carry app and component", "flink.apache.org/v1beta1", "FlinkDeployment", {"app": "train", "component": "taskmanager"}),
    ("a SparkApplication labels its pods", "sparkoperator.k8s.io/v1beta2", "SparkApplication", {"sparkoperator.k8s.io/app-name": "train"}),
]


@pytest.mark.parametrize("api_version, kind, labels", [c[1:] for c in LABEL_KIND_CASES], ids=[c[0] for c in LABEL_KIND_CASES])
def test_job_kinds_are_found_by_pod_labels(api_version, kind, labels):
    objects = [
        pod("ml", "a").labels(**labels).unschedulable().build(),
        pod("ml", "b").labels(**labels).unschedulable().build(),
        pod("ml", "fresh").labels(**labels).unschedulable(since=RECENT).build(),
        pod("ml", "running").labels(**labels).on("n1").build(),
        pod("ml", "other-job").labels(**{k: "other" for k in labels}).unschedulable().build(),
        pod("elsewhere", "a").labels(**labels).unschedulable().build(),
    ]
    assert _count(_cache(*objects), kind=kind, name="train", api_version=api_version, namespace="ml") == 2


def test_a_flink_app_label_without_a_flink_component_does_not_count():
    cache = _cache(pod("ml", "a").labels(app="train").unschedulable().build())
    assert _count(cache, kind="FlinkDeployment", name="train", api_version="flink.apache.org/v1beta1", namespace="ml") == 0


UNSUPPORTED_CASES = [
    ("a StatefulSet is not supported", "apps/v1", "StatefulSet"),
    ("a batch Job is not a Volcano Job", "batch/v1", "Job"),
    ("a Deployment outside apps is not supported", "extensions/v1beta1", "Deployment"),
]


@pytest.mark.parametrize("api_version, kind", [c[1:] for c in UNSUPPORTED_CASES], ids=[c[0] for c in UNSUPPORTED_CASES])
def test_unsupported_kinds_say_which_are_supported(api_version, kind):
    with pytest.raises(errors.Unsupported, match="supported kinds: apps/Deployment, kubeflow.org/PyTorchJob"):
        _count(_cache(), kind=kind, api_version=api_version)
    assert len(SUPPORTED_KINDS) == 12


def test_a_malformed_selector_is_refused_at_upsert():
    bad = deployment("ns", "web").build()
    bad["spec"]["selector"] = {"matchExpressions": [{"key": "app", "operator": "Near", "values": ["x"]}]}
    with pytest.raises(ValueError, match="Near"):
        upsert_deployment(ClusterCache(), bad)
