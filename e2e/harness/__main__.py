"""`python -m e2e.harness`: the end-to-end run `make e2e` starts (after building the peers).

Ends with exactly one closing line; exits 1 when a mismatch, a best-mode answer below
Karmada's, a failed client call, a placement difference or an unconverged fault is found,
and 2 when the bed itself cannot be set up.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import threading
import time
import traceback
from pathlib import Path

from e2e.harness import client, faults, install, judge, karmadacp_scenarios, large, placement, procs, restarts, rotation
from e2e.harness.cluster import KubeBed
from e2e.harness.differential import Differential
from e2e.harness.estimators import karmadas, ours
from e2e.harness.members import generate
from e2e.harness.populate import Populator
from e2e.harness.versions import REPO, versions

def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m e2e.harness", description=__doc__)
    p.add_argument("--states", type=int, default=200, help="random member states for the differential")
    p.add_argument("--seed", type=int, default=1, help="first generator seed (states use seed, seed+1, ...)")
    p.add_argument("--bin-dir", type=Path, default=REPO / ".e2e" / "bin")
    p.add_argument("--work", type=Path, default=REPO / ".e2e" / "run")
    p.add_argument("--regressions", type=Path, default=REPO / "e2e" / "regressions")
    p.add_argument("--client-states", type=int, default=20,
                   help="states whose requests also go through Karmada's client (estclient)")
    p.add_argument("--no-faults", action="store_true", help="skip the apiserver fault checks")
    p.add_argument("--large", default="1000,5000,10000",
                   help="node counts of the large members, comma-separated ('' for none)")
    p.add_argument("--placement-fleets", type=int, default=50,
                   help="random fleets scheduled by Karmada's scheduler and karmada-place (0 skips)")
    p.add_argument("--no-placement", action="store_true", help="skip the placement check")
    p.add_argument("--judge-members", type=int, default=200,
                   help="members whose answers kube-scheduler judges (e2e/harness/judge.py; 0 skips)")
    p.add_argument("--judge-seed", type=int, default=500000, help="first seed of the judge's members")
    p.add_argument("--no-rotation", action="store_true",
                   help="skip rotating our serving certificate under load through Karmada's client (e2e/harness/rotation.py)")
    p.add_argument("--no-install", action="store_true",
                   help="skip the install routes (Karmada's chart, karmadactl's manifest, ours: e2e/harness/install.py)")
    p.add_argument("--no-karmada-cp", action="store_true",
                   help="skip the jobs submitted to a real Karmada control plane (e2e/harness/karmadacp*.py)")
    p.add_argument("--karmada-restarts", type=int, default=0, metavar="N",
                   help="start Karmada's estimator N times on one unchanged member and report the distinct "
                        "answers (ours is restarted too and must give one answer); 0 skips")
    return p.parse_args(argv)


def log(message: str) -> None:
    print(message, flush=True)


class Beside(threading.Thread):
    """A phase with a bed of its own, run beside the differential instead of after everything
    else: `work(*args, log)` in a thread; result() re-raises what it raised."""

    def __init__(self, name: str, work, *args):
        super().__init__(name=name, daemon=True)
        self.work, self.args = work, args
        self.tally = self.error = None
        self.seconds = 0.0

    def run(self) -> None:
        started = time.monotonic()
        try:
            self.tally = self.work(*self.args, log)
        except BaseException as error:  # noqa: BLE001 - re-raised in the main thread by result()
            self.error = error
        self.seconds = time.monotonic() - started

    def result(self):
        self.join()
        if self.error is not None:
            raise self.error
        return self.tally


def main(argv=None) -> int:
    args = parse_args(argv)
    v = versions()
    procs.install_signal_handlers()
    shutil.rmtree(args.work, ignore_errors=True)
    args.work.mkdir(parents=True)
    karmada_bin = args.bin_dir / f"karmada-scheduler-estimator-{v['KARMADA_VERSION']}"
    results = {"client": (0, 0), "placement": (0, 0), "faults": (0, 0)}
    failed = False
    started = time.monotonic()
    phases: dict[str, float] = {}  # wall seconds per phase, printed before the closing line
    mark = [started]

    def phase(name: str) -> None:
        now = time.monotonic()
        phases[name] = phases.get(name, 0.0) + now - mark[0]
        mark[0] = now

    background = judged = submitted = installed = None
    diff = None
    try:
        bed = KubeBed(args.bin_dir, args.work, v["KUBERNETES_VERSION"], v["ETCD_VERSION"]).start()
        log(f"e2e: etcd {v['ETCD_VERSION']} and kube-apiserver {v['KUBERNETES_VERSION']} up at {bed.url} "
            f"({time.monotonic() - started:.0f} s)")
        pop = Populator(bed.kubeconfig)
        pop.ensure_namespaces()
        phase("bed")
        if not karmada_bin.exists():
            raise FileNotFoundError(f"{karmada_bin} is missing: `make e2e-karmada` builds it")
        estclient = args.bin_dir / f"estclient-{v['KARMADA_VERSION']}"
        ctally = client.ClientTally()
        ours_mtls = tls = None
        if estclient.exists() and args.client_states > 0:
            ours_mtls, tls = client.mtls_estimator(bed.kubeconfig, args.work)
        elif args.client_states > 0:
            log(f"e2e: {estclient} missing: no calls through Karmada's client (client: 0/0)")
        # All started at once: each of ours spends seconds loading its kernels.
        ours_ff = ours(bed.kubeconfig, args.work, "first-fit").launch()
        ours_best = ours(bed.kubeconfig, args.work, "best").launch()
        karmada = karmadas(karmada_bin, bed.kubeconfig, args.work).launch()
        if ours_mtls is not None:
            ours_mtls.launch()
        for est in (ours_ff, ours_best, karmada, ours_mtls):
            if est is not None:
                est.wait_ready()
        log(f"e2e: estimators ready: ours (first-fit, best) and karmada-scheduler-estimator {v['KARMADA_VERSION']} "
            f"({time.monotonic() - started:.0f} s)")
        phase("estimators start")
        # After the estimators above are up, so that its own seven do not load at the same time.
        if not args.no_placement and args.placement_fleets > 0:
            background = Beside("placement", placement.run, args.bin_dir / f"karmada-schedule-{v['KARMADA_VERSION']}",
                                args.work / "placement", args.placement_fleets, args.seed)
            background.start()
        if args.judge_members > 0:  # its own apiserver, kube-scheduler and three estimators
            judged = Beside("judge", judge.run_process, args.bin_dir, args.work / "judge", v, args.judge_members,
                            args.judge_seed)
            judged.start()
        diff = Differential(pop, args.work, ours_ff, ours_best, karmada, args.regressions, log)
        for i in range(args.states):
            seed = args.seed + i
            state = generate(seed)
            diff.run_state(state)
            if ours_mtls is not None and i < args.client_states:
                with diff.tally.timed("Karmada's client"):
                    ref, ff_ref = diff.last_reference
                    lag = diff.converge(ours_mtls, state, ref, ff_ref, timeout=60)
                    if lag:
                        ctally.failures.append(f"seed {seed}: mTLS estimator did not converge: {lag[:2]}")
                    client.check_state(estclient, state, [("ours plaintext", ours_ff, None), ("ours mTLS", ours_mtls, tls)],
                                       ctally, control=karmada)
                if i == args.client_states - 1:  # done with it: it would only follow every later state's churn
                    ours_mtls.stop()
            if (i + 1) % 20 == 0:
                t = diff.tally
                log(f"e2e: {i + 1}/{args.states} states, {t.requests} requests, {t.mismatches} mismatches, "
                    f"{t.best_below_karmada} best below Karmada ({time.monotonic() - started:.0f} s)")
        phase("differential")
        if not args.no_karmada_cp:  # its own control planes and members; after the differential frees a core
            submitted = Beside("karmada", karmadacp_scenarios.run_process, args.bin_dir, args.work / "karmada-cp", v)
            submitted.start()
        results["client"] = (ctally.ok, ctally.calls)
        for failure in ctally.failures[:10]:
            log(f"e2e: CLIENT FAILURE {failure}")
        for failure in ctally.control_failures[:5]:
            log(f"e2e: note: Karmada's estimator through its own client differs from direct gRPC: {failure}")
        if ctally.calls:
            log(f"e2e: Karmada's client ({estclient.name}): {ctally.ok}/{ctally.calls} calls to our estimator "
                f"(plaintext and mTLS) returned our direct-gRPC answer")
        t = diff.tally
        failed |= t.failed() or bool(ctally.failures)
        log(f"e2e: differential: orders enumerated exhaustively for {t.orders_exhaustive} set requests; exact optimum "
            f"checked for {t.optimum_checked}; best below a first-fit order (information) {t.best_below_some_order}; "
            f"reference failures {t.reference_wrong}; best above optimum {t.best_above_optimum}; witness invalid "
            f"{t.best_witness_invalid}; not converged {t.not_converged}; states with a quota naming both X and "
            f"requests.X {t.quota_variant_states}, Karmada answers explained only by its reading one of them "
            f"{t.karmada_quota_quirk}")
        for note in t.notes[:10]:
            log(f"e2e: note: {note}")
        for nodes in [int(x) for x in args.large.split(",") if x.strip()]:
            large.judge_large(diff, nodes, args.seed + nodes, log)
            phase(f"large {nodes}")
        if args.karmada_restarts > 0:
            variation = restarts.run(diff, karmada_bin, bed.kubeconfig, args.work, args.karmada_restarts,
                                     args.seed + 200000, log)
            failed |= not variation.ours_deterministic
            phase("restarts")
        fault_run = None
        if not args.no_faults:  # the last fault (dead link) goes on in a thread until finish()
            fault_run = faults.run_all(diff, bed, args.seed + 100000, log)
            phase("faults")
        if background is not None:
            ptally = background.result()
            results["placement"] = (ptally.equal, ptally.fleets)
            phase("placement (waiting for the rest)")
        if not args.no_install:  # its own apiserver; about half a minute on one core
            installed = install.run(args.bin_dir, args.work / "install", v, log)
            results["install"] = installed
            failed |= not installed.get("ok", False)
            phase("install routes")
        if not args.no_rotation:  # about 20 s: two certificate swaps under Karmada's client's calls
            rotation_failed, rotation_calls = rotation.run(args.bin_dir, args.work, v, log)
            results["rotation"] = (rotation_failed, rotation_calls)
            failed |= rotation_failed > 0 or rotation_calls == 0
            phase("certificate rotation")
        if judged is not None:
            jtally = judged.result()
            phase("judge (waiting for the rest)")
            for failure in jtally.failures[:20] + jtally.rejections[:20]:
                log(f"e2e: JUDGE FAILURE {failure}")
            log(jtally.details())
            results["judge"] = jtally
            failed |= not jtally.ours_ok()
        if submitted is not None:
            outcome = submitted.result()
            phase("karmada control plane (waiting for the rest)")
            results["karmada"] = outcome
            failed |= not outcome.get("ok", False)
        if fault_run is not None:
            done = fault_run.finish()
            results["faults"] = (sum(r.converged for r in done), len(done))
            phase("dead-link fault (waiting for the rest)")
    except Exception:
        traceback.print_exc()
        log("e2e: the bed could not run to the end (see above); stopping every process it started")
        procs.stop_all()
        return 2
    finally:
        procs.stop_all()
    t = diff.tally
    log(f"e2e: wall time per phase: " + ", ".join(f"{k} {v:.0f} s" for k, v in phases.items())
        + (f"; placement alongside {background.seconds:.0f} s" if background is not None else "")
        + (f"; judge alongside {judged.seconds:.0f} s" if judged is not None else "")
        + (f"; Karmada control plane alongside {submitted.seconds:.0f} s" if submitted is not None else "")
        + f"; differential steps summed: {t.timings()}; total {time.monotonic() - started:.0f} s")
    if "judge" in results:
        log(results["judge"].line(v["KUBERNETES_VERSION"]))
    if "karmada" in results:
        log(results["karmada"]["line"])
    if "install" in results:
        log(results["install"]["line"])
    k, p, f = results["client"], results["placement"], results["faults"]
    log(f"e2e: {t.clusters} clusters, {t.requests} requests vs karmada-scheduler-estimator {v['KARMADA_VERSION']}: "
        f"{t.mismatches} mismatches (first-fit), {t.best_below_karmada} best below Karmada; "
        f"client: {k[0]}/{k[1]} through Karmada's client; placement: {p[0]}/{p[1]} fleets as Karmada's scheduler; "
        f"faults: {f[0]}/{f[1]} converged")
    failed |= k[0] < k[1] or p[0] < p[1] or f[0] < f[1]
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
