"""The kube-scheduler judge's generator and bookkeeping, without Go or an apiserver.

What kube-scheduler decides is checked only in `make e2e`; here: the generated members are
valid Kubernetes objects with the features the judge exists for, the pods a trial creates
ask what the request asks (and are pinned where told), and the tally classifies verdicts
as `docs/semantics.md` defines them.
"""

from __future__ import annotations

import dataclasses

import kubernetes_validate
import pytest

from e2e.harness import judge, realmembers
from estimator.core import model

SEEDS = range(500000, 500040)


def _members():
    return [realmembers.generate(seed) for seed in SEEDS]


def _strip(obj):
    return {k: v for k, v in obj.items() if not k.startswith("_")}


def test_a_seed_names_a_member_exactly():
    a, b = realmembers.generate(7), realmembers.generate(7)
    assert a.nodes == b.nodes and a.pods == b.pods and a.quotas == b.quotas
    assert [j.query for j in a.jobs] == [j.query for j in b.jobs]
    assert realmembers.generate(8).nodes != a.nodes


def test_generated_objects_are_valid_kubernetes_objects():
    seen = set()
    members = _members()
    objects = realmembers.cluster_objects() + [o for m in members for o in m.nodes + m.pods + m.quotas]
    for obj in objects:
        spec = obj.get("spec", {})
        shape = (obj["kind"], tuple(sorted(spec)), tuple(sorted(c.get("restartPolicy", "") for c in spec.get("initContainers", []))))
        if shape not in seen:
            seen.add(shape)
            kubernetes_validate.validate(_strip(obj), "1.36", strict=True)
    for member in members[:10]:
        for job in member.jobs:
            for pod in realmembers.job_pods(job.query.components, "ns", realmembers.SCHEDULERS[0]):
                kubernetes_validate.validate(pod, "1.36", strict=True)


def test_members_carry_what_karmada_reads_wrong():
    members = _members()
    pods = [p for m in members for p in m.pods]
    nodes = [n for m in members for n in m.nodes]
    quotas = [q for m in members for q in m.quotas]
    assert any(c.get("restartPolicy") == "Always" for p in pods for c in p["spec"].get("initContainers", []))
    assert any(c.get("restartPolicy") is None for p in pods for c in p["spec"].get("initContainers", []))
    assert any("runtimeClassName" in p["spec"] for p in pods)
    assert any("resources" in p["spec"] for p in pods)  # pod-level resources
    assert any(p.get("_terminating") for p in pods)
    assert any(p["status"]["phase"] == "Pending" and p["spec"].get("nodeName") for p in pods)
    assert any(realmembers.HUGE_2M in c["resources"]["requests"] for p in pods for c in p["spec"]["containers"])
    assert any(len(n["spec"].get("taints", [])) >= 3 for n in nodes)
    assert any(n["spec"].get("unschedulable") for n in nodes)
    assert any(c["status"] == "False" for n in nodes for c in n["status"]["conditions"])
    hard = {name for q in quotas for name in q["spec"]["hard"]}
    assert {"limits.cpu", "count/configmaps", "cpu", "requests.cpu"} <= hard and hard & {"pods", "count/pods"}
    operators = {r.operator for m in members for j in m.jobs for c in j.query.components
                 for t in (c.shape.claim.affinity_terms or ()) for r in t.match_expressions + t.match_fields}
    assert {"NotIn", "DoesNotExist", "Gt", "Lt"} <= operators
    assert any(r.key == "metadata.name" for m in members for j in m.jobs for c in j.query.components
               for t in (c.shape.claim.affinity_terms or ()) for r in t.match_fields)
    assert any(j.query.assumed for m in members for j in m.jobs)
    sizes = [len(m.nodes) for m in _members()]
    assert min(sizes) >= 1 and max(sizes) <= 60


def test_a_replica_pod_asks_exactly_the_request_and_is_pinned_in_every_term():
    claim = model.NodeClaim(
        node_selector=(("pool", "p1"),),
        affinity_terms=(model.NodeSelectorTerm(match_expressions=(model.NodeSelectorRequirement("tier", "Gt", ("2",)),)),
                        model.NodeSelectorTerm(match_fields=(model.NodeSelectorRequirement("metadata.name", "NotIn", ("n9",)),))),
        tolerations=(model.Toleration(key="gpu", operator="Equal", value="true", effect="NoSchedule"),
                     model.Toleration(operator="Exists")))
    shape = model.ReplicaShape(requests=(("cpu", 1500), ("memory", 2 * 1024**3), ("nvidia.com/gpu", 2)), claim=claim,
                               namespace="ns", priority_class="high")
    pods = realmembers.job_pods((model.Component("worker", 2, shape),), "ns", "default-scheduler",
                                pins={"worker": ["n1", "n2"]})
    assert [p["metadata"]["name"] for p in pods] == ["worker-0", "worker-1"]
    spec = pods[1]["spec"]
    assert spec["containers"][0]["resources"] == {
        "requests": {"cpu": "1500m", "memory": str(2 * 1024**3), "nvidia.com/gpu": "2"},
        "limits": {"cpu": "1500m", "memory": str(2 * 1024**3), "nvidia.com/gpu": "2"}}
    assert spec["nodeSelector"] == {"pool": "p1"} and spec["priorityClassName"] == "high"
    assert spec["tolerations"] == [{"key": "gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"},
                                   {"operator": "Exists"}]
    terms = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    pin = {"key": "metadata.name", "operator": "In", "values": ["n2"]}
    assert terms == [{"matchExpressions": [{"key": "tier", "operator": "Gt", "values": ["2"]}], "matchFields": [pin]},
                     {"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n9"]}, pin]}]


