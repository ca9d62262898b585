"""Protobuf requests -> model.py dataclasses: decode, validate, normalise.

Pure translation, no I/O and no gRPC. The Kubernetes objects that travel as bytes
(quantities, node affinity, tolerations) are decoded here, so nothing downstream sees a
wire type. Every rejection is an InvalidRequest naming the offending field by its path
in the request, e.g. `components[1].replicaRequirements.resourceRequestBytes["nvidia.com/gpu"]`.

Two wire forms: Karmada v1.16/v1.17 schedulers send the Kubernetes objects as messages
in the original fields (resourceRequest, nodeAffinity, tolerations), v1.19 as bytes in
the *Bytes fields, v1.18 both. As in Karmada's readers, a non-empty bytes field wins and
the original field is the fallback; when both are present they must say the same thing,
else the request is refused naming the original field.

Normalisation follows Karmada's Go estimator (see semantics.md, "Parity details"):
request entries that are not positive, `pods`, and names a node-fit check does not count
are dropped; zero affinity terms mean no constraint. Unlike Go, which silently lets a
malformed affinity term match nothing, we reject malformed input outright (wire contract).

Limits (`LIMITS`): counts of components, assumed workloads, requests, selector entries,
affinity terms, expressions, values and tolerations are bounded far above any real job,
so one request cannot hold a worker for seconds; a count over its limit is refused before
any item is converted, naming the field. Every string (names, keys, values, namespaces)
is at most `MAX_TEXT` characters, checked before it is cached or logged. `lenient_decoder`
lets a request body that does not decode reach the servicer, which answers INVALID_ARGUMENT
(gRPC itself says INTERNAL).

A client's value in an error message is quoted and cut (`quoted`, `quoted_key`): a newline
cannot start a forged log line, and a megabyte value does not become a megabyte message.
"""

from __future__ import annotations

import functools
import json
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

from google.protobuf.message import DecodeError, Message

from estimator.core import model
from estimator.core.errors import InvalidRequest
from estimator.core.labels import is_int64
from estimator.core.resources import MAX_INT32, PODS, QuantityError, quantity_to_int
from estimator.core.resources import is_counted as _is_counted
from estimator.pb import estimator_pb2 as pb
from estimator.pb import k8s_core_pb2 as core
from estimator.pb import k8s_resource_pb2 as k8s_resource

_M = TypeVar("_M", bound=Message)  # a decoded message is of the type asked for (_decode)
# The requests `remembered` converts, and what it converts them to.
_Q = TypeVar("_Q", pb.MaxAvailableReplicasRequest, pb.MaxAvailableComponentSetsRequest)
_T = TypeVar("_T")

__all__ = [
    "LIMITS",
    "MAX_TEXT",
    "QUOTE_LIMIT",
    "Undecodable",
    "Undecoded",
    "check_decoded",
    "component_sets_query",
    "lenient_decoder",
    "quoted",
    "quoted_key",
    "shown_name",
    "remembered",
    "replicas_query",
    "request_components",
    "workload_ref",
]

_NANOSECONDS_PER_SECOND = 1e9
_TOLERATION_OPERATORS = ("", *model.TOLERATION_OPERATORS)  # "" means Equal
_TAINT_EFFECTS = ("", *model.TAINT_EFFECTS)  # "" matches every effect
_OPERATOR_NAMES = ", ".join(model.NODE_SELECTOR_OPERATORS)
_EFFECT_NAMES = ", ".join(model.TAINT_EFFECTS)
_FIELD_SELECTOR_KEY = "metadata.name"  # the only node field Kubernetes selects on

# Most entries one repeated field or map may carry. Real jobs use a handful of each; the
# bounds keep the worst accepted request to tens of milliseconds of conversion and packing.
LIMITS = {
    "components": 1024,  # per request, and per assumed workload
    "assumedWorkloads": 1024,
    "assumedComponents": 4096,  # over all assumed workloads of a request
    "resourceRequestBytes": 128,
    "nodeSelector": 256,
    "nodeSelectorTerms": 128,
    "matchExpressions": 256,  # per term (matchFields too)
    "values": 4096,  # per requirement
    "tolerationsBytes": 256,
    # Over a whole request: selector entries, affinity requirements and their values, and
    # tolerations, every claim's (each is a string or more to convert): the counts above
    # multiply to millions, which would hold a worker (and the interpreter) for seconds.
    "claimEntries": 16384,
}


