"""Bad input over real loopback gRPC, against a real estimator process.

Every RPC gets random bytes, mutated valid requests, hypothesis-built requests full of odd
values, and a table of absurd ones (a million components, int32-max replicas, `1e400`,
deep affinity, huge maps). The only acceptable outcomes: INVALID_ARGUMENT naming a field
(RESOURCE_EXHAUSTED for an oversize message; NOT_FOUND / UNIMPLEMENTED where the Go server
answers so for an unknown workload), or the right answer. The right answer comes from an
independent oracle (tests/support/member_oracle.py: member-a's YAML, docs/semantics.md's rules and
tests/support/naive.py's packing), never from the estimator's own estimate; the request is decoded
for it by convert.py, whose refusals (and their field names) the server must repeat. Never
INTERNAL, never a hang (a call cut off by its deadline fails the test), never a crash (the
process must be alive and answering at the end).
"""

from __future__ import annotations

import datetime

import grpc
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from estimator.core.errors import InvalidRequest
from estimator.core.resources import MAX_INT32
from estimator.pb import estimator_pb2 as pb
from estimator.pb import k8s_core_pb2 as core
from estimator.service import convert
from tests.support.member_oracle import Member
from scheduler_client.launch import LocalEstimator, wait_serving
from tests.support.servers import DEMO, quantity

MEMBER = "member-a"
SERVICE = "/github.com.karmada_io.karmada.pkg.estimator.service.Estimator/"
DEADLINE = 10.0
MAX_REQUEST_BYTES = 4 * 1024 * 1024
REPLICAS, SETS, UNSCHEDULABLE = "MaxAvailableReplicas", "MaxAvailableComponentSets", "GetUnschedulableReplicas"
RESPONSES = {REPLICAS: (pb.MaxAvailableReplicasResponse, "maxReplicas"),
             SETS: (pb.MaxAvailableComponentSetsResponse, "maxSets"),
             UNSCHEDULABLE: (pb.UnschedulableReplicasResponse, "unschedulableReplicas")}
# What each method may answer besides OK. Unknown or unsupported workloads are NOT_FOUND
# and UNIMPLEMENTED, as in the Go estimator.
ALLOWED = {REPLICAS: {grpc.StatusCode.INVALID_ARGUMENT},
           SETS: {grpc.StatusCode.INVALID_ARGUMENT},
           UNSCHEDULABLE: {grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.NOT_FOUND,
                           grpc.StatusCode.UNIMPLEMENTED}}
