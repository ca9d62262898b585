"""The list/watch client's errors, in the three kinds its loop acts on (see kubeclient.py);
free of urllib3, so the loop, the kubeconfig loader and tests can name them without importing it."""

from __future__ import annotations

import json


class KubeConfigError(Exception):
    """The kubeconfig, --master or in-cluster configuration cannot be used."""


class ApiError(Exception):
    def __init__(self, message: str, status: int = 0, reason: str = ""):
        super().__init__(message)
        self.status = status
        self.reason = reason


class Gone(ApiError):
    """410: the resourceVersion or continue token is too old."""


class Unavailable(ApiError):
    """Unreachable, timed out, broken stream, 429 or 5xx: transient, retry with backoff."""


class Silent(Unavailable):
    """A watch neither ended nor delivered a byte within its timeoutSeconds plus a margin
    (the API server would have closed it by then): the connection is presumed dead, even if
    TCP never said so."""


def status_message(body: str | bytes | None) -> str:
    """The `message` of a metav1.Status body, or the body itself (shortened)."""
    if not body:
        return ""
    try:
        status = json.loads(body)
        if isinstance(status, dict) and status.get("message"):
            return str(status["message"])
    except (ValueError, TypeError):
        pass
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else str(body)
    return text[:200]
