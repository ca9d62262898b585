"""gRPC servicer: decode, check the cluster name, delegate, map errors to status codes.

No arithmetic and no cluster access here; `estimate.Estimator` does the work.
"""

from __future__ import annotations

import logging
import time

import grpc

from estimator.core.errors import InvalidRequest, NotFound, NotReady, Unsupported
from estimator.estimate.estimate import Estimator
from estimator.estimate.framework import FrameworkResult
from estimator.pb import estimator_pb2 as pb
from estimator.pb import service_pb2, service_pb2_grpc
from estimator.service import convert, metrics as m
from estimator.service.logsetup import REQUEST_LOGGER, request_line

log = logging.getLogger(REQUEST_LOGGER)

# gRPC metadata the karmada-scheduler sends, e.g. "kind=PyTorchJob, name=ml-team/train-big".
OBJECT_METADATA_KEY = "object"
SERVICE = service_pb2.DESCRIPTOR.services_by_name["Estimator"]

_STATUS = {
    InvalidRequest: grpc.StatusCode.INVALID_ARGUMENT,
    NotFound: grpc.StatusCode.NOT_FOUND,
    Unsupported: grpc.StatusCode.UNIMPLEMENTED,
    NotReady: grpc.StatusCode.UNAVAILABLE,
}


def _object_of(context: grpc.ServicerContext) -> str:
    for key, value in context.invocation_metadata() or ():
        if key == OBJECT_METADATA_KEY:
            return value
    return ""


class _Reasons:
    """Each plugin's answer, as text only when a handler formats the line (the request log
    is written off the request thread: see logsetup)."""

    __slots__ = ("answers",)

    def __init__(self, outcome: FrameworkResult | None):
        # Only what the line shows: the outcome holds placements a queued line need not keep.
        self.answers = None if outcome is None else [(n, r.value, r.reason) for n, r in outcome.results.items()]

    def __str__(self) -> str:
        if self.answers is None:
            return "no nodes"
        return "; ".join(f"{name}={value}" + (f" ({reason})" if reason else "") for name, value, reason in self.answers)


class _Witness:
    """The placement behind an answer, worked out only when the line is formatted (on the
    log thread): the estimate and its snapshot are immutable."""

    __slots__ = ("estimate",)

    def __init__(self, estimate):
        self.estimate = estimate

    def __str__(self) -> str:
        return str(self.estimate.witness())


class _Optimality:
    __slots__ = ("sets", "bound")

    def __init__(self, sets: int, bound: int | None):
        self.sets, self.bound = sets, bound

    def __str__(self) -> str:
        sets, bound = self.sets, self.bound
        if bound is None:
            return "bound=unknown"
        if sets >= bound:
            return f"bound={bound} (proven optimal)"
        return f"bound={bound} (may miss up to {bound - sets}, {(bound - sets) / bound:.1%})"


def add_to_server(servicer: "EstimatorServicer", server: grpc.Server) -> None:
    """As the generated add_EstimatorServicer_to_server, with lenient request decoding: a body
    that does not decode reaches the servicer and gets INVALID_ARGUMENT, not gRPC's INTERNAL."""
    handlers = {}
    for method in SERVICE.methods:
        request_type = getattr(pb, method.input_type.name)
        response_type = getattr(pb, method.output_type.name)
        handlers[method.name] = grpc.unary_unary_rpc_method_handler(
            getattr(servicer, method.name),
            request_deserializer=convert.lenient_decoder(request_type),
            response_serializer=response_type.SerializeToString,
        )
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE.full_name, handlers),))
    server.add_registered_method_handlers(SERVICE.full_name, handlers)


