"""The items of a big JSON `*List` document, parsed a slice at a time.

Parsing a 50k-node member file whole builds every object of it at once (GBs of dicts at
the peak); the cache keeps a few strings of each, scattered over the interpreter's memory
arenas, so the freed rest cannot go back to the system (hundreds of MB at 50k nodes). Here
numpy finds the item boundaries (commas at the `items` array's depth, outside strings) and
orjson parses a few thousand items at a time: the next slice reuses the memory of the
last. Anything unexpected (no top-level object, no single `items` array, a slice that does
not parse) returns None, and the caller parses the whole document as before, which also
produces its error message.
"""

from __future__ import annotations

from typing import Any, Iterator

import numpy as np
import orjson

_WHITESPACE = b" \t\r\n"
ITEMS_PER_SLICE = 2048
# One table look-up per byte classifies it; only the few interesting bytes are looked at again.
_OPEN, _CLOSE, _COMMA, _QUOTE, _BACKSLASH = 1, 2, 3, 4, 5
_CLASSES = np.zeros(256, dtype=np.uint8)
for _chars, _class in ((b"{[", _OPEN), (b"}]", _CLOSE), (b",", _COMMA), (b'"', _QUOTE), (b"\\", _BACKSLASH)):
    _CLASSES[list(_chars)] = _class
_LOOK_BACK = 256  # bytes before an array searched for its `"items":` key


def _unescaped(quotes: np.ndarray, backslashes: np.ndarray) -> np.ndarray:
    if not len(backslashes) or not len(quotes):
        return quotes
    # A quote is escaped when an odd run of backslashes ends right before it.
    starts = backslashes[np.r_[True, np.diff(backslashes) != 1]]
    ends = backslashes[np.r_[np.diff(backslashes) != 1, True]]
    run = np.searchsorted(starts, quotes - 1, side="right") - 1
    ok = run >= 0
    follows_run = np.zeros(len(quotes), dtype=bool)
    follows_run[ok] = ends[run[ok]] == quotes[ok] - 1
    odd = np.zeros(len(quotes), dtype=bool)
    odd[follows_run] = (quotes[follows_run] - starts[run[follows_run]]) % 2 == 1
    return quotes[~odd]


def _is_items_key(raw: bytes, position: int) -> bool:
    before = raw[max(0, position - _LOOK_BACK):position].rstrip(_WHITESPACE)
    return before.endswith(b":") and before[:-1].rstrip(_WHITESPACE).endswith(b'"items"')


def split_items(raw: bytes) -> tuple[dict, list[tuple[int, int]]] | None:
    """(the document without its items, [(start, end) byte range of each item]) for a JSON
    object with one top-level `items` array; None when the text is not that shape."""
    if raw.lstrip(_WHITESPACE)[:1] != b"{":
        return None
    codes = _CLASSES[np.frombuffer(raw, dtype=np.uint8)]
    positions = np.flatnonzero(codes)
    classes = codes[positions]
    del codes
    quotes = _unescaped(positions[classes == _QUOTE], positions[classes == _BACKSLASH])
    if len(quotes) % 2:
        return None
    keep = classes <= _COMMA
    structural, chars = positions[keep], classes[keep]
    del positions, classes, keep
    # Outside strings: an even number of unescaped quotes before the character.
    outside = np.searchsorted(quotes, structural) % 2 == 0
    structural, chars = structural[outside], chars[outside]
    step = np.zeros(len(chars), dtype=np.int32)
    step[chars == _OPEN] = 1
    step[chars == _CLOSE] = -1
    depth_after = np.cumsum(step, dtype=np.int32)
    if not len(depth_after) or depth_after[-1] != 0 or depth_after.min() < 0:
        return None
    candidates = np.flatnonzero((chars == _OPEN) & (depth_after == 2) & (step == 1))
    openers = [i for i in candidates.tolist() if raw[structural[i]] == ord("[") and _is_items_key(raw, structural[i])]
    if len(openers) != 1:
        return None
    first = openers[0]
    last = first + int(np.flatnonzero(depth_after[first:] == 1)[0])  # the array's closing bracket
    inner = slice(first + 1, last)
    commas = structural[inner][(chars[inner] == _COMMA) & (depth_after[inner] == 2)]
    begin, end = int(structural[first]), int(structural[last])
    try:
        rest = orjson.loads(raw[:begin + 1] + raw[end:])
    except orjson.JSONDecodeError:
        return None
    if not isinstance(rest, dict) or rest.get("items") != []:
        return None
    if not len(commas) and not raw[begin + 1:end].strip(_WHITESPACE):
        return rest, []
    bounds = [begin, *commas.tolist(), end]
    return rest, [(bounds[i] + 1, bounds[i + 1]) for i in range(len(bounds) - 1)]


def iter_items(raw: bytes, spans: list[tuple[int, int]], per_slice: int = ITEMS_PER_SLICE) -> Iterator[Any]:
    """The items at `spans` (from split_items) in order, parsed `per_slice` at a time;
    orjson.JSONDecodeError if a slice is not valid JSON."""
    for first in range(0, len(spans), per_slice):
        chunk = spans[first:first + per_slice]
        items = orjson.loads(b"[" + raw[chunk[0][0]:chunk[-1][1]] + b"]")
        if len(items) != len(chunk):  # the boundaries were wrong: never trust the slice
            raise orjson.JSONDecodeError("item boundaries do not match the items parsed", "", 0)
        yield from items
