"""Cases, and the seeded choice of cases across the areas.

Each area is a module of :mod:`tests.hostile.areas` with ``catalogue()`` (the fixed cases,
in a fixed order) and ``variant(rng)`` (one more case drawn with ``rng``). A case names its
action by module and function, so that a worker process can find it again, and passes it
plain arguments (numbers, strings, tuples) from which the action builds its hostile input.
"""

from __future__ import annotations

import importlib
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import ModuleType

DEFAULT_TIMEOUT = 10.0
"""Seconds a case may run (its cleanup included) before it counts as a hang."""

AREAS = {
    "buffers": "buffer API, all backends",
    "kernels": "kernels",
    "streams": "streams, events, callbacks, threads",
    "trace_files": "trace files",
    "luisa_api": "`luisa_nb.luisa`",
    "magics": "IPython magics",
}
"""The areas, by module name, with the row title of the table."""


@dataclass(frozen=True)
class Case:
    """One hostile input: ``action(*arguments)``, a function of ``module`` (a module of this
    package, such as ``areas.buffers``), counted in ``area``.

    ``isolated``: the worker that runs it is replaced afterwards (the case may leave
    threads or memory that later cases must not inherit)."""

    area: str
    title: str
    module: str
    action: str
    arguments: tuple = ()
    timeout: float = DEFAULT_TIMEOUT
    isolated: bool = False

    @property
    def key(self) -> str:
        """The case's name in reports and in the CI test's ids."""
        return f"{self.area}: {self.title}"


def case(
    action: Callable[..., None],
    title: str,
    *arguments: object,
    timeout: float = DEFAULT_TIMEOUT,
    isolated: bool = False,
) -> Case:
    """A case of ``action``, a module-level function of a module of this package; its
    area is its module's name."""
    module = action.__module__.removeprefix(f"{__package__}.")
    area = module.rsplit(".", 1)[-1]
    return Case(area, title, module, action.__name__, tuple(arguments), timeout, isolated)


def area_module(area: str) -> ModuleType:
    if area not in AREAS:
        raise ValueError(f"no area {area!r}; the areas are {', '.join(AREAS)}")
    return importlib.import_module(f"{__package__}.areas.{area}")


def action_of(module: str, action: str) -> Callable[..., None]:
    """The function ``action`` of ``module`` (named as in :class:`Case`)."""
    return getattr(importlib.import_module(f"{__package__}.{module}"), action)


def lookup(key: str) -> Case:
    """The catalogue case named ``key``."""
    area = key.split(":", 1)[0]
    for chosen in area_module(area).catalogue():
        if chosen.key == key:
            return chosen
    raise KeyError(f"no case {key!r} in the catalogue of {area!r}")


def generate(seed: int, count: int, areas: Sequence[str] = tuple(AREAS)) -> list[Case]:
    """``count`` cases spread evenly over ``areas``: in each, a seeded sample of its
    catalogue when fewer are asked for, else the whole catalogue and seeded variants."""
    chosen: list[Case] = []
    for position, area in enumerate(areas):
        wanted = count // len(areas) + (position < count % len(areas))
        rng = random.Random(f"{seed}/{area}")
        module = area_module(area)
        fixed = module.catalogue()
        if wanted <= len(fixed):
            chosen += [fixed[i] for i in sorted(rng.sample(range(len(fixed)), wanted))]
        else:
            chosen += fixed + [module.variant(rng) for _ in range(wanted - len(fixed))]
    return chosen
