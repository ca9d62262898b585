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
from collections.abc import Iterator
from typing import Any

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
    before = raw[max(0, position - _LOOK_BACK) : position].rstrip(_WHITESPACE)
    return before.endswith(b":") and before[:-1].rstrip(_WHITESPACE).endswith(b'"items"')


def split_items(raw: bytes) -> tuple[dict, list[tuple[int, int]]] | None:
    """(the document without its items, [(start, end) byte range of each item]) for a JSON
    object with one top-level `items` array; None when the text is not that shape."""
    opening = _NOT_WHITESPACE.search(raw)  # (not raw.lstrip(): that would copy the whole file)
    if opening is None or opening.group() != b"{":
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
        rest = orjson.loads(raw[: begin + 1] + raw[end:])
    except orjson.JSONDecodeError:
        return None
    if not isinstance(rest, dict) or rest.get("items") != []:
        return None
    if not len(commas) and not raw[begin + 1 : end].strip(_WHITESPACE):
        return rest, []
    bounds = [begin, *commas.tolist(), end]
    return rest, [(bounds[i] + 1, bounds[i + 1]) for i in range(len(bounds) - 1)]


def iter_items(raw: bytes, spans: list[tuple[int, int]], per_slice: int = ITEMS_PER_SLICE) -> Iterator[Any]:
    """The items at `spans` (from split_items) in order, parsed `per_slice` at a time;
    orjson.JSONDecodeError if a slice is not valid JSON."""
    for first in range(0, len(spans), per_slice):
        chunk = spans[first : first + per_slice]
        items = orjson.loads(b"[" + raw[chunk[0][0] : chunk[-1][1]] + b"]")
        if len(items) != len(chunk):  # the boundaries were wrong: never trust the slice
            raise orjson.JSONDecodeError("item boundaries do not match the items parsed", "", 0)
        yield from items


# --- quicker: cut at likely item boundaries, proved by parsing -------------------------------
#
# split_items classifies every byte of the document (a third of a second per 35 MB). Slices
# need cuts only every megabyte or so, and a cut can be proved instead of computed: if the
# bytes from one item boundary to a candidate comma parse as `[` + bytes + `]`, they are whole
# items at the array's depth (JSON is read the same from that state whether inside the
# document or inside the slice), so the comma is the next boundary too. Candidates are the
# bytes seen between the first two items (`},{`, or `},` + newline and the items' indent in
# kubectl's output, which nested objects do not share); one that does not parse is passed
# over for the next.

SLICE_BYTES = 1 << 20
_HEAD_BYTES = 1 << 16  # the `items` key and the first boundary are looked for this far in,
# and the array's end this far from the end
_MAX_MISSES = 64  # candidates passed over before the byte scan takes over
_TAIL_TRIES = 16  # closing brackets tried from the end of the document


def _items_opener(head: bytes) -> tuple[int, bytes | None] | None:
    """(where the first top-level `"items": [` array opens in `head`, a document's beginning;
    the bytes from the end of its first item to the start of the second when both are objects)."""
    codes = _CLASSES[np.frombuffer(head, dtype=np.uint8)]
    positions = np.flatnonzero(codes)
    classes = codes[positions]
    is_quote = classes == _QUOTE
    backslashes = positions[classes == _BACKSLASH]
    if len(backslashes):
        quote_index = np.flatnonzero(is_quote)
        is_quote[quote_index[_escaped(positions[quote_index], backslashes)]] = False
    outside = np.cumsum(is_quote, dtype=np.int32) % 2 == 0
    keep = (classes <= _COMMA) & outside
    structural, chars = positions[keep], classes[keep]
    step = np.where(chars == _OPEN, 1, np.where(chars == _CLOSE, -1, 0)).astype(np.int32)
    depth_after = np.cumsum(step, dtype=np.int32)
    for i in np.flatnonzero((chars == _OPEN) & (depth_after == 2)).tolist():
        if head[structural[i]] == ord("[") and _is_items_key(head, int(structural[i])):
            commas = np.flatnonzero((chars[i:] == _COMMA) & (depth_after[i:] == 2))
            separator = None
            if len(commas) and not (depth_after[i : i + commas[0]] < 2).any():
                comma = int(structural[i + commas[0]])
                before, after = head[:comma].rstrip(_WHITESPACE), head[comma + 1 :].lstrip(_WHITESPACE)
                if before.endswith(b"}") and after.startswith(b"{"):
                    separator = head[len(before) - 1 : len(head) - len(after) + 1]
            return int(structural[i]), separator
    return None