FUZZ = settings(max_examples=400, deadline=None, database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


# ---------------------------------------------------------------------------------------
# The process under test and an independent oracle over the same member


@pytest.fixture(scope="module")
def estimator_process():
    est = LocalEstimator(MEMBER, [DEMO / f"{MEMBER}.yaml"],
                         extra_args=["--max-request-bytes", str(MAX_REQUEST_BYTES), "--parallelism", "4"])
    est.start()
    try:
        wait_serving([est])
        yield est
    finally:
        assert est.process.poll() is None, "the estimator died during the fuzz run"
        assert est.stop() == 0


@pytest.fixture(scope="module")
def channel(estimator_process):
    with grpc.insecure_channel(estimator_process.address,
                               options=[("grpc.max_send_message_length", 64 * 1024 * 1024)]) as ch:
        yield ch


ORACLE = Member(DEMO / f"{MEMBER}.yaml")


@pytest.fixture(scope="module")
def oracle():
    return ORACLE


def call(channel: grpc.Channel, method: str, body: bytes) -> tuple[grpc.StatusCode, int | str]:
    """Raw bytes in, (code, value or status message) out; a call cut off by its deadline fails."""
    stub = channel.unary_unary(SERVICE + method, request_serializer=None, response_deserializer=None)
    try:
        reply = stub(body, timeout=DEADLINE)
    except grpc.RpcError as error:
        assert error.code() != grpc.StatusCode.DEADLINE_EXCEEDED, f"{method} hung on {body[:64]!r}"
        return error.code(), error.details() or ""
    response_type, field = RESPONSES[method]
    return grpc.StatusCode.OK, getattr(response_type.FromString(reply), field)


def expected(oracle: Member, method: str, request) -> tuple[grpc.StatusCode, int | str]:
    """What the servicer must answer. For an unschedulable-replicas call the server may also
    refuse a workload it does not know (NOT_FOUND / UNIMPLEMENTED / INVALID_ARGUMENT, see
    ALLOWED); if it answers, the count must be the oracle's."""
    if request.cluster != MEMBER:
        return grpc.StatusCode.INVALID_ARGUMENT, "cluster name does not match"
    try:
        if method == REPLICAS:
            return grpc.StatusCode.OK, oracle.replicas(convert.replicas_query(request))
        if method == SETS:
            return grpc.StatusCode.OK, oracle.component_sets(convert.component_sets_query(request))
        ref = convert.workload_ref(request)
    except InvalidRequest as error:
        return grpc.StatusCode.INVALID_ARGUMENT, str(error)
    return grpc.StatusCode.OK, oracle.unschedulable(ref, datetime.datetime.now(datetime.timezone.utc))


def check(channel, oracle, method: str, request) -> tuple[grpc.StatusCode, int | str]:
    code, got = call(channel, method, request.SerializeToString())
    assert code == grpc.StatusCode.OK or code in ALLOWED[method], (code, got, request)
    want_code, want = expected(oracle, method, request)
    if code == grpc.StatusCode.OK:
        assert 0 <= got <= MAX_INT32
        assert (want_code, want) == (code, got), request
    elif code == grpc.StatusCode.INVALID_ARGUMENT:
        assert ": " in got, f"the message does not name a field: {got}"
        if want_code == code or method != UNSCHEDULABLE:  # a workload kind may be refused beyond decoding
            assert want_code == code and want in got, (got, want)
    return code, got


def check_raw(channel, method: str, body: bytes) -> tuple[grpc.StatusCode, int | str]:
    code, got = call(channel, method, body)
    allowed = ALLOWED[method] | ({grpc.StatusCode.RESOURCE_EXHAUSTED} if len(body) > MAX_REQUEST_BYTES else set())
    assert code == grpc.StatusCode.OK or code in allowed, (method, code, got, body[:64])
    return code, got


# ---------------------------------------------------------------------------------------
# Strategies


ABSURD_QUANTITIES = ["1e400", "-1e400", "1e-400", "1e18", "1e19", "9223372036854775807", "9223372036854775808",
                     "-1", "0", "-0", "NaN", "Inf", "", " 1", "1 ", "0x10", "1.5.5", "1Ei", "8Ei", "1E3", "1e3",
                     "1k", "1K", "0.1m", "1n", "+1", "1\n", "１", "9" * 80, "1e", "e3", ".", "1.", ".5", "5Mi", "1.5Gi"]
RESOURCE_NAMES = ["cpu", "memory", "pods", "nvidia.com/gpu", "ephemeral-storage", "hugepages-2Mi", "example.com/foo"]
LABEL_KEYS = ["topology.kubernetes.io/zone", "kubernetes.io/hostname", "metadata.name", "nvidia.com/gpu.present", ""]
OPERATORS = ["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "", "in", "Equal"]
# Most drawn values are plausible, so that many requests get through to an estimate and
# their answers are compared; the rest are hostile.
INT32 = st.one_of(st.integers(0, 4), st.integers(0, 4), st.integers(0, 4),
                  st.sampled_from([-1, MAX_INT32, -MAX_INT32 - 1, MAX_INT32 - 1]), st.integers(-MAX_INT32 - 1, MAX_INT32))

plausible_quantity = st.from_regex(r"[0-9]{1,4}(\.[0-9]{1,3})?(m|k|Ki|Mi|Gi)?", fullmatch=True)
quantity_text = st.one_of(plausible_quantity, plausible_quantity, plausible_quantity,
                          st.sampled_from(ABSURD_QUANTITIES), st.text(max_size=12),
                          st.from_regex(r"[+-]?[0-9]{1,22}(\.[0-9]{0,12})?([eE][+-]?[0-9]{1,4}|[kMGTPE]i?|[mun])?",
                                        fullmatch=True))
quantity_bytes = st.one_of(quantity_text.map(quantity), quantity_text.map(quantity), st.binary(max_size=24))
resource_requests = st.dictionaries(st.one_of(st.sampled_from(RESOURCE_NAMES), st.text(max_size=12)),
                                    quantity_bytes, max_size=4)
label_text = st.one_of(st.sampled_from(LABEL_KEYS), st.text(max_size=10))
values = st.lists(st.one_of(st.sampled_from(["1", "-1", "9223372036854775808", "a", "", "member-a-gpu-1"]),
                            st.text(max_size=8)), max_size=4)


@st.composite
def requirements(draw):
    return core.NodeSelectorRequirement(key=draw(label_text), operator=draw(st.one_of(st.sampled_from(OPERATORS),
                                                                                         st.text(max_size=6))),
                                        values=draw(values))


@st.composite
def affinity_bytes(draw):
    kind = draw(st.sampled_from(["none", "selector", "bytes"]))
    if kind == "none":
        return b""
    if kind == "bytes":
        return draw(st.binary(max_size=48))
    terms = draw(st.lists(st.builds(lambda e, f: core.NodeSelectorTerm(matchExpressions=e, matchFields=f),
                                    st.lists(requirements(), max_size=3), st.lists(requirements(), max_size=2)),
                          max_size=3))
    return core.NodeSelector(nodeSelectorTerms=terms).SerializeToString()


@st.composite
def toleration_bytes(draw):
    if draw(st.booleans()):
        return draw(st.binary(max_size=24))
    toleration = core.Toleration(
        key=draw(label_text),
        operator=draw(st.one_of(st.sampled_from(["Equal", "Exists", "", "exists"]), st.text(max_size=5))),
        value=draw(st.text(max_size=6)),
        effect=draw(st.one_of(st.sampled_from(["NoSchedule", "PreferNoSchedule", "NoExecute", ""]),
                              st.text(max_size=5))),
    )
    seconds = draw(st.none() | st.integers(-(2**63), 2**63 - 1))
    if seconds is not None:
        toleration.tolerationSeconds = seconds
    return toleration.SerializeToString()


@st.composite
def node_claims(draw):
    return pb.NodeClaim(nodeSelector=draw(st.dictionaries(label_text, st.text(max_size=8), max_size=3)),
                        nodeAffinityBytes=draw(affinity_bytes()),
                        tolerationsBytes=draw(st.lists(toleration_bytes(), max_size=3)))


@st.composite
def components(draw):
    component = pb.Component(name=draw(st.text(max_size=8)), replicas=draw(INT32))
    if draw(st.booleans()):
        requirements_ = pb.ComponentReplicaRequirements(resourceRequestBytes=draw(resource_requests),
                                                        priorityClassName=draw(st.text(max_size=6)))
        if draw(st.booleans()):
            requirements_.nodeClaim.CopyFrom(draw(node_claims()))
        component.replicaRequirements.CopyFrom(requirements_)
    return component


clusters = st.sampled_from([MEMBER] * 8 + ["member-b", ""])
namespaces = st.one_of(st.sampled_from(["ml-team", "default", ""]), st.text(max_size=8))
assumed = st.lists(st.builds(lambda ns, cs: pb.AssumedWorkload(namespace=ns, components=cs),
                             namespaces, st.lists(components(), max_size=3)), max_size=3)


@st.composite
def replicas_requests(draw):
    request = pb.MaxAvailableReplicasRequest(cluster=draw(clusters), assumedWorkloads=draw(assumed))
    if draw(st.booleans()):
        requirements_ = pb.ReplicaRequirements(resourceRequestBytes=draw(resource_requests),
                                               namespace=draw(namespaces))
        if draw(st.booleans()):
            requirements_.nodeClaim.CopyFrom(draw(node_claims()))
        request.replicaRequirements.CopyFrom(requirements_)
    return request


@st.composite
def sets_requests(draw):
    return pb.MaxAvailableComponentSetsRequest(cluster=draw(clusters), namespace=draw(namespaces),
                                               components=draw(st.lists(components(), max_size=4)),
                                               assumedWorkloads=draw(assumed))


@st.composite
def unschedulable_requests(draw):
    request = pb.UnschedulableReplicasRequest(cluster=draw(clusters), unschedulableThreshold=draw(
        st.one_of(st.sampled_from([0, -1, 2**63 - 1, -(2**63), 60 * 10**9]), st.integers(-(2**63), 2**63 - 1))))
    known = draw(st.sampled_from(["none", "frontend", "frontend", "frontend", "other"]))
    if known == "frontend":
        request.resource.CopyFrom(pb.ObjectReference(apiVersion="apps/v1", kind="Deployment", namespace="web",
                                                     name="frontend"))
    elif known == "other":
        request.resource.CopyFrom(pb.ObjectReference(
            apiVersion=draw(st.one_of(st.sampled_from(["apps/v1", "v1", "batch/v1", ""]), st.text(max_size=6))),
            kind=draw(st.one_of(st.sampled_from(["Deployment", "Job", "Pod", ""]), st.text(max_size=6))),
            namespace=draw(st.one_of(st.sampled_from(["default", "web", "ml-team"]), st.text(max_size=6))),
            name=draw(st.one_of(st.sampled_from(["frontend", "web", "train-big"]), st.text(max_size=6))),
        ))
    return request


# ---------------------------------------------------------------------------------------
# Random and mutated bytes


@pytest.mark.parametrize("method", [REPLICAS, SETS, UNSCHEDULABLE])
def test_random_bytes_get_invalid_argument_or_an_answer(channel, method):
    @FUZZ
    @given(body=st.binary(max_size=300))
    def run(body):
        check_raw(channel, method, body)

    run()


VALID = {
    REPLICAS: pb.MaxAvailableReplicasRequest(
        cluster=MEMBER, replicaRequirements=pb.ReplicaRequirements(
            namespace="ml-team", resourceRequestBytes={"cpu": quantity("100m"), "nvidia.com/gpu": quantity("1")},
            nodeClaim=pb.NodeClaim(nodeSelector={"kubernetes.io/os": "linux"},
                                   tolerationsBytes=[core.Toleration(key="gpu", operator="Exists").SerializeToString()],
                                   nodeAffinityBytes=core.NodeSelector(nodeSelectorTerms=[core.NodeSelectorTerm(
                                       matchExpressions=[core.NodeSelectorRequirement(
                                           key="gpu", operator="In", values=["a100", "h100"])])]).SerializeToString()))),
    SETS: pb.MaxAvailableComponentSetsRequest(
        cluster=MEMBER, namespace="ml-team",
        components=[pb.Component(name="master", replicas=1, replicaRequirements=pb.ComponentReplicaRequirements(
                        resourceRequestBytes={"cpu": quantity("50m"), "memory": quantity("32Mi")})),
                    pb.Component(name="worker", replicas=2, replicaRequirements=pb.ComponentReplicaRequirements(
                        resourceRequestBytes={"cpu": quantity("50m"), "nvidia.com/gpu": quantity("1")}))],
        assumedWorkloads=[pb.AssumedWorkload(namespace="ml-team", components=[pb.Component(name="w", replicas=1)])]),
    UNSCHEDULABLE: pb.UnschedulableReplicasRequest(
        cluster=MEMBER, resource=pb.ObjectReference(apiVersion="apps/v1", kind="Deployment", namespace="web",
                                                    name="frontend"), unschedulableThreshold=60 * 10**9),
}


@st.composite
def mutated(draw, body: bytes) -> bytes:
    data = bytearray(body)
    for _ in range(draw(st.integers(1, 6))):
        action = draw(st.sampled_from(["flip", "set", "insert", "delete", "truncate"]))
        at = draw(st.integers(0, max(len(data) - 1, 0)))
        if action == "flip" and data:
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif action == "set" and data:
            data[at] = draw(st.sampled_from([0x00, 0x7F, 0x80, 0xFF, 0x0A, 0x12, 0x08]))
        elif action == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=8))
        elif action == "delete" and data:
            del data[at:at + draw(st.integers(1, 4))]
        elif action == "truncate":
            del data[at:]
    return bytes(data)


