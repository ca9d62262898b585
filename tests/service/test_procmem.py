"""Giving back clean library pages after warm-up: only unmodified read-only file pages go,
data in them stays readable, and a served estimator keeps answering without LLVM resident."""

from __future__ import annotations

import ctypes
import mmap
import re
import sys
import time
from pathlib import Path

import grpc
import pytest

from estimator.pb import estimator_pb2 as pb
from estimator.pb import service_pb2_grpc
from estimator.service import procmem
from scheduler_client.launch import LocalEstimator, wait_serving
from tests.support.servers import quantity

REPO = Path(__file__).resolve().parents[2]
PAGE = mmap.PAGESIZE
linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/self/smaps is Linux's")


def _mapping_rss_kb(path: Path, smaps: str = "/proc/self/smaps") -> int:
    text = Path(smaps).read_text()
    return sum(m[4] for m in procmem._mappings(text) if m[3] == str(path))


def _data_file(tmp_path: Path, pages: int) -> tuple[Path, bytes]:
    data = bytes(range(256)) * (pages * PAGE // 256)
    path = tmp_path / "lib-under-test.bin"
    path.write_bytes(data)
    return path, data


@linux_only
def test_clean_read_only_pages_are_dropped_and_read_back_from_the_file(tmp_path):
    path, data = _data_file(tmp_path, 256)
    with path.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        assert sum(m[i] for i in range(0, len(m), PAGE)) >= 0  # fault every page in
        assert _mapping_rss_kb(path) >= 256 * PAGE // 1024
        released = procmem.release_clean_file_pages(path.name)
        assert released * 1024 >= 256 * PAGE // 1024
        assert _mapping_rss_kb(path) == 0
        assert m[:] == data  # faulted back in from the file, unchanged


@linux_only
def test_mappings_with_private_changes_are_left_alone(tmp_path):
    path, data = _data_file(tmp_path, 8)
    with path.open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY) as m:
        m[0:4] = b"XYZW"  # a copy-on-write page, as relocated data in a library
        assert procmem.release_clean_file_pages(path.name) == 0  # writable: skipped
        # The same pages made read-only (what the loader does to relocated data): still skipped.
        libc = ctypes.CDLL(None, use_errno=True)
        libc.mprotect.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        address = ctypes.addressof(ctypes.c_char.from_buffer(m))
        assert libc.mprotect(address, len(m), mmap.PROT_READ) == 0
        try:
            assert procmem.release_clean_file_pages(path.name) == 0
            assert m[0:4] == b"XYZW" and m[4:] == data[4:]
        finally:
            libc.mprotect(address, len(m), mmap.PROT_READ | mmap.PROT_WRITE)


def test_status_reads_the_figures_or_nothing(tmp_path):
    if sys.platform.startswith("linux"):
        status = procmem.status_mb()
        assert status["VmRSS"] > 0 and status["VmHWM"] >= status["VmRSS"]
    assert procmem.status_mb(str(tmp_path / "missing")) == {}
    assert procmem.release_clean_file_pages("x", smaps_path=str(tmp_path / "missing")) == 0


@linux_only
def test_a_ready_estimator_holds_no_llvm_pages_or_linking_modules_and_still_answers(tmp_path):
    est = LocalEstimator("member-b", [REPO / "deploy" / "demo" / "member-b.yaml"], packing="best")
    log = tmp_path / "estimator.log"
    with log.open("w") as out:
        est.start(log_file=out)
    try:
        wait_serving([est], timeout=600)
        smaps = f"/proc/{est.process.pid}/smaps"
        # The release runs right after readiness turns on; a loaded box may delay that thread.
        deadline = time.monotonic() + 60
        while True:
            llvm_kb = sum(m[4] for m in procmem._mappings(Path(smaps).read_text()) if "libllvmlite" in m[3])
            released = re.search(r"LLVM library pages and (\d+) kernels' linking modules", log.read_text())
            if (llvm_kb < 8 * 1024 and released) or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        assert llvm_kb < 8 * 1024, f"{llvm_kb} kB of libllvmlite still resident"
        # The command line's server seals its kernels (kernels.seal): nothing compiles after this.
        assert released and int(released.group(1)) > 0, log.read_text()[-2000:]
        with grpc.insecure_channel(est.address) as channel:
            stub = service_pb2_grpc.EstimatorStub(channel)
            request = pb.MaxAvailableReplicasRequest(cluster="member-b", replicaRequirements=pb.ReplicaRequirements(
                namespace="ml-team", resourceRequestBytes={"nvidia.com/gpu": quantity("1")}))
            reply = stub.MaxAvailableReplicas(request, timeout=60)
            sets = stub.MaxAvailableComponentSets(pb.MaxAvailableComponentSetsRequest(
                cluster="member-b", namespace="ml-team", components=[pb.Component(
                    name="worker", replicas=2, replicaRequirements=pb.ComponentReplicaRequirements(
                        resourceRequestBytes={"nvidia.com/gpu": quantity("1")}))]), timeout=60)
        assert reply.maxReplicas == 6  # member-b's six GPUs (tests/service/test_server_grpc.py)
        assert sets.maxSets == 3  # two at a time
    finally:
        est.stop()


@pytest.mark.skipif(not sys.platform.startswith("linux") or not hasattr(ctypes.CDLL(None), "malloc_trim"),
                    reason="glibc's malloc_trim")
def test_trim_gives_freed_heap_pages_back():
    libc = ctypes.CDLL(None)
    libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    blocks = [libc.malloc(4000) for _ in range(20000)]  # ~80 MB of small blocks, below mmap's threshold
    for block in blocks:
        libc.free(block)
    assert procmem.trim_heap() is True  # some memory was returned
