"""Writes member states into the real apiserver through the official `kubernetes` client.

Objects are created as a user would (spec on create); what a kubelet or controller would
write (node allocatable, pod phase and conditions, quota hard/used) goes through the status
subresource, since no kubelet or controller manager runs.
"""

from __future__ import annotations

import copy
import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from kubernetes import client, config

from e2e.harness.members import NAMESPACES, MemberState

RAW = {"_preload_content": False}  # keep the server's JSON; skip the client's slow model decoding



class Populator:
    def __init__(self, kubeconfig: Path):
        configuration = client.Configuration()
        config.load_kube_config(str(kubeconfig), client_configuration=configuration)
        configuration.connection_pool_maxsize = 16
        self.api_client = client.ApiClient(configuration)
        self.pool = ThreadPoolExecutor(8)
        self.api_client.configuration.retries = 3
        self.core = client.CoreV1Api(self.api_client)
        self.apps = client.AppsV1Api(self.api_client)

    def ensure_namespaces(self, names=NAMESPACES) -> None:
        existing = {ns.metadata.name for ns in self.core.list_namespace().items}
        for name in names:
            if name not in existing:
                self.core.create_namespace({"metadata": {"name": name}})

    def clear(self, namespaces=NAMESPACES) -> None:
        # Independent collections, so deleted at once; responses are not decoded (the client's
        # model decoding of every deleted object costs more than the round trip here).
        calls = [lambda: self.core.delete_collection_node(**RAW)]
        for ns in namespaces:
            calls += [lambda ns=ns: self.core.delete_collection_namespaced_pod(ns, grace_period_seconds=0, **RAW),
                      lambda ns=ns: self.core.delete_collection_namespaced_resource_quota(ns, **RAW),
                      lambda ns=ns: self.apps.delete_collection_namespaced_replica_set(ns, **RAW),
                      lambda ns=ns: self.apps.delete_collection_namespaced_deployment(ns, **RAW)]
        for done in [self.pool.submit(call) for call in calls]:
            done.result()

    def create_node(self, node: dict) -> None:
        self.add_node(node)
        self.node_status(node)

    def add_node(self, node: dict) -> None:
        self.core.create_node({k: v for k, v in node.items() if k != "status"}, **RAW)

    def node_status(self, node: dict) -> None:
        self.core.patch_node_status(node["metadata"]["name"], {"status": node["status"]}, **RAW)

    def create_pod(self, pod: dict, owner: dict | None = None) -> None:
        body = copy.deepcopy({k: v for k, v in pod.items() if k != "status"})
        body["metadata"].pop("_owner", None)
        if owner is not None:
            body["metadata"]["ownerReferences"] = [owner]
        ns = body["metadata"]["namespace"]
        created = json.loads(self.core.create_namespaced_pod(ns, body, **RAW).data)
        status = pod.get("status")
        if status and status != {"phase": "Pending"}:
            self.core.patch_namespaced_pod_status(created["metadata"]["name"], ns, {"status": status}, **RAW)

    def apply(self, state: MemberState) -> None:
        # Node creations one at a time, in name order: the estimators keep nodes in the order
        # the watch delivered them and a dump lists them by name; first-fit depends on that
        # order, so the live answers and the snapshot-mode reference must see the same one.
        # Everything else (node status, quotas, workloads, pods) cannot change that order and
        # is written in parallel afterwards: the run is bound by apiserver round trips.
        nodes = sorted(state.nodes, key=lambda n: n["metadata"]["name"])
        for node in nodes:
            self.add_node(node)
        jobs = [self.pool.submit(self.node_status, node) for node in nodes]
        jobs += [self.pool.submit(self._quota, quota) for quota in state.quotas]
        owned: dict[tuple[str, str], list[dict]] = {}
        replicasets = {(d["metadata"]["namespace"], rs["metadata"]["name"])
                       for d in state.deployments for rs in d["_replicasets"]}
        for pod in state.pods:
            meta = pod["metadata"]
            if (meta["namespace"], meta.get("_owner")) in replicasets:
                owned.setdefault((meta["namespace"], meta["_owner"]), []).append(pod)
            else:
                jobs.append(self.pool.submit(self.create_pod, pod))
        chains = [self.pool.submit(self._deployment, d) for d in state.deployments]
        # Pods owned by a ReplicaSet name its uid, so they follow their chain, but all at once.
        for chain in chains:
            for key, owner in chain.result().items():
                jobs += [self.pool.submit(self.create_pod, pod, owner) for pod in owned.get(key, [])]
        for job in jobs:
            job.result()

    def _quota(self, quota: dict) -> None:
        ns = quota["metadata"]["namespace"]
        self.core.create_namespaced_resource_quota(ns, {k: v for k, v in quota.items() if k != "status"}, **RAW)
        self.core.patch_namespaced_resource_quota_status(quota["metadata"]["name"], ns, {"status": quota["status"]}, **RAW)

    def _deployment(self, deployment: dict) -> dict[tuple[str, str], dict]:
        """A Deployment and its ReplicaSets; the owner reference of each ReplicaSet's pods."""
        owners = {}
        ns = deployment["metadata"]["namespace"]
        body = {k: v for k, v in deployment.items() if not k.startswith("_")}
        created = json.loads(self.apps.create_namespaced_deployment(ns, body, **RAW).data)["metadata"]
        for rs in deployment["_replicasets"]:
            rs_body = copy.deepcopy(rs)
            rs_body["metadata"]["ownerReferences"] = [{
                "apiVersion": "apps/v1", "kind": "Deployment", "name": created["name"],
                "uid": created["uid"], "controller": True, "blockOwnerDeletion": True}]
            made = json.loads(self.apps.create_namespaced_replica_set(ns, rs_body, **RAW).data)["metadata"]
            owners[(ns, made["name"])] = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": made["name"],
                                          "uid": made["uid"], "controller": True, "blockOwnerDeletion": True}
        return owners

    def dump(self, path: Path) -> int:
        """Everything the estimators read, as one v1 List file (the --objects format)."""
        items = []
        for kind, api_version, lister in (
            ("Node", "v1", self.core.list_node), ("Pod", "v1", self.core.list_pod_for_all_namespaces),
            ("ResourceQuota", "v1", self.core.list_resource_quota_for_all_namespaces),
            ("ReplicaSet", "apps/v1", self.apps.list_replica_set_for_all_namespaces),
            ("Deployment", "apps/v1", self.apps.list_deployment_for_all_namespaces),
        ):
            # Raw JSON as the server sent it, not the client's model objects.
            for obj in json.loads(lister(_preload_content=False).data)["items"]:
                obj.setdefault("kind", kind)
                obj.setdefault("apiVersion", api_version)
                items.append(obj)
        path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
        return len(items)

    def close(self) -> None:
        self.pool.shutdown()
        self.api_client.close()
