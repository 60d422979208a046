"""Bindless arrays in Python mode: a shim whose methods call the shims of the resources
in its slots, computing what the emitted C computes (see ``c.bindless``: the same float32
operations in the same order, so both agree bit for bit)."""

from __future__ import annotations

import sys
from collections.abc import Iterable
from itertools import product
from typing import TYPE_CHECKING, Any

import numpy as np

from luisa_nb.kernels.checks import slot_error, texel_error
from luisa_nb.kernels.lang.builtins import thread_state
from luisa_nb.kernels.lang.vectors import float4, int2, int3, uint2, uint3
from luisa_nb.kernels.python.rays import AccelShimMethods
from luisa_nb.kernels.type_system import BufferType, Sampler, resource_kind_of
from luisa_nb.kernels.typing.bindless import element_type_of

if TYPE_CHECKING:
    from luisa_nb.kernels.python.executable import ImageShim, PythonExecutable

ZERO = np.float32(0)
ONE = np.float32(1)
HALF = np.float32(0.5)
TWO = np.float32(2)
NO_TEXEL = np.zeros(4, np.float32)


def _repeat(i: int, n: int) -> int:
    return i % n


def _mirror(i: int, n: int) -> int:
    t = i % (2 * n)
    return t if t < n else 2 * n - 1 - t


def _edge(i: int, n: int) -> int:
    return min(max(i, 0), n - 1)


def _zero(i: int, n: int) -> int:
    return i if 0 <= i < n else -1


ADDRESS = {"repeat": _repeat, "mirror": _mirror, "edge": _edge, "zero": _zero}


def sample(shim: ImageShim, uv: Any) -> Any:
    """The float4 that ``c.bindless``'s sampling helper gives for ``shim``'s image."""
    image = shim.image
    sampler = image.sampler or Sampler()
    address = ADDRESS[sampler.address]
    linear = sampler.filter == "linear"
    taps: list[tuple[int, ...]] = []  # per axis: its tap indices
    fractions = []  # per axis: (g, f)
    for u, extent in zip(uv._values, image.size, strict=True):
        u = np.float32(u)
        if sampler.address == "repeat":
            u = u - np.floor(u)
        elif sampler.address == "mirror":
            u = u - TWO * np.floor(u * HALF)
        if linear:
            x = u * np.float32(extent) - HALF
            c = np.floor(x)
            f = x - c
            fractions.append((ONE - f, f))
        else:
            c = np.floor(u * np.float32(extent))
        k = int(np.fmax(np.fmin(c, np.float32(2 * extent)), np.float32(-2)))
        taps.append(tuple(address(k + step, extent) for step in ((0, 1) if linear else (0,))))
    coordinate = int3 if image.depth else int2

    def fetch(indices: tuple[int, ...]) -> np.ndarray:
        if min(indices) < 0:
            return NO_TEXEL
        return _widened(shim, shim.read(coordinate(*indices)))._values

    if not linear:
        return float4.wrap(fetch(tuple(axis[0] for axis in taps)).copy())
    texels = {
        bits: fetch(tuple(axis[bit] for axis, bit in zip(taps, bits, strict=True)))
        for bits in product((0, 1), repeat=len(taps))
    }

    def blend(axis: int, bits: tuple[int, ...]) -> np.ndarray:
        if axis < 0:
            return texels[bits]
        g, f = fractions[axis]
        return blend(axis - 1, (0, *bits)) * g + blend(axis - 1, (1, *bits)) * f

    return float4.wrap(blend(len(taps) - 1, ()))


