"""Generated CUDA source through NVRTC alone: a GPU binary with no GPU and no driver.

NVRTC is a library, and CuPy's bindings to it (``cupy.cuda.nvrtc``) load it without
touching a device. So any machine with ``pip install luisa_nb[cuda]``, GPU or not, can
check that NVRTC accepts what :class:`~luisa_nb.kernels.cuda.emitter.CudaEmitter`
writes: :func:`compile_cuda` builds a binary for a real architecture (``sm_90``, an
H100 or H200), which runs NVRTC's code generator too, or PTX for a virtual one
(``compute_75``). The ``cuda`` backend compiles through ``cupy.RawModule`` for its own
GPU, with the same :data:`OPTIONS`.

NVRTC 12.9 also re-installs the process's SIGINT and SIGTERM handlers with
``SA_RESTART``. The handler is still Python's, but a wait in the main thread (such as
``synchronize()``) then resumes after the signal instead of returning, so Ctrl-C no
longer stops it. Every compile therefore runs inside :func:`signal_handling_kept`.
"""

from __future__ import annotations

import ctypes
import os
import re
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from luisa_nb.errors import BackendUnavailableError, KernelBuildError

OPTIONS = ("-std=c++17", "--fmad=false")
"""No FMA contraction, as the C path compiles with ``-ffp-contract=off``."""
INSTALL_HINT = (
    "`pip install luisa_nb[cuda]` (which installs cupy-cuda12x and nvidia-cuda-nvrtc-cu12, "
    "for CUDA 12)"
)
SIGACTION_BYTES = 512
"""Room for any C library's ``struct sigaction`` (glibc's has 152 bytes)."""
WARNING = re.compile(r"^[^\n]*\((?P<line>\d+)\): warning #(?P<number>\d+)-D: (?P<text>.*)$", re.M)
ENTRY_REGISTERS = re.compile(
    r"Compiling entry function '(?P<entry>[^']+)'.*?Used (?P<registers>\d+) registers", re.S
)


@dataclass(frozen=True)
class NvrtcWarning:
    """One warning of NVRTC's log: its number (``177`` in ``#177-D``), the source line
    and the message."""

    number: int
    line: int
    text: str


@dataclass(frozen=True)
class NvrtcBuild:
    """What NVRTC made of one source: a cubin (``sm_*``) or PTX (``compute_*``), the
    warnings of its log, and for a cubin the registers each thread of every
    ``__global__`` function uses (by name)."""

    binary: bytes
    warnings: tuple[NvrtcWarning, ...]
    registers: dict[str, int]


@contextmanager
def signal_handling_kept() -> Iterator[None]:
    """Run the block, then give every signal the handler and flags it had before (see
    the module's docstring). Each ``struct sigaction`` is kept as opaque bytes, so its
    layout does not matter; does nothing outside POSIX."""
    if os.name != "posix":
        yield
        return
    libc = ctypes.CDLL(None)
    saved = {}
    for signum in signal.Signals:
        action = ctypes.create_string_buffer(SIGACTION_BYTES)
        if libc.sigaction(int(signum), None, action) == 0:
            saved[int(signum)] = action
    try:
        yield
    finally:
        for signum, action in saved.items():
            libc.sigaction(signum, action, None)


def _nvrtc():
    """CuPy's NVRTC bindings, with the library loaded; BackendUnavailableError saying
    what to install when CuPy or NVRTC is missing."""
    try:
        from cupy.cuda import nvrtc
    except ImportError as error:
        raise BackendUnavailableError(
            f"compiling CUDA source needs CuPy's NVRTC bindings, and CuPy is not installed "
            f"here ({error}); install them with {INSTALL_HINT}"
        ) from error
    try:
        nvrtc.getVersion()
    except RuntimeError as error:  # cuda.pathfinder's DynamicLibNotFoundError
        raise BackendUnavailableError(
            f"CuPy cannot load NVRTC, the library that compiles CUDA source ({error}); "
            f"install it with {INSTALL_HINT}, or a CUDA 12 toolkit"
        ) from error
    return nvrtc


def nvrtc_version() -> tuple[int, int]:
    """NVRTC's (major, minor); raises :class:`BackendUnavailableError` saying what to
    install when CuPy or NVRTC is missing."""
    return tuple(_nvrtc().getVersion())


def compile_cuda(source: str, name: str, arch: str) -> NvrtcBuild:
    """``source`` compiled by NVRTC with :data:`OPTIONS` for ``arch`` (``sm_90``: a
    cubin, with ptxas reporting each entry's registers; ``compute_90``: PTX). ``name``
    names the source in NVRTC's messages. Raises :class:`KernelBuildError` holding
    NVRTC's log when it rejects the source."""
    nvrtc = _nvrtc()
    cubin = arch.startswith("sm_")
    options = [*OPTIONS, f"-arch={arch}", *(["-Xptxas=-v"] if cubin else [])]
    program = nvrtc.createProgram(source, f"{name}.cu", [], [])
    try:
        try:
            with signal_handling_kept():
                nvrtc.compileProgram(program, options)
        except nvrtc.NVRTCError:
            raise KernelBuildError(
                f"kernel {name!r}: NVRTC rejected the generated CUDA source for {arch} "
                f"(see kernel.source(...) for the C twin):\n{nvrtc.getProgramLog(program)}"
            ) from None
        binary = nvrtc.getCUBIN(program) if cubin else nvrtc.getPTX(program)
        log = nvrtc.getProgramLog(program)
    finally:
        nvrtc.destroyProgram(program)
    warnings = tuple(
        NvrtcWarning(int(match["number"]), int(match["line"]), match["text"])
        for match in WARNING.finditer(log)
    )
    registers = {m["entry"]: int(m["registers"]) for m in ENTRY_REGISTERS.finditer(log)}
    return NvrtcBuild(binary, warnings, registers)
