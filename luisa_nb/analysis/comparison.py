"""The difference of one program's runs under several configurations: per array and per
configuration after the first, how many elements differ from the first configuration's,
where, and by how much. :func:`luisa_nb.compare` makes the runs; this module only reads
what they produced."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from luisa_nb.analysis.differences import differing_values, largest_errors
from luisa_nb.errors import ConfigurationError, RecordNotFoundError

if TYPE_CHECKING:
    from luisa_nb.analysis import AnalyzedTrace

FIRST_INDICES = 8
"""How many differing indices a difference keeps (and the HTML view shows)."""


@dataclass(frozen=True)
class ArrayDifference:
    """One array of one configuration against the same array of the reference (the first
    configuration).

    ``differing`` counts differing elements (NaN equals NaN); ``first_indices`` holds the
    first :data:`FIRST_INDICES` of them as index tuples. The errors are those of
    :func:`~luisa_nb.analysis.differences.largest_errors` (relative error is inf where
    the reference is 0); both are NaN for dtypes other than bool, integer and float. ``note``
    says why arrays could not be compared element by element (a missing array, another
    shape or dtype); such arrays count as not equal.
    """

    name: str
    config: str
    reference_config: str
    equal: bool
    differing: int
    size: int
    first_indices: tuple[tuple[int, ...], ...]
    max_abs_error: float
    max_relative_error: float
    note: str | None = None

    def __str__(self) -> str:
        head = f"{self.name} [{self.config} vs {self.reference_config}]"
        if self.note:
            return f"{head}: {self.note}"
        if self.equal:
            return f"{head}: equal ({self.size} elements)"
        indices = ", ".join(index_text(i) for i in self.first_indices)
        return (
            f"{head}: {self.differing} of {self.size} elements differ (first at {indices}); "
            f"max abs error {self.max_abs_error:.6g}, max rel error "
            f"{self.max_relative_error:.6g}"
        )


def index_text(index: tuple[int, ...]) -> str:
    """``3`` for a 1-D index, ``(1, 2)`` otherwise."""
    return str(index[0]) if len(index) == 1 else str(index)


def diff_arrays(
    name: str, reference: np.ndarray | None, other: np.ndarray | None, configs: tuple[str, str]
) -> ArrayDifference:
    """The element-by-element difference of ``other`` against ``reference``."""
    reference_config, config = configs
    if reference is None or other is None:
        missing = reference_config if reference is None else config
        return _unequal(name, configs, f"missing under {missing}")
    if reference.shape != other.shape or reference.dtype != other.dtype:
        return _unequal(
            name,
            configs,
            f"{reference.dtype}{list(reference.shape)} under {reference_config}, "
            f"{other.dtype}{list(other.shape)} under {config}",
        )
    flat = differing_values(reference.reshape(-1), other.reshape(-1))
    first = tuple(
        tuple(int(i) for i in np.unravel_index(index, reference.shape))
        for index in flat[:FIRST_INDICES]
    )
    errors = largest_errors(reference, other, flat)
    if errors is not None:
        abs_error, rel_error = errors.absolute, errors.relative
    else:
        abs_error = rel_error = math.nan if flat.size else 0.0
    return ArrayDifference(
        name,
        config,
        reference_config,
        flat.size == 0,
        int(flat.size),
        int(reference.size),
        first,
        abs_error,
        rel_error,
    )


def _unequal(name: str, configs: tuple[str, str], note: str) -> ArrayDifference:
    return ArrayDifference(name, configs[1], configs[0], False, 0, 0, (), math.nan, math.nan, note)


@dataclass
class Run:
    """What one configuration produced: arrays by name, and the trace of the run."""

    config: str
    arrays: dict[str, np.ndarray]
    trace: AnalyzedTrace | None = None
    device: dict[str, object] | None = None


class Comparison:
    """The runs of one program under several configurations, each diffed against the
    first. ``differences`` holds one :class:`ArrayDifference` per array and per
    configuration after the first."""

    def __init__(self, runs: Sequence[Run]) -> None:
        if len(runs) < 2:
            raise ConfigurationError("a comparison needs the runs of two or more configurations")
        self.runs = list(runs)
        reference = self.runs[0]
        self.names = list(dict.fromkeys(name for run in self.runs for name in run.arrays))
        self.differences = [
            diff_arrays(
                name,
                reference.arrays.get(name),
                run.arrays.get(name),
                (reference.config, run.config),
            )
            for run in self.runs[1:]
            for name in self.names
        ]

    @property
    def configs(self) -> list[str]:
        return [run.config for run in self.runs]

    @property
    def equal(self) -> bool:
        """Whether every array is equal under every configuration."""
        return all(difference.equal for difference in self.differences)

    def run(self, config: str) -> Run:
        for run in self.runs:
            if run.config == config:
                return run
        raise RecordNotFoundError(
            f"no configuration {config!r} in this comparison; it has {self.configs}"
        )

    def difference(self, name: str, config: str | None = None) -> ArrayDifference:
        """The difference of array ``name`` under ``config`` against the first configuration
        (``config`` may be left out when two configurations were compared)."""
        if config is None:
            if len(self.runs) != 2:
                raise RecordNotFoundError(
                    f"name the configuration: this comparison has {len(self.runs)} "
                    f"({', '.join(self.configs)})"
                )
            config = self.runs[1].config
        for difference in self.differences:
            if difference.name == name and difference.config == config:
                return difference
        raise RecordNotFoundError(
            f"no array {name!r} under {config!r}; arrays: {', '.join(self.names) or 'none'}"
        )

    def __repr__(self) -> str:
        lines = [f"Comparison of {', '.join(self.configs)} (reference: {self.configs[0]})"]
        for run in self.runs:
            if run.trace is not None:
                kinds = ", ".join(h.kind.value for h in run.trace.hazards) or "none"
                lines.append(f"  hazards under {run.config}: {kinds}")
        lines.extend(f"  {difference}" for difference in self.differences)
        return "\n".join(lines)
