"""Karmada's own estimator client (estclient, built on pkg/estimator/client) against our server.

The same calls go to our estimator over plaintext and over mutual TLS with Karmada's TLS
options; every call must succeed and carry exactly the number our server gives over direct
gRPC for the same (static) state. The same calls also go to Karmada's estimator through the
same client, as a control: the client path must be neutral for it too.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from estimator.core import model
from e2e.harness.estimators import CLUSTER, Running
from e2e.harness.members import MemberState
from scheduler_client.wire import quantity_string


def _claim(claim: model.NodeClaim) -> dict | None:
    if claim.is_empty:
        return None
    out: dict = {}
    if claim.node_selector:
        out["nodeSelector"] = dict(claim.node_selector)
    if claim.affinity_terms is not None:
        out["hardNodeAffinity"] = {"nodeSelectorTerms": [{
            "matchExpressions": [{"key": r.key, "operator": r.operator, "values": list(r.values)} for r in t.match_expressions],
            "matchFields": [{"key": r.key, "operator": r.operator, "values": list(r.values)} for r in t.match_fields],
        } for t in claim.affinity_terms]}
    if claim.tolerations:
        out["tolerations"] = [{k: v for k, v in (("key", t.key), ("operator", t.operator), ("value", t.value),
                                                 ("effect", t.effect)) if v} for t in claim.tolerations]
    return out


def _requirements(shape: model.ReplicaShape, with_namespace: bool) -> dict:
    out: dict = {"resourceRequest": {name: quantity_string(name, amount) for name, amount in shape.requests}}
    claim = _claim(shape.claim)
    if claim:
        out["nodeClaim"] = claim
    if shape.priority_class:
        out["priorityClassName"] = shape.priority_class
    if with_namespace and shape.namespace:
        out["namespace"] = shape.namespace
    return out


def calls_for(state: MemberState) -> list[tuple[dict, str, object]]:
    """(estclient call, kind, model query) for every request of a state."""
    calls = []
    for i, q in enumerate(state.sets_queries):
        calls.append(({"id": f"sets-{i}", "method": "MaxAvailableComponentSets", "clusters": [CLUSTER],
                       "namespace": q.namespace,
                       "components": [{"name": c.name, "replicas": c.replicas,
                                       "replicaRequirements": _requirements(c.shape, False)} for c in q.components]},
                      "sets", q))
    for i, q in enumerate(state.replicas_queries):
        call = {"id": f"replicas-{i}", "method": "MaxAvailableReplicas", "clusters": [CLUSTER]}
        if q.shape is not None:
            call["replicaRequirements"] = _requirements(q.shape, True)
        calls.append((call, "replicas", q))
    for i, r in enumerate(state.workload_refs):
        threshold = max(r.threshold_seconds, 0.001)  # the client takes a positive duration
        ref = model.WorkloadRef(r.api_version, r.kind, r.namespace, r.name, threshold)
        calls.append(({"id": f"unschedulable-{i}", "method": "GetUnschedulableReplicas", "clusters": [CLUSTER],
                       "resource": {"apiVersion": r.api_version, "kind": r.kind, "namespace": r.namespace, "name": r.name},
                       "threshold": f"{int(threshold * 1000)}ms"}, "unschedulable", ref))
    return calls


def run_estclient(binary: Path, address: str, calls: list[dict], tls: dict | None = None, timeout: str = "10s") -> dict:
    request = {"estimators": {CLUSTER: {"address": address}}, "tls": tls or {}, "timeout": timeout, "repeat": 1,
               "calls": calls}
    done = subprocess.run([str(binary)], input=json.dumps(request).encode(), capture_output=True, timeout=300)
    if done.returncode != 0:
        raise RuntimeError(f"estclient exited {done.returncode}: {done.stderr.decode(errors='replace')[-2000:]}")
    return json.loads(done.stdout)


@dataclass
class ClientTally:
    calls: int = 0
    ok: int = 0
    failures: list[str] = field(default_factory=list)
    control_failures: list[str] = field(default_factory=list)


def _direct(est: Running, kind: str, query) -> int | None:
    return {"sets": est.sets, "replicas": est.replicas, "unschedulable": est.unschedulable}[kind](query).value


def mtls_estimator(kubeconfig: Path, work: Path):
    """Our first-fit estimator serving mutual TLS, and the TLS options estclient uses for it."""
    import grpc

    from e2e.harness import pki
    from e2e.harness.estimators import ours

    directory = work / "grpc-pki"
    directory.mkdir(exist_ok=True)
    ca = pki.CA(directory, "estimator-ca")
    server_cert, server_key = ca.issue("estimator-server", "karmada-scheduler-estimator",
                                       server_names=("127.0.0.1", "localhost"))
    client_cert, client_key = ca.issue("scheduler-client", "karmada-scheduler", client=True)
    credentials = grpc.ssl_channel_credentials(ca.cert_path.read_bytes(), client_key.read_bytes(),
                                               client_cert.read_bytes())
    est = ours(kubeconfig, work, "first-fit", name="ours-first-fit-mtls", credentials=credentials, extra=[
        "--grpc-auth-cert-file", server_cert, "--grpc-auth-key-file", server_key, "--grpc-client-ca-file", ca.cert_path])
    tls = {"caFile": str(ca.cert_path), "certFile": str(client_cert), "keyFile": str(client_key)}
    return est, tls


def check_state(binary: Path, state: MemberState, targets: list[tuple[str, Running, dict | None]],
                tally: ClientTally, control: Running | None = None) -> None:
    """Through estclient to each target; each answer must equal that server's direct gRPC answer."""
    calls = calls_for(state)
    for label, est, tls in targets + ([("karmada (control)", control, None)] if control else []):
        report = run_estclient(binary, f"127.0.0.1:{est.port}", [c for c, _, _ in calls], tls)
        connection = report.get("connections", {}).get(CLUSTER, {})
        counted = control is None or est is not control
        for (call, kind, query), result in zip(calls, report.get("results", [])):
            answers = result.get("clusters") or [{}]
            got, error = answers[0].get("value"), answers[0].get("error") or result.get("error", "")
            want = _direct(est, kind, query)
            # An error must come through as an error (an absent workload), a number as itself.
            carried = (not error and got is not None and got == want) or (want is None and bool(error))
            good = bool(connection.get("connected")) and carried
            if counted:
                tally.calls += 1
                tally.ok += bool(good)
            if not good:
                (tally.failures if counted else tally.control_failures).append(f"seed {state.seed} {label} {call['id']}: via Karmada's client {got} "
                                      f"{error or ''} {connection.get('error', '')}; direct gRPC {want}")
