"""An object owns its fields (docs/house-style.md, "State you can see"): a module reaches
another module's state through its public names, never through `obj._private` or
`from m import _private`. Checked here on the source of `estimator/` and `scheduler_client/`
with `ast` (tests, benchmarks and e2e may look inside; `estimator/pb/` is generated).

The rule, simple enough to trust:
- `from m import _name` (and `import m._name`) is private access unless `_name` is a module of
  a package the importer belongs to (a package's private modules serve that package:
  `estimator/kernels/_numba.py` is imported by the kernels only);
- `x._name` is private access unless `x` is `self` or `cls`, or this very module defines
  `_name` (a function, class or name it binds, or an attribute it sets on `self`/`cls`):
  a module may read the fields of the objects it defines, e.g. a helper class beside the
  class it serves, or `other._x` in a comparison;
- dunders are public, and so are the few underscore names Python documents as public API
  (`DOCUMENTED`).
A name defined in this module AND in the one the object comes from is not caught (the rule
does not know types); review catches those.

What remains is listed in `ALLOWED`, each with its reason, and the list is held to what is
there: an entry that no longer matches anything fails the second test, so a fix shrinks it.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("estimator", "scheduler_client")
GENERATED = ("estimator/pb/",)

# Underscore names Python documents as public API.
DOCUMENTED = {
    "_replace": "collections.namedtuple: documented method",
    "_asdict": "collections.namedtuple: documented method",
    "_fields": "collections.namedtuple: documented attribute",
    "_make": "collections.namedtuple: documented class method",
    "_field_defaults": "collections.namedtuple: documented attribute",
    "os._exit": "documented in the os module: exit without cleanup (a forked child, a hard stop)",
    "sys._getframe": "documented in the sys module (CPython); what logging.findCaller uses",
}

# (file, the access as written) -> why it stays.
ALLOWED = {
    ("estimator/service/logsetup.py", "logging._startTime"):
        "the stdlib keeps the process start only there; records made off the logging path get the same "
        "relativeCreated as logging's own (no public accessor)",
    ("estimator/kernels/_numba.py", "cache._load_overload"):
        "numba's Cache.load_overload refreshes the whole target context before each load (12 MB of "
        "implementations a server of cached kernels never runs); _load_overload is the same load without it, "
        "and numba has no public switch (third-party, not ours to change)",
    ("estimator/kernels/_numba.py", "library._shared_module"):
        "numba keeps every compiled kernel's whole LLVM module only to link it into a later compilation "
        "(about 5 MB); the sealed server compiles nothing more (disable_compile, numba's public switch, is set "
        "first) and numba has no public way to let go of it (third-party, not ours to change)",
    ("estimator/core/cel.py", "node._meta"):
        "lark's Tree keeps its position in _meta and has no setter: the depth/size guard swaps it for a light "
        "position object (third-party, not ours to change)",
}


def _python_files():
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if not rel.startswith(GENERATED):
                yield rel, path


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _defined(tree: ast.AST) -> set[str]:
    """The names a module defines: its functions and classes, the names it binds, and the
    attributes it sets on `self` or `cls`."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif (isinstance(node, ast.Attribute) and isinstance(node.ctx, (ast.Store, ast.Del))
              and isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
            names.add(node.attr)
    return names


def _module_name(rel: str) -> str:
    parts = rel[:-len(".py")].split("/")
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _package_of(rel: str) -> str:
    parts = rel[:-len(".py")].split("/")
    return ".".join(parts[:-1])


def _is_module(dotted: str) -> bool:
    base = ROOT.joinpath(*dotted.split("."))
    return base.with_suffix(".py").exists() or (base / "__init__.py").exists()