def test_an_unpinned_replica_without_affinity_has_none():
    pods = realmembers.job_pods((model.Component("m", 1, model.ReplicaShape(requests=(("cpu", 100),))),), "ns", "x")
    assert "affinity" not in pods[0]["spec"] and pods[0]["spec"]["schedulerName"] == "x"


def test_one_set_of_a_witness_takes_each_components_replicas():
    query = model.ComponentSetsQuery(components=(model.Component("m", 1), model.Component("w", 3)))
    witness = {"m": {"a": 2}, "w": {"a": 1, "b": 5}}
    assert judge._one_set(witness, judge.Job("j", query)) == {"m": ["a"], "w": ["a", "b", "b"]}
    assert judge._expanded(witness) == {"m": ["a", "a"], "w": ["a", "b", "b", "b", "b", "b"]}


@pytest.mark.parametrize("answers, default, binpack, pinned, expect", [
    # (ff, best, karmada), trials -> (false placements, false rejections, order misses)
    ((2, 3, 5), True, True, None, ({}, {}, 0)),
    ((1, 1, 1), False, False, False, ({"first-fit": 1, "best": 1, "karmada": 1}, {}, 0)),
    ((1, 2, 0), False, False, True, ({}, {"karmada": 1}, 1)),
    ((0, 0, 4), False, True, None, ({}, {"first-fit": 1, "best": 1}, 1)),
    ((0, 0, 0), False, False, None, ({}, {}, 0)),
], ids=["every set binds", "nothing binds: every positive answer over-promises",
        "only pinned to our witness: a scheduler-order miss, Karmada's 0 a false rejection",
        "only the bin-packing profile binds: our 0 is a false rejection",
        "nothing binds and every answer is 0"])
def test_the_tally_classifies_verdicts(answers, default, binpack, pinned, expect):
    tally = judge.JudgeTally()
    verdict = judge.Verdict(dict(zip(("first-fit", "best", "karmada"), answers)), default, binpack, pinned)
    tally.add(1, judge.Job("j", model.ComponentSetsQuery(components=())), verdict)
    fp, fr, misses = expect
    assert {k: v for k, v in tally.false_placements.items() if v} == fp
    assert {k: v for k, v in tally.false_rejections.items() if v} == fr
    assert tally.order_misses == misses
    assert tally.answers == 3 and tally.zero_answers == answers.count(0)


def test_a_first_fit_rejection_best_mode_beats_is_explained_and_a_best_one_is_not():
    tally = judge.JudgeTally()
    job = judge.Job("j", model.ComponentSetsQuery(components=()))
    tally.add(1, job, judge.Verdict({"first-fit": 0, "best": 1, "karmada": 0}, True, True, None))
    assert tally.false_rejections["first-fit"] == 1 and tally.first_fit_order == 1 and tally.ours_ok()
    tally.add(2, job, judge.Verdict({"first-fit": 0, "best": 0, "karmada": 0}, True, True, None))
    assert not tally.ours_ok() and len(tally.rejections) == 2


def test_a_rejection_of_a_job_asking_two_overlapping_dra_names_is_explained():
    tally = judge.JudgeTally()
    job = judge.Job("j", model.ComponentSetsQuery(components=()))
    tally.add(1, job, judge.Verdict({"first-fit": 0, "best": 0, "karmada": 0}, True, True, None), dra_names=2)
    assert tally.contested_devices == 2 and tally.ours_ok()
    tally.add(2, job, judge.Verdict({"first-fit": 0, "best": 0, "karmada": 0}, True, True, None), dra_names=1)
    assert not tally.ours_ok()


def test_the_judge_line_has_the_issues_form():
    tally = judge.JudgeTally(members=3, witnesses_accepted=2, witnesses_tested=2)
    assert tally.line("v1.36.3") == (
        "judge: 3 members, kube-scheduler v1.36.3: ours false placements 0/0 (first-fit/best), false rejections 0/0, "
        "witnesses accepted 2/2, scheduler-order misses 0; Karmada false placements 0, false rejections 0; DRA members 0")
    assert tally.ours_ok()


