"""`_arith.magic` / `_arith.divide`: division by a divisor known in advance as a multiply
and a shift, exact for every dividend 0 <= a < 2**63 and divisor 1 <= d < 2**63."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from estimator.kernels._arith import divide, magic
from estimator.kernels._numba import kernel

INT64_MAX = 2**63 - 1


@kernel
def _quotient(a: int, d: int) -> int:
    m, s = magic(d)
    return divide(a, d, m, s)


EDGE_DIVISORS = [1, 2, 3, 5, 7, 10, 1000, 2000, 13000, 2**30, 2**30 + 1, 2**31 - 1, 2**32 + 1, 26 * 2**30,
                 2**62, 2**62 + 1, INT64_MAX - 1, INT64_MAX]


def test_edge_dividends_and_divisors():
    rng = random.Random(3)
    divisors = EDGE_DIVISORS + [1 << k for k in range(63)] + [(1 << k) + 1 for k in range(1, 62)]
    divisors += [(1 << k) - 1 for k in range(2, 64)] + [rng.randrange(2, INT64_MAX) for _ in range(200)]
    for d in divisors:
        for a in {0, 1, d - 1, d, d + 1, 2 * d - 1, 2 * d, INT64_MAX, INT64_MAX - 1, INT64_MAX // d * d,
                  INT64_MAX // d * d - 1}:
            if 0 <= a <= INT64_MAX:
                assert _quotient(a, d) == a // d, (a, d)


@settings(max_examples=2000, deadline=None)
@given(st.integers(0, INT64_MAX), st.one_of(st.integers(1, INT64_MAX), st.integers(1, 2**20)))
def test_any_dividend_and_divisor(a, d):
    assert _quotient(a, d) == a // d
