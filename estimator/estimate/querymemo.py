"""Values worked out from one request object alone, remembered by the object's identity.

The service converts a request once and hands the same immutable query object to every
repeat (its conversion memo), across snapshots too; what depends only on the query (its
hash, its columns and request rows) is then built once, not per request. Finding it by
identity is a dict probe; hashing a query of frozen dataclasses walks all of it, and
Python does not cache dataclass hashes.
"""

from __future__ import annotations

import weakref
from typing import Callable, Generic, Hashable, TypeVar

T = TypeVar("T")

DEFAULT_SIZE = 256


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
    holds its object weakly: a dead object's id, reused by a new one, is recomputed. Objects
    that cannot be weakly referenced are computed every time. No lock: concurrent callers
    may compute one value twice, and the memo may briefly hold a few entries too many."""

    def __init__(self, compute: Callable[[object], T], size: int = DEFAULT_SIZE):
        self._compute = compute
        self._size = size
        self._entries: dict[int, tuple[weakref.ref, T]] = {}

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, obj: object) -> T:
        entry = self._entries.get(id(obj))
        if entry is not None and entry[0]() is obj:
            return entry[1]
        value = self._compute(obj)
        try:
            ref = weakref.ref(obj)
        except TypeError:
            return value
        entries = self._entries
        while len(entries) >= self._size:
            try:
                entries.pop(next(iter(entries)), None)
            except (StopIteration, RuntimeError):  # emptied or changed by another request meanwhile
                break
        entries[id(obj)] = (ref, value)
        return value
