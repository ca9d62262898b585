"""Where compiled kernels are cached when nobody says (no `make`, no NUMBA_CACHE_DIR)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from estimator.kernels import _numba
from estimator.kernels._numba import default_cache_dir

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    root = tmp_path / "clone"
    root.mkdir()
    (root / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    return root


@pytest.fixture
def venv(tmp_path: Path) -> Path:
    root = tmp_path / "venv"
    root.mkdir()
    return root


def test_an_explicit_numba_cache_dir_wins(checkout, venv):
    env = {"NUMBA_CACHE_DIR": "/srv/numba", "XDG_CACHE_HOME": "/xdg", "HOME": "/home/u"}
    assert default_cache_dir(env, checkout, venv) == ("/srv/numba", "NUMBA_CACHE_DIR")


def test_xdg_cache_home_comes_next(checkout, venv):
    path, _ = default_cache_dir({"XDG_CACHE_HOME": "/xdg", "HOME": "/home/u"}, checkout, venv)
    assert path == "/xdg/karmada-estimator/numba"


def test_a_relative_xdg_cache_home_is_ignored_as_the_spec_asks(checkout, venv):
    path, _ = default_cache_dir({"XDG_CACHE_HOME": "rel/cache", "HOME": "/home/u"}, checkout, venv)
    assert path == str(checkout / ".numba_cache")


def test_a_source_checkout_keeps_the_cache_beside_the_code_like_make_does(checkout, venv):
    path, _ = default_cache_dir({"HOME": "/home/u"}, checkout, venv)
    assert path == str(checkout / ".numba_cache")


def test_an_installed_copy_in_a_virtualenv_caches_inside_it(tmp_path, venv):
    not_a_checkout = tmp_path / "site-packages"
    not_a_checkout.mkdir()
    path, _ = default_cache_dir({"HOME": "/home/u"}, not_a_checkout, venv)
    assert path == str(venv / "var" / "cache" / "karmada-estimator" / "numba")


def test_only_an_install_outside_any_checkout_or_venv_uses_the_home_cache(tmp_path):
    path, _ = default_cache_dir({"HOME": "/home/u"}, tmp_path, None)
    assert path == "/home/u/.cache/karmada-estimator/numba"


def test_a_checkout_this_process_cannot_write_to_is_not_used(checkout, venv, monkeypatch):
    # Faked rather than chmod-ed: root (CI, containers) may write to a read-only directory.
    real_access = os.access
    monkeypatch.setattr(_numba.os, "access", lambda p, mode: Path(p) != checkout and real_access(p, mode))
    path, _ = default_cache_dir({"HOME": "/home/u"}, checkout, venv)
    assert path == str(venv / "var" / "cache" / "karmada-estimator" / "numba")


def test_without_numba_cache_dir_kernels_compile_into_xdg_cache_home_and_help_says_so(tmp_path):
    """A real process: NUMBA_CACHE_DIR unset, XDG_CACHE_HOME set; one tiny kernel compiles."""
    xdg = tmp_path / "xdg"
    mod = tmp_path / "mod"
    mod.mkdir()
    (mod / "tiny_kernel.py").write_text(textwrap.dedent("""\
        from estimator.kernels._numba import kernel

        @kernel
        def add_one(x):
            return x + 1
        """))
    script = textwrap.dedent(f"""\
        import sys
        sys.path.insert(0, {str(mod)!r})
        from estimator.cli.options import build_parser
        import tiny_kernel
        assert tiny_kernel.add_one(41) == 42
        print(build_parser().format_help())
        """)
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
    env.update(XDG_CACHE_HOME=str(xdg), HOME=str(tmp_path / "home"))
    done = subprocess.run([sys.executable, "-c", script], env=env, cwd=REPO, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    cache = xdg / "karmada-estimator" / "numba"
    written = sorted(p.name for p in cache.rglob("*") if p.is_file())
    assert any(name.startswith("tiny_kernel.add_one") and name.endswith(".nbi") for name in written), written
    assert any(name.endswith(".nbc") for name in written), written
    assert not (tmp_path / "home").exists()
    assert f"cached in {cache}" in " ".join(done.stdout.split())


def test_cached_kernels_load_without_numbas_other_implementations_and_compiling_still_works():
    """A real process starting from a warm cache: the warm-up loads every kernel without the
    implementations numba would load for compiling (its linear algebra, typed containers,
    random; its array implementations too, about 4 MB, as no kernel allocates), the kernels
    answer, and a function compiled afterwards still compiles."""
    script = textwrap.dedent("""\
        import sys
        import numpy as np
        from estimator import kernels
        kernels.warmup()
        print(sorted(m for m in ("numba.np.linalg", "numba.typed.typeddict", "numba.np.random.generator_core",
                                 "numba.np.arrayobj") if m in sys.modules))
        available = np.array([[4, 8], [2, 8]], dtype=np.int64)
        print(int(kernels.sum_fit(available, np.array([1, 3], dtype=np.int64), np.ones(2, dtype=np.bool_))))
        import numba

        @numba.njit
        def total(a):
            return np.sqrt(np.sum(a * a)) + len(sorted(list(a)))

        print(round(total(np.array([3, 4], dtype=np.int64)), 3))
        """)
    runs = [subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=600)
            for _ in range(2)]  # the first may compile the kernels (a cold cache); the second loads them
    assert runs[1].returncode == 0, runs[1].stderr
    assert runs[1].stdout.split("\n")[:3] == ["[]", "4", "7.0"], runs[1].stdout


def test_warm_ups_at_once_leave_numbas_cache_load_as_it_was():
    """One warm-up's swap is inside while another starts: the second waits for the first to
    restore numba's method (else it would keep the first's swap and put it back last)."""
    from numba.core import caching

    before = caching.Cache.load_overload
    inside, leave, first_out = threading.Event(), threading.Event(), threading.Event()

    def first():
        with _numba.loading_from_cache_only():
            inside.set()
            leave.wait(10)
        first_out.set()

    def second():
        with _numba.loading_from_cache_only():
            first_out.wait(10)

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    threads[0].start()
    assert inside.wait(10)
    threads[1].start()
    time.sleep(0.3)  # the second would be inside by now if nothing held it
    leave.set()
    for thread in threads:
        thread.join(20)
    assert caching.Cache.load_overload is before


def test_sealed_kernels_answer_as_before_refuse_new_types_and_leave_other_compiling_alone():
    """A real process (the seal is for good): after the warm-up, `seal()` drops the linking
    modules of every compiled kernel; the kernels give the same answers, a call with types
    the warm-up did not compile fails with numba's TypeError (no compilation that could not
    link), and a function of someone else's still compiles."""
    script = textwrap.dedent("""\
        import numpy as np
        from estimator import kernels
        from estimator.kernels import fit
        kernels.warmup()
        available = np.array([[4, 8, 1], [2, 8, 0], [3, 3, 2]], dtype=np.int64)
        requests = np.array([[1, 2, 0], [1, 1, 1]], dtype=np.int64)
        masks = np.ones((2, 3), dtype=np.bool_)

        def answers():
            best = kernels.best_sets(available, requests, [1, 2], masks, 100)
            first = kernels.first_fit_with_bound(available, requests, [1, 2], masks, 100)
            return (kernels.sum_fit(available, requests[1], masks[1]), best.sets, best.bound, first.sets,
                    first.bound, best.placement.tolist())

        before = answers()
        print(kernels.seal() > 0)
        print(answers() == before)
        try:
            fit.fit_sum(available.astype(np.int32), requests[1].astype(np.int32), masks[1], fit.magics_buffer(3))
            print("compiled")
        except TypeError as error:
            print(str(error).split(" for ")[0])
        import numba

        @numba.njit
        def twice(a):
            return a * 2

        print(twice(21))
        """)
    done = subprocess.run([sys.executable, "-c", script], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:4] == ["True", "True", "No matching definition", "42"], done.stdout
