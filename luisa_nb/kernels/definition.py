"""``KernelDefinition``: a kernel function, parsed once, specialised per argument types."""

from __future__ import annotations

import os
import threading
import warnings
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from luisa_nb.errors import (
    DEBUG_VARIABLE,
    ConfigurationError,
    KernelArgumentError,
    KernelCompileError,
    LuisaNbWarning,
)
from luisa_nb.kernels.checks import KernelChecks
from luisa_nb.kernels.executable import Executable
from luisa_nb.kernels.frontend.captures import CaptureResolver
from luisa_nb.kernels.frontend.nesting import (
    MAX_EXPRESSION_DEPTH,
    call_with_room,
    deepest_expression,
)
from luisa_nb.kernels.frontend.source import KernelSource
from luisa_nb.kernels.frontend.validation import SyntaxValidator
from luisa_nb.kernels.rules import PYTHON_RULES, KernelRules
from luisa_nb.kernels.type_system import (
    BindlessType,
    BufferType,
    KernelType,
    MatrixType,
    ScalarType,
    VectorType,
    is_aggregate_type,
    is_bindless_like,
)

if TYPE_CHECKING:
    from luisa_nb.kernels import ir

MODES = ("auto", "c", "python")
_fallback_warning_lock = threading.Lock()
_fallback_warned = False


def _warn_fallback_once(name: str) -> None:
    global _fallback_warned
    with _fallback_warning_lock:
        if _fallback_warned:
            return
        _fallback_warned = True
    warnings.warn(
        f"no C compiler found (set CC or put `cc` on PATH); kernel {name!r} and all later "
        f"kernels run in Python mode, one Python call per thread, which is slow",
        LuisaNbWarning,
        stacklevel=4,
    )


def _hide_compiler_frames(error: KernelCompileError) -> KernelCompileError:
    """Compile errors point at kernel source; drop the compiler's frames unless debugging."""
    return error if os.environ.get(DEBUG_VARIABLE) else error.with_traceback(None)


