"""The typed IR as CUDA C++ for NVRTC: one thread of the dispatch per CUDA thread.

:class:`CudaEmitter` subclasses the C emitter and changes only the dialect: ``bool``
for ``_Bool``, ``alignas`` for ``_Alignas``, ``T{...}`` for compound literals, lambdas
for GNU statement expressions, ``__device__`` helpers, CUDA atomics, and an
``extern "C" __global__`` entry that takes the packed argument struct by value (the
layout of ``c.emitter.argument_struct``), the launch record and the cancel flag.

A CUDA block is a block of the kernel: ``set_block_size``'s, else 256 x 1 x 1. Each CUDA
thread computes its x from ``blockIdx.x * blockDim.x + threadIdx.x`` and returns past
``size.x``; y and z step over the grid by ``gridDim``, so any dispatch fits the grid
limits (65535 blocks along y and z). Kernels with shared arrays or ``sync_block()`` get
a block entry instead (:meth:`CudaEmitter.block_entry`): ``__shared__`` arrays, and
threads that pause at barriers as in C, with every thread of the block passing the
``__syncthreads()`` of each round. Bindless arrays need nothing of their own: each
resource is a device pointer of the argument struct, and a call switches over the slots
as in C. Checks work as in C, one thread at a
time: a thread records its first failure, and the first thread to report it (an
``atomicCAS`` on the launch record's status) writes where. Loops poll the cancel flag
every ``CANCEL_POLL_INTERVAL`` iterations.
"""

from __future__ import annotations

import math
import re

from luisa_nb.errors import UnsupportedFeatureError
from luisa_nb.kernels.c.checks import LAUNCH_TYPES, NOTE_FUNCTION, THREAD_FIELDS
from luisa_nb.kernels.c.emitter import CEmitter, argument_struct
from luisa_nb.kernels.cuda.device_print import CudaPrintEmission
from luisa_nb.kernels.lang.builtins import DEFAULT_BLOCK_SIZE
from luisa_nb.kernels.type_system import ScalarType

MAX_GRID_YZ = 65535
"""CUDA's limit on the grid along y and z; larger dispatches loop over it."""
MAX_BLOCK_Z = 64
"""CUDA's limit on a block along z (x and y take up to 1024, as set_block_size allows)."""
MAX_SHARED_BYTES = 48 * 1024
"""The static shared memory a CUDA block may declare."""
MAX_ARGUMENT_BYTES = 4096
"""The bytes of arguments every CUDA launch can pass (newer GPUs and drivers pass more)."""
CANCEL_POLL_INTERVAL = 1024
"""Loop iterations between two reads of the cancel flag in device memory."""
FUNCTION_PREFIX = "static __device__ inline"

TYPE_PRELUDE = """\
#if defined(__CUDACC_RTC__)
typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef short int16_t;
typedef unsigned short uint16_t;
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long long int64_t;
typedef unsigned long long uint64_t;
#define INT32_MAX 2147483647
#endif"""

