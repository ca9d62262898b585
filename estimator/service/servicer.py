"""gRPC servicer: decode, check the cluster name, delegate, map errors to status codes.

No arithmetic and no cluster access here; `estimate.Estimator` does the work. Each call
reserves its memory from the server's budget (service.admission) before spending it: its
decoded request first, then what its estimate may hold; a call that does not fit gets
RESOURCE_EXHAUSTED. Client values reach log lines and messages quoted and cut
(convert.quoted): the `object` metadata, the cluster name, every field.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, NoReturn, TypeVar

import grpc

from estimator.core.errors import InvalidRequest, NotFound, NotReady, Unsupported
from estimator.estimate.estimate import Estimator, SetsEstimate
from estimator.estimate.framework import FrameworkResult
from estimator.pb import estimator_pb2 as pb
from estimator.pb import service_pb2, service_pb2_grpc
from estimator.service import convert
from estimator.service import metrics as m
from estimator.service.admission import MemoryBudget, Reservation
from estimator.service.logsetup import REQUEST_LOGGER, request_line

if TYPE_CHECKING:
    from google.protobuf.message import Message

log = logging.getLogger(REQUEST_LOGGER)
_Req = TypeVar("_Req")  # a method's request and response (`_admitted`)
_Resp = TypeVar("_Resp")

# gRPC metadata the karmada-scheduler sends, e.g. "kind=PyTorchJob, name=ml-team/train-big".
OBJECT_METADATA_KEY = "object"
SERVICE = service_pb2.DESCRIPTOR.services_by_name["Estimator"]

# Decoding a request and converting it holds up to ~15x its encoded size (measured: many
# short strings in an affinity); reserved before either happens.
DECODED_BYTES_PER_BYTE = 16
# A call no larger than a job of this many components and columns on the member is never a
# large one (service.admission.Reservation), however many nodes the member has.
ORDINARY_COMPONENTS = 8
ORDINARY_COLUMNS = 8
# Longest error message sent back (and logged): every client value in it is already cut to
# convert.QUOTE_LIMIT characters, this bounds how many there are. gRPC puts the message in
# the response's trailing metadata, whose limit a longer one could outgrow.
_MESSAGE_LIMIT = 2048


class OverBudget(Exception):
    """The call would take the request memory budget past its bound (RESOURCE_EXHAUSTED)."""


_STATUS = {
    InvalidRequest: grpc.StatusCode.INVALID_ARGUMENT,
    NotFound: grpc.StatusCode.NOT_FOUND,
    Unsupported: grpc.StatusCode.UNIMPLEMENTED,
    NotReady: grpc.StatusCode.UNAVAILABLE,
    OverBudget: grpc.StatusCode.RESOURCE_EXHAUSTED,
}


def _object_of(context: grpc.ServicerContext) -> str:
    """The `object` metadata, cut for the log (it is only ever logged, and with %r)."""
    for key, value in context.invocation_metadata() or ():
        if key == OBJECT_METADATA_KEY and isinstance(value, str):  # str: not a -bin key
            return value if len(value) <= convert.QUOTE_LIMIT else f"{value[: convert.QUOTE_LIMIT]}...({len(value)})"
    return ""


def _message(error: Exception | str) -> str:
    """An error's text for the client and the log: one line, at most _MESSAGE_LIMIT characters.
    Values in it are quoted where they were put in; this is the net under them."""
    text = str(error)
    if not text.isprintable():
        text = text.encode("unicode_escape").decode("ascii")
    return text if len(text) <= _MESSAGE_LIMIT else text[:_MESSAGE_LIMIT] + f"...({len(text)} characters)"


def _mib(size: int) -> str:
    return f"{size / 2**20:.1f} MiB"


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

    def __init__(self, estimate: SetsEstimate):
        self.estimate = estimate

    def __str__(self) -> str:
        return str(self.estimate.witness())


class _Optimality:
    __slots__ = ("estimate",)

    def __init__(self, estimate: SetsEstimate):
        self.estimate = estimate

    def __str__(self) -> str:
        sets, bound = self.estimate.sets, self.estimate.bound
        if bound is None:
            return "bound=unknown"
        if self.estimate.proven_optimal:
            return f"bound={bound} (proven optimal)"
        return f"bound={bound} (may miss up to {bound - sets}, {(bound - sets) / bound:.1%})"


# The answer's certificate, as response metadata Karmada's client ignores: the upper bound
# no placement exceeds (absent when not known) and whether the answer reaches it.
BOUND_METADATA_KEY = "x-estimator-bound"
PROVEN_METADATA_KEY = "x-estimator-proven-optimal"


def certificate_metadata(estimate: SetsEstimate) -> tuple[tuple[str, str], ...]:
    pairs = ((PROVEN_METADATA_KEY, "true" if estimate.proven_optimal else "false"),)
    return pairs if estimate.bound is None else ((BOUND_METADATA_KEY, str(estimate.bound)),) + pairs


def _admitted(
    behavior: Callable[[_Req, grpc.ServicerContext], _Resp], admit: Callable[[], str | None]
) -> Callable[[Iterator[_Req], grpc.ServicerContext], _Resp]:
    """`behavior` for a unary call served as a stream in (the request is not read before the
    behavior runs): `admit()` may refuse the call first, without reading its request."""

    def run(requests: Iterator[_Req], context: grpc.ServicerContext) -> _Resp:
        refusal = admit()
        if refusal:
            context.abort(grpc.StatusCode.RESOURCE_EXHAUSTED, refusal)
        request = next(requests, None)
        if request is None:
            context.abort(grpc.StatusCode.UNIMPLEMENTED, "a unary method needs exactly one request message")
        return behavior(request, context)

    return run


def add_to_server(
    servicer: EstimatorServicer, server: grpc.Server, admit: Callable[[], str | None] | None = None
) -> None:
    """As the generated add_EstimatorServicer_to_server, with lenient request decoding: a body
    that does not decode reaches the servicer and gets INVALID_ARGUMENT, not gRPC's INTERNAL;
    a large body while the budget's large calls are all taken is not decoded at all. With
    `admit()` (a refusal's message, or None) a call may be refused before its request is
    read (see `_admitted`)."""
    handlers = {}
    for method in SERVICE.methods:
        request_type = getattr(pb, method.input_type.name)
        response_type = getattr(pb, method.output_type.name)
        decoder = convert.lenient_decoder(request_type, servicer.may_decode)
        behavior = getattr(servicer, method.name)
        if admit is None:
            handlers[method.name] = grpc.unary_unary_rpc_method_handler(
                behavior, request_deserializer=decoder, response_serializer=response_type.SerializeToString
            )
        else:
            handlers[method.name] = grpc.stream_unary_rpc_method_handler(
                _admitted(behavior, admit),
                request_deserializer=decoder,
                response_serializer=response_type.SerializeToString,
            )
    server.add_generic_rpc_handlers((grpc.method_handlers_generic_handler(SERVICE.full_name, handlers),))
    server.add_registered_method_handlers(SERVICE.full_name, handlers)


class EstimatorServicer(service_pb2_grpc.EstimatorServicer):
    def __init__(
        self, cluster_name: str, estimator: Estimator, metrics: m.EstimatorMetrics, budget: MemoryBudget | None = None
    ):
        self.cluster_name = cluster_name
        self.estimator = estimator
        self.metrics = metrics
        self.budget = budget or MemoryBudget(0)

    def _check_cluster(self, cluster: str) -> None:
        if cluster != self.cluster_name:
            raise InvalidRequest(
                "cluster",
                f"cluster name does not match, got: {convert.shown_name(cluster)}, desire: {self.cluster_name}",
            )

    def _reserve(self, reservation: Reservation, size: int, what: str) -> None:
        if not reservation.grow(size):
            budget = self.budget
            raise OverBudget(
                f"request memory budget: {what} needs about {_mib(size)}, {_mib(budget.used)} of "
                f"{_mib(budget.total)} are in use, {budget.large_in_flight} of {budget.large_calls} "
                f"large calls (--request-memory-budget); try again later"
            )

    def may_decode(self, size: int) -> bool:
        """Whether a body of `size` bytes is worth decoding now: one whose decoding makes a
        large call waits for none while every large call's place is taken (the call is
        refused, see `_admit`). Runs in gRPC's serving thread, before the body is parsed."""
        budget = self.budget
        if size * DECODED_BYTES_PER_BYTE <= budget.large or budget.total <= 0 or budget.large_open():
            return True
        budget.turn_away_large()
        return False

    def _admit(self, request: Message, reservation: Reservation) -> None:
        """Check the body decoded, then reserve its decoded size (before converting it)."""
        # `request` is typed as the methods' requests are; for a body it did not decode,
        # convert.lenient_decoder hands over an Undecoded or Undecodable instead: refused here.
        if isinstance(request, convert.Undecoded):
            raise OverBudget(
                f"request memory budget: decoding this request needs about "
                f"{_mib(request.size * DECODED_BYTES_PER_BYTE)}, a large call, and large calls are "
                f"taken ({self.budget.large_in_flight} of {self.budget.large_calls} in flight, and a "
                f"pause after each) (--request-memory-budget); try again later"
            )
        convert.check_decoded(request)
        self._reserve(reservation, request.ByteSize() * DECODED_BYTES_PER_BYTE, "decoding this request")

    def _reserve_early(
        self, request: pb.MaxAvailableReplicasRequest | pb.MaxAvailableComponentSetsRequest, reservation: Reservation
    ) -> int:
        """Reserve, before converting, the part of the estimate's memory its wire counts
        already tell (its components, one column): a call that cannot have it is refused
        without the conversion's work (a thousand components take tens of milliseconds).
        From here on, an estimate an ordinary job needs on this member is not a large call."""
        reservation.allow_ordinary(self.estimator.bytes_for(ORDINARY_COMPONENTS, ORDINARY_COLUMNS))
        early = self.estimator.bytes_for(convert.request_components(request), 1)
        self._reserve(reservation, early, "this estimate")
        return early

    def _fail(self, context: grpc.ServicerContext, kind: str, obj: str, error: Exception, started: float) -> NoReturn:
        self.metrics.observe_request(kind, False, started)
        code = next((c for t, c in _STATUS.items() if isinstance(error, t)), grpc.StatusCode.INTERNAL)
        if code is grpc.StatusCode.INTERNAL:
            log.exception("%s for %r failed unexpectedly", kind, obj or "<no object>")
            message = _message(f"internal error: {type(error).__name__}: {error}")
        else:
            message = _message(error)
            log.warning("%s for %r refused: %s", kind, obj or "<no object>", message)
        context.abort(code, message)

    def MaxAvailableReplicas(
        self, request: pb.MaxAvailableReplicasRequest, context: grpc.ServicerContext
    ) -> pb.MaxAvailableReplicasResponse:
        started, obj = time.perf_counter(), _object_of(context)
        reservation = Reservation(self.budget)
        try:
            self._admit(request, reservation)
            self._check_cluster(request.cluster)
            early = self._reserve_early(request, reservation)
            query = convert.remembered(convert.replicas_query, request)
            self._reserve(reservation, self.estimator.working_bytes(query) - early, "this estimate")
            value, outcome = self.estimator.max_available_replicas(query)
        except Exception as error:  # noqa: BLE001 - every failure becomes a status, never a crash
            self._fail(context, m.TYPE_MAX_AVAILABLE_REPLICAS, obj, error, started)
        finally:
            reservation.close()
        if outcome is not None and outcome.durations:  # no durations: a remembered answer, no plugin ran
            self.metrics.observe_plugins(m.EXTENSION_REPLICAS, outcome.durations)
        self.metrics.observe_request(m.TYPE_MAX_AVAILABLE_REPLICAS, True, started)
        if log.isEnabledFor(logging.INFO):
            request_line(
                log,
                logging.INFO,
                "MaxAvailableReplicas object=%r replicas=%d [%s] in %.3fms",
                obj,
                value,
                _Reasons(outcome),
                (time.perf_counter() - started) * 1e3,
            )
        return pb.MaxAvailableReplicasResponse(maxReplicas=value)

    def MaxAvailableComponentSets(
        self, request: pb.MaxAvailableComponentSetsRequest, context: grpc.ServicerContext
    ) -> pb.MaxAvailableComponentSetsResponse:
        started, obj = time.perf_counter(), _object_of(context)
        reservation = Reservation(self.budget)
        try:
            self._admit(request, reservation)
            self._check_cluster(request.cluster)
            early = self._reserve_early(request, reservation)
            query = convert.remembered(convert.component_sets_query, request)
            self._reserve(reservation, self.estimator.working_bytes(query) - early, "this estimate")
            estimate = self.estimator.max_available_component_sets(query)
        except Exception as error:  # noqa: BLE001
            self._fail(context, m.TYPE_MAX_AVAILABLE_COMPONENT_SETS, obj, error, started)
        finally:
            reservation.close()
        # no durations: a remembered answer, no plugin ran
        self.metrics.observe_sets_answer(
            self.estimator.packing,
            estimate.sets,
            estimate.bound,
            estimate.outcome.durations if estimate.outcome is not None else None,
            started,
        )
        if log.isEnabledFor(logging.INFO):
            request_line(
                log,
                logging.INFO,
                "MaxAvailableComponentSets object=%r sets=%d packing=%s %s [%s] in %.3fms",
                obj,
                estimate.sets,
                self.estimator.packing,
                _Optimality(estimate),
                _Reasons(estimate.outcome),
                (time.perf_counter() - started) * 1e3,
            )
        if log.isEnabledFor(logging.DEBUG):
            request_line(
                log,
                logging.DEBUG,
                "MaxAvailableComponentSets object=%r placement of %d sets: %s",
                obj,
                estimate.sets,
                _Witness(estimate),
            )
        context.set_trailing_metadata(certificate_metadata(estimate))
        return pb.MaxAvailableComponentSetsResponse(maxSets=estimate.sets)

    def GetUnschedulableReplicas(
        self, request: pb.UnschedulableReplicasRequest, context: grpc.ServicerContext
    ) -> pb.UnschedulableReplicasResponse:
        started, obj = time.perf_counter(), _object_of(context)
        reservation = Reservation(self.budget)
        try:
            self._admit(request, reservation)
            self._check_cluster(request.cluster)
            count = self.estimator.unschedulable_replicas(convert.workload_ref(request))
        except Exception as error:  # noqa: BLE001
            self._fail(context, m.TYPE_GET_UNSCHEDULABLE_REPLICAS, obj, error, started)
        finally:
            reservation.close()
        self.metrics.observe_request(m.TYPE_GET_UNSCHEDULABLE_REPLICAS, True, started)
        if log.isEnabledFor(logging.INFO):
            request_line(
                log,
                logging.INFO,
                "GetUnschedulableReplicas object=%r unschedulable=%d in %.3fms",
                obj,
                count,
                (time.perf_counter() - started) * 1e3,
            )
        return pb.UnschedulableReplicasResponse(unschedulableReplicas=count)
