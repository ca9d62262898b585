"""Values worked out from one request object alone, remembered by the object's identity.

The service converts a request once and hands the same immutable query object to every
repeat (its conversion memo), across snapshots too; what depends only on the query (its
hash, its columns and request rows) is then built once, not per request. Finding it by
identity is a dict probe; hashing a query of frozen dataclasses walks all of it, and
Python does not cache dataclass hashes.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

T = TypeVar("T")
_Obj = TypeVar("_Obj")

DEFAULT_SIZE = 256

# What a request may leave behind. A query is *kept* (its answer remembered, its columns,
# masks and packing arrays kept per snapshot, its per-query values kept while it lives)
# only when it is small: at most this many components (assumed workloads' included) ...
KEPT_MAX_COMPONENTS = 64
# ... at most this many component x node cells (a placement is 8 bytes a cell, a mask 1) ...
KEPT_MAX_CELLS = 1 << 20
# ... at most this many column x node cells (a gathered copy of the columns, 8 bytes a cell) ...
KEPT_MAX_COLUMN_CELLS = 1 << 19
# ... and at most about this many bytes of its own (its strings: names, selectors, affinity
# values, tolerations), as it is a key of what is kept for it.
KEPT_MAX_QUERY_BYTES = 16 << 10


def kept(components: int, columns: int, nodes: int, size: int = 0) -> bool:
    """Whether a query of this size may be kept (see above); a real job's always is."""
    return (
        components <= KEPT_MAX_COMPONENTS
        and components * nodes <= KEPT_MAX_CELLS
        and columns * nodes <= KEPT_MAX_COLUMN_CELLS
        and size <= KEPT_MAX_QUERY_BYTES
    )


class HashedKey:
    """A dict key for an immutable value whose hash is worked out once. Equal to another
    HashedKey of an equal value, so two query objects of the same request share entries."""

    __slots__ = ("value", "_hash")

    def __init__(self, value: Hashable):
        self.value = value
        self._hash = hash(value)

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return self is other or (type(other) is HashedKey and self._hash == other._hash and self.value == other.value)

    def __repr__(self) -> str:
        return f"HashedKey({self.value!r})"


class IdentityMemo(Generic[T]):
    """`compute(obj)` per live object, the oldest going first past `size` entries. An entry
    holds its object weakly and goes when the object dies, so a value lives no longer than
    its object (a request converted afresh takes what was worked out for it along). A dead
    object's id, reused by a new one, is recomputed. Objects that cannot be weakly
    referenced, and values `admit` refuses, are computed every time and not kept. No lock:
    concurrent callers may compute one value twice, and the memo may briefly hold a few
    entries too many."""

    def __init__(
        self,
        compute: Callable[[object], T] | None = None,
        size: int = DEFAULT_SIZE,
        admit: Callable[[T], bool] | None = None,
    ):
        self._compute = compute
        self._size = size
        self._admit = admit
        self._entries: dict[int, tuple[weakref.ref, T]] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def peek(self, obj: object) -> T | None:
        """The value kept for `obj`, or None (nothing computed)."""
        entry = self._entries.get(id(obj))
        return entry[1] if entry is not None and entry[0]() is obj else None

    def get(self, obj: _Obj, compute: Callable[[_Obj], T] | None = None) -> T:
        """The value kept for `obj`, else `compute(obj)` (default: the memo's own), kept."""
        entry = self._entries.get(id(obj))
        if entry is not None and entry[0]() is obj:
            return entry[1]
        compute = compute or self._compute
        if compute is None:
            raise TypeError("IdentityMemo.get: no compute given and the memo has none")
        value = compute(obj)
        if self._admit is not None and not self._admit(value):
            return value
        key, entries = id(obj), self._entries

        def forget(ref: weakref.ref) -> None:  # the object died: its value goes with it
            current = entries.get(key)
            if current is not None and current[0] is ref:
                entries.pop(key, None)

        try:
            ref = weakref.ref(obj, forget)
        except TypeError:
            return value
        while len(entries) >= self._size:
            try:
                entries.pop(next(iter(entries)), None)
            except (StopIteration, RuntimeError):  # emptied or changed by another request meanwhile
                break
        entries[key] = (ref, value)
        return value
