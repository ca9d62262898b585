"""Token bucket and backoff of the list/watch loop (pure, with a fake clock)."""

from __future__ import annotations

import random

import pytest

from estimator.cluster.watch import Backoff, TokenBucket


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_full_bucket_lets_a_burst_through_then_paces_at_qps():
    clock = Clock()
    bucket = TokenBucket(qps=10, burst=3, clock=clock)
    assert [bucket.reserve() for _ in range(3)] == [0, 0, 0]
    assert bucket.reserve() == pytest.approx(0.1)
    assert bucket.reserve() == pytest.approx(0.2), "waiters queue up behind each other"
    clock.now += 0.2
    assert bucket.reserve() == pytest.approx(0.1)


def test_the_bucket_refills_up_to_burst_only():
    clock = Clock()
    bucket = TokenBucket(qps=10, burst=2, clock=clock)
    bucket.reserve(), bucket.reserve()
    clock.now += 60
    assert [bucket.reserve() for _ in range(2)] == [0, 0]
    assert bucket.reserve() > 0


def test_the_long_run_rate_never_exceeds_qps():
    clock = Clock()
    bucket = TokenBucket(qps=20, burst=30, clock=clock)
    waited = 0.0
    for _ in range(230):
        wait = bucket.reserve()
        clock.now += wait
        waited += wait
    assert waited == pytest.approx((230 - 30) / 20)


def test_zero_qps_disables_limiting_and_burst_is_at_least_one():
    assert all(TokenBucket(qps=0, burst=0).reserve() == 0 for _ in range(1000))
    assert TokenBucket(qps=5, burst=0).burst == 1


def test_backoff_grows_exponentially_with_jitter_up_to_the_cap_and_resets():
    backoff = Backoff(initial=0.1, cap=1.0, factor=2.0, jitter=0.5, rng=random.Random(7))
    delays = [backoff.next() for _ in range(8)]
    steps = [0.1, 0.2, 0.4, 0.8, 1.0, 1.0, 1.0, 1.0]
    for delay, step in zip(delays, steps):
        assert step / 2 <= delay <= step
    assert len(set(delays[4:])) == 4, "jittered, even at the cap"
    backoff.reset()
    assert backoff.next() <= 0.1


@pytest.mark.parametrize("kwargs", [dict(initial=0), dict(initial=2, cap=1), dict(factor=0.5), dict(jitter=2)])
def test_backoff_refuses_nonsense(kwargs):
    with pytest.raises(ValueError):
        Backoff(**kwargs)
