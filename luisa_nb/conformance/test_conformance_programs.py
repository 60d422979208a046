"""The fixed programs (the typed ones too: vectors, structs, an image), and uploads
larger than the backend's staging memory."""

from __future__ import annotations

import pytest

from luisa_nb.conformance.programs import CAPACITY_PROGRAMS, FIXED_PROGRAMS, TYPED_PROGRAMS
from luisa_nb.conformance.verify import check_program

LARGEST_CAPACITY = 64 * 1024 * 1024
"""Staging memory beyond this many bytes would make the capacity programs slow."""


@pytest.mark.parametrize(
    "make_program", FIXED_PROGRAMS + TYPED_PROGRAMS, ids=lambda make: make.__name__
)
def test_program(luisa_device, make_program):
    failure = check_program(luisa_device, make_program())
    if failure:
        pytest.fail(failure, pytrace=False)


@pytest.mark.parametrize("make_program", CAPACITY_PROGRAMS, ids=lambda make: make.__name__)
def test_uploads_larger_than_staging_capacity(luisa_device, make_program):
    capacity = luisa_device.info.get("staging_capacity")
    if capacity is None:
        pytest.skip(
            f"backend {luisa_device.name!r} has unbounded staging memory "
            f"(device.info['staging_capacity'] is None)"
        )
    if capacity > LARGEST_CAPACITY:
        pytest.skip(
            f"backend {luisa_device.name!r} stages {capacity} bytes, more than the "
            f"{LARGEST_CAPACITY} this suite moves; create the device with a smaller "
            f"staging_capacity= to exercise it"
        )
    failure = check_program(luisa_device, make_program(capacity))
    if failure:
        pytest.fail(failure, pytrace=False)
