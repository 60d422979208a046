"""Bindless arrays in Python mode: a shim whose methods call the shims of the resources
in its slots, computing what the emitted C computes (see ``c_bindless``)."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

import numpy as np

from luisa_nb.kernels.bindless_typing import element_type_of
from luisa_nb.kernels.builtins import thread_state
from luisa_nb.kernels.checks import slot_error
from luisa_nb.kernels.type_system import BufferType, ImageType
from luisa_nb.kernels.vectors import float4, int2, uint2

if TYPE_CHECKING:
    from luisa_nb.kernels.python_mode import ImageShim, PythonExecutable

ZERO = np.float32(0)
ONE = np.float32(1)
HALF = np.float32(0.5)


class BindlessShim:
    """A bindless array ``name`` whose slots hold ``shims`` (buffer and image shims)."""

    def __init__(self, name: str, executable: PythonExecutable, shims: dict[int, Any]) -> None:
        self.name = name
        self.executable = executable
        self.shims = shims

    def _resource(self, slot: Any, method: str, suits: Any) -> Any:
        """The shim in ``slot`` if ``suits(shim)``; else a :class:`KernelIndexError`."""
        shim = self.shims.get(int(slot))
        if shim is not None and suits(shim):
            return shim
        line = sys._getframe(2).f_lineno  # the kernel's frame: it called the method
        executable = self.executable
        suitable = [s for s, other in sorted(self.shims.items()) if suits(other)]
        x, y, z = thread_state.dispatch_id._values.tolist()
        raise slot_error(
            executable.name,
            executable.kernel_source.where(line),
            line,
            (x, y, z),
            int(slot),
            self.name,
            method,
            suitable,
        )

    def buffer_read(self, dtype: Any, slot: Any, index: Any) -> Any:
        wanted = getattr(dtype, "kernel_type", None) or element_type_of(dtype)
        shim = self._resource(
            slot, "buffer_read", lambda s: _element(s) is not None and _element(s) == wanted
        )
        return shim.read(index)

    def buffer_size(self, slot: Any) -> Any:
        shim = self._resource(slot, "buffer_size", lambda s: _element(s) is not None)
        return np.uint32(len(shim.array))

    def texture2d_read(self, slot: Any, coord: Any) -> Any:
        shim = self._resource(slot, "texture2d_read", _is_image)
        return _widened(shim, shim.read(coord))

    def texture2d_size(self, slot: Any) -> Any:
        shim = self._resource(slot, "texture2d_size", _is_image)
        return uint2(shim.image.width, shim.image.height)

    def texture2d_sample(self, slot: Any, uv: Any) -> Any:
        shim = self._resource(slot, "texture2d_sample", _is_image)
        width, height = shim.image.width, shim.image.height
        u, v = (np.float32(c) for c in uv._values)
        u, v = u - np.floor(u), v - np.floor(v)
        x, y = u * np.float32(width) - HALF, v * np.float32(height) - HALF
        x0, y0 = np.floor(x), np.floor(y)
        fx, fy = x - x0, y - y0
        gx, gy = ONE - fx, ONE - fy
        i0 = (int(x0) + width) % width
        j0 = (int(y0) + height) % height
        i1, j1 = (i0 + 1) % width, (j0 + 1) % height

        def fetch(i: int, j: int) -> np.ndarray:
            return _widened(shim, shim.read(int2(i, j)))._values

        a, b, c, d = fetch(i0, j0), fetch(i1, j0), fetch(i0, j1), fetch(i1, j1)
        return float4.wrap((a * gx + b * fx) * gy + (c * gx + d * fx) * fy)


def _element(shim: Any) -> Any:
    """The element type of a buffer shim; None for an image."""
    if hasattr(shim, "image"):
        return None
    return BufferType.of_dtype(shim.array.dtype).element


def _is_image(shim: Any) -> bool:
    return isinstance(getattr(shim, "image", None), ImageType)


def _widened(shim: ImageShim, texel: Any) -> Any:
    """A texel of a float image as a float4 (missing channels 0)."""
    values = [texel] if shim.image.channels == 1 else list(texel._values)
    values += [ZERO] * (4 - len(values))
    return float4(*(np.float32(value) for value in values))
