"""luisa-python's ``Image2D`` (``Texture2D`` in older programs) and ``Image3D`` on
luisa_nb.

Arrays are ``(height, width, channels)`` of the storage's dtype both ways, as
``Image2D.numpy()`` returns them (luisa-python's ``from_array`` reads the first axis as
the width; here it is the height, so ``from_array(image.numpy())`` round-trips).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from luisa_nb import runtime
from luisa_nb.errors import InvalidArgumentError, UnsupportedFeatureError
from luisa_nb.kernels.frontend.portability import warn_caller_not_in_luisa
from luisa_nb.luisa import session
from luisa_nb.luisa.buffers import ListedCopies, add_to_list
from luisa_nb.luisa.image_files import (
    load_hdr_image,
    load_ldr_image,
    save_hdr_image,
    save_ldr_image,
)
from luisa_nb.luisa.types import uint
from luisa_nb.runtime import Stream
from luisa_nb.runtime.host import plain_array

_KINDS = {float: "float", int: "int", uint: "uint"}
_TYPES = {kind: dtype for dtype, kind in _KINDS.items()}
_ARRAY_FORMATS = {  # an array's dtype -> the texel dtype and storage of its image
    np.dtype(np.uint8): (float, "byte"),
    np.dtype(np.float32): (float, "float"),
    np.dtype(np.int32): (int, "int"),
    np.dtype(np.uint32): (uint, "uint"),
}


def _texel_format(array: Any, image: str, axes: str) -> tuple[np.ndarray, Any, str]:
    """``array`` as numpy, with the texel dtype and storage of an image made from it;
    ``axes`` names its axes, as many as it must have."""
    array = plain_array(np.asanyarray(array), f"{image}.from_array", writes=False)
    if array.ndim != axes.count(",") + 1 or array.dtype not in _ARRAY_FORMATS:
        raise InvalidArgumentError(
            f"{image}.from_array needs a ({axes}) array of uint8, float32, int32 or uint32; "
            f"got shape {array.shape} of {array.dtype}"
        )
    return (array, *_ARRAY_FORMATS[array.dtype])


class TextureType:
    """What ``Texture2DType`` and ``Texture3DType`` share: the type of an image of
    ``channel`` channels of ``dtype``, equal to another of the same dimension, dtype and
    channels, as in luisa-python. They annotate kernel parameters (``def f(image:
    luisa.Texture3DType(float, 4))``), and ``luisa.func`` checks its arguments against
    them as luisa-python does."""

    def __init__(self, dtype: Any, channel: int) -> None:
        name = type(self).__name__
        if dtype not in _KINDS:
            raise InvalidArgumentError(f"{name} holds float, int or uint texels, got {dtype!r}")
        if channel not in (1, 2, 4):
            raise InvalidArgumentError(f"{name} has 1, 2 or 4 channels, got {channel!r}")
        self.dtype = dtype
        self.channel = channel

    def __eq__(self, other: object) -> bool:
        return (
            type(other) is type(self)
            and self.dtype == other.dtype
            and self.channel == other.channel
        )

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.dtype, self.channel))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.dtype.__name__}, {self.channel})"


class Texture2DType(TextureType):
    """luisa-python's type of an ``Image2D`` (``image.texture2DType``)."""


class Texture3DType(TextureType):
    """luisa-python's type of an ``Image3D`` (``image.texture3DType``)."""


def texture_type_of(value: Any) -> TextureType | None:
    """The ``Texture2DType`` or ``Texture3DType`` of an image; None for anything else."""
    if not isinstance(value, runtime.Image):
        return None
    kind = Texture2DType if value.depth is None else Texture3DType
    return kind(_TYPES[value.kind], value.channels)


class _Image(ListedCopies, runtime.Image):
    """What luisa-python's ``Image2D`` and ``Image3D`` share: one mip level, texels of
    float, int or uint, arrays in the host shape, and copies to and from other images."""

    def __init__(
        self,
        width: int,
        height: int,
        channel: int,
        dtype: Any,
        mip: int,
        storage: str | None,
        depth: int | None = None,
    ) -> None:
        name = type(self).__name__
        if mip != 1:
            raise UnsupportedFeatureError(
                f"{name} with {mip} mip levels: luisa_nb images have one level; pass mip=1"
            )
        kind = _KINDS.get(dtype)
        if kind is None:
            raise InvalidArgumentError(f"{name} holds float, int or uint texels, got {dtype!r}")
        device = session.device()
        device.check_open()
        super().__init__(device, width, height, channel, kind, storage, depth=depth)

    @property
    def host_shape(self) -> tuple[int, ...]:
        return self.shape

    @property
    def channel(self) -> int:
        return self.channels

    def copy_from(self, source: Any, sync: bool = False, stream: Stream | None = None) -> None:
        """Add an upload of an array, or a copy from another image, to the command list."""
        if isinstance(source, runtime.Image):
            self.copy_from_tex(source, sync, stream)
        else:
            super().copy_from(source, sync, stream)

    def copy_from_tex(
        self, other: runtime.Image, sync: bool = False, stream: Stream | None = None
    ) -> None:
        """Add a device copy of ``other`` (same size and storage) into this image."""
        add_to_list(other.copy_to_buffer_async(self), sync, stream)

    def copy_to_tex(
        self, other: runtime.Image, sync: bool = False, stream: Stream | None = None
    ) -> None:
        """Add a device copy of this image into ``other`` (same size and storage)."""
        add_to_list(self.copy_to_buffer_async(other), sync, stream)


