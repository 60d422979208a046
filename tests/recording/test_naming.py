"""How the recorder names host arrays: the address helper it reads views with, and the
name a command's array gets from the user's variables (itself, else the array it views)."""

from __future__ import annotations

import numpy as np
import pytest

from luisa_nb.recording import naming
from luisa_nb.recording.naming import array_name, data_address, python_data_address


def arrays() -> list[np.ndarray]:
    base = np.arange(64, dtype=np.float32)
    return [
        base,
        base[8:24],
        base.reshape(8, 8)[2],
        base.view(np.uint8)[4:],
        np.empty(0, np.float64),
        np.zeros((3, 4), np.int16).T,
        np.float32(2.5) * np.ones(1, np.float32),
    ]


@pytest.mark.parametrize("array", arrays(), ids=lambda a: f"{a.dtype}{a.shape}")
def test_data_address_is_the_address_numpy_gives(array):
    assert data_address(array) == python_data_address(array) == array.ctypes.data


def test_data_address_refuses_what_is_not_an_array():
    if data_address is python_data_address:
        pytest.skip("the C helper is not built")
    with pytest.raises(TypeError, match="numpy array"):
        data_address(b"bytes")


def test_an_array_is_named_after_its_variable_else_after_the_array_it_views():
    whole = np.arange(32, dtype=np.float32)
    part = whole[8:16]
    alias = part
    fresh = np.ones(4, np.float32)
    namespace = {"whole": whole, "_hidden": fresh}
    assert array_name(whole, [namespace]) == "whole"
    assert array_name(part, [namespace]) == "whole[8:16]"
    assert array_name(part, [{"alias": alias, **namespace}]) == "alias"
    assert array_name(whole[:], [namespace]) == "whole"
    assert array_name(fresh, [namespace]) is None  # private names do not count
    assert array_name(np.frombuffer(b"abcd", np.uint8), [namespace]) is None
    naming.give_name(fresh, "given")
    assert array_name(fresh, [{"other": fresh}]) == "given"
