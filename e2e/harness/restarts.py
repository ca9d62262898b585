"""Restart variation: one member state, Karmada's estimator started N times, the answers it gives.

Karmada's first-fit walks nodes in the order its informer cache hands them over, and that order
is not fixed by the member's state. This check picks a seeded member where node order can
change the first-fit answer (the plain reference over every distinct node order gives several
answers), writes it once to the apiserver, then starts Karmada's estimator N times against the
unchanged state and asks the same MaxAvailableComponentSets request a few times per start. Our
first-fit estimator is restarted the same way: its answer is expected to be one number.

Nothing here is a pass/fail criterion for Karmada (its answers only have to be possible
first-fit answers, which the differential checks); ours giving more than one answer for one
state is counted as a failure.
"""

from __future__ import annotations

import copy
import json
import time
from dataclasses import dataclass, field
from pathlib import Path

from e2e.harness import oracle
from e2e.harness.estimators import Running, karmadas, ours
from e2e.harness.members import MemberState, generate

CALLS_PER_START = 3


@dataclass
class Variation:
    seed: int = 0
    query: int = 0
    nodes: int = 0
    possible: list[int] = field(default_factory=list)  # first-fit answers over every node order
    karmada: list[list[int | None]] = field(default_factory=list)  # per start, the answers of its calls
    ours: list[list[int | None]] = field(default_factory=list)

    def distinct(self, runs: list[list[int | None]]) -> list:
        return sorted({v for run in runs for v in run}, key=lambda v: (v is None, v))

    @property
    def ours_deterministic(self) -> bool:
        return len(self.distinct(self.ours)) == 1 and None not in self.distinct(self.ours)


def _objects_file(state: MemberState, path: Path) -> Path:
    """The state's node, pod and quota objects as a List file (what the oracle reads)."""
    items = []
    for obj in [*state.nodes, *state.pods, *state.quotas]:
        obj = copy.deepcopy(obj)
        obj["metadata"].pop("_owner", None)
        items.append(obj)
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    return path


def pick_state(work: Path, first_seed: int, scan: int = 80, want: int = 3) -> tuple[MemberState, int, list[int]]:
    """The first seeded member (from first_seed) with a request whose first-fit answer takes at
    least `want` values over all node orders; else the one with the most values found."""
    best: tuple[MemberState, int, list[int]] | None = None
    for seed in range(first_seed, first_seed + scan):
        state = generate(seed)
        if any(q["status"]["hard"].keys() & {"memory", "cpu"} for q in state.quotas):
            continue  # skip Karmada's X / requests.X quota reading, a different source of variation
        path = _objects_file(state, work / "restart-candidate.json")
        snapshot = oracle.load(path)
        for i, q in enumerate(state.sets_queries):
            arrays = oracle.sets_arrays(snapshot, q)
            answers = oracle.first_fit_answers(snapshot, arrays, seed)
            if not answers.exhaustive:
                continue
            values = sorted(answers.values)
            if best is None or len(values) > len(best[2]):
                best = (state, i, values)
            if len(values) >= want:
                return best
    if best is None:
        raise RuntimeError(f"no member among seeds {first_seed}..{first_seed + scan - 1} to measure restarts on")
    return best


def _answers(est: Running, query, calls: int) -> list[int | None]:
    return [est.sets(query, timeout=600).value for _ in range(calls)]


def run(diff, karmada_bin: Path, kubeconfig: Path, work: Path, restarts: int, seed: int, log=print) -> Variation:
    state, index, possible = pick_state(work, seed)
    query = state.sets_queries[index]
    diff.pop.clear()
    diff.pop.apply(state)
    dump = work / "restarts.json"
    diff.pop.dump(dump)
    ref = oracle.Reference(dump)
    result = Variation(seed=state.seed, query=index, nodes=len(state.nodes), possible=possible)
    for r in range(restarts):
        est = karmadas(karmada_bin, kubeconfig, work, name=f"karmada-restart-{r}").start()
        try:
            # Ready is not synced: wait until its order-free answers equal the dumped state's.
            lag = diff.converge(est, state, ref, {}, timeout=60)
            if lag:
                log(f"e2e: restarts: Karmada start {r} did not reach the dumped state's order-free answers: {lag[:2]}")
            result.karmada.append(_answers(est, query, CALLS_PER_START))
        finally:
            est.stop()
    ff_ref = {index: ref.sets(query)[0]}
    for r in range(max(1, min(restarts, 3))):  # ours loads kernels at each start: fewer restarts
        est = ours(kubeconfig, work, "first-fit", name=f"ours-restart-{r}").start()
        try:
            diff.converge(est, state, ref, ff_ref, timeout=60)
            result.ours.append(_answers(est, query, CALLS_PER_START))
        finally:
            est.stop()
    log(f"e2e: restarts: seed {result.seed} ({result.nodes} nodes), component-set request {index}: first-fit "
        f"over every node order gives {possible}; Karmada's estimator over {restarts} starts "
        f"({CALLS_PER_START} calls each) answered {result.karmada}, distinct {result.distinct(result.karmada)}; "
        f"ours (first-fit) over {len(result.ours)} starts answered {result.ours}, distinct "
        f"{result.distinct(result.ours)}")
    return result