class Image2D(_Image):
    """``width`` x ``height`` texels of ``channel`` channels of ``dtype`` (float, int or
    uint), stored as ``storage`` ("byte", "short", "int", "uint", "float"; default: the
    dtype's own)."""

    def __init__(
        self,
        width: int,
        height: int,
        channel: int,
        dtype: Any = float,
        mip: int = 1,
        storage: str | None = None,
    ) -> None:
        super().__init__(width, height, channel, dtype, mip, storage)

    @property
    def texture2DType(self) -> Texture2DType:
        return texture_type_of(self)

    @staticmethod
    def empty(
        width: int, height: int, channel: int, dtype: Any = float, storage: str | None = None
    ) -> Image2D:
        return Image2D(width, height, channel, dtype, 1, storage)

    @staticmethod
    def zeros(
        width: int, height: int, channel: int, dtype: Any = float, storage: str | None = None
    ) -> Image2D:
        """An image whose zero fill is added to the stream's command list (luisa_nb's:
        0.3.7 has none, so it warns)."""
        warn_caller_not_in_luisa("Image2D.zeros", "use Image2D(...) and fill it")
        created = Image2D(width, height, channel, dtype, 1, storage)
        session.stream().add(created.fill_async(0))
        return created

    @staticmethod
    def from_array(array: np.ndarray) -> Image2D:
        """An image of a ``(height, width, channels)`` array: uint8 is byte storage of
        float texels, float32 float texels, int32 int texels, uint32 uint texels."""
        array, dtype, storage = _texel_format(array, "Image2D", "height, width, channels")
        height, width, channels = array.shape
        created = Image2D(width, height, channels, dtype, 1, storage)
        created.copy_from(array)
        return created

    @staticmethod
    def from_ldr_image(path: str | Path) -> Image2D:
        """An RGBA image of byte storage from an image file, read as luisa-python reads it
        (``image_files.load_ldr_image``)."""
        return Image2D.from_array(load_ldr_image(path))

    @staticmethod
    def from_hdr_image(path: str | Path) -> Image2D:
        """An RGBA image of float storage from an image file: Radiance HDR (alpha 1), or
        an 8-bit file linearised as luisa-python does (``image_files.load_hdr_image``)."""
        return Image2D.from_array(load_hdr_image(path))

    def to_image(self, path: str | Path) -> None:
        """Save the image after the stream's earlier work: byte storage as PNG, float
        storage as Radiance HDR (as luisa-python does for its RGBA images)."""
        if self.storage == "byte":
            save_ldr_image(path, self.numpy())
        elif self.storage == "float":
            save_hdr_image(path, self.numpy())
        else:
            raise UnsupportedFeatureError(
                f"to_image of {self.storage}-stored images: files hold byte (PNG) or float "
                f"(HDR) texels; save image.numpy() with a library of your choice"
            )


Texture2D = Image2D
image2d = Image2D.from_array


class Image3D(_Image):
    """``width`` x ``height`` x ``volume`` texels of ``channel`` channels of ``dtype``
    (float, int or uint), stored as ``storage``; arrays are ``(volume, height, width,
    channels)``. Kernels read and write texels at int3 or uint3 coordinates."""

    def __init__(
        self,
        width: int,
        height: int,
        volume: int,
        channel: int,
        dtype: Any = float,
        mip: int = 1,
        storage: str | None = None,
    ) -> None:
        super().__init__(width, height, channel, dtype, mip, storage, volume)

    @property
    def volume(self) -> int:
        return self.depth

    @property
    def texture3DType(self) -> Texture3DType:
        return texture_type_of(self)

    @staticmethod
    def empty(
        width: int,
        height: int,
        volume: int,
        channel: int,
        dtype: Any = float,
        storage: str | None = None,
    ) -> Image3D:
        return Image3D(width, height, volume, channel, dtype, 1, storage)

    @staticmethod
    def zeros(
        width: int,
        height: int,
        volume: int,
        channel: int,
        dtype: Any = float,
        storage: str | None = None,
    ) -> Image3D:
        """An image whose zero fill is added to the stream's command list (luisa_nb's:
        0.3.7 has none, so it warns)."""
        warn_caller_not_in_luisa("Image3D.zeros", "use Image3D(...) and fill it")
        created = Image3D(width, height, volume, channel, dtype, 1, storage)
        session.stream().add(created.fill_async(0))
        return created

    @staticmethod
    def from_array(array: np.ndarray) -> Image3D:
        """An image of a ``(volume, height, width, channels)`` array, typed as
        :meth:`Image2D.from_array` types a 2D one."""
        array, dtype, storage = _texel_format(array, "Image3D", "volume, height, width, channels")
        volume, height, width, channels = array.shape
        created = Image3D(width, height, volume, channels, dtype, 1, storage)
        created.copy_from(array)
        return created


image3d = Image3D.from_array
