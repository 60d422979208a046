"""CUDA C++ from :class:`~luisa_nb.kernels.cuda_emitter.CudaEmitter`, run on the CPU.

:data:`EMULATION_HEADER` defines what NVRTC provides (``__global__``, ``blockIdx`` and
the other built-in variables, atomics, bit casts) for one CPU thread, and
:func:`emulate` builds generated kernels with the system C++ compiler, each inside its
own namespace of one translation unit, with an entry per kernel that walks the grid
CUDA would launch (``cuda_emitter.grid_of``) block by block and thread by thread. The
result is an executable with the C path's interface, so tests run the same IR through
both and compare the buffers. Serial threads make atomics plain read-modify-writes; the
built-in variables are thread-local, so launches on several host threads do not mix.
"""

from __future__ import annotations

import os
import shlex
import shutil
from collections.abc import Sequence
from pathlib import Path

from luisa_nb.errors import KernelBuildError
from luisa_nb.kernels import ir
from luisa_nb.kernels.c_emitter import argument_struct
from luisa_nb.kernels.cuda_emitter import BLOCK_SIZE, MAX_GRID_YZ, CudaEmitter
from luisa_nb.kernels.executable import CExecutable, Executable, count_parameters
from luisa_nb.kernels.source import KernelSource
from luisa_nb.kernels.toolchain import cached_build, load_launch_function
from luisa_nb.kernels.type_system import ScalarType

FLAGS = (
    "-x",
    "c++",
    "-std=gnu++17",
    "-O0",
    "-fPIC",
    "-shared",
    "-fno-math-errno",
    "-ffp-contract=off",
    "-fwrapv",
    "-w",
    "-pipe",
)

EMULATION_HEADER = """\
/* luisa_nb: what NVRTC provides, for CUDA kernels run by one CPU thread. */
#include <stdint.h>
#include <string.h>
#include <math.h>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline

struct lnb_dim3 { unsigned int x, y, z; };
static thread_local lnb_dim3 blockIdx, threadIdx, blockDim, gridDim;

template <typename T> static inline T atomicAdd(T *address, T value) {
    const T old = *address;
    *address = old + value;
    return old;
}
template <typename T> static inline T atomicAnd(T *address, T value) {
    const T old = *address;
    *address = old & value;
    return old;
}
template <typename T> static inline T atomicOr(T *address, T value) {
    const T old = *address;
    *address = old | value;
    return old;
}
template <typename T> static inline T atomicXor(T *address, T value) {
    const T old = *address;
    *address = old ^ value;
    return old;
}
template <typename T> static inline T atomicExch(T *address, T value) {
    const T old = *address;
    *address = value;
    return old;
}
template <typename T> static inline T atomicCAS(T *address, T expected, T desired) {
    const T old = *address;
    if (old == expected) *address = desired;
    return old;
}

static inline float __uint_as_float(uint32_t bits) {
    float value;
    memcpy(&value, &bits, sizeof value);
    return value;
}
static inline uint32_t __float_as_uint(float value) {
    uint32_t bits;
    memcpy(&bits, &value, sizeof bits);
    return bits;
}
static inline double __longlong_as_double(long long bits) {
    double value;
    memcpy(&value, &bits, sizeof value);
    return value;
}
static inline long long __double_as_longlong(double value) {
    long long bits;
    memcpy(&bits, &value, sizeof bits);
    return bits;
}
"""

DRIVER = """\
/* Runs kernel {kernel} as CUDA would launch it, one thread after another; `cancel` is
   the flag the kernel polls (the C path's launch record carries it). */
extern "C" void {entry}_with_cancel(const void *packed, {space}::lnb_launch *launch,
                                    const int32_t *cancel) {{
    {space}::{kernel}_arguments a;
    memcpy(&a, packed, sizeof a);
    for (int axis = 0; axis < 3; ++axis) {{
        if (a.size[axis] < 0 || a.size[axis] > INT32_MAX) {{
            launch->status = {space}::LNB_INVALID_SIZE;
            return;
        }}
    }}
    const int64_t blocks = (a.size[0] + {block} - 1) / {block};
    gridDim.x = (unsigned int)(blocks > 0 ? blocks : 1);
    gridDim.y = (unsigned int)(a.size[1] < 1 ? 1 : (a.size[1] < {yz} ? a.size[1] : {yz}));
    gridDim.z = (unsigned int)(a.size[2] < 1 ? 1 : (a.size[2] < {yz} ? a.size[2] : {yz}));
    blockDim.x = {block};
    blockDim.y = 1;
    blockDim.z = 1;
    for (blockIdx.z = 0; blockIdx.z < gridDim.z; ++blockIdx.z)
        for (blockIdx.y = 0; blockIdx.y < gridDim.y; ++blockIdx.y)
            for (blockIdx.x = 0; blockIdx.x < gridDim.x; ++blockIdx.x)
                for (threadIdx.x = 0; threadIdx.x < blockDim.x; ++threadIdx.x)
                    {space}::{kernel}(a, launch, cancel);
}}

extern "C" void {entry}(const void *packed, {space}::lnb_launch *launch) {{
    {entry}_with_cancel(packed, launch, launch->cancel);
}}"""


