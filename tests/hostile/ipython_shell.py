"""A real IPython shell in the worker, with luisa_nb's extension loaded for one case, and
what a cell run in it showed."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from typing import Any

import luisa_nb as lnb
from luisa_nb.runtime import default_device, set_default_device

EXTENSION = "luisa_nb"


@dataclass
class CellRun:
    """What running one cell showed: its error (None if it succeeded), printed text, and
    each displayed output's data by MIME type."""

    error: BaseException | None
    stdout: str
    stderr: str
    outputs: list[dict[str, Any]] = field(default_factory=list)

    @property
    def pages(self) -> list[str]:
        return [output["text/html"] for output in self.outputs if "text/html" in output]


@cache
def _shell() -> Any:
    from IPython.core.interactiveshell import InteractiveShell
    from traitlets.config import Config

    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    return InteractiveShell.instance(config=config)


class Shell:
    """The worker's shell: ``run(cell)`` runs a cell as a notebook would."""

    def __init__(self, shell: Any) -> None:
        self.shell = shell

    @property
    def user_ns(self) -> dict[str, Any]:
        return self.shell.user_ns

    def run(self, cell: str) -> CellRun:
        from IPython.utils.capture import capture_output

        with capture_output() as captured:
            result = self.shell.run_cell(cell)
        return CellRun(
            result.error_before_exec or result.error_in_exec,
            captured.stdout,
            captured.stderr,
            [dict(output.data) for output in captured.outputs],
        )


@contextlib.contextmanager
def extension_loaded() -> Iterator[Shell]:
    """The shell with the extension loaded, unloaded after the case, and the default
    device put back."""
    shell = _shell()
    previous = default_device()
    shell.user_ns.update(lnb=lnb)
    shell.run_line_magic("load_ext", EXTENSION)
    try:
        yield Shell(shell)
    finally:
        shell.run_line_magic("unload_ext", EXTENSION)
        if not previous.closed:
            set_default_device(previous)
