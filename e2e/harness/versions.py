"""The peers' versions, read from e2e/versions.mk (the one place that sets them)."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def versions(path: Path = REPO / "e2e" / "versions.mk") -> dict[str, str]:
    found = dict(re.findall(r"^(\w+)\s*:?=\s*(\S+)", path.read_text(), re.M))
    for key in ("KUBERNETES_VERSION", "ETCD_VERSION", "KARMADA_VERSION"):
        if key not in found:
            raise SystemExit(f"{path}: {key} is not set")
    return found
