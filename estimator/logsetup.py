"""Logging: klog-like verbosity (--v) and text or JSON lines on stderr."""

from __future__ import annotations

import json
import logging
import sys
import time

REQUEST_LOGGER = "estimator.requests"


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": record.getMessage(),
        }
        if record.exc_info:
            entry["error"] = self.formatException(record.exc_info)
        return json.dumps(entry)


def configure(log_format: str = "text", verbosity: int = 0) -> None:
    """--v 0/1: startup, reloads, refusals, errors; --v >= 2: one line per estimate;
    >= 4: debug, including the placement behind every component-set answer."""
    handler = logging.StreamHandler(sys.stderr)
    if log_format == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname).1s %(name)s] %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.DEBUG if verbosity >= 4 else logging.INFO)
    request_level = logging.DEBUG if verbosity >= 4 else logging.INFO if verbosity >= 2 else logging.WARNING
    logging.getLogger(REQUEST_LOGGER).setLevel(request_level)
