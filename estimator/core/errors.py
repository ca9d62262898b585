"""Errors the estimate path raises; the servicer maps each to one gRPC status code."""

from __future__ import annotations


class EstimatorError(Exception):
    """Base class: every error a request can cause."""


class InvalidRequest(EstimatorError):
    """Malformed or out-of-range input (gRPC INVALID_ARGUMENT). Names the offending field."""

    def __init__(self, field: str, message: str):
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class NotFound(EstimatorError):
    """The referenced workload is not in this member's cache (gRPC NOT_FOUND)."""


class Unsupported(EstimatorError):
    """A workload kind this estimator cannot answer for (gRPC UNIMPLEMENTED)."""


class NotReady(EstimatorError):
    """No cluster state loaded yet (gRPC UNAVAILABLE)."""


class StateLoadError(Exception):
    """Cluster state that cannot be loaded (an object file, a kubeconfig); the message names
    the file and object."""
