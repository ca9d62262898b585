"""The formatter, linter and type checker hold for estimator/ and scheduler_client/ (issue 30
item 5): `ruff check`, `ruff format --check` and `mypy`, configured in pyproject.toml
([tool.ruff], [tool.mypy]: what each checks, what is left out and why). `make lint` runs the
same three alone, with their own output; `make format` applies ruff's fixes and formatting.
The tools come with the test extra, so a missing one fails here rather than skipping."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# Installed by the test extra (pyproject.toml), next to this interpreter.
BIN = Path(sys.executable).parent


def _run(tool: str, *args: str) -> subprocess.CompletedProcess:
    executable = BIN / tool
    assert executable.exists(), f"{executable} is missing: install the test extra (make test does)"
    return subprocess.run([str(executable), *args], cwd=ROOT, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize(
    "tool,args",
    [("ruff", ("check",)), ("ruff", ("format", "--check")), ("mypy", ())],
    ids=["ruff finds nothing to report", "the code is formatted as ruff formats it", "mypy finds no type errors"],
)
def test_the_tool_passes(tool, args):
    result = _run(tool, *args)
    command = " ".join((tool, *args))
    assert result.returncode == 0, f"`{command}` failed (`make lint` runs it):\n{result.stdout}{result.stderr}"


def test_ruff_sees_both_packages_and_leaves_generated_code_and_the_tests_alone():
    listed = _run("ruff", "check", "--show-files").stdout.split()
    files = {Path(line).resolve().relative_to(ROOT).as_posix() for line in listed if line.endswith((".py", ".pyi"))}
    assert {"estimator/api.py", "estimator/core/model.py", "estimator/pb/regenerate.py", "scheduler_client/cli.py",
            "scheduler_client/karmada/scheduler.py"} <= files
    assert not {f for f in files if f.endswith(("_pb2.py", "_pb2.pyi", "_pb2_grpc.py"))}, "generated code is checked"
    assert not {f for f in files if not f.startswith(("estimator/", "scheduler_client/"))}, "files outside the packages"


def test_mypy_checks_the_packages_not_nothing():
    found = re.search(r"in (\d+) source files", _run("mypy").stdout)
    assert found and int(found.group(1)) >= 100, "mypy checked too few files: see [tool.mypy] files"
