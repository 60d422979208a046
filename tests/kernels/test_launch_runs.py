"""Runs of prepared launches: the C loop of the fault guard's library, and the Python loop
that stands in for it where that library could not be built."""

from __future__ import annotations

from array import array

import numpy as np
import pytest

from luisa_nb.errors import KernelIndexError
from luisa_nb.kernels import KernelDefinition, compiler_available
from luisa_nb.kernels.c import launch_runs
from luisa_nb.kernels.executable import NEVER_CANCELLED

from . import checked_kernels
from .helpers import FakeBuffer, dims_of, run

pytestmark = pytest.mark.skipif(not compiler_available(), reason="no C compiler (cc) found")


@pytest.mark.parametrize("loop", ["c", "python"])
def test_a_run_stops_at_the_first_launch_that_fails(loop: str, monkeypatch) -> None:
    if loop == "python":
        monkeypatch.setattr(launch_runs, "launch_loop", lambda: None)
    size = 64
    source = FakeBuffer(np.arange(1, size + 1, dtype=np.float32))
    out = FakeBuffer(np.zeros(size + 8, np.float32))
    executable = run(KernelDefinition(checked_kernels.shifted_copy, mode="c"), size, source, out, 0)
    out.array[:] = 0.0
    handles = [source.array.ctypes.data, out.array.ctypes.data]

    def prepared(shift: int):
        scalars = [shift, source.array.size, out.array.size]
        return executable.prepare(dims_of(size), handles, scalars)

    times = array("q")
    launches = [prepared(2), prepared(8 + 1), prepared(0)]
    done, error = launch_runs.run_launches(launches, NEVER_CANCELLED, times)
    assert done == 1
    assert isinstance(error, KernelIndexError)
    assert len(times) == 2 and times[0] <= times[1]
    np.testing.assert_array_equal(out.array[:2], 0.0)  # the third did not run
    assert out.array[2] == source.array[0]  # the first did
    assert launch_runs.run_launches([prepared(0)], NEVER_CANCELLED) == (1, None)
    np.testing.assert_array_equal(out.array[:size], source.array)
