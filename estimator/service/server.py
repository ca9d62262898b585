"""Wiring: gRPC service + health + reflection, probe and metrics endpoints, readiness, drain.

Readiness (gRPC health SERVING, /readyz 200) needs both: cluster state synced, and every
kernel compiled or loaded from the numba cache. Until then estimates answer UNAVAILABLE.

Overload (service.admission): Estimator calls run on a counting pool; beyond
--max-concurrent-requests held there a call is refused at once (RESOURCE_EXHAUSTED, on a
thread of its own), and each call reserves its memory from --request-memory-budget. Health
checks run on a pool of their own, never counted, never refused, never queued behind
estimates. TLS: 1.3 at least (service.tlsfloor), and the serving certificate, key and
client CA re-read when their files change (service.certfiles), through gRPC's dynamic
server credentials.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent import futures
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn, ParamSpec, TypeVar

from estimator.service import tlsfloor

tlsfloor.pin()  # before gRPC is first imported: it reads its TLS 1.2 cipher list then

import grpc  # noqa: E402
from grpc_health.v1 import health, health_pb2
from grpc_reflection.v1alpha import reflection

from estimator import kernels
from estimator.cluster.sources import ClusterState
from estimator.estimate.estimate import Estimator
from estimator.pb import service_pb2
from estimator.service import procmem
from estimator.service.admission import FairPool, MemoryBudget
from estimator.service.certfiles import ServingFiles, TLSFilesError  # noqa: F401 - TLSFilesError: callers catch it
from estimator.service.httpendpoints import HttpEndpoint, parse_bind_address
from estimator.service.metrics import EstimatorMetrics
from estimator.service.servicer import EstimatorServicer, add_to_server

if TYPE_CHECKING:
    from estimator.core.snapshot import ClusterSnapshot
    from estimator.service.certfiles import Material

log = logging.getLogger("estimator.server")
# A behaviour's arguments and result, passed through by the wrappers (`_in_pool`, `_tls13_only`),
# and a method's request and response (`_Admission.intercept_service`).
_P = ParamSpec("_P")
_T = TypeVar("_T")
_Req = TypeVar("_Req")
_Resp = TypeVar("_Resp")

SERVICE_NAME = service_pb2.DESCRIPTOR.services_by_name["Estimator"].full_name
HEALTH_SERVICE = health_pb2.DESCRIPTOR.services_by_name["Health"].full_name
_MONITOR_INTERVAL = 0.5
# Threads that answer health checks (apart from the estimate workers), and that refuse calls
# over the concurrency limit.
_HEALTH_THREADS = 2
_REFUSAL_THREADS = 1
DEFAULT_REQUEST_MEMORY = 512 << 20
_SWITCH_INTERVAL = 0.001


@dataclass
class ServerConfig:
    cluster_name: str
    server_port: int = 10352
    server_bind_address: str = "0.0.0.0"
    health_probe_bind_address: str = ":10351"
    metrics_bind_address: str = ":8080"
    parallelism: int = 16
    packing: str = "best"
    best_budget: float | None = 1.0  # best mode's search, x first-fit's time (None: no limit)
    grpc_auth_cert_file: str = ""
    grpc_auth_key_file: str = ""
    grpc_client_ca_file: str = ""
    insecure_skip_grpc_client_verify: bool = False
    max_concurrent_requests: int = 0  # 0: no limit
    max_request_bytes: int = 1024 * 1024  # not gRPC's 4 MiB: docs/operations.md, "Limits"
    # Bytes calls in flight may hold together (service.admission); the answer memo gets 1/8
    # of it on top. 0: no budget.
    request_memory_bytes: int = DEFAULT_REQUEST_MEMORY
    shutdown_grace_seconds: float = 10.0
    # Past this many seconds of cache staleness readiness fails (0: never, as Karmada's).
    max_staleness: float = 0.0
    # After the warm-up, drop what only compiling more kernels needs (kernels.seal): the server
    # the command line starts. Off for a server inside a process that may compile more (tests).
    seal_kernels: bool = False


def _certificate_configuration(material: Material) -> grpc.ServerCertificateConfiguration:
    return grpc.ssl_server_certificate_configuration([(material.key, material.cert)], root_certificates=material.ca)


def server_credentials(config: ServerConfig, files: ServingFiles | None = None) -> grpc.ServerCredentials | None:
    """TLS as Karmada's grpcconnection.ServerConfig: no cert/key -> plaintext; a client CA ->
    client certificates required and verified, unless --insecure-skip-grpc-client-verify
    (then they are not required). TLS 1.3 at least (service.tlsfloor). The files are read
    again when they change (service.certfiles), before the next handshake."""
    if not config.grpc_auth_cert_file or not config.grpc_auth_key_file:
        return None
    files = files or ServingFiles(config.grpc_auth_cert_file, config.grpc_auth_key_file, config.grpc_client_ca_file)

    def fetch() -> grpc.ServerCertificateConfiguration | None:
        # Called by gRPC before each handshake: None keeps the configuration it has.
        try:
            material = files.poll()
        except Exception:  # noqa: BLE001 - a handshake must never fail on our account
            log.exception("checking the gRPC TLS files failed; keeping the current certificate")
            return None
        return None if material is None else _certificate_configuration(material)

    return grpc.dynamic_ssl_server_credentials(
        _certificate_configuration(files.current),
        fetch,  # type: ignore[arg-type]  # gRPC takes None from it (keep the configuration); the stubs do not say so
        require_client_authentication=bool(config.grpc_client_ca_file) and not config.insecure_skip_grpc_client_verify,
    )


def _in_pool(
    behavior: Callable[_P, _T], pool: futures.ThreadPoolExecutor, non_blocking: bool = False
) -> Callable[_P, _T]:
    """`behavior` run on `pool` instead of the server's estimate workers (grpc's per-method
    executor: the `experimental_thread_pool` attribute its server honours)."""

    def run(*args: _P.args, **kwargs: _P.kwargs) -> _T:
        return behavior(*args, **kwargs)

    # gRPC reads these off the behaviour function; the stubs know no such attributes.
    run.experimental_thread_pool = pool  # type: ignore[attr-defined]
    if non_blocking:
        run.experimental_non_blocking = True  # type: ignore[attr-defined]
    return run


def _health_handler(servicer: health.HealthServicer, pool: futures.ThreadPoolExecutor) -> grpc.GenericRpcHandler:
    """grpc.health.v1.Health on `pool`, as add_HealthServicer_to_server wires it otherwise."""
    request, response = health_pb2.HealthCheckRequest, health_pb2.HealthCheckResponse
    handlers = {
        "Check": grpc.unary_unary_rpc_method_handler(
            _in_pool(servicer.Check, pool), request.FromString, response.SerializeToString
        ),
        "Watch": grpc.unary_stream_rpc_method_handler(
            _in_pool(servicer.Watch, pool, non_blocking=True), request.FromString, response.SerializeToString
        ),
    }
    if hasattr(servicer, "List") and hasattr(health_pb2, "HealthListRequest"):
        handlers["List"] = grpc.unary_unary_rpc_method_handler(
            _in_pool(servicer.List, pool),
            health_pb2.HealthListRequest.FromString,
            health_pb2.HealthListResponse.SerializeToString,
        )
    return grpc.method_handlers_generic_handler(HEALTH_SERVICE, handlers)


_ESTIMATOR_PREFIX = f"/{SERVICE_NAME}/"
_TLS13 = b"TLSv1.3"


# Calls all connections together may hold, in units of --max-concurrent-requests (which
# bounds each connection's).
_ALL_CONNECTIONS = 4


class _Admission(grpc.ServerInterceptor):
    """Runs in gRPC's serving thread, before a call is queued: refuses an Estimator call at
    once while the estimate pool holds `limit` x _ALL_CONNECTIONS calls (one connection's
    are bounded by `limit` where a worker takes them: `per_connection`); with
    `tls13_per_call` (the transport could not be pinned to TLS 1.3, see tlsfloor) refuses any
    call made over an older TLS version. Health checks are never refused by the limit."""

    def __init__(self, pool: FairPool, limit: int, refusals: futures.ThreadPoolExecutor, tls13_per_call: bool):
        self._pool, self._limit, self._tls13 = pool, limit * _ALL_CONNECTIONS, tls13_per_call

        def refuse(_requests: Iterator[bytes], context: grpc.ServicerContext) -> NoReturn:  # requests not decoded
            context.abort(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"more than {limit * _ALL_CONNECTIONS} calls in flight over all connections "
                f"({_ALL_CONNECTIONS} x --max-concurrent-requests); try again later",
            )

        # Streaming in: the refusal never reads (nor decodes) the request, whatever its size.
        self._refusal: grpc.RpcMethodHandler[Any, Any] = grpc.stream_unary_rpc_method_handler(
            _in_pool(refuse, refusals)
        )

    def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], grpc.RpcMethodHandler[_Req, _Resp] | None],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler[_Req, _Resp] | None:
        handler = continuation(handler_call_details)
        if handler is None:
            return None
        if self._limit and self._pool.held >= self._limit and handler_call_details.method.startswith(_ESTIMATOR_PREFIX):
            return self._refusal
        if self._tls13:
            kinds = ("unary_unary", "unary_stream", "stream_unary", "stream_stream")
            # gRPC's handlers are namedtuples (grpc._utilities.RpcMethodHandler); the stubs' class is not.
            return handler._replace(  # type: ignore[attr-defined]
                **{kind: _tls13_only(getattr(handler, kind)) for kind in kinds if getattr(handler, kind) is not None}
            )
        return handler


def _tls13_only(behavior: Callable[..., _T]) -> Callable[..., _T]:
    # `request` (a request or the requests' iterator) and the rest are the behaviour's, passed on unread.
    def run(request: object, context: grpc.ServicerContext, *args: object, **kwargs: object) -> _T:
        # The ignore: gRPC's auth context maps each property to a list of values; the stubs say one.
        versions: list[bytes] | None = context.auth_context().get("ssl_tls_version")  # type: ignore[assignment]
        if versions and versions[0] != _TLS13:
            context.abort(
                grpc.StatusCode.UNAVAILABLE,
                f"TLS 1.3 is required, this connection uses {versions[0].decode(errors='replace')}",
            )
        return behavior(request, context, *args, **kwargs)

    for name in ("experimental_thread_pool", "experimental_non_blocking"):
        if hasattr(behavior, name):
            setattr(run, name, getattr(behavior, name))
    return run


class EstimatorServer:
    def __init__(self, config: ServerConfig, state: ClusterState):
        self.config = config
        self.state = state
        self.metrics = EstimatorMetrics()
        self.metrics.register_state(state)
        budget = config.request_memory_bytes
        self.budget = MemoryBudget(budget)
        memo: dict[str, Any] = {"memo_bytes": budget // 8} if budget > 0 else {}
        self.estimator = Estimator(self._ready_snapshot, packing=config.packing, best_budget=config.best_budget, **memo)
        self.kernels_warm = False
        self._memory_settled = False
        self._ready = False  # readiness: can estimate, and not draining
        self._can_estimate = False  # state synced and kernels warm
        self._stale = False  # past --max-staleness
        self._stopped = threading.Event()
        self._health = health.HealthServicer()
        self._tls_files = self._serving_files()
        self._grpc = self._build_grpc()
        self.port = self._bind_grpc()
        self._http = self._build_http()

    # --- construction -------------------------------------------------------------
    def _serving_files(self) -> ServingFiles | None:
        config = self.config
        if not config.grpc_auth_cert_file or not config.grpc_auth_key_file:
            return None
        return ServingFiles(config.grpc_auth_cert_file, config.grpc_auth_key_file, config.grpc_client_ca_file)

    def _build_grpc(self) -> grpc.Server:
        options = [
            ("grpc.max_receive_message_length", self.config.max_request_bytes),
            ("grpc.so_reuseport", 0),
            # No bandwidth-delay probing: windows stay at HTTP/2's 64 KB, so a call waiting for
            # a worker holds at most that of its request in gRPC's buffers (a read opens the
            # window to the message's size), not megabytes.
            ("grpc.http2.bdp_probe", 0),
        ]
        self._side_pools = [
            futures.ThreadPoolExecutor(_HEALTH_THREADS, thread_name_prefix="health"),
            futures.ThreadPoolExecutor(_REFUSAL_THREADS, thread_name_prefix="refuse"),
        ]
        self._pool = FairPool(
            max(1, self.config.parallelism),
            thread_name_prefix="rpc",
            limit_per_key=self.config.max_concurrent_requests,
            overflow=self._side_pools[1],
        )
        admission = _Admission(
            self._pool,
            self.config.max_concurrent_requests,
            self._side_pools[1],
            tls13_per_call=self._tls_files is not None and not tlsfloor.transport_floor(),
        )
        # No maximum_concurrent_rpcs: gRPC's own limit counts health checks too.
        # FairPool is a futures.Executor, all gRPC uses; the stubs ask for a ThreadPoolExecutor.
        server = grpc.server(self._pool, options=options, interceptors=[admission])  # type: ignore[arg-type]
        servicer = EstimatorServicer(self.config.cluster_name, self.estimator, self.metrics, self.budget)
        add_to_server(servicer, server, self._per_connection if self.config.max_concurrent_requests else None)
        server.add_generic_rpc_handlers((_health_handler(self._health, self._side_pools[0]),))
        reflection.enable_server_reflection((SERVICE_NAME, HEALTH_SERVICE, reflection.SERVICE_NAME), server)
        self._set_health(False)
        return server

    def _per_connection(self) -> str | None:
        """Refuses a call (unread) that came while its connection held the limit (the pool
        sent it to the refusal thread, see admission.FairPool)."""
        if not self._pool.overflowing():
            return None
        return (
            f"more than {self.config.max_concurrent_requests} calls in flight on this connection "
            f"(--max-concurrent-requests); try again later"
        )

    def _bind_grpc(self) -> int:
        address = f"{self.config.server_bind_address}:{self.config.server_port}"
        credentials = server_credentials(self.config, self._tls_files)
        if credentials is None:
            port = self._grpc.add_insecure_port(address)
        else:
            port = self._grpc.add_secure_port(address, credentials)
        if port == 0:
            raise OSError(f"cannot listen for gRPC on {address}")
        return port

    def _build_http(self) -> list[HttpEndpoint]:
        probes = parse_bind_address(self.config.health_probe_bind_address)
        metrics = parse_bind_address(self.config.metrics_bind_address)
        probe_routes = {"/healthz": self._healthz, "/readyz": self._readyz}
        # One address (a fixed port; port 0 asks each for a free one): one endpoint serving both,
        # as controller-runtime does; two listeners on it would fail the second bind.
        if probes is not None and probes == metrics and probes[1] != 0:
            return [HttpEndpoint(probes, {**probe_routes, "/metrics": self._metrics_page}, "probes and metrics")]
        endpoints = []
        if probes is not None:
            endpoints.append(HttpEndpoint(probes, probe_routes, "probes"))
        if metrics is not None:
            endpoints.append(HttpEndpoint(metrics, {"/metrics": self._metrics_page}, "metrics"))
        return endpoints

    # --- readiness ----------------------------------------------------------------
    def _ready_snapshot(self) -> ClusterSnapshot | None:
        # Not `_ready`: that turns false when a drain starts, and calls already accepted
        # must still be answered while they drain.
        return self.state.snapshot() if self._can_estimate else None

    @property
    def ready(self) -> bool:
        return self._ready

    def _set_health(self, serving: bool) -> None:
        status = health_pb2.HealthCheckResponse.SERVING if serving else health_pb2.HealthCheckResponse.NOT_SERVING
        self._health.set("", status)
        self._health.set(SERVICE_NAME, status)

    def _too_stale(self) -> bool:
        limit = self.config.max_staleness
        return limit > 0 and self.state.synced() and self.state.staleness_seconds() > limit

    def _refresh(self) -> None:
        self._can_estimate = self.kernels_warm and self.state.synced()
        stale = self._too_stale()
        if stale != self._stale:
            self._stale = stale
            if stale:
                log.error(
                    "cluster state is %.0fs old, past --max-staleness %gs: not ready until it is current again (%s)",
                    self.state.staleness_seconds(),
                    self.config.max_staleness,
                    self.state.describe(),
                )
            else:
                log.info("cluster state current again (staleness %.1fs)", self.state.staleness_seconds())
        self.metrics.cache_stale.set(1 if stale else 0)
        # Estimates are still answered from the last state (calls already routed here), but
        # the pod leaves the Service while its picture of the member is too old.
        ready = self._can_estimate and not stale and not self._stopped.is_set()
        if ready != self._ready:
            self._ready = ready
            self._set_health(ready)
            log.info("readiness changed: %s", "ready" if ready else "not ready")
        self.metrics.ready.set(1 if ready else 0)
        self.metrics.cache_staleness.set(self.state.staleness_seconds())
        snapshot = self.state.snapshot() if self.state.synced() else None
        if snapshot is not None:
            self.metrics.nodes.set(snapshot.num_nodes)
        if self._can_estimate and not self._memory_settled:  # after readiness: it must not wait for this
            self._memory_settled = True
            try:
                self._settle_memory()
            except Exception:  # noqa: BLE001 - memory hygiene must never cost readiness
                log.exception("releasing start-up memory failed")

    def _monitor(self) -> None:
        while not self._stopped.wait(_MONITOR_INTERVAL):
            try:
                self._refresh()
            except Exception:  # noqa: BLE001 - the monitor must outlive a bad tick
                log.exception("readiness monitor tick failed")

    def _warm_up(self) -> None:
        started = time.perf_counter()
        kernels.warmup()
        self.kernels_warm = True
        log.info("kernels ready in %.2fs", time.perf_counter() - started)
        self._refresh()

    def _settle_memory(self) -> None:
        """Once, when the state is first loaded and the kernels warm: give back what start-up
        used and serving does not need."""
        # Serving runs compiled kernels only; LLVM's code pages (about half this process's
        # RSS on a small member) come back from the file if something compiles again.
        # Sealing frees LLVM modules (LLVM's code runs): before its pages are released.
        sealed = kernels.seal() if self.config.seal_kernels else 0
        released = procmem.release_clean_file_pages("libllvmlite")
        # The parsed member document's freed pages (under PYTHONMALLOC=malloc), and the
        # sealed kernels' LLVM modules.
        procmem.trim_heap()
        log.info(
            "released %.0f MB of LLVM library pages and %d kernels' linking modules after warm-up; memory now %s",
            released,
            sealed,
            ", ".join(f"{k} {v:.0f} MB" for k, v in procmem.status_mb().items()),
        )

    # --- HTTP routes --------------------------------------------------------------
    def _healthz(self) -> tuple[int, str, bytes]:
        ok, detail = self.state.health()
        return (200 if ok else 500), "text/plain", f"{'ok' if ok else 'unhealthy'}: {detail}\n".encode()

    def _readyz(self) -> tuple[int, str, bytes]:
        lines = [
            f"[{'+' if self.state.synced() else '-'}] cluster state synced ({self.state.describe()})",
            f"[{'+' if self.kernels_warm else '-'}] kernels compiled",
            f"    cache staleness: {self.state.staleness_seconds():.1f}s",
        ]
        if self.config.max_staleness > 0:
            lines.insert(
                2,
                f"[{'-' if self._stale else '+'}] cache staleness within --max-staleness "
                f"{self.config.max_staleness:g}s",
            )
        body = "\n".join(lines) + "\n" + ("readyz check passed" if self._ready else "readyz check failed") + "\n"
        return (200 if self._ready else 503), "text/plain", body.encode()

    def _metrics_page(self) -> tuple[int, str, bytes]:
        return 200, "text/plain; version=0.0.4; charset=utf-8", self.metrics.exposition()

    # --- lifecycle ----------------------------------------------------------------
    def start(self) -> None:
        # A shorter slice of the interpreter lock than Python's 5 ms: under a flood of large
        # requests a dozen worker threads want it at once, and a small call (a health check,
        # a scheduler's estimate) waits a slice per thread for each of its few turns.
        sys.setswitchinterval(min(sys.getswitchinterval(), _SWITCH_INTERVAL))
        for endpoint in self._http:
            endpoint.start()
        self._grpc.start()
        log.info(
            "gRPC Estimator for cluster %s listening on port %d (packing %s)",
            self.config.cluster_name,
            self.port,
            self.config.packing,
        )
        self.state.start()
        threading.Thread(target=self._warm_up, name="warmup", daemon=True).start()
        threading.Thread(target=self._monitor, name="readiness", daemon=True).start()

    def wait_ready(self, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._refresh()
            if self._ready:
                return True
            time.sleep(0.02)
        return False

    def stop(self, grace: float | None = None) -> None:
        """Stop taking new calls, let in-flight ones finish within the grace period.

        Readiness turns false first (health NOT_SERVING, /readyz 503), so the pod leaves its
        Service; calls already accepted keep being answered from the cluster state."""
        grace = self.config.shutdown_grace_seconds if grace is None else grace
        self._stopped.set()
        self._ready = False
        self._set_health(False)
        self._grpc.stop(grace).wait()
        for pool in (self._pool, *self._side_pools):
            pool.shutdown(wait=False)
        for endpoint in self._http:
            endpoint.stop()
        self.state.stop()
        log.info("stopped")

    @property
    def http_ports(self) -> dict[str, int]:
        return {endpoint.name: endpoint.port for endpoint in self._http}
