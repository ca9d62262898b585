"""Node filters: nodeSelector, required node affinity, taints and cordon -> a node mask.

Semantics follow k8s.io/component-helpers (nodeaffinity.RequiredNodeAffinity and
scheduling/corev1.TolerationsTolerateTaint) as Karmada's estimator calls them in
pkg/estimator/server/nodes/filter.go.

Speed: everything that depends only on the claim is decided once per NodeClass (nodes that
share labels, taints and cordon state) and expanded with `class_ok[snapshot.node_class]`.
Only what is unique per node is evaluated per node, with numpy and dict look-ups:
`matchFields` on metadata.name and requirements on the kubernetes.io/hostname label
(which the cache keeps out of the classes, see ClusterSnapshot.hostnames).

The scalar predicates (`tolerates`, `requirement_matches` from labels.py, `term_matches`,
`node_passes`) are public for the placement client and as the tests' oracle.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Protocol

import numpy as np

from estimator.core.labels import is_int64, requirement_matches
from estimator.core.model import (
    HOSTNAME_LABEL,
    NO_EXECUTE,
    NO_SCHEDULE,
    OP_DOES_NOT_EXIST,
    OP_EXISTS,
    OP_GT,
    OP_IN,
    OP_LT,
    OP_NOT_IN,
    TOLERATION_EQUAL,
    TOLERATION_EXISTS,
    NodeClaim,
    NodeClass,
    NodeSelectorRequirement,
    NodeSelectorTerm,
    Taint,
    Toleration,
)

UNSCHEDULABLE_TAINT = Taint(key="node.kubernetes.io/unschedulable", value="", effect=NO_SCHEDULE)
NODE_NAME_FIELD = "metadata.name"
# Only these effects keep a pod off a node (TaintToleration filter); PreferNoSchedule scores.
_FILTERING_EFFECTS = (NO_SCHEDULE, NO_EXECUTE)

_LABEL_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


# --- tolerations and taints -------------------------------------------------------------


def tolerates(tolerations: Iterable[Toleration], taint: Taint) -> bool:
    """True if any toleration tolerates `taint` (v1.Toleration.ToleratesTaint).

    An empty effect matches every effect and an empty key every key; Exists ignores the
    value, Equal (or "") compares it. Other operators (Gt/Lt) tolerate nothing, as with
    Karmada's enableComparisonOperators=false.
    """
    for toleration in tolerations:
        if toleration.effect and toleration.effect != taint.effect:
            continue
        if toleration.key and toleration.key != taint.key:
            continue
        if toleration.operator == TOLERATION_EXISTS:
            return True
        if toleration.operator in ("", TOLERATION_EQUAL) and toleration.value == taint.value:
            return True
    return False


def taints_tolerated(taints: Iterable[Taint], tolerations: Sequence[Toleration]) -> bool:
    """Every NoSchedule/NoExecute taint is tolerated; PreferNoSchedule taints are ignored."""
    return all(tolerates(tolerations, t) for t in taints if t.effect in _FILTERING_EFFECTS)


# --- label requirements -----------------------------------------------------------------


def _is_label_key(key: str) -> bool:
    prefix, slash, name = key.rpartition("/")
    if slash and (not prefix or len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix)):
        return False
    return 0 < len(name) <= 63 and bool(_LABEL_NAME.match(name))


# Requirements at most this many characters (key and values) are kept by the cache below:
# 4,096 of them stay a few MB however long the strings a request carries.
_CACHED_CHARACTERS = 512


def _label_requirement_valid(req: NodeSelectorRequirement) -> bool:
    """labels.NewRequirement's checks; an invalid requirement makes its term match nothing."""
    size = len(req.key) + len(req.operator)
    for value in req.values:
        size += len(value)
        if size > _CACHED_CHARACTERS:
            return _requirement_valid(req)
    return _cached_requirement_valid(req)


