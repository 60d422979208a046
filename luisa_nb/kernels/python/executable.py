"""Python mode: the kernel function itself, run once per thread on numpy scalars.

The fallback where no C compiler exists, and a debugging mode (``print`` and
``breakpoint()`` work). Captured buffers are swapped for shims over numpy arrays in a
copy of the function; ``int``, ``float``, ``min``, ``max`` and ``range`` are swapped
for versions that return numpy scalars, so arithmetic keeps the kernel's types.
"""

from __future__ import annotations

import builtins as python_builtins
import sys
import threading
import types
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from luisa_nb.errors import KernelCancelledError, KernelIndexError, KernelNonFiniteError
from luisa_nb.kernels import ir
from luisa_nb.kernels.checks import KernelChecks, index_error, non_finite_error, texel_error
from luisa_nb.kernels.executable import CancelFlag, Executable
from luisa_nb.kernels.frontend.captures import CaptureResolver
from luisa_nb.kernels.frontend.source import KernelSource
from luisa_nb.kernels.lang import math_builtins
from luisa_nb.kernels.lang.aggregates import from_record, python_callables, to_record
from luisa_nb.kernels.lang.builtins import thread_state
from luisa_nb.kernels.lang.device_print import (
    PrintCollector,
    current_collector,
    deliver,
    format_python_value,
)
from luisa_nb.kernels.lang.matrices import composite_class
from luisa_nb.kernels.lang.vectors import int3, uint2, uint3, vector_class
from luisa_nb.kernels.python.bindless import BindlessShim
from luisa_nb.kernels.python.blocks import run_blocks
from luisa_nb.kernels.python.indirect import IndirectShim
from luisa_nb.kernels.python.rules import KernelRange
from luisa_nb.kernels.python.value_copies import captured_aggregate_names, copying_function
from luisa_nb.kernels.rules import PYTHON_RULES, KernelRules
from luisa_nb.kernels.type_system import (
    BufferType,
    ImageType,
    ScalarType,
    is_aggregate_type,
    is_bindless_like,
)
from luisa_nb.kernels.typing.aggregates import callable_definition


class BufferShim:
    """``read``/``write`` over a 1-D numpy array. Indices are always checked (a negative
    index would otherwise wrap in numpy); with ``checks="nan"`` writes to float buffers
    must be finite. Failures name the kernel's source line and thread."""

    __slots__ = ("array", "check_finite", "executable", "name")

    def __init__(self, name: str, executable: PythonExecutable) -> None:
        self.name = name
        self.executable = executable
        self.array: np.ndarray | None = None
        self.check_finite = False

    def bind(self, array: np.ndarray) -> BufferShim:
        """Give the shim the array of this launch (kernels hold captured shims, so a
        shim is bound again, never replaced)."""
        self.array = array
        self.check_finite = self.executable.checks.finite_writes and array.dtype.kind == "f"
        return self

    def _index_error(self, index: Any, access: str, depth: int = 2) -> KernelIndexError:
        line = sys._getframe(depth).f_lineno  # the kernel's frame: it called read/write
        executable = self.executable
        where = executable.kernel_source.where(line)
        size = len(self.array)
        return index_error(
            executable.name, where, line, current_thread(), access, int(index), size, self.name
        )

    def _non_finite_error(self, index: Any, value: Any) -> KernelNonFiniteError:
        line = sys._getframe(2).f_lineno  # the kernel's frame: it called write
        executable = self.executable
        where = executable.kernel_source.where(line)
        thread = current_thread()
        return non_finite_error(
            executable.name, where, line, thread, int(index), self.name, float(value)
        )

    def read(self, index: Any) -> Any:
        if not 0 <= index < len(self.array):
            raise self._index_error(index, "reads")
        return self.array[index]

    def write(self, index: Any, value: Any) -> None:
        if not 0 <= index < len(self.array):
            raise self._index_error(index, "writes")
        if self.check_finite:
            value = self.array.dtype.type(value)
            if not np.isfinite(value):
                raise self._non_finite_error(index, value)
        self.array[index] = value

    def _update(self, index: Any, change: Callable[[Any], Any]) -> Any:
        """An atomic as Python mode runs it (one thread at a time): the old value of
        element ``index``, which becomes ``change(old)``."""
        if not 0 <= index < len(self.array):
            raise self._index_error(index, "writes", depth=3)
        old = self.array[index]
        self.array[index] = change(old)
        return old

    def atomic_exchange(self, index: Any, desired: Any) -> Any:
        return self._update(index, lambda old: desired)

    def atomic_compare_exchange(self, index: Any, expected: Any, desired: Any) -> Any:
        """Compares bits, as compiled C does (so -0.0 is not 0.0, and NaN can match)."""
        expected = self.array.dtype.type(expected)
        return self._update(
            index, lambda old: desired if old.tobytes() == expected.tobytes() else old
        )

    def atomic_fetch_add(self, index: Any, value: Any) -> Any:
        return self._update(index, lambda old: old + self.array.dtype.type(value))

    def atomic_fetch_sub(self, index: Any, value: Any) -> Any:
        return self._update(index, lambda old: old - self.array.dtype.type(value))

    def atomic_fetch_and(self, index: Any, value: Any) -> Any:
        return self._update(index, lambda old: old & self.array.dtype.type(value))

    def atomic_fetch_or(self, index: Any, value: Any) -> Any:
        return self._update(index, lambda old: old | self.array.dtype.type(value))

    def atomic_fetch_xor(self, index: Any, value: Any) -> Any:
        return self._update(index, lambda old: old ^ self.array.dtype.type(value))

    def atomic_fetch_min(self, index: Any, value: Any) -> Any:
        return self._update(index, lambda old: np.minimum(old, self.array.dtype.type(value)))

    def atomic_fetch_max(self, index: Any, value: Any) -> Any:
        return self._update(index, lambda old: np.maximum(old, self.array.dtype.type(value)))


