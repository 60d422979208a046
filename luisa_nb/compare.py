"""Run one program under several backends or staging policies and diff what it produced.

``compare(program, ["cpu:execute", "cpu:submit"])`` calls ``program(device)`` once per
configuration, under a trace and with that configuration's device as the default device,
and diffs every array the program returned against the first configuration's::

    def seed(device):
        run = run_seed(device)
        return {"z_data": run.z_data, "x": run.x}

    comparison = lnb.compare(seed, ["cpu:execute", "cpu:submit"])
    comparison.difference("x").differing      # 1024
    comparison.difference("z_data").equal     # True

The ``%%luisa_compare`` magic runs a notebook cell the same way and collects, by name,
every buffer and host array the cell's trace touched (:func:`touched_arrays`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from luisa_nb.analysis import AnalyzedTrace
from luisa_nb.analysis.differences import differing_values, largest_errors
from luisa_nb.errors import (
    BackendNotFoundError,
    ConfigurationError,
    InvalidArgumentError,
    RecordNotFoundError,
)
from luisa_nb.recording import Trace, recorder
from luisa_nb.runtime import (
    BufferView,
    Device,
    DeviceConfig,
    default_device,
    set_default_device,
)

FIRST_INDICES = 8
"""How many differing indices a difference keeps (and the HTML view shows)."""

Program = Callable[[Device], Mapping[str, object]]


def parse_configs(texts: Sequence[str | DeviceConfig] | str) -> list[DeviceConfig]:
    """Every configuration (text such as ``"cpu:submit"``, or a :class:`DeviceConfig`)
    parsed by :meth:`DeviceConfig.parse`; at least two, all different. Text may also be
    one string of configurations separated by spaces."""
    if isinstance(texts, str):
        texts = texts.split()
    configs = [_parse_config(text) for text in texts]
    if len(configs) < 2:
        raise ConfigurationError(
            f"a comparison needs two or more configurations, got {len(configs)}; "
            "e.g. ['cpu:execute', 'cpu:submit']"
        )
    labels = [config.label for config in configs]
    repeated = sorted({label for label in labels if labels.count(label) > 1})
    if repeated:
        raise ConfigurationError(
            f"configuration {repeated[0]!r} appears more than once; list each one once"
        )
    return configs


def _parse_config(value: str | DeviceConfig) -> DeviceConfig:
    """:meth:`DeviceConfig.parse`, with an unknown backend a :class:`ConfigurationError`
    that names the configuration."""
    try:
        return DeviceConfig.parse(value)
    except BackendNotFoundError as error:
        raise ConfigurationError(f"configuration {value!r}: {error}") from None


@contextmanager
def using_device(device: Device | None) -> Iterator[Device]:
    """Make ``device`` the default device inside the block and restore the previous one
    after it (``None`` leaves the default device alone)."""
    previous = default_device()
    if device is None:
        yield previous
        return
    set_default_device(device)
    try:
        yield device
    finally:
        set_default_device(previous)


@contextmanager
def traced(
    trace: AnalyzedTrace | None, namespace: Mapping[str, object], *, rename: bool = False
) -> Iterator[AnalyzedTrace | None]:
    """Record into ``trace`` inside the block; when it ends, name the trace's buffers and
    host arrays after the variables ``namespace`` holds then, if the code that made their
    commands did not name them (with ``rename``, in any case). ``None`` records
    nothing."""
    if trace is None:
        yield None
        return
    recorder.start(trace)
    try:
        yield trace
    finally:
        recorder.stop(trace, namespace, rename=rename)


def touched_arrays(trace: Trace, namespace: Mapping[str, object]) -> dict[str, np.ndarray]:
    """Final values of every named buffer and host array that ``trace`` touched and that
    ``namespace`` still holds: buffers first (in creation order), then host arrays.

    Waits for each buffer's device to finish before reading it."""
    arrays: dict[str, np.ndarray] = {}
    by_id = {
        value.id: value
        for value in namespace.values()
        if isinstance(value, BufferView) and value is value.buffer and not value.destroyed
    }
    for buffer_id in sorted(trace.buffers):
        info = trace.buffers[buffer_id]
        buffer = by_id.get(buffer_id)
        if info.name and buffer is not None and info.name not in arrays:
            buffer.device.synchronize()
            arrays[info.name] = buffer.numpy()
    for command in trace.commands:
        if command.host is None or not command.host.name:
            continue
        name = command.host.name.split("[", 1)[0]
        value = namespace.get(name)
        if name not in arrays and isinstance(value, np.ndarray):
            arrays[name] = value.copy()
    return arrays


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

    def _repr_html_(self) -> str:
        from luisa_nb.compare_html import comparison_html

        return comparison_html(self)


def compare(
    program: Program, configs: Sequence[str | DeviceConfig], *, trace: bool = True
) -> Comparison:
    """Run ``program(device)`` under each configuration (``"backend:staging"``, e.g.
    ``"cpu:execute"``, ``"dx:submit"``, ``"metal:execute"``, or a :class:`DeviceConfig`,
    e.g. ``DeviceConfig.parse("remote://HOST:PORT", token=...)``) and diff every array it
    returns against the first configuration's.

    ``program`` returns a dict of name → numpy array or buffer (buffers are read after the
    run). Each run is traced (``comparison.run(config).trace``, its buffers and host
    arrays named after the dict's keys; ``trace=False`` for a program that records its own
    trace) with the configuration's device as the default device, so
    ``lnb.default_device()`` inside ``program`` is that device too.
    """
    runs = []
    for config in parse_configs(configs):
        device = config.create()
        returned: dict[str, object] = {}
        recorded = AnalyzedTrace() if trace else None
        with using_device(device), traced(recorded, returned, rename=True):
            result = program(device)
            if not isinstance(result, Mapping):
                raise InvalidArgumentError(
                    f"compare: the program returned {type(result).__name__}; return a dict "
                    "of name -> numpy array or buffer"
                )
            returned.update(result)
            device.synchronize()
        runs.append(Run(config.label, _read_arrays(returned), recorded, device.info))
    return Comparison(runs)


def _read_arrays(values: Mapping[str, object]) -> dict[str, np.ndarray]:
    arrays = {}
    for name, value in values.items():
        if isinstance(value, BufferView):
            arrays[name] = value.numpy()
        elif isinstance(value, np.ndarray):
            arrays[name] = value.copy()
        else:
            raise InvalidArgumentError(
                f"compare: {name!r} is a {type(value).__name__}; the program's dict holds "
                "numpy arrays and buffers only"
            )
    return arrays


# -- HTML: one table, arrays down, configurations across, differing values marked ------
