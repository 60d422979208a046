"""``@kernel``: a Python function compiled for the device its buffers live on.

Calling styles follow luisa-python and the LuisaCompute Rust/C++ frontends alike:
``k.dispatch(n, *args)``, ``k.dispatch_async(n, *args)`` (a command to submit) and
``k(*args, dispatch_size=n, stream=s)``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from luisa_nb.errors import DeviceMismatchError, KernelArgumentError
from luisa_nb.kernels import KernelDefinition, argument_type
from luisa_nb.runtime.buffer import BufferView
from luisa_nb.runtime.commands import DispatchCommand
from luisa_nb.runtime.device import default_device
from luisa_nb.runtime.stream import Stream
from luisa_nb.trace.records import Access


def dispatch_dims(size: Any, kernel_name: str) -> tuple[int, int, int]:
    """``n`` or ``(nx, ny[, nz])`` as three non-negative ints."""
    if type(size) is int and size >= 0:
        return (size, 1, 1)
    dims = tuple(size) if isinstance(size, (tuple, list)) else (size,)
    if not 1 <= len(dims) <= 3 or not all(
        isinstance(d, (int, np.integer)) and not isinstance(d, bool) and d >= 0 for d in dims
    ):
        raise KernelArgumentError(
            f"kernel {kernel_name!r}: dispatch size must be an int or a tuple of 1 to 3 "
            f"non-negative ints, got {size!r}"
        )
    return (*(int(d) for d in dims), 1, 1)[:3]


class _DispatchPlan:
    """What a dispatch with one argument signature needs, worked out once: the
    executable, which arguments are buffers and scalars, and the captured buffers."""

    __slots__ = ("accesses", "buffer_positions", "captures", "executable", "scalar_positions")

    def __init__(self, executable: Any, args: Sequence[Any]) -> None:
        self.executable = executable
        self.buffer_positions = [i for i, a in enumerate(args) if isinstance(a, BufferView)]
        self.scalar_positions = [i for i, a in enumerate(args) if not isinstance(a, BufferView)]
        self.captures = tuple(
            p.capture for p in executable.buffer_parameters if p.capture is not None
        )
        self.accesses = tuple(_ACCESSES[p.access] for p in executable.buffer_parameters)


_ACCESSES = {
    "read": Access.READ,
    "write": Access.WRITE,
    "read_write": Access.READ_WRITE,
    "none": None,
}


def _signature(args: Sequence[Any]) -> tuple[Any, ...]:
    return tuple(a.dtype if isinstance(a, BufferView) else argument_type(a) for a in args)


class Kernel:
    """A kernel function; compiled per argument types on first dispatch and cached."""

    def __init__(self, function: Callable[..., None], *, mode: str = "auto") -> None:
        self._definition = KernelDefinition(function, mode=mode)
        self._plans: dict[tuple[Any, ...], _DispatchPlan] = {}
        self.name = self._definition.name
        functools.update_wrapper(self, function)

    def _plan(self, args: Sequence[Any]) -> _DispatchPlan:
        signature = _signature(args)
        plan = self._plans.get(signature)
        if plan is None:
            executable = self._definition.executable(tuple(argument_type(a) for a in args))
            plan = self._plans[signature] = _DispatchPlan(executable, args)
        return plan

    def dispatch_async(self, size: Any, *args: Any) -> DispatchCommand:
        """A command that runs this kernel over ``size`` threads with ``args``."""
        dims = dispatch_dims(size, self.name)
        plan = self._plan(args)
        views = [args[i] for i in plan.buffer_positions]
        if plan.captures:
            views += plan.captures
        for view in views:
            view.buffer.check_alive()
        device = views[0].device if views else default_device()
        device.backend.check_executable(plan.executable)
        for view in views:
            if view.device is not device:
                names = ", ".join(f"{v._name()} on {v.device.name!r}" for v in views)
                raise DeviceMismatchError(
                    f"kernel {self.name!r} uses buffers of several devices ({names}); a "
                    f"dispatch runs on one device"
                )
        scalars = [args[i] for i in plan.scalar_positions]
        return DispatchCommand(
            device, self.name, plan.executable, dims, views, plan.accesses, scalars
        )

    def dispatch(
        self, size: Any, *args: Any, stream: Stream | None = None, sync: bool = False
    ) -> None:
        """Submit this kernel to ``stream`` (default: its device's default stream)."""
        command = self.dispatch_async(size, *args)
        stream = stream or command.device.default_stream
        stream.submit([command])
        if sync:
            stream.synchronize()

    def __call__(self, *args: Any, dispatch_size: Any, stream: Stream | None = None) -> None:
        self.dispatch(dispatch_size, *args, stream=stream)

    def source(self, *args: Any) -> str:
        """The generated code for these arguments (C, or Python in python mode)."""
        return self._plan(args).executable.source

    def __repr__(self) -> str:
        return f"<Kernel {self.name}>"


def kernel(function: Callable[..., None] | None = None, *, mode: str = "auto") -> Any:
    """Decorate a function as a kernel: ``@kernel`` or ``@kernel(mode="python")``.

    ``mode="c"`` compiles with the system C compiler; ``"python"`` runs the function once
    per thread (``print`` and breakpoints work); ``"auto"`` compiles when a compiler exists.
    """
    if function is None:
        return functools.partial(kernel, mode=mode)
    return Kernel(function, mode=mode)
