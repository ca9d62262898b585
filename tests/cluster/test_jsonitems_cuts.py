"""Slices cut where a parse proves an item boundary (jsonitems.list_items): the items, their
order, the rest of the document and every error equal the whole-document parse, however
small the slices (tiny slices make most candidate cuts fall between nested objects)."""

from __future__ import annotations

import json
import random
from types import SimpleNamespace

import orjson
import pytest

from estimator.cluster import jsonitems, kubefiles
from estimator.cluster.kubefiles import ObjectFileError, iter_objects, parse_objects
from tests.cluster.test_jsonitems import _document, _write


def _nested_items(rng: random.Random, count: int) -> list:
    # Objects inside arrays inside items: many `},{` that are not item boundaries.
    return [{"metadata": {"name": f"p{i}"}, "spec": {"containers": [{"name": f"c{j}", "env": [{"a": "},{"}, {"b": j}]}
                                                                  for j in range(rng.randrange(4))]}}
            for i in range(count)]


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("indent", [None, 2])
@pytest.mark.parametrize("slice_bytes", [1, 40, 300, 1 << 20])
def test_cut_slices_equal_the_whole_document(seed, indent, slice_bytes):
    rng = random.Random(seed)
    document = _document(rng, rng.randrange(0, 30))
    document["items"] += _nested_items(rng, rng.randrange(0, 30))
    raw = json.dumps(document, indent=indent, ensure_ascii=rng.random() < 0.5).encode()
    found = jsonitems.list_items(raw, slice_bytes)
    assert found is not None
    rest, items = found
    assert rest == {**document, "items": []}
    assert list(items) == document["items"]


def test_iter_objects_takes_the_cut_slices(tmp_path, monkeypatch):
    document = {"apiVersion": "v1", "kind": "PodList", "metadata": {}, "items": _nested_items(random.Random(1), 50)}
    text = json.dumps(document)
    monkeypatch.setattr(jsonitems, "SLICE_BYTES", 64)
    def no_scan(raw):
        raise AssertionError("the byte scan was used")

    monkeypatch.setattr(kubefiles, "split_items", no_scan)  # list_items takes the document
    assert list(iter_objects(_write(tmp_path, text), stream_from=0)) == parse_objects(text)


def test_kubectl_indentation_tells_item_boundaries_from_nested_ones(monkeypatch):
    document = {"apiVersion": "v1", "kind": "List", "metadata": {}, "items": _nested_items(random.Random(3), 400)}
    raw = json.dumps(document, indent=4).encode()
    parses = []

    def loads(text):
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            parses.append("missed")
            raise
        finally:
            parses.append(len(text))

    monkeypatch.setattr(jsonitems, "orjson", SimpleNamespace(loads=loads, JSONDecodeError=orjson.JSONDecodeError))
    rest, items = jsonitems.list_items(raw, 2000)
    assert list(items) == document["items"]
    assert "missed" not in parses and len(parses) > 50  # many slices, no candidate passed over


def test_a_hard_to_cut_document_goes_on_at_the_byte_scans_boundaries(monkeypatch):
    # Compact: every nested `},{` is a candidate; with no misses allowed the scan takes over.
    document = {"kind": "List", "items": _nested_items(random.Random(4), 200)}
    raw = json.dumps(document, separators=(",", ":")).encode()
    monkeypatch.setattr(jsonitems, "_MAX_MISSES", 0)
    rest, items = jsonitems.list_items(raw, 100)
    assert list(items) == document["items"]


@pytest.mark.parametrize("raw", [
    b'[{"kind": "Node"}]', b'{"kind": "NodeList"}', b'{"kind": "NodeList", "items": null}',
    b'{"kind": "NodeList", "items": [{"a": 1}]', b'  ', b'{"kind": "NodeList", "items": 3, "x": []}',
    b'{"kind": "List", "items": ["a", "b"]}', b'{"kind": "List", "items": [{"a": 1}]}',
])
def test_other_shapes_are_left_to_the_other_readers(raw):
    assert jsonitems.list_items(raw) is None


def test_a_second_items_key_gives_what_the_whole_parse_gives():
    raw = b'{"kind": "NodeList", "items": [], "items": [{"a": 1}]}'
    found = jsonitems.list_items(raw, 1)
    whole = orjson.loads(raw)["items"]
    assert found is None or list(found[1]) == whole


def test_a_long_tail_after_the_items_is_left_to_the_byte_scan(tmp_path):
    document = {"kind": "List", "items": [{"a": 1}, {"b": 2}], "metadata": {"note": "x" * (1 << 17)}}
    raw = json.dumps(document).encode()
    assert jsonitems.list_items(raw) is None
    assert list(iter_objects(_write(tmp_path, raw.decode()), stream_from=0)) == parse_objects(raw.decode())


def test_tricky_tails_and_brackets_in_strings():
    items = [{"name": "]", "v": "],\"items\":[]}"}, {"name": "x", "list": [[], ["]"]]}]
    document = {"kind": "List", "items": items, "metadata": {"note": "]}", "more": [1, [2, "]"]]}}
    raw = json.dumps(document).encode()
    found = jsonitems.list_items(raw, 1)
    if found is not None:
        assert list(found[1]) == items and found[0] == {**document, "items": []}


@pytest.mark.parametrize("broken", [
    '{"kind": "NodeList", "items": [{"metadata": {"name": "n1"}}, {"metadata": }]}',
    '{"kind": "NodeList", "items": [{"metadata": {"name": "n1"}},]}',
    '{"kind": "NodeList", "items": [{"metadata": {"name": "n1"}} {"a": 1}]}',
    '{"kind": "NodeList", "items": [{"a": 1}, {"b": 2}, {"c": [}, {"d": 4}]}',
])
@pytest.mark.parametrize("slice_bytes", [8, jsonitems.SLICE_BYTES])  # cut into tiny slices, or one slice
def test_a_broken_document_reports_the_whole_documents_error(tmp_path, monkeypatch, broken, slice_bytes):
    monkeypatch.setattr(jsonitems, "SLICE_BYTES", slice_bytes)
    path = _write(tmp_path, broken)
    with pytest.raises(ObjectFileError) as whole:
        parse_objects(broken, path)
    with pytest.raises(ObjectFileError) as sliced:
        list(iter_objects(path, stream_from=0))
    assert str(sliced.value) == str(whole.value)
    assert "invalid JSON at line 1" in str(sliced.value)