class BindlessShim(AccelShimMethods):
    """A bindless array ``name`` whose slots hold the buffer and image shims of
    ``entries`` (``(slot, shim)`` pairs, a slot up to once per resource kind)."""

    def __init__(
        self, name: str, executable: PythonExecutable, entries: Iterable[tuple[int, Any]]
    ) -> None:
        self.name = name
        self.executable = executable
        self.shims = {(slot, _kind(shim)): shim for slot, shim in entries}

    def _resource(
        self, slot: Any, method: str, fits: Any, depth: int = 2, element: Any = None
    ) -> Any:
        """The shim of ``method``'s kind in ``slot`` if ``fits(shim)``; else a
        :class:`KernelIndexError` at the line of the kernel's frame, ``depth`` frames up
        (``element``: the element type ``buffer_read`` wants)."""
        kind = "buffer" if method.startswith("buffer") else method[:9]
        shim = self.shims.get((int(slot), kind))
        if shim is not None and fits(shim):
            return shim
        line = sys._getframe(depth).f_lineno
        executable = self.executable
        suitable = [s for (s, k), other in sorted(self.shims.items()) if k == kind and fits(other)]
        raise slot_error(
            executable.name,
            executable.kernel_source.where(line),
            line,
            _thread(),
            int(slot),
            self.name,
            method,
            suitable,
            element,
        )

    def buffer_read(self, dtype: Any, slot: Any, index: Any) -> Any:
        wanted = getattr(dtype, "kernel_type", None) or element_type_of(dtype)
        shim = self._resource(slot, "buffer_read", lambda s: _element(s) == wanted, element=wanted)
        return shim.read(index)

    def buffer_size(self, slot: Any) -> Any:
        shim = self._resource(slot, "buffer_size", lambda s: True)
        return np.uint32(len(shim.array))

    def _texture(self, slot: Any, method: str, depth: int = 3) -> ImageShim:
        """The image shim in ``slot`` for ``method`` (called ``depth - 2`` frames below
        the kernel's)."""
        return self._resource(slot, method, lambda s: True, depth=depth)

    def _texel(self, slot: Any, coord: Any, method: str) -> Any:
        """Texel ``coord`` of the image in ``slot`` as a float4; a coordinate outside is
        a :class:`KernelIndexError` at the kernel's line."""
        shim = self._texture(slot, method, depth=4)
        position = tuple(int(c) for c in coord._values)
        size = shim.image.size
        if not all(0 <= c < extent for c, extent in zip(position, size, strict=True)):
            line = sys._getframe(2).f_lineno
            executable = self.executable
            where = executable.kernel_source.where(line)
            raise texel_error(
                executable.name, where, line, _thread(), "reads", position, size, shim.name
            )
        return _widened(shim, shim.read(coord))

    def texture2d_read(self, slot: Any, coord: Any) -> Any:
        return self._texel(slot, coord, "texture2d_read")

    def texture3d_read(self, slot: Any, coord: Any) -> Any:
        return self._texel(slot, coord, "texture3d_read")

    def texture2d_size(self, slot: Any) -> Any:
        return uint2(*self._texture(slot, "texture2d_size").image.size)

    def texture3d_size(self, slot: Any) -> Any:
        return uint3(*self._texture(slot, "texture3d_size").image.size)

    def texture2d_size_mip(self, slot: Any, level: Any) -> Any:
        return uint2(*self._texture(slot, "texture2d_size_mip").image.size)

    def texture3d_size_mip(self, slot: Any, level: Any) -> Any:
        return uint3(*self._texture(slot, "texture3d_size_mip").image.size)

    def texture2d_sample(self, slot: Any, uv: Any) -> Any:
        return sample(self._texture(slot, "texture2d_sample"), uv)

    def texture3d_sample(self, slot: Any, uv: Any) -> Any:
        return sample(self._texture(slot, "texture3d_sample"), uv)

    def texture2d_sample_mip(self, slot: Any, uv: Any, level: Any) -> Any:
        return sample(self._texture(slot, "texture2d_sample_mip"), uv)

    def texture3d_sample_mip(self, slot: Any, uv: Any, level: Any) -> Any:
        return sample(self._texture(slot, "texture3d_sample_mip"), uv)

    def texture2d_sample_grad(self, slot: Any, uv: Any, ddx: Any, ddy: Any) -> Any:
        return sample(self._texture(slot, "texture2d_sample_grad"), uv)

    def texture3d_sample_grad(self, slot: Any, uv: Any, ddx: Any, ddy: Any) -> Any:
        return sample(self._texture(slot, "texture3d_sample_grad"), uv)

    def texture2d_sample_grad_level(
        self, slot: Any, uv: Any, ddx: Any, ddy: Any, min_level: Any
    ) -> Any:
        return sample(self._texture(slot, "texture2d_sample_grad_level"), uv)

    def texture3d_sample_grad_level(
        self, slot: Any, uv: Any, ddx: Any, ddy: Any, min_level: Any
    ) -> Any:
        return sample(self._texture(slot, "texture3d_sample_grad_level"), uv)


def _thread() -> tuple[int, int, int]:
    """The dispatch id of the Python-mode thread running now."""
    x, y, z = thread_state.dispatch_id._values.tolist()
    return (x, y, z)


def _element(shim: Any) -> Any:
    """The element type of a buffer shim."""
    return BufferType.of_dtype(shim.array.dtype).element


def _kind(shim: Any) -> str:
    """The kind of slot entry a buffer or image shim fills."""
    image = getattr(shim, "image", None)
    return resource_kind_of(image) if image is not None else "buffer"


def _widened(shim: ImageShim, texel: Any) -> Any:
    """A texel of a float image as a float4 (missing channels 0)."""
    values = [texel] if shim.image.channels == 1 else list(texel._values)
    values += [ZERO] * (4 - len(values))
    return float4(*(np.float32(value) for value in values))
