"""How long one full garbage collection takes in a fresh process holding a member's cache.

    python -m benchmarks.gcpause FILE   ->   {"baseline_ms": ..., "loaded_ms": ..., ...} on stdout

Run in its own interpreter (like the server: estimator modules imported, kernels warm, the
file loaded into a ClusterCache and snapshotted) so the harness's own objects do not count.
A request that triggers a generation-2 collection waits this long.
"""

from __future__ import annotations

import gc
import json
import sys
import time


def _full_collection_ms() -> float:
    gc.collect()
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        gc.collect()
        best = min(best, (time.perf_counter() - started) * 1e3)
    return best


def main(argv: list[str]) -> int:
    from estimator import kernels
    from estimator.cluster.files import load_object_files

    kernels.warmup()
    baseline = _full_collection_ms()
    cache = load_object_files(argv, state_cache=None)  # every record, as a watch's list builds
    snapshot = cache.snapshot()
    loaded = _full_collection_ms()
    out = {"baseline_ms": baseline, "loaded_ms": loaded, "tracked_objects": len(gc.get_objects()),
           "nodes": snapshot.num_nodes}
    gc.freeze()
    out["after_freeze_ms"] = _full_collection_ms()
    json.dump(out, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
