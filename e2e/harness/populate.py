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
        for ns in namespaces:
            self.core.delete_collection_namespaced_pod(ns, grace_period_seconds=0)
            self.core.delete_collection_namespaced_resource_quota(ns)
            self.apps.delete_collection_namespaced_replica_set(ns)
            self.apps.delete_collection_namespaced_deployment(ns)
        self.core.delete_collection_node()

    def create_node(self, node: dict) -> None:
        body = {k: v for k, v in node.items() if k != "status"}
        self.core.create_node(body)
        self.core.patch_node_status(node["metadata"]["name"], {"status": node["status"]})

    def create_pod(self, pod: dict, owner: dict | None = None) -> None:
        body = copy.deepcopy({k: v for k, v in pod.items() if k != "status"})
        body["metadata"].pop("_owner", None)
        if owner is not None:
            body["metadata"]["ownerReferences"] = [owner]
        created = self.core.create_namespaced_pod(body["metadata"]["namespace"], body)
        status = pod.get("status")
        if status and status != {"phase": "Pending"}:
            self.core.patch_namespaced_pod_status(created.metadata.name, created.metadata.namespace, {"status": status})

    def apply(self, state: MemberState) -> None:
        # One at a time, in name order: the estimators keep nodes in the order the watch
        # delivered them and a dump lists them by name; first-fit depends on that order, so
        # the live answers and the snapshot-mode reference must see the same one.
        for node in sorted(state.nodes, key=lambda n: n["metadata"]["name"]):
            self.create_node(node)
        for quota in state.quotas:
            ns = quota["metadata"]["namespace"]
            self.core.create_namespaced_resource_quota(ns, {k: v for k, v in quota.items() if k != "status"})
            self.core.patch_namespaced_resource_quota_status(quota["metadata"]["name"], ns, {"status": quota["status"]})
        owners: dict[tuple[str, str], dict] = {}
        for deployment in state.deployments:
            ns = deployment["metadata"]["namespace"]
            body = {k: v for k, v in deployment.items() if not k.startswith("_")}
            created = self.apps.create_namespaced_deployment(ns, body)
            for rs in deployment["_replicasets"]:
                rs_body = copy.deepcopy(rs)
                rs_body["metadata"]["ownerReferences"] = [{
                    "apiVersion": "apps/v1", "kind": "Deployment", "name": created.metadata.name,
                    "uid": created.metadata.uid, "controller": True, "blockOwnerDeletion": True}]
                made = self.apps.create_namespaced_replica_set(ns, rs_body)
                owners[(ns, made.metadata.name)] = {
                    "apiVersion": "apps/v1", "kind": "ReplicaSet", "name": made.metadata.name,
                    "uid": made.metadata.uid, "controller": True, "blockOwnerDeletion": True}
        def create(pod: dict) -> None:
            meta = pod["metadata"]
            self.create_pod(pod, owners.get((meta["namespace"], meta["_owner"])) if "_owner" in meta else None)

        list(self.pool.map(create, state.pods))

    def dump(self, path: Path) -> int:
        """Everything the estimators read, as one v1 List file (the --snapshot format)."""
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