LAUNCH_PRELUDE = (
    LAUNCH_TYPES
    + f"""
/* The launch record lives in device memory, zeroed before the launch; `cancel` is unused
   on the device. */

/* A thread's failed checks (`details` is always set: each thread records its first). */
typedef struct {{
{THREAD_FIELDS}
    uint32_t polls;
}} lnb_thread;

{FUNCTION_PREFIX} int lnb_cancelled(const int32_t *cancel) {{
    return *(volatile const int32_t *)cancel != 0;
}}

/* Whether a thread must not start: another thread failed, or the launch was cancelled. */
{FUNCTION_PREFIX} int lnb_launch_stopped(lnb_launch *launch, const int32_t *cancel) {{
    if (*(volatile int32_t *)&launch->status != LNB_OK) return 1;
    if (!lnb_cancelled(cancel)) return 0;
    atomicCAS(&launch->status, (int32_t)LNB_OK, (int32_t)LNB_CANCELLED);
    return 1;
}}

/* Inside a thread's loops: stop when a check failed, or (polled every
   {CANCEL_POLL_INTERVAL} iterations) the launch was cancelled. Kernels without loops
   leave it unused. */
[[maybe_unused]] {FUNCTION_PREFIX} int lnb_thread_stopped(lnb_thread *state) {{
    if (state->failed != LNB_OK) return 1;
    if ((++state->polls % {CANCEL_POLL_INTERVAL}u) != 0) return 0;
    if (!lnb_cancelled(state->cancel)) return 0;
    state->failed = LNB_CANCELLED;
    return 1;
}}

/* Make the failure of thread (x, y, z) the launch's, unless another thread was first. */
{FUNCTION_PREFIX} void lnb_report(lnb_launch *launch, const lnb_thread *state,
                                  int32_t x, int32_t y, int32_t z) {{
    if (atomicCAS(&launch->status, (int32_t)LNB_OK, state->failed) != LNB_OK) return;
    launch->line = state->line;
    launch->buffer = state->buffer;
    launch->access = state->access;
    launch->unsigned_index = state->unsigned_index;
    launch->index = state->index;
    launch->value = state->value;
    launch->thread[0] = x;
    launch->thread[1] = y;
    launch->thread[2] = z;
}}

/* A pointer to a temporary that lives until the end of the full expression. */
template <typename T>
{FUNCTION_PREFIX} T *lnb_temporary(const T &value) {{
    return const_cast<T *>(&value);
}}"""
)

BITS = {4: "uint32_t", 8: "uint64_t"}
TO_BITS = {
    ScalarType.FLOAT32: "__float_as_uint({value})",
    ScalarType.FLOAT64: "(uint64_t)__double_as_longlong({value})",
}
FROM_BITS = {
    ScalarType.FLOAT32: "__uint_as_float({value})",
    ScalarType.FLOAT64: "__longlong_as_double((long long)({value}))",
}
INTRINSICS = {
    "fetch_add": "atomicAdd",
    "fetch_sub": "atomicAdd",
    "fetch_and": "atomicAnd",
    "fetch_or": "atomicOr",
    "fetch_xor": "atomicXor",
}

ONE_CALL = """\
{prefix} {T} {name}({T} *address, {parameters}) {{
    return {result};
}}"""

CAS_LOOP = """\
{prefix} {T} {name}({T} *address, {T} value) {{
    {bits} *bits = ({bits} *)address;
    {bits} seen = *(volatile {bits} *)bits;
    {bits} assumed;
    do {{
        assumed = seen;
        const {T} old = {old};
        const {T} next = {update};
        seen = atomicCAS(bits, assumed, {next});
    }} while (seen != assumed);
    return {old};
}}"""

DIALECT = (
    (re.compile(r"\b_Bool\b"), "bool"),
    (re.compile(r"\b__builtin_isfinite\b"), "isfinite"),
)


def _as_bits(kind: ScalarType, value: str) -> str:
    """``value`` of type ``kind`` as the unsigned integer of its bits."""
    if kind in TO_BITS:
        return TO_BITS[kind].format(value=value)
    return f"({BITS[kind.dtype.itemsize]})({value})"


def _from_bits(kind: ScalarType, value: str) -> str:
    """The unsigned integer ``value`` as the ``kind`` with those bits."""
    if kind in FROM_BITS:
        return FROM_BITS[kind].format(value=value)
    return f"({CudaEmitter.type_names[kind]})({value})"


