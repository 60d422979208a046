"""``@kernel``: a Python function compiled for the device its buffers live on.

Calling styles follow luisa-python and the LuisaCompute Rust/C++ frontends alike:
``k.dispatch(n, *args)``, ``k.dispatch_async(n, *args)`` (a command to submit) and
``k(*args, dispatch_size=n, stream=s)``.
"""

from __future__ import annotations

import functools
import inspect
import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from luisa_nb.errors import DeviceMismatchError, KernelArgumentError
from luisa_nb.kernels import KernelDefinition, argument_type
from luisa_nb.kernels.c.toolchain import compiler_runs
from luisa_nb.kernels.checks import KernelChecks
from luisa_nb.kernels.rules import PYTHON_RULES, KernelRules
from luisa_nb.kernels.type_system import is_bindless_like, is_indirect_like
from luisa_nb.recording.clock import now
from luisa_nb.recording.recorder import active_recorder
from luisa_nb.recording.records import Access
from luisa_nb.runtime.buffer import BufferView
from luisa_nb.runtime.commands import DispatchArguments, DispatchCommand
from luisa_nb.runtime.defaults import default_device
from luisa_nb.runtime.indirect import (
    IndirectDispatchBuffer,
    IndirectDispatchCommand,
    dispatch_window,
)
from luisa_nb.runtime.stream import Stream, check_stream, submit_one

if TYPE_CHECKING:
    pass

MAX_DISPATCH_COUNT = 2**32 - 1  # luisa-python's default max_dispatch_size
MAX_AXIS = 2**31 - 1  # dispatch_id() and dispatch_size() components are int32
MAX_THREADS = 2**63 - 1  # the C entry counts threads in an int64


def dispatch_dims(size: Any, kernel_name: str) -> tuple[int, int, int]:
    """``n`` or ``(nx, ny[, nz])`` as three ints, each in ``0 <= n < 2**31``."""
    if type(size) is int and 0 <= size <= MAX_AXIS:
        return (size, 1, 1)
    dims = tuple(size) if isinstance(size, (tuple, list)) else (size,)
    if not 1 <= len(dims) <= 3 or not all(
        isinstance(d, (int, np.integer)) and not isinstance(d, bool) and d >= 0 for d in dims
    ):
        raise KernelArgumentError(
            f"kernel {kernel_name!r}: dispatch size must be an int or a tuple of 1 to 3 "
            f"non-negative ints, got {size!r}"
        )
    dims = (*(int(d) for d in dims), 1, 1)[:3]
    for axis, count in zip("xyz", dims, strict=True):
        if count > MAX_AXIS:
            raise KernelArgumentError(
                f"kernel {kernel_name!r}: dispatch size {axis}={count} is too large; each "
                f"axis must be below 2**31 because dispatch_id() is int32. Spread the "
                f"threads over two axes, e.g. (2**20, {-(-count // 2**20)}) with the int64 "
                f"index p.y * W + p.x for a captured W = np.int64(2**20), or dispatch in "
                f"several parts"
            )
    if dims[0] * dims[1] * dims[2] > MAX_THREADS:
        raise KernelArgumentError(
            f"kernel {kernel_name!r}: dispatch size {dims} makes more than 2**63 - 1 "
            f"threads; dispatch in several parts"
        )
    return dims


class _DispatchPlan:
    """What a dispatch with one argument signature and checks setting needs, worked out
    once: the executable, which arguments are buffers and scalars, the captured buffers,
    and which buffers' element counts follow the scalars (checked C kernels). When every
    argument is a buffer and nothing is captured, the views are the arguments tuple. A
    bindless array or an indirect dispatch buffer stands for its ``views()``; a captured
    indirect dispatch buffer for its memory."""

    __slots__ = (
        "accesses",
        "buffer_positions",
        "captures",
        "count_positions",
        "executable",
        "holder_positions",
        "scalar_positions",
        "state",
        "takes_kernel_id",
        "views_are_arguments",
    )

    def __init__(self, executable: Any, args: Sequence[Any], state: tuple[Any, ...]) -> None:
        self.executable = executable
        self.state = state
        self.holder_positions = frozenset(
            i for i, a in enumerate(args) if is_bindless_like(a) or is_indirect_like(a)
        )
        self.buffer_positions = tuple(
            i for i, a in enumerate(args) if isinstance(a, BufferView) or i in self.holder_positions
        )
        self.scalar_positions = tuple(i for i in range(len(args)) if i not in self.buffer_positions)
        self.captures = tuple(
            p.capture.memory if is_indirect_like(p.capture) else p.capture
            for p in executable.buffer_parameters
            if p.capture is not None
        )
        self.takes_kernel_id = executable.kernel_id_position is not None
        self.accesses = tuple(_ACCESSES[p.access] for p in executable.buffer_parameters)
        self.count_positions = tuple(
            p.count_of for p in executable.scalar_parameters if p.count_of is not None
        )
        self.views_are_arguments = (
            not self.scalar_positions and not self.captures and not self.holder_positions
        )

    def views(self, args: tuple[Any, ...]) -> tuple[BufferView, ...]:
        """The buffer arguments (a bindless array's resources in slot order), then the
        captured buffers."""
        if self.views_are_arguments:
            return args
        views: list[BufferView] = []
        for i in self.buffer_positions:
            if i in self.holder_positions:
                views.extend(args[i].views())
            else:
                views.append(args[i])
        return (*views, *self.captures)

    def scalars(self, args: tuple[Any, ...], views: Sequence[BufferView]) -> tuple[Any, ...]:
        """The scalar arguments, the kernel id (0: a direct dispatch) if the kernel reads
        it, then the element counts of a checked kernel."""
        scalars = [args[i] for i in self.scalar_positions] if self.scalar_positions else []
        if self.takes_kernel_id:
            scalars.append(0)
        if self.count_positions:
            scalars += [views[i].size for i in self.count_positions]
        return tuple(scalars)


