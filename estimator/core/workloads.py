"""GetUnschedulableReplicas: which pods of a workload have been stuck unschedulable.

Three parts:
- record builders (`deployment_record`, `replicaset_record`, `unschedulable_pod`) turn
  Kubernetes objects into the few fields the answer needs, at upsert time;
- `WorkloadState`, the mutable store the cache keeps under its lock; only pods that are
  unschedulable right now are kept (with their labels), not every pod;
- `WorkloadIndex`, the immutable view a snapshot carries; `WorkloadState.index()` shares
  the per-namespace maps that did not change since the previous index.

Deployments follow Karmada's GetUnschedulablePodsOfWorkload (pkg/estimator/server/replica,
pkg/util/lifted/deployment.go): the NEW ReplicaSet is the oldest one (creation time, then
name) that the Deployment controls, whose labels match the Deployment's selector and whose
pod template equals the Deployment's ignoring `pod-template-hash`; its pods are the ones
it controls that match the selector. Multi-component kinds are found by the labels their
operators put on pods, without the job object.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any, Generic, TypeVar

from estimator.core import errors
from estimator.core.labels import requirement_matches
from estimator.core.model import TERMINAL_POD_PHASES, NodeSelectorRequirement, WorkloadRef
from estimator.core.resources import QuantityError, parse_quantity

DEPLOYMENT_UNIQUE_LABEL = "pod-template-hash"
# Go's zero time.Time (0001-01-01T00:00:00Z) as Unix seconds: what a missing timestamp reads as.
ZERO_TIME = -62135596800.0
_EMPTY: Mapping = MappingProxyType({})


@dataclass(frozen=True)
class _PodLabelRule:
    """Pods of workload `name` carry `key=name` (and every `also` label, if any)."""

    key: str
    also: tuple[tuple[str, tuple[str, ...]], ...] = ()


_KUBEFLOW_TRAINING = _PodLabelRule("training.kubeflow.org/job-name")
_JOBSET = _PodLabelRule("jobset.sigs.k8s.io/jobset-name")
# (API group, kind) -> how to find the pods. Label keys as the operators set them; where
# we are less sure it is said here.
POD_LABEL_KINDS: Mapping[tuple[str, str], _PodLabelRule] = MappingProxyType(
    {
        # Kubeflow training-operator v1 (and mpi-operator v2 for MPIJob) label every replica pod.
        ("kubeflow.org", "PyTorchJob"): _KUBEFLOW_TRAINING,
        ("kubeflow.org", "TFJob"): _KUBEFLOW_TRAINING,
        ("kubeflow.org", "MPIJob"): _KUBEFLOW_TRAINING,
        ("kubeflow.org", "XGBoostJob"): _KUBEFLOW_TRAINING,
        ("kubeflow.org", "PaddleJob"): _KUBEFLOW_TRAINING,
        # Kubeflow Trainer v2 runs a TrainJob as a JobSet of the same name.
        ("trainer.kubeflow.org", "TrainJob"): _JOBSET,
        ("jobset.x-k8s.io", "JobSet"): _JOBSET,
        ("ray.io", "RayCluster"): _PodLabelRule("ray.io/cluster"),
        ("batch.volcano.sh", "Job"): _PodLabelRule("volcano.sh/job-name"),
        # Flink's Kubernetes integration labels pods app=<cluster-id> (the FlinkDeployment's
        # name) and component=jobmanager|taskmanager; `app` alone is too common a key, so we
        # also require the component label. Least certain of the table.
        ("flink.apache.org", "FlinkDeployment"): _PodLabelRule("app", (("component", ("jobmanager", "taskmanager")),)),
        # Kubeflow spark-operator labels driver and executor pods.
        ("sparkoperator.k8s.io", "SparkApplication"): _PodLabelRule("sparkoperator.k8s.io/app-name"),
    }
)
SUPPORTED_KINDS: tuple[str, ...] = ("apps/Deployment",) + tuple(f"{g}/{k}" for g, k in POD_LABEL_KINDS)


# --- small parsers ----------------------------------------------------------------------


def parse_time(text: Any) -> float:
    """RFC 3339 (as the API server writes it) -> Unix seconds; missing -> Go's zero time."""
    if text in (None, ""):
        return ZERO_TIME
    if isinstance(text, datetime):  # YAML loaders turn unquoted timestamps into datetimes
        moment = text
    elif isinstance(text, str):
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            raise ValueError(f"{text!r} is not an RFC 3339 timestamp") from None
    else:
        raise ValueError(f"{text!r} is not a timestamp")
    return (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()


def controller_uid(meta: Mapping) -> str:
    """UID of the ownerReference with controller: true (metav1.GetControllerOf), or ""."""
    for ref in meta.get("ownerReferences") or ():
        if isinstance(ref, dict) and ref.get("controller") is True:
            return str(ref.get("uid") or "")
    return ""


def _scalar_text(value: Any) -> str:
    """A label value as Kubernetes spells it, also when a YAML file left it unquoted."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def string_map(value: Any, where: str) -> dict[str, str]:
    """A labels-like map with string keys and values; ValueError if it is not a mapping."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ValueError(f"{where}: expected a mapping")
    return {str(k): _scalar_text(v) for k, v in value.items()}


@dataclass(frozen=True)
class LabelSelector:
    """A metav1.LabelSelector: matchLabels and matchExpressions ANDed; None selects nothing.

    Matched by labels.requirement_matches, the matcher node affinity uses too."""

    requirements: tuple[NodeSelectorRequirement, ...] = ()
    selects_nothing: bool = False

    def matches(self, labels: Mapping[str, str]) -> bool:
        if self.selects_nothing:
            return False
        return all(requirement_matches(labels, req) for req in self.requirements)


def label_selector(selector: Any) -> LabelSelector:
    """metav1.LabelSelectorAsSelector; ValueError for what it would reject."""
    if selector is None:
        return LabelSelector(selects_nothing=True)
    if not isinstance(selector, dict):
        raise ValueError("selector: expected a mapping")
    requirements = [
        NodeSelectorRequirement(k, "In", (v,))
        for k, v in string_map(selector.get("matchLabels"), "matchLabels").items()
    ]
    for expr in selector.get("matchExpressions") or ():
        if not isinstance(expr, dict) or not isinstance(expr.get("key"), str):
            raise ValueError(f"selector: matchExpressions entry {expr!r} has no key")
        operator, values = expr.get("operator"), [str(v) for v in expr.get("values") or ()]
        if operator in ("In", "NotIn") and not values:
            raise ValueError(f"selector: {expr['key']} {operator} needs values")
        if operator in ("Exists", "DoesNotExist") and values:
            raise ValueError(f"selector: {expr['key']} {operator} takes no values")
        if operator not in ("In", "NotIn", "Exists", "DoesNotExist"):
            raise ValueError(f"selector: {operator!r} is not a valid label selector operator")
        # Sorted and deduplicated: two spellings of one set compare equal, as sets did.
        requirements.append(NodeSelectorRequirement(expr["key"], operator, tuple(sorted(set(values)))))
    return LabelSelector(tuple(requirements))


# Pod template comparison: apiequality.Semantic.DeepEqual treats nil and empty maps/lists
# alike and compares quantities by value; a canonical JSON digest of the normalised template
# gives the same verdict for objects read back from one API server.
_QUANTITY_MAPS = frozenset(("requests", "limits", "overhead"))


def _normalise(value: Any, quantities: bool = False) -> Any:
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if quantities:
                item = _canonical_quantity(item)
            else:
                item = _normalise(item, key in _QUANTITY_MAPS)
            if item is not None and item != {} and item != []:
                out[key] = item
        return out
    if isinstance(value, list):
        return [_normalise(item) for item in value]
    return value


def _canonical_quantity(value: Any) -> Any:
    try:
        return str(parse_quantity(str(value)).normalize())
    except QuantityError:
        return value


def template_key(template: Any) -> str:
    """Digest of a pod template with `pod-template-hash` removed (EqualIgnoreHash)."""
    template = dict(template) if isinstance(template, dict) else {}
    meta = template.get("metadata")
    if isinstance(meta, dict) and isinstance(meta.get("labels"), Mapping):
        labels = {k: v for k, v in meta["labels"].items() if k != DEPLOYMENT_UNIQUE_LABEL}
        template["metadata"] = {**meta, "labels": labels}
    text = json.dumps(_normalise(template), sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()


# --- records ----------------------------------------------------------------------------


@dataclass(frozen=True)
class DeploymentRecord:
    namespace: str
    name: str
    uid: str
    selector: LabelSelector
    template_key: str


@dataclass(frozen=True)
class ReplicaSetRecord:
    namespace: str
    name: str
    uid: str
    controller_uid: str
    labels: Mapping[str, str]
    template_key: str
    created: float


@dataclass(frozen=True)
class UnschedulablePod:
    """A pod whose PodScheduled condition is False with reason Unschedulable."""

    namespace: str
    name: str
    controller_uid: str
    labels: Mapping[str, str]
    since: float  # the condition's lastTransitionTime, Unix seconds

    def stuck(self, threshold: float, now: float) -> bool:
        return self.since + threshold < now


def object_meta(obj: Any, namespaced: bool = True) -> tuple[Mapping, str, str]:
    """(metadata, namespace, name) of a Kubernetes object dict; ValueError when malformed.

    A namespaced object without a namespace is in "default"; cluster-scoped ones get "".
    """
    if not isinstance(obj, dict):
        raise ValueError("expected an object (a mapping)")
    meta = obj.get("metadata") or {}
    if not isinstance(meta, dict):
        raise ValueError("metadata: expected a mapping")
    name = meta.get("name")
    if not isinstance(name, str) or not name:
        raise ValueError("metadata.name is missing")
    return meta, (str(meta.get("namespace") or "default") if namespaced else ""), name


def deployment_record(obj: Mapping) -> DeploymentRecord:
    meta, namespace, name = object_meta(obj)
    spec = obj.get("spec") or {}
    return DeploymentRecord(
        namespace,
        name,
        str(meta.get("uid") or ""),
        label_selector(spec.get("selector")),
        template_key(spec.get("template")),
    )


def replicaset_record(obj: Mapping) -> ReplicaSetRecord:
    meta, namespace, name = object_meta(obj)
    spec = obj.get("spec") or {}
    return ReplicaSetRecord(
        namespace,
        name,
        str(meta.get("uid") or ""),
        controller_uid(meta),
        string_map(meta.get("labels"), "metadata.labels"),
        template_key(spec.get("template")),
        parse_time(meta.get("creationTimestamp")),
    )


def unschedulable_pod(obj: Mapping) -> UnschedulablePod | None:
    """The record to keep for a pod, or None when it is not unschedulable right now."""
    meta, namespace, name = object_meta(obj)
    status = obj.get("status") or {}
    if status.get("phase") in TERMINAL_POD_PHASES:
        return None  # Karmada's pod informer never sees terminal pods
    for condition in status.get("conditions") or ():
        if isinstance(condition, dict) and condition.get("type") == "PodScheduled":
            if condition.get("status") != "False" or condition.get("reason") != "Unschedulable":
                return None
            since = parse_time(condition.get("lastTransitionTime"))
            labels = string_map(meta.get("labels"), "metadata.labels")
            return UnschedulablePod(namespace, name, controller_uid(meta), labels, since)
    return None


# --- the immutable index ----------------------------------------------------------------

R = TypeVar("R")
ByNamespace = Mapping[str, Mapping[str, R]]


def _api_group(api_version: str) -> str:
    group, slash, _ = api_version.rpartition("/")
    return group if slash else ""


class WorkloadIndex:
    """Deployments, ReplicaSets and unschedulable pods of one snapshot, by namespace."""

    def __init__(
        self,
        deployments: ByNamespace[DeploymentRecord] = _EMPTY,
        replicasets: ByNamespace[ReplicaSetRecord] = _EMPTY,
        unschedulable: ByNamespace[UnschedulablePod] = _EMPTY,
    ):
        self.deployments = deployments
        self.replicasets = replicasets
        self.unschedulable = unschedulable

    def new_replicaset(self, deployment: DeploymentRecord) -> ReplicaSetRecord | None:
        """The Deployment's new ReplicaSet (FindNewReplicaSet), or None."""
        candidates = [
            rs
            for rs in self.replicasets.get(deployment.namespace, _EMPTY).values()
            if rs.controller_uid and rs.controller_uid == deployment.uid and deployment.selector.matches(rs.labels)
        ]
        candidates.sort(key=lambda rs: (rs.created, rs.name))
        return next((rs for rs in candidates if rs.template_key == deployment.template_key), None)

    def count_unschedulable(self, ref: WorkloadRef, now: float) -> int:
        threshold = max(float(ref.threshold_seconds), 0.0)
        pods = self.unschedulable.get(ref.namespace, _EMPTY).values()
        group = _api_group(ref.api_version)
        if (group, ref.kind) == ("apps", "Deployment"):
            deployment = self.deployments.get(ref.namespace, _EMPTY).get(ref.name)
            if deployment is None:
                raise errors.NotFound(f"Deployment {ref.namespace}/{ref.name} is not in this member's cache")
            replicaset = self.new_replicaset(deployment)
            if replicaset is None or not replicaset.uid:
                return 0
            return sum(
                1
                for pod in pods
                if pod.controller_uid == replicaset.uid
                and deployment.selector.matches(pod.labels)
                and pod.stuck(threshold, now)
            )
        rule = POD_LABEL_KINDS.get((group, ref.kind))
        if rule is None:
            raise errors.Unsupported(
                f"GetUnschedulableReplicas does not support {ref.api_version} {ref.kind}; "
                f"supported kinds: {', '.join(SUPPORTED_KINDS)}"
            )
        return sum(
            1
            for pod in pods
            if pod.labels.get(rule.key) == ref.name
            and all(pod.labels.get(key) in allowed for key, allowed in rule.also)
            and pod.stuck(threshold, now)
        )


EMPTY_INDEX = WorkloadIndex()


# --- the mutable state the cache keeps --------------------------------------------------


class _NamespacedStore(Generic[R]):
    """namespace -> name -> record, frozen per namespace: freezing copies only changed namespaces."""

    def __init__(self) -> None:
        self._live: dict[str, dict[str, R]] = {}
        self._frozen: dict[str, Mapping[str, R]] = {}
        self._dirty: set[str] = set()

    def set(self, namespace: str, name: str, record: R | None) -> bool:
        """Store or (None) drop a record; True if that changed anything."""
        records = self._live.get(namespace)
        old = records.get(name) if records else None
        if old == record:
            return False
        if record is None:
            assert records is not None  # old, not None, came from it
            del records[name]
            if not records:
                del self._live[namespace]
        else:
            self._live.setdefault(namespace, {})[name] = record
        self._dirty.add(namespace)
        return True

    def __len__(self) -> int:
        return sum(map(len, self._live.values()))

    def live(self) -> Mapping[str, Mapping[str, R]]:
        """namespace -> name -> record as held now: the table itself, not a copy."""
        return self._live

    def freeze(self) -> Mapping[str, Mapping[str, R]]:
        for namespace in self._dirty:
            records = self._live.get(namespace)
            if records:
                self._frozen[namespace] = MappingProxyType(dict(records))
            else:
                self._frozen.pop(namespace, None)
        self._dirty.clear()
        return MappingProxyType(dict(self._frozen))


class WorkloadState:
    """What the cache knows about workloads; not thread-safe (the cache's lock guards it)."""

    def __init__(self) -> None:
        self._deployments: _NamespacedStore[DeploymentRecord] = _NamespacedStore()
        self._replicasets: _NamespacedStore[ReplicaSetRecord] = _NamespacedStore()
        self._unschedulable: _NamespacedStore[UnschedulablePod] = _NamespacedStore()
        self._index: WorkloadIndex | None = EMPTY_INDEX

    def _changed(self, changed: bool) -> bool:
        if changed:
            self._index = None
        return changed

    def set_deployment(self, namespace: str, name: str, record: DeploymentRecord | None) -> bool:
        return self._changed(self._deployments.set(namespace, name, record))

    def set_replicaset(self, namespace: str, name: str, record: ReplicaSetRecord | None) -> bool:
        return self._changed(self._replicasets.set(namespace, name, record))

    def set_pod(self, namespace: str, name: str, record: UnschedulablePod | None) -> bool:
        return self._changed(self._unschedulable.set(namespace, name, record))

    def live_unschedulable(self) -> Mapping[str, Mapping[str, UnschedulablePod]]:
        """namespace -> pod name -> the unschedulable pods held now: the table itself, not a
        copy, for a loader that asks about every pod (read it, never write through it; it
        changes as `set_pod` does)."""
        return self._unschedulable.live()

    def counts(self) -> dict[str, int]:
        return {
            "deployments": len(self._deployments),
            "replicasets": len(self._replicasets),
            "unschedulable_pods": len(self._unschedulable),
        }

    def index(self) -> WorkloadIndex:
        if self._index is None:
            self._index = WorkloadIndex(
                self._deployments.freeze(), self._replicasets.freeze(), self._unschedulable.freeze()
            )
        return self._index
