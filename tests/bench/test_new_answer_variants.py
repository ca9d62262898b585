"""The benchmark's new-answer requests really defeat the answer memo: every call of every
caller's slice is computed afresh (for one caller and for callers taking turns), the
variants all get the plain request's answer, and the plain request repeated is remembered."""

from __future__ import annotations

from benchmarks.run_server import new_answer_variants
from benchmarks.shapes import SHAPES
from estimator.estimate.estimate import ANSWERS_PER_SNAPSHOT
from estimator.pb import estimator_pb2 as pb
from estimator.service.convert import component_sets_query
from scheduler_client.wire import component_sets_request
from tests.estimate.test_answer_memo import counting_estimator, gpu_member

SHAPE = "pytorch-small"


def queries(concurrency: int):
    base = component_sets_request("member", SHAPES[SHAPE][1])
    hexes = new_answer_variants(base, concurrency)
    assert len(set(hexes)) == len(hexes)
    variants = [component_sets_query(pb.MaxAvailableComponentSetsRequest.FromString(bytes.fromhex(h)))
                for h in hexes]
    return component_sets_query(base), variants


def test_each_caller_slice_is_longer_than_the_memo_so_every_call_runs_the_plugins():
    cache = gpu_member((8, 8, 4, 2))
    for concurrency in (1, 4):
        plain, variants = queries(concurrency)
        share = len(variants) // concurrency
        assert share > ANSWERS_PER_SNAPSHOT
        slices = [variants[i * share:(i + 1) * share] for i in range(concurrency)]
        estimator, plugins = counting_estimator(cache.snapshot)
        expected = estimator.max_available_component_sets(plain).sets
        assert expected > 0
        before = plugins[0].runs
        calls = 0
        for step in range(3 * share):  # callers take turns, each cycling its own slice as rpc_client does
            for own in slices:
                assert estimator.max_available_component_sets(own[step % share]).sets == expected
                calls += 1
        assert plugins[0].runs - before == calls


def test_the_repeated_request_is_remembered():
    plain, _ = queries(1)
    estimator, plugins = counting_estimator(gpu_member().snapshot)
    for _ in range(5):
        estimator.max_available_component_sets(plain)
    assert plugins[0].runs == 1
