"""A big JSON `*List` is read a slice of items at a time: the objects, their order and
every error equal what parsing the whole document gives (the whole-document parse is the
oracle here; it is the path every small file takes)."""

from __future__ import annotations

import json
import random

import pytest

from estimator.cluster import jsonitems
from estimator.cluster.kubefiles import iter_objects, parse_objects

TRICKY_STRINGS = ['a"b', "back\\slash", 'ends with backslash\\', '\\"', '\\\\"', "{[,]}", '"items": [',
                  "\u00e9\u4e2d", "", "x\ny\tz", "\\\\\\"]


def _random_value(rng: random.Random, depth: int = 0):
    choice = rng.randrange(7 if depth < 3 else 4)
    if choice == 0:
        return rng.choice(TRICKY_STRINGS) + str(rng.randrange(100))
    if choice == 1:
        return rng.randrange(-10**6, 10**6)
    if choice == 2:
        return rng.choice([True, False, None, 1.5])
    if choice == 3:
        return rng.choice(TRICKY_STRINGS)
    if choice in (4, 5):
        return {rng.choice(TRICKY_STRINGS + ["items", "kind"]) + str(i): _random_value(rng, depth + 1)
                for i in range(rng.randrange(4))}
    return [_random_value(rng, depth + 1) for _ in range(rng.randrange(4))]


def _document(rng: random.Random, count: int) -> dict:
    items = []
    for i in range(count):
        item = {"metadata": {"name": f"p{i}", "labels": {"k": rng.choice(TRICKY_STRINGS)}},
                "spec": _random_value(rng), "status": {"items": [_random_value(rng)]}}
        if rng.random() < 0.3:
            item["kind"] = "Node"
        items.append(item)
    return {"apiVersion": "v1", "kind": "PodList", "metadata": {"resourceVersion": "7", "note": '"items": []'},
            "items": items}


def _write(tmp_path, text: str):
    path = tmp_path / "member.json"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("indent", [None, 1])
def test_slices_equal_the_whole_document(tmp_path, monkeypatch, seed, indent):
    rng = random.Random(seed)
    document = _document(rng, rng.randrange(0, 40))
    text = json.dumps(document, indent=indent, ensure_ascii=rng.random() < 0.5)
    path = _write(tmp_path, text)
    assert jsonitems.split_items(text.encode()) is not None  # the streaming path is the one under test
    monkeypatch.setattr(jsonitems, "ITEMS_PER_SLICE", 3)
    streamed = list(iter_objects(path, stream_from=0))
    assert streamed == parse_objects(text, path)
    assert [o["metadata"]["name"] for o in streamed] == [f"p{i}" for i in range(len(document["items"]))]


def test_small_slices_cover_every_item(tmp_path):
    items = [{"metadata": {"name": f"n{i}"}} for i in range(10)]
    raw = json.dumps({"kind": "NodeList", "items": items}).encode()
    rest, spans = jsonitems.split_items(raw)
    assert rest == {"kind": "NodeList", "items": []} and len(spans) == 10
    for per_slice in (1, 3, 10, 50):
        assert list(jsonitems.iter_items(raw, spans, per_slice)) == items


NOT_THAT_SHAPE = [
    ("a JSON array", b'[{"kind": "Node"}]'),
    ("no items", b'{"kind": "NodeList"}'),
    ("items is not an array", b'{"kind": "NodeList", "items": null}'),
    ("two items arrays", b'{"kind": "NodeList", "items": [], "items": [{"a": 1}]}'),
    ("unbalanced", b'{"kind": "NodeList", "items": [{"a": 1}]'),
    ("an odd quote", b'{"kind": "NodeList", "items": [{"a": "1}]}'),
]


@pytest.mark.parametrize("raw", [pytest.param(raw, id=name) for name, raw in NOT_THAT_SHAPE])
def test_other_shapes_are_left_to_the_whole_document_parse(raw):
    assert jsonitems.split_items(raw) is None


def test_nested_items_keys_are_not_the_list(tmp_path):
    text = json.dumps({"kind": "List", "metadata": {"items": [1, 2]},
                       "items": [{"kind": "Pod", "spec": {"items": [{"a": "],["}]}}]})
    assert list(iter_objects(_write(tmp_path, text), stream_from=0)) == parse_objects(text)


def test_an_empty_list_and_a_list_that_is_not_a_kind_list(tmp_path):
    assert list(iter_objects(_write(tmp_path, '{"kind": "PodList", "items": [ ]}'), stream_from=0)) == []
    text = '{"kind": "Thing", "items": [{"a": 1}]}'  # not a *List: the object itself
    assert list(iter_objects(_write(tmp_path, text), stream_from=0)) == [{"kind": "Thing", "items": [{"a": 1}]}]
