"""luisa-python's API on luisa_nb: ``import luisa_nb.luisa as luisa`` runs a luisa-python
program on any luisa_nb backend, traced like the rest.

Commands gather in one implicit list per stream, as in luisa-python, and are submitted by
``execute()``, ``synchronize()`` or a ``sync=True`` copy; under ``staging="submit"``
uploads read host memory at that submission, as real LuisaCompute's CPU backend does.
``init()`` takes a luisa_nb device name (``"cpu"``, ``"cpu:submit"``, ``"dx"``, ...);
without one it uses ``$LUISA_NB_DEVICE``, else ``"cpu"``. Features luisa_nb lacks exist
as names that raise :class:`~luisa_nb.errors.UnsupportedFeatureError` when used.
"""

from __future__ import annotations

from luisa_nb.kernels import SharedArrayType
from luisa_nb.luisa import lcapi, session
from luisa_nb.luisa.accel import Accel, Ray, TriangleHit, inf_ray, make_ray
from luisa_nb.luisa.bindless import BindlessArray, bindless_array
from luisa_nb.luisa.buffers import Buffer, BufferType
from luisa_nb.luisa.functions import Func, func
from luisa_nb.luisa.gui import GUI
from luisa_nb.luisa.image import (
    Image2D,
    Image3D,
    Texture2D,
    Texture2DType,
    Texture3DType,
    image2d,
    image3d,
)
from luisa_nb.luisa.indirect import IndirectDispatchBuffer
from luisa_nb.luisa.log import (
    error,
    error_with_location,
    info,
    info_with_location,
    log_level_error,
    log_level_info,
    log_level_verbose,
    log_level_warning,
    set_log_callback,
    verbose,
    verbose_with_location,
    warning,
    warning_with_location,
)
from luisa_nb.luisa.mathtypes import *  # noqa: F403
from luisa_nb.luisa.mathtypes import __all__ as _math_names
from luisa_nb.luisa.missing import MISSING
from luisa_nb.luisa.types import long, uint, ulong
from luisa_nb.luisa.util import ArrayType, RandomSampler, StructType, array, struct
from luisa_nb.runtime import Event as _Event
from luisa_nb.runtime import Stream as _Stream

globals().update(MISSING)


def init(
    backend_name: str | None = None, shader_path: str | None = None, support_gui: bool = True
) -> None:
    """Create the device every luisa call uses, once; later calls do nothing.
    ``shader_path`` and ``support_gui`` are accepted and ignored (no shader cache is
    shared with LuisaCompute, and there is no GUI)."""
    session.init(backend_name)


def init_headless(backend_name: str | None = None, shader_path: str | None = None) -> None:
    """``init()`` without a GUI, which luisa_nb never has."""
    session.init(backend_name)


def del_device() -> None:
    """Finish the device's work and drop it; ``init()`` may then create another."""
    session.close()


def execute(stream: _Stream | None = None) -> None:
    """Submit the stream's command list (default: the device's stream)."""
    session.stream(stream, "luisa.execute").execute()


def synchronize(stream: _Stream | None = None) -> None:
    """Submit the stream's command list and wait until it has run."""
    session.stream(stream, "luisa.synchronize").synchronize()


def buffer(values) -> Buffer:
    """A buffer holding ``values`` (an array or a list), uploaded through the command list."""
    return Buffer.buffer(values)


def Stream(name: str | None = None) -> _Stream:
    """A new stream on the device of ``init()``, with ``add``, ``execute`` and
    ``synchronize``."""
    return session.device().create_stream(name)


def Event() -> _Event:
    """A new event on the device of ``init()``: ``stream.signal(e)``, ``stream.wait(e)``."""
    return session.device().create_event()


__all__ = [
    *_math_names,
    *MISSING,
    "Accel",
    "Ray",
    "TriangleHit",
    "inf_ray",
    "make_ray",
    "ArrayType",
    "BindlessArray",
    "RandomSampler",
    "SharedArrayType",
    "StructType",
    "array",
    "struct",
    "Buffer",
    "BufferType",
    "Event",
    "Func",
    "GUI",
    "Image2D",
    "Image3D",
    "IndirectDispatchBuffer",
    "Texture2D",
    "Texture2DType",
    "Texture3DType",
    "Stream",
    "bindless_array",
    "buffer",
    "del_device",
    "execute",
    "func",
    "init",
    "image2d",
    "image3d",
    "init_headless",
    "lcapi",
    "long",
    "synchronize",
    "uint",
    "ulong",
    "error",
    "error_with_location",
    "info",
    "info_with_location",
    "log_level_error",
    "log_level_info",
    "log_level_verbose",
    "log_level_warning",
    "set_log_callback",
    "verbose",
    "verbose_with_location",
    "warning",
    "warning_with_location",
]
