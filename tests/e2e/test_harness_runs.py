"""Pieces of the end-to-end runs that need neither Go nor an apiserver.

- benchmarks.side_by_side grows one member from size to size, writing only the nodes and pods
  a size adds; that is right only if the large generator's first N nodes (and their pods) are
  the same for every size.
- Its flags are checked before anything starts.
- The restart check picks a member where node order matters and counts ours as failed when
  its restarts give more than one answer.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks import side_by_side
from e2e.harness import oracle, restarts
from e2e.harness.differential import Tally
from e2e.harness.large import generate_large


def test_large_members_of_one_seed_grow_by_appending():
    small, big = generate_large(1, 40), generate_large(1, 90)
    assert big.nodes[:40] == small.nodes
    assert big.pods[:len(small.pods)] == small.pods
    first_new = {p["spec"]["nodeName"] for p in big.pods[len(small.pods):]}
    assert all(name > small.nodes[-1]["metadata"]["name"] for name in first_new)
    assert big.sets_queries == small.sets_queries


@pytest.mark.parametrize("argv, words", [
    (["--nodes", "1000,5000", "--calls", "5,2,1"], "--calls"),
    (["--nodes", "5000,1000", "--calls", "5"], "increasing"),
    (["--nodes", "1000", "--calls", "0"], "--calls"),
    (["--nodes", "1k"], "whole numbers"),
])
def test_side_by_side_rejects_bad_flags_before_starting(argv, words, capsys):
    with pytest.raises(SystemExit) as exit_:
        side_by_side.main(argv)
    assert exit_.value.code == 2
    assert words in capsys.readouterr().err


def test_restart_check_picks_a_member_where_node_order_changes_first_fit(tmp_path: Path):
    state, index, values = restarts.pick_state(tmp_path, 200001)
    assert len(values) >= 3
    # Independently of the picker: two node orders of that member that give different answers.
    snapshot = oracle.load(restarts._objects_file(state, tmp_path / "member.json"))
    arrays = oracle.sets_arrays(snapshot, state.sets_queries[index])
    n = arrays.available.shape[0]
    forward, backward = oracle._first_fit(arrays, range(n)), oracle._first_fit(arrays, range(n - 1, -1, -1))
    assert {forward, backward} <= set(values)


def test_restart_variation_counts_ours_as_deterministic_only_with_one_answer():
    v = restarts.Variation(karmada=[[8, 8], [4, 4]], ours=[[4, 4], [4, 4]])
    assert v.ours_deterministic and v.distinct(v.karmada) == [4, 8]
    assert not restarts.Variation(ours=[[4, 4], [5, 4]]).ours_deterministic
    assert not restarts.Variation(ours=[[None, None]]).ours_deterministic


def test_tally_sums_wall_time_per_step():
    t = Tally()
    for _ in range(3):
        with t.timed("populate"):
            pass
    with pytest.raises(ValueError):
        with t.timed("oracle"):
            raise ValueError("still counted")
    assert set(t.seconds) == {"populate", "oracle"} and t.timings().startswith("populate ")
