"""The IPython extension: ``%load_ext luisa_nb`` (or ``%load_ext luisa_nb.ipython``).

Loading registers ``%%luisa_trace``, ``%luisa_device``, ``%%luisa_compare`` and
``%luisa_hazards``, and shows traces displayed as a cell's value with the trace viewer;
``%unload_ext`` removes each of these hooks. IPython is imported only when the extension
loads, so importing luisa_nb stays cheap.
"""

from __future__ import annotations

from typing import Any

from luisa_nb.ipython.state import last_trace


def load_ipython_extension(ipython: Any) -> None:
    from luisa_nb.ipython.magics import install

    install(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    from luisa_nb.ipython.magics import uninstall

    uninstall(ipython)


__all__ = ["last_trace", "load_ipython_extension", "unload_ipython_extension"]