class CompositeBufferShim(BufferShim):
    """A buffer of vectors or matrices: reads give new values, writes copy the components
    into the elements' (padded) layout."""

    __slots__ = ("components", "value_type")

    def bind(self, array: np.ndarray) -> BufferShim:
        self.array = array
        kind = BufferType.of_dtype(array.dtype).element
        self.value_type = composite_class(kind)
        self.components = self.value_type.component_view(array)
        self.check_finite = self.executable.checks.finite_writes and kind.element.is_float
        return self

    def read(self, index: Any) -> Any:
        if not 0 <= index < len(self.array):
            raise self._index_error(index, "reads")
        return self.value_type.wrap(self.components[index].copy())

    def write(self, index: Any, value: Any) -> None:
        if not 0 <= index < len(self.array):
            raise self._index_error(index, "writes")
        if self.check_finite and not np.isfinite(value._values).all():
            bad = value._values[~np.isfinite(value._values)].flat[0]
            raise self._non_finite_error(index, bad)
        self.components[index] = value._values


class AggregateBufferShim(BufferShim):
    """A buffer of structs or arrays: reads give new values, writes store their fields."""

    __slots__ = ("kind",)

    def bind(self, array: np.ndarray) -> BufferShim:
        self.array = array
        self.kind = BufferType.of_dtype(array.dtype).element
        return self

    def read(self, index: Any) -> Any:
        if not 0 <= index < len(self.array):
            raise self._index_error(index, "reads")
        return from_record(self.kind, self.array[index])

    def write(self, index: Any, value: Any) -> None:
        if not 0 <= index < len(self.array):
            raise self._index_error(index, "writes")
        self.array[index] = to_record(self.kind, value)


