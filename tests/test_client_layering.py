"""scheduler_client layering, stated once and checked: pure logic imports no gRPC, protobuf,
Kubernetes client or YAML; only the edge modules do."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "scheduler_client"
# module -> the outside-world libraries it may import
EDGES = {
    "accurate.py": {"grpc", "estimator.pb"},
    "wire.py": {"estimator.pb"},
    "launch.py": {"grpc", "grpc_health"},
    "sources.py": {"yaml"},
    "cli.py": {"yaml"},
}
WORLD = ("grpc", "grpc_health", "estimator.pb", "kubernetes", "yaml", "socket", "ssl", "subprocess")


def _imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


MODULES = sorted(p for p in PACKAGE.rglob("*.py") if p.name not in ("demo.py",))


@pytest.mark.parametrize("path", MODULES, ids=[str(p.relative_to(PACKAGE)) for p in MODULES])
def test_only_edge_modules_touch_the_outside_world(path):
    allowed = EDGES.get(path.name, set()) | ({"socket", "ssl"} if path.name == "accurate.py" else set()) \
        | ({"subprocess", "socket"} if path.name == "launch.py" else set())
    for name in _imports(path):
        world = next((w for w in WORLD if name == w or name.startswith(w + ".")), None)
        assert world is None or world in allowed, f"{path.name} imports {name}"
