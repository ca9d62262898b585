"""Asking accurate estimators over gRPC: one call per member, all under one deadline.

A failure or a timeout is not an answer: it becomes -1 ("this estimator does not know"),
with its reason kept for the explanation, exactly how Karmada's scheduler treats it.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import grpc

from estimator.model import ComponentSetsQuery
from estimator.pb import service_pb2_grpc
from scheduler_client.wire import component_sets_request

UNKNOWN = -1
OBJECT_METADATA_KEY = "object"


@dataclass(frozen=True)
class Answer:
    member: str
    value: int  # UNKNOWN when the estimator could not answer
    reason: str = ""
    seconds: float = 0.0


@dataclass(frozen=True)
class Endpoint:
    member: str
    address: str
    credentials: grpc.ChannelCredentials | None = None


def ask_component_sets(endpoint: Endpoint, query: ComponentSetsQuery, object_key: str, timeout: float) -> Answer:
    started = time.perf_counter()
    if endpoint.credentials is None:
        channel = grpc.insecure_channel(endpoint.address)
    else:
        channel = grpc.secure_channel(endpoint.address, endpoint.credentials)
    try:
        stub = service_pb2_grpc.EstimatorStub(channel)
        response = stub.MaxAvailableComponentSets(
            component_sets_request(endpoint.member, query),
            timeout=timeout,
            metadata=((OBJECT_METADATA_KEY, object_key),),
            wait_for_ready=False,
        )
        return Answer(endpoint.member, response.maxSets, seconds=time.perf_counter() - started)
    except grpc.RpcError as error:
        code = error.code().name if error.code() else "UNKNOWN"
        return Answer(endpoint.member, UNKNOWN, f"{code}: {error.details()}", time.perf_counter() - started)
    finally:
        channel.close()


def ask_all(endpoints: list[Endpoint], query: ComponentSetsQuery, object_key: str, timeout: float) -> dict[str, Answer]:
    """Concurrent calls; every call has the same deadline, so the whole fan-out is bounded."""
    if not endpoints:
        return {}
    with ThreadPoolExecutor(max_workers=len(endpoints)) as pool:
        futures = [pool.submit(ask_component_sets, e, query, object_key, timeout) for e in endpoints]
        return {f.result().member: f.result() for f in futures}
