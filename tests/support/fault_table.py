"""Fault table of the live cache against the fake API server (tests/support/fakekube.py).

    .venv/bin/python -m tests.support.fault_table            # every fault, production timings (~3 min)
    .venv/bin/python -m tests.support.fault_table --only hostile,token

Each fault runs on a fresh fake member and a WatchClusterState with the production
options (backoff 0.8 s doubling to 30 s, watches asking for timeoutSeconds 30-45 s and
presumed dead 5 s past it, credentials checked every 60 s); the fake sends bookmarks every
60 s and 2 s before a watch's deadline, as a kube-apiserver's watch cache does. It prints the
Markdown table of docs/operations.md, one row per fault: how long until the estimator noticed (a failure counted, a status
change), how long until its snapshot equalled a fresh list of the final objects, and
whether it did. Times are measured from the moment the fault was injected (for a restart:
from the moment the server came back, as well as from when it went down).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import threading
import time
from pathlib import Path

# Run from the repository root with `python -m tests.support.fault_table`: the test
# modules it reuses are imported by their package names.
from estimator.cluster.watch import ReflectorOptions, WatchClusterState
from estimator.cluster.watch.kubeclient import KubeClient
from tests.cluster.test_watch import small_cluster
from tests.cluster.test_watch_credentials import Credentials
from tests.cluster.test_watch_deadlink import Relay
from tests.cluster.test_watch_hostile import hostile_pod
from tests.support.fakekube import FakeKube
from tests.support.kubeobjects import pod_object, reference_cache, state_view

BOOKMARK_INTERVAL = 60.0
POLL = 0.05


def _failures(state: WatchClusterState) -> int:
    return sum(sum(r.errors.values()) + r.malformed + r.saturated + r.relists_gone for r in state.reflectors.values())


class Run:
    def __init__(self, fake: FakeKube, state: WatchClusterState):
        self.fake, self.state = fake, state

    def measure(self, inject, limit: float = 240.0, change=None) -> tuple[float | None, float | None, bool, float]:
        """(detected after, converged after, equal, measured from) in seconds since inject()."""
        before = _failures(self.state)
        t0 = time.monotonic()
        base = inject() or 0.0  # a fault may report a later reference point (server back up)
        if change is not None:
            change()
        detected = converged = None
        expected = state_view(reference_cache(self.fake).snapshot())
        while time.monotonic() - t0 < limit:
            now = time.monotonic() - t0
            if detected is None and _failures(self.state) > before:
                detected = now
            snapshot = self.state.snapshot()
            if snapshot is not None and state_view(snapshot) == expected:
                converged = now
                break
            time.sleep(POLL)
        return detected, converged, converged is not None, base


def _state(kubeconfig: Path, client: KubeClient | None = None) -> WatchClusterState:
    state = WatchClusterState(kubeconfig=str(kubeconfig), client=client, qps=20, burst=30,
                              options=ReflectorOptions(), freeze_gc=False)
    state.start()
    deadline = time.monotonic() + 60
    while not state.synced() and time.monotonic() < deadline:
        time.sleep(POLL)
    return state


def _change(fake: FakeKube, name: str):
    return lambda: fake.put(pod_object("shop", name, node="n1", cpu="1"))


def fault_kill(tmp: Path, compact: bool):
    fake = FakeKube(bookmark_interval=BOOKMARK_INTERVAL).start()
    small_cluster(fake)
    state = _state(fake.kubeconfig(tmp))
    run = Run(fake, state)

    def inject():
        fake.go_down()
        fake.put(pod_object("shop", "while-down", node="n2", cpu="1"))
        fake.delete("Pod", "p1", "shop")
        threading.Timer(10.0, fake.come_up, kwargs={"compact": compact}).start()
        return 10.0

    try:
        return run.measure(inject)
    finally:
        state.stop()
        fake.stop()


def fault_compaction(tmp: Path):
    fake = FakeKube(bookmark_interval=BOOKMARK_INTERVAL).start()
    small_cluster(fake)
    state = _state(fake.kubeconfig(tmp))
    run = Run(fake, state)

    def inject():
        fake.pause_watches()
        fake.delete("Pod", "p2", "shop")
        fake.put(pod_object("shop", "behind", node="n3", cpu="1"))
        fake.compact()
        fake.resume_watches()

    try:
        return run.measure(inject)
    finally:
        state.stop()
        fake.stop()


def fault_dead_link(tmp: Path):
    fake = FakeKube(bookmark_interval=BOOKMARK_INTERVAL).start()
    small_cluster(fake)
    relay = Relay(fake.port)
    config = json.loads(fake.kubeconfig(tmp).read_text())
    config["clusters"][0]["cluster"]["server"] = f"http://127.0.0.1:{relay.port}"
    path = tmp / "relay.kubeconfig"
    path.write_text(json.dumps(config))
    state = _state(path)
    run = Run(fake, state)
    try:
        return run.measure(relay.silence, change=_change(fake, "after-silence"))
    finally:
        state.stop()
        relay.close()
        fake.stop()


def fault_hostile(tmp: Path):
    fake = FakeKube(bookmark_interval=BOOKMARK_INTERVAL).start()
    small_cluster(fake)
    state = _state(fake.kubeconfig(tmp))
    run = Run(fake, state)

    def inject():
        fake.put(hostile_pod("greedy", node="n0"))
        fake.put(pod_object("shop", "next", node="n1", cpu="2"))

    try:
        return run.measure(inject)
    finally:
        state.stop()
        fake.stop()


def fault_credentials(tmp: Path, certificates: bool):
    fake = FakeKube(bookmark_interval=BOOKMARK_INTERVAL)
    credentials = Credentials(tmp)
    credentials.issue(fake, 1)
    fake.start()
    small_cluster(fake)
    kubeconfig = fake.kubeconfig(tmp, token_file=credentials.token_file, ca_file=credentials.ca_file,
                                 cert_file=credentials.cert_file, key_file=credentials.key_file)
    state = _state(kubeconfig, KubeClient.from_flags(str(kubeconfig)))
    run = Run(fake, state)

    def inject():
        if certificates:
            credentials.issue(fake, 2)  # new server CA, client CA and certificate, and token
        else:
            fake.token = "token-rotated"
            credentials.token_file.write_text("token-rotated\n")
        fake.drop_connections()

    try:
        return run.measure(inject, change=_change(fake, "after-rotation"))
    finally:
        state.stop()
        fake.stop()


FAULTS = {
    "kill": ("API server killed (kill -9), back after 10 s with its history", lambda t: fault_kill(t, False)),
    "kill-compacted": ("API server killed, back after 10 s without history (410 on resume)",
                       lambda t: fault_kill(t, True)),
    "compaction": ("watch overtaken by compaction (410 Gone)", fault_compaction),
    "dead-link": ("link silenced without FIN/RST (relay; TCP still acknowledges)", fault_dead_link),
    "hostile": ("hostile pod (2 x ephemeral-storage 8E) then a normal pod", fault_hostile),
    "token": ("bearer token rotated (tokenFile), connections cut", lambda t: fault_credentials(t, False)),
    "certs": ("server CA, client CA, client certificate and token rotated", lambda t: fault_credentials(t, True)),
}


def _seconds(value) -> str:
    return "never" if value is None else f"{value:.1f} s"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", default="", help="comma-separated fault names: " + ", ".join(FAULTS))
    args = parser.parse_args()
    names = [n for n in args.only.split(",") if n] or list(FAULTS)
    print("| fault | API | detected after | converged after | answers equal a fresh list "
          "| answers equal Karmada's estimator |")
    print("|---|---|---|---|---|---|")
    for name in names:
        label, run = FAULTS[name]
        with tempfile.TemporaryDirectory() as directory:
            detected, converged, equal, base = run(Path(directory))
        extra = f" ({converged - base:.1f} s after it came back)" if base and converged is not None else ""
        print(f"| {label} | fake | {_seconds(detected)} | {_seconds(converged)}{extra} | {'yes' if equal else 'no'} "
              "| not measured (no Karmada estimator on the fake API) |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