# A part of kube-scheduler v1.36's /metrics as it serves them (comments, other families, a
# label set per cache kind); the numbers are this test's.
_METRICS = """# HELP scheduler_cache_size [ALPHA] Number of nodes, pods, and assumed (bound) pods in the scheduler cache.
# TYPE scheduler_cache_size gauge
scheduler_cache_size{type="assumed_pods"} 2
scheduler_cache_size{type="nodes"} 45
scheduler_cache_size{type="pods"} 87
# HELP scheduler_goroutines [ALPHA] Number of running goroutines split by the work they do such as binding.
# TYPE scheduler_goroutines gauge
scheduler_goroutines{operation="Filter"} 0
scheduler_goroutines{operation="binding"} 3
# HELP scheduler_pending_pods [STABLE] Number of pending pods, by the queue type.
# TYPE scheduler_pending_pods gauge
scheduler_pending_pods{queue="active"} 4
"""


def test_the_scheduler_cache_sizes_are_read_from_its_metrics():
    assert judge.scheduler_cache_sizes(_METRICS) == {"assumed_pods": 2, "nodes": 45, "pods": 87, "binding": 3}
    before_any_binding = "\n".join(line for line in _METRICS.splitlines() if "operation" not in line)
    assert "binding" not in judge.scheduler_cache_sizes(before_any_binding)


def test_the_scheduler_caches_every_bound_pod_but_finished_ones():
    pods = [{"spec": {"nodeName": "n"}, "status": {"phase": phase}}
            for phase in ("Running", "Pending", "Succeeded", "Failed", "Running")]
    assert judge.cached_pods(pods + [{"spec": {}, "status": {"phase": "Pending"}}]) == 3


def test_a_refusal_is_kube_schedulers_message_and_a_pod_still_scheduling_has_none():
    def pod(reason, message, status="False"):
        return {"status": {"conditions": [{"type": "PodScheduled", "status": status, "reason": reason,
                                           "message": message}]}}

    assert judge._refusal(pod("Unschedulable", "0/3 nodes are available: 3 Insufficient cpu.")) == \
        "0/3 nodes are available: 3 Insufficient cpu."
    assert judge._refusal(pod("SchedulerError", "resourceclaims \"x\" is forbidden: exceeded quota: q")) is not None
    assert judge._refusal(pod("SchedulerError", "etcd timed out")) is None  # kube-scheduler retries it
    assert judge._refusal(pod("", "", status="True")) is None
    assert judge._refusal({"status": {}}) is None


class _Bed:
    def __init__(self, sizes):
        self.sizes = list(sizes)

    def scheduler_cache(self):
        return self.sizes.pop(0) if len(self.sizes) > 1 else self.sizes[0]


def _bare_judge(bed=None) -> judge.Judge:
    """A Judge without an apiserver: only the parts a test drives."""
    j = object.__new__(judge.Judge)
    j.bed, j.tally, j.refusal = bed, judge.JudgeTally(), ""
    return j


def _member(nodes=2, pods=({"spec": {"nodeName": "n0"}, "status": {"phase": "Running"}},)):
    return dataclasses.replace(realmembers.generate(500000), seed=1, nodes=[{}] * nodes, pods=list(pods))


def test_the_judge_waits_for_the_scheduler_cache_to_hold_the_member_only(monkeypatch):
    monkeypatch.setattr(judge.time, "sleep", lambda s: None)
    settled = {"nodes": 2, "pods": 1, "assumed_pods": 0, "binding": 0}
    bed = _Bed([dict(settled, pods=4), dict(settled, binding=1), dict(settled, assumed_pods=1), settled])
    j = _bare_judge(bed)
    j._settle(_member())
    assert bed.sizes == [settled] and not j.tally.failures


def test_a_cache_that_never_settles_is_a_failure_not_a_hang(monkeypatch):
    monkeypatch.setattr(judge, "SETTLE_SECONDS", 0.0)
    j = _bare_judge(_Bed([{"nodes": 2, "pods": 3, "assumed_pods": 0}]))
    j._settle(_member())
    assert len(j.tally.failures) == 1 and "did not settle" in j.tally.failures[0]


@pytest.mark.parametrize("verdicts, expect", [
    ([True], (True, [], 0)),
    ([False, True], (True, ["r0"], 1)),
    ([False, False, False], (False, ["r0", "r1", "r2"], 2)),
])
def test_a_refused_pinned_trial_is_tried_again_and_the_refusals_are_kept(monkeypatch, verdicts, expect):
    monkeypatch.setattr(judge.time, "sleep", lambda s: None)
    j = _bare_judge()
    tags = []

    def trial(member, names, job, tag, scheduler, **kw):
        tags.append(tag)
        j.refusal = f"r{len(tags) - 1}"
        return verdicts[len(tags) - 1]

    j._trial = trial
    ok, refusals = j._pinned_trial(None, {}, None, "w", 2, {}, None)
    assert (ok, refusals, j.tally.pinned_retries) == expect
    assert tags == ["w", "w1", "w2"][:len(verdicts)]