def _requirement_valid(req: NodeSelectorRequirement) -> bool:
    if not _is_label_key(req.key):
        return False
    if not all(len(v) <= 63 and _LABEL_VALUE.match(v) for v in req.values):
        return False
    if req.operator in (OP_IN, OP_NOT_IN):
        return len(req.values) > 0
    if req.operator in (OP_EXISTS, OP_DOES_NOT_EXIST):
        return len(req.values) == 0
    if req.operator in (OP_GT, OP_LT):
        return len(req.values) == 1 and is_int64(req.values[0])
    return False


_cached_requirement_valid = lru_cache(maxsize=4096)(_requirement_valid)


def _field_requirement_valid(req: NodeSelectorRequirement) -> bool:
    # nodeSelectorRequirementsAsFieldSelector: In/NotIn with exactly one value.
    return req.operator in (OP_IN, OP_NOT_IN) and len(req.values) == 1


def _field_matches(node_name: str, req: NodeSelectorRequirement) -> bool:
    # Only metadata.name is a node field; any other key reads as "".
    value = node_name if req.key == NODE_NAME_FIELD else ""
    return (value == req.values[0]) == (req.operator == OP_IN)


def _term_valid(term: NodeSelectorTerm) -> bool:
    if not term.match_expressions and not term.match_fields:
        return False  # an empty term matches nothing
    return all(map(_label_requirement_valid, term.match_expressions)) and all(
        map(_field_requirement_valid, term.match_fields)
    )


def term_matches(labels: Mapping[str, str], term: NodeSelectorTerm, node_name: str) -> bool:
    """One nodeSelectorTerm: all expressions and fields hold; empty or invalid -> False."""
    return (
        _term_valid(term)
        and all(requirement_matches(labels, r) for r in term.match_expressions)
        and all(_field_matches(node_name, r) for r in term.match_fields)
    )


def node_passes(
    labels: Mapping[str, str], taints: Sequence[Taint], unschedulable: bool, node_name: str, claim: NodeClaim
) -> bool:
    """The whole filter for one node (the reference `node_mask` must agree with)."""
    if unschedulable and not tolerates(claim.tolerations, UNSCHEDULABLE_TAINT):
        return False
    if not taints_tolerated(taints, claim.tolerations):
        return False
    if any(labels.get(key) != value for key, value in claim.node_selector):
        return False
    if claim.affinity_terms is None:
        return True
    return any(term_matches(labels, term, node_name) for term in claim.affinity_terms)


# --- the vectorised mask ----------------------------------------------------------------


class NodeView(Protocol):
    """What `node_mask` reads of a cluster: ClusterSnapshot provides it. Stated here so the
    filters depend on the model only and the snapshot depends on the filters, not both ways."""

    @property
    def num_nodes(self) -> int: ...

    classes: tuple[NodeClass, ...]
    node_class: np.ndarray  # int32 [N], index into `classes`
    hostnames: tuple[str | None, ...]

    def node_position(self, name: str) -> int | None: ...

    def hostname_positions(self) -> Mapping[str, np.ndarray]: ...


@dataclass(frozen=True)
class _SplitTerm:
    """A valid term split into what a class decides and what each node decides."""

    class_exprs: tuple[NodeSelectorRequirement, ...]
    hostname_exprs: tuple[NodeSelectorRequirement, ...]
    fields: tuple[NodeSelectorRequirement, ...]

    @property
    def per_class_only(self) -> bool:
        return not self.hostname_exprs and not self.fields


def _split_terms(terms: Sequence[NodeSelectorTerm], hostname_per_node: bool) -> list[_SplitTerm]:
    split = []
    for term in terms:
        if not _term_valid(term):
            continue
        per_node = tuple(r for r in term.match_expressions if hostname_per_node and r.key == HOSTNAME_LABEL)
        per_class = tuple(r for r in term.match_expressions if not (hostname_per_node and r.key == HOSTNAME_LABEL))
        split.append(_SplitTerm(per_class, per_node, term.match_fields))
    return split


