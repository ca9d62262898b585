"""Karmada's own encodings (tests/support/data/wire-vectors) against our messages: the contract proof.

vectors.json lists each .bin with its message type and its content as JSON, the bytes
fields shown decoded: resourceRequestBytes as "resourceRequest" {name: quantity string},
nodeAffinityBytes as "nodeAffinity", tolerationsBytes as "tolerations", and a Component's
replicaRequirements flattened into the component. `render` produces that shape from a
parsed message and `build` goes back, so every vector is checked in both directions:

- requests: parsed, they render to exactly the documented content; built from that content
  they equal the parsed message, Kubernetes bytes included byte for byte; re-serialised,
  they give the same bytes up to the order of map entries (see below);
- responses and quantities: built from the content, they encode to the vector's bytes.

Why not byte equality for every request: protobuf leaves the order of map entries
unspecified. Go writes them in its randomised map iteration order (sets_train_small.bin
has cpu, nvidia.com/gpu, memory), Python's upb in hash-table order, and deterministic
serialisation sorts by key; none can reproduce an arbitrary order. So re-serialised bytes
are compared after sorting each run of map entries, which still pins every other byte.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from google.protobuf.descriptor import Descriptor, FieldDescriptor
from google.protobuf.message import Message

from estimator.pb import estimator_pb2 as pb
from estimator.pb import k8s_core_pb2 as core
from estimator.pb import k8s_resource_pb2 as k8s_resource

VECTORS_DIR = Path(__file__).resolve().parents[1] / "support" / "data" / "wire-vectors"

# The contract proof must not quietly vanish: a missing vectors.json fails collection loudly.
assert (VECTORS_DIR / "vectors.json").is_file(), f"wire vectors not found at {VECTORS_DIR}"

VECTORS = json.loads((VECTORS_DIR / "vectors.json").read_text(encoding="utf-8"))
MESSAGE_TYPES = {
    getattr(module, name).DESCRIPTOR.full_name: getattr(module, name)
    for module in (pb, core, k8s_resource)
    for name in module.DESCRIPTOR.message_types_by_name
}


def _is_request(vector) -> bool:
    return vector["message"].endswith("Request")


def _vectors(select):
    return [pytest.param(v, id=v["file"]) for v in VECTORS if select(v)]


REQUESTS = _vectors(_is_request)
RESPONSES = _vectors(lambda v: v["message"].endswith("Response"))
QUANTITIES = _vectors(lambda v: v["message"] == k8s_resource.Quantity.DESCRIPTOR.full_name)


def _raw(vector) -> bytes:
    return (VECTORS_DIR / vector["file"]).read_bytes()


def _parse(vector) -> Message:
    return MESSAGE_TYPES[vector["message"]].FromString(_raw(vector))


def test_every_vector_is_checked():
    assert len(REQUESTS) + len(RESPONSES) + len(QUANTITIES) == len(VECTORS)
    assert REQUESTS and RESPONSES and QUANTITIES


# --- message -> vectors.json shape ----------------------------------------------------------


def _decode_k8s(message_type: type[Message], raw: bytes) -> Message:
    decoded = message_type.FromString(raw)
    # Kubernetes messages have no maps, so their encoding is canonical: it must round-trip.
    assert decoded.SerializeToString() == raw, f"{message_type.DESCRIPTOR.full_name} did not round-trip"
    return decoded


_BYTES_FIELDS = {
    "resourceRequestBytes": (
        "resourceRequest",
        lambda entries: {name: _decode_k8s(k8s_resource.Quantity, raw).string for name, raw in entries.items()},
    ),
    "nodeAffinityBytes": ("nodeAffinity", lambda raw: render(_decode_k8s(core.NodeSelector, raw))),
    "tolerationsBytes": ("tolerations", lambda items: [render(_decode_k8s(core.Toleration, raw)) for raw in items]),
}


def _is_map(field: FieldDescriptor) -> bool:
    return field.message_type is not None and field.message_type.GetOptions().map_entry


def render(message: Message) -> dict:
    """The vectors.json shape of a message: set fields only, Kubernetes bytes decoded."""
    rendered: dict = {}
    for field, value in message.ListFields():
        if field.name in _BYTES_FIELDS:
            name, decode = _BYTES_FIELDS[field.name]
            rendered[name] = decode(value)
        elif isinstance(message, pb.Component) and field.name == "replicaRequirements":
            rendered.update(render(value))
        elif _is_map(field):
            rendered[field.name] = dict(value)
        elif field.message_type is not None:
            rendered[field.name] = [render(v) for v in value] if field.is_repeated else render(value)
        else:
            rendered[field.name] = list(value) if field.is_repeated else value
    if isinstance(message, pb.MaxAvailableReplicasRequest) and not message.HasField("replicaRequirements"):
        rendered["replicaRequirements"] = None
    return rendered


# --- vectors.json shape -> message ----------------------------------------------------------

_REQUIREMENT_KEYS = {"resourceRequest", "nodeClaim", "priorityClassName"}


def build(message_type: type[Message], content: dict) -> Message:
    """The inverse of `render`: a message from its vectors.json shape."""
    message = message_type()
    if message_type is pb.Component:
        requirements = {k: v for k, v in content.items() if k in _REQUIREMENT_KEYS}
        content = {k: v for k, v in content.items() if k not in _REQUIREMENT_KEYS}
        if requirements:
            message.replicaRequirements.CopyFrom(build(pb.ComponentReplicaRequirements, requirements))
    for key, value in content.items():
        if value is None:
            continue  # an unset message field
        if key == "resourceRequest":
            for name, text in value.items():
                message.resourceRequestBytes[name] = k8s_resource.Quantity(string=text).SerializeToString()
        elif key == "nodeAffinity":
            message.nodeAffinityBytes = build(core.NodeSelector, value).SerializeToString()
        elif key == "tolerations":
            message.tolerationsBytes.extend(build(core.Toleration, t).SerializeToString() for t in value)
        else:
            _set_field(message, message.DESCRIPTOR.fields_by_name[key], value)
    return message


def _set_field(message: Message, field: FieldDescriptor, value) -> None:
    target = getattr(message, field.name)
    if _is_map(field):
        target.update(value)
    elif field.message_type is not None and field.is_repeated:
        for item in value:
            target.add().CopyFrom(build(_class_of(field.message_type), item))
    elif field.message_type is not None:
        target.CopyFrom(build(_class_of(field.message_type), value))
    elif field.is_repeated:
        target.extend(value)
    else:
        setattr(message, field.name, value)


def _class_of(descriptor: Descriptor) -> type[Message]:
    return MESSAGE_TYPES[descriptor.full_name]


# --- wire bytes, map entries sorted --------------------------------------------------------


def _varint(raw: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = raw[at]
        at += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, at


def _encode_varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def canonical_wire(raw: bytes, descriptor: Descriptor) -> bytes:
    """`raw` with every run of one map field's entries sorted; all other bytes kept in order.

    Handles the wire types the estimator messages use: varint (0) and length-delimited (2).
    """
    records: list[tuple[int | None, bytes]] = []  # (map field number or None, record bytes)
    at = 0
    while at < len(raw):
        tag, body = _varint(raw, at)
        number, wire_type = tag >> 3, tag & 7
        field = descriptor.fields_by_number.get(number)
        if wire_type == 0:
            _, end = _varint(raw, body)
            record = raw[at:end]
        elif wire_type == 2:
            length, start = _varint(raw, body)
            end = start + length
            payload = raw[start:end]
            if field is not None and field.message_type is not None:
                payload = canonical_wire(payload, field.message_type)
            record = raw[at:body] + _encode_varint(len(payload)) + payload
        else:
            raise AssertionError(f"unexpected wire type {wire_type} in {descriptor.full_name}")
        records.append((number if field is not None and _is_map(field) else None, record))
        at = end
    out = bytearray()
    run: list[bytes] = []
    for index, (map_number, record) in enumerate(records):
        run.append(record)
        following = records[index + 1][0] if index + 1 < len(records) else None
        if map_number is None or following != map_number:
            out += b"".join(sorted(run))
            run = []
    return bytes(out)


# --- the checks -----------------------------------------------------------------------------


@pytest.mark.parametrize("vector", REQUESTS)
def test_request_vector_decodes_to_its_documented_content(vector):
    assert render(_parse(vector)) == vector["decoded"]


@pytest.mark.parametrize("vector", REQUESTS)
def test_request_built_from_its_content_equals_the_vector(vector):
    # Message equality compares bytes fields exactly: our Kubernetes encodings are Go's.
    assert build(MESSAGE_TYPES[vector["message"]], vector["decoded"]) == _parse(vector)


@pytest.mark.parametrize("vector", REQUESTS)
def test_request_reencodes_to_the_same_bytes_up_to_map_order(vector):
    raw, message = _raw(vector), _parse(vector)
    again = message.SerializeToString()
    assert len(again) == len(raw) == vector["bytes"]
    assert canonical_wire(again, message.DESCRIPTOR) == canonical_wire(raw, message.DESCRIPTOR)
    assert type(message).FromString(again) == message


@pytest.mark.parametrize("vector", RESPONSES)
def test_response_encodes_byte_for_byte(vector):
    message = build(MESSAGE_TYPES[vector["message"]], vector["decoded"])
    assert message.SerializeToString() == _raw(vector)
    assert render(_parse(vector)) == vector["decoded"]


@pytest.mark.parametrize("vector", QUANTITIES)
def test_quantity_decodes_to_its_string_and_back(vector):
    assert _parse(vector).string == vector["decoded"]["string"]
    assert k8s_resource.Quantity(string=vector["decoded"]["string"]).SerializeToString() == _raw(vector)


def test_canonical_wire_ignores_map_order_and_nothing_else():
    # Hand-assembled, so the check does not depend on the runtime's map order.
    namespace = b"\x1a\x01a"  # ReplicaRequirements.namespace = "a"
    x, y = _entry(b"x", b"1"), _entry(b"y", b"2")
    descriptor = pb.ReplicaRequirements.DESCRIPTOR
    assert canonical_wire(namespace + y + x, descriptor) == namespace + x + y
    assert canonical_wire(namespace + x + y, descriptor) == namespace + x + y
    assert canonical_wire(x + namespace + y, descriptor) == x + namespace + y  # runs only
    assert canonical_wire(namespace + _entry(b"x", b"2"), descriptor) != namespace + _entry(b"x", b"1")


def _entry(key: bytes, value: bytes) -> bytes:
    """A ReplicaRequirements.resourceRequestBytes (field 5) entry: key = 1, value = 2."""
    body = b"\x0a" + bytes([len(key)]) + key + b"\x12" + bytes([len(value)]) + value
    return b"\x2a" + bytes([len(body)]) + body