@pytest.mark.parametrize("method", [REPLICAS, SETS, UNSCHEDULABLE])
def test_mutated_valid_requests_get_invalid_argument_or_an_answer(channel, method):
    @FUZZ
    @given(body=mutated(VALID[method].SerializeToString()))
    def run(body):
        check_raw(channel, method, body)

    run()


# ---------------------------------------------------------------------------------------
# Well-formed messages with odd values: the answer must be the in-process one


@pytest.mark.parametrize("method,strategy", [(REPLICAS, replicas_requests()), (SETS, sets_requests()),
                                             (UNSCHEDULABLE, unschedulable_requests())],
                         ids=[REPLICAS, SETS, UNSCHEDULABLE])
def test_odd_values_get_the_in_process_answer_or_invalid_argument_naming_the_field(channel, oracle, method, strategy):
    @FUZZ
    @given(request=strategy)
    def run(request):
        check(channel, oracle, method, request)

    run()


# ---------------------------------------------------------------------------------------
# Absurd values, one by one


def gpu_component(replicas: int, **requirements) -> pb.Component:
    requests = {"cpu": quantity("50m"), "nvidia.com/gpu": quantity("1")}
    return pb.Component(name="worker", replicas=replicas, replicaRequirements=pb.ComponentReplicaRequirements(
        resourceRequestBytes=requests, **requirements))