class EstimatorServicer(service_pb2_grpc.EstimatorServicer):
    def __init__(self, cluster_name: str, estimator: Estimator, metrics: m.EstimatorMetrics):
        self.cluster_name = cluster_name
        self.estimator = estimator
        self.metrics = metrics

    def _check_cluster(self, cluster: str) -> None:
        if cluster != self.cluster_name:
            raise InvalidRequest("cluster", f"cluster name does not match, got: {cluster}, desire: {self.cluster_name}")

    def _fail(self, context: grpc.ServicerContext, kind: str, obj: str, error: Exception, started: float):
        self.metrics.observe_request(kind, False, started)
        code = next((c for t, c in _STATUS.items() if isinstance(error, t)), grpc.StatusCode.INTERNAL)
        if code is grpc.StatusCode.INTERNAL:
            log.exception("%s for %s failed unexpectedly", kind, obj or "<no object>")
            message = f"internal error: {type(error).__name__}: {error}"
        else:
            log.warning("%s for %s refused: %s", kind, obj or "<no object>", error)
            message = str(error)
        context.abort(code, message)

    def MaxAvailableReplicas(self, request: pb.MaxAvailableReplicasRequest, context):
        started, obj = time.perf_counter(), _object_of(context)
        try:
            convert.check_decoded(request)
            self._check_cluster(request.cluster)
            query = convert.remembered(convert.replicas_query, request)
            value, outcome = self.estimator.max_available_replicas(query)
        except Exception as error:  # noqa: BLE001 - every failure becomes a status, never a crash
            self._fail(context, m.TYPE_MAX_AVAILABLE_REPLICAS, obj, error, started)
        if outcome is not None and outcome.durations:  # no durations: a remembered answer, no plugin ran
            self.metrics.observe_plugins(m.EXTENSION_REPLICAS, outcome.durations)
        self.metrics.observe_request(m.TYPE_MAX_AVAILABLE_REPLICAS, True, started)
        if log.isEnabledFor(logging.INFO):
            request_line(log, logging.INFO, "MaxAvailableReplicas object=%r replicas=%d [%s] in %.3fms", obj, value,
                         _Reasons(outcome), (time.perf_counter() - started) * 1e3)
        return pb.MaxAvailableReplicasResponse(maxReplicas=value)

    def MaxAvailableComponentSets(self, request: pb.MaxAvailableComponentSetsRequest, context):
        started, obj = time.perf_counter(), _object_of(context)
        try:
            convert.check_decoded(request)
            self._check_cluster(request.cluster)
            query = convert.remembered(convert.component_sets_query, request)
            estimate = self.estimator.max_available_component_sets(query)
        except Exception as error:  # noqa: BLE001
            self._fail(context, m.TYPE_MAX_AVAILABLE_COMPONENT_SETS, obj, error, started)
        bound = estimate.bound
        # no durations: a remembered answer, no plugin ran
        self.metrics.observe_sets_answer(self.estimator.packing, estimate.sets, bound,
                                         estimate.outcome.durations if estimate.outcome is not None else None, started)
        if log.isEnabledFor(logging.INFO):
            request_line(log, logging.INFO, "MaxAvailableComponentSets object=%r sets=%d packing=%s %s [%s] in %.3fms",
                         obj, estimate.sets, self.estimator.packing, _Optimality(estimate.sets, bound),
                         _Reasons(estimate.outcome), (time.perf_counter() - started) * 1e3)
        if log.isEnabledFor(logging.DEBUG):
            request_line(log, logging.DEBUG, "MaxAvailableComponentSets object=%r placement of %d sets: %s", obj,
                         estimate.sets, _Witness(estimate))
        return pb.MaxAvailableComponentSetsResponse(maxSets=estimate.sets)

    def GetUnschedulableReplicas(self, request: pb.UnschedulableReplicasRequest, context):
        started, obj = time.perf_counter(), _object_of(context)
        try:
            convert.check_decoded(request)
            self._check_cluster(request.cluster)
            count = self.estimator.unschedulable_replicas(convert.workload_ref(request))
        except Exception as error:  # noqa: BLE001
            self._fail(context, m.TYPE_GET_UNSCHEDULABLE_REPLICAS, obj, error, started)
        self.metrics.observe_request(m.TYPE_GET_UNSCHEDULABLE_REPLICAS, True, started)
        if log.isEnabledFor(logging.INFO):
            request_line(log, logging.INFO, "GetUnschedulableReplicas object=%r unschedulable=%d in %.3fms", obj,
                         count, (time.perf_counter() - started) * 1e3)
        return pb.UnschedulableReplicasResponse(unschedulableReplicas=count)