def _class_passes(
    node_class: NodeClass, labels: Mapping[str, str], claim: NodeClaim, selector: Sequence[tuple[str, str]]
) -> bool:
    if node_class.unschedulable and not tolerates(claim.tolerations, UNSCHEDULABLE_TAINT):
        return False
    if not taints_tolerated(node_class.taints, claim.tolerations):
        return False
    return all(labels.get(key) == value for key, value in selector)


def _per_class(values: Iterable[bool], count: int) -> np.ndarray:
    return np.fromiter(values, dtype=bool, count=count)


def _hostname_mask(snapshot: NodeView, req: NodeSelectorRequirement) -> np.ndarray:
    """One hostname requirement over all nodes, from the hostname -> positions index."""
    positions = snapshot.hostname_positions()
    mask = np.zeros(snapshot.num_nodes, dtype=bool)
    if req.operator in (OP_IN, OP_NOT_IN):
        for value in req.values:
            rows = positions.get(value)
            if rows is not None:
                mask[rows] = True
        return mask if req.operator == OP_IN else ~mask
    if req.operator in (OP_EXISTS, OP_DOES_NOT_EXIST):
        for rows in positions.values():
            mask[rows] = True
        return mask if req.operator == OP_EXISTS else ~mask
    for value, rows in positions.items():  # Gt/Lt: rare on hostnames; one check per value
        if requirement_matches({req.key: value}, req):
            mask[rows] = True
    return mask


def _field_mask(snapshot: NodeView, req: NodeSelectorRequirement) -> np.ndarray:
    if req.key != NODE_NAME_FIELD:
        return np.full(snapshot.num_nodes, _field_matches("", req), dtype=bool)
    mask = np.zeros(snapshot.num_nodes, dtype=bool)
    position = snapshot.node_position(req.values[0])
    if position is not None:
        mask[position] = True
    return mask if req.operator == OP_IN else ~mask


def node_mask(snapshot: NodeView, claim: NodeClaim) -> np.ndarray:
    """bool[N]: the nodes of `snapshot` (in its order) on which `claim` may run."""
    n = snapshot.num_nodes
    if n == 0:
        return np.zeros(0, dtype=bool)
    classes = snapshot.classes
    labels = [c.label_dict() for c in classes]
    hostname_per_node = len(snapshot.hostnames) == n
    class_selector = [(k, v) for k, v in claim.node_selector if not (hostname_per_node and k == HOSTNAME_LABEL)]
    class_ok = _per_class(
        (_class_passes(c, lab, claim, class_selector) for c, lab in zip(classes, labels, strict=True)), len(classes)
    )

    terms = None if claim.affinity_terms is None else _split_terms(claim.affinity_terms, hostname_per_node)
    if terms is not None and all(t.per_class_only for t in terms):
        class_ok &= _per_class(
            (any(all(requirement_matches(lab, r) for r in t.class_exprs) for t in terms) for lab in labels),
            len(classes),
        )
        terms = None  # fully decided per class
    mask = class_ok[snapshot.node_class]

    if hostname_per_node:
        for key, value in claim.node_selector:
            if key == HOSTNAME_LABEL:
                mask &= _hostname_mask(snapshot, NodeSelectorRequirement(key, OP_IN, (value,)))
    if terms is not None:
        any_term = np.zeros(n, dtype=bool)
        for term in terms:
            term_class_ok = _per_class(
                (all(requirement_matches(lab, r) for r in term.class_exprs) for lab in labels), len(classes)
            )
            term_mask = term_class_ok[snapshot.node_class]
            for req in term.hostname_exprs:
                term_mask &= _hostname_mask(snapshot, req)
            for req in term.fields:
                term_mask &= _field_mask(snapshot, req)
            any_term |= term_mask
        mask &= any_term
    return mask
