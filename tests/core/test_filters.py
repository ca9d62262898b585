"""Node filters: selector, required affinity, taints, cordon. Table cases named as sentences,
plus a property test that the per-class mask equals the one-node-at-a-time reference."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from estimator.cluster.cache import ClusterCache
from estimator.core.filters import node_mask, node_passes, taints_tolerated, term_matches, tolerates
from estimator.core.model import (
    NodeClaim,
    NodeSelectorRequirement as Req,
    NodeSelectorTerm as Term,
    Taint,
    Toleration,
)
from tests.support.builders import node
from tests.support.cachemutators import upsert_node

HOSTNAME = "kubernetes.io/hostname"


def _snapshot(*builders):
    cache = ClusterCache()
    for b in builders:
        upsert_node(cache, b.build())
    return cache.snapshot()


def _selected(snapshot, claim):
    mask = node_mask(snapshot, claim)
    assert mask.dtype == bool and mask.shape == (snapshot.num_nodes,)
    return {name for name, ok in zip(snapshot.node_names, mask) if ok}


CLUSTER = _snapshot(
    node("gpu-1").label("accel", "a100").label("rank", "10").zone("z1"),
    node("gpu-2").label("accel", "h100").label("rank", "20").zone("z2"),
    node("cpu-1").label("rank", "x").zone("z1"),
    node("cpu-2").zone("z2"),
    node("master").label("node-role.kubernetes.io/control-plane", "").taint(
        "node-role.kubernetes.io/control-plane", "", "NoSchedule"
    ),
    node("drained").cordon(),
    node("soft").taint("spot", "true", "PreferNoSchedule"),
    node("evicting").taint("maintenance", "now", "NoExecute"),
)
UNTAINTED = {"gpu-1", "gpu-2", "cpu-1", "cpu-2", "soft"}


def terms(*terms_):
    return NodeClaim(affinity_terms=tuple(terms_))


def expr(key, op, *values):
    return Term(match_expressions=(Req(key, op, tuple(values)),))


def field(op, *values, key="metadata.name"):
    return Term(match_fields=(Req(key, op, tuple(values)),))


MASK_CASES = [
    ("no claim passes every node without a NoSchedule taint or cordon", NodeClaim(), UNTAINTED),
    ("a node selector needs the exact label", NodeClaim(node_selector=(("accel", "a100"),)), {"gpu-1"}),
    ("a node selector on a missing label matches nothing", NodeClaim(node_selector=(("nope", "x"),)), set()),
    ("a node selector on the hostname picks one node", NodeClaim(node_selector=((HOSTNAME, "cpu-2"),)), {"cpu-2"}),
    ("In matches any listed value", terms(expr("accel", "In", "a100", "h100")), {"gpu-1", "gpu-2"}),
    ("NotIn matches nodes without the label", terms(expr("accel", "NotIn", "a100")), UNTAINTED - {"gpu-1"}),
    ("Exists needs the label", terms(expr("accel", "Exists")), {"gpu-1", "gpu-2"}),
    ("DoesNotExist needs its absence", terms(expr("accel", "DoesNotExist")), UNTAINTED - {"gpu-1", "gpu-2"}),
    ("Gt compares integers and skips non-integer labels", terms(expr("rank", "Gt", "15")), {"gpu-2"}),
    ("Lt compares integers", terms(expr("rank", "Lt", "15")), {"gpu-1"}),
    ("Gt with a non-integer value is invalid and matches nothing", terms(expr("rank", "Gt", "abc")), set()),
    ("In without values is invalid and matches nothing", terms(expr("accel", "In")), set()),
    ("Exists with values is invalid and matches nothing", terms(expr("accel", "Exists", "a100")), set()),
    ("an unknown operator matches nothing", terms(expr("accel", "Near", "a100")), set()),
    ("terms are ORed", terms(expr("accel", "In", "a100"), expr(HOSTNAME, "In", "cpu-2")), {"gpu-1", "cpu-2"}),
    (
        "expressions in one term are ANDed",
        terms(Term(match_expressions=(Req("accel", "Exists"), Req("topology.kubernetes.io/zone", "In", ("z2",))))),
        {"gpu-2"},
    ),
    ("a term with no expressions and no fields matches nothing", terms(Term()), set()),
    ("zero terms match nothing (a nil affinity is None, not ())", terms(), set()),
    ("an invalid term does not spoil a valid one", terms(expr("accel", "In"), expr("accel", "In", "h100")), {"gpu-2"}),
    ("matchFields In picks a node by name", terms(field("In", "cpu-1")), {"cpu-1"}),
    ("matchFields NotIn excludes a node by name", terms(field("NotIn", "cpu-1")), UNTAINTED - {"cpu-1"}),
    ("matchFields In with two values is invalid", terms(field("In", "cpu-1", "cpu-2")), set()),
    ("matchFields on another field reads it as empty", terms(field("NotIn", "x", key="spec.unschedulable")), UNTAINTED),
    (
        "fields and expressions in one term are ANDed",
        terms(Term(match_expressions=(Req("accel", "Exists"),), match_fields=(Req("metadata.name", "In", ("gpu-2",)),))),
        {"gpu-2"},
    ),
    ("a hostname NotIn keeps the other nodes", terms(expr(HOSTNAME, "NotIn", "gpu-1", "soft")), UNTAINTED - {"gpu-1", "soft"}),
    ("hostname Exists holds on every labelled node", terms(expr(HOSTNAME, "Exists")), UNTAINTED),
    ("hostname DoesNotExist holds on none", terms(expr(HOSTNAME, "DoesNotExist")), set()),
    (
        "a toleration for the control-plane taint opens the master",
        NodeClaim(tolerations=(Toleration("node-role.kubernetes.io/control-plane", "Exists"),)),
        UNTAINTED | {"master"},
    ),
    (
        "an empty key with Exists tolerates every taint and the cordon",
        NodeClaim(tolerations=(Toleration(operator="Exists"),)),
        UNTAINTED | {"master", "evicting", "drained"},
    ),
    (
        "a cordoned node needs the unschedulable toleration",
        NodeClaim(tolerations=(Toleration("node.kubernetes.io/unschedulable", "Exists", effect="NoSchedule"),)),
        UNTAINTED | {"drained"},
    ),
    (
        "a NoExecute taint needs a matching value with Equal",
        NodeClaim(tolerations=(Toleration("maintenance", "Equal", "now", "NoExecute"),)),
        UNTAINTED | {"evicting"},
    ),
    (
        "a toleration with the wrong value does not help",
        NodeClaim(tolerations=(Toleration("maintenance", "Equal", "later"),)),
        UNTAINTED,
    ),
    (
        "a toleration for another effect does not help",
        NodeClaim(tolerations=(Toleration("maintenance", "Exists", effect="NoSchedule"),)),
        UNTAINTED,
    ),
    (
        "selector, affinity and tolerations combine",
        NodeClaim(
            node_selector=(("node-role.kubernetes.io/control-plane", ""),),
            affinity_terms=(field("In", "master"),),
            tolerations=(Toleration("node-role.kubernetes.io/control-plane", "Exists"),),
        ),
        {"master"},
    ),
]


@pytest.mark.parametrize("claim, expected", [c[1:] for c in MASK_CASES], ids=[c[0] for c in MASK_CASES])
def test_node_mask(claim, expected):
    assert _selected(CLUSTER, claim) == expected


def test_an_empty_cluster_gives_an_empty_mask():
    assert node_mask(ClusterCache().snapshot(), NodeClaim()).shape == (0,)


def test_a_snapshot_with_hostnames_inside_its_classes_is_filtered_per_class():
    # Snapshots built by hand (not by the cache) may keep the hostname in NodeClass.labels.
    snapshot = CLUSTER
    hand_made = type(snapshot)(
        version=1,
        node_names=snapshot.node_names,
        resource_names=snapshot.resource_names,
        allocatable=snapshot.allocatable,
        available=snapshot.available,
        node_class=np.arange(snapshot.num_nodes, dtype=np.int32),
        classes=tuple(
            type(snapshot.classes[0])(
                tuple(sorted(snapshot.node_labels(i).items())),
                snapshot.classes[snapshot.node_class[i]].taints,
                snapshot.classes[snapshot.node_class[i]].unschedulable,
            )
            for i in range(snapshot.num_nodes)
        ),
        quotas={},
        workloads=snapshot.workloads,
    )
    for _, claim, expected in MASK_CASES:
        assert _selected(hand_made, claim) == expected


TOLERATION_CASES = [
    ("Exists with the key tolerates any value", Toleration("k", "Exists"), Taint("k", "v", "NoSchedule"), True),
    ("Equal needs the same value", Toleration("k", "Equal", "v"), Taint("k", "v", "NoSchedule"), True),
    ("an empty operator means Equal", Toleration("k", "", "v"), Taint("k", "w", "NoSchedule"), False),
    ("another key does not tolerate", Toleration("j", "Exists"), Taint("k", "v", "NoSchedule"), False),
    ("an empty effect matches every effect", Toleration("k", "Exists"), Taint("k", "v", "NoExecute"), True),
    ("a different effect does not tolerate", Toleration("k", "Exists", effect="NoExecute"), Taint("k", "", "NoSchedule"), False),
    ("an empty key with Exists tolerates everything", Toleration("", "Exists"), Taint("any", "x", "NoExecute"), True),
    ("a comparison operator tolerates nothing (Karmada keeps them off)", Toleration("k", "Gt", "1"), Taint("k", "2", "NoSchedule"), False),
]


@pytest.mark.parametrize(
    "toleration, taint, expected", [c[1:] for c in TOLERATION_CASES], ids=[c[0] for c in TOLERATION_CASES]
)
def test_tolerates(toleration, taint, expected):
    assert tolerates([toleration], taint) is expected


def test_prefer_no_schedule_taints_never_filter():
    assert taints_tolerated([Taint("x", "", "PreferNoSchedule")], [])
    assert not taints_tolerated([Taint("x", "", "NoSchedule")], [])


def test_term_matches_labels_and_name():
    term = Term(match_expressions=(Req("a", "In", ("1",)),), match_fields=(Req("metadata.name", "In", ("n1",)),))
    assert term_matches({"a": "1"}, term, "n1")
    assert not term_matches({"a": "1"}, term, "n2")
    assert not term_matches({"a": "2"}, term, "n1")


# --- property: vectorised mask == per-node reference ------------------------------------

LABEL_KEYS = ["a", "b", "rank", HOSTNAME]
LABEL_VALUES = ["1", "2", "10", "x", "n0", "n1"]
labels_st = st.dictionaries(st.sampled_from(LABEL_KEYS), st.sampled_from(LABEL_VALUES), max_size=3)
taint_st = st.builds(
    Taint,
    key=st.sampled_from(["t1", "t2"]),
    value=st.sampled_from(["", "v"]),
    effect=st.sampled_from(["NoSchedule", "NoExecute", "PreferNoSchedule"]),
)
req_st = st.builds(
    Req,
    key=st.sampled_from(LABEL_KEYS),
    operator=st.sampled_from(["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"]),
    values=st.lists(st.sampled_from(LABEL_VALUES), max_size=2).map(tuple),
)
field_st = st.builds(
    Req,
    key=st.sampled_from(["metadata.name", "metadata.name", "other"]),
    operator=st.sampled_from(["In", "NotIn"]),
    values=st.lists(st.sampled_from(["n0", "n1", "n2", ""]), min_size=1, max_size=2).map(tuple),
)
term_st = st.builds(
    Term,
    match_expressions=st.lists(req_st, max_size=2).map(tuple),
    match_fields=st.lists(field_st, max_size=1).map(tuple),
)
claim_st = st.builds(
    NodeClaim,
    node_selector=st.lists(st.tuples(st.sampled_from(LABEL_KEYS), st.sampled_from(LABEL_VALUES)), max_size=2).map(tuple),
    affinity_terms=st.none() | st.lists(term_st, max_size=3).map(tuple),
    tolerations=st.lists(
        st.builds(
            Toleration,
            key=st.sampled_from(["", "t1", "t2", "node.kubernetes.io/unschedulable"]),
            operator=st.sampled_from(["", "Equal", "Exists"]),
            value=st.sampled_from(["", "v"]),
            effect=st.sampled_from(["", "NoSchedule", "NoExecute"]),
        ),
        max_size=2,
    ).map(tuple),
)
node_st = st.tuples(labels_st, st.lists(taint_st, max_size=2, unique_by=lambda t: (t.key, t.effect)), st.booleans())


@settings(max_examples=300, deadline=None)
@given(nodes=st.lists(node_st, min_size=1, max_size=6), claim=claim_st)
def test_node_mask_equals_the_per_node_reference(nodes, claim):
    cache = ClusterCache()
    for i, (labels, taints, cordoned) in enumerate(nodes):
        builder = node(f"n{i}").unlabel(HOSTNAME)
        for key, value in labels.items():
            builder.label(key, value)
        for taint in taints:
            builder.taint(taint.key, taint.value, taint.effect)
        if cordoned:
            builder.cordon()
        upsert_node(cache, builder.build())
    snapshot = cache.snapshot()
    expected = [
        node_passes(snapshot.node_labels(i), snapshot.classes[snapshot.node_class[i]].taints,
                    snapshot.classes[snapshot.node_class[i]].unschedulable, name, claim)
        for i, name in enumerate(snapshot.node_names)
    ]
    reference = {f"n{i}": node_passes(labels, taints, cordoned, f"n{i}", claim) for i, (labels, taints, cordoned) in enumerate(nodes)}
    assert expected == [reference[name] for name in snapshot.node_names]
    assert node_mask(snapshot, claim).tolist() == expected
