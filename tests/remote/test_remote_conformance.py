"""The conformance suite's fixed programs, the typed ones (vectors, structs, an image)
included, on remote devices: direct and relayed, under both staging policies."""

import pytest

pytest.importorskip("zmq")

from luisa_nb.conformance.programs import FIXED_PROGRAMS, TYPED_PROGRAMS
from luisa_nb.conformance.verify import check_program


@pytest.mark.parametrize(
    "make_program", FIXED_PROGRAMS + TYPED_PROGRAMS, ids=lambda make: make.__name__
)
def test_program(device, make_program):
    failure = check_program(device, make_program())
    if failure:
        pytest.fail(failure, pytrace=False)