def sets(*components_, **fields) -> pb.MaxAvailableComponentSetsRequest:
    return pb.MaxAvailableComponentSetsRequest(cluster=MEMBER, namespace="ml-team", components=components_, **fields)


def replicas(requests=None, claim=None, **fields) -> pb.MaxAvailableReplicasRequest:
    requirements_ = pb.ReplicaRequirements(resourceRequestBytes=requests or {"cpu": quantity("100m")})
    if claim is not None:
        requirements_.nodeClaim.CopyFrom(claim)
    return pb.MaxAvailableReplicasRequest(cluster=MEMBER, replicaRequirements=requirements_, **fields)


def expression(i: int) -> core.NodeSelectorRequirement:
    return core.NodeSelectorRequirement(key=f"example.com/k{i}", operator="NotIn", values=["x", "y"])


def affinity(terms: int, per_term: int) -> pb.NodeClaim:
    selector = core.NodeSelector(nodeSelectorTerms=[
        core.NodeSelectorTerm(matchExpressions=[expression(i) for i in range(per_term)]) for _ in range(terms)])
    return pb.NodeClaim(nodeAffinityBytes=selector.SerializeToString())


def nested_groups(depth: int) -> bytes:
    """Unknown field 15 as start-group/end-group pairs nested `depth` deep."""
    return b"\x7b" * depth + b"\x7c" * depth


