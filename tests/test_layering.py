"""Estimator layering, stated once and checked (docs/architecture.md): numba only in
kernels/_numba.py, the Kubernetes client only in watch/kubeclient.py, gRPC and protobuf
only at the edges; the pure modules touch none of them."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "estimator"

# outside-world library -> the only modules (relative to estimator/) allowed to import it
ALLOWED = {
    "numba": {"kernels/_numba.py"},
    "kubernetes": {"watch/kubeclient.py"},
    "grpc": {"servicer.py", "server.py"},
    "grpc_health": {"server.py"},
    "grpc_reflection": {"server.py"},
    "google.protobuf": {"convert.py", "servicer.py"},
    "estimator.pb": {"convert.py", "servicer.py", "server.py"},
    "yaml": {"kubefiles.py", "snapshot_source.py", "manifests.py"},
    "prometheus_client": {"metrics.py"},
}
# Pure logic: no files, sockets, threads or processes either.
PURE = {"model.py", "resources.py", "filters.py", "podrequests.py", "framework.py", "estimate.py",
        "plugins/noderesource.py", "plugins/resourcequota.py", "workloads.py"}
IO = ("socket", "subprocess", "http", "urllib", "threading", "open")


def _imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
    return names


MODULES = sorted(p for p in PACKAGE.rglob("*.py") if "pb" not in p.relative_to(PACKAGE).parts)


@pytest.mark.parametrize("path", MODULES, ids=[str(p.relative_to(PACKAGE)) for p in MODULES])
def test_outside_libraries_enter_only_through_their_edge(path):
    module = str(path.relative_to(PACKAGE))
    for name in _imports(path):
        for library, owners in ALLOWED.items():
            if name == library or name.startswith(library + "."):
                assert module in owners, f"{module} imports {name}; only {sorted(owners)} may"


@pytest.mark.parametrize("module", sorted(PURE))
def test_pure_modules_do_no_io(module):
    for name in _imports(PACKAGE / module):
        assert name.split(".")[0] not in IO, f"{module} imports {name}"
