"""Karmada's node order (its nodeTree) over the cache's rows."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np


class NodeTree:
    """Karmada's nodeTree: zones in first-seen order, nodes in insertion order within a zone.

    Dicts keep insertion order and delete in O(1), which is exactly the slice semantics of
    node_tree.go (append at the end; removal keeps the rest in order; an emptied zone goes).
    """

    def __init__(self) -> None:
        self._zones: dict[str, dict[str, int]] = {}  # zone -> {node name: row}

    @classmethod
    def restore(cls, zones: Iterable[tuple[str, Iterable[int]]], names: Sequence[str]) -> NodeTree:
        """The tree `rows_by_zone()` described, `names[row]` naming each row."""
        tree = cls()
        for zone, rows in zones:
            tree._zones[zone] = {names[row]: row for row in rows}
        return tree

    def rows_by_zone(self) -> list[list]:
        """[[zone, [row, ...]], ...] in the tree's order (the rows' names are the cache's)."""
        return [[zone, list(nodes.values())] for zone, nodes in self._zones.items()]

    def add(self, zone: str, name: str, row: int) -> None:
        self._zones.setdefault(zone, {})[name] = row

    def remove(self, zone: str, name: str) -> None:
        nodes = self._zones[zone]
        del nodes[name]
        if not nodes:
            del self._zones[zone]

    def __len__(self) -> int:
        return sum(map(len, self._zones.values()))

    def order(self) -> np.ndarray:
        """Rows round-robin across zones: zone0[0], zone1[0], ..., zone0[1], zone1[1], ..."""
        zones = [np.fromiter(nodes.values(), dtype=np.int64, count=len(nodes)) for nodes in self._zones.values()]
        if len(zones) <= 1:
            return zones[0] if zones else np.zeros(0, dtype=np.int64)
        sizes = [len(z) for z in zones]
        rank_in_zone = np.concatenate([np.arange(size) for size in sizes])
        zone_index = np.repeat(np.arange(len(zones)), sizes)
        return np.concatenate(zones)[np.lexsort((zone_index, rank_in_zone))]
