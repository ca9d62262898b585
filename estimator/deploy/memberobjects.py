"""The member side of `karmada-estimator manifests`: the objects for each member cluster itself:
a namespace of our own, a ServiceAccount with a long-lived token Secret (the credential inside
the member kubeconfig the host-side estimator uses), and a ClusterRole allowed get/list/watch on
nodes, pods, resourcequotas, replicasets, deployments and DRA objects, nothing more.
"""

from __future__ import annotations

from typing import Any

from estimator.deploy.options import COMPONENT, Options

MEMBER_ACCOUNT = COMPONENT
MEMBER_TOKEN_SECRET = f"{COMPONENT}-token"
# What the estimator reads from the member: exactly these, read-only.
MEMBER_RULES = (
    {"apiGroups": [""], "resources": ["nodes", "pods", "resourcequotas"], "verbs": ["get", "list", "watch"]},
    {"apiGroups": ["apps"], "resources": ["replicasets", "deployments"], "verbs": ["get", "list", "watch"]},
    # GPUs served through Dynamic Resource Allocation (docs/semantics.md): without these the
    # estimator still runs, counting no DRA-served devices, and says so in its log.
    {
        "apiGroups": ["resource.k8s.io"],
        "resources": ["deviceclasses", "resourceslices", "resourceclaims"],
        "verbs": ["get", "list", "watch"],
    },
)


def member_labels(options: Options) -> dict[str, str]:
    return {
        "app.kubernetes.io/name": COMPONENT,
        "app.kubernetes.io/part-of": "karmada",
        "cluster": options.cluster_name,
    }


def member_objects(options: Options) -> list[dict]:
    def meta(name: str, **extra: Any) -> dict:
        return {"name": name, "labels": member_labels(options), **extra}

    in_namespace = {"namespace": options.member_namespace}
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": meta(options.member_namespace)},
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": meta(MEMBER_ACCOUNT, **in_namespace),
            "automountServiceAccountToken": False,
        },
        {
            # A long-lived token for the kubeconfig the host-side estimator uses.
            "apiVersion": "v1",
            "kind": "Secret",
            "type": "kubernetes.io/service-account-token",
            "metadata": meta(
                MEMBER_TOKEN_SECRET, **in_namespace, annotations={"kubernetes.io/service-account.name": MEMBER_ACCOUNT}
            ),
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRole",
            "metadata": meta(COMPONENT),
            "rules": [{key: list(values) for key, values in rule.items()} for rule in MEMBER_RULES],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": meta(COMPONENT),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": COMPONENT},
            "subjects": [{"kind": "ServiceAccount", "name": MEMBER_ACCOUNT, "namespace": options.member_namespace}],
        },
    ]