LIMIT = convert.LIMITS
# member-a by hand (deploy/demo/member-a.yaml): one node, 12 cpu, 65740084Ki memory, 2 GPUs,
# 110 pods; ten running pods request 7350m cpu and 1776Mi memory.
FREE_CPU_MILLI = 12000 - 7350
FREE_MEMORY = 65740084 * 2**10 - 1776 * 2**20
FREE_PODS = 110 - 10
# An assumed workload that takes every free byte of memory (and one pod slot).
ALL_MEMORY_ASSUMED = pb.AssumedWorkload(namespace="web", components=[pb.Component(
    name="hog", replicas=1, replicaRequirements=pb.ComponentReplicaRequirements(
        resourceRequestBytes={"memory": quantity(str(FREE_MEMORY))}))])
# (sentence, method, request or raw bytes, expected code, expected value or message fragment)
ABSURD = [
    ("a million components are refused naming components", SETS,
     sets(*[pb.Component()] * 10**6), grpc.StatusCode.INVALID_ARGUMENT, "components: has 1000000 entries"),
    ("a million named components exceed the request size limit", SETS,
     sets(*[pb.Component(name="c", replicas=1)] * 10**6), grpc.StatusCode.RESOURCE_EXHAUSTED, "larger than max"),
    ("one component at int32-max replicas fits zero times", SETS,
     sets(gpu_component(MAX_INT32)), grpc.StatusCode.OK, 0),
    ("int32-max replicas without requests fit zero times", SETS,
     sets(pb.Component(name="w", replicas=MAX_INT32)), grpc.StatusCode.OK, 0),
    ("replicas of a set adding past int32 are refused", SETS,
     sets(gpu_component(MAX_INT32), gpu_component(1)), grpc.StatusCode.INVALID_ARGUMENT, "more than 2147483647"),
    ("negative replicas are refused", SETS,
     sets(gpu_component(-1)), grpc.StatusCode.INVALID_ARGUMENT, "components[0].replicas"),
    ("the component limit itself is accepted", SETS,
     sets(*[gpu_component(1)] * LIMIT["components"]), grpc.StatusCode.OK, 0),
    ("a cpu of 1e400 is refused naming the quantity", REPLICAS,
     replicas({"cpu": quantity("1e400")}), grpc.StatusCode.INVALID_ARGUMENT, 'resourceRequestBytes["cpu"]'),
    # Rounded up to one byte it cannot fit once the assumed workload took all memory;
    # dropped as zero it would leave FREE_PODS - 1 replicas.
    ("a memory of 1e-400 rounds up to one byte", REPLICAS,
     replicas({"memory": quantity("1e-400")}, assumedWorkloads=[ALL_MEMORY_ASSUMED]), grpc.StatusCode.OK, 0),
    ("a memory of 1e-400 fits by pod slots while memory is free", REPLICAS,
     replicas({"memory": quantity("1e-400")}), grpc.StatusCode.OK, FREE_PODS),
    ("a quantity of eighty nines is refused", REPLICAS,
     replicas({"memory": quantity("9" * 80)}), grpc.StatusCode.INVALID_ARGUMENT, 'resourceRequestBytes["memory"]'),
    ("a quantity that is not a Quantity message is refused", REPLICAS,
     replicas({"cpu": b"\xff\xff\xff"}), grpc.StatusCode.INVALID_ARGUMENT, "not a valid encoding"),
    # NotIn on labels the node lacks holds, so the node stays eligible: 4650m / 100m.
    ("affinity at the term and expression limits is answered", REPLICAS,
     replicas(claim=affinity(LIMIT["nodeSelectorTerms"], 16)), grpc.StatusCode.OK, FREE_CPU_MILLI // 100),
    ("one affinity term too many is refused", REPLICAS,
     replicas(claim=affinity(LIMIT["nodeSelectorTerms"] + 1, 1)), grpc.StatusCode.INVALID_ARGUMENT,
     "nodeAffinityBytes.nodeSelectorTerms: has 129 entries"),
    ("one expression too many in a term is refused", REPLICAS,
     replicas(claim=affinity(1, LIMIT["matchExpressions"] + 1)), grpc.StatusCode.INVALID_ARGUMENT,
     "nodeSelectorTerms[0].matchExpressions: has 257 entries"),
    ("affinity nested ten thousand groups deep is refused", REPLICAS,
     replicas(claim=pb.NodeClaim(nodeAffinityBytes=nested_groups(10_000))), grpc.StatusCode.INVALID_ARGUMENT,
     "nodeAffinityBytes: is not a valid encoding"),
    ("a hundred thousand node selector entries are refused", REPLICAS,
     replicas(claim=pb.NodeClaim(nodeSelector={f"k{i}": "v" for i in range(100_000)})),
     grpc.StatusCode.INVALID_ARGUMENT, "nodeClaim.nodeSelector: has 100000 entries"),
    ("a hundred thousand resource names are refused", REPLICAS,
     replicas({f"example.com/r{i}": quantity("1") for i in range(100_000)}), grpc.StatusCode.INVALID_ARGUMENT,
     "resourceRequestBytes: has 100000 entries"),
    ("a hundred thousand tolerations are refused", REPLICAS,
     replicas(claim=pb.NodeClaim(tolerationsBytes=[b""] * 100_000)), grpc.StatusCode.INVALID_ARGUMENT,
     "tolerationsBytes: has 100000 entries"),
    ("fifty thousand values in one expression are refused", REPLICAS,
     replicas(claim=pb.NodeClaim(nodeAffinityBytes=core.NodeSelector(nodeSelectorTerms=[core.NodeSelectorTerm(
         matchExpressions=[core.NodeSelectorRequirement(key="k", operator="In", values=["v"] * 50_000)])])
         .SerializeToString())), grpc.StatusCode.INVALID_ARGUMENT, "values: has 50000 entries"),
    ("five thousand assumed workloads are refused", REPLICAS,
     replicas(assumedWorkloads=[pb.AssumedWorkload(components=[gpu_component(1)])] * 5000),
     grpc.StatusCode.INVALID_ARGUMENT, "assumedWorkloads: has 5000 entries"),
    ("an unknown operator is refused naming it", REPLICAS,
     replicas(claim=pb.NodeClaim(nodeAffinityBytes=core.NodeSelector(nodeSelectorTerms=[core.NodeSelectorTerm(
         matchExpressions=[core.NodeSelectorRequirement(key="k", operator="Near", values=["v"])])])
         .SerializeToString())), grpc.StatusCode.INVALID_ARGUMENT, "matchExpressions[0].operator"),
    # About 292 years: frontend's two pending pods have not waited that long.
    ("a threshold at int64 max still answers", UNSCHEDULABLE,
     pb.UnschedulableReplicasRequest(cluster=MEMBER, unschedulableThreshold=2**63 - 1, resource=pb.ObjectReference(
         apiVersion="apps/v1", kind="Deployment", namespace="web", name="frontend")), grpc.StatusCode.OK, 0),
    ("a one-minute threshold counts frontend's two pending pods", UNSCHEDULABLE,
     pb.UnschedulableReplicasRequest(cluster=MEMBER, unschedulableThreshold=60 * 10**9, resource=pb.ObjectReference(
         apiVersion="apps/v1", kind="Deployment", namespace="web", name="frontend")), grpc.StatusCode.OK, 2),
    ("a cluster name that is not UTF-8 is an undecodable request", REPLICAS,
     b"\x0a\x02\xff\xfe", grpc.StatusCode.INVALID_ARGUMENT, "request: is not a valid encoding"),
    ("a five megabyte message is refused for its size", SETS,
     b"\x0a" + b"\x80\x80\x80\x03" + b"x" * (5 * 2**20), grpc.StatusCode.RESOURCE_EXHAUSTED, "larger than max"),
]


def test_the_oracle_reads_member_a_as_worked_out_by_hand():
    assert (ORACLE.free["cpu"], ORACLE.free["memory"], ORACLE.free["pods"]) == (FREE_CPU_MILLI, FREE_MEMORY, FREE_PODS)
    assert ORACLE.free["nvidia.com/gpu"] == 2 and ORACLE.free["hugepages-2Mi"] == 0


@pytest.mark.parametrize("method,request_,code,want", [case[1:] for case in ABSURD], ids=[case[0] for case in ABSURD])
def test_absurd_requests(channel, oracle, method, request_, code, want):
    if isinstance(request_, bytes):
        got_code, got = check_raw(channel, method, request_)
    elif code == grpc.StatusCode.RESOURCE_EXHAUSTED:
        got_code, got = check_raw(channel, method, request_.SerializeToString())
    else:
        got_code, got = check(channel, oracle, method, request_)
    assert got_code == code, got
    if isinstance(want, str):
        assert want in got
    else:
        assert got == want


def test_the_process_still_answers_a_normal_request_afterwards(channel, oracle):
    # Runs last in this module (pytest keeps file order); the fixture also checks the
    # process is alive and exits 0 on SIGTERM.
    code, value = check(channel, oracle, SETS, VALID[SETS])
    assert code == grpc.StatusCode.OK and value >= 1
