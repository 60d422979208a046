"""CUDA C++ from :class:`~luisa_nb.kernels.cuda.emitter.CudaEmitter`, run on the CPU.

:data:`EMULATION_HEADER` defines what NVRTC provides (``__global__``, ``blockIdx`` and
the other built-in variables, atomics, bit casts) for one CPU thread, and
:func:`emulate` builds generated kernels with the system C++ compiler, each inside its
own namespace of one translation unit, with an entry per kernel that walks the grid
CUDA would launch (``kernels.cuda.emitter.grid_of``) block by block and thread by thread. The
result is an executable with the C path's interface, so tests run the same IR through
both and compare the buffers. Serial threads make atomics plain read-modify-writes; the
built-in variables are thread-local, so launches on several host threads do not mix.

Kernels that call ``__syncthreads()`` run each block's threads as fibers
(``ucontext``), each on its own stack: every thread runs until it reaches the barrier,
and only when all have do they go on, so a thread reads what the others of its block
wrote before the barrier, as on a GPU. A barrier that some threads of a block never
reach (they returned) stops the launch with :class:`EmulationError`. ``__shared__``
variables are the host thread's (one block runs at a time). What this proves: the CUDA
source's values and barrier placement, bit for bit against the C path. What it cannot:
GPU timing, real concurrency between threads (races that a serial order hides), and
NVRTC's acceptance of the source (the GPU tests compile every case with NVRTC).
"""

from __future__ import annotations

import ctypes
import os
import shlex
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from luisa_nb.errors import KernelBuildError, KernelError
from luisa_nb.kernels import ir
from luisa_nb.kernels.c.emitter import argument_struct
from luisa_nb.kernels.c.executable import CExecutable
from luisa_nb.kernels.c.toolchain import cached_build, load_launch_function
from luisa_nb.kernels.checks import KernelChecks
from luisa_nb.kernels.cuda.emitter import MAX_GRID_YZ, CudaEmitter
from luisa_nb.kernels.executable import CancelFlag, Executable, count_parameters
from luisa_nb.kernels.frontend.source import KernelSource
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
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <cstdio>  /* printf, which NVRTC declares itself */
#include <ucontext.h>

#define __global__
#define __launch_bounds__(threads)
#define __device__
#define __host__
#define __forceinline__ inline
/* One block runs at a time on a host thread, so a block's shared variables are that
   thread's; each block zeroes or writes them before use, as on a GPU. */
#define __shared__ static thread_local
#define __syncthreads() lnb_barrier()

struct lnb_dim3 { unsigned int x, y, z; };
static thread_local lnb_dim3 blockIdx, threadIdx, blockDim, gridDim;

/* What went wrong in the emulation itself (a barrier that not every thread of a block
   reached), for the caller to raise; NULL when nothing did. */
static thread_local const char *lnb_emulation_failure;

/* The threads of a block with barriers are fibers, each on its own stack: a thread runs
   until __syncthreads() or its end, then the next runs; once every thread waits at the
   barrier, all resume. */
enum { LNB_FIBER_READY, LNB_FIBER_WAITING, LNB_FIBER_DONE };
struct lnb_fiber { ucontext_t context; lnb_dim3 thread; int state; };
static thread_local lnb_fiber *lnb_fibers;
static thread_local unsigned int lnb_current;
static thread_local ucontext_t lnb_scheduler;
static thread_local void (*lnb_fiber_body)(void);
static const size_t LNB_FIBER_STACK = 256 * 1024;

static void lnb_barrier(void) {
    if (lnb_fibers == NULL) {
        lnb_emulation_failure = "__syncthreads() ran outside a block of fibers";
        return;
    }
    lnb_fiber *fiber = &lnb_fibers[lnb_current];
    fiber->state = LNB_FIBER_WAITING;
    swapcontext(&fiber->context, &lnb_scheduler);
}

static void lnb_fiber_main(void) {
    lnb_fiber_body();
    lnb_fibers[lnb_current].state = LNB_FIBER_DONE;
}

