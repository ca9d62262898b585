"""kubeflow.org training jobs: one component per replica type, named as Karmada names them."""

from __future__ import annotations

from scheduler_client.interpreters.common import InterpretError, Job, component, get, replicas


def _job(manifest: dict, specs_field: str, order: tuple[tuple[str, str], ...]) -> Job:
    meta = manifest.get("metadata") or {}
    namespace = meta.get("namespace") or "default"
    specs = get(manifest, "spec", specs_field, default={})
    if not isinstance(specs, dict):
        raise InterpretError(f"spec.{specs_field}", "must be an object")
    components = []
    for replica_type, name in order:
        spec = specs.get(replica_type)
        if spec is None:
            continue
        field = f"spec.{specs_field}.{replica_type}"
        count = replicas(spec.get("replicas"), f"{field}.replicas")
        components.append(component(name, count, spec.get("template"), namespace, field))
    return Job(manifest.get("apiVersion", ""), manifest.get("kind", ""), namespace, meta.get("name", ""),
               tuple(components))


def pytorchjob(manifest: dict) -> Job:
    return _job(manifest, "pytorchReplicaSpecs", (("Master", "master"), ("Worker", "worker")))
