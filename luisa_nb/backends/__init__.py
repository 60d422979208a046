"""Backends, found by name. A backend module is imported only when a device asks for it,
so a missing optional dependency (pyzmq, cupy) breaks that backend and nothing else.

Other packages add backends through the entry point group ``luisa_nb.backends``: the
entry point's name is the backend name, its object a :class:`Backend` subclass.
"""

from __future__ import annotations

import importlib

from luisa_nb.backends.base import (
    Allocation,
    Backend,
    DeviceSpan,
    DispatchSpan,
    KernelBuffer,
    OperationFailed,
)
from luisa_nb.errors import BackendNotFoundError

ENTRY_POINT_GROUP = "luisa_nb.backends"
BUILTIN_BACKENDS = {
    "cpu": "luisa_nb.backends.cpu",
    "cuda": "luisa_nb.backends.cuda",
    "dx": "luisa_nb.backends.dx",
    "metal": "luisa_nb.backends.metal",
    "remote": "luisa_nb.backends.remote",
}


def _entry_points() -> dict[str, object]:
    from importlib.metadata import entry_points  # slow to import: only for other backends

    return {point.name: point for point in entry_points(group=ENTRY_POINT_GROUP)}


def backend_names() -> list[str]:
    """Every registered backend name, built in or from an entry point."""
    return sorted({*BUILTIN_BACKENDS, *_entry_points()})


def load_backend(name: str) -> type[Backend]:
    """The backend class registered as ``name``."""
    module_name = BUILTIN_BACKENDS.get(name)
    point = None if module_name else _entry_points().get(name)
    if module_name is None and point is None:
        import difflib

        close = difflib.get_close_matches(name, backend_names(), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else "."
        raise BackendNotFoundError(
            f"no backend named {name!r}{hint} Available: {', '.join(backend_names())}"
        )
    try:
        loaded = importlib.import_module(module_name).backend_class if module_name else point.load()
    except ImportError as error:
        raise BackendNotFoundError(
            f"backend {name!r} cannot load: {error}. Install what it needs and retry."
        ) from error
    if not (isinstance(loaded, type) and issubclass(loaded, Backend)):
        raise BackendNotFoundError(
            f"backend {name!r} from entry point {point.value!r} is not a luisa_nb Backend "
            f"subclass; fix the package that registers it"
        )
    return loaded


def available_backends() -> list[str]:
    """The backend names whose modules load here (their optional dependencies exist)."""
    names = []
    for name in backend_names():
        try:
            load_backend(name)
        except BackendNotFoundError:
            continue
        names.append(name)
    return names


__all__ = [
    "ENTRY_POINT_GROUP",
    "Allocation",
    "Backend",
    "DeviceSpan",
    "DispatchSpan",
    "KernelBuffer",
    "OperationFailed",
    "available_backends",
    "backend_names",
    "load_backend",
]