# Longest string a field may carry. Kubernetes' longest (a qualified name, 253 + 1 + 63
# characters) fits with room to spare; the bound keeps every cache keyed on request strings
# small in bytes, not only in entries.
MAX_TEXT = 1024
# Characters of a client's value shown in a log line or an error message.
QUOTE_LIMIT = 200


def quoted(value: object, limit: int = QUOTE_LIMIT) -> str:
    """A client's value for a message: repr-quoted (a newline or any other unprintable
    character is escaped, so it cannot start a forged log line) and cut to `limit` characters."""
    if isinstance(value, (str, bytes)) and len(value) > limit:
        return f"{value[:limit]!r}...({len(value)} characters)"
    if isinstance(value, (list, tuple)) and len(value) > 8:
        shown = ", ".join(quoted(v, limit // 4) for v in value[:8])
        return f"[{shown}, ...({len(value)} values)]"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(quoted(v, limit // 4) for v in value) + "]"
    return repr(value)


_PLAIN_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/-]{0,199}")


def shown_name(value: str) -> str:
    """A client's name in a message: as Go shows it when it is a plain name (letters, digits,
    '.', '-', '_', '/'; at most 200), which cannot forge anything; else `quoted`."""
    return value if _PLAIN_NAME.fullmatch(value) else quoted(value)


def quoted_key(name: str) -> str:
    """A map key in a field path, JSON-quoted as before (`resourceRequestBytes["nvidia.com/gpu"]`),
    with unprintable characters escaped and a long key cut."""
    text = json.dumps(name[:QUOTE_LIMIT], ensure_ascii=False)
    if not text.isprintable():  # json leaves U+2028, U+0085 and the like as they are
        text = "".join(c if c.isprintable() else f"\\u{ord(c):04x}" for c in text)
    return text if len(name) <= QUOTE_LIMIT else f"{text}...({len(name)} characters)"


def _limit(count: int, kind: str, path: str) -> None:
    if count > LIMITS[kind]:
        raise InvalidRequest(path, f"has {count} entries, more than the {LIMITS[kind]} this estimator accepts")


class _Tally:
    """LIMITS["claimEntries"] over one request, taken as its claims are converted."""

    __slots__ = ("left",)

    def __init__(self) -> None:
        self.left = LIMITS["claimEntries"]

    def take(self, count: int, path: str) -> None:
        self.left -= count
        if self.left < 0:
            raise InvalidRequest(
                path,
                f"brings the request's selector entries, affinity requirements and values, and "
                f"tolerations past the {LIMITS['claimEntries']} this estimator accepts",
            )


def _bounded(value: str, path: str) -> str:
    if len(value) > MAX_TEXT:
        raise InvalidRequest(path, f"is {len(value)} characters long, more than the {MAX_TEXT} this estimator accepts")
    return value


# A regular-expression check per name per request; requests repeat the same few names
# (at most MAX_TEXT characters each: `_amounts` checks them first).
is_counted = functools.lru_cache(maxsize=1024)(_is_counted)

# ---------------------------------------------------------------------------------------
# Request bodies


class Undecodable:
    """A request body that is not a valid encoding of its message type."""

    __slots__ = ("type_name",)

    def __init__(self, type_name: str):
        self.type_name = type_name


class Undecoded:
    """A request body left undecoded: larger than the server can take on now (`admit`)."""

    __slots__ = ("type_name", "size")

    def __init__(self, type_name: str, size: int):
        self.type_name, self.size = type_name, size


def lenient_decoder(
    message_type: type[_M], admit: Callable[[int], bool] | None = None
) -> Callable[[bytes], _M | Undecoded | Undecodable]:
    """gRPC request deserializer that never raises: bad bytes become an Undecodable, so the
    servicer can answer INVALID_ARGUMENT instead of gRPC's INTERNAL. With `admit`, a body
    it refuses (by its size, before any decoding) becomes an Undecoded: a flood of large
    requests is turned away for the price of receiving them."""
    type_name = message_type.DESCRIPTOR.full_name

    def decode(data: bytes) -> _M | Undecoded | Undecodable:
        if admit is not None and not admit(len(data)):
            return Undecoded(type_name, len(data))
        try:
            return message_type.FromString(data)
        except Exception:  # noqa: BLE001 - DecodeError, or anything else the runtime raises on bad bytes
            return Undecodable(type_name)

    return decode


def check_decoded(request: object) -> None:
    if isinstance(request, Undecodable):
        raise InvalidRequest("request", f"is not a valid encoding of {request.type_name}")


# ---------------------------------------------------------------------------------------
# Requests


def replicas_query(req: pb.MaxAvailableReplicasRequest) -> model.ReplicasQuery:
    """MaxAvailableReplicas: shape is None when replicaRequirements is unset."""
    shape = None
    # v1.16/v1.17 embed replicaRequirements by value, so "none" arrives as an empty message.
    tally = _Tally()
    if req.HasField("replicaRequirements") and req.replicaRequirements.ListFields():
        requirements = req.replicaRequirements
        shape = _shape(
            requirements,
            "replicaRequirements",
            _bounded(requirements.namespace, "replicaRequirements.namespace"),
            tally,
        )
    return model.ReplicasQuery(shape=shape, assumed=_assumed_workloads(req.assumedWorkloads, tally))


def component_sets_query(req: pb.MaxAvailableComponentSetsRequest) -> model.ComponentSetsQuery:
    """MaxAvailableComponentSets: every component's shape carries the request namespace."""
    namespace, tally = _bounded(req.namespace, "namespace"), _Tally()
    return model.ComponentSetsQuery(
        components=_components(req.components, "components", namespace, tally),
        namespace=namespace,
        assumed=_assumed_workloads(req.assumedWorkloads, tally),
    )


def workload_ref(req: pb.UnschedulableReplicasRequest) -> model.WorkloadRef:
    """GetUnschedulableReplicas: the threshold travels in nanoseconds; negative counts as 0."""
    if not req.HasField("resource"):
        raise InvalidRequest("resource", "must be set: it names the workload to inspect")
    ref = req.resource
    return model.WorkloadRef(
        api_version=_bounded(ref.apiVersion, "resource.apiVersion"),
        kind=_bounded(ref.kind, "resource.kind"),
        namespace=_bounded(ref.namespace, "resource.namespace"),
        name=_bounded(ref.name, "resource.name"),
        threshold_seconds=max(req.unschedulableThreshold, 0) / _NANOSECONDS_PER_SECOND,
    )


# Requests at most this long (serialised), of at most this many components (assumed ones
# included), are remembered by `remembered`; a real job's is a few hundred bytes and a few
# components. The bounds keep the memo small in bytes whatever callers send: 512 entries of
# at most 4 KB, and what is worked out per remembered query (request rows, estimate.py and
# the plugins) at most 64 components wide. A larger request is converted afresh, and what
# is worked out for it dies with it.
_MEMO_MAX_BYTES = 4096
MEMO_MAX_COMPONENTS = 64


def request_components(req: pb.MaxAvailableReplicasRequest | pb.MaxAvailableComponentSetsRequest) -> int:
    """Components a request carries, assumed workloads' included (wire counts, nothing decoded)."""
    count = sum(len(workload.components) for workload in req.assumedWorkloads) if req.assumedWorkloads else 0
    return count + (len(req.components) if hasattr(req, "components") else 1)


# The request whose encoding `_converted` is asked about, per thread: on a miss it converts
# that decoded message itself instead of decoding the encoding a second time.
_asked = threading.local()


@functools.lru_cache(maxsize=512)
def _converted(convert: Callable[[_Q], _T], message_type: type[Message], encoded: bytes) -> _T:
    return convert(_asked.request)


def remembered(convert: Callable[[_Q], _T], req: _Q) -> _T:
    """`convert(req)`, remembered by the request's deterministic encoding: the scheduler sends
    the same few requests again and again, and converting one costs ~15x encoding it. The
    results are immutable; a request that fails to convert is not remembered (it raises again)."""
    if request_components(req) > MEMO_MAX_COMPONENTS:
        return convert(req)
    encoded = req.SerializeToString(deterministic=True)
    if len(encoded) > _MEMO_MAX_BYTES:
        return convert(req)
    _asked.request = req  # what `_converted` converts on a miss (this very request, decoded)
    try:
        # The ignore: a class hashes by identity (type.__hash__); mypy takes Message's
        # `__hash__ = None` for the class's.
        return _converted(convert, type(req), encoded)  # type: ignore[arg-type]
    finally:
        _asked.request = None


# ---------------------------------------------------------------------------------------
# Components and replica shapes


def _assumed_workloads(workloads: Sequence[pb.AssumedWorkload], tally: _Tally) -> tuple[model.AssumedWorkload, ...]:
    if not workloads:
        return ()
    _limit(len(workloads), "assumedWorkloads", "assumedWorkloads")
    _limit(sum(len(workload.components) for workload in workloads), "assumedComponents", "assumedWorkloads")
    return tuple(
        model.AssumedWorkload(
            namespace=workload.namespace,
            components=_components(workload.components, f"assumedWorkloads[{i}].components", workload.namespace, tally),
        )
        for i, workload in enumerate(workloads)
    )


def _components(
    components: Sequence[pb.Component], path: str, namespace: str, tally: _Tally
) -> tuple[model.Component, ...]:
    _limit(len(components), "components", path)
    converted = []
    total = 0
    # Field paths are spelled out only for a message that needs one (a request converts
    # on every call that is not remembered: a new job).
    for i, component in enumerate(components):
        replicas = component.replicas
        if replicas < 0:
            raise InvalidRequest(f"{path}[{i}].replicas", f"must not be negative, got {replicas}")
        name = component.name
        if len(name) > MAX_TEXT:
            _bounded(name, f"{path}[{i}].name")
        if component.HasField("replicaRequirements"):
            shape = _shape(component.replicaRequirements, f"{path}[{i}].replicaRequirements", namespace, tally)
        else:
            shape = model.ReplicaShape(namespace=namespace)
        converted.append(model.Component(name=name, replicas=replicas, shape=shape))
        total += replicas
    # Replica counts of a set are int32 on the wire and in Go's arithmetic; so is their sum.
    if total > MAX_INT32:
        raise InvalidRequest(path, f"replicas of one set add up to {total}, more than {MAX_INT32}")
    return tuple(converted)


def _shape(
    requirements: pb.ReplicaRequirements | pb.ComponentReplicaRequirements, path: str, namespace: str, tally: _Tally
) -> model.ReplicaShape:
    # Both requirement messages share these three fields' names (their numbers differ).
    claim = model.NO_CLAIM
    if requirements.HasField("nodeClaim"):
        claim = _claim(requirements.nodeClaim, path, tally)
    requests = _resource_requests(requirements, path)
    priority_class = requirements.priorityClassName
    if len(priority_class) > MAX_TEXT:
        _bounded(priority_class, f"{path}.priorityClassName")
    return model.ReplicaShape(requests=requests, claim=claim, namespace=namespace, priority_class=priority_class)


def _resource_requests(
    requirements: pb.ReplicaRequirements | pb.ComponentReplicaRequirements, path: str
) -> tuple[tuple[str, int], ...]:
    """Counted, positive requests sorted by name, from whichever form the request carries."""
    amounts = None
    encoded = requirements.resourceRequestBytes
    if encoded:
        amounts = _amounts(encoded, path, "resourceRequestBytes", True)
    messages = requirements.resourceRequest
    if messages and (amounts is None or not _same_encodings(messages, encoded)):
        original = _amounts(messages, path, "resourceRequest", False)
        if amounts is not None and original != amounts:
            differences = _differences(original, amounts)
            raise InvalidRequest(f"{path}.resourceRequest", f"disagrees with resourceRequestBytes: {differences}")
        amounts = original
    if not amounts:
        return ()
    return tuple(
        [(name, amount) for name, amount in amounts.items() if amount > 0 and name != PODS and is_counted(name)]
    )


def _same_encodings(messages: Mapping, encoded: Mapping) -> bool:
    """Whether the Quantity messages are, name for name, the encoded ones (karmada-scheduler
    sends both forms of one list): then they hold the same amounts, and the message form
    need not be read again (a new job's amounts miss every cache)."""
    if len(messages) != len(encoded):
        return False
    for name in messages:  # only the message map's own keys: indexing it would add a missing one
        if encoded.get(name) != messages[name].SerializeToString():
            return False
    return True


def _amounts(entries: Mapping, path: str, field: str, encoded: bool) -> dict[str, int]:
    """Every entry's amount, by name in sorted order: encoded Quantity messages (`encoded`,
    resourceRequestBytes) or Quantity messages. Every entry is validated, even ones the
    estimate ignores, as Go fails the whole request when any quantity does not unmarshal.
    `path`.`field`: the map's field path, spelled out for a message only."""
    if len(entries) > LIMITS["resourceRequestBytes"]:
        _limit(len(entries), "resourceRequestBytes", f"{path}.{field}")
    amounts = {}
    for name in sorted(entries):  # the keys alone: a protobuf map's items() is the slow generic view
        value = entries[name]
        try:
            if len(name) > MAX_TEXT:  # before the name reaches a cache keyed on it
                raise _BadQuantity(
                    f"the name is {len(name)} characters long, more than the {MAX_TEXT} this estimator accepts"
                )
            # The caches are called here, not through a helper: a new job's amounts miss
            # every cache, and each call layer costs on every entry.
            if encoded:
                if len(value) > _CACHED_QUANTITY_BYTES:
                    amounts[name] = _decode_quantity(name, value)
                else:
                    amounts[name] = _decoded_quantity(name, value)
            else:
                text = value.string
                if len(text) > _CACHED_QUANTITY_BYTES:
                    amounts[name] = _read_quantity_text(name, text)  # refused (too long), and not kept
                else:
                    amounts[name] = _quantity_texts(name, text)
        except _BadQuantity as bad:  # the field path is only spelled out when it is needed
            raise InvalidRequest(f"{path}.{field}[{quoted_key(name)}]", str(bad)) from None
    return amounts


def _differences(original: dict[str, int], encoded: dict[str, int]) -> str:
    names = sorted(set(original) | set(encoded))
    shown = [
        f"{shown_name(name)} {original.get(name, 'absent')} vs {encoded.get(name, 'absent')}"
        for name in names
        if original.get(name) != encoded.get(name)
    ]
    return "; ".join(shown[:8]) + (f"; ...({len(shown)} differences)" if len(shown) > 8 else "")


class _BadQuantity(ValueError):
    pass


# Longest encoded Quantity (and quantity text) the caches below are keyed on: a quantity's
# text is at most 64 characters (resources.py), so its encoding is at most 66 bytes; a
# longer one (unknown fields) is decoded every time instead of being kept.
_CACHED_QUANTITY_BYTES = 128


def _decode_quantity(name: str, encoded: bytes) -> int:
    try:
        quantity = k8s_resource.Quantity.FromString(encoded)
    except DecodeError:
        raise _BadQuantity(f"is not a valid encoding of {k8s_resource.Quantity.DESCRIPTOR.full_name}") from None
    # Not through `_quantity_texts`: the caller's cache keeps the amount, once.
    return _read_quantity_text(name, quantity.string)


# Requests repeat the same few encoded quantities; decode each once.
_decoded_quantity = functools.lru_cache(maxsize=4096)(_decode_quantity)


def _read_quantity_text(name: str, text: str | bytes) -> int:
    if not isinstance(text, str):
        raise _BadQuantity("is not valid UTF-8")
    if not text:
        # Go reads a Quantity without its string as zero and would drop the entry; Go's
        # Marshal always writes the string, so only a broken client sends this. Refuse it.
        raise _BadQuantity("quantity is empty")
    try:
        return quantity_to_int(name, text)
    except QuantityError as error:
        raise _BadQuantity(str(error)) from None


_quantity_texts = functools.lru_cache(maxsize=4096)(_read_quantity_text)


# ---------------------------------------------------------------------------------------
# Node claims: selector, required affinity, tolerations


# Node claims converted before, by their deterministic encoding: a new job (new amounts)
# usually selects and tolerates as earlier ones did, and converting an affinity and its
# tolerations costs several times converting the amounts. At most this many claims of at
# most _CLAIM_MEMO_BYTES each (a few MB with their converted objects), the oldest going
# first; a claim that fails to convert is not kept (it raises again).
_CLAIM_MEMO_SIZE = 256
_CLAIM_MEMO_BYTES = 1024
_claims: dict[bytes, tuple[model.NodeClaim, int]] = {}


def _claim(claim: pb.NodeClaim, path: str, tally: _Tally) -> model.NodeClaim:
    """`_node_claim` (at `path`.nodeClaim), remembered by the claim's encoding with the
    entries it takes from the request's tally. A remembered claim the tally can no longer
    take is converted again, so the refusal names the field it would name otherwise."""
    encoded = claim.SerializeToString(deterministic=True)
    kept = len(encoded) <= _CLAIM_MEMO_BYTES
    if kept:
        hit = _claims.get(encoded)
        if hit is not None and hit[1] <= tally.left:
            tally.left -= hit[1]
            return hit[0]
    left = tally.left
    converted = _node_claim(claim, f"{path}.nodeClaim", tally)
    if kept:
        while len(_claims) >= _CLAIM_MEMO_SIZE:
            try:
                _claims.pop(next(iter(_claims)), None)
            except (StopIteration, RuntimeError):  # emptied or changed by another request meanwhile
                break
        _claims[encoded] = (converted, left - tally.left)
    return converted


def _node_claim(claim: pb.NodeClaim, path: str, tally: _Tally) -> model.NodeClaim:
    _limit(len(claim.nodeSelector), "nodeSelector", f"{path}.nodeSelector")
    tally.take(len(claim.nodeSelector), f"{path}.nodeSelector")
    for key, value in claim.nodeSelector.items():
        _bounded(key, f"{path}.nodeSelector[{quoted_key(key)}]")
        _bounded(value, f"{path}.nodeSelector[{quoted_key(key)}]")
    return model.NodeClaim(
        node_selector=tuple(sorted(claim.nodeSelector.items())),
        affinity_terms=_claim_affinity(claim, path, tally),
        tolerations=_claim_tolerations(claim, path, tally),
    )


def _claim_affinity(claim: pb.NodeClaim, path: str, tally: _Tally) -> tuple[model.NodeSelectorTerm, ...] | None:
    terms = None
    if claim.nodeAffinityBytes:
        at = f"{path}.nodeAffinityBytes"
        terms = _selector_terms(_decode(core.NodeSelector, claim.nodeAffinityBytes, at), at, tally)
    # Presence, not emptiness: v1.18 sends an empty selector as an empty message and no bytes.
    if claim.HasField("nodeAffinity"):
        original = _selector_terms(claim.nodeAffinity, f"{path}.nodeAffinity", tally)
        if claim.nodeAffinityBytes and original != terms:
            raise InvalidRequest(f"{path}.nodeAffinity", "disagrees with nodeAffinityBytes")
        terms = original
    return terms


def _claim_tolerations(claim: pb.NodeClaim, path: str, tally: _Tally) -> tuple[model.Toleration, ...]:
    _limit(len(claim.tolerationsBytes), "tolerationsBytes", f"{path}.tolerationsBytes")
    _limit(len(claim.tolerations), "tolerationsBytes", f"{path}.tolerations")
    tally.take(len(claim.tolerationsBytes) + len(claim.tolerations), f"{path}.tolerationsBytes")
    tolerations = tuple(
        _toleration(_decode(core.Toleration, encoded, f"{path}.tolerationsBytes[{i}]"), f"{path}.tolerationsBytes[{i}]")
        for i, encoded in enumerate(claim.tolerationsBytes)
    )
    if claim.tolerations:
        original = tuple(_toleration(t, f"{path}.tolerations[{i}]") for i, t in enumerate(claim.tolerations))
        if claim.tolerationsBytes and original != tolerations:
            raise InvalidRequest(f"{path}.tolerations", "disagrees with tolerationsBytes")
        tolerations = original
    return tolerations


def _selector_terms(selector: core.NodeSelector, path: str, tally: _Tally) -> tuple[model.NodeSelectorTerm, ...] | None:
    """None means no required affinity: a selector with zero terms."""
    if not selector.nodeSelectorTerms:
        return None
    _limit(len(selector.nodeSelectorTerms), "nodeSelectorTerms", f"{path}.nodeSelectorTerms")
    for i, term in enumerate(selector.nodeSelectorTerms):  # counted before any string is converted
        for name, requirements in (("matchExpressions", term.matchExpressions), ("matchFields", term.matchFields)):
            at = f"{path}.nodeSelectorTerms[{i}].{name}"
            _limit(len(requirements), "matchExpressions", at)
            values = 0
            for j, requirement in enumerate(requirements):
                _limit(len(requirement.values), "values", f"{at}[{j}].values")
                values += len(requirement.values)
            tally.take(len(requirements) + values, at)
    return tuple(_term(term, f"{path}.nodeSelectorTerms[{i}]") for i, term in enumerate(selector.nodeSelectorTerms))


def _term(term: core.NodeSelectorTerm, path: str) -> model.NodeSelectorTerm:
    # A term with neither list is kept: it matches no node, as in Kubernetes.
    _limit(len(term.matchExpressions), "matchExpressions", f"{path}.matchExpressions")
    _limit(len(term.matchFields), "matchExpressions", f"{path}.matchFields")
    return model.NodeSelectorTerm(
        match_expressions=tuple(
            _label_requirement(r, f"{path}.matchExpressions[{i}]") for i, r in enumerate(term.matchExpressions)
        ),
        match_fields=tuple(_field_requirement(r, f"{path}.matchFields[{i}]") for i, r in enumerate(term.matchFields)),
    )


def _label_requirement(requirement: core.NodeSelectorRequirement, path: str) -> model.NodeSelectorRequirement:
    key, operator, values = _requirement_parts(requirement, path)
    if not key:
        raise InvalidRequest(f"{path}.key", "must not be empty")
    if operator in (model.OP_IN, model.OP_NOT_IN):
        if not values:
            raise InvalidRequest(f"{path}.values", f"operator {operator} needs at least one value")
    elif operator in (model.OP_EXISTS, model.OP_DOES_NOT_EXIST):
        if values:
            raise InvalidRequest(f"{path}.values", f"operator {operator} takes no values, got {quoted(values)}")
    elif operator in (model.OP_GT, model.OP_LT):
        if len(values) != 1 or not is_int64(values[0]):
            raise InvalidRequest(
                f"{path}.values", f"operator {operator} needs exactly one integer, got {quoted(values)}"
            )
    else:
        raise InvalidRequest(
            f"{path}.operator", f"unknown operator {quoted(operator)}, expected one of {_OPERATOR_NAMES}"
        )
    return model.NodeSelectorRequirement(key=key, operator=operator, values=values)


def _field_requirement(requirement: core.NodeSelectorRequirement, path: str) -> model.NodeSelectorRequirement:
    key, operator, values = _requirement_parts(requirement, path)
    if key != _FIELD_SELECTOR_KEY:
        raise InvalidRequest(f"{path}.key", f"only {_FIELD_SELECTOR_KEY} can be selected on, got {quoted(key)}")
    if operator not in (model.OP_IN, model.OP_NOT_IN):
        raise InvalidRequest(f"{path}.operator", f"must be In or NotIn for a field, got {quoted(operator)}")
    if len(values) != 1:
        raise InvalidRequest(f"{path}.values", f"a field needs exactly one value, got {quoted(values)}")
    return model.NodeSelectorRequirement(key=key, operator=operator, values=values)


def _requirement_parts(requirement: core.NodeSelectorRequirement, path: str) -> tuple[str, str, tuple[str, ...]]:
    _limit(len(requirement.values), "values", f"{path}.values")
    return (
        _text(requirement.key, f"{path}.key"),
        _text(requirement.operator, f"{path}.operator"),
        tuple(_text(value, f"{path}.values[{i}]") for i, value in enumerate(requirement.values)),
    )


def _toleration(toleration: core.Toleration, path: str) -> model.Toleration:
    key = _text(toleration.key, f"{path}.key")
    operator = _text(toleration.operator, f"{path}.operator")
    value = _text(toleration.value, f"{path}.value")
    effect = _text(toleration.effect, f"{path}.effect")
    if operator not in _TOLERATION_OPERATORS:
        raise InvalidRequest(f"{path}.operator", f"must be Equal, Exists or empty, got {quoted(operator)}")
    if operator == model.TOLERATION_EXISTS and value:
        raise InvalidRequest(f"{path}.value", f"must be empty when the operator is Exists, got {quoted(value)}")
    if effect not in _TAINT_EFFECTS:
        raise InvalidRequest(
            f"{path}.effect", f"unknown taint effect {quoted(effect)}, expected one of {_EFFECT_NAMES}"
        )
    seconds = toleration.tolerationSeconds if toleration.HasField("tolerationSeconds") else None
    return model.Toleration(key=key, operator=operator, value=value, effect=effect, toleration_seconds=seconds)


# ---------------------------------------------------------------------------------------
# Decoding helpers


def _decode(message_type: type[_M], encoded: bytes, path: str) -> _M:
    try:
        return message_type.FromString(encoded)
    except DecodeError:
        # The runtime's message adds nothing beyond "corrupt"; the type and path say more.
        raise InvalidRequest(path, f"is not a valid encoding of {message_type.DESCRIPTOR.full_name}") from None


def _text(value: str | bytes, path: str) -> str:
    """A proto2 string field. Kubernetes' messages are proto2, which does not promise UTF-8;
    the runtime then hands us the raw bytes, which no label or quantity can be."""
    if isinstance(value, str):
        return _bounded(value, path)
    raise InvalidRequest(path, "is not valid UTF-8")
