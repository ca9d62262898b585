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

import re
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
_NOT_WHITESPACE = re.compile(rb"[^ \t\r\n]")
_LOOK_BACK = 256  # bytes before an array searched for its `"items":` key


def _escaped(quotes: np.ndarray, backslashes: np.ndarray) -> np.ndarray:
    """Which of the quote positions are escaped: an odd run of backslashes ends right before."""
    escaped = np.zeros(len(quotes), dtype=bool)
    if not len(backslashes) or not len(quotes):
        return escaped
    breaks = np.diff(backslashes) != 1
    starts, ends = backslashes[np.r_[True, breaks]], backslashes[np.r_[breaks, True]]
    run = np.searchsorted(starts, quotes - 1, side="right") - 1
    ok = run >= 0
    follows = np.zeros(len(quotes), dtype=bool)
    follows[ok] = ends[run[ok]] == quotes[ok] - 1
    escaped[follows] = (quotes[follows] - starts[run[follows]]) % 2 == 1
    return escaped


def _is_items_key(raw: bytes, position: int) -> bool:
    before = raw[max(0, position - _LOOK_BACK):position].rstrip(_WHITESPACE)
    return before.endswith(b":") and before[:-1].rstrip(_WHITESPACE).endswith(b'"items"')


def split_items(raw: bytes) -> tuple[dict, list[tuple[int, int]]] | None:
    """(the document without its items, [(start, end) byte range of each item]) for a JSON
    object with one top-level `items` array; None when the text is not that shape."""
    first = _NOT_WHITESPACE.search(raw)  # (not raw.lstrip(): that would copy the whole file)
    if first is None or first.group() != b"{":
        return None
    codes = _CLASSES[np.frombuffer(raw, dtype=np.uint8)]
    positions = np.flatnonzero(codes)
    classes = codes[positions]
    del codes
    is_quote = classes == _QUOTE
    backslashes = positions[classes == _BACKSLASH]
    if len(backslashes):
        quote_index = np.flatnonzero(is_quote)
        is_quote[quote_index[_escaped(positions[quote_index], backslashes)]] = False
    # Outside strings: an even number of unescaped quotes up to the character.
    quotes_so_far = np.cumsum(is_quote, dtype=np.int32)
    if quotes_so_far[-1] % 2:
        return None
    keep = (classes <= _COMMA) & (quotes_so_far % 2 == 0)
    structural, chars = positions[keep], classes[keep]
    del positions, classes, keep, is_quote, quotes_so_far
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
