"""One member state through both estimators: populate, converge honestly, compare."""

from __future__ import annotations

import json
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from google.protobuf import json_format

from e2e.harness import oracle
from e2e.harness.estimators import CLUSTER, Answer, Running
from e2e.harness.members import MemberState
from e2e.harness.populate import Populator
from scheduler_client import wire


@dataclass
class Tally:
    clusters: int = 0
    requests: int = 0  # requests answered by Karmada's estimator and judged
    mismatches: int = 0  # ours (first-fit) is not a possible Karmada answer, or an order-free answer differs
    reference_wrong: int = 0  # Karmada's own answer fails the reference test
    best_below_karmada: int = 0
    best_above_optimum: int = 0
    best_witness_invalid: int = 0
    best_below_some_order: int = 0  # information: exhaustive orders found a first-fit above best
    not_converged: int = 0
    optimum_checked: int = 0
    quota_variant_states: int = 0  # states with a quota naming both X and requests.X
    karmada_quota_quirk: int = 0  # Karmada answers explained only by reading one of the two
    orders_exhaustive: int = 0
    notes: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)  # wall time per step, summed over states

    @contextmanager
    def timed(self, step: str):
        started = time.monotonic()
        try:
            yield
        finally:
            self.seconds[step] = self.seconds.get(step, 0.0) + time.monotonic() - started

    def timings(self) -> str:
        return ", ".join(f"{k} {v:.0f} s" for k, v in self.seconds.items())

    def failed(self) -> bool:
        return bool(self.mismatches or self.reference_wrong or self.best_below_karmada or self.best_above_optimum
                    or self.best_witness_invalid or self.not_converged)


def _request_json(kind: str, query) -> dict:
    message = {"sets": lambda q: wire.component_sets_request(CLUSTER, q),
               "replicas": lambda q: wire.replicas_request(CLUSTER, q),
               "unschedulable": lambda q: wire.unschedulable_request(CLUSTER, q)}[kind](query)
    return json_format.MessageToDict(message)


