"""kubeflow.org training jobs: one component per replica type, named as Karmada names them.

- PyTorchJob (v1): Master -> `master`, Worker -> `worker`, in that order; replicas default 1.
- TFJob (v1): PS, Worker, Chief, Master, Evaluator -> `ps`, `worker`, `chief`, `master`,
  `evaluator`, in that order; replicas default 1.
- MPIJob (v2beta1): every replica type that has a template, named as written (`Launcher`,
  `Worker`); replicas default 1, but 0 for a type called worker (any case). Karmada walks a
  Lua table (no fixed order); we keep the manifest's order.

- XGBoostJob and PaddleJob (v1): Master -> `master`, Worker -> `worker`, in that order;
  replica type keys in any case (the training operator camel-cases them); replicas default
  1, as its defaulting does. Karmada (v1.18) ships no interpreter for these two kinds: it
  sees these components only through a ResourceInterpreterCustomization that returns them.

A replica type without a template still counts its replicas (no requirements), except in
MPIJob, which skips it as Karmada does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from scheduler_client.interpreters.common import Job, component, make_job, mapping, metadata, replicas


def _fixed_types(
    manifest: Mapping, specs_field: str, order: tuple[tuple[str, str], ...], any_case: bool = False
) -> Job:
    namespace, _ = metadata(manifest)
    specs = mapping(mapping(manifest.get("spec"), "spec").get(specs_field), f"spec.{specs_field}")
    components = []
    for replica_type, name in order:
        key = replica_type
        if any_case:
            key = next((k for k in specs if str(k).lower() == replica_type.lower()), replica_type)
        if specs.get(key) is None:
            continue
        field = f"spec.{specs_field}.{key}"
        spec = mapping(specs[key], field)
        count = replicas(spec.get("replicas"), f"{field}.replicas")
        components.append(component(name, count, spec.get("template"), namespace, field))
    return make_job(manifest, components)


def pytorchjob(manifest: Mapping, related: Sequence[Mapping] = ()) -> Job:
    return _fixed_types(manifest, "pytorchReplicaSpecs", (("Master", "master"), ("Worker", "worker")))


def tfjob(manifest: Mapping, related: Sequence[Mapping] = ()) -> Job:
    return _fixed_types(
        manifest,
        "tfReplicaSpecs",
        (
            ("PS", "ps"),
            ("Worker", "worker"),
            ("Chief", "chief"),
            ("Master", "master"),
            ("Evaluator", "evaluator"),
        ),
    )


def xgboostjob(manifest: Mapping, related: Sequence[Mapping] = ()) -> Job:
    return _fixed_types(manifest, "xgbReplicaSpecs", (("Master", "master"), ("Worker", "worker")), any_case=True)


def paddlejob(manifest: Mapping, related: Sequence[Mapping] = ()) -> Job:
    return _fixed_types(manifest, "paddleReplicaSpecs", (("Master", "master"), ("Worker", "worker")), any_case=True)


def mpijob(manifest: Mapping, related: Sequence[Mapping] = ()) -> Job:
    namespace, _ = metadata(manifest)
    specs = mapping(mapping(manifest.get("spec"), "spec").get("mpiReplicaSpecs"), "spec.mpiReplicaSpecs")
    components = []
    for replica_type, spec in specs.items():
        field = f"spec.mpiReplicaSpecs.{replica_type}"
        spec = mapping(spec, field)
        if spec.get("template") is None:
            continue
        default = 0 if str(replica_type).lower() == "worker" else 1
        count = replicas(spec.get("replicas"), f"{field}.replicas", default)
        components.append(component(str(replica_type), count, spec["template"], namespace, field))
    return make_job(manifest, components)