/* Run block blockIdx of `body` (blockDim threads) as fibers on `stacks`. */
static void lnb_run_block(void (*body)(void), char *stacks) {
    const unsigned int count = blockDim.x * blockDim.y * blockDim.z;
    lnb_fiber *fibers = (lnb_fiber *)calloc(count, sizeof *fibers);
    if (fibers == NULL) {
        lnb_emulation_failure = "no memory for the fibers of a block";
        return;
    }
    for (unsigned int t = 0; t < count; ++t) {
        lnb_fiber *fiber = &fibers[t];
        fiber->thread.x = t % blockDim.x;
        fiber->thread.y = t / blockDim.x % blockDim.y;
        fiber->thread.z = t / (blockDim.x * blockDim.y);
        getcontext(&fiber->context);
        fiber->context.uc_stack.ss_sp = stacks + (size_t)t * LNB_FIBER_STACK;
        fiber->context.uc_stack.ss_size = LNB_FIBER_STACK;
        fiber->context.uc_link = &lnb_scheduler;
        makecontext(&fiber->context, lnb_fiber_main, 0);
    }
    lnb_fibers = fibers;
    lnb_fiber_body = body;
    for (;;) {
        unsigned int waiting = 0, done = 0;
        for (unsigned int t = 0; t < count; ++t) {
            if (fibers[t].state == LNB_FIBER_READY) {
                lnb_current = t;
                threadIdx = fibers[t].thread;
                swapcontext(&lnb_scheduler, &fibers[t].context);
            }
            waiting += fibers[t].state == LNB_FIBER_WAITING;
            done += fibers[t].state == LNB_FIBER_DONE;
        }
        if (waiting == 0) break;
        if (done != 0) {
            lnb_emulation_failure =
                "a thread of a block ended while others waited at __syncthreads()";
            break;
        }
        for (unsigned int t = 0; t < count; ++t) fibers[t].state = LNB_FIBER_READY;
    }
    lnb_fibers = NULL;
    free(fibers);
}

extern "C" const char *lnb_emulation_failed(void) {
    const char *failure = lnb_emulation_failure;
    lnb_emulation_failure = NULL;
    return failure;
}

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
{before}
/* Launches kernel {kernel} on grid[3] blocks of block[3] threads, as CUDA would, one
   thread after another; `cancel` is the flag the kernel polls. */
extern "C" void {entry}_grid(const uint32_t *grid, const uint32_t *block, const void *packed,
                             {space}::lnb_launch *launch, const int32_t *cancel) {{
    {space}::{kernel}_arguments a;
    memcpy(&a, packed, sizeof a);
    lnb_emulation_failure = NULL;
    gridDim.x = grid[0];
    gridDim.y = grid[1];
    gridDim.z = grid[2];
    blockDim.x = block[0];
    blockDim.y = block[1];
    blockDim.z = block[2];
{run}
}}

/* The bytes of kernel {kernel}'s arguments, which a CUDA launch copies when it is made. */
extern "C" size_t {entry}_grid_arguments_size(void) {{
    return sizeof({space}::{kernel}_arguments);
}}

