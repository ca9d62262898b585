"""The fake API server's storage vocabulary: kinds and paths, stored objects and events, keys,
field selectors and the JSON it writes (shared by the store and its HTTP handler)."""

from __future__ import annotations

import json
from dataclasses import dataclass


# path -> (kind, apiVersion, namespaced)
RESOURCES = {
    "/api/v1/nodes": ("Node", "v1", False),
    "/api/v1/pods": ("Pod", "v1", True),
    "/api/v1/resourcequotas": ("ResourceQuota", "v1", True),
    "/apis/apps/v1/replicasets": ("ReplicaSet", "apps/v1", True),
    "/apis/apps/v1/deployments": ("Deployment", "apps/v1", True),
    "/apis/resource.k8s.io/v1/deviceclasses": ("DeviceClass", "resource.k8s.io/v1", False),
    "/apis/resource.k8s.io/v1/resourceslices": ("ResourceSlice", "resource.k8s.io/v1", False),
    "/apis/resource.k8s.io/v1/resourceclaims": ("ResourceClaim", "resource.k8s.io/v1", True),
}
KIND_INFO = {kind: (path, api_version, namespaced) for path, (kind, api_version, namespaced) in RESOURCES.items()}
_FIRST_RV = 1000


@dataclass
class _Stored:
    rv: int
    data: bytes  # the object's JSON, metadata.resourceVersion included
    fields: dict  # values a field selector can test


@dataclass
class _Event:
    rv: int
    kind: str
    type: str  # ADDED, MODIFIED, DELETED
    key: str
    data: bytes  # the new state (for DELETED: the last state, at the deletion's rv)
    fields: dict
    old: _Stored | None  # the state before (None for ADDED)


def _key(kind: str, obj: dict) -> str:
    meta = obj.get("metadata") or {}
    name = meta.get("name")
    if not name:
        raise ValueError("metadata.name is required")
    return f"{meta.get('namespace') or 'default'}/{name}" if KIND_INFO[kind][2] else name


def _fields(kind: str, obj: dict) -> dict:
    meta = obj.get("metadata") or {}
    fields = {"metadata.name": meta.get("name", ""), "metadata.namespace": meta.get("namespace", "")}
    if kind == "Pod":
        fields["status.phase"] = (obj.get("status") or {}).get("phase", "")
        fields["spec.nodeName"] = (obj.get("spec") or {}).get("nodeName", "")
    return fields


def _parse_selector(text: str, kind: str) -> list[tuple[str, bool, str]]:
    """'a=b,c!=d' -> [(field, equal?, value)]; ValueError for a field the kind cannot select on."""
    terms = []
    for term in filter(None, (t.strip() for t in text.split(","))):
        if "!=" in term:
            field, value = term.split("!=", 1)
            equal = False
        elif "==" in term:
            field, value = term.split("==", 1)
            equal = True
        elif "=" in term:
            field, value = term.split("=", 1)
            equal = True
        else:
            raise ValueError(f"invalid field selector term {term!r}")
        allowed = {"metadata.name", "metadata.namespace"} | ({"status.phase", "spec.nodeName"} if kind == "Pod" else set())
        if field not in allowed:
            raise ValueError(f'field label not supported: {field}')
        terms.append((field, equal, value))
    return terms


def _matches(terms, fields: dict | None) -> bool:
    if fields is None:
        return False
    return all((fields.get(field, "") == value) == equal for field, equal, value in terms)


def _with_rv(data: bytes, rv: int, old_rv: int | None = None) -> bytes:
    if old_rv is not None:
        old, new = b'"resourceVersion":"%d"' % old_rv, b'"resourceVersion":"%d"' % rv
        if data.count(old) == 1:
            return data.replace(old, new)
    obj = json.loads(data)
    obj.setdefault("metadata", {})["resourceVersion"] = str(rv)
    return json.dumps(obj, separators=(",", ":")).encode()


def _status(code: int, reason: str, message: str) -> bytes:
    return json.dumps(
        {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure", "message": message,
         "reason": reason, "code": code},
        separators=(",", ":"),
    ).encode()
