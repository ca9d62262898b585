"""`make demo`: the reference scenario (docs/scenario.md), start to end.

Compiles the numba kernels once (or loads them from the on-disk cache), then starts one
accurate estimator per member and packing mode from deploy/demo/, forked from this process
(Linux), so the eight share the loaded kernels instead of each loading or compiling them on the
same few cores; then shows
train-small and train-big placed
  (a) with the general estimator only: member-b looks feasible for train-big (the trap);
  (b) with the accurate estimators too: member-b rejected with the reason, member-c chosen;
  (c) with Karmada's GPU-blind default resource models: -1 "unknown" here, not a silent 0;
  (d) `karmada-place doctor` on the policy of the scenario's failures 1 and 2;
  (e) member-d, whose GPUs are served through DRA (Kubernetes 1.36, KEP-5004): no node
      advertises nvidia.com/gpu, so Karmada counts 0 there while the accurate estimator
      counts the free devices; the doctor names it.
Every number printed is computed by the same code `karmada-place` runs.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from estimator.api import ComponentSetsQuery, count_dra_devices, preload_estimator, read_objects, warmup_kernels
from scheduler_client import accurate, cli, dra
from scheduler_client.karmada import DEFAULT_GATES, MULTIPLE_POD_TEMPLATES, RESOURCE_MODELING, requested_names
from scheduler_client.launch import LocalEstimator, wait_serving
from scheduler_client.memberview import build_members
from scheduler_client.placement import Options, PlacementResult, evaluate
from scheduler_client.report import columns
from scheduler_client.sources import load_clusters, load_job, load_member_snapshot, load_policy
from scheduler_client.verdicts import ACCURATE, GENERAL, MODELS

REPO = Path(__file__).resolve().parents[1]
DEMO = REPO / "deploy" / "demo"
MEMBERS = ("member-a", "member-b", "member-c", "member-d")
DRA_MEMBER = "member-d"  # GPUs served through DRA (deploy/demo/member-d.yaml)
JOBS = ("train-small", "train-big")
MODES = ("best", "first-fit")
GPU = "nvidia.com/gpu"
CLUSTERS = DEMO / "clusters.yaml"
DRA_CLUSTERS = DEMO / "clusters-dra.yaml"  # member-d's Cluster object, apart from the reference scenario's three
CLUSTER_FILES = (CLUSTERS, DRA_CLUSTERS)
GOOD_POLICY = DEMO / "policies" / "one-member.yaml"
BAD_POLICY = DEMO / "policies" / "copy-everywhere.yaml"


def _rel(path: Path) -> str:
    return str(path.relative_to(REPO))


def _section(title: str) -> None:
    print(f"\n{title}\n" + "-" * len(title))


def _cell(value: int | None) -> str:
    return "-" if value is None else ("?" if value < 0 else str(value))


class Scenario:
    def __init__(self, endpoints: dict[str, accurate.Endpoint]):
        self.jobs = {name: load_job(DEMO / "jobs" / f"{name}.yaml") for name in JOBS}
        self.placement = load_policy(GOOD_POLICY).placement
        snapshots = {m: load_member_snapshot(m, [DEMO / f"{m}.yaml"]) for m in MEMBERS}
        self.members = build_members(load_clusters(list(CLUSTER_FILES)), snapshots)
        self.endpoints = endpoints

    def place(self, job: str, use_accurate: bool, karmada_compatible: bool = False) -> PlacementResult:
        endpoints = self.endpoints if use_accurate else {}
        # The story is about a Karmada that runs the multi-component path (the gate on).
        options = Options(
            karmada_compatible=karmada_compatible,
            gates={**DEFAULT_GATES, MULTIPLE_POD_TEMPLATES: True},
            accurate_members=frozenset(endpoints),
            accurate_addresses={n: e.address for n, e in endpoints.items()},
        )
        ask = lambda names, query, key: accurate.ask_all([endpoints[n] for n in names], query, key)  # noqa: E731
        return evaluate(self.jobs[job], self.members, self.placement, options, ask)


def _sets_table(scenario: Scenario, use_accurate: bool) -> list:
    rows: list[tuple[str, ...]] = [("job", *MEMBERS, "chosen")]
    results = []
    for job in JOBS:
        result = scenario.place(job, use_accurate)
        sets = {m.name: m.sets for m in result.members}
        rows.append((job, *(_cell(sets[m]) for m in MEMBERS), result.selected or "none"))
        results.append(result)
    print("\n".join(columns(rows, "    ")))
    return results


def packing_table(endpoints_by_mode: dict[str, dict[str, accurate.Endpoint]], scenario: Scenario) -> None:
    _section("Accurate estimators: complete sets each member can host (MaxAvailableComponentSets over gRPC)")
    rows: list[tuple[str, ...]] = [("job", "packing", *MEMBERS)]
    for job in JOBS:
        query_job = scenario.jobs[job]
        query = ComponentSetsQuery(query_job.components, query_job.namespace)
        for mode in MODES:
            answers = accurate.ask_all(list(endpoints_by_mode[mode].values()), query, query_job.object_key)
            rows.append((job, mode, *(_cell(answers[m].value) for m in MEMBERS)))
    print("\n".join(columns(rows, "    ")))
    print(gpu_story(scenario, "train-big"))


def gpu_story(scenario: Scenario, job_name: str) -> str:
    """Why the per-node view matters for this job, from the job and the member snapshots."""
    job = scenario.jobs[job_name]
    component = max(job.components, key=lambda c: c.shape.request(GPU))
    need, count = component.shape.request(GPU), component.replicas
    facts = []
    for member in scenario.members:
        total = member.summary.allocatable.get(GPU, 0) if member.summary else 0
        assert member.snapshot is not None  # every demo member has its object files
        column = member.snapshot.column(GPU)
        per_node = int(member.snapshot.allocatable[:, column].max()) if column is not None else 0
        if total >= need * count and per_node < need:
            facts.append(
                f"{member.name} has {total} GPUs in total but at most {per_node} per node, so no node can "
                f"hold a {component.name}"
            )
        elif per_node >= need * count:
            facts.append(f"{member.name} has {per_node} GPUs on one node and fits the whole job")
        for r in member.dra:
            if r.name == GPU:
                facts.append(
                    f"{member.name} serves {r.devices} GPUs through DRA, {r.free} free, at most "
                    f"{r.largest_free} on one node: its accurate estimator counts them (section e)"
                )
    return f"    {job_name} needs {count} {component.name}s x {need} GPUs: " + ";\n    ".join(facts) + "."


def general_only(scenario: Scenario) -> None:
    _section("(a) General estimator only: cluster totals, as Karmada without scheduler-estimators")
    results = _sets_table(scenario, use_accurate=False)
    seen = set()
    for result in results:
        for m in result.members:
            if m.sets == 0 and m.name not in seen:
                seen.add(m.name)
                print(f"    {m.name} ({result.job.name}): {m.reasons[0]}")
        for warning in result.warnings:
            if "cluster totals, but" in warning:
                print(f"    THE TRAP, {result.job.name}: {warning}")


def with_accurate(scenario: Scenario) -> None:
    _section("(b) General + accurate estimators: per member, the minimum of the answers that are not -1")
    results = _sets_table(scenario, use_accurate=True)
    for result in results:
        requested = requested_names(result.job.components)
        blind = {m.name: [r.name for r in dra.member_blind(m, requested)] for m in scenario.members}
        blind = {name: names for name, names in blind.items() if names}
        for m in result.members:
            if m.verdict == "rejected" and m.estimates[ACCURATE] == 0:
                print(f"    {m.name} ({result.job.name}) rejected: " + "; ".join(m.reasons[1:2] or m.reasons[:1]))
            elif m.verdict == "rejected" and (m.estimates[ACCURATE] or 0) >= 1 and m.name in blind:
                print(
                    f"    {m.name} ({result.job.name}) rejected although its accurate estimator counts "
                    f"{m.estimates[ACCURATE]} set(s): the general estimator's {m.estimates[GENERAL]} is the minimum "
                    f"(its {', '.join(blind[m.name])} served through DRA: section e)"
                )
    args = [
        "--job",
        _rel(DEMO / "jobs" / "train-big.yaml"),
        "--policy",
        _rel(GOOD_POLICY),
        *_member_args(),
        *[a for m, e in scenario.endpoints.items() for a in ("--estimator", f"{m}={e.address}")],
        "--feature-gates",
        f"{MULTIPLE_POD_TEMPLATES}=true",
    ]
    print("\n$ karmada-place " + " ".join(args) + "\n")
    exit_code = cli.main([str(REPO / a) if a.startswith("deploy/") else a for a in args])
    print(f"(exit status {exit_code})")


def blind_models(scenario: Scenario) -> None:
    _section("(c) Karmada's default resource models describe cpu and memory only: GPU jobs")
    rows: list[tuple[str, ...]] = [("job", "answers", *MEMBERS, "chosen")]
    for job in JOBS:
        for label, compatible in (("Karmada (--karmada-compatible)", True), ("karmada-place", False)):
            result = scenario.place(job, use_accurate=True, karmada_compatible=compatible)
            by_name = {m.name: m for m in result.members}
            cells = [f"models {_cell(by_name[m].estimates[MODELS])} -> {_cell(by_name[m].sets)}" for m in MEMBERS]
            karmada = result.karmada if compatible else None
            chosen = result.selected or (f'none: "{karmada.error}"' if karmada is not None else "none")
            rows.append((job, label, *cells, chosen))
    print("\n".join(columns(rows, "    ")))
    print(
        "    Karmada's 0 wins the minimum over estimators, so no member is ever chosen for a GPU job\n"
        "    (failure 3); here the blind models answer -1, unknown, and the accurate estimators decide."
    )


def doctor_on_bad_policy() -> None:
    _section("(d) karmada-place doctor on the policy behind failures 1 and 2")
    args = ["doctor", "--policy", _rel(BAD_POLICY), "--job", _rel(DEMO / "jobs" / "train-big.yaml"), *_member_args()]
    print("$ karmada-place " + " ".join(args) + "\n")
    exit_code = cli.main([str(REPO / a) if a.startswith("deploy/") else a for a in args])
    print(f"(exit status {exit_code})")


def _member_args() -> list[str]:
    return [
        *[a for f in CLUSTER_FILES for a in ("--clusters", _rel(f))],
        *[a for m in MEMBERS for a in ("--member", f"{m}={_rel(DEMO / (m + '.yaml'))}")],
    ]


def dra_member(scenario: Scenario) -> None:
    _section(f"(e) {DRA_MEMBER}: GPUs served through Dynamic Resource Allocation (Kubernetes 1.36, KEP-5004)")
    member = next(m for m in scenario.members if m.name == DRA_MEMBER)
    classes = ", ".join(sorted({r.device_class for r in member.dra if r.name == GPU}))
    assert member.summary is not None  # every demo member has its object files
    print(
        f"    {DRA_MEMBER}'s nodes advertise no {GPU} in status.allocatable, so its Cluster's resourceSummary has "
        f"none\n    (allocatable {member.summary.allocatable.get(GPU, 0)}, allocated "
        f"{member.summary.allocated.get(GPU, 0)}: pods' requests); DeviceClass {classes} "
        f"(extendedResourceName {GPU})\n    serves it from the devices a DRA driver publishes in ResourceSlices. "
        "`karmada-place summarize` writes:"
    )
    for line in dra.comment_lines(member.name, member.dra, member.dra_failed_classes):
        print(f"    {line}")
    rows = [("job", "Karmada: general estimator", "accurate estimator (this project)", "minimum: Karmada's answer")]
    for job in JOBS:
        row = next(m for m in scenario.place(job, use_accurate=True).members if m.name == DRA_MEMBER)
        rows.append((job, _cell(row.estimates[GENERAL]), _cell(row.estimates[ACCURATE]), _cell(row.sets)))
    print("\n".join(columns(rows, "    ")))
    print(
        "    Karmada's own karmada-scheduler-estimator reads node allocatable too and answers 0 there; the "
        f"general\n    estimator's 0 wins Karmada's minimum, so {DRA_MEMBER} is refused for every GPU job while "
        "GPUs are free."
    )
    # As when a DRA member has just joined: every member but it has an accurate estimator.
    args = [
        "doctor",
        "--policy",
        _rel(GOOD_POLICY),
        "--job",
        _rel(DEMO / "jobs" / "train-small.yaml"),
        *_member_args(),
        *[a for m, e in scenario.endpoints.items() if m != DRA_MEMBER for a in ("--estimator", f"{m}={e.address}")],
        "--feature-gates",
        f"{MULTIPLE_POD_TEMPLATES}=true,{RESOURCE_MODELING}=false",
    ]
    print("\n$ karmada-place " + " ".join(args) + "\n")
    exit_code = cli.main([str(REPO / a) if a.startswith("deploy/") else a for a in args])
    print(f"(exit status {exit_code})")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scheduler_client.demo", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--compile-in-each",
        action="store_true",
        help="skip the shared kernel warm-up: every estimator compiles for itself if the cache is "
        "cold (the old start-up, kept for benchmarks/startup.py's comparison)",
    )
    parser.add_argument(
        "--spawn",
        action="store_true",
        help="start each estimator as `python -m estimator` of its own (imports and kernel loading "
        "paid eight times) instead of forking them from this process (the default on Linux)",
    )
    args = parser.parse_args(argv)
    started = time.monotonic()
    estimators = [LocalEstimator(m, [DEMO / f"{m}.yaml"], packing=mode) for mode in MODES for m in MEMBERS]
    # Forked from this process after it loaded the kernels once, the eight share the loaded
    # kernels and modules: each then costs its own start-up only (0.05-0.1 CPU-s on these
    # members, against ~1.5 for a process of its own that imports and loads them again).
    fork = not (args.compile_in_each or args.spawn) and sys.platform.startswith("linux")
    print(
        f"Karmada placement of two PyTorchJobs over {len(MEMBERS)} GPU members (deploy/demo; {DRA_MEMBER}'s GPUs "
        "served through DRA)",
        flush=True,
    )
    if not args.compile_in_each:
        # One process fills the kernel cache or loads it (this one imports numba anyway, for
        # the general estimator's resource models); the estimators started after it never
        # compile. Cold, six processes compiling at once on two cores waited ~46 s.
        warm_started = time.monotonic()
        if fork:
            preload_estimator()  # the kernels, and the modules the estimators run
        else:
            warmup_kernels()
        # estimator.kernels has set NUMBA_CACHE_DIR, which the estimators inherit.
        print(
            f"kernels compiled (or loaded from {os.environ['NUMBA_CACHE_DIR']}) in "
            f"{time.monotonic() - warm_started:.1f}s",
            flush=True,
        )
        if fork:  # member-d's CEL selector, compiled once here (cached) rather than in each of its two estimators
            count_dra_devices(read_objects(DEMO / f"{DRA_MEMBER}.yaml"))
    print(
        f"starting {len(estimators)} accurate estimators ({len(MEMBERS)} members x packing {', '.join(MODES)}) ...",
        flush=True,
    )
    try:  # every estimator started is stopped, whatever fails
        for est in estimators:
            try:
                est.start(fork=fork)
            except RuntimeError as error:  # e.g. a thread started by an import: a fork would not be safe
                print(f"cannot fork the estimators ({error}); starting them as processes of their own", flush=True)
                fork = False
                est.start()
        by_mode = {
            mode: {e.member: accurate.Endpoint(e.member, e.address) for e in estimators if e.packing == mode}
            for mode in MODES
        }
        scenario = Scenario(by_mode["best"])  # reads the demo's files while the estimators start
        # Generous: a process that dies fails the wait at once; a live one may be slow on a busy machine.
        wait_serving(
            estimators,
            timeout=900,
            progress=lambda pending, waited: print(
                f"  ... {len(pending)} of {len(estimators)} still starting after {waited:.0f}s", flush=True
            ),
        )
        print(f"ready in {time.monotonic() - started:.1f}s", flush=True)
        packing_table(by_mode, scenario)
        general_only(scenario)
        with_accurate(scenario)
        blind_models(scenario)
        doctor_on_bad_policy()
        dra_member(scenario)
    finally:
        for est in estimators:
            est.stop()
    print(f"\n(done in {time.monotonic() - started:.1f}s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
