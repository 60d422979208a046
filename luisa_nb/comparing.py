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

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager

import numpy as np

from luisa_nb.analysis import AnalyzedTrace
from luisa_nb.analysis.comparison import Comparison, Run
from luisa_nb.errors import BackendNotFoundError, ConfigurationError, InvalidArgumentError
from luisa_nb.recording import Trace, recorder
from luisa_nb.runtime import (
    BufferView,
    Device,
    DeviceConfig,
    default_device,
    set_default_device,
)

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


class ViewableComparison(Comparison):
    """A :class:`~luisa_nb.analysis.comparison.Comparison` with a Jupyter view: the
    configurations side by side, differing values marked."""

    def _repr_html_(self) -> str:
        from luisa_nb.views.comparison import comparison_html

        return comparison_html(self)


def compare(
    program: Program, configs: Sequence[str | DeviceConfig], *, trace: bool = True
) -> ViewableComparison:
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
    return ViewableComparison(runs)


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
