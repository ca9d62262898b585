"""The lowest-floor job (`make test-floors`, run by `make test`): in its venv every direct
dependency must be installed at exactly the lowest version pyproject.toml allows, or the job
would test something other than the floors. Outside that job (KARMADA_ESTIMATOR_FLOORS unset)
only the declarations are checked."""

from __future__ import annotations

import os
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

REPO = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
DIRECT = [Requirement(r) for r in PROJECT["dependencies"] + PROJECT["optional-dependencies"]["test"]]


def floor(requirement: Requirement) -> Version:
    lows = [Version(s.version) for s in requirement.specifier if s.operator in (">=", "==", "~=")]
    assert lows, f"{requirement}: no lower bound"
    return max(lows)


@pytest.mark.parametrize("requirement", DIRECT, ids=[r.name for r in DIRECT])
def test_every_direct_dependency_declares_a_floor_it_allows(requirement):
    assert requirement.specifier.contains(floor(requirement), prereleases=True), requirement


@pytest.mark.skipif(not os.environ.get("KARMADA_ESTIMATOR_FLOORS"), reason="only in make test-floors' venv")
@pytest.mark.parametrize("requirement", DIRECT, ids=[r.name for r in DIRECT])
def test_the_floors_venv_holds_exactly_the_declared_floor(requirement):
    """A higher version here means something else (another dependency's own floor, or a release
    missing from PyPI) forbids the declared one: raise the floor to what is installed."""
    installed, want = Version(metadata.version(requirement.name)), floor(requirement)

    def padded(v: Version) -> tuple[int, ...]:  # X.Y is X.Y.0; a post-release counts as its release
        return v.release + (0,) * (4 - len(v.release))
    assert padded(installed) == padded(want), f"{requirement.name} {installed} installed, floor {want}"
