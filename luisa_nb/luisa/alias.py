"""Run a luisa-python program unchanged: ``import luisa`` (and its submodules) resolve
to ``luisa_nb.luisa`` while :func:`as_luisa` is active."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType

SUBMODULES = ("mathtypes", "types", "builtin", "util", "autodiff")


def luisa_modules() -> dict[str, ModuleType]:
    """``luisa`` and ``luisa.<sub>`` as the modules of ``luisa_nb.luisa`` that stand in."""
    modules = {"luisa": importlib.import_module("luisa_nb.luisa")}
    for name in SUBMODULES:
        modules[f"luisa.{name}"] = importlib.import_module(f"luisa_nb.luisa.{name}")
    return modules


@contextmanager
def as_luisa() -> Iterator[None]:
    """Make ``import luisa`` give ``luisa_nb.luisa`` inside the block; what ``luisa``
    named before (real luisa-python, or nothing) is restored after it."""
    replacements = luisa_modules()
    saved = {name: sys.modules.get(name) for name in replacements}
    sys.modules.update(replacements)
    try:
        yield
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module
