"""`python -m e2e.harness.karmadacp --keep` / `--down`: a local Karmada left running for the user.

--keep starts a detached server process (`--serve`) that brings up one stack (karmadacp.Stack)
with our estimators (or Karmada's: --estimators karmada), writes `state.json` in the work
directory once it is ready, runs the training operator's loop for as long as it lives, and
stops every process of the stack on SIGTERM. --keep waits for that file and prints how to use
it; --down sends the SIGTERM and waits.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import yaml

from e2e.harness import karmadacp_workload as wl

STATE = "state.json"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def _ours(pid: int, work: Path) -> bool:
    try:
        return str(work.resolve()) in Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return False


def _state(work: Path) -> dict | None:
    path = work / STATE
    return json.loads(path.read_text()) if path.exists() else None


def keep(bin_dir: Path, work: Path, versions: dict, estimators: str = "ours") -> int:
    state = _state(work)
    if state and _alive(state["server"]):
        print(f"karmada-local: already running (server pid {state['server']}); kubeconfig {state['kubeconfig']}")
        return 0
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    log = open(work / "server.log", "ab")
    argv = [sys.executable, "-m", "e2e.harness.karmadacp", "--serve", str(work), "--bin-dir", str(bin_dir),
            "--estimators", estimators]
    server = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                              start_new_session=True, cwd=Path(__file__).resolve().parents[2])
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        state = _state(work)
        if state:
            break
        if server.poll() is not None:
            print((work / "server.log").read_text(errors="replace")[-3000:])
            print(f"karmada-local: the server exited ({server.returncode}) before the control plane was ready")
            return 2
        time.sleep(1)
    else:
        print("karmada-local: not ready within 10 minutes; see", work / "server.log")
        return 2
    kc = state["kubeconfig"]
    whose = "our" if estimators == "ours" else "Karmada's"
    print(f"karmada-local: Karmada {versions['KARMADA_VERSION']} is up with members "
          f"{', '.join(state['members'])} and {whose} estimators (server pid {state['server']}).")
    print(f"  export KUBECONFIG={kc}")
    print("  kubectl get clusters")
    print(f"  kubectl apply -f {work / 'examples' / 'train-big.yaml'}   # a PyTorchJob and its one-member policy")
    print("  kubectl -n ml-team get resourcebindings -o wide")
    for name, member_kc in state["members"].items():
        print(f"  kubectl --kubeconfig {member_kc} -n ml-team get pods -o wide   # {name}")
    print("  make karmada-local-down   # or: python -m e2e.harness.karmadacp --down")
    return 0


def serve(work: Path, bin_dir: Path, versions: dict, estimators: str = "ours") -> int:
    """The kept control plane's owner: up, ready file, operator loop, down on SIGTERM."""
    from e2e.harness import procs
    from e2e.harness.karmadacp import Stack

    procs.install_signal_handlers()
    stack = Stack("local", estimators, bin_dir, work, versions, log=lambda m: print(m, flush=True))
    try:
        stack.start()
        _examples(work / "examples")
        members = {name: str(bed.kubeconfig) for name, bed in stack.members.items()}
        partial = work / f"{STATE}.partial"  # renamed into place: --keep never reads half a file
        partial.write_text(json.dumps({"server": os.getpid(), "kubeconfig": str(stack.kubeconfig),
                                       "members": members, "pids": stack.pids()}, indent=1))
        partial.rename(work / STATE)
        while True:
            time.sleep(3600)
    finally:
        stack.stop()
        (work / STATE).unlink(missing_ok=True)


def _examples(directory: Path) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ml-team"}}
    docs = [ns, wl.propagation_policy("train", "ml-team"), wl.pytorchjob("train-big", "ml-team", wl.BIG)]
    (directory / "train-big.yaml").write_text(yaml.safe_dump_all(docs, sort_keys=False))


def down(work: Path) -> int:
    state = _state(work)
    if not state:
        print(f"karmada-local: nothing kept in {work}")
        return 0
    server = state["server"]
    if _alive(server):
        os.kill(server, signal.SIGTERM)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and _alive(server):
            time.sleep(0.3)
    for pid in state.get("pids", []):  # what a server that died uncleanly left: ours if it names the work dir
        if _ours(pid, work):
            try:
                os.killpg(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
    (work / STATE).unlink(missing_ok=True)
    print(f"karmada-local: stopped (its files stay in {work})")
    return 0
