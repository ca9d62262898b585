"""A big JSON `*List` object file read on two cores.

Parsing and reading the pods of a 50k-node member file is seconds of single-threaded
Python. Here a forked worker parses the items after a cut near the middle of the `items`
array and digests its common pods (bulkload.Digester, which needs no cache state), while
this process parses and loads the items before the cut. The worker hands back, in file
order and a frame at a time as it goes (estimator.cluster.forked), the digests of each run
of common pods and the parsed object for everything else (marshal: the same interpreter on
both ends, plain JSON values only); once its own part is loaded, this process applies them
exactly as if it had read them itself (files._load_objects), so the state and the error
messages are the sequential load's.

The cut is proved as every slice cut is (jsonitems.proved_slices): the items before it
parse whole up to it. Until that proof the worker's output is not used; if it fails, or the
worker stops part-way, this process reads the rest itself, after the last frame it took.
Only a process whose other threads are daemons forks (estimator.cluster.forked, and
`can_fork`).
"""

from __future__ import annotations

import marshal
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson

from estimator.cluster import forked
from estimator.cluster.bulkload import Digester
from estimator.cluster.jsonitems import SLICE_BYTES, UnprovedSlice, items_after, items_bounds, items_from, proved_slices
from estimator.cluster.kubefiles import invalid_json

# Smaller files (a 10k-node member is 35 MB) load in about a second and a half: left on one core.
MIN_BYTES = 64 << 20
# The worker sends its items every FRAME_SLICES slices (4 MB of the file), so this process
# takes them while the worker reads on, and is left with one frame after the worker ends.
FRAME_SLICES = 4
# This process applies the worker's part after its own, but a run of digests costs a fifth of
# parsing and reading it (BulkLoader.take_run), so an even cut keeps both cores busy to the
# end (the 50k member loaded in-process: 3.3-3.4 s at 0.5, 3.4-3.7 s at 0.46 or 0.54,
# 4.1-4.6 s at 0.58).
HEAD_SHARE = 0.5
# With the caller's own work to do on this core first (`objects(meanwhile=...)`: the
# server's imports and kernel loading, about 0.4 s), this process takes less of the file
# (server ready at 50k, eight starts each, interleaved: median 3.31 s at 0.47, 3.37 s at
# 0.44, 3.39 s at 0.42; the optimum is flat, and the noise between starts is ±0.3 s).
HEAD_SHARE_AFTER_WORK = 0.47


def can_fork() -> bool:
    """A worker may be forked (`forked.possible`) and has a second CPU to run on."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return forked.possible() and cpus >= 2


def objects(
    path: Path,
    min_bytes: int = MIN_BYTES,
    head_share: float | None = None,
    slice_bytes: int = SLICE_BYTES,
    meanwhile: Callable[[], None] | None = None,
) -> Iterator[Any] | None:
    """The file's objects, with runs of pod digests (tuples, `_work`) in place of the
    common pods of its second part; None when the file is not a big JSON `*List` or no worker can be forked
    (the caller then reads it with kubefiles.iter_objects). `meanwhile`: the caller's work,
    run here once the worker is reading (only then)."""
    try:
        if os.stat(path).st_size < min_bytes or not can_fork():
            return None
        raw = Path(path).read_bytes()
    except OSError:
        return None  # iter_objects says what is wrong with the file
    bounds = items_bounds(raw)
    if bounds is None or not str(bounds[0].get("kind", "")).endswith("List"):
        return None
    rest, begin, end, separator = bounds
    if head_share is None:
        head_share = HEAD_SHARE if meanwhile is None else HEAD_SHARE_AFTER_WORK
    found = raw.find(separator, begin + 1 + int((end - begin) * head_share), end)
    if found < 0:
        return None
    cut = found + separator.index(b",")
    item_kind = str(rest["kind"])[: -len("List")]
    worker = forked.start(lambda send: _work(send, raw, cut + 1, end, separator, slice_bytes, item_kind))
    if meanwhile is not None:
        try:
            meanwhile()
        except BaseException:
            forked.kill(worker)
            raise
    return _checked(path, raw, _read(raw, rest, begin, cut, end, separator, slice_bytes, item_kind, worker))


def _checked(path: Path, raw: bytes, items: Iterator[Any]) -> Iterator[Any]:
    try:
        yield from items
    except orjson.JSONDecodeError:
        invalid_json(path, raw)


def _work(
    send: Callable[[bytes], None], raw: bytes, start: int, end: int, separator: bytes, slice_bytes: int, item_kind: str
) -> None:
    """The worker's part, sent a frame at a time (marshalled lists, FRAME_SLICES slices
    each): its items in file order, each run of consecutive common pods as one tuple of
    four lists (namespaces, names, nodes, requests: their digests column-wise, for
    BulkLoader.take_run), everything else as parsed."""
    digest = Digester().digest
    out: list = []
    run: tuple[list, list, list, list] | None = None
    for number, items in enumerate(proved_slices(raw, start, end, separator, slice_bytes), 1):
        for item in items:
            if type(item) is dict:
                if item_kind and "kind" not in item:
                    item["kind"] = item_kind
                if item.get("kind") == "Pod":
                    taken = digest(item)
                    if taken is not None:
                        if run is None:
                            run = ([], [], [], [])
                            out.append(run)
                        namespaces, names, nodes, requests = run
                        namespace, name, node, requested = taken
                        namespaces.append(namespace)
                        names.append(name)
                        nodes.append(node)
                        requests.append(requested)
                        continue
            run = None
            out.append(item)
        if number % FRAME_SLICES == 0:
            send(marshal.dumps(out))
            out, run = [], None
    if out:
        send(marshal.dumps(out))


def _count(items: list) -> int:
    """How many of the file's items a frame holds (a run holds one per pod)."""
    return sum(len(item[0]) if type(item) is tuple else 1 for item in items)


def _read(
    raw: bytes,
    rest: dict,
    begin: int,
    cut: int,
    end: int,
    separator: bytes,
    slice_bytes: int,
    item_kind: str,
    worker: forked.Child,
) -> Iterator[Any]:
    try:
        yielded = 0
        try:
            for items in proved_slices(raw, begin + 1, cut, separator, slice_bytes):
                for item in items:
                    if item_kind and type(item) is dict and "kind" not in item:
                        item["kind"] = item_kind
                    yield item
                yielded += len(items)
        except UnprovedSlice:
            # The cut was not a boundary, or the document is broken: not the worker's business.
            forked.kill(worker)
            yield from _kinded(items_after(raw, rest, yielded), item_kind)
            return
        head = yielded
        try:
            for frame in forked.frames(worker):
                items = marshal.loads(frame)
                yield from items
                yielded += _count(items)
            return
        except (forked.Failed, EOFError, ValueError, TypeError):
            forked.kill(worker)
        # The worker stopped part-way (a document broken after the cut, or the worker died):
        # the rest is read here, from where its last frame ended, with the sequential load's errors.
        if yielded == head:
            yield from _kinded(items_from(raw, cut + 1, end, rest, separator, slice_bytes, yielded), item_kind)
        else:  # (no byte offset for the end of a frame: the boundaries from the byte scan)
            yield from _kinded(items_after(raw, rest, yielded), item_kind)
    finally:
        forked.kill(worker)  # (nothing to do unless the consumer stopped early: a bad object)


def _kinded(items: Iterator[Any], item_kind: str) -> Iterator[Any]:
    for item in items:
        if item_kind and type(item) is dict and "kind" not in item:
            item["kind"] = item_kind
        yield item
