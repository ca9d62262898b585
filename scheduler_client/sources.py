"""Reading the client's input files: the only module here that touches the file system.

Every problem is an InputError naming the file and, where there is one, the field:
"jobs/train.yaml: spec.pytorchReplicaSpecs.Worker.replicas: replicas must be a whole number".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from estimator.api import ObjectFileError, StateLoadError, count_dra_devices, load_object_files, read_objects
from scheduler_client.bindings import BindingError, InFlight, in_flight
from scheduler_client.clusters import ClusterError, ClusterObject, parse_cluster
from scheduler_client.dra import DraResource, served_resources
from scheduler_client.interpreters import InterpretError, Job, interpret, is_supported, supported_kinds
from scheduler_client.karmada import (
    POLICY_KINDS,
    Policy,
    PolicyError,
    StatusError,
    parse_policy,
    resource_summary,
    split_objects,
)
from scheduler_client.memberview import MemberSnapshot


class InputError(ValueError):
    def __init__(self, path: str | Path, field: str, message: str):
        self.path, self.field, self.message = str(path), field, message
        super().__init__(f"{self.path}: {field}: {message}" if field else f"{self.path}: {message}")


def read_documents(path: str | Path) -> list[Any]:
    """Every object in a YAML (multi-document) or JSON file; `kind: *List` items expanded
    (estimator.api.read_objects, the estimator's own reader of --objects files)."""
    try:
        objects = read_objects(path)
    except ObjectFileError as error:
        raise InputError(path, "", error.message) from None
    if not objects:
        raise InputError(path, "", "the file holds no objects")
    return objects


def load_job(path: str | Path, karmada_compatible: bool = False) -> Job:
    """The first supported job in the file; other documents (a TrainJob's runtime) come along.
    `karmada_compatible`: the components as Karmada's own interpreter reads them."""
    documents = read_documents(path)
    job = next((d for d in documents if is_supported(d)), None)
    if job is None:
        first = documents[0]
        kind = first.get("kind") if isinstance(first, Mapping) else None
        api = first.get("apiVersion") if isinstance(first, Mapping) else None
        raise InputError(
            path,
            "kind",
            f"unsupported job kind {kind or '<none>'} ({api or 'no apiVersion'}); "
            f"supported: {', '.join(supported_kinds())}",
        )
    try:
        return interpret(job, [d for d in documents if d is not job], karmada_compatible)
    except InterpretError as error:
        raise InputError(path, error.field, error.message) from None


def load_job_manifest(path: str | Path) -> Mapping:
    return next((d for d in read_documents(path) if is_supported(d)), {})


def load_policy(path: str | Path) -> Policy:
    documents = [d for d in read_documents(path) if isinstance(d, Mapping) and d.get("kind") in POLICY_KINDS]
    if not documents:
        raise InputError(path, "kind", "no PropagationPolicy or ClusterPropagationPolicy in the file")
    try:
        return parse_policy(documents[0])
    except PolicyError as error:
        raise InputError(path, error.field, error.message) from None


def load_clusters(paths: Sequence[str | Path]) -> list[ClusterObject]:
    clusters: list[ClusterObject] = []
    seen: set[str] = set()
    for path in paths:
        for i, document in enumerate(read_documents(path)):
            if not isinstance(document, Mapping) or document.get("kind") != "Cluster":
                continue
            try:
                cluster = parse_cluster(document)
            except ClusterError as error:
                name = (document.get("metadata") or {}).get("name", f"#{i}")
                raise InputError(path, f"Cluster {name}: {error.field}", error.message) from None
            if cluster.name in seen:
                raise InputError(path, "metadata.name", f"Cluster {cluster.name} is given twice")
            seen.add(cluster.name)
            clusters.append(cluster)
        if not clusters:
            raise InputError(path, "kind", "no Karmada Cluster objects in the file")
    return clusters


def load_in_flight(paths: Sequence[str | Path], now: datetime, exclude: frozenset[str] = frozenset()) -> list[InFlight]:
    """ResourceBindings named in files as in flight: each on every member of its spec.clusters
    (a file holding an empty List: nothing is in flight)."""
    out: list[InFlight] = []
    for path in paths:
        try:
            documents = read_objects(path)  # an empty List says: nothing in flight
        except ObjectFileError as error:
            raise InputError(path, "", error.message) from None
        found = [d for d in documents if isinstance(d, Mapping) and d.get("kind") == "ResourceBinding"]
        if documents and not found:
            raise InputError(path, "kind", "no ResourceBinding objects in the file")
        for document in found:
            meta = document.get("metadata") or {}
            try:
                out.extend(in_flight([document], now, exclude, as_given=True))
            except BindingError as error:
                raise InputError(
                    path, f"ResourceBinding {meta.get('namespace')}/{meta.get('name')}: {error.field}", error.message
                ) from None
    return out


def load_member_snapshot(name: str, paths: Sequence[str | Path]) -> MemberSnapshot:
    label = ", ".join(map(str, paths))
    try:
        snapshot = load_object_files(list(paths)).snapshot()
    except StateLoadError as error:
        raise InputError(label, "", f"member {name}: {error}") from None
    objects = [obj for path in paths for obj in read_documents(path)]
    nodes, pods = split_objects(objects)
    try:
        resource_summary(nodes, pods)  # fail here, naming the object, rather than mid-placement
    except StatusError as error:
        raise InputError(label, "", f"member {name}: {error}") from None
    dra: tuple[DraResource, ...] = ()
    failed: frozenset[str] = frozenset()
    if any(isinstance(obj, Mapping) and obj.get("kind") == "DeviceClass" for obj in objects):
        try:
            counts = count_dra_devices(objects)  # the estimator's own counting, CEL selectors included
        except ValueError as error:  # the estimator's loader above refuses these first, naming the object
            raise InputError(label, "", f"member {name}: {error}") from None
        dra, failed = served_resources(nodes, counts), counts.failed_classes
    return MemberSnapshot(name, tuple(nodes), tuple(pods), snapshot, dra, failed)
