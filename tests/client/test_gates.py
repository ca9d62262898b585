"""--feature-gates as component-base parses it: AllAlpha / AllBeta set every alpha (beta) gate
the same flag does not name, whatever the order; unknown gates are refused by name."""

from __future__ import annotations

import pytest

from scheduler_client.karmada.gates import DEFAULT_GATES, GateError, parse_gates

CASES = [
    ("AllAlpha turns every alpha gate on", "AllAlpha=true",
     {"MultiplePodTemplatesScheduling": True, "SchedulingOvercommitProtection": True, "Failover": False}),
    ("AllBeta=false turns beta gates off", "AllBeta=false",
     {"CustomizedClusterResourceModeling": False, "GracefulEviction": False, "MultiplePodTemplatesScheduling": False}),
    ("An explicit gate wins over AllAlpha written after it", "MultiplePodTemplatesScheduling=false,AllAlpha=true",
     {"MultiplePodTemplatesScheduling": False, "WorkloadAffinity": True}),
    ("An explicit gate wins over AllBeta written before it", "AllBeta=false,CustomizedClusterResourceModeling=true",
     {"CustomizedClusterResourceModeling": True, "Failover": False, "PropagateDeps": False}),
    ("Karmada's deployment flags", "AllAlpha=true,AllBeta=true",
     {"MultiplePodTemplatesScheduling": True, "Failover": True, "CustomizedClusterResourceModeling": True}),
]


@pytest.mark.parametrize("text,expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_all_alpha_and_all_beta(text, expected):
    gates, _ = parse_gates(text)
    assert {name: gates[name] for name in expected} == expected
    assert set(gates) == set(DEFAULT_GATES)


def test_all_alpha_is_not_an_explicit_gate():
    _, explicit = parse_gates("AllAlpha=true,Failover=true")
    assert explicit == {"Failover"}


@pytest.mark.parametrize("text,words", [("AllGamma=true", "'AllGamma'"), ("AllAlpha=yes", "AllAlpha=yes")],
                         ids=["An unknown gate is named", "A bad value is named"])
def test_bad_gates_are_refused(text, words):
    with pytest.raises(GateError, match=words):
        parse_gates(text)


def test_values_are_go_booleans_as_in_the_estimator():
    gates, explicit = parse_gates("Failover=1,GracefulEviction=F,AllAlpha=TRUE")
    assert gates["Failover"] and not gates["GracefulEviction"] and gates["WorkloadAffinity"]
    assert explicit == {"Failover", "GracefulEviction"}


@pytest.mark.parametrize("text", ["AllAlpha=true,Failover=false", "AllBeta=false", "", "LoggingBetaOptions=false"])
def test_the_client_resolves_gates_as_the_estimator_does(text):
    from estimator.core.featuregates import FeatureGates
    from estimator.goflags import parse_feature_gates

    estimator_gates = FeatureGates()
    estimator_gates.merge(parse_feature_gates(text))
    gates, _ = parse_gates(text)
    assert gates == {name: estimator_gates.enabled(name) for name in DEFAULT_GATES}


def test_a_missing_value_is_named():
    with pytest.raises(GateError, match="missing bool value for Failover"):
        parse_gates("Failover")