_ACCESSES = {
    "read": Access.READ,
    "write": Access.WRITE,
    "read_write": Access.READ_WRITE,
    "may_read": Access.MAY_READ,
    "none": None,
}


class _LatestCall:
    """A kernel's latest dispatch whose arguments are all buffer views: weak references to
    them, the checks and plan it ran with, the memo its arguments share, and
    (weakly) those arguments while a command holds them. Nothing here keeps a buffer, its
    device memory or its device alive."""

    __slots__ = ("arguments", "checks", "memo", "plan", "references", "scalars", "state")

    def __init__(
        self,
        call: tuple[BufferView, ...],
        checks: KernelChecks,
        plan: _DispatchPlan,
        arguments: DispatchArguments,
    ) -> None:
        self.references = tuple([weakref.ref(view) for view in call])
        self.checks = checks
        self.state = plan.state
        self.plan = plan
        self.scalars = arguments.scalars  # element counts at most: no buffer is held
        self.memo = arguments.memo
        self.arguments = weakref.ref(arguments)

    def arguments_for(self, args: tuple[Any, ...]) -> DispatchArguments:
        """New arguments of a dispatch with ``args`` (the same views as this call), sharing
        the memo, for when no command holds the latest ones any more. Raises for a
        destroyed buffer, as a first dispatch does."""
        plan = self.plan
        views = plan.views(args)
        buffers = tuple([view.kernel_buffer for view in views])  # raises for a destroyed buffer
        device = args[0].device
        arguments = DispatchArguments(
            device, plan.executable, views, buffers, plan.accesses, self.scalars, self.memo
        )
        self.arguments = weakref.ref(arguments)
        return arguments