class ImageShim(BufferShim):
    """``read``/``write``/``texture_size`` of an image over the 1-D array of its stored
    channels, converting as compiled C does (see ``c.images``)."""

    __slots__ = ("image", "scale", "texel")

    def __init__(self, name: str, executable: PythonExecutable, image: ImageType) -> None:
        super().__init__(name, executable)
        self.image = image
        self.scale = np.float32(np.iinfo(image.dtype).max) if image.normalized else None
        self.texel = None if image.channels == 1 else vector_class(image.texel)

    def bind(self, array: np.ndarray) -> BufferShim:
        self.array = array
        return self

    def _start(self, coord: Any, access: str) -> int:
        """The first channel of texel ``coord``; a :class:`KernelIndexError` outside."""
        position = tuple(int(c) for c in coord._values)
        image = self.image
        size = image.size
        if not all(0 <= c < extent for c, extent in zip(position, size, strict=True)):
            line = sys._getframe(2).f_lineno  # the kernel's frame: it called read/write
            executable = self.executable
            where = executable.kernel_source.where(line)
            raise texel_error(
                executable.name, where, line, current_thread(), access, position, size, self.name
            )
        x, y = position[:2]
        row = position[2] * image.height + y if image.depth else y
        return (row * image.width + x) * image.channels

    def read(self, coord: Any) -> Any:
        start = self._start(coord, "reads")
        stored = self.array[start : start + self.image.channels]
        if self.scale is not None:
            values = stored.astype(np.float32) / self.scale
        else:
            values = stored.astype(self.image.kind.dtype)
        return values[0] if self.texel is None else self.texel.wrap(values)

    def write(self, coord: Any, value: Any) -> None:
        start = self._start(coord, "writes")
        components = [value] if self.texel is None else value._values
        values = np.asarray(components).astype(self.image.kind.dtype)
        if self.scale is not None:
            scaled = np.fmin(np.fmax(values, np.float32(0)), np.float32(1)) * self.scale
            values = np.floor(scaled.astype(np.float64) + 0.5)  # roundf: halves go up
        self.array[start : start + self.image.channels] = values.astype(self.image.dtype)

    def texture_size(self) -> Any:
        return (uint3 if self.image.depth else uint2)(*self.image.size)


class DevicePrinter:
    """``print`` in a luisa-python kernel run in Python mode: a line for the launch's
    collector, formatted as compiled C formats it."""

    __slots__ = ("collector",)

    def __init__(self) -> None:
        self.collector = PrintCollector()

    def __call__(self, *values: Any) -> None:
        text = " ".join(format_python_value(value) for value in values)
        self.collector.add(current_thread(), text)


def copy_vector(value: Any) -> Any:
    """A vector or matrix argument of a callable is passed by value: a copy."""
    kind = getattr(type(value), "__lnb_type__", None)
    return value if kind is None or is_aggregate_type(kind) else value.copy()


def current_thread() -> tuple[int, int, int]:
    """The dispatch id of the Python-mode thread running now, as plain ints."""
    x, y, z = thread_state.dispatch_id._values.tolist()
    return (x, y, z)


def kernel_int(value: Any = 0) -> np.int32:
    """``int(x)`` in a kernel: int32, truncating toward zero."""
    return np.int32(value)


def kernel_float(value: Any = 0.0) -> np.float32:
    """``float(x)`` in a kernel: float32."""
    return np.float32(value)


kernel_int.kernel_type = ScalarType.INT32  # what they stand for as a dtype argument
kernel_float.kernel_type = ScalarType.FLOAT32

KERNEL_BUILTINS = {
    "int": kernel_int,
    "float": kernel_float,
    "range": KernelRange,
    "min": math_builtins.min,
    "max": math_builtins.max,
}


def _argument_converter(kind: Any) -> Callable[[Any], Any]:
    """How a scalar argument of type ``kind`` becomes a Python-mode value."""
    if isinstance(kind, ScalarType):
        return kind.dtype.type
    if is_aggregate_type(kind):
        return lambda value: value.copy()
    return composite_class(kind)


def _autodiff_rewrite(kernel: ir.KernelIR, definition: Any = None) -> tuple[Any, dict[str, Any]]:
    """``python.autodiff.autodiff_rewrite``, loaded only for kernels with autodiff blocks."""
    if definition is None:
        has_blocks = bool(kernel.autodiff_blocks)
    else:
        has_blocks = any(f.definition is definition and f.autodiff_blocks for f in kernel.functions)
    if not has_blocks:
        return None, {}
    from luisa_nb.kernels.python.autodiff import autodiff_rewrite

    return autodiff_rewrite(kernel, definition)


