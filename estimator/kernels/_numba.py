"""The one place that imports numba and fixes the compilation options of every kernel.

Options: `cache=True` (compiled code is kept on disk, so a restart loads it instead of
compiling), `nogil=True` (estimates may run on several threads), `fastmath=False`
(capacity arithmetic is integer and must be exact), `boundscheck=False` (the Python
wrappers validate shapes before any kernel runs).

numba reads NUMBA_CACHE_DIR when it is first imported, so the directory is chosen here,
before the import (`default_cache_dir` says where and why; `--help` prints it).

numba keys a cached function on its own source file only: a kernel that calls an
`@kernel` function from another module (the shared fit arithmetic in `_arith`) would keep
the old copy of that callee after an edit. So the chosen directory gets one subdirectory
per version of the kernel sources (`source_tag`: a hash of every module of this package),
and any edit to any kernel module compiles every kernel afresh. A directory that already
ends in the current tag (inherited by a child process) is used as it is.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import sys
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar, cast, overload

_CHECKOUT = Path(__file__).resolve().parents[2]


def default_cache_dir(environ: Mapping[str, str], checkout: Path | None, venv: Path | None) -> tuple[str, str]:
    """Where compiled kernels are cached, and why there.

    An explicit NUMBA_CACHE_DIR wins, then XDG_CACHE_HOME (absolute paths only, as the XDG
    spec asks). Otherwise the cache stays with the code rather than in the home directory:
    a source checkout uses its `.numba_cache` (the directory `make` uses, so both share one
    warm cache), an installed copy its virtualenv. Only an install outside any venv falls
    back to XDG's own default, ~/.cache. The container image sets NUMBA_CACHE_DIR itself.
    """
    explicit = environ.get("NUMBA_CACHE_DIR", "")
    if explicit:
        return explicit, "NUMBA_CACHE_DIR"
    xdg = environ.get("XDG_CACHE_HOME", "")
    if os.path.isabs(xdg):
        return os.path.join(xdg, "karmada-estimator", "numba"), "$XDG_CACHE_HOME/karmada-estimator/numba"
    if checkout is not None and (checkout / "pyproject.toml").is_file() and os.access(checkout, os.W_OK):
        return str(checkout / ".numba_cache"), "the source checkout's .numba_cache"
    if venv is not None and os.access(venv, os.W_OK):
        return str(venv / "var" / "cache" / "karmada-estimator" / "numba"), "inside the virtualenv"
    home = environ.get("HOME") or os.path.expanduser("~")
    return os.path.join(home, ".cache", "karmada-estimator", "numba"), "XDG default, ~/.cache"


_PACKAGE = Path(__file__).resolve().parent


def source_tag(package: Path | str = _PACKAGE) -> str:
    """ "src-" + a hash of the name and bytes of every .py module in the kernels package."""
    digest = hashlib.sha256()
    for path in sorted(Path(package).glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return "src-" + digest.hexdigest()[:16]


def keyed_cache_dir(base: str, tag: str) -> str:
    """`base`/`tag`, unless `base` already ends in `tag`."""
    return base if os.path.basename(os.path.normpath(base)) == tag else os.path.join(base, tag)


_BASE_DIR, CACHE_DIR_REASON = default_cache_dir(
    os.environ, _CHECKOUT, Path(sys.prefix) if sys.prefix != sys.base_prefix else None
)
CACHE_DIR = keyed_cache_dir(_BASE_DIR, source_tag())
os.environ["NUMBA_CACHE_DIR"] = CACHE_DIR
if "numba" in sys.modules:  # someone imported numba first: make it see the directory anyway
    sys.modules["numba"].core.config.reload_config()


def cache_note() -> str:
    """One line for --help: where compiled kernels are kept, and how to move them."""
    return (
        f"Compiled kernels are cached in {CACHE_DIR}\n({CACHE_DIR_REASON}, one subdirectory per version of "
        "the kernel sources; set NUMBA_CACHE_DIR or XDG_CACHE_HOME to move it)."
    )


import numba  # noqa: E402  (must follow the cache-dir default above)
from llvmlite import ir  # type: ignore[import-untyped]  # noqa: E402  (numba's own code generator)
from numba.extending import intrinsic  # noqa: E402

_Function = TypeVar("_Function", bound=Callable[..., object])


class _Kernel(Protocol):
    """What `kernel` is to the type checker: a decorator that keeps the function's signature.

    numba's own stubs type `njit(f)` as a `Dispatcher[f]` whose call takes no arguments, and
    pick the wrong overload through `functools.partial`; a dispatcher is called exactly like
    the function it compiles, so the kernels and their callers are checked against that.
    """

    @overload
    def __call__(self, function: _Function, /) -> _Function: ...
    @overload
    def __call__(self, *, inline: Literal["always"], _nrt: bool = ...) -> Callable[[_Function], _Function]: ...
    @overload
    def __call__(self, *, _nrt: bool) -> Callable[[_Function], _Function]: ...


kernel = cast(_Kernel, functools.partial(numba.njit, cache=True, nogil=True, fastmath=False, boundscheck=False))
"""Decorator for every kernel: `@kernel` (lazy compile; `warmup()` compiles them all)."""


# numba's typing and code generation objects (the typing and target contexts, the argument
# types, llvmlite's IRBuilder and values) are Any: llvmlite ships no types, and numba calls
# these two itself, never our code.
@intrinsic
def _mulhi(typingctx: Any, a: Any, b: Any) -> tuple[Any, Callable[[Any, Any, Any, Any], Any]]:
    signature = numba.types.uint64(numba.types.uint64, numba.types.uint64)

    def codegen(context: Any, builder: Any, sig: Any, args: Any) -> Any:
        wide = ir.IntType(128)
        product = builder.mul(builder.zext(args[0], wide), builder.zext(args[1], wide))
        return builder.trunc(builder.lshr(product, ir.Constant(wide, 64)), ir.IntType(64))

    return signature, codegen


# Called from kernels as mulhi(a, b) (numba passes the typing context itself).
mulhi = cast("Callable[[Any, Any], Any]", _mulhi)
"""The high 64 bits of the 128-bit product of two uint64 (one multiply on x86-64 and
arm64): `_arith.divide`'s division by a divisor known in advance."""


