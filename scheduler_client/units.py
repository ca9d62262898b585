"""Amounts for people: "50m" cpu, "32Mi" memory, "3" GPUs. Pure formatting, no parsing."""

from __future__ import annotations

from collections.abc import Iterable

from estimator.api import CPU, EPHEMERAL_STORAGE, MEMORY, is_hugepages, uses_milli_units

_BINARY_UNITS = (("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10))


def _is_bytes(name: str) -> bool:
    return name in (MEMORY, EPHEMERAL_STORAGE) or is_hugepages(name)


def human(name: str, amount: int) -> str:
    """An int64 amount in the model's units (cpu in millicores) as a person reads it."""
    if uses_milli_units(name):
        return str(amount // 1000) if amount % 1000 == 0 else f"{amount}m"
    if _is_bytes(name):
        for suffix, scale in _BINARY_UNITS:
            if abs(amount) >= scale:
                whole, rest = divmod(amount, scale)
                return f"{whole}{suffix}" if rest == 0 else f"{amount / scale:.1f}{suffix}"
        return str(amount)
    return str(amount)


def requests_text(requests: Iterable[tuple[str, int]]) -> str:
    """{cpu 50m, memory 32Mi, nvidia.com/gpu 3}; cpu and memory first, then by name."""
    order = {CPU: 0, MEMORY: 1}
    items = sorted(requests, key=lambda item: (order.get(item[0], 2), item[0]))
    return "{" + ", ".join(f"{name} {human(name, amount)}" for name, amount in items) + "}"