def find_cxx_compiler() -> list[str] | None:
    """The C++ compiler: ``$CXX`` (may carry arguments), else ``c++``, ``g++`` or
    ``clang++`` on ``PATH``."""
    words = shlex.split(os.environ.get("CXX", ""))
    candidates = [words] if words else [["c++"], ["g++"], ["clang++"]]
    for command in candidates:
        path = shutil.which(command[0])
        if path:
            return [path, *command[1:]]
    return None


class EmulatedCudaExecutable(CExecutable):
    """A kernel's CUDA source run on the CPU; ``launch`` takes what a C executable's
    takes. ``cuda_source`` is the source NVRTC would compile; ``source`` the
    translation unit built here."""

    def __init__(
        self,
        kernel: ir.KernelIR,
        source: KernelSource,
        checks: bool | str,
        cuda_source: str,
        unit: str,
        library: Path,
        entry: str,
    ) -> None:
        Executable.__init__(self, kernel, source, checks)
        if checks:
            self.parameters += count_parameters(kernel)
        self.cuda_source = cuda_source
        self.source = unit
        self._function = load_launch_function(library, entry)
        self._pack = argument_struct(kernel, checks).pack
        self._composites = {
            position: slot.type
            for position, slot in enumerate(kernel.scalars)
            if not isinstance(slot.type, ScalarType)
        }


def emulate(
    kernels: Sequence[tuple[ir.KernelIR, KernelSource, bool | str]],
) -> list[EmulatedCudaExecutable]:
    """Executables of the CUDA source of each (IR, source, checks), built as one
    translation unit. Kernel names must differ (their ``__global__`` functions are
    ``extern "C"``)."""
    emitted = []
    for kernel, _, checks in kernels:
        emitter = CudaEmitter(kernel, checks)
        emitted.append((emitter.emit(), emitter.entry_name))
    unit = emulation_unit(emitted)
    library = build_unit(unit)
    emitted = [(source, f"lnb_emulate{index}") for index, (source, _) in enumerate(emitted)]
    return [
        EmulatedCudaExecutable(kernel, source, checks, cuda_source, unit, library, entry)
        for (kernel, source, checks), (cuda_source, entry) in zip(kernels, emitted, strict=True)
    ]


def emulation_unit(kernels: Sequence[tuple[str, str]]) -> str:
    """One C++ translation unit running each (CUDA source, ``__global__`` name): kernel
    ``i`` sits in namespace ``lnb_kernel<i>``; ``lnb_emulate<i>(packed, record)`` runs it
    as the C path's launch entry does, ``lnb_emulate<i>_with_cancel(packed, record,
    cancel)`` as a CUDA launch with those three arguments."""
    parts = [EMULATION_HEADER]
    for index, (cuda_source, kernel) in enumerate(kernels):
        space = f"lnb_kernel{index}"
        parts.append(f"namespace {space} {{\n{cuda_source}}}")
        parts.append(
            DRIVER.format(
                kernel=kernel, entry=f"lnb_emulate{index}", space=space, block=BLOCK_SIZE,
                yz=MAX_GRID_YZ,
            )
        )  # fmt: skip
    return "\n\n".join(parts) + "\n"


def build_unit(unit: str) -> Path:
    """A shared library built from the C++ translation unit ``unit`` (cached on disk by a
    hash of the source, the compiler and its version, and the flags)."""
    compiler = find_cxx_compiler()
    if compiler is None:
        raise KernelBuildError(
            "the CUDA emulation needs a C++ compiler: set CXX or put c++, g++ or clang++ on PATH"
        )
    what = "the C++ compiler, on the CUDA emulation,"
    return cached_build("cuda-emulation", unit, compiler, FLAGS, what, extension="cu")[0]
