"""Resolving the names a kernel does not assign: closure cells, then globals, then
builtins, following attribute chains on modules. Builtins are recognised by identity.
"""

from __future__ import annotations

import ast
import builtins as python_builtins
import math
import types
from collections.abc import Callable
from typing import Any

from luisa_nb.kernels.lang import builtins as kernel_builtins
from luisa_nb.kernels.lang.autodiff import AUTODIFF_FUNCTIONS
from luisa_nb.kernels.lang.math_builtins import MATH_BUILTINS
from luisa_nb.kernels.lang.matrices import MATRIX_CLASSES, MATRIX_FUNCTIONS
from luisa_nb.kernels.lang.scalar_names import SCALAR_NAMES
from luisa_nb.kernels.lang.vectors import MAKE_FUNCTIONS, VECTOR_CLASSES
from luisa_nb.kernels.type_system import article

LANGUAGE_OBJECTS = (
    kernel_builtins.dispatch_id,
    kernel_builtins.dispatch_size,
    kernel_builtins.kernel_id,
    kernel_builtins.set_block_size,
    kernel_builtins.thread_id,
    kernel_builtins.block_id,
    kernel_builtins.sync_block,
    *MATH_BUILTINS,
    *VECTOR_CLASSES,
    *MAKE_FUNCTIONS,
    *MATRIX_CLASSES,
    *MATRIX_FUNCTIONS,
)
_BUILTIN_TABLE: list[tuple[Any, str]] = [
    *((function, function.__name__) for function in LANGUAGE_OBJECTS),
    *((function, function.__name__) for function in AUTODIFF_FUNCTIONS),  # imported only
    (math.sqrt, "sqrt"),
    (math.sin, "sin"),
    (math.cos, "cos"),
    (math.tan, "tan"),
    (math.exp, "exp"),
    (math.log, "log"),
    (math.pow, "pow"),
    (math.floor, "math_floor"),
    (math.ceil, "math_ceil"),
    (python_builtins.abs, "abs"),
    (python_builtins.min, "min"),
    (python_builtins.max, "max"),
    (python_builtins.pow, "power"),
    (python_builtins.int, "int"),
    (python_builtins.float, "float"),
    (python_builtins.bool, "bool"),
    (python_builtins.any, "any"),
    (python_builtins.all, "all"),
    (python_builtins.range, "range"),
    (python_builtins.len, "len"),
    *((name, name.__name__) for name in SCALAR_NAMES),  # uint(x) ... (luisa.types)
    (python_builtins.print, "print"),
    (python_builtins.breakpoint, "breakpoint"),
]
_BUILTIN_NAMES: dict[int, str] = {id(function): name for function, name in _BUILTIN_TABLE}
# luisa-python resolves its builtins by name, so kernels written for it call a bare
# `dispatch_id()` that no import defines; such unbound names mean the same here.
_UNBOUND_BUILTINS: dict[str, Any] = {function.__name__: function for function in LANGUAGE_OBJECTS}


def builtin_name(value: Any) -> str | None:
    """The kernel-language name of a recognised builtin function, else None."""
    return _BUILTIN_NAMES.get(id(value))  # the table keeps its objects alive: ids are stable


class Unresolved(Exception):
    """A name or attribute could not be resolved; the message says which."""


class CaptureResolver:
    """Looks names up once and remembers the objects (captures are fixed at first use)."""

    def __init__(self, function: Callable[..., Any]) -> None:
        self.function = function
        code = function.__code__
        cells = function.__closure__ or ()
        self._cells = dict(zip(code.co_freevars, cells, strict=True))
        self._globals: dict[str, Any] = function.__globals__
        builtins_namespace = self._globals.get("__builtins__", python_builtins)
        if not isinstance(builtins_namespace, dict):
            builtins_namespace = vars(builtins_namespace)
        self._builtins: dict[str, Any] = builtins_namespace
        self._resolved: dict[str, Any] = {}
        self._enclosing: dict[str, Any] = {}  # resolved from closure cells or globals
        self.unbound_names: set[str] = set()  # language names no import defines

    def resolve_name(self, name: str) -> Any:
        """The object ``name`` refers to in the kernel's enclosing scopes."""
        if name in self._resolved:
            return self._resolved[name]
        if name in self._cells:
            try:
                value = self._cells[name].cell_contents
            except ValueError:
                raise Unresolved(
                    f"free variable {name!r} is referenced before assignment in the "
                    f"enclosing function"
                ) from None
            self._enclosing[name] = value
        elif name in self._globals:
            value = self._globals[name]
            self._enclosing[name] = value
        elif name in self._builtins:
            value = self._builtins[name]
        elif name in _UNBOUND_BUILTINS:
            value = self._enclosing[name] = _UNBOUND_BUILTINS[name]
            self.unbound_names.add(name)
        else:
            raise Unresolved(f"name {name!r} is not defined")
        self._resolved[name] = value
        return value

    def resolve(self, node: ast.expr) -> Any:
        """The object a ``Name`` or a module attribute chain (``lnb.dispatch_id``) refers to."""
        if isinstance(node, ast.Name):
            return self.resolve_name(node.id)
        if isinstance(node, ast.Attribute):
            owner = self.resolve(node.value)
            if not isinstance(owner, types.ModuleType):
                raise Unresolved(
                    f"attribute {node.attr!r} of {article(type(owner).__name__)} object; kernels "
                    f"follow attributes only on modules"
                )
            try:
                return getattr(owner, node.attr)
            except AttributeError:
                raise Unresolved(
                    f"module {owner.__name__!r} has no attribute {node.attr!r}"
                ) from None
        raise Unresolved("this expression does not name a function")

    def captured(self) -> dict[str, Any]:
        """The names resolved so far from closure cells and globals, with their objects."""
        return dict(self._enclosing)

    def python_mode_namespaces(
        self, replacements: dict[str, Any]
    ) -> tuple[dict[str, Any], tuple[Any, ...]]:
        """Globals and closure for a copy of the function: captured names keep the values
        they had when resolved, except those in ``replacements``."""
        values = {**self._enclosing, **replacements}
        namespace = dict(self._globals)
        closure = []
        for name, cell in self._cells.items():
            closure.append(types.CellType(values[name]) if name in values else cell)
        for name, value in values.items():
            if name not in self._cells:
                namespace[name] = value
        return namespace, tuple(closure)
