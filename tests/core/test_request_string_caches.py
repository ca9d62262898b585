"""Caches keyed on strings a request (or a file) carries are bounded in bytes, not entries:
an entry longer than a real name or quantity is worked out every time, not kept. 400 calls
with a 3.9 MB resource name each took a server from 110 to 1,641 MB of RSS."""

from __future__ import annotations


import pytest

from estimator.core import filters, resources
from estimator.core.model import NodeSelectorRequirement, NodeSelectorTerm
from tests.support.memory import kept_bytes

MB = 10**6




def test_quantities_of_long_names_are_read_but_not_kept():
    def read():
        for i in range(30):
            assert resources.quantity_to_int(f"{i}" + "x" * MB, "2") == 2
        with pytest.raises(resources.QuantityError) as error:
            resources.quantity_to_int("y" * MB, "10E")
        assert len(str(error.value)) < 400, "the name is cut in the message"

    assert kept_bytes(read) < MB


def test_quantities_of_ordinary_names_are_still_remembered():
    resources.quantity_to_int.cache_clear()
    resources.quantity_to_int("nvidia.com/gpu", "8")
    assert resources._cached_quantity_to_int.cache_info().currsize == 1


def test_label_requirements_with_long_values_are_checked_but_not_kept():
    def check():
        for i in range(30):
            requirement = NodeSelectorRequirement("pool", "In", (f"{i}" + "v" * MB,))
            assert not filters.term_matches({"pool": "a"}, NodeSelectorTerm((requirement,)), "n1")
        many = NodeSelectorRequirement("pool", "In", tuple(f"v{i}" for i in range(50_000)))
        assert filters.term_matches({"pool": "v7"}, NodeSelectorTerm((many,)), "n1")

    assert kept_bytes(check) < MB
