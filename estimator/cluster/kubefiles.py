"""Kubernetes objects from a YAML or JSON file, as `kubectl get -o yaml|json` writes them.

The one reader of object files for the estimator's `--objects` files and the placement
client's inputs. Accepts multi-document YAML, a JSON object or array, and `*List` kinds
(`v1 List`, `PodList`, ...) whose items are expanded in place; API-server lists omit each
item's kind, so it is filled in from the list's kind. Objects are returned as parsed, in
file order, without checking them: what a kind needs is the caller's business.

A YAML file must end with a line break after its last document (kubectl's and every YAML
writer's output does): a file cut short while being written ends mid-line, and such a cut
can still parse (`cpu: 32` cut to `cpu: 3`). A cut between documents cannot be told from a
whole file by its text: write files elsewhere and rename them into place (the estimator's
reload also refuses files changed during the read or in the last seconds, see
cluster/filestate.py). JSON nested deeper than the parsers follow is refused, naming the file.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import yaml

from estimator.cluster.jsonitems import iter_items, list_items, split_items

_Loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
# Smaller JSON lists are parsed whole: their objects fit in memory anyway, and it is quicker.
STREAM_FROM_BYTES = 4 << 20


class ObjectFileError(ValueError):
    """A file that cannot be read or parsed; `path` and `message` for callers' own errors."""

    def __init__(self, path: str | Path, message: str):
        self.path, self.message = str(path), message
        super().__init__(f"{self.path}: {message}")


def read_objects(path: str | Path) -> list[Any]:
    """Every object in the file at `path`, `*List` items expanded; [] for an empty file."""
    return list(iter_objects(path))


def iter_objects(path: str | Path, stream_from: int = STREAM_FROM_BYTES) -> Iterator[Any]:
    """`read_objects` one object at a time: a JSON `*List` of at least `stream_from` bytes is
    parsed a slice of items at a time (estimator.cluster.jsonitems), so its objects need not all
    exist at once; the rest is parsed whole. A broken slice raises the whole document's
    error (objects before it may have been yielded already)."""
    try:
        raw = Path(path).read_bytes()
    except FileNotFoundError:
        raise ObjectFileError(path, "no such file") from None
    except OSError as err:
        raise ObjectFileError(path, f"cannot read: {err}") from None
    # Slices cut where a parse proves an item boundary (quick), else where a scan of every
    # byte finds one; documents of another shape are parsed whole.
    split = (list_items(raw) or split_items(raw)) if len(raw) >= stream_from else None
    kind = str(split[0].get("kind", "")) if split else ""
    if split is None or not kind.endswith("List"):
        text = _decode(raw, path)
        _check_ending(text, path)
        yield from parse_objects(text, path)
        return
    item_kind = kind[: -len("List")]
    items = split[1] if not isinstance(split[1], list) else iter_items(raw, split[1])
    try:
        for item in items:
            if item_kind and isinstance(item, dict) and "kind" not in item:
                item["kind"] = item_kind
            yield item
    except orjson.JSONDecodeError:
        invalid_json(path, raw)


def invalid_json(path: str | Path, raw: bytes) -> None:
    """Raise the ObjectFileError of a JSON document a slice of which did not parse."""
    _documents(_decode(raw, path), path)  # raises the whole document's error
    raise ObjectFileError(path, "invalid JSON") from None


def _check_ending(text: str, path: str | Path) -> None:
    """A YAML file's last line must be whole (see the module docstring). A last document in
    flow style (`{...}`, `[...]`) may end without a line break: cut, it does not parse."""
    last = text[max(text.rfind("\n"), text.rfind("\r")) + 1 :]
    if not last or not text.strip():
        return
    flow = text.rsplit("\n---", 1)[-1].lstrip("-").lstrip().startswith(("{", "["))
    if not (flow and last.rstrip().endswith(("}", "]"))):
        raise ObjectFileError(
            path,
            "the last line has no line break: a YAML object file must end with one (a file "
            "cut short while being written ends mid-line; write it elsewhere and rename it "
            "into place)",
        )


def _decode(raw: bytes, path: str | Path) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ObjectFileError(path, f"cannot read: {err}") from None


def parse_objects(text: str, path: str | Path = "<text>") -> list[Any]:
    """`read_objects` on text already read; `path` only names the source in errors."""
    objects: list[Any] = []
    for document in _documents(text, path):
        if document is None:
            continue  # an empty YAML document (e.g. a trailing ---)
        if isinstance(document, list):  # a bare JSON array of objects
            objects.extend(document)
        elif isinstance(document, dict) and str(document.get("kind", "")).endswith("List"):
            items = document.get("items") or []
            if not isinstance(items, list):
                raise ObjectFileError(path, f"{document['kind']}: items is not a list")
            item_kind = document["kind"][: -len("List")]
            for item in items:
                if item_kind and isinstance(item, dict) and "kind" not in item:
                    item = {**item, "kind": item_kind}
                objects.append(item)
        else:
            objects.append(document)
    return objects


def _documents(text: str, path: str | Path) -> list[Any]:
    """Top-level documents: JSON when the text looks like JSON, else (multi-document) YAML."""
    if text.lstrip()[:1] in ("{", "["):
        try:
            return [orjson.loads(text)]  # ~1.5x the stdlib parser on big member files
        except orjson.JSONDecodeError:
            pass
        try:  # only to report where the file is broken
            return [json.loads(text)]
        except json.JSONDecodeError as err:
            raise ObjectFileError(path, f"invalid JSON at line {err.lineno}, column {err.colno}: {err.msg}") from None
        except RecursionError:  # orjson stops at 1,024 levels; the stdlib parser recurses until it fails
            raise ObjectFileError(path, "invalid JSON: nested deeper than any Kubernetes object is") from None
    try:
        return list(yaml.load_all(text, Loader=_Loader))
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise ObjectFileError(path, f"invalid YAML{where}: {err.problem or err.context}") from None
    except yaml.YAMLError as err:
        raise ObjectFileError(path, f"invalid YAML: {err}") from None
