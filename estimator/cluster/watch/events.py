"""What the list/watch loop makes of the API server's bytes: JSON decoded (`loads`), an
object's name for the logs (`object_name`), an ERROR watch event as the error it stands for
(`status_error`), and the errors a malformed object raises (`MALFORMED`). Used by
estimator.cluster.watch.reflector.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import orjson

from estimator.cluster.watch.kubeclient import ApiError, Gone, Unavailable

# What a malformed object usually raises from the cache's parsers (QuantityError is a
# ValueError); anything else a parser raises is still that one object's problem and is
# logged with its traceback, but never stops the stream.
MALFORMED = (ValueError, TypeError, AttributeError, KeyError)


def loads(data: bytes) -> Any:
    """JSON -> Python: orjson (~2x the stdlib on API objects), the stdlib for anything orjson
    refuses that JSON allows (e.g. integers beyond 64 bits); ValueError if neither parses."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data)


class EventError(Unavailable):
    """A retryable ERROR event: backs off even after events were delivered (a server
    that keeps sending them must not drive a reconnect loop)."""


def object_name(obj: Any, namespaced: bool) -> str:
    meta = obj.get("metadata") if isinstance(obj, Mapping) else None
    meta = meta if isinstance(meta, Mapping) else {}
    return f"{meta.get('namespace')}/{meta.get('name')}" if namespaced else str(meta.get("name"))


def status_error(kind: str, status: Any) -> ApiError:
    """An ERROR watch event carries a metav1.Status: 410 means the resourceVersion is gone."""
    status = status if isinstance(status, Mapping) else {}
    try:
        code = int(status.get("code") or 0)
    except (TypeError, ValueError):
        code = 0
    message = f"watch {kind}: ERROR event {code} {status.get('reason') or ''}: {status.get('message') or ''}"
    if code == 410 or status.get("reason") in ("Expired", "Gone"):
        return Gone(message, 410, str(status.get("reason") or ""))
    if code in (0, 429) or code >= 500:
        return EventError(message, code, str(status.get("reason") or ""))
    return ApiError(message, code, str(status.get("reason") or ""))
