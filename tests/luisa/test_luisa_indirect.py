"""Indirect dispatch through luisa-python's API (``IndirectDispatchBuffer``,
``set_dispatch_count``, ``set_kernel``, ``kernel_id()``, ``dispatch_size=buffer``): the
logic of LuisaCompute's test-indirect.py on every backend, and entries of 2D sizes
in C and Python mode."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import luisa_nb as lnb
import luisa_nb.luisa as luisa
from luisa_nb.kernels.rules import LUISA_RULES
from luisa_nb.luisa.mathtypes import uint3
from luisa_nb.luisa.types import uint
from tests.luisa.running import run_on_luisa_nb

PROGRAM = Path(__file__).parent / "programs" / "indirect.py"
SQUARES = " ".join(str(i * i) for i in range(16))


def printed(output: str, label: str) -> str:
    line = next(line for line in output.splitlines() if line.startswith(label + " "))
    return line.removeprefix(label + " ")


def test_the_program_gives_the_squares(device_name, capsys):
    run_on_luisa_nb(PROGRAM, device_name)
    output = capsys.readouterr().out
    assert printed(output, "all") == SQUARES
    assert printed(output, "offset") == " ".join(["0"] * 15 + ["225"])


def test_the_buffer_has_luisa_pythons_attributes(fresh_session):
    luisa.init("cpu")
    buffer = luisa.IndirectDispatchBuffer(16)
    assert (buffer.size, buffer.bytesize, buffer.stride) == (16, 16 + 16 * 32, 32)


def record(indirect):
    set_block_size(8, 2, 1)  # noqa: F821 (luisa-python finds builtins by name)
    i = dispatch_id().x  # noqa: F821
    indirect.set_kernel(3 - i, uint3(8, 2, 1), uint3(i + 1, i + 1, 1), uint(10 + i))
    if i == 0:
        indirect.set_dispatch_count(4)


def add(grid):
    set_block_size(8, 2, 1)  # noqa: F821
    p = dispatch_id()  # noqa: F821
    grid.atomic_fetch_add(p.y * 8 + p.x, int(kernel_id()))  # noqa: F821


@pytest.mark.parametrize("mode", ["c", "python"])
def test_entries_run_with_their_size_and_kernel_id(fresh_session, mode):
    """Entries recorded in reverse order, with 2D sizes; each thread adds its kernel id to
    the element of its dispatch id, so element (y, x) sums the ids of the entries covering
    it."""
    luisa.init("cpu")
    indirect = luisa.IndirectDispatchBuffer(4)
    grid = luisa.Buffer(4 * 8, int)
    grid.copy_from(np.zeros(32, dtype=np.int32))
    lnb.kernel(record, mode=mode, rules=LUISA_RULES)(indirect, dispatch_size=4)
    lnb.kernel(add, mode=mode, rules=LUISA_RULES)(grid, dispatch_size=indirect)
    expected = np.zeros((4, 8), np.int32)
    for i in range(4):
        expected[: i + 1, : i + 1] += 10 + i
    np.testing.assert_array_equal(grid.numpy().reshape(4, 8), expected)
    count, entries = indirect.entries()
    assert count == 4
    assert entries["kernel_id"].tolist() == [13, 12, 11, 10]
    assert entries["dispatch_size"].tolist() == [[4, 4, 1], [3, 3, 1], [2, 2, 1], [1, 1, 1]]
    assert entries["block_size"].tolist() == [[8, 2, 1]] * 4
