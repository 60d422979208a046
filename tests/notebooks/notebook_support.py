"""Shared by the notebook tests: the seed cell, whether luisa_nb re-exports the extension,
and a shell wrapper that captures what a cell shows."""

from __future__ import annotations

from dataclasses import dataclass, field

import luisa_nb

SEED_CELL = """\
import numpy as np
import luisa_nb as lnb

dev = lnb.default_device()
x = dev.create_buffer(1024, np.float32, name="x")
y = dev.create_buffer(1024, np.float32, name="y")
z = dev.create_buffer(1024, np.float32, name="z")
x.copy_from(np.arange(1024, dtype=np.float32))
y.copy_from(1000.0 * np.arange(1024, dtype=np.float32))


@lnb.kernel
def vecadd(buf_z):
    tid = lnb.dispatch_id().x
    buf_z.write(tid, x.read(tid) + y.read(tid))


z_data = np.full(1024, 123.0, np.float32)
stream = dev.default_stream
stream.submit(
    [
        z.copy_from_async(z_data),
        vecadd.dispatch_async(1024, z),
        z.copy_to_async(z_data),
        z.copy_from_async(z_data),
        z.copy_to_buffer_async(x),
    ]
)
stream.synchronize()
"""
"""The program of LuisaCompute #143 as a notebook cell, on ``lnb.default_device()``."""

WIRED = all(
    hasattr(luisa_nb, name)
    for name in ("load_ipython_extension", "unload_ipython_extension", "last_trace", "compare")
)
"""Whether luisa_nb re-exports the extension, ``last_trace`` and ``compare``, so that
``%load_ext luisa_nb`` and the notebooks work."""

EXTENSION = "luisa_nb" if WIRED else "luisa_nb.ipython"


@dataclass
class CellOutput:
    """What running one cell showed: printed text, errors, and displayed data."""

    success: bool
    stdout: str
    stderr: str
    outputs: list[dict[str, str]] = field(default_factory=list)

    @property
    def html(self) -> str:
        return "\n".join(output.get("text/html", "") for output in self.outputs)

    @property
    def plain(self) -> str:
        return "\n".join(output.get("text/plain", "") for output in self.outputs)


class Shell:
    """``shell.run(code)`` runs a cell as Jupyter would and captures what it shows."""

    def __init__(self, shell) -> None:
        self.shell = shell

    def run(self, code: str) -> CellOutput:
        from IPython.utils.capture import capture_output

        with capture_output() as captured:
            result = self.shell.run_cell(code)
        return CellOutput(
            result.success,
            captured.stdout,
            captured.stderr,
            [dict(output.data) for output in captured.outputs],
        )

    @property
    def user_ns(self) -> dict:
        return self.shell.user_ns
