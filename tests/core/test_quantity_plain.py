"""quantity_to_int reads kubectl's plain forms with integer arithmetic; the Decimal parse of
the whole grammar is the oracle: the same number, or the same error, for every text."""

from __future__ import annotations

import random

import pytest

from estimator.core import resources
from estimator.core.resources import MAX_INT64, QuantityError

EDGES = ["0", "1", "007", "1m", "999m", "1000m", "1001m", "1k", "1M", "1G", "1T", "1P", "1E", "9E", "8E",
         "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei", "7Ei", "8Ei", "9223372036854775807", "9223372036854775808",
         "999999999999999999", "9223372036854775807m", "9223372036854775808m", "1.5", "-1", "+2", "1e3", "1x",
         "", " 1", "1 ", "1mi", "1\n", "0m", "1n", "1u"]
NAMES = ("cpu", "memory", "nvidia.com/gpu", "requests.cpu", "limits.memory", "pods")


def _texts() -> list[str]:
    rng = random.Random(7)
    suffixes = ["", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]
    return EDGES + [f"{rng.randrange(10 ** rng.randrange(1, 20))}{rng.choice(suffixes)}" for _ in range(4000)]


@pytest.mark.parametrize("name", NAMES)
def test_plain_forms_read_as_the_decimal_parse_reads_them(name):
    resources.quantity_to_int.cache_clear()  # each text through the function, not a cached answer
    for text in _texts():
        try:
            expected = resources._exact_quantity_to_int(name, text)
        except QuantityError as err:
            with pytest.raises(QuantityError) as ours:
                resources.quantity_to_int(name, text)
            assert str(ours.value) == str(err), (name, text)
        else:
            assert resources.quantity_to_int(name, text) == expected, (name, text)
            assert expected <= MAX_INT64


def test_the_plain_path_rounds_milli_up_for_whole_units():
    # Independent arithmetic: 1001m of memory is 1.001 bytes, Value() rounds up to 2.
    assert resources.quantity_to_int("memory", "1001m") == 2
    assert resources.quantity_to_int("memory", "1000m") == 1
    assert resources.quantity_to_int("cpu", "1001m") == 1001
    assert resources.quantity_to_int("cpu", "2") == 2000
    assert resources.quantity_to_int("memory", "3Gi") == 3 * 2**30