class Differential:
    def __init__(self, populator: Populator, work: Path, ours_ff: Running, ours_best: Running,
                 karmada: Running | None, regressions: Path, log=print):
        self.pop, self.work = populator, work
        self.ours_ff, self.ours_best, self.karmada = ours_ff, ours_best, karmada
        self.regressions = regressions
        self.tally = Tally()
        self.log = log

    # -- convergence ----------------------------------------------------------------------
    def _live_matches(self, est: Running, state: MemberState, ref: oracle.Reference, expect_sets: dict) -> list[str]:
        """Differences between a live estimator and the snapshot-mode reference (empty: converged)."""
        diffs = []
        for i, q in enumerate(state.replicas_queries):
            got = est.replicas(q)
            if got.value != ref.replicas(q):
                diffs.append(f"replicas[{i}] live {got} snapshot {ref.replicas(q)}")
        for i, r in enumerate(state.workload_refs):
            got = est.unschedulable(r)
            if got.value != ref.unschedulable(r):
                diffs.append(f"unschedulable[{i}] live {got} snapshot {ref.unschedulable(r)}")
        for i, q in enumerate(state.sets_queries):
            if i in expect_sets:
                got = est.sets(q)
                if got.value != expect_sets[i]:
                    diffs.append(f"sets[{i}] live {got} snapshot {expect_sets[i]}")
        return diffs

    def converge(self, est: Running, state: MemberState, ref: oracle.Reference, expect_sets: dict,
                 timeout: float) -> list[str]:
        deadline = time.monotonic() + timeout
        while True:
            diffs = self._live_matches(est, state, ref, expect_sets)
            if not diffs or time.monotonic() > deadline:
                return diffs
            time.sleep(0.1)

    # -- one state --------------------------------------------------------------------------
    def run_state(self, state: MemberState, fresh: bool = True) -> bool:
        t = self.tally
        if fresh:
            with t.timed("populate"):
                self.pop.clear()
                self.pop.apply(state)
        with t.timed("dump+reference"):
            dump = self.work / "state.json"
            self.pop.dump(dump)
            ref = oracle.Reference(dump)
            both = [ref.sets(q) for q in state.sets_queries]  # (first-fit, best) each
            ff_ref = {i: pair[0] for i, pair in enumerate(both)}
            best_ref = {i: pair[1] for i, pair in enumerate(both)}
        t.clusters += 1
        ok = True
        self.last_reference = (ref, ff_ref)
        for est, expect in ((self.ours_ff, ff_ref), (self.ours_best, best_ref)):
            with t.timed("converge ours"):
                diffs = self.converge(est, state, ref, expect, timeout=60)
            if diffs:
                t.not_converged += 1
                ok = False
                self._report(state, dump, f"{est.name} did not converge to the snapshot answers", {"diffs": diffs})
        if self.karmada is None:
            return ok
        if not self.karmada.proc.alive():  # a crashed peer is a broken bed, not a mismatch
            raise RuntimeError(f"{self.karmada.name} exited ({self.karmada.proc.popen.returncode}):\n"
                               f"{self.karmada.proc.tail(40)}")
        # Karmada: wait until its order-free answers equal the reference computed from the same
        # dump (they cannot depend on node order); a lasting difference is a mismatch.
        with t.timed("dump+reference"):
            refs = [ref] + [oracle.Reference(v) for v in oracle.quota_variants(dump, self.work)]
        if len(refs) > 1:
            t.quota_variant_states += 1
        with t.timed("converge karmada"):
            k_diffs = self.converge(self.karmada, state, ref, {}, timeout=30) if len(refs) == 1 else []
        n = ref.snapshot.num_nodes
        for i, q in enumerate(state.replicas_queries):
            t.requests += 1
            with t.timed("calls"):
                k, ours = self.karmada.replicas(q), self.ours_ff.replicas(q)
            possible = {r.replicas(q) for r in refs}
            if k.value is not None and k.value != ref.replicas(q) and k.value in possible:
                t.karmada_quota_quirk += 1  # Karmada read `requests.X` or `X`, not both
            if k.value is None or ours.value != ref.replicas(q) or k.value not in possible:
                t.mismatches += 1
                ok = False
                self._report(state, dump, "MaxAvailableReplicas differs", {
                    "request": _request_json("replicas", q), "karmada": str(k), "ours": str(ours),
                    "snapshot": ref.replicas(q), "possible_karmada_answers": sorted(possible)})
        for i, r in enumerate(state.workload_refs):
            t.requests += 1
            with t.timed("calls"):
                k, ours = self.karmada.unschedulable(r), self.ours_ff.unschedulable(r)
            # An absent workload is an error from both; the values (or both errors) must agree.
            if k.value != ours.value or k.value != ref.unschedulable(r):
                t.mismatches += 1
                ok = False
                self._report(state, dump, "GetUnschedulableReplicas differs", {
                    "request": _request_json("unschedulable", r), "karmada": str(k), "ours": str(ours)})
        if k_diffs:
            t.notes.append(f"seed {state.seed}: karmada order-free answers still differ after 30 s: {k_diffs[:3]}")
        for i, q in enumerate(state.sets_queries):
            t.requests += 1
            with t.timed("calls"):
                k, ours_ff, ours_best = self.karmada.sets(q), self.ours_ff.sets(q), self.ours_best.sets(q)
            with t.timed("oracle"):
                arrays = oracle.sets_arrays(ref.snapshot, q)
                answers = oracle.first_fit_answers(ref.snapshot, arrays, state.seed * 31 + i)
                others = []  # the quota readings Karmada may also use (see oracle.quota_variants)
                for other in refs[1:]:
                    other_arrays = oracle.sets_arrays(other.snapshot, q)
                    if other_arrays.quota != arrays.quota:
                        others.append((other_arrays, oracle.first_fit_answers(other.snapshot, other_arrays, state.seed * 31 + i)))
            t.orders_exhaustive += answers.exhaustive
            detail = {"request": _request_json("sets", q), "karmada": str(k), "ours_first_fit": str(ours_ff),
                      "ours_best": str(ours_best), "nodes": n}
            if k.value is None or ours_ff.value is None or ours_best.value is None:
                t.mismatches += 1
                ok = False
                self._report(state, dump, "an estimator failed a MaxAvailableComponentSets call", detail)
                continue
            with t.timed("oracle"):
                ours_ok = oracle.reachable(arrays, answers, ours_ff.value, state.seed)
                karmada_ok = oracle.reachable(arrays, answers, k.value, state.seed)
                karmada_by_quirk = not karmada_ok and any(oracle.reachable(a, ans, k.value, state.seed) for a, ans in others)
            if karmada_by_quirk:
                t.karmada_quota_quirk += 1
                karmada_ok = True
            detail["first_fit_answers_seen"] = sorted(answers.values)
            detail["orders_tried"] = answers.orders_tried
            detail["all_orders"] = answers.exhaustive
            if n <= 1 and ours_ff.value != k.value:
                ours_ok = False
            if not ours_ok:
                t.mismatches += 1
                ok = False
                self._report(state, dump, "our first-fit answer is not one Karmada's first-fit gives for any node order tried", detail)
            if not karmada_ok:
                t.reference_wrong += 1
                ok = False
                self._report(state, dump, "Karmada's answer is not explained by the reference first-fit (reference wrong?)", detail)
            if ours_best.value < k.value and karmada_by_quirk:
                detail["note"] = "Karmada's answer exceeds what the quota allows (it read only one of X / requests.X)"
                t.notes.append(f"seed {state.seed}: best {ours_best.value} below Karmada {k.value}, whose answer "
                               "ignores one of a quota's X / requests.X limits")
            elif ours_best.value < k.value:
                t.best_below_karmada += 1
                ok = False
                self._report(state, dump, "best mode below Karmada's answer", detail)
            if answers.exhaustive and ours_best.value < max(answers.values):
                t.best_below_some_order += 1
            with t.timed("oracle"):
                best = oracle.optimum(arrays, n)
            if best is not None:
                t.optimum_checked += 1
                if ours_best.value > best:
                    t.best_above_optimum += 1
                    ok = False
                    self._report(state, dump, "best mode above the exact optimum", dict(detail, optimum=best))
            with t.timed("oracle"):
                witness_ok = ref.best_witness_ok(q, arrays)
            if not witness_ok:
                t.best_witness_invalid += 1
                ok = False
                self._report(state, dump, "best mode's witness does not verify", detail)
        return ok

    def _report(self, state: MemberState, dump: Path, what: str, detail: dict) -> None:
        self.regressions.mkdir(parents=True, exist_ok=True)
        objects = json.loads(dump.read_text())
        case = {"what": what, "seed": state.seed, "detail": detail, "objects": _trim(objects)}
        path = self.regressions / f"seed-{state.seed}-{len(list(self.regressions.glob(f'seed-{state.seed}-*')))}.json"
        path.write_text(json.dumps(case, indent=1, sort_keys=True))
        self.log(f"MISMATCH seed {state.seed}: {what}\n  {json.dumps(detail, sort_keys=True)}\n"
                 f"  member state and request saved as {path}")


def _trim(objects: dict) -> dict:
    """Keep what an estimator reads; drop managedFields and other server noise."""
    for obj in objects.get("items", []):
        meta = obj.get("metadata", {})
        for key in ("managedFields", "resourceVersion", "creationTimestamp", "generation"):
            meta.pop(key, None)
    return objects
