"""Backends, found by name. A backend module is imported only when a device asks for it,
so a missing optional dependency breaks that backend and nothing else."""

from __future__ import annotations

import difflib
import importlib

from luisa_nb.backends.base import Allocation, Backend, KernelBuffer
from luisa_nb.errors import BackendNotFoundError

BACKEND_MODULES = {"cpu": "luisa_nb.backends.cpu"}


def backend_names() -> list[str]:
    return sorted(BACKEND_MODULES)


def load_backend(name: str) -> type[Backend]:
    """The backend class registered as ``name``."""
    module_name = BACKEND_MODULES.get(name)
    if module_name is None:
        close = difflib.get_close_matches(name, BACKEND_MODULES, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise BackendNotFoundError(
            f"no backend named {name!r}{hint} Available: {', '.join(backend_names())}"
        )
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        raise BackendNotFoundError(
            f"backend {name!r} cannot load: {error}. Install what it needs and retry."
        ) from error
    return module.backend_class


__all__ = ["Allocation", "Backend", "KernelBuffer", "backend_names", "load_backend"]