class KernelDefinition:
    """A kernel function; parsing and syntax checks happen here, typing per specialisation.

    ``mode`` is "auto" (C when a compiler exists, else Python with one warning), "c" or
    "python". ``rules`` say how ``//``, ``%`` and a ``for`` variable after its loop read
    (``rules.PYTHON_RULES`` or ``rules.LUISA_RULES``); they hold for this function also
    where another kernel calls it. Raises :class:`KernelCompileError` for constructs
    kernels never accept, and for expressions nested deeper than ``MAX_EXPRESSION_DEPTH``.
    """

    def __init__(
        self, function: Callable[..., Any], mode: str = "auto", rules: KernelRules = PYTHON_RULES
    ) -> None:
        if mode not in MODES:
            raise ConfigurationError(
                f"kernel mode {mode!r} is unknown; use one of {', '.join(map(repr, MODES))}"
            )
        if not isinstance(rules, KernelRules):
            raise ConfigurationError(
                f"kernel rules must be luisa_nb.kernels.rules.PYTHON_RULES or LUISA_RULES, "
                f"got {rules!r}"
            )
        self.function = function
        self.mode = mode
        self.rules = rules
        try:
            self.kernel_source = KernelSource.of(function)
            self._expression_depth = self._checked_depth()
            call_with_room(SyntaxValidator(self.kernel_source).check, self._expression_depth)
        except KernelCompileError as error:
            raise _hide_compiler_frames(error) from None
        self.name: str = function.__name__
        self.parameter_names = [argument.arg for argument in self.kernel_source.tree.args.args]
        self._captures: CaptureResolver | None = None
        self.captured_heaps: tuple[Any, ...] = ()  # bindless arrays typing resolved
        self._typed_kernels: dict[tuple[Any, ...], tuple[str, ir.KernelIR]] = {}
        self._executables: dict[tuple[Any, ...], Executable] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<KernelDefinition {self.name} mode={self.mode} rules={self.rules.name}>"

    @property
    def __lnb_kernel_definition__(self) -> KernelDefinition:
        """A definition is a callable itself (kernel objects expose theirs)."""
        return self

    def capture_resolver(self) -> CaptureResolver:
        """The resolver of the names the function does not assign (made once)."""
        if self._captures is None:
            self._captures = CaptureResolver(self.function)
        return self._captures

    def capture_state(self) -> tuple[Any, ...]:
        """The versions of the bindless arrays the kernel captured so far: a kernel is
        typed again when one of them was updated since."""
        if not self.captured_heaps:
            return ()
        return tuple((id(heap), heap.version) for heap in self.captured_heaps)

    def _checked_depth(self) -> int:
        depth, expression = deepest_expression(self.kernel_source.tree)
        if depth > MAX_EXPRESSION_DEPTH:
            raise self.kernel_source.error(
                expression,
                f"this expression nests {depth} levels deep; kernels accept up to "
                f"{MAX_EXPRESSION_DEPTH}. Split it into several statements (e.g. sum parts "
                f"into locals: s = a + b, then s += c ...)",
            )
        return depth

    def executable(
        self,
        argument_types: Sequence[KernelType | BufferType],
        checks: KernelChecks = KernelChecks.BOUNDS,
    ) -> Executable:
        """The executable for these argument types and ``checks``, compiled on first use
        and cached."""
        types = tuple(argument_types)
        key = (*types, checks, self.rules, self.capture_state())
        executable = self._executables.get(key)
        if executable is not None:
            return executable
        with self._lock:
            executable = self._executables.get(key)
            if executable is None:
                target, kernel = self._typed(types)
                try:
                    executable = call_with_room(
                        lambda: self._build(target, kernel, checks), self._expression_depth
                    )
                except KernelCompileError as error:
                    raise _hide_compiler_frames(error) from None
                self._executables[(*key[:-1], self.capture_state())] = executable
        return executable

    def captured_buffers(self, argument_types: Sequence[KernelType | BufferType]) -> list[Any]:
        """The buffers the kernel captures when specialised on these types (typing only)."""
        with self._lock:
            _, kernel = self._typed(tuple(argument_types))
        return [slot.capture for slot in kernel.buffers if slot.capture is not None]

    def _typed(self, types: tuple[KernelType | BufferType, ...]) -> tuple[str, ir.KernelIR]:
        """The target ("c" or "python") and typed IR for ``types``; call under the lock."""
        key = (*types, self.capture_state())
        typed = self._typed_kernels.get(key)
        if typed is None:
            self._check_argument_types(types)
            target = self._target()
            from luisa_nb.kernels.typing.typer import KernelTyper  # loads with a first use

            typer = KernelTyper(
                self.kernel_source, types, self.capture_resolver(), target, rules=self.rules
            )
            try:
                kernel = call_with_room(typer.run, self._expression_depth)
            except KernelCompileError as error:
                raise _hide_compiler_frames(error) from None
            self.captured_heaps = tuple(
                value
                for value in self.capture_resolver().captured().values()
                if is_bindless_like(value)
            )
            typed = self._typed_kernels[(*types, self.capture_state())] = (target, kernel)
        return typed

    def _check_argument_types(self, argument_types: tuple[Any, ...]) -> None:
        names = self.parameter_names
        if len(argument_types) != len(names):
            raise KernelArgumentError(
                f"kernel {self.name!r} takes {len(names)} argument(s) ({', '.join(names)}) "
                f"but {len(argument_types)} were given"
            )
        for name, argument_type in zip(names, argument_types, strict=True):
            if not isinstance(
                argument_type, (ScalarType, VectorType, MatrixType, BufferType, BindlessType)
            ) and not is_aggregate_type(argument_type):
                raise KernelArgumentError(
                    f"kernel {self.name!r}, parameter {name!r}: expected a ScalarType, "
                    f"VectorType, MatrixType, StructType, ArrayType or BufferType, got "
                    f"{type(argument_type).__name__} "
                    f"{argument_type!r}"
                )

    def _target(self) -> str:
        if self.mode != "auto":
            return self.mode
        from luisa_nb.kernels.c.toolchain import compiler_available

        if compiler_available():
            return "c"
        _warn_fallback_once(self.name)
        return "python"

    def _build(self, target: str, kernel: ir.KernelIR, checks: KernelChecks) -> Executable:
        if target == "c":
            from luisa_nb.kernels.c.executable import CExecutable

            return CExecutable(kernel, self.kernel_source, checks)
        from luisa_nb.kernels.python.executable import PythonExecutable  # Python mode only

        return PythonExecutable(kernel, self._captures, self.kernel_source, checks, self.rules)
