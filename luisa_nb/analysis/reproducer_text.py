"""A :class:`~luisa_nb.analysis.reproducer.ReproProgram` as a standalone Python program,
for real luisa-python (``api="luisa"``) or for luisa_nb (``api="lnb"``).

The program ends with an ``assert`` that the upload's resource holds the host elements it
read: it fails while the upload goes stale and passes once the program synchronizes after
the download, right before the upload (``fixed=True`` writes that program, the line marked
``# the fix``), which also covers any other download into those elements in between.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod
from pathlib import Path
from typing import Any

from luisa_nb.analysis.hazards import Hazard
from luisa_nb.analysis.reproducer import (
    Fill,
    HostArray,
    Reproduces,
    ReproProgram,
    Resource,
    Step,
    dependency_slice,
    shrink,
)
from luisa_nb.errors import ReproducerError
from luisa_nb.recording import Trace

APIS = ("luisa", "lnb")
_LUISA_TYPES = {"float32": "float", "int32": "int"}


@dataclass(frozen=True)
class Reproducer:
    """A finding's reproducer: ``text`` (the program to paste into a bug report),
    ``fixed_text`` (the same program with the fix), the program as data, and how it was
    found: ``sliced_steps`` steps in the dependency slice, ``candidates_run`` programs run
    while shrinking (0: not shrunk)."""

    program: ReproProgram
    api: str
    text: str
    fixed_text: str
    sliced_steps: int
    candidates_run: int

    @property
    def lines(self) -> int:
        return self.text.count("\n")

    def save(self, path: str | Path) -> Path:
        path = Path(path)
        path.write_text(self.text, encoding="utf-8")
        return path

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: what a view needs to show the reproducer beside its finding."""
        program = self.program
        return {
            "kind": program.kind.value,
            "command_ids": [program.download, program.upload],
            "device": program.device,
            "api": self.api,
            "text": self.text,
            "fixed_text": self.fixed_text,
            "lines": self.lines,
            "sliced_steps": self.sliced_steps,
            "candidates_run": self.candidates_run,
        }

    def _repr_markdown_(self) -> str:
        return f"```python\n{self.text}```"

    def __str__(self) -> str:
        return self.text


def write_reproducer(
    trace: Trace, finding: Hazard, reproduces: Reproduces | None = None, api: str = "luisa"
) -> Reproducer:
    """The reproducer of ``finding``: its dependency slice, shrunk with ``reproduces`` when
    given (which runs each candidate), written for ``api``."""
    if api not in APIS:
        raise ReproducerError(f"api={api!r} is not one of {APIS}; use 'luisa' or 'lnb'")
    sliced = dependency_slice(trace, finding)
    program, runs = shrink(sliced, reproduces) if reproduces is not None else (sliced, 0)
    return Reproducer(
        program,
        api,
        program_text(program, api),
        program_text(program, api, fixed=True),
        len(sliced.steps),
        runs,
    )


def program_text(program: ReproProgram, api: str = "luisa", *, fixed: bool = False) -> str:
    """The program's source; ``fixed`` adds a synchronize right before the upload."""
    if api not in APIS:
        raise ReproducerError(f"api={api!r} is not one of {APIS}; use 'luisa' or 'lnb'")
    writer = _LuisaWriter(program) if api == "luisa" else _LnbWriter(program)
    return writer.text(fixed)


def _number(value: float) -> str:
    return repr(float(value))


def _fill(values: Fill, shape: tuple[int, ...], dtype: str) -> str:
    numpy_type = f"np.{dtype}"
    count = prod(shape)
    reshape = "" if len(shape) == 1 else f".reshape{shape}"
    dims = shape[0] if len(shape) == 1 else shape
    if values.kind == "zeros":
        return f"np.zeros({dims}, {numpy_type})"
    if values.kind == "full":
        return f"np.full({dims}, {_number(values.start)}, {numpy_type})"
    if values.kind == "index":
        return f"np.arange(1, {count + 1}, dtype={numpy_type}){reshape}"
    text = f"np.arange({count}, dtype={numpy_type})"
    if values.step != 1.0:
        text += f" * {_number(values.step)}"
    if values.start != 0.0:
        text += f" + {_number(values.start)}"
    return f"({text}){reshape}" if reshape else text


