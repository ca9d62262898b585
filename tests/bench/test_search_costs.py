"""The search-cost probe runs the operations the best-mode search prices (nothing timed is asserted)."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks import search_costs
from benchmarks.quality import gpu_first_case


def test_every_priced_operation_is_measured_against_first_fits_own_visits():
    costs = search_costs.step_costs(*gpu_first_case(search_costs.GPU_JOB, 300, np.random.default_rng(3)), repeat=3)
    assert costs["first_fit_work"] > 0 and costs["first_fit_ms"] > 0
    assert set(search_costs.prices()) <= set(costs["visits_per_cell"])
    assert all(value > 0 for value in costs["visits_per_cell"].values())


def test_the_exact_search_step_is_timed_on_proofs_long_enough_to_time():
    ns, proofs = search_costs.exact_step_ns(300)  # seed 5: 9 proofs of 1,000 steps or more
    assert proofs > 0 and ns > 0
    with pytest.raises(RuntimeError, match="no proof"):
        search_costs.exact_step_ns(0)  # no fenced pool timed: no figure
