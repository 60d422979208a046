"""``luisa_nb.kernels.cuda.nvrtc``: NVRTC compiling CUDA source with no GPU, what it says
when it is missing, and keeping Ctrl-C working after it ran. The generated source of
every codegen case goes through it in ``test_cuda_codegen.py``."""

from __future__ import annotations

import os
import signal
import sys
import types

import pytest
from helpers.cuda import needs_nvrtc, nvrtc_library_not_found
from helpers.interrupts import ctrl_c_stops_a_wait, needs_main_thread

from luisa_nb.errors import BackendUnavailableError, KernelBuildError
from luisa_nb.kernels.cuda.nvrtc import NvrtcWarning, compile_cuda, signal_handling_kept

UNUSED_VARIABLE = 'extern "C" __global__ void k(float *x) {\n    int unused = 1;\n}\n'

needs_posix = pytest.mark.skipif(os.name != "posix", reason="signal flags are POSIX")


@needs_nvrtc
def test_a_cubin_for_a_real_architecture_and_ptx_for_a_virtual_one():
    cubin = compile_cuda(UNUSED_VARIABLE, "k", "sm_90").binary
    ptx = compile_cuda(UNUSED_VARIABLE, "k", "compute_75").binary
    assert cubin.startswith(b"\x7fELF")
    assert b".target sm_75" in ptx and b".entry k(" in ptx


@needs_nvrtc
def test_warnings_are_read_from_its_log():
    (warning,) = compile_cuda(UNUSED_VARIABLE, "k", "compute_75").warnings
    assert warning == NvrtcWarning(177, 2, 'variable "unused" was declared but never referenced')


@needs_nvrtc
def test_a_rejected_source_raises_kernel_build_error_with_the_log():
    with pytest.raises(KernelBuildError) as caught:
        compile_cuda("__global__ void k() {\n    int x = ;\n}\n", "broken", "sm_90")
    message = str(caught.value)
    assert "kernel 'broken': NVRTC rejected the generated CUDA source for sm_90" in message
    assert "broken.cu(2): error: expected an expression" in message


@needs_nvrtc
@needs_posix
@needs_main_thread
def test_ctrl_c_still_stops_a_wait_after_a_compile():
    compile_cuda(UNUSED_VARIABLE, "k", "compute_75")
    assert ctrl_c_stops_a_wait()


@needs_posix
@needs_main_thread
def test_signal_handling_is_given_back_as_it_was():
    """What NVRTC does (SIGINT restarting system calls) is undone after the block."""
    handler = signal.getsignal(signal.SIGINT)
    signal.signal(signal.SIGINT, handler)  # Python's own flags, whatever ran before
    try:
        with signal_handling_kept():
            signal.siginterrupt(signal.SIGINT, False)
        assert ctrl_c_stops_a_wait()
        signal.siginterrupt(signal.SIGINT, False)
        assert not ctrl_c_stops_a_wait(), "the check cannot see restarting system calls"
    finally:
        signal.signal(signal.SIGINT, handler)


def test_without_cupy_compiling_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)  # import cupy raises ImportError
    monkeypatch.delitem(sys.modules, "cupy.cuda", raising=False)
    monkeypatch.delitem(sys.modules, "cupy.cuda.nvrtc", raising=False)
    with pytest.raises(BackendUnavailableError) as caught:
        compile_cuda(UNUSED_VARIABLE, "k", "sm_90")
    message = str(caught.value)
    assert "needs CuPy's NVRTC bindings, and CuPy is not installed" in message
    assert "pip install luisa_nb[cuda]" in message


def test_without_the_nvrtc_library_compiling_says_what_to_install(monkeypatch):
    cuda = types.ModuleType("cupy.cuda")
    cuda.nvrtc = types.SimpleNamespace(getVersion=nvrtc_library_not_found)
    monkeypatch.setitem(sys.modules, "cupy", types.ModuleType("cupy"))
    monkeypatch.setitem(sys.modules, "cupy.cuda", cuda)
    monkeypatch.setitem(sys.modules, "cupy.cuda.nvrtc", cuda.nvrtc)
    with pytest.raises(BackendUnavailableError) as caught:
        compile_cuda(UNUSED_VARIABLE, "k", "sm_90")
    message = str(caught.value)
    assert "CuPy cannot load NVRTC" in message and "libnvrtc.so.12" in message
    assert "nvidia-cuda-nvrtc-cu12" in message