class _Writer:
    commands: dict[str, str]
    """The line of each kind of step, given its ``resource`` and ``source`` (the values
    of a write, else the host elements)."""

    def __init__(self, program: ReproProgram) -> None:
        self.program = program
        self.resources = {resource.name: resource for resource in program.resources}
        self.hosts = {host.name: host for host in program.hosts}

    def host(self, step: Step) -> str:
        array = self.hosts[step.host]
        if step.start == 0 and step.stop == prod(array.shape):
            return array.name
        return f"{array.name}.reshape(-1)[{step.start}:{step.stop}]"

    def command(self, step: Step) -> str:
        source = self.values(step) if step.kind == "write" else self.host(step)
        return self.commands[step.kind].format(resource=step.resource, source=source)

    def values(self, step: Step) -> str:
        resource = self.resources[step.resource]
        return _fill(step.values, resource.shape, resource.dtype)

    def comment(self, step: Step) -> str:
        program = self.program
        if step.kind == "write":
            made = "setup" if step.command_id is None else f"#{step.command_id} {step.note}"
            return f"  # {made}: what #{program.download} reads"
        if step.command_id == program.upload:
            return f"  # #{step.command_id}: reads {step.host} when its list is submitted"
        return f"  # #{step.command_id}"

    def header(self) -> list[str]:
        program = self.program
        return [
            f'"""{program.kind.value}: #{program.upload} uploads host memory that '
            f"#{program.download} downloads into first.",
            f"Reduced by luisa-nb repro from a trace of {program.trace_commands} commands; "
            'the assert fails while the bug is present."""',
        ]

    def check(self, read: str) -> str:
        upload = self.program.step_of(self.program.upload)
        sent, expected = f"{upload.resource}.numpy().ravel()", f"{self.host(upload)}.ravel()"
        message = f"#{upload.command_id} sent {upload.host}'s bytes from before #{read} wrote them"
        return f'assert np.array_equal({sent}, {expected}), "{message}"'

    def text(self, fixed: bool) -> str:
        raise NotImplementedError


class _LuisaWriter(_Writer):
    commands = {
        "write": "{resource}.copy_from({source})",
        "upload": "{resource}.copy_from({source})",
        "download": "{resource}.copy_to({source}, sync=False)",
    }

    def text(self, fixed: bool) -> str:
        program = self.program
        lines = [*self.header(), "import numpy as np", "", "import luisa", ""]
        lines.append('luisa.init("cpu", support_gui=False)')
        lines += [self.declare(resource) for resource in program.resources]
        lines += [_host_line(host) for host in program.hosts]
        last = len(program.steps) - 1
        for index, step in enumerate(program.steps):
            if step.kind == "end":
                lines.append("luisa.synchronize()" if index == last else "luisa.execute()")
                continue
            if fixed and step.command_id == program.upload:
                lines.append("luisa.synchronize()  # the fix")
            lines.append(self.command(step) + self.comment(step))
        lines.append(self.check(program.download))
        return "\n".join(lines) + "\n"

    def declare(self, resource: Resource) -> str:
        kind = _LUISA_TYPES.get(resource.dtype)
        if kind is None:
            raise ReproducerError(
                f"{resource.name} holds {resource.dtype}, which luisa-python's Buffer does "
                f"not; write the reproducer with api='lnb'"
            )
        if resource.image is not None:
            height, width, channels = resource.image
            return f"{resource.name} = luisa.Image2D({width}, {height}, {channels}, {kind})"
        return f"{resource.name} = luisa.Buffer({resource.count}, {kind})"


class _LnbWriter(_Writer):
    commands = {
        "write": "{resource}.copy_from_async({source})",
        "upload": "{resource}.copy_from_async({source})",
        "download": "{resource}.copy_to_async({source})",
    }

    def text(self, fixed: bool) -> str:
        program = self.program
        lines = [*self.header(), "import numpy as np", "", "import luisa_nb as lnb", ""]
        lines.append(f'device = lnb.create_device("{program.device}")')
        lines.append("stream = device.default_stream")
        lines += [self.declare(resource) for resource in program.resources]
        lines += [_host_line(host) for host in program.hosts]
        lines.append("stream.submit([")
        last = len(program.steps) - 1
        for index, step in enumerate(program.steps):
            if step.kind == "end":
                lines.append("])")
                lines.append("stream.synchronize()" if index == last else "stream.submit([")
                continue
            if fixed and step.command_id == program.upload:
                lines += ["])", "stream.synchronize()  # the fix", "stream.submit(["]
            lines.append(f"    {self.command(step)},{self.comment(step)}")
        lines.append(self.check(program.download))
        return "\n".join(lines) + "\n"

    def declare(self, resource: Resource) -> str:
        if resource.image is not None:
            height, width, channels = resource.image
            return (
                f"{resource.name} = device.create_image({width}, {height}, {channels}, "
                f'name="{resource.name}")'
            )
        return (
            f"{resource.name} = device.create_buffer({resource.count}, np.{resource.dtype}, "
            f'name="{resource.name}")'
        )


def _host_line(host: HostArray) -> str:
    return f"{host.name} = {_fill(host.initial, tuple(host.shape), host.dtype)}"