class Kernel:
    """A kernel function; compiled per argument types and checks setting on first
    dispatch, and cached.

    ``checks``: True (every buffer index checked), False, "nan" (also every value written
    to a float buffer must be finite), or None for the default of the device the kernel
    runs on (``device.kernel_checks``). ``rules``: Python's (the default) or
    luisa-python's (``luisa_nb.kernels.rules``; ``luisa_nb.luisa.func`` uses them).
    """

    def __init__(
        self,
        function: Callable[..., None],
        *,
        mode: str = "auto",
        checks: bool | str | None = None,
        rules: KernelRules = PYTHON_RULES,
    ) -> None:
        self.checks = KernelChecks.parse(checks, allow_default=True)
        self._definition = KernelDefinition(function, mode=mode, rules=rules)
        self._plans: dict[tuple[Any, ...], _DispatchPlan] = {}
        self._latest: _LatestCall | None = None
        self._line_dims = (0, 1, 1)  # the latest 1-D size, reused by the next of that size
        self.name = self._definition.name
        functools.update_wrapper(self, function)

    @property
    def __lnb_kernel_definition__(self) -> KernelDefinition:
        """Called inside another kernel, a kernel is a callable of this definition."""
        return self._definition

    def _checks_for(self, args: tuple[Any, ...]) -> KernelChecks:
        """The checks of a dispatch with ``args``: the kernel's own, else its device's."""
        checks = self.checks
        return self._device_of(args).kernel_checks if checks is None else checks

    def _plan(self, args: tuple[Any, ...], checks: KernelChecks) -> _DispatchPlan:
        key = (
            *[
                a.dtype
                if isinstance(a, BufferView) and not getattr(a, "__lnb_image__", False)
                else argument_type(a)  # an image's type holds its size
                for a in args
            ],
            checks,
            self._definition.capture_state(),
        )
        plan = self._plans.get(key)
        if plan is None:
            types = tuple(argument_type(a) for a in args)
            builds, begin = compiler_runs(), now()
            executable = self._definition.executable(types, checks)
            end = now()
            state = self._definition.capture_state()
            plan = self._plans[(*key[:-1], state)] = _DispatchPlan(executable, args, state)
            if getattr(executable, "mode", "c") != "c":
                label, cached = f"prepare {self.name} ({executable.mode})", False
            elif compiler_runs() != builds:
                label, cached = f"compile {self.name}", False
            else:
                label, cached = f"load {self.name} (cached)", True
            active_recorder().compiled(label, begin, end, cached)
        return plan

    def _device_of(self, args: Sequence[Any]) -> Any:
        """The device a dispatch with ``args`` runs on, found before compiling: the first
        buffer argument's, else the captured buffers', else the default device."""
        for argument in args:
            if (
                isinstance(argument, BufferView)
                or is_bindless_like(argument)
                or is_indirect_like(argument)
            ):
                return argument.device
        types = tuple(argument_type(a) for a in args)
        for captured in self._definition.captured_buffers(types):
            if isinstance(captured, BufferView) or is_indirect_like(captured):
                return captured.device
        return default_device()

    def dispatch_async(
        self, size: Any = None, *args: Any
    ) -> DispatchCommand | IndirectDispatchCommand:
        """A command that runs this kernel over ``size`` threads with ``args``; a ``size``
        that is an :class:`IndirectDispatchBuffer` runs its entries
        (:meth:`dispatch_indirect_async`). Unlike :meth:`dispatch`, it leaves arguments
        by keyword to Python's own ``TypeError``: a ``**keywords`` dict per command cost
        ~30 ns of its ~1.4 µs."""
        if type(size) is int and 0 <= size <= MAX_AXIS:
            # One tuple for a loop's dispatches of one size: each new one would be another
            # object for the garbage collector to count and visit while its command waits
            # for the worker, and comparing the same tuple costs nothing.
            dims = self._line_dims
            if dims[0] != size:
                dims = self._line_dims = (size, 1, 1)
        elif isinstance(size, IndirectDispatchBuffer):
            return self.dispatch_indirect_async(size, *args)
        else:
            dims = dispatch_dims(size, self.name)
        arguments = self._latest_arguments(args)
        if arguments is None:
            arguments = self._arguments(args)
        return DispatchCommand(self.name, dims, arguments)

    def dispatch_indirect_async(
        self,
        indirect: IndirectDispatchBuffer,
        *args: Any,
        offset: int = 0,
        max_count: int = MAX_DISPATCH_COUNT,
    ) -> IndirectDispatchCommand:
        """A command that runs this kernel once per entry of ``indirect`` from entry
        ``offset`` on: as many as its dispatch count says when the command runs, at most
        ``max_count`` and no further than its last entry; each with the entry's dispatch
        size and kernel id (its block size must be this kernel's)."""
        if not isinstance(indirect, IndirectDispatchBuffer):
            raise KernelArgumentError(
                f"kernel {self.name!r}: an indirect dispatch needs an IndirectDispatchBuffer, "
                f"got {type(indirect).__name__}"
            )
        start, end = dispatch_window(indirect, offset, max_count, self.name)
        arguments = self._arguments(args)
        if arguments.views and arguments.device is not indirect.device:
            raise DeviceMismatchError(
                f"kernel {self.name!r}: its buffers are on {arguments.device.name!r} but "
                f"{indirect._name()} is on {indirect.device.name!r}; create the indirect "
                f"dispatch buffer on the device of the kernel's buffers"
            )
        if not arguments.views:  # nothing else decides the device: the indirect buffer does
            indirect.device.backend.check_executable(arguments.executable)
            arguments = DispatchArguments(
                indirect.device, arguments.executable, (), (), (), arguments.scalars
            )
        return IndirectDispatchCommand(self.name, indirect, arguments, start, end)

    def _latest_arguments(self, args: tuple[Any, ...]) -> DispatchArguments | None:
        """The arguments of the latest dispatch on buffers only, if ``args`` are the same
        buffers (still alive: the kernel holds them weakly, never keeping a buffer alive),
        the checks setting and what the kernel captures are the same; checked as
        ``_arguments`` checks new ones. A buffer's device memory changes only when it is
        destroyed, so that of live buffers is still theirs."""
        latest = self._latest
        if latest is None:
            return None
        references = latest.references
        count = len(args)
        if count != len(references):  # never empty: a call without arguments isn't kept
            return None
        # A reference to a buffer that is gone gives None, which an argument of None is.
        if count == 1:  # the common case, without the loop (which costs ~150 ns more)
            if references[0]() is not args[0] or args[0] is None:
                return None
        else:
            for reference, argument in zip(references, args):  # noqa: B905 (equal lengths)
                if reference() is not argument or argument is None:
                    return None
        definition = self._definition
        if (latest.state or definition.captured_heaps) and (
            latest.state != definition.capture_state()
        ):
            return None
        checks = self.checks
        if (args[0].device.kernel_checks if checks is None else checks) is not latest.checks:
            return None
        arguments = latest.arguments()
        if arguments is None:
            return latest.arguments_for(args)
        for view in arguments.views:
            view.buffer.check_alive()  # raises for a destroyed buffer, as a first dispatch does
        return arguments  # its device's backend accepted the executable

    def _arguments(self, args: tuple[Any, ...]) -> DispatchArguments:
        """Check ``args`` and make the arguments of a dispatch with them."""
        checks = self._checks_for(args)
        plan = self._plan(args, checks)
        views = plan.views(args)
        buffers = tuple([view.kernel_buffer for view in views])  # raises for a destroyed buffer
        device = views[0].device if views else default_device()
        device.backend.check_executable(plan.executable)
        for view in views:
            if view.device is not device:
                names = ", ".join(f"{v._name()} on {v.device.name!r}" for v in views)
                raise DeviceMismatchError(
                    f"kernel {self.name!r} uses buffers of several devices ({names}); a "
                    f"dispatch runs on one device"
                )
        scalars = plan.scalars(args, views)
        if plan.scalar_positions or plan.holder_positions or not args:
            executable, accesses = plan.executable, plan.accesses
            return DispatchArguments(device, executable, views, buffers, accesses, scalars)
        arguments = DispatchArguments(
            device, plan.executable, views, buffers, plan.accesses, scalars
        )
        self._latest = _LatestCall(args, checks, plan, arguments)
        return arguments

    def dispatch(
        self,
        size: Any = None,
        *args: Any,
        stream: Stream | None = None,
        sync: bool = False,
        **keywords: Any,
    ) -> None:
        """Submit this kernel to ``stream`` (default: its device's default stream)."""
        if keywords:
            raise self._keywords_error(keywords)
        if stream is not None:
            check_stream(stream, f"kernel {self.name!r}")
        submit_one(self.dispatch_async(size, *args), stream, sync)

    def __call__(
        self,
        *args: Any,
        dispatch_size: Any = None,
        stream: Stream | None = None,
        **keywords: Any,
    ) -> None:
        """``dispatch(dispatch_size, *args, stream=stream)``."""
        if dispatch_size is None or keywords:
            raise self._call_error(dispatch_size, keywords)
        if stream is not None:
            check_stream(stream, f"kernel {self.name!r}")
        command = self.dispatch_async(dispatch_size, *args)
        if stream is None:
            command.device.default_stream._submit_made(command)
        else:
            stream.submit([command])

    def _call_error(self, dispatch_size: Any, keywords: dict[str, Any]) -> KernelArgumentError:
        """The error of a call ``k(...)`` without ``dispatch_size=``, or with arguments
        by keyword."""
        if dispatch_size is None:
            return KernelArgumentError(
                f"kernel {self.name!r} was called without dispatch_size=, so it does not "
                f"know how many threads to run; call {self.name}(arguments..., "
                f"dispatch_size=n) or {self.name}.dispatch(n, arguments...)"
            )
        return self._keywords_error(keywords)

    def _keywords_error(self, keywords: dict[str, Any]) -> KernelArgumentError:
        names = ", ".join(f"{name}=" for name in keywords)
        parameters = ", ".join(inspect.signature(self.__wrapped__).parameters)
        return KernelArgumentError(
            f"kernel {self.name!r} takes its arguments by position, got {names} by keyword; "
            f"pass them in the order of {self.name}({parameters})"
        )

    def source(self, *args: Any) -> str:
        """The generated code for these arguments (C, or Python in python mode)."""
        return self._plan(args, self._checks_for(args)).executable.source

    def __repr__(self) -> str:
        return f"<Kernel {self.name}>"


def kernel(
    function: Callable[..., None] | None = None,
    *,
    mode: str = "auto",
    checks: bool | str | None = None,
    rules: KernelRules = PYTHON_RULES,
) -> Any:
    """Decorate a function as a kernel: ``@kernel`` or ``@kernel(mode="python")``.

    ``mode="c"`` compiles with the system C compiler; ``"python"`` runs the function once
    per thread (``print`` and breakpoints work); ``"auto"`` compiles when a compiler exists.
    ``checks`` (True, False, "nan"; None: the device's default) decides whether buffer
    indices, and with "nan" written float values, are checked; a failed check stops the
    dispatch with :class:`KernelIndexError` or :class:`KernelNonFiniteError`. ``rules``:
    Python's, or ``luisa_nb.kernels.rules.LUISA_RULES`` for luisa-python's ``//``, ``%``
    and loop variables (docs/kernels.md, "Kernel rules").
    """
    if function is None:
        return functools.partial(kernel, mode=mode, checks=checks, rules=rules)
    return Kernel(function, mode=mode, checks=checks, rules=rules)
