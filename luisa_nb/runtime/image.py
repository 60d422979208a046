"""2D images: texels in rows, each of 1, 2 or 4 channels stored as bytes, shorts, ints or
floats, as LuisaCompute's ``Image<T>`` with a ``PixelStorage``.

An image is a buffer of channels to everything below the kernel language: texel
``(x, y)`` starts at element ``(y * width + x) * channels``. Its copies, staging, trace
records and hazards are therefore those of a buffer, and its host arrays are any array
of the storage's bytes (``image.numpy()`` gives shape ``(height, width, channels)``).
A kernel reads and writes whole texels as vectors of the image's ``kind``: ``float``
images of ``byte`` or ``short`` storage hold unsigned normalized values, ``[0, 1]`` in
the kernel.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from luisa_nb.errors import InvalidArgumentError
from luisa_nb.runtime.buffer import Buffer

if TYPE_CHECKING:
    from luisa_nb.runtime.device import Device
    from luisa_nb.runtime.stream import Stream

_KINDS = ("float", "int", "uint")
_STORAGE_DTYPES: dict[tuple[str, str], np.dtype] = {
    ("float", "byte"): np.dtype(np.uint8),
    ("float", "short"): np.dtype(np.uint16),
    ("float", "float"): np.dtype(np.float32),
    ("int", "byte"): np.dtype(np.int8),
    ("int", "short"): np.dtype(np.int16),
    ("int", "int"): np.dtype(np.int32),
    ("uint", "byte"): np.dtype(np.uint8),
    ("uint", "short"): np.dtype(np.uint16),
    ("uint", "int"): np.dtype(np.uint32),
    ("uint", "uint"): np.dtype(np.uint32),
}


def storage_dtype(kind: str, storage: str | None) -> tuple[str, np.dtype]:
    """The storage name and the numpy dtype of one channel of a ``kind`` image."""
    if kind not in _KINDS:
        raise InvalidArgumentError(f"an image holds float, int or uint texels, got {kind!r}")
    name = kind if storage is None else str(storage).lower()
    dtype = _STORAGE_DTYPES.get((kind, name))
    if dtype is None:
        allowed = ", ".join(s for k, s in _STORAGE_DTYPES if k == kind)
        raise InvalidArgumentError(f"a {kind} image can be stored as {allowed}, not {storage!r}")
    return name, dtype


class Image(Buffer):
    """``width`` x ``height`` texels (x ``depth`` for a 3D image) of ``channels`` channels
    of ``kind`` (float, int or uint), each channel stored as ``storage`` (byte, short, int,
    uint or float). ``depth`` is None for a 2D image."""

    __lnb_image__ = True

    def __init__(
        self,
        device: Device,
        width: int,
        height: int,
        channels: int,
        kind: str,
        storage: str | None,
        name: str | None = None,
        depth: int | None = None,
    ) -> None:
        if channels not in (1, 2, 4):
            raise InvalidArgumentError(f"an image has 1, 2 or 4 channels, got {channels!r}")
        extents = [("width", width), ("height", height)]
        extents += [("depth", depth)] if depth is not None else []
        for axis, extent in extents:
            if not isinstance(extent, (int, np.integer)) or isinstance(extent, bool) or extent < 1:
                raise InvalidArgumentError(
                    f"image {axis} must be a positive integer, got {extent!r}"
                )
        self.storage, dtype = storage_dtype(kind, storage)
        self.kind = kind
        self.width, self.height, self.channels = int(width), int(height), channels
        self.depth = None if depth is None else int(depth)
        texels = self.width * self.height * (self.depth or 1)
        super().__init__(device, texels * channels, dtype, name)

    @property
    def shape(self) -> tuple[int, ...]:
        """``(height, width, channels)``, or ``(depth, height, width, channels)`` for a 3D
        image: the shape of ``numpy()``."""
        plane = (self.height, self.width, self.channels)
        return plane if self.depth is None else (self.depth, *plane)

    @property
    def normalized(self) -> bool:
        """Whether kernels see channels scaled to ``[0, 1]`` (float images of integer
        storage)."""
        return self.kind == "float" and self.storage != "float"

    def numpy(self, *, stream: Stream | None = None) -> np.ndarray:
        """A new array of the stored channels, shaped as :attr:`shape`."""
        out = np.empty(self.shape, dtype=self.dtype)
        self.copy_to(out, sync=True, stream=stream)
        return out

    def _description(self, size: int) -> str:
        extent = f"{self.width}x{self.height}" + (f"x{self.depth}" if self.depth else "")
        return f"a {extent} image of {self.channels} {self.dtype} channels"

    def _name(self) -> str:
        name = f"image#{self.id}"
        return f"{name} {self.name!r}" if self.name else name

    def __repr__(self) -> str:
        size = f"{self.width}x{self.height}" + (f"x{self.depth}" if self.depth else "")
        return (
            f"<Image {self._name()} {size} {self.kind}{self.channels} "
            f"({self.storage}) on {self.device.name}>"
        )
