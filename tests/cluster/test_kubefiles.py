"""estimator/cluster/kubefiles.py: the one reader of Kubernetes object files (YAML or JSON)."""

from __future__ import annotations

import pytest

from estimator.cluster.kubefiles import ObjectFileError, parse_objects, read_objects

NODE = {"kind": "Node", "metadata": {"name": "n1"}}
POD = {"kind": "Pod", "metadata": {"name": "p", "namespace": "ns"}}


def cases(table):
    return [pytest.param(*values, id=sentence) for sentence, *values in table]


FILES = [
    ("one YAML object", "kind: Node\nmetadata: {name: n1}\n", [NODE]),
    ("multi-document YAML, empty documents skipped", "---\nkind: Node\nmetadata: {name: n1}\n---\n---\n"
     "kind: Pod\nmetadata: {name: p, namespace: ns}\n", [NODE, POD]),
    ("a v1 List keeps its items' kinds", "kind: List\nitems:\n- kind: Node\n  metadata: {name: n1}\n"
     "- kind: Pod\n  metadata: {name: p, namespace: ns}\n", [NODE, POD]),
    ("a PodList fills in the kind its items omit", '{"kind": "PodList", "items": [{"metadata": '
     '{"name": "p", "namespace": "ns"}}]}', [POD]),
    ("an item's own kind wins over the list's", "kind: PodList\nitems:\n- kind: Node\n  metadata: {name: n1}\n",
     [NODE]),
    ("a List without items is empty", "kind: List\nitems: null\n", []),
    ("a JSON array of objects", '[{"kind": "Node", "metadata": {"name": "n1"}}, '
     '{"kind": "Pod", "metadata": {"name": "p", "namespace": "ns"}}]', [NODE, POD]),
    ("an empty file", "", []),
    ("a YAML sequence is expanded too; non-objects are the caller's to refuse", "- 1\n- two\n", [1, "two"]),
]


@pytest.mark.parametrize("text, expected", cases(FILES))
def test_parse_objects(text, expected):
    assert parse_objects(text, "f.yaml") == expected


BROKEN = [
    ("invalid YAML names line and column", "kind: Node\nmetadata: {name: [\n", r"f.yaml: invalid YAML at line 3, column 1"),
    ("invalid JSON names line and column", '{"kind": "Node",\n "metadata": }', r"f.yaml: invalid JSON at line 2, column 14"),
    ("a List whose items are not a list", "kind: NodeList\nitems: {a: 1}\n", r"f.yaml: NodeList: items is not a list"),
]


@pytest.mark.parametrize("text, message", cases(BROKEN))
def test_broken_files_name_the_file_and_place(text, message):
    with pytest.raises(ObjectFileError, match=message) as info:
        parse_objects(text, "f.yaml")
    assert info.value.path == "f.yaml"


def test_read_objects_reads_the_file_and_names_a_missing_one(tmp_path):
    path = tmp_path / "nodes.json"
    path.write_text('{"kind": "NodeList", "items": [{"metadata": {"name": "n1"}}]}')
    assert read_objects(path) == [NODE]
    with pytest.raises(ObjectFileError, match=r"absent.yaml: no such file"):
        read_objects(tmp_path / "absent.yaml")
    (tmp_path / "latin1.yaml").write_bytes(b"kind: \xe9\n")
    with pytest.raises(ObjectFileError, match=r"latin1.yaml: cannot read"):
        read_objects(tmp_path / "latin1.yaml")
