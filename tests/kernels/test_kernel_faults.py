"""The fault guard: a compiled kernel that touches unmapped memory (possible with
``checks=False``) fails its dispatch with ``KernelFaultError`` and the process goes on; a
fault anywhere else still ends the process as before. Each case runs in a subprocess, so
that a fault the guard misses fails the test instead of ending pytest."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

import pytest

from luisa_nb.errors import KernelError, KernelFaultError
from luisa_nb.kernels import compiler_available

pytestmark = [
    pytest.mark.skipif(not compiler_available(), reason="no C compiler"),
    pytest.mark.skipif(sys.platform != "linux", reason="the fault guard is tested on Linux"),
]

REPOSITORY = Path(__file__).resolve().parents[2]

FAULTING_DISPATCH = """
import sys
import numpy as np
import luisa_nb as lnb
from luisa_nb.errors import CommandFailedError
from tests.kernels import checked_kernels

name, size = sys.argv[1], int(sys.argv[2])
device = lnb.create_device("cpu")
source = device.create_buffer(size, np.float32)
out = device.create_buffer(size, np.float32)
arguments = {"gather_far": (source, out), "scatter_far_looping": (out, 3)}.get(name, (out,))
kernel = lnb.kernel(checks=False)(getattr(checked_kernels, name))
with lnb.trace() as trace:
    kernel(*arguments, dispatch_size=size)
    try:
        device.synchronize()
    except CommandFailedError as error:
        print("error:", type(error.__cause__).__name__, error.__cause__)
(command,) = trace.commands
print("status:", command.status.name)
data = np.arange(size, dtype=np.float32)
source.copy_from(data)
lnb.kernel(checks=False)(checked_kernels.shifted_copy)(source, out, 0, dispatch_size=size)
print("later dispatch:", "correct" if np.array_equal(out.numpy(), data) else "wrong")
"""


def run_python(program: str, *arguments: str, faulthandler: bool = False):
    options = ["-X", "faulthandler"] if faulthandler else []
    command = [sys.executable, *options, "-c", program, *arguments]
    return subprocess.run(command, cwd=REPOSITORY, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(
    ("name", "size"),
    [
        ("scatter_far", 1000),  # on the calling thread
        ("scatter_far", 2**19),  # on every OpenMP thread
        ("gather_far", 1000),
        ("gather_far", 2**19),
        ("scatter_far_looping", 100),
        ("scatter_far_looping", 4096),
        ("scatter_far_in_blocks", 4096),
    ],
)
def test_a_fault_in_a_kernel_fails_its_dispatch_and_the_process_goes_on(
    name: str, size: int
) -> None:
    result = run_python(FAULTING_DISPATCH, name, str(size))
    assert result.returncode == 0, f"exit {result.returncode}: {result.stderr}"
    error, status, later = result.stdout.splitlines()
    assert error.startswith(f"error: KernelFaultError kernel {name!r}: ")
    assert "SIGSEGV" in error and "checks=True" in error
    assert status == "status: FAILED"
    assert later == "later dispatch: correct"


def test_the_guard_catches_kernel_faults_under_pythons_faulthandler() -> None:
    """faulthandler (which pytest also enables) installs its handler first; the guard's
    runs before it and leaves it the faults outside kernels."""
    result = run_python(FAULTING_DISPATCH, "scatter_far", "2048", faulthandler=True)
    assert result.returncode == 0, f"exit {result.returncode}: {result.stderr}"
    assert "KernelFaultError" in result.stdout
    assert "Fatal Python error" not in result.stderr


OUTSIDE_KERNELS = """
import ctypes, os, signal, sys
import numpy as np
import luisa_nb as lnb
from luisa_nb.kernels.c.fault_guard import guard_address
from tests.kernels import checked_kernels

device = lnb.create_device("cpu")
out = device.create_buffer(4, np.float32)
lnb.kernel(checks=False)(checked_kernels.mark_origin)(out, dispatch_size=1)
device.synchronize()
print("guard installed:", guard_address() != 0, flush=True)
if sys.argv[1] == "fault":
    ctypes.string_at(0)
else:
    os.kill(os.getpid(), signal.SIGSEGV)
print("still running")
"""


@pytest.mark.parametrize("faulthandler", [False, True], ids=["plain", "faulthandler"])
@pytest.mark.parametrize("how", ["fault", "sent"])
def test_a_segfault_outside_kernels_still_ends_the_process(how: str, faulthandler: bool) -> None:
    result = run_python(OUTSIDE_KERNELS, how, faulthandler=faulthandler)
    assert result.stdout == "guard installed: True\n", result.stderr
    assert result.returncode == -signal.SIGSEGV, result.stderr
    if faulthandler:
        assert "Fatal Python error: Segmentation fault" in result.stderr


def test_kernel_fault_error_is_a_kernel_error() -> None:
    assert issubclass(KernelFaultError, KernelError)
