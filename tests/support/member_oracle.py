"""Independent answers for the demo member-a, the oracle of tests/service/test_fuzz.py.

Written from docs/semantics.md, not from the estimator: the member's YAML is read with
PyYAML and a small quantity reader of its own, node eligibility is checked with plain
comparisons, and packing goes through tests/support/naive.py (first-fit for assumed workloads,
exhaustive search for component sets). Nothing from estimator.core.snapshot, estimate, filters,
plugins or kernels is used. Requests arrive as estimator/core/model.py queries; decoding the wire
is convert.py's job, which has its own tests against Karmada's encodings.

member-a is one node without taints or cordon, and no ResourceQuotas; the reader refuses a
file that stops being so, rather than answering it wrongly.
"""

from __future__ import annotations

import datetime
import re
from pathlib import Path

import yaml

from estimator.core import model
from tests.support import naive

MAX_INT32 = 2**31 - 1
_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}
_INT64 = re.compile(r"[+-]?[0-9]+")


def _amount(name: str, text) -> int:
    """The quantity forms member-a's file uses, in model units (cpu in millicores)."""
    text = str(text)
    milli = name == "cpu"
    if text.endswith("m"):
        value = int(text[:-1])
        return value if milli else -(-value // 1000)
    suffix = text[-2:] if text[-2:] in _BINARY else ""
    value = int(text[: len(text) - len(suffix)]) * _BINARY.get(suffix, 1)
    return value * 1000 if milli else value


def _items(path: Path) -> list[dict]:
    items = []
    for document in yaml.safe_load_all(path.read_text()):
        if document:
            items.extend(document["items"] if document.get("kind", "").endswith("List") else [document])
    return items


class Member:
    def __init__(self, path: Path):
        items = _items(path)
        (node,) = [i for i in items if i["kind"] == "Node"]
        assert not node.get("spec", {}).get("taints") and not node.get("spec", {}).get("unschedulable"), \
            "the oracle only knows an untainted, uncordoned node"
        assert not [i for i in items if i["kind"] == "ResourceQuota"], "the oracle does not apply quotas"
        self.name = node["metadata"]["name"]
        self.labels: dict[str, str] = node["metadata"].get("labels", {})
        self.free = {name: _amount(name, q) for name, q in node["status"]["allocatable"].items()}
        pods = [i for i in items if i["kind"] == "Pod"]
        for pod in pods:
            if pod["spec"].get("nodeName") != self.name or pod["status"].get("phase") in ("Succeeded", "Failed"):
                continue
            assert not pod["spec"].get("initContainers") and not pod["spec"].get("overhead"), "not modelled here"
            for container in pod["spec"]["containers"]:
                for name, q in ((container.get("resources") or {}).get("requests") or {}).items():
                    self.free[name] = max(self.free.get(name, 0) - _amount(name, q), 0)
            self.free["pods"] -= 1
        self.pending = [(pod["metadata"]["namespace"], [o["name"] for o in pod["metadata"].get("ownerReferences", [])],
                         condition["lastTransitionTime"])
                        for pod in pods for condition in pod["status"].get("conditions", [])
                        if condition["type"] == "PodScheduled" and condition["status"] == "False"
                        and condition.get("reason") == "Unschedulable"]

    # --- which replicas may use the node --------------------------------------------------

    def _holds(self, requirement: model.NodeSelectorRequirement, value: str | None) -> bool:
        op, values = requirement.operator, requirement.values
        if op == "In":
            return value is not None and value in values
        if op == "NotIn":
            return value is None or value not in values
        if op == "Exists":
            return value is not None
        if op == "DoesNotExist":
            return value is None
        if value is None or not _INT64.fullmatch(value):
            return False  # Gt / Lt need an integer label
        return int(value) > int(values[0]) if op == "Gt" else int(value) < int(values[0])

    def eligible(self, claim: model.NodeClaim) -> bool:
        if any(self.labels.get(key) != value for key, value in claim.node_selector):
            return False
        if claim.affinity_terms is None:
            return True
        fields = {"metadata.name": self.name}
        return any(
            (term.match_expressions or term.match_fields)
            and all(self._holds(r, self.labels.get(r.key)) for r in term.match_expressions)
            and all(self._holds(r, fields.get(r.key)) for r in term.match_fields)
            for term in claim.affinity_terms
        )  # no taints here, so tolerations never decide

    # --- answers ---------------------------------------------------------------------------

    def _columns(self, shapes) -> list[str]:
        names = set(self.free) - {"pods"}
        for shape in shapes:
            names.update(name for name, _ in shape.requests)
        return sorted(names) + ["pods"]

    @staticmethod
    def _request(columns: list[str], shape: model.ReplicaShape) -> list[int]:
        return [1 if name == "pods" else shape.request(name) for name in columns]

    def _after_assumed(self, columns: list[str], assumed) -> list[int]:
        """Each assumed workload placed once with first-fit; what it took is kept."""
        available = [self.free.get(name, 0) for name in columns]
        for workload in assumed:
            if not workload.components:
                continue
            _, _, left = naive.first_fit(
                [available], [self._request(columns, c.shape) for c in workload.components],
                [c.replicas for c in workload.components],
                [[self.eligible(c.shape.claim)] for c in workload.components], 1)
            available = left[0]
        return available

    def replicas(self, query: model.ReplicasQuery) -> int:
        shapes = [c.shape for w in query.assumed for c in w.components]
        shape = query.shape or model.ReplicaShape()
        columns = self._columns([*shapes, shape])
        available = self._after_assumed(columns, query.assumed)
        fit = naive.node_fit(available, self._request(columns, shape)) if self.eligible(shape.claim) else 0
        return min(fit, MAX_INT32)

    def component_sets(self, query: model.ComponentSetsQuery) -> int:
        if not query.components or all(c.replicas == 0 for c in query.components):
            return MAX_INT32
        shapes = [c.shape for c in query.components] + [c.shape for w in query.assumed for c in w.components]
        columns = self._columns(shapes)
        available = self._after_assumed(columns, query.assumed)
        sets, _ = naive.exhaustive([available], [self._request(columns, c.shape) for c in query.components],
                                   [c.replicas for c in query.components],
                                   [[self.eligible(c.shape.claim)] for c in query.components], MAX_INT32)
        return sets

    def unschedulable(self, ref: model.WorkloadRef, now: datetime.datetime) -> int:
        """Pods of the workload's ReplicaSet stuck longer than the threshold. member-a's only
        unschedulable pods belong to Deployment web/frontend, so any other workload has 0."""
        if (ref.api_version, ref.kind, ref.namespace, ref.name) != ("apps/v1", "Deployment", "web", "frontend"):
            return 0
        threshold = datetime.timedelta(seconds=max(ref.threshold_seconds, 0.0))
        return sum(1 for namespace, owners, since in self.pending
                   if namespace == "web" and any(o.startswith("frontend-") for o in owners)
                   and now - datetime.datetime.fromisoformat(since.replace("Z", "+00:00")) > threshold)
