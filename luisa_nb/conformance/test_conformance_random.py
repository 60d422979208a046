"""200 random programs, each checked against the oracle."""

from __future__ import annotations

import pytest

from luisa_nb.conformance.generator import RANDOM_PROGRAMS, random_program
from luisa_nb.conformance.verify import check_program


@pytest.mark.parametrize("index", range(RANDOM_PROGRAMS))
def test_random_program(luisa_device, index):
    failure = check_program(luisa_device, random_program(index))
    if failure:
        pytest.fail(failure, pytrace=False)
