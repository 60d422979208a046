"""Reading and parsing a kernel's source, and turning AST positions into errors."""

from __future__ import annotations

import ast
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from luisa_nb.errors import KernelCompileError


@dataclass
class KernelSource:
    """The parsed source of one kernel function, with positions as in its file."""

    function: Callable[..., Any]
    filename: str
    text: str
    first_line: int  # line number of ``text``'s first line in ``filename``
    tree: ast.FunctionDef

    @classmethod
    def of(cls, function: Callable[..., Any]) -> KernelSource:
        """Parse ``function``'s source; positions in the tree match the file."""
        code = getattr(function, "__code__", None)
        name = getattr(function, "__name__", repr(function))
        if code is None:
            raise KernelCompileError(
                f"{name!r} is not a Python function; kernels are plain `def` functions"
            )
        try:
            lines, first_line = inspect.getsourcelines(function)
        except (OSError, TypeError):
            raise KernelCompileError(
                f"cannot read the source of kernel {name!r}; define kernels in a file or a "
                f"notebook cell, not with exec() or at an interactive prompt",
                filename=code.co_filename,
                lineno=code.co_firstlineno,
            ) from None
        text = "".join(lines)
        parsed_text = text
        line_shift = first_line - 1
        if lines and lines[0][:1] in (" ", "\t"):
            parsed_text = "if 1:\n" + text  # keeps columns of an indented (nested) def
            line_shift -= 1
        if line_shift > 0:  # blank lines put the tree at the file's line numbers
            parsed_text, line_shift = "\n" * line_shift + parsed_text, 0
        try:
            module = ast.parse(parsed_text, filename=code.co_filename)
        except SyntaxError:
            module = ast.Module(body=[], type_ignores=[])  # e.g. a lambda inside an expression
        except RecursionError:
            raise KernelCompileError(
                f"kernel {name!r} nests expressions too deeply to parse; split long "
                f"expressions into several statements",
                filename=code.co_filename,
                lineno=first_line,
                source_line=lines[0],
            ) from None
        if line_shift:
            ast.increment_lineno(module, line_shift)
        tree = module.body[0] if module.body else None
        if isinstance(tree, ast.If):
            tree = tree.body[0]
        if not isinstance(tree, ast.FunctionDef):
            raise KernelCompileError(
                f"kernel {name!r} must be defined with `def` (lambdas and async functions "
                f"are not kernels)",
                filename=code.co_filename,
                lineno=first_line,
                source_line=lines[0] if lines else "",
            )
        return cls(function, code.co_filename, text, first_line, tree)

    @property
    def name(self) -> str:
        return self.tree.name

    def line(self, lineno: int) -> str:
        """Source line ``lineno`` (1-based, as in the file), or "" if outside the kernel."""
        lines = self.text.splitlines()
        index = lineno - self.first_line
        return lines[index] if 0 <= index < len(lines) else ""

    def where(self, lineno: int) -> str:
        """``file:line: source text`` for reports about a running kernel ("" if unknown)."""
        if lineno <= 0:
            return ""
        return f"{self.filename}:{lineno}: {self.line(lineno).strip()}"

    def error(self, node: ast.AST, message: str) -> KernelCompileError:
        """A compile error at ``node`` with ``file:line:col`` and a caret."""
        lineno = getattr(node, "lineno", self.first_line)
        line = self.line(lineno)
        byte_offset = getattr(node, "col_offset", 0)  # the AST counts UTF-8 bytes
        column = len(line.encode()[:byte_offset].decode(errors="ignore"))
        return KernelCompileError(
            message,
            filename=self.filename,
            lineno=lineno,
            col_offset=column,
            source_line=line,
        )
