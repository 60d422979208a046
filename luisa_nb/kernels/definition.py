"""``KernelDefinition``: a kernel function, parsed once, specialised per argument types."""

from __future__ import annotations

import os
import threading
import warnings
from collections.abc import Callable, Sequence
from typing import Any

from luisa_nb.errors import (
    ConfigurationError,
    KernelArgumentError,
    KernelCompileError,
    LuisaNbWarning,
)
from luisa_nb.kernels.captures import CaptureResolver
from luisa_nb.kernels.executable import CExecutable, Executable
from luisa_nb.kernels.python_mode import PythonExecutable
from luisa_nb.kernels.source import KernelSource
from luisa_nb.kernels.toolchain import compiler_available
from luisa_nb.kernels.type_system import BufferType, ScalarType
from luisa_nb.kernels.typer import KernelTyper
from luisa_nb.kernels.validation import SyntaxValidator

MODES = ("auto", "c", "python")
DEBUG_VARIABLE = "LUISA_NB_KERNEL_DEBUG"
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
    "python". Raises :class:`KernelCompileError` for constructs kernels never accept.
    """

    def __init__(self, function: Callable[..., Any], mode: str = "auto") -> None:
        if mode not in MODES:
            raise ConfigurationError(
                f"kernel mode {mode!r} is unknown; use one of {', '.join(map(repr, MODES))}"
            )
        self.function = function
        self.mode = mode
        try:
            self.kernel_source = KernelSource.of(function)
            SyntaxValidator(self.kernel_source).check()
        except KernelCompileError as error:
            raise _hide_compiler_frames(error) from None
        self.name: str = function.__name__
        self.parameter_names = [argument.arg for argument in self.kernel_source.tree.args.args]
        self._captures: CaptureResolver | None = None
        self._executables: dict[tuple[ScalarType | BufferType, ...], Executable] = {}
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"<KernelDefinition {self.name} mode={self.mode}>"

    def executable(self, argument_types: Sequence[ScalarType | BufferType]) -> Executable:
        """The executable for these argument types, compiled on first use and cached."""
        key = tuple(argument_types)
        executable = self._executables.get(key)
        if executable is not None:
            return executable
        with self._lock:
            executable = self._executables.get(key)
            if executable is None:
                self._check_argument_types(key)
                try:
                    executable = self._specialise(key)
                except KernelCompileError as error:
                    raise _hide_compiler_frames(error) from None
                self._executables[key] = executable
        return executable

    def _check_argument_types(self, argument_types: tuple[Any, ...]) -> None:
        names = self.parameter_names
        if len(argument_types) != len(names):
            raise KernelArgumentError(
                f"kernel {self.name!r} takes {len(names)} argument(s) ({', '.join(names)}) "
                f"but {len(argument_types)} were given"
            )
        for name, argument_type in zip(names, argument_types, strict=True):
            if not isinstance(argument_type, (ScalarType, BufferType)):
                raise KernelArgumentError(
                    f"kernel {self.name!r}, parameter {name!r}: expected a ScalarType or "
                    f"BufferType, got {type(argument_type).__name__} {argument_type!r}"
                )

    def _target(self) -> str:
        if self.mode != "auto":
            return self.mode
        if compiler_available():
            return "c"
        _warn_fallback_once(self.name)
        return "python"

    def _specialise(self, argument_types: tuple[ScalarType | BufferType, ...]) -> Executable:
        target = self._target()
        if self._captures is None:
            self._captures = CaptureResolver(self.function)
        kernel = KernelTyper(self.kernel_source, argument_types, self._captures, target).run()
        if target == "c":
            return CExecutable(kernel)
        return PythonExecutable(kernel, self._captures, self.kernel_source.text)
