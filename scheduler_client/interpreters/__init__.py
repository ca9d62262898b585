"""Job manifest -> components, one interpreter per (apiVersion group, kind)."""

from __future__ import annotations

from typing import Callable

from scheduler_client.interpreters import kubeflow
from scheduler_client.interpreters.common import InterpretError, Job

Interpreter = Callable[[dict], Job]

# (API group, kind) -> interpreter. The version is not part of the key: Karmada's
# interpreters read fields that are stable across the versions users run.
INTERPRETERS: dict[tuple[str, str], Interpreter] = {
    ("kubeflow.org", "PyTorchJob"): kubeflow.pytorchjob,
}


def supported_kinds() -> list[str]:
    return sorted(f"{kind}.{group}" for group, kind in INTERPRETERS)


def interpret(manifest: dict) -> Job:
    if not isinstance(manifest, dict):
        raise InterpretError("<document>", "a job manifest must be a YAML/JSON object")
    api_version = str(manifest.get("apiVersion", ""))
    kind = str(manifest.get("kind", ""))
    group = api_version.rpartition("/")[0]
    interpreter = INTERPRETERS.get((group, kind))
    if interpreter is None:
        raise InterpretError(
            "kind", f"unsupported job kind {kind or '<none>'} ({api_version or 'no apiVersion'}); "
                    f"supported: {', '.join(supported_kinds())}"
        )
    return interpreter(manifest)


__all__ = ["InterpretError", "Job", "interpret", "supported_kinds"]
