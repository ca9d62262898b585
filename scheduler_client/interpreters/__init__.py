"""Job manifest -> components, one interpreter module per job family.

    interpret(manifest, related=()) -> Job
    supported_kinds() -> ["FlinkDeployment.flink.apache.org", ...]

`related` are the other documents of the job's file (a TrainJob's runtime). Interpreters
are keyed by (API group, kind); the version is not part of the key, as Karmada's
interpreters read fields that are stable across the versions users run.

`karmada_compatible=True` gives the components Karmada's own interpreter produces where this
project reads a kind differently on purpose (Volcano Job gangs, FlinkDeployment memory).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

from scheduler_client.interpreters import flink, jobset, kubeflow, lws, ray, spark, trainer, volcano
from scheduler_client.interpreters.common import InterpretError, Job

# (manifest, related) -> Job; the kinds of _TWO_READINGS also take karmada_compatible=.
Interpreter = Callable[..., Job]

INTERPRETERS: dict[tuple[str, str], Interpreter] = {
    ("kubeflow.org", "PyTorchJob"): kubeflow.pytorchjob,
    ("kubeflow.org", "TFJob"): kubeflow.tfjob,
    ("kubeflow.org", "MPIJob"): kubeflow.mpijob,
    ("kubeflow.org", "XGBoostJob"): kubeflow.xgboostjob,
    ("kubeflow.org", "PaddleJob"): kubeflow.paddlejob,
    ("leaderworkerset.x-k8s.io", "LeaderWorkerSet"): lws.leaderworkerset,
    ("ray.io", "RayCluster"): ray.raycluster,
    ("ray.io", "RayJob"): ray.rayjob,
    ("batch.volcano.sh", "Job"): volcano.volcano_job,
    ("flink.apache.org", "FlinkDeployment"): flink.flinkdeployment,
    ("sparkoperator.k8s.io", "SparkApplication"): spark.sparkapplication,
    ("trainer.kubeflow.org", "TrainJob"): trainer.trainjob,
    ("jobset.x-k8s.io", "JobSet"): jobset.jobset,
}
# Interpreters that read a kind two ways: ours, and Karmada's (karmada_compatible).
_TWO_READINGS = frozenset({("batch.volcano.sh", "Job"), ("flink.apache.org", "FlinkDeployment")})
# Kinds Karmada's built-in interpreter gives components for (componentResource, v1.18).
KARMADA_BUILTIN = frozenset(
    {
        ("kubeflow.org", "PyTorchJob"),
        ("kubeflow.org", "TFJob"),
        ("kubeflow.org", "MPIJob"),
        ("ray.io", "RayCluster"),
        ("ray.io", "RayJob"),
        ("batch.volcano.sh", "Job"),
        ("flink.apache.org", "FlinkDeployment"),
        ("sparkoperator.k8s.io", "SparkApplication"),
    }
)


def supported_kinds() -> list[str]:
    return sorted(f"{kind}.{group}" for group, kind in INTERPRETERS)


def group_kind(manifest: Mapping) -> tuple[str, str]:
    return str(manifest.get("apiVersion", "")).rpartition("/")[0], str(manifest.get("kind", ""))


def is_supported(manifest: object) -> bool:
    return isinstance(manifest, Mapping) and group_kind(manifest) in INTERPRETERS


def interpret(manifest: Mapping, related: Sequence[Mapping] = (), karmada_compatible: bool = False) -> Job:
    if not isinstance(manifest, Mapping):
        raise InterpretError("<document>", "a job manifest must be a YAML/JSON object")
    group, kind = group_kind(manifest)
    interpreter = INTERPRETERS.get((group, kind))
    if interpreter is None:
        api_version = manifest.get("apiVersion") or "no apiVersion"
        raise InterpretError(
            "kind",
            f"unsupported job kind {kind or '<none>'} ({api_version}); supported: {', '.join(supported_kinds())}",
        )
    if (group, kind) in _TWO_READINGS:
        return interpreter(manifest, related, karmada_compatible=karmada_compatible)
    return interpreter(manifest, related)


__all__ = ["KARMADA_BUILTIN", "InterpretError", "Job", "interpret", "is_supported", "supported_kinds"]
