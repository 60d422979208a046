"""Shared test helpers: a fake buffer, a launcher like the runtime's, golden files."""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path
from typing import Any

import numpy as np

from luisa_nb.kernels import Executable, KernelDefinition, argument_type
from luisa_nb.kernels.checks import KernelChecks
from luisa_nb.kernels.indirect import word_count

GOLDEN = Path(__file__).parent / "golden"
UPDATE_GOLDEN = os.environ.get("LUISA_NB_UPDATE_GOLDEN") == "1"


class FakeBuffer:
    """Buffer-like by duck typing, backed by a numpy array."""

    __lnb_buffer__ = True

    def __init__(self, array: Any, dtype: Any = None) -> None:
        self.array = np.array(array, dtype=dtype)
        self.dtype = self.array.dtype

    def __repr__(self) -> str:
        return f"FakeBuffer({self.array.dtype}, {self.array.size})"


class FakeIndirect(FakeBuffer):
    """An indirect dispatch buffer by duck typing: the uint32 words of ``capacity`` entries
    (``kernels/indirect.py``)."""

    __lnb_indirect__ = True

    def __init__(self, capacity: int) -> None:
        super().__init__(np.zeros(word_count(capacity), np.uint32))


def dims_of(size: int | tuple[int, ...]) -> tuple[int, int, int]:
    size = size if isinstance(size, tuple) else (size,)
    return (*size, 1, 1)[:3]


def run(
    definition: KernelDefinition,
    size: int | tuple[int, ...],
    *arguments: Any,
    checks: KernelChecks | bool | str = True,
    cancel: Any = None,
) -> Executable:
    """Launch like the runtime: argument buffers, then captured ones; scalars in order,
    the kernel id 0 of a direct dispatch if the kernel reads it, then the element count of
    each buffer for checked C kernels."""
    types = tuple(argument_type(a) for a in arguments)
    executable = definition.executable(types, KernelChecks.parse(checks))
    buffer_arguments = iter(a for a in arguments if isinstance(a, FakeBuffer))
    buffers = [
        next(buffer_arguments) if p.capture is None else p.capture
        for p in executable.buffer_parameters
    ]
    scalars = [a for a in arguments if not isinstance(a, FakeBuffer)]
    if executable.kernel_id_position is not None:
        scalars.append(0)
    scalars += [
        buffers[p.count_of].array.size
        for p in executable.scalar_parameters
        if p.count_of is not None
    ]
    if executable.mode == "c":
        handles = [buffer.array.ctypes.data for buffer in buffers]
    else:
        handles = [buffer.array for buffer in buffers]
    executable.launch(dims_of(size), handles, scalars, cancel)
    return executable


def load_function(
    tmp_path: Path, source: str, name: str = "kernel_under_test", stem: str = "snippet"
) -> Any:
    """Write ``source`` to ``tmp_path/<stem>.py``, import it, return its function ``name``."""
    path = tmp_path / f"{stem}.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name)


def check_golden(relative_path: str, text: str) -> None:
    """Compare ``text`` with a golden file; LUISA_NB_UPDATE_GOLDEN=1 rewrites it."""
    path = GOLDEN / relative_path
    if UPDATE_GOLDEN or not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        if not UPDATE_GOLDEN:
            raise AssertionError(f"golden file {path} was missing; it has been written")
    assert text == path.read_text(), f"{path} differs; LUISA_NB_UPDATE_GOLDEN=1 regenerates"


def numpy_mandelbrot(width: int, height: int, max_iterations: int) -> np.ndarray:
    """The same float32 recurrence with masks, for exact iteration counts."""
    xs, ys = np.meshgrid(np.arange(width, dtype=np.float32), np.arange(height, dtype=np.float32))
    cx = xs / np.float32(width) * np.float32(3) - np.float32(2)
    cy = ys / np.float32(height) * np.float32(2) - np.float32(1)
    zx, zy = np.zeros_like(cx), np.zeros_like(cy)
    iterations = np.zeros(cx.shape, np.int32)
    for _ in range(max_iterations):
        active = zx * zx + zy * zy <= np.float32(4)
        t = zx * zx - zy * zy + cx
        new_zy = np.float32(2) * zx * zy + cy
        zx, zy = np.where(active, t, zx), np.where(active, new_zy, zy)
        iterations += active
    return iterations.ravel()


def numpy_vector_mandelbrot(width: int, height: int, max_iterations: int) -> np.ndarray:
    """vector_kernels.mandelbrot in float32 numpy: iterations / max_iterations."""
    f32 = np.float32
    px, py = np.meshgrid(np.arange(width, dtype=f32), np.arange(height, dtype=f32))
    cx = f32(2.5) * px / f32(width) - f32(2)
    cy = f32(2.5) * py / f32(height) - f32(1.25)
    zx, zy = np.zeros_like(cx), np.zeros_like(cy)
    counts = np.zeros(cx.shape, np.int32)
    active = np.ones(cx.shape, bool)
    for _ in range(max_iterations):
        active &= ~(np.sqrt(zx * zx + zy * zy) > f32(2))
        new_x = zx * zx - zy * zy + cx
        new_y = f32(2) * zx * zy + cy
        zx, zy = np.where(active, new_x, zx), np.where(active, new_y, zy)
        counts += active
    return (counts.astype(f32) / f32(max_iterations)).ravel()
