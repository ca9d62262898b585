"""Import direction, stated once as import-linter contracts in pyproject.toml
([tool.importlinter]; docs/architecture.md "Layering rules" explains them) and checked here by
running `lint-imports` on the checkout. The second test breaks a copy of the packages on
purpose, so a contract that silently checks nothing (a misspelt module, a wrong root package)
fails the suite too."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# Installed by the test extra (pyproject.toml), next to this interpreter.
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")


def _lint(cwd: Path) -> subprocess.CompletedProcess:
    assert LINT_IMPORTS.exists(), f"{LINT_IMPORTS} is missing: install the test extra (make test does)"
    env = {**os.environ, "PYTHONPATH": str(cwd)}
    return subprocess.run([str(LINT_IMPORTS), "--no-cache", "--no-logo", "pyproject.toml"], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=120)


def test_import_contracts_hold():
    result = _lint(ROOT)
    assert result.returncode == 0, result.stdout + result.stderr
    assert " broken" in result.stdout and "0 broken" in result.stdout, result.stdout


def _append(path: Path, line: str) -> None:
    path.write_text(path.read_text() + "\n" + line + "\n")


def test_a_forbidden_import_breaks_its_contract(tmp_path):
    for package in ("estimator", "scheduler_client"):
        shutil.copytree(ROOT / package, tmp_path / package, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    # One violation per kind of contract: an internal module past the public API, an outside
    # library outside its edge, I/O in the pure core, the wrong direction, and a lower layer
    # reaching up (the estimate into the service edge), and the kubernetes package anywhere.
    _append(tmp_path / "scheduler_client" / "units.py", "import estimator.cluster.cache  # noqa")
    _append(tmp_path / "estimator" / "core" / "model.py", "import numba  # noqa")
    _append(tmp_path / "estimator" / "core" / "filters.py", "import threading  # noqa")
    _append(tmp_path / "estimator" / "core" / "resources.py", "import scheduler_client.units  # noqa")
    _append(tmp_path / "estimator" / "estimate" / "framework.py", "import estimator.service.metrics  # noqa")
    # The service reaching up into the command line (it is handed main, never imports it).
    _append(tmp_path / "estimator" / "service" / "launch.py", "import estimator.cli.main  # noqa")
    # The placement client's two rooms: Karmada's room reaching into the tool, the tool past the room's front.
    _append(tmp_path / "scheduler_client" / "karmada" / "general.py", "import scheduler_client.memberview  # noqa")
    _append(tmp_path / "scheduler_client" / "report.py", "import scheduler_client.karmada.general  # noqa")
    _append(tmp_path / "estimator" / "cluster" / "watch" / "state.py", "import kubernetes  # noqa")
    result = _lint(tmp_path)
    assert result.returncode != 0, result.stdout
    out = result.stdout.replace("\n", " ")
    for broken in (
        "scheduler_client.units -> estimator.cluster.cache",
        "estimator.core.model -> numba",
        "estimator.core.filters -> threading",
        "estimator.core.resources -> scheduler_client.units",
        "estimator.estimate.framework -> estimator.service.metrics",
        "estimator.service.launch -> estimator.cli.main",
        "scheduler_client.karmada.general -> scheduler_client.memberview",
        "scheduler_client.report -> scheduler_client.karmada.general",
        "estimator.cluster.watch.state -> kubernetes",
    ):
        assert broken in out, f"{broken!r} not reported:\n{result.stdout}"