class CudaEmitter(CudaPrintEmission, CEmitter):
    """Emits one kernel as CUDA C++ (NVRTC, ``-std=c++17``) with the C emitter's IR
    walk; ``entry_name`` is the ``__global__`` function's name."""

    type_names = {**CEmitter.type_names, ScalarType.BOOL: "bool"}
    lane_width = 0  # a GPU runs threads side by side itself (see c.lanes)
    function_prefix = FUNCTION_PREFIX
    launch_prelude = LAUNCH_PRELUDE
    note_function = NOTE_FUNCTION.replace("static inline", FUNCTION_PREFIX)

    @property
    def kernel_prefix(self) -> str:
        """``extern "C" __global__`` with the block's thread count as launch bounds, so
        NVRTC keeps each thread's registers within what a block of that many threads
        can have (64 each in a block of 1024); without them a heavy kernel fails to
        launch in large blocks ("too many resources requested for launch")."""
        return f'extern "C" __global__ __launch_bounds__({math.prod(self.kernel.block_size)}) '

    def emit(self) -> str:
        """The complete CUDA translation unit; raises ``UnsupportedFeatureError`` where the
        kernel asks for more than a CUDA block or launch can hold."""
        self.check_cuda_limits()
        text = super().emit()
        for pattern, replacement in DIALECT:
            text = pattern.sub(replacement, text)
        return text

    def check_cuda_limits(self) -> None:
        """The block size, shared arrays and arguments fit CUDA's limits."""
        kernel = self.kernel
        bx, by, bz = kernel.block_size
        if bz > MAX_BLOCK_Z:
            raise UnsupportedFeatureError(
                f"kernel {kernel.name!r}: set_block_size({bx}, {by}, {bz}) asks for {bz} "
                f"threads along z, but a CUDA block holds at most {MAX_BLOCK_Z} along z; put "
                f"the threads along x or y"
            )
        shared = sum(kernel.locals[name].dtype.itemsize for name in kernel.shared)
        if shared > MAX_SHARED_BYTES:
            raise UnsupportedFeatureError(
                f"kernel {kernel.name!r}: its shared arrays take {shared} bytes, more than the "
                f"{MAX_SHARED_BYTES} a CUDA block may declare; use smaller shared arrays"
            )
        arguments = argument_struct(kernel, self.checks).size
        if arguments > MAX_ARGUMENT_BYTES:
            raise UnsupportedFeatureError(
                f"kernel {kernel.name!r}: its arguments take {arguments} bytes (buffers, "
                f"bindless resources and scalars), more than the {MAX_ARGUMENT_BYTES} a CUDA "
                f"launch passes; put fewer resources in its bindless arrays"
            )

    def prelude(self) -> str:
        return TYPE_PRELUDE

    def compound(self, type_text: str, initializer: str) -> str:
        return f"{type_text}{{{initializer}}}"

    def alignment(self, alignment: int) -> str:
        return f"alignas({alignment})"

    def temporary_reference(self, type_text: str, value: str) -> str:
        return f"lnb_temporary<{type_text}>({value})"

    def statement_expression(self, statements: list[str], value: str) -> str:
        return f"[&]() {{ {' '.join(statements)} return {value}; }}()"

    def float_literal(self, value: float, scalar_type: ScalarType) -> str:
        """Infinities and NaN from their bits: NVRTC has no ``math.h`` macros."""
        if not (math.isinf(value) or math.isnan(value)):
            return super().float_literal(value, scalar_type)
        single = scalar_type is ScalarType.FLOAT32
        if math.isnan(value):
            return (
                "__uint_as_float(0x7fc00000u)"
                if single
                else "__longlong_as_double(0x7ff8000000000000LL)"
            )
        bits = "0x7f800000u" if single else "0x7ff0000000000000LL"
        text = f"__uint_as_float({bits})" if single else f"__longlong_as_double({bits})"
        return f"(-{text})" if value < 0 else text

    def atomic_helper(self, operation: str, element: ScalarType) -> str:
        """The unchecked helper of ``operation`` on ``element`` on CUDA's atomics on the
        bits: integer add, sub, and, or and xor, float add, exchange and compare-exchange
        (floats compare bits) are one call; the rest are ``atomicCAS`` loops with the C
        path's semantics (``min``/``max`` propagate NaN)."""
        name = f"lnb_atomic_{operation}_{element.value}"
        type_text = self.type_name(element)
        bits = BITS[element.dtype.itemsize]
        pointer = f"({bits} *)address"
        fields = {"prefix": self.function_prefix, "T": type_text, "name": name, "bits": bits}
        template = ONE_CALL
        if operation == "exchange":
            fields["parameters"] = f"{type_text} desired"
            call = f"atomicExch({pointer}, {_as_bits(element, 'desired')})"
            fields["result"] = _from_bits(element, call)
        elif operation == "compare_exchange":
            fields["parameters"] = f"{type_text} expected, {type_text} desired"
            expected, desired = _as_bits(element, "expected"), _as_bits(element, "desired")
            fields["result"] = _from_bits(element, f"atomicCAS({pointer}, {expected}, {desired})")
        elif element.is_integer and operation in INTRINSICS:
            fields["parameters"] = f"{type_text} value"
            operand = f"({bits})0 - ({bits})value" if operation == "fetch_sub" else "value"
            call = f"{INTRINSICS[operation]}({pointer}, ({bits})({operand}))"
            fields["result"] = _from_bits(element, call)
        elif operation == "fetch_add":
            fields["parameters"] = f"{type_text} value"
            fields["result"] = "atomicAdd(address, value)"
        else:
            template = CAS_LOOP
            if operation == "fetch_sub":
                fields["update"] = "old - value"
            else:
                helper = self.use_helper(operation.removeprefix("fetch_"), element)
                fields["update"] = f"{helper}(old, value)"
            fields["old"] = _from_bits(element, "assumed")
            fields["next"] = _as_bits(element, "next")
        return self.define_helper(name, lambda: template.format(**fields))

    def launch_functions(self) -> list[str]:
        return [self.block_entry() if self.kernel.uses_blocks else self.entry()]

    def entry_locals(self) -> str:
        """The kernel's buffers, element counts and scalars as locals of the entry."""
        buffers = range(len(self.kernel.buffers))
        locals = [f"    {self.buffer_declaration(i)} = a.{self.buffer_name(i)};" for i in buffers]
        if self.checks.bounds:
            locals += [
                f"    const uint64_t {self.count_name(i)} = (uint64_t)a.{self.count_name(i)};"
                for i in buffers
            ]
        locals += [
            f"    const {self.type_name(slot.type)} {self.variable_name(slot.name)} = "
            f"a.{self.scalar_field_name(slot.name)};"
            for slot in self.kernel.scalars
        ]
        return "\n".join(locals)

    def entry(self) -> str:
        """The ``__global__`` function: one dispatch thread per CUDA thread along x, rows
        of y and z stepping by the grid's size."""
        name = self.entry_name
        arguments = ", ".join(["id", "size", *self.body_argument_names(), "&state"])
        return f"""\
{self.kernel_prefix}void {name}(const {name}_arguments a, lnb_launch *launch,
        const int32_t *cancel) {{
    const int64_t x = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (x >= a.size[0] || lnb_launch_stopped(launch, cancel)) return;
    const lnb_int3 size = {{(int32_t)a.size[0], (int32_t)a.size[1], (int32_t)a.size[2]}};
{self.entry_locals()}
    const int64_t step_y = (int64_t)gridDim.y * blockDim.y;
    const int64_t step_z = (int64_t)gridDim.z * blockDim.z;
    for (int64_t z = (int64_t)blockIdx.z * blockDim.z + threadIdx.z; z < a.size[2]; z += step_z) {{
        for (int64_t y = (int64_t)blockIdx.y * blockDim.y + threadIdx.y; y < a.size[1];
                y += step_y) {{
            lnb_thread state = {{}};
            state.details = 1;
            state.cancel = cancel;
            const lnb_int3 id = {{(int32_t)x, (int32_t)y, (int32_t)z}};
            {name}_thread({arguments});
            if (state.failed != LNB_OK) {{
                lnb_report(launch, &state, (int32_t)x, (int32_t)y, (int32_t)z);
                return;
            }}
        }}
    }}
}}"""

    def block_entry(self) -> str:
        """The ``__global__`` function of a kernel with shared arrays or barriers: a CUDA
        block is a block of the kernel. Its shared arrays are one ``__shared__`` struct,
        zeroed by the block's threads before each block. Threads pause at barriers as in C
        (``c.blocks``): in rounds, each thread in range that has not returned runs to its
        next barrier or its end, then every thread, in range or not, passes the round's
        ``__syncthreads()``. A paused thread writes its barrier's number to the round's
        slot (any writer wins); one that paused elsewhere stops the launch. Blocks past
        the grid along y and z are run by the same CUDA blocks, in turn."""
        name = self.entry_name
        bx, by, bz = self.kernel.block_size
        count = bx * by * bz
        arguments = ", ".join(
            ["id", "size", *self.body_argument_names(), "&lnb_locals", "&lnb_shared", "&state"]
        )
        lines = ", ".join(map(str, self.barrier_lines))
        return f"""\
__device__ const int32_t {name}_barrier_lines[] = {{{lines}}};

{self.kernel_prefix}void {name}(const {name}_arguments a, lnb_launch *launch,
        const int32_t *cancel) {{
    __shared__ {name}_shared lnb_shared;
    __shared__ int32_t lnb_paused_at[2];
    __shared__ bool lnb_diverged;
    const lnb_int3 size = {{(int32_t)a.size[0], (int32_t)a.size[1], (int32_t)a.size[2]}};
{self.entry_locals()}
    const uint32_t t = threadIdx.x + {bx}u * (threadIdx.y + {by}u * threadIdx.z);
    const int64_t x = (int64_t)blockIdx.x * {bx} + threadIdx.x;
    const int64_t blocks_y = (a.size[1] + {by - 1}) / {by};
    const int64_t blocks_z = (a.size[2] + {bz - 1}) / {bz};
    for (int64_t block_z = blockIdx.z; block_z < blocks_z; block_z += gridDim.z) {{
        for (int64_t block_y = blockIdx.y; block_y < blocks_y; block_y += gridDim.y) {{
            const int64_t y = block_y * {by} + threadIdx.y, z = block_z * {bz} + threadIdx.z;
            unsigned char *shared_bytes = (unsigned char *)&lnb_shared;
            for (uint32_t i = t; i < sizeof lnb_shared; i += {count}u) shared_bytes[i] = 0;
            if (t == 0) {{
                lnb_paused_at[0] = lnb_paused_at[1] = 0;
                lnb_diverged = false;
            }}
            {name}_locals lnb_locals = {{}};
            bool active = x < a.size[0] && y < a.size[1] && z < a.size[2] &&
                          !lnb_launch_stopped(launch, cancel);
            const lnb_int3 id = {{(int32_t)x, (int32_t)y, (int32_t)z}};
            __syncthreads();
            for (uint32_t round = 0;; ++round) {{
                if (t == 0) lnb_paused_at[(round + 1) % 2] = 0;
                if (active) {{
                    lnb_thread state = {{}};
                    state.details = 1;
                    state.cancel = cancel;
                    {name}_thread({arguments});
                    if (state.failed != LNB_OK) {{
                        lnb_report(launch, &state, id.x, id.y, id.z);
                        active = false;
                    }}
                }}
                active = active && !lnb_locals.lnb_finished;
                if (active) lnb_paused_at[round % 2] = lnb_locals.lnb_resume;
                __syncthreads();
                const int32_t at = lnb_paused_at[round % 2];
                if (active && lnb_locals.lnb_resume != at) {{
                    lnb_thread state = {{}};
                    state.failed = LNB_DIVERGED_BARRIERS;
                    state.line = {name}_barrier_lines[lnb_locals.lnb_resume];
                    state.index = {name}_barrier_lines[at];
                    lnb_report(launch, &state, id.x, id.y, id.z);
                    lnb_diverged = true;
                }}
                __syncthreads();
                if (at == 0 || lnb_diverged) break;
                active = active && *(volatile int32_t *)&launch->status == LNB_OK;
            }}
            __syncthreads();
        }}
    }}
}}"""


def grid_of(
    dims: tuple[int, int, int], block: tuple[int, int, int] = DEFAULT_BLOCK_SIZE
) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """The CUDA grid and block of a dispatch of ``dims`` threads in blocks of ``block``
    (the kernel's ``block_size``): every axis at least 1, y and z at most
    ``MAX_GRID_YZ``."""
    blocks = [max(1, -(-size // extent)) for size, extent in zip(dims, block, strict=True)]
    return (blocks[0], min(blocks[1], MAX_GRID_YZ), min(blocks[2], MAX_GRID_YZ)), tuple(block)
