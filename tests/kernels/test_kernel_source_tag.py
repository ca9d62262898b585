"""Compiled kernels are cached per version of the kernel sources, so a kernel that calls a
helper from another module never keeps a stale copy of it after an edit (numba's own cache
check looks at the caller's file only)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

from estimator.kernels import _numba
from estimator.kernels._numba import keyed_cache_dir, source_tag

REPO = Path(__file__).resolve().parents[2]
KERNELS = REPO / "estimator" / "kernels"


def test_the_tag_changes_with_any_kernel_module_and_only_with_them(tmp_path):
    copy = tmp_path / "kernels"
    shutil.copytree(KERNELS, copy, ignore=shutil.ignore_patterns("__pycache__"))
    assert source_tag(copy) == source_tag(KERNELS)
    assert _numba.CACHE_DIR.endswith(source_tag(KERNELS))
    (copy / "notes.txt").write_text("not a module")
    assert source_tag(copy) == source_tag(KERNELS)
    helper = copy / "_arith.py"
    helper.write_text(helper.read_text() + "\n# edited\n")
    assert source_tag(copy) != source_tag(KERNELS)


def test_a_directory_already_keyed_is_not_keyed_twice():
    assert keyed_cache_dir("/c/numba", "src-ab") == os.path.join("/c/numba", "src-ab")
    assert keyed_cache_dir("/c/numba/src-ab", "src-ab") == "/c/numba/src-ab"
    assert keyed_cache_dir("/c/numba/src-ab/", "src-ab") == "/c/numba/src-ab/"


_CALLER = """\
from estimator.kernels._numba import kernel
from tinyk.helper import step

@kernel
def twice_step(x):
    return 2 * step(x)
"""

_RUN = """\
import os, sys
sys.path.insert(0, {root!r})
from estimator.kernels._numba import keyed_cache_dir, source_tag
base = {base!r}
if {keyed}:
    base = keyed_cache_dir(base, source_tag(os.path.join({root!r}, "tinyk")))
os.environ["NUMBA_CACHE_DIR"] = base
import numba
numba.core.config.reload_config()
from tinyk.caller import twice_step
print(twice_step(1))
"""


def _run(root: Path, base: Path, keyed: bool) -> int:
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    done = subprocess.run([sys.executable, "-c", _RUN.format(root=str(root), base=str(base), keyed=keyed)],
                          env=env, cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return int(done.stdout.split()[-1])


def test_an_edited_helper_recompiles_the_kernels_of_other_modules_that_call_it(tmp_path):
    """Two cache directories: keyed by the sources as `_numba` does, and plain. After the
    helper changes, the keyed one gives the new answer; the plain one shows what the key
    prevents (numba loads the caller with the old helper compiled in)."""
    root = tmp_path / "src"
    package = root / "tinyk"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "caller.py").write_text(_CALLER)
    helper = package / "helper.py"
    helper.write_text(textwrap.dedent("""\
        from estimator.kernels._numba import kernel

        @kernel
        def step(x):
            return x + 1
        """))
    keyed, plain = tmp_path / "keyed", tmp_path / "plain"
    assert _run(root, keyed, True) == 4
    assert _run(root, plain, False) == 4
    helper.write_text(helper.read_text().replace("x + 1", "x + 2"))
    assert _run(root, keyed, True) == 6
    assert _run(root, plain, False) == 4  # stale: the reason for the key
