"""Objects into and out of a ClusterCache, one at a time, for tests and benchmarks.

The estimator itself feeds a cache with checked records (`ClusterCache.apply` / `delete` /
`replace_kind`, from object files or the list/watch loop); these helpers are the short
spelling tests use for a Kubernetes object: parse it with the one parser of its kind
(estimator.core.records), then apply it, so a malformed object raises and changes nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Mapping

from estimator.core.records import parse_node, parse_object, pod_record, quota_record
from estimator.core.workloads import deployment_record, replicaset_record

if TYPE_CHECKING:
    from estimator.cluster.cache import ClusterCache


def upsert(cache: ClusterCache, kind: str, obj: Mapping) -> None:
    """Parse `obj` of `kind` (one of records.KINDS) and apply it."""
    cache.apply(kind, parse_object(kind, obj))


def upsert_node(cache: ClusterCache, obj: Mapping) -> None:
    cache.apply("Node", parse_node(obj))


def delete_node(cache: ClusterCache, name: str) -> None:
    cache.delete("Node", name)


def upsert_pod(cache: ClusterCache, obj: Mapping) -> None:
    cache.apply("Pod", pod_record(obj))


def delete_pod(cache: ClusterCache, namespace: str, name: str) -> None:
    cache.delete("Pod", (namespace, name))


def upsert_quota(cache: ClusterCache, obj: Mapping) -> None:
    cache.apply("ResourceQuota", quota_record(obj))


def delete_quota(cache: ClusterCache, namespace: str, name: str) -> None:
    cache.delete("ResourceQuota", (namespace, name))


def upsert_deployment(cache: ClusterCache, obj: Mapping) -> None:
    cache.apply("Deployment", deployment_record(obj))


def delete_deployment(cache: ClusterCache, namespace: str, name: str) -> None:
    cache.delete("Deployment", (namespace, name))


def upsert_replicaset(cache: ClusterCache, obj: Mapping) -> None:
    cache.apply("ReplicaSet", replicaset_record(obj))


def delete_replicaset(cache: ClusterCache, namespace: str, name: str) -> None:
    cache.delete("ReplicaSet", (namespace, name))