def items_bounds(raw: bytes) -> tuple[dict, int, int, bytes] | None:
    """(the document without its items, where its top-level `items` array opens and closes,
    the bytes between its first two items) for a JSON object whose `items` is an array of at
    least two objects; None when the document does not look like that."""
    first = _NOT_WHITESPACE.search(raw)
    if first is None or first.group() != b"{":
        return None
    found = _items_opener(raw[:_HEAD_BYTES])
    if found is None:
        return None
    begin, separator = found
    if separator is None or b'"items"' in raw[: raw.rfind(b'"items"', 0, begin)]:
        return None
    end = len(raw)
    for _ in range(_TAIL_TRIES):  # the array's closing bracket: the last one the rest parses with
        end = raw.rfind(b"]", max(begin + 1, len(raw) - _HEAD_BYTES), end)
        if end < 0:  # (or a tail too long to parse again and again: the byte scan takes it)
            return None
        try:
            rest = orjson.loads(raw[: begin + 1] + raw[end:])
        except orjson.JSONDecodeError:
            continue
        if not isinstance(rest, dict) or rest.get("items") != [] or b'"items"' in raw[end:]:
            return None
        return rest, begin, end, separator
    return None


def list_items(raw: bytes, slice_bytes: int | None = None) -> tuple[dict, Iterator[Any]] | None:
    """(the document without its items, an iterator over the items, parsed about
    `slice_bytes` at a time) for a JSON object whose top-level `items` is an array of objects;
    None when the document does not look like that (the caller then uses split_items). The
    iterator raises orjson.JSONDecodeError if the document is not valid JSON."""
    bounds = items_bounds(raw)
    if bounds is None:
        return None
    rest, begin, end, separator = bounds
    return rest, items_from(raw, begin + 1, end, rest, separator, slice_bytes or SLICE_BYTES)


class UnprovedSlice(ValueError):
    """A slice that could not be proved to be whole items; `yielded` items came before it."""

    def __init__(self, yielded: int):
        super().__init__(f"no provable item boundary after item {yielded}")
        self.yielded = yielded


def proved_slices(
    raw: bytes,
    start: int,
    stop: int,
    separator: bytes,
    slice_bytes: int = SLICE_BYTES,
) -> Iterator[list]:
    """The items of raw[start:stop], a list per slice, each slice proved by parsing; `start`
    is just after the array's `[` or a comma between items, `stop` the array's `]` or a comma
    between items. UnprovedSlice when a slice does not parse: an item boundary that was not
    one, or a document that is not valid JSON."""
    yielded, misses = 0, 0
    boundary = start  # always just after the `[` or a comma between items
    search_from = boundary + slice_bytes
    comma_at = separator.index(b",")
    while True:
        found = raw.find(separator, search_from, stop) if search_from < stop else -1
        cut = found + comma_at if found >= 0 else stop
        try:
            items = orjson.loads(b"[" + raw[boundary:cut] + b"]")
        except orjson.JSONDecodeError:
            misses += 1
            if found < 0 or misses > _MAX_MISSES:
                raise UnprovedSlice(yielded) from None  # the last slice, or cuts hard to find here
            search_from = found + 1
            continue
        yield items
        yielded += len(items)
        if found < 0:
            return  # the last slice parsed up to `stop`
        boundary = cut + 1
        search_from = boundary + slice_bytes


def items_from(
    raw: bytes, start: int, end: int, rest: dict, separator: bytes, slice_bytes: int, before: int = 0
) -> Iterator[Any]:
    """The items from raw[start:end] on (`before` items of the array come before `start`):
    a proved slice at a time while cuts are found, then the rest by `items_after`."""
    yielded = before
    try:
        for items in proved_slices(raw, start, end, separator, slice_bytes):
            yield from items
            yielded += len(items)
        return
    except UnprovedSlice:
        pass
    yield from items_after(raw, rest, yielded)


def items_after(raw: bytes, rest: dict, yielded: int) -> Iterator[Any]:
    """The items of the document after its first `yielded` (proved already): at boundaries
    from the byte scan, or from the whole document parsed (which raises
    orjson.JSONDecodeError if it is not valid JSON)."""
    split = split_items(raw)
    if split is not None and split[0] == rest and len(split[1]) >= yielded:
        yield from iter_items(raw, split[1][yielded:])
        return
    document = orjson.loads(raw)
    if (
        not isinstance(document, dict)
        or not isinstance(document.get("items"), list)
        or {k: v for k, v in document.items() if k != "items"} != {k: v for k, v in rest.items() if k != "items"}
    ):
        raise orjson.JSONDecodeError("the items array does not end where it seemed to", "", 0)
    yield from document["items"][yielded:]
