"""doctor names Karmada's scheduler paths (a), (b), (c) when they decide where the job goes.

Demo fleet (deploy/demo): general estimator for train-big (2 workers x 3 GPUs): member-a 0
(no free cpu), member-b and member-c 1 by cluster totals but 0 through the default resource
models, which describe no GPU (Karmada bounds the summary by the models). Expected members
follow Karmada's order: available sets, then name.
"""

from __future__ import annotations

import pytest

from tests.client.test_cli import AGGREGATED, SPREAD, diagnose, policy_file

GATE = "MultiplePodTemplatesScheduling=true"
NO_MODELS = GATE + ",CustomizedClusterResourceModeling=false"

CASES = [
    ("No spread constraint is path a", dict(placement={"replicaScheduling": AGGREGATED}), "no-one-member-spread",
     "a", "error", "copies the job to every member the policy allows (member-a, member-b, member-c)"),
    ("An ignored spread constraint is path a",
     dict(placement={"spreadConstraints": SPREAD, "replicaScheduling": {"replicaSchedulingType": "Divided"}}),
     "spread-ignored", "a", "error", "ignores spread constraints"),
    # All three count 0 sets: by name, member-a, where nothing fits.
    ("No replica scheduling is path b and names the member taken at 0 sets",
     dict(placement={"spreadConstraints": SPREAD}), "availability-ignored", "b", "error",
     "here member-a, where the general estimator counts 0 set(s), so the job would stay Pending there"),
    # Models off: b 1, c 1, a 0 -> member-b, which fits by cluster totals: a warning.
    ("Duplicated is path b and a warning when the member taken fits",
     dict(placement={"spreadConstraints": SPREAD, "replicaScheduling": {"replicaSchedulingType": "Duplicated"}},
          gates=NO_MODELS), "availability-ignored", "b", "warning",
     "here member-b, where the general estimator counts 1 set(s)"),
    ("Members without an estimator beside one that has it is path c", dict(accurate=("member-b",)),
     "accurate-dropped", "c", "error", "member-a, member-c pass the policy's filters without an accurate estimator"),
]


@pytest.mark.parametrize("case,code,path,severity,words", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_doctor_names_the_karmada_path(tmp_path, case, code, path, severity, words):
    case = {"gates": GATE, **case}
    if "placement" in case:
        case["policy"] = policy_file(tmp_path, case.pop("placement"))
    findings = diagnose(**case)
    assert code in findings, findings.keys()
    finding = findings[code]
    assert (finding.karmada_path, finding.severity) == (path, severity) and words in finding.message


def test_every_member_with_an_estimator_is_not_path_c():
    assert "accurate-dropped" not in diagnose(gates=GATE, accurate=("member-a", "member-b", "member-c"))


def test_no_estimator_anywhere_is_not_path_c():
    assert "accurate-dropped" not in diagnose(gates=GATE)


def test_the_gate_off_with_a_one_member_spread_names_the_member_taken_by_name():
    finding = diagnose(gates="")["gate-off"]
    assert "puts it on the first allowed member by name (member-a)" in finding.message