def _import_ok(importer: str, dotted: str) -> bool:
    """`dotted` (a module path, or a module path plus one name) may be imported by the module
    in package `importer`: every private part of it is a module of a package `importer` is in."""
    parts = dotted.split(".")
    for i, part in enumerate(parts):
        if not _private(part):
            continue
        owner = ".".join(parts[:i])
        if not _is_module(".".join(parts[:i + 1])):
            return False  # a private name, not a module
        if not (importer == owner or importer.startswith(owner + ".")):
            return False  # a private module of a package this one is not in
    return True


def _absolute(rel: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    parts = _package_of(rel).split(".")
    base = parts[:len(parts) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _accesses(rel: str, path: Path):
    """(the access as written, line) for every private access of the module at `path`."""
    tree = ast.parse(path.read_text(), filename=rel)
    own = _defined(tree)
    package = _package_of(rel) if not rel.endswith("__init__.py") else _module_name(rel)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            source = _absolute(rel, node)
            for alias in node.names:
                if not _import_ok(package, f"{source}.{alias.name}"):
                    yield f"from {'.' * node.level}{node.module or ''} import {alias.name}", node.lineno
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if not _import_ok(package, alias.name):
                    yield f"import {alias.name}", node.lineno
        elif isinstance(node, ast.Attribute) and _private(node.attr):
            if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                continue
            text = ast.unparse(node)
            if node.attr in own or node.attr in DOCUMENTED or text in DOCUMENTED:
                continue
            yield text, node.lineno


def _found() -> dict[tuple[str, str], list[int]]:
    found: dict[tuple[str, str], list[int]] = {}
    for rel, path in _python_files():
        for text, line in _accesses(rel, path):
            found.setdefault((rel, text), []).append(line)
    return found


def test_no_module_reaches_into_another_modules_private_names():
    unexpected = {key: lines for key, lines in _found().items() if key not in ALLOWED}
    assert not unexpected, "private access across modules (give the owner a public method or name):\n" + "\n".join(
        f"  {rel}:{','.join(map(str, lines))}: {text}" for (rel, text), lines in sorted(unexpected.items()))


def test_the_allow_list_has_no_stale_entries():
    stale = sorted(set(ALLOWED) - set(_found()))
    assert not stale, "fixed, so take them off ALLOWED in tests/test_private_access.py:\n" + "\n".join(
        f"  {rel}: {text}" for rel, text in stale)


def test_the_rule_catches_each_kind_of_private_access(tmp_path, monkeypatch):
    """The checker on a small made-up package: what it must report and what it must not."""
    pkg = tmp_path / "estimator" / "demo"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "_helpers.py").write_text("def _inner():\n    pass\n")
    (pkg / "owner.py").write_text(
        "class Owner:\n"
        "    def __init__(self):\n"
        "        self._table = {}\n"
        "    def same(self, other):\n"
        "        return self._table == other._table\n"  # a field this module defines: fine
        "\n"
        "class Helper:\n"
        "    def __init__(self, owner):\n"
        "        self._rows = owner._table\n"  # beside its owner: fine
    )
    (pkg / "user.py").write_text(
        "from estimator.demo import _helpers\n"  # the package's own private module: fine
        "from estimator.demo._helpers import _inner\n"  # a private name: reported
        "from ._helpers import _inner as again\n"  # relative: reported
        "import os\n"
        "def use(owner, row):\n"
        "    os._exit(0)\n"  # documented: fine
        "    row._replace(a=1)\n"  # namedtuple API: fine
        "    return owner._table, owner.__class__\n"  # another module's field: reported; dunder: fine
    )
    (tmp_path / "scheduler_client").mkdir()
    (tmp_path / "scheduler_client" / "cli.py").write_text("from estimator.demo import _helpers\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    found = set(_found())
    assert found == {
        ("estimator/demo/user.py", "from estimator.demo._helpers import _inner"),
        ("estimator/demo/user.py", "from ._helpers import _inner"),
        ("estimator/demo/user.py", "owner._table"),
        ("scheduler_client/cli.py", "from estimator.demo import _helpers"),
    }, found
