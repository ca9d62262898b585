"""Rebuild the generated protobuf/gRPC modules of estimator/pb/ from proto/.

    python -m estimator.pb.regenerate [--out DIR]

Runs grpc_tools' bundled protoc with include root `proto/`, so the modules land in
DIR/estimator/pb/ and import one another as `from estimator.pb import ...`. DIR defaults
to the repository root, rewriting the committed modules in place (this is `make proto`).
tests/service/test_proto_generated.py regenerates into a temporary DIR and diffs, so stale
committed code fails the tests.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
PROTO_ROOT = REPO_ROOT / "proto"
PACKAGE_DIR = Path("estimator") / "pb"
GENERATED_SUFFIXES = ("_pb2.py", "_pb2.pyi", "_pb2_grpc.py")

_DECLARES_SERVICE = re.compile(r"^\s*service\s+\w+", re.MULTILINE)


def proto_files() -> list[Path]:
    """Every .proto of the package, relative to the include root, in a stable order."""
    return sorted(p.relative_to(PROTO_ROOT) for p in (PROTO_ROOT / PACKAGE_DIR).glob("*.proto"))


def _declares_service(proto: Path) -> bool:
    return bool(_DECLARES_SERVICE.search((PROTO_ROOT / proto).read_text(encoding="utf-8")))


def _protoc(*args: str) -> None:
    # Imported here so that importing estimator.pb never needs grpcio-tools (a test extra).
    from grpc_tools import protoc

    if protoc.main(["grpc_tools.protoc", f"--proto_path={PROTO_ROOT}", *args]) != 0:
        raise RuntimeError(f"protoc failed: {' '.join(args)}")


def regenerate(out: Path = REPO_ROOT) -> list[Path]:
    """Generate into out/estimator/pb/ and return the generated files, relative to `out`."""
    out.mkdir(parents=True, exist_ok=True)
    protos = proto_files()
    _protoc(f"--python_out={out}", f"--pyi_out={out}", *map(str, protos))
    # The gRPC plugin would also write an empty *_pb2_grpc.py for every message-only
    # file; give it only the files that declare a service.
    _protoc(f"--grpc_python_out={out}", *(str(p) for p in protos if _declares_service(p)))
    return generated_files(out)


def generated_files(root: Path) -> list[Path]:
    """The generated modules present under root/estimator/pb/, relative to root."""
    package = root / PACKAGE_DIR
    return sorted(p.relative_to(root) for p in package.iterdir() if p.name.endswith(GENERATED_SUFFIXES))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m estimator.pb.regenerate", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO_ROOT, help="output root (default: the repository root)")
    options = parser.parse_args(argv)
    for path in regenerate(options.out.resolve()):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