/* As the C path's launch entry: checks the size, then launches the grid grid_of gives. */
extern "C" void {entry}(const void *packed, {space}::lnb_launch *launch) {{
    {space}::{kernel}_arguments a;
    memcpy(&a, packed, sizeof a);
    const uint32_t block[3] = {{{block}}};
    uint32_t grid[3];
    for (int axis = 0; axis < 3; ++axis) {{
        if (a.size[axis] < 0 || a.size[axis] > INT32_MAX) {{
            launch->status = {space}::LNB_INVALID_SIZE;
            return;
        }}
        const int64_t blocks = (a.size[axis] + block[axis] - 1) / block[axis];
        const int64_t limit = axis == 0 ? INT32_MAX : {yz};
        grid[axis] = (uint32_t)(blocks < 1 ? 1 : (blocks < limit ? blocks : limit));
    }}
    {entry}_grid(grid, block, packed, launch, launch->cancel);
}}"""

THREAD_LOOP = """\
    for (blockIdx.z = 0; blockIdx.z < gridDim.z; ++blockIdx.z)
        for (blockIdx.y = 0; blockIdx.y < gridDim.y; ++blockIdx.y)
            for (blockIdx.x = 0; blockIdx.x < gridDim.x; ++blockIdx.x)
                for (threadIdx.z = 0; threadIdx.z < blockDim.z; ++threadIdx.z)
                    for (threadIdx.y = 0; threadIdx.y < blockDim.y; ++threadIdx.y)
                        for (threadIdx.x = 0; threadIdx.x < blockDim.x; ++threadIdx.x)
                            {space}::{kernel}(a, launch, cancel);"""

FIBER_ARGUMENTS = """\
/* The launch that kernel {kernel}'s fibers run. */
namespace {space}_launch {{
static thread_local const {space}::{kernel}_arguments *arguments;
static thread_local {space}::lnb_launch *record;
static thread_local const int32_t *cancel;
static void run(void) {{ {space}::{kernel}(*arguments, record, cancel); }}
}}
"""

FIBER_LOOP = """\
    {space}_launch::arguments = &a;
    {space}_launch::record = launch;
    {space}_launch::cancel = cancel;
    const size_t threads = (size_t)blockDim.x * blockDim.y * blockDim.z;
    char *stacks = (char *)malloc(threads * LNB_FIBER_STACK);
    if (stacks == NULL) {{
        lnb_emulation_failure = "no memory for the stacks of a block's fibers";
        return;
    }}
    for (blockIdx.z = 0; blockIdx.z < gridDim.z && !lnb_emulation_failure; ++blockIdx.z)
        for (blockIdx.y = 0; blockIdx.y < gridDim.y && !lnb_emulation_failure; ++blockIdx.y)
            for (blockIdx.x = 0; blockIdx.x < gridDim.x && !lnb_emulation_failure; ++blockIdx.x)
                lnb_run_block({space}_launch::run, stacks);
    free(stacks);"""


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
        checks: KernelChecks,
        cuda_source: str,
        unit: str,
        library: Path,
        entry: str,
        bindless_sites: list[ir.BindlessCall],
    ) -> None:
        Executable.__init__(self, kernel, source, checks)
        self.prints = ()  # the CUDA source prints with printf itself
        if checks.bounds:
            self.parameters += count_parameters(kernel)
        self.cuda_source = cuda_source
        self.source = unit
        self.launch_entry = load_launch_function(library, entry)
        self._failed = emulation_failure_function(library)
        self._pack = argument_struct(kernel, checks).pack
        self._composites = {
            position: slot.type
            for position, slot in enumerate(kernel.scalars)
            if not isinstance(slot.type, ScalarType)
        }
        self._heap_names = [name for name, _ in kernel.heaps]
        self._bindless_sites = bindless_sites

    def launch(
        self,
        dims: tuple[int, int, int],
        buffers: Sequence[int],
        scalars: Sequence[Any],
        cancel: CancelFlag | None = None,
    ) -> None:
        """As :meth:`CExecutable.launch`; raises :class:`EmulationError` when the CUDA
        source misbehaved in a way a GPU would not report (a barrier some threads of a
        block never reached)."""
        try:
            super().launch(dims, buffers, scalars, cancel)
        finally:
            failure = self._failed()
        if failure:
            raise EmulationError(
                f"kernel {self.name!r}: the CUDA emulation stopped: {failure.decode()}; the "
                "generated CUDA source would misbehave on a GPU (report this as a bug)"
            )


class EmulationError(KernelError):
    """The CUDA emulation found generated CUDA source that misbehaves."""


def emulation_failure_function(library: Path) -> Callable[[], bytes | None]:
    """The unit's ``lnb_emulation_failed()``: what went wrong in the calling thread's
    last launch (then cleared), or None."""
    function = ctypes.CDLL(str(library)).lnb_emulation_failed
    function.argtypes = []
    function.restype = ctypes.c_char_p
    return function


def emulate(
    kernels: Sequence[tuple[ir.KernelIR, KernelSource, KernelChecks]],
) -> list[EmulatedCudaExecutable]:
    """Executables of the CUDA source of each (IR, source, checks), built as one
    translation unit. Kernel names must differ (their ``__global__`` functions are
    ``extern "C"``)."""
    emitters = [CudaEmitter(kernel, checks) for kernel, _, checks in kernels]
    sources = [emitter.emit() for emitter in emitters]
    unit = emulation_unit(
        [
            (source, emitter.entry_name, emitter.kernel.block_size)
            for source, emitter in zip(sources, emitters, strict=True)
        ]
    )
    library = build_unit(unit)
    return [
        EmulatedCudaExecutable(
            kernel, source, checks, cuda_source, unit, library, f"lnb_emulate{index}",
            emitter.bindless_sites,
        )
        for index, ((kernel, source, checks), cuda_source, emitter) in enumerate(
            zip(kernels, sources, emitters, strict=True)
        )
    ]  # fmt: skip


def emulation_unit(kernels: Sequence[tuple[str, str, tuple[int, int, int]]]) -> str:
    """One C++ translation unit running each (CUDA source, ``__global__`` name, block
    size): kernel ``i`` sits in namespace ``lnb_kernel<i>``; ``lnb_emulate<i>(packed,
    record)`` runs it as the C path's launch entry does (on the grid
    ``kernels.cuda.emitter.grid_of`` gives), ``lnb_emulate<i>_grid(grid, block, packed, record,
    cancel)`` as a CUDA launch of ``grid`` blocks of ``block`` threads (two ``uint32_t[3]``)
    with those three arguments, and ``lnb_emulate<i>_grid_arguments_size()`` is the size
    of the packed arguments such a launch reads. Kernels that call ``__syncthreads()``
    run each block as fibers; ``lnb_emulation_failed()`` says what went wrong in the
    last launch."""
    parts = [EMULATION_HEADER]
    for index, (cuda_source, kernel, block) in enumerate(kernels):
        space = f"lnb_kernel{index}"
        fibers = "__syncthreads()" in cuda_source
        fields = {"kernel": kernel, "space": space}
        parts.append(f"namespace {space} {{\n{cuda_source}}}")
        parts.append(
            DRIVER.format(
                before=FIBER_ARGUMENTS.format(**fields) if fibers else "",
                run=(FIBER_LOOP if fibers else THREAD_LOOP).format(**fields),
                entry=f"lnb_emulate{index}",
                block=", ".join(map(str, block)),
                yz=MAX_GRID_YZ,
                **fields,
            )
        )
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