class PythonExecutable(Executable):
    """Runs the function per thread; ``launch`` takes typed 1-D numpy arrays. A set
    :class:`CancelFlag` is noticed between threads and, in a kernel with loops, on every
    line it runs (unless a debugger or coverage tool already traces the worker thread;
    the watch costs such kernels about 1.6x)."""

    mode = "python"

    def __init__(
        self,
        kernel: ir.KernelIR,
        captures: CaptureResolver,
        source: KernelSource,
        checks: KernelChecks,
        rules: KernelRules = PYTHON_RULES,
    ) -> None:
        super().__init__(kernel, source, checks)
        self._kernel = kernel
        function = captures.function
        self.rules = rules
        self.source = source.text
        self._lock = threading.Lock()
        self._loops = kernel.has_control_flow
        self._block_size = kernel.block_size
        self._blocks = kernel.uses_blocks
        self._arguments = kernel.arguments
        self._heaps = kernel.heaps
        self._argument_buffer_count = sum(
            1 if kind == "buffer" else len(kernel.heaps[index][1]) if kind == "bindless" else 0
            for _, kind, index in kernel.arguments
        )
        self._scalar_types = [_argument_converter(slot.type) for slot in kernel.scalars]
        self._copied_arguments = [
            position
            for position, (_, kind, index) in enumerate(kernel.arguments)
            if kind == "scalar" and not isinstance(kernel.scalars[index].type, ScalarType)
        ]
        self._capture_shims = {
            id(slot.capture): self._shim(slot)
            for slot in kernel.buffers
            if slot.capture is not None
        }
        self._buffer_slots = kernel.buffers
        self._python_functions: dict[int, Callable[..., Any]] = {}
        self._printer = DevicePrinter()
        self._definitions = [f.definition for f in kernel.functions]
        namespace, closure = self._namespaces(captures)
        value_locals = any(not isinstance(t, ScalarType) for t in kernel.locals.values())
        scalar_locals = {
            name: kind
            for name, kind in kernel.locals.items()
            if isinstance(kind, ScalarType) and kind.is_numeric
        }
        rewrite, autodiff_globals = _autodiff_rewrite(kernel)
        copies = (
            value_locals
            or scalar_locals
            or self._copied_arguments
            or rewrite is not None
            or captured_aggregate_names(captures)
        )
        if copies or rules.rewrites_python:
            self._function = copying_function(
                source,
                namespace,
                closure,
                captures,
                rules,
                scalar_locals,
                rewrite,
                autodiff_globals,
            )
        else:
            self._function = types.FunctionType(
                function.__code__, namespace, function.__name__, None, closure
            )

    def _shim(self, slot: ir.BufferSlot) -> BufferShim | IndirectShim:
        """A shim for buffer ``slot`` of its element kind; :meth:`BufferShim.bind` gives it
        its array."""
        if slot.indirect:
            return IndirectShim(slot.name, self)
        element = slot.element
        if isinstance(element, ImageType):
            return ImageShim(slot.name, self, element)
        if is_aggregate_type(element):
            return AggregateBufferShim(slot.name, self)
        if not isinstance(element, ScalarType):
            return CompositeBufferShim(slot.name, self)
        return BufferShim(slot.name, self)

    def _namespaces(self, captures: CaptureResolver) -> tuple[dict[str, Any], tuple[Any, ...]]:
        """Globals and closure of a Python-mode function: captured buffers are shims,
        callables their Python-mode functions, and builtins return numpy scalars."""
        replacements = {}
        for name, value in captures.captured().items():
            if is_bindless_like(value):
                replacements[name] = self._captured_heap_shim(name)
            elif id(value) in self._capture_shims:
                replacements[name] = self._capture_shims[id(value)]
            elif callable_definition(value) is not None:
                replacements[name] = self._python_function(callable_definition(value))
        namespace, closure = captures.python_mode_namespaces(replacements)
        namespace["__builtins__"] = {**vars(python_builtins), **KERNEL_BUILTINS}
        if self.prints:
            namespace["__builtins__"]["print"] = self._printer
        return namespace, closure

    def _captured_heap_shim(self, name: str) -> BindlessShim:
        """The shim of captured bindless array ``name`` over its resources' shims."""
        pairs = next((pairs for heap, pairs in self._heaps if heap == name), ())
        shims = [
            (slot, self._capture_shims[id(self._buffer_slots[buffer].capture)])
            for slot, buffer in pairs
        ]
        return BindlessShim(name, self, shims)

    def _python_function(self, definition: Any) -> Callable[..., Any]:
        """The Python-mode function of a callable: its vector arguments are copies."""
        known = self._python_functions.get(id(definition))
        if known is not None:
            return known
        self._definitions.append(definition)  # keeps the id valid
        function: Callable[..., Any] | None = None

        def call(*arguments: Any) -> Any:
            return function(*map(copy_vector, arguments))

        self._python_functions[id(definition)] = call
        captures = definition.capture_resolver()
        namespace, closure = self._namespaces(captures)
        rewrite, autodiff_globals = _autodiff_rewrite(self._kernel, definition)
        function = copying_function(
            definition.kernel_source,
            namespace,
            closure,
            captures,
            definition.rules,
            rewrite=rewrite,
            extra_globals=autodiff_globals,
        )
        return call

    def _method_function(self, method: Any) -> Callable[..., Any]:
        definition = callable_definition(method)
        return method if definition is None else self._python_function(definition)

    def launch(
        self,
        dims: tuple[int, int, int],
        buffers: Sequence[np.ndarray],
        scalars: Sequence[Any],
        cancel: CancelFlag | None = None,
    ) -> None:
        with self._lock:
            count = self._argument_buffer_count
            for shim, array in zip(self._capture_shims.values(), buffers[count:], strict=True):
                shim.bind(array)
            arguments = []
            for name, kind, index in self._arguments:
                if kind == "bindless":
                    shims = [
                        (slot, self._shim(self._buffer_slots[buffer]).bind(buffers[buffer]))
                        for slot, buffer in self._heaps[index][1]
                    ]
                    arguments.append(BindlessShim(name, self, shims))
                elif kind == "buffer":
                    arguments.append(self._shim(self._buffer_slots[index]).bind(buffers[index]))
                else:
                    arguments.append(self._scalar_types[index](scalars[index]))
            position = self.kernel_id_position
            previous_id = thread_state.kernel_id
            thread_state.kernel_id = 0 if position is None else int(scalars[position])
            collector = self._printer.collector = current_collector()
            try:
                with self.rules.applied():
                    self._run(dims, arguments, cancel)
            finally:
                thread_state.kernel_id = previous_id
                deliver(collector)

    def _run(
        self, dims: tuple[int, int, int], arguments: list[Any], cancel: CancelFlag | None
    ) -> None:
        size_x, size_y, size_z = (int(size) for size in dims)
        if not size_x * size_y * size_z:
            return  # no threads: loops over the other axes would not check ``cancel``
        function = self._function
        copied = self._copied_arguments
        originals = list(arguments)
        if self._blocks:

            def thread_arguments() -> list[Any]:
                copies = list(originals)
                for position in copied:
                    copies[position] = originals[position].copy()
                return copies

            size, block, where = (
                (size_x, size_y, size_z),
                self._block_size,
                self.kernel_source.where,
            )
            resolver = self._method_function
            run_blocks(self.name, function, thread_arguments, size, block, where, resolver, cancel)
            return
        previous = (thread_state.dispatch_id, thread_state.dispatch_size, thread_state.block_size)
        thread_state.dispatch_size = int3(size_x, size_y, size_z)
        thread_state.block_size = self._block_size
        watching = cancel is not None and self._loops and sys.gettrace() is None
        if watching:
            sys.settrace(self._cancel_watch(cancel))
        python_callables.resolvers.append(self._method_function)
        try:
            with np.errstate(all="ignore"):
                for z in range(size_z):
                    for y in range(size_y):
                        for x in range(size_x):
                            if cancel is not None and cancel.is_set:
                                raise KernelCancelledError(
                                    f"kernel {self.name!r}: the launch was cancelled"
                                )
                            thread_state.dispatch_id = int3(x, y, z)
                            if copied:
                                for position in copied:
                                    arguments[position] = originals[position].copy()
                            function(*arguments)
        finally:
            python_callables.resolvers.pop()
            if watching:
                sys.settrace(None)
            thread_state.dispatch_id, thread_state.dispatch_size = previous[:2]
            thread_state.block_size = previous[2]

    def _cancel_watch(self, cancel: CancelFlag) -> Callable[..., Any]:
        """A trace function that raises :class:`KernelCancelledError` on the next line of
        the kernel once ``cancel`` is set, so that a loop that never ends stops too."""

        kernel_code = self._function.__code__

        def watch_line(frame: types.FrameType, event: str, argument: Any) -> Callable[..., Any]:
            if cancel.is_set:
                raise KernelCancelledError(f"kernel {self.name!r}: the launch was cancelled")
            return watch_line

        def watch_call(frame: types.FrameType, event: str, argument: Any) -> Any:
            return watch_line if frame.f_code is kernel_code else None

        return watch_call
