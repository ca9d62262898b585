"""The image's reproducibility: a base pinned by digest, every package from requirements.lock
with its hashes, and the lock generated from pyproject.toml as it is now (deploy/image/lock.py).
With a Docker daemon the image is built and run too (skipped otherwise: the checks above hold
the Dockerfile and the lock consistent without one)."""

from __future__ import annotations

import importlib.util
import re
import shutil
import subprocess

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from estimator.deploy import manifests as m
from tests.deploy.test_manifests import REPO, dockerfile_instructions

spec = importlib.util.spec_from_file_location("lock", REPO / "deploy" / "image" / "lock.py")
lock = importlib.util.module_from_spec(spec)
spec.loader.exec_module(lock)
LOCK_TEXT = (REPO / "requirements.lock").read_text()
REGENERATE = "run `make lock` (needs PyPI) and commit requirements.lock"


def test_the_base_image_is_pinned_by_digest_and_every_stage_uses_it():
    rows = dockerfile_instructions()
    (arg,) = [rest for keyword, rest in rows if keyword == "ARG" and rest.startswith("PYTHON_IMAGE=")]
    assert re.fullmatch(r"PYTHON_IMAGE=python:3\.\d+\.\d+-slim-bookworm@sha256:[0-9a-f]{64}", arg), arg
    assert [rest.split()[0] for keyword, rest in rows if keyword == "FROM"] == ["${PYTHON_IMAGE}"] * 2


def test_the_lock_was_generated_from_pyproject_as_it_is_now():
    recorded = next(line for line in LOCK_TEXT.splitlines() if line.startswith(lock.DIGEST_LINE))
    assert recorded == lock.DIGEST_LINE + lock.digest(lock.inputs()), (
        f"pyproject.toml's dependencies or build requirements changed since requirements.lock was made: {REGENERATE}")
    assert f"for Python {lock.image_python()} on Linux" in LOCK_TEXT, f"the image's Python changed: {REGENERATE}"


def test_every_requirement_is_met_by_a_pin_and_every_pin_has_hashes():
    pins = lock.pins(LOCK_TEXT)
    for text in lock.inputs():
        requirement = Requirement(text)
        name = canonicalize_name(requirement.name)
        assert name in pins, f"{name} is not in requirements.lock: {REGENERATE}"
        assert requirement.specifier.contains(pins[name], prereleases=True), (
            f"{name}=={pins[name]} does not satisfy {requirement}: {REGENERATE}")
    blocks = re.split(r"\n(?=[A-Za-z0-9])", LOCK_TEXT.split(lock.DIGEST_LINE, 1)[1].split("\n", 1)[1])
    assert len([b for b in blocks if b.strip()]) == len(pins)
    for block in blocks:
        if block.strip():
            assert "--hash=sha256:" in block, f"no hash: {block.splitlines()[0]}"


def test_the_image_installs_exactly_the_lock_and_the_package_without_resolving():
    runs = [rest for keyword, rest in dockerfile_instructions() if keyword == "RUN"]
    install_lock = next(r for r in runs if "requirements.lock" in r)
    assert "--require-hashes" in install_lock and "--no-deps" in install_lock
    install_package = next(r for r in runs if "pip install" in r and " ." in r and "requirements.lock" not in r)
    assert "--no-deps" in install_package and "--no-build-isolation" in install_package
    copies = [rest.split() for keyword, rest in dockerfile_instructions() if keyword == "COPY"]
    assert ["requirements.lock", "./"] in copies


def test_the_image_runs_as_karmada_expects_it_to_be_started():
    """Karmada's chart and karmadactl start `/bin/karmada-scheduler-estimator` (their `command`
    replaces our ENTRYPOINT): it is a link to our entrypoint."""
    warm = next(rest for keyword, rest in dockerfile_instructions() if keyword == "RUN" and "warmup" in rest)
    assert f"ln -s {m.ENTRYPOINT} /bin/karmada-scheduler-estimator" in warm


def _docker_daemon() -> bool:
    if shutil.which("docker") is None:
        return False
    return subprocess.run(["docker", "info"], capture_output=True, timeout=30).returncode == 0


@pytest.mark.slow
@pytest.mark.skipif(not _docker_daemon(), reason="no Docker daemon: the Dockerfile and lock are checked above")
def test_the_image_builds_runs_non_root_read_only_and_loads_its_kernels_without_compiling():
    tag = "karmada-accurate-estimator:test"
    subprocess.run(["docker", "build", "-t", tag, str(REPO)], check=True, timeout=3600)
    user = subprocess.run(["docker", "image", "inspect", "-f", "{{.Config.User}}", tag], capture_output=True, text=True,
                          check=True).stdout.strip()
    assert user == f"{m.RUN_AS}:{m.RUN_AS}"
    # As the manifests run it: read-only root, an emptyDir (tmpfs) for the numba cache and /tmp.
    probe = ("import importlib, pkgutil; from numba.core.registry import CPUDispatcher; from estimator import kernels; "
             "kernels.warmup(); m = 0\n"
             "for i in pkgutil.iter_modules(kernels.__path__):\n"
             "    mod = importlib.import_module('estimator.kernels.' + i.name)\n"
             "    m += sum(sum(v.stats.cache_misses.values()) for v in vars(mod).values() if isinstance(v, CPUDispatcher))\n"
             "print('misses', m)")
    shown = subprocess.run(
        ["docker", "run", "--rm", "--read-only", "--tmpfs", "/tmp", "--tmpfs",
         f"/var/cache/karmada-estimator:uid={m.RUN_AS},gid={m.RUN_AS}", "--entrypoint", "sh", tag, "-c",
         f"/bin/karmada-scheduler-estimator manifests --cluster-name member-b --part member >/dev/null "
         f"&& python -c \"$0\"", probe], capture_output=True, text=True, timeout=600)
    assert shown.returncode == 0, shown.stderr
    assert shown.stdout.strip().endswith("misses 0"), shown.stdout
