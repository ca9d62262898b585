"""`make demo`: the reference scenario (shared/docs/scenario.md) against real estimators.

Starts one estimator per member and packing mode from deploy/demo/, asks each over gRPC
how many complete sets of train-small and train-big it can host, prints the table, stops.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import yaml

from estimator.model import ComponentSetsQuery
from scheduler_client.accurate import Endpoint, ask_component_sets
from scheduler_client.interpreters import interpret
from scheduler_client.launch import LocalEstimator, wait_serving

DEMO = Path(__file__).resolve().parents[1] / "deploy" / "demo"
MEMBERS = ("member-a", "member-b", "member-c")
JOBS = ("train-small", "train-big")
MODES = ("best", "first-fit")


def main() -> int:
    started = time.monotonic()
    jobs = [interpret(yaml.safe_load((DEMO / "jobs" / f"{name}.yaml").read_text())) for name in JOBS]
    estimators = [LocalEstimator(member, [DEMO / f"{member}.yaml"], packing=mode) for mode in MODES for member in MEMBERS]
    print(f"starting {len(estimators)} estimators ({len(MEMBERS)} members x packing {', '.join(MODES)}) ...", flush=True)
    for est in estimators:
        est.start()
    try:
        wait_serving(estimators)
        rows = []
        for job in jobs:
            query = ComponentSetsQuery(job.components, job.namespace)
            for mode in MODES:
                answers = []
                for est in (e for e in estimators if e.packing == mode):
                    answer = ask_component_sets(Endpoint(est.member, est.address), query, job.object_key, 3.0)
                    answers.append(str(answer.value) if answer.value >= 0 else f"? ({answer.reason})")
                rows.append((job.name, mode, *answers))
    finally:
        for est in estimators:
            est.stop()
    header = ("job", "packing", *MEMBERS)
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    print("\nComplete component sets each member can host (MaxAvailableComponentSets over gRPC):\n")
    for row in [header, *rows]:
        print("  " + "  ".join(str(cell).ljust(w) for cell, w in zip(row, widths)))
    print("\ntrain-big needs 2 workers x 3 GPUs: member-b has 6 GPUs in total but only 2 per node,")
    print("so no node can hold a worker; member-c has 8 GPUs on one node and fits the whole job.")
    print(f"\n(done in {time.monotonic() - started:.1f}s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
