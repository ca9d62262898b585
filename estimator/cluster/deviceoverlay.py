"""The DRA overlay of a snapshot: the resources DRA devices serve, added to its columns.

On a node whose allocatable has none of a served resource, its devices of the class, less
those allocated, are what is free (see estimator.core.devices); a served resource no node
advertises becomes a new column. The overlay (positions and amounts per resource) is kept
while the node order and the device state stand. Used by ClusterCache's snapshot, under its
lock.
"""

from __future__ import annotations

from collections.abc import Container

import numpy as np

from estimator.cluster.devicestate import DeviceGroups, DeviceState


class DeviceOverlay:
    """The overlay of one cache's DRA objects, kept per (node order, device state version)."""

    def __init__(self, devices: DeviceState) -> None:
        self._devices = devices
        self._kept: tuple | None = None  # ((order, devices version), overlay, device groups)

    def apply(
        self,
        allocatable: np.ndarray,
        available: np.ndarray,
        names: tuple[str, ...],
        resource_names: tuple[str, ...],
        columns_held: Container[str],
    ) -> tuple[np.ndarray, np.ndarray, tuple[str, ...], dict[str, np.ndarray], dict[int, DeviceGroups]]:
        """The columns with DRA-served resources added (`columns_held`: the resources the arrays
        have a column for). Returns the arrays, the columns, the served masks and the device
        groups."""
        key = (names, self._devices.version)
        if self._kept is None or self._kept[0] != key:
            counts = self._devices.counts()
            where = {name: i for i, name in enumerate(names)} if counts else {}
            groups = {where[node]: found for node, found in self._devices.groups().items() if node in where}
            self._kept = (key, _device_overlay(counts, where), groups)
        overlay = self._kept[1]
        columns = list(resource_names)
        extra = [name for name in overlay if name not in columns_held]
        if extra:
            pad = np.zeros((allocatable.shape[0], len(extra)), dtype=np.int64)
            allocatable, available = np.hstack([allocatable, pad]), np.hstack([available, pad])
            columns += extra
        served = {}
        for name, (positions, totals, used) in overlay.items():
            column = columns.index(name)
            dra = allocatable[positions, column] == 0  # a node that advertises it is served by its device plugin
            allocatable[positions[dra], column] = totals[dra]
            available[positions[dra], column] = np.maximum(totals[dra] - used[dra], 0)
            served[name] = np.zeros(len(names), dtype=bool)
            served[name][positions[dra]] = True
        return allocatable, available, tuple(columns), served, self._kept[2]


def _device_overlay(counts: dict[str, dict[str, tuple[int, int]]], where: dict[str, int]) -> dict:
    """resource -> (node positions, devices, allocated) as int64 arrays, in snapshot order."""
    rows: dict[str, list[tuple[int, int, int]]] = {}
    for node, per_resource in counts.items():
        position = where.get(node)
        if position is None:
            continue  # a slice of a node without a Node object: nothing to place there
        for resource, (total, used) in per_resource.items():
            rows.setdefault(resource, []).append((position, total, used))
    overlay = {}
    for resource in sorted(rows):
        table = np.array(rows[resource], dtype=np.int64)
        overlay[resource] = (table[:, 0], table[:, 1], table[:, 2])
    return overlay
