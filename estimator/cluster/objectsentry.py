"""What an objects-cache entry holds, and the ClusterCache it describes.

`entry_tables`: a finished load's cache (`ClusterCache.export()`) and its `Recorder` as the
JSON meta and the numpy arrays of one `.npz`; `from_entry`: the cache back from them
(`ClusterCache.restore()`), every table checked first. What an entry is keyed by (files,
format, `loader_tag`) is added by the caller. Used by estimator.cluster.objectscache (the files,
the directory, saving and loading), whose docstring tells the whole story.
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import chain
from operator import itemgetter
from typing import Any

import numpy as np
import orjson

from estimator.cluster import gccontrol
from estimator.cluster.cache import ClusterCache, ExportedState
from estimator.core.model import NodeClass, Taint
from estimator.core.records import parse_object
from estimator.core.workloads import unschedulable_pod


class Recorder:
    """What a load must remember beyond the cache's arrays: the objects of the few-record
    kinds (and unschedulable pods) in file order, and the warnings it logged."""

    def __init__(self) -> None:
        self.objects: list[list] = []  # [kind, object]
        self.pods: list[list] = []  # [object] (unschedulable) or [namespace, name] (no longer)
        self.warnings: list[str] = []
        self._unschedulable: set[tuple[str, str]] = set()

    def note(self, kind: str, obj: Any, record: Any) -> None:
        if kind == "Node":
            return
        if kind != "Pod":
            self.objects.append([kind, obj])
            return
        key = (record.namespace, record.name)
        if record.unschedulable is not None:
            self._unschedulable.add(key)
            self.pods.append([obj])
        elif key in self._unschedulable:
            self._unschedulable.discard(key)
            self.pods.append([record.namespace, record.name])


def _class_json(node_class: NodeClass | None) -> Any:
    if node_class is None:
        return None
    return [
        [list(pair) for pair in node_class.labels],
        [[t.key, t.value, t.effect] for t in node_class.taints],
        node_class.unschedulable,
    ]


def entry_tables(cache: ClusterCache, recorder: Recorder) -> tuple[dict, dict[str, np.ndarray]]:
    """A finished load's state as an entry holds it: the JSON meta (without what the entry is
    keyed by, which objectscache.to_entry puts first, nor its digests) and the arrays."""
    state = cache.export()
    # Distinct namespaces and request tuples are numbered with C-level map() calls: a
    # generator per pod costs seconds at 450k pods.
    pods = state.pods
    assert not callable(pods)  # export() gives the table; only restore() takes a builder
    pod_namespaces = list(map(itemgetter(0), pods))
    names = list(map(itemgetter(1), pods))
    pod_values = pods.values()
    pod_row = np.fromiter(map(itemgetter(0), pod_values), dtype=np.int64, count=len(pods))
    pod_amount_tuples = list(map(itemgetter(1), pod_values))
    namespaces = {ns: i for i, ns in enumerate(dict.fromkeys(pod_namespaces))}
    pod_ns = np.fromiter(map(namespaces.__getitem__, pod_namespaces), dtype=np.int32, count=len(pods))
    # Numbered in order of first use, one hash of each (tuple hashes are not cached).
    amounts: dict = {}
    number = amounts.setdefault
    pod_amounts = np.fromiter(
        map(lambda a: number(a, len(amounts)), pod_amount_tuples), dtype=np.int32, count=len(pods)
    )
    del pod_namespaces, pod_amount_tuples
    meta = {
        "version": state.version,
        "columns": state.columns,
        "next_row": state.next_row,
        "free_rows": state.free_rows,
        "row_names": state.row_names,
        "row_hostnames": state.row_hostnames,
        "zones": state.zones,
        "tree": state.tree,
        "classes": [_class_json(c) for c in state.classes],
        "class_refs": state.class_refs,
        "free_class_ids": state.free_class_ids,
        "excess": [[row, column, str(total)] for (row, column), total in state.excess.items()],
        "namespaces": list(namespaces),
        "objects": recorder.objects,
        "pods": recorder.pods,
        "warnings": recorder.warnings,
    }
    arrays = {
        "allocatable": state.allocatable,
        "requested": state.requested,
        "row_class": state.row_class,
        "row_zone": state.row_zone,
        "pod_names": np.frombuffer(orjson.dumps(names), dtype=np.uint8),
        "pod_ns": pod_ns,
        "pod_row": pod_row,
        "pod_amounts": pod_amounts,
        # The distinct ((column, amount), ...) tuples, flat: how many pairs each, then the pairs.
        "amount_sizes": np.fromiter(map(len, amounts), dtype=np.int32, count=len(amounts)),
        "amount_pairs": np.fromiter(chain.from_iterable(chain.from_iterable(amounts)), dtype=np.int64).reshape(-1, 2),
    }
    return meta, arrays


def _node_class(value: Any) -> NodeClass:
    labels, taints, unschedulable = value
    return NodeClass(
        tuple((str(k), str(v)) for k, v in labels), tuple(Taint(*map(str, t)) for t in taints), bool(unschedulable)
    )


def from_entry(meta: dict, arrays: Mapping[str, np.ndarray]) -> ClusterCache:
    """The cache an entry's meta and arrays describe; ValueError (or another exception) if
    they do not fit together."""
    rows = int(meta["next_row"])
    columns = [str(c) for c in meta["columns"]]
    namespaces = meta["namespaces"]
    pod_ns, pod_row, pod_amounts = arrays["pod_ns"], arrays["pod_row"], arrays["pod_amounts"]
    sizes, pair_table, names_blob = arrays["amount_sizes"], arrays["amount_pairs"], arrays["pod_names"]
    names = orjson.loads(names_blob.tobytes())
    # Checked now, so that the table built later cannot fail (or point outside the arrays).
    if (
        not len(names) == len(pod_ns) == len(pod_row) == len(pod_amounts)
        or not all(type(n) is str for n in names)
        or pair_table.ndim != 2
        or pair_table.shape[1] != 2
        or int(sizes.sum()) != len(pair_table)
        or len(sizes)
        and sizes.min() < 0
        or len(pair_table)
        and (pair_table.min() < 0 or pair_table[:, 0].max() >= len(columns))
        or len(pod_ns)
        and (
            pod_amounts.min() < 0
            or pod_amounts.max() >= len(sizes)
            or pod_ns.min() < 0
            or pod_ns.max() >= len(namespaces)
            or pod_row.min() < 0
            or pod_row.max() >= rows
        )
    ):
        raise ValueError("pod tables do not fit together")

    def pods() -> dict:
        # Up to millions of small objects, built once, all kept: no collector passes.
        with gccontrol.paused():
            pairs = list(zip(pair_table[:, 0].tolist(), pair_table[:, 1].tolist(), strict=True))
            ends = np.cumsum(sizes).tolist()
            amounts = [tuple(pairs[end - size : end]) for size, end in zip(sizes.tolist(), ends, strict=True)]
            ns_of = [namespaces[i] for i in pod_ns.tolist()]
            return dict(
                zip(
                    zip(ns_of, names, strict=True),
                    zip(pod_row.tolist(), [amounts[i] for i in pod_amounts.tolist()], strict=True),
                    strict=True,
                )
            )

    state = ExportedState(
        version=int(meta["version"]),
        columns=columns,
        allocatable=arrays["allocatable"],
        requested=arrays["requested"],
        row_class=arrays["row_class"],
        next_row=rows,
        free_rows=[int(r) for r in meta["free_rows"]],
        row_names=meta["row_names"],
        row_hostnames=meta["row_hostnames"],
        row_zone=arrays["row_zone"],
        zones=meta["zones"],
        tree=meta["tree"],
        classes=[None if c is None else _node_class(c) for c in meta["classes"]],
        class_refs=[int(r) for r in meta["class_refs"]],
        free_class_ids=[int(i) for i in meta["free_class_ids"]],
        excess={(int(row), int(column)): int(total) for row, column, total in meta["excess"]},
        pods=pods if len(pod_ns) else {},
    )
    # The few-record kinds go through the parsers again, in file order, as they did first.
    records = ((kind, parse_object(kind, obj)) for kind, obj in meta["objects"])
    return ClusterCache.restore(state, records, map(_pod_event, meta["pods"]))


def _pod_event(event: list) -> tuple:
    """(namespace, name, unschedulable record or None) of a Recorder.pods entry."""
    if len(event) == 1:
        record = unschedulable_pod(event[0])
        assert record is not None  # recorded because it was unschedulable, and the object is the same
        return record.namespace, record.name, record
    return event[0], event[1], None