# Held while numba's cache load is swapped (`loading_from_cache_only`): two warm-ups at once
# (the loader's and the server's threads) would otherwise restore each other's swap.
_SWAPPED = threading.Lock()


@contextlib.contextmanager
def loading_from_cache_only() -> Iterator[None]:
    """While it lasts, a kernel found in numba's cache is loaded without first loading every
    implementation numba has (numba refreshes its target context before each cache load: 89
    more modules, typed lists, dicts, sets, random, linear algebra, and their registries,
    about 12 MB that a server running cached kernels never uses). Loading needs only the
    runtime the compiled code calls (NRT), initialised here. A kernel not in the cache is
    compiled as always: numba's compiler refreshes the context itself."""
    from numba.core import caching
    from numba.core.registry import cpu_target
    from numba.core.runtime import rtsys

    def load(cache: caching.Cache, sig: Any, target_context: Any) -> Any:
        return cache._load_overload(sig, target_context)

    with _SWAPPED:
        rtsys.initialize(cpu_target.target_context)
        refreshing = caching.Cache.load_overload
        caching.Cache.load_overload = load  # type: ignore[method-assign]  # for the warm-up only
        try:
            yield
        finally:
            caching.Cache.load_overload = refreshing  # type: ignore[method-assign]


def release_linking_modules(dispatchers: Iterable[Any]) -> int:
    """For a process that compiles no kernel after its warm-up (the server): every compiled
    specialisation keeps, beside its machine code, an LLVM module for linking it into a later
    compilation that calls it (the whole IR of the kernel, about 5 MB of C heap over all of
    ours). Drops those modules and turns compilation off with numba's public switch
    (`disable_compile`), so a call with argument types the warm-up did not compile fails at
    once with numba's TypeError instead of a compilation that could not link. Dispatchers
    without a specialisation (inlined helpers) are left alone. Returns the modules dropped."""
    dropped = 0
    for dispatcher in dispatchers:
        if not dispatcher.signatures:
            continue
        dispatcher.disable_compile()
        for compiled in dispatcher.overloads.values():
            library = compiled.library
            if getattr(library, "_shared_module", None) is not None:
                library._shared_module = None  # numba re-creates it only to link: never, from now on
                dropped += 1
    return dropped
