"""A stale-upload finding as the smallest program that still goes wrong.

From a trace and one ``STALE_UPLOAD`` or ``LATENT_STALE_UPLOAD`` finding (a download
``#d`` then an upload ``#u`` of overlapping host memory, no host synchronize between):

1. :func:`dependency_slice` keeps the commands ``#u`` depends on, on its stream since the
   last host synchronize before ``#d``: commands that write the device ranges the kept
   downloads read, downloads into the host bytes the kept uploads read, and the lists
   they were submitted in. A dispatch or copy becomes a *write* of fixed values (the
   program cannot carry the trace's kernels, and only what they wrote matters here).
2. :func:`shrink` removes steps and list boundaries, delta-debugging style, while the
   caller's ``reproduces`` says the candidate still fails and passes once fixed. The
   analysis runs nothing: the caller runs candidates (:mod:`luisa_nb.testing.reproducers`).
3. :mod:`luisa_nb.analysis.reproducer_text` writes the program for luisa-python or luisa_nb.

Values come from the trace's captured bytes when they are whole and follow a pattern a
line can write (zeros, a constant, an arithmetic sequence), else from a deterministic fill.
Each device range becomes its own buffer or image, as large as the range.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from math import prod

import numpy as np

from luisa_nb.analysis.hazards import Hazard, HazardKind
from luisa_nb.errors import ReproducerError
from luisa_nb.recording import CommandKind, CommandRecord, SyncKind, Trace
from luisa_nb.recording.records import Capture

REPRODUCIBLE = (HazardKind.STALE_UPLOAD, HazardKind.LATENT_STALE_UPLOAD)


@dataclass(frozen=True)
class Fill:
    """The values of an array, as one line of numpy writes them: ``zeros``, ``full``
    (``start``), ``arange`` (``start + step * i``) or ``index`` (``1, 2, 3, ...``)."""

    kind: str
    start: float = 0.0
    step: float = 1.0

    def values(self, shape: tuple[int, ...], dtype: str) -> np.ndarray:
        count = prod(shape)
        if self.kind == "zeros":
            return np.zeros(shape, dtype)
        if self.kind == "full":
            return np.full(shape, self.start, dtype)
        if self.kind == "index":
            return (np.arange(count, dtype=dtype) + np.array(1, dtype)).reshape(shape)
        values = np.arange(count, dtype=dtype) * np.array(self.step, dtype)
        return (values + np.array(self.start, dtype)).reshape(shape)


@dataclass(frozen=True)
class Resource:
    """A buffer (``image`` None) or an image of ``image = (height, width, channels)``,
    standing for bytes ``[offset, offset + nbytes)`` of trace buffer ``buffer``."""

    name: str
    dtype: str
    count: int
    image: tuple[int, int, int] | None
    buffer: int
    offset: int
    nbytes: int

    @property
    def shape(self) -> tuple[int, ...]:
        return self.image if self.image is not None else (self.count,)


@dataclass(frozen=True)
class HostArray:
    """A host array of ``shape`` and ``dtype`` whose first contents are ``initial``."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    initial: Fill
    address: int


@dataclass(frozen=True)
class Step:
    """One command of the program: ``write`` (a private array of ``values`` uploaded into
    ``resource``, for a dispatch, copy or fill of the trace), ``upload`` or ``download``
    (``resource`` from or into elements ``[start, stop)`` of ``host``), or ``end`` (the end
    of a command list). ``command_id`` is the trace command it stands for."""

    kind: str
    command_id: int | None = None
    resource: str | None = None
    host: str | None = None
    start: int = 0
    stop: int = 0
    values: Fill | None = None
    note: str = ""
    pinned: bool = False


@dataclass(frozen=True)
class ReproProgram:
    """A reproducer as data: resources, host arrays and steps in issue order, lists ended by
    ``end`` steps. It checks that ``upload``'s resource ends equal to the host elements it
    read; the fix synchronizes right before ``upload``."""

    kind: HazardKind
    download: int
    upload: int
    device: str
    resources: tuple[Resource, ...]
    hosts: tuple[HostArray, ...]
    steps: tuple[Step, ...]
    trace_commands: int

    def step_of(self, command_id: int) -> Step:
        return next(step for step in self.steps if step.command_id == command_id)

    def without(self, positions: set[int]) -> ReproProgram:
        """The program with the steps at ``positions`` left out, and the resources and
        host arrays no step names any more."""
        steps = tuple(step for index, step in enumerate(self.steps) if index not in positions)
        while steps and steps[0].kind == "end":
            steps = steps[1:]
        if not steps or steps[-1].kind != "end":
            steps += (Step("end"),)
        used = {step.resource for step in steps} | {self.step_of(self.upload).resource}
        hosts = {step.host for step in steps}
        return replace(
            self,
            steps=steps,
            resources=tuple(r for r in self.resources if r.name in used),
            hosts=tuple(h for h in self.hosts if h.name in hosts),
        )

    def well_defined(self) -> bool:
        """Whether every download reads a resource that a step before it wrote (a new
        buffer's contents differ between runtimes)."""
        written: set[str | None] = set()
        for step in self.steps:
            if step.kind == "download" and step.resource not in written:
                return False
            if step.kind in ("write", "upload"):
                written.add(step.resource)
        return True

    def list_ends(self) -> list[int]:
        """Positions of the ``end`` steps, the last one last."""
        return [index for index, step in enumerate(self.steps) if step.kind == "end"]

    def removable(self) -> list[int]:
        """Positions of the steps shrinking may leave out (the last list's end stays)."""
        last = len(self.steps) - 1
        return [i for i, step in enumerate(self.steps) if not step.pinned and i != last]


Reproduces = Callable[[ReproProgram], bool]
"""Runs a candidate: whether it fails as the finding says and passes with the fix."""


def choose_finding(hazards: Sequence[Hazard], number: int | None = None) -> Hazard:
    """Finding ``number`` (1-based, in the order ``trace.hazards`` lists them), or the
    first stale upload (else the first latent one) when ``number`` is None."""
    if number is not None:
        if not 1 <= number <= len(hazards):
            raise ReproducerError(
                f"finding {number} does not exist: the trace has {len(hazards)} "
                f"finding(s), numbered from 1"
            )
        return hazards[number - 1]
    for kind in REPRODUCIBLE:
        for hazard in hazards:
            if hazard.kind is kind:
                return hazard
    raise ReproducerError(
        f"the trace has no stale-upload finding to reproduce ({len(hazards)} finding(s) "
        "of other kinds)"
    )


def dependency_slice(trace: Trace, finding: Hazard) -> ReproProgram:
    """The program of the commands ``finding``'s upload depends on (see the module
    docstring); raises :class:`ReproducerError` for findings it cannot reproduce."""
    if finding.kind not in REPRODUCIBLE:
        kinds = ", ".join(kind.value for kind in REPRODUCIBLE)
        raise ReproducerError(
            f"a reproducer is written for {kinds} findings, not {finding.kind.value}; "
            "pick one of those (luisa-nb repro --finding N)"
        )
    download, upload = (trace.command(command_id) for command_id in finding.command_ids)
    if download.stream != upload.stream:
        raise ReproducerError(
            f"#{download.id} and #{upload.id} ran on different streams; the reproducer "
            "writes programs of one stream only"
        )
    window = _window(trace, download, upload)
    kept = _related(window, download, upload)
    return _Builder(trace, download, upload).program(kept)


def shrink(program: ReproProgram, reproduces: Reproduces) -> tuple[ReproProgram, int]:
    """The smallest program found by removing steps (delta debugging, Zeller's ddmin over
    :meth:`ReproProgram.removable`) for which ``reproduces`` holds, and the number of
    candidates run. Candidates where a download reads a resource nothing wrote are not
    run. ``program`` itself must reproduce."""
    runs = 1
    if not reproduces(program):
        # lists merged into one: uploads are staged before any download of it runs
        runs += 1
        program = program.without(set(program.list_ends()[:-1]))
    if runs > 1 and not reproduces(program):
        raise ReproducerError(
            f"the program sliced from the trace does not reproduce #{program.upload} "
            f"<- #{program.download} on {program.device}, even with its lists merged; the "
            "upload's bytes may depend on what the trace does not hold (another stream, a "
            "callback writing host memory): write the program by hand from the finding"
        )
    bare = program.without(set(program.removable()))
    if bare.well_defined():
        runs += 1
        if reproduces(bare):
            return bare, runs
    chunks = 2
    while True:
        removable = program.removable()
        if not removable:
            return program, runs
        chunks = min(chunks, len(removable))
        size = -(-len(removable) // chunks)
        parts = [removable[i : i + size] for i in range(0, len(removable), size)]
        for part in parts:
            candidate = program.without(set(part))
            if not candidate.well_defined():
                continue
            runs += 1
            if reproduces(candidate):
                program = candidate
                chunks = max(chunks - 1, 2)
                break
        else:
            if chunks >= len(removable):
                return program, runs
            chunks = min(len(removable), chunks * 2)


def _window(trace: Trace, download: CommandRecord, upload: CommandRecord) -> list[CommandRecord]:
    """Commands of the upload's stream after the last host synchronize before the
    download, up to the upload, in issue order."""
    start = -1
    for sync in trace.syncs:
        if sync.seq >= download.seq:
            break
        if sync.kind is SyncKind.SYNCHRONIZE and sync.stream in (None, upload.stream):
            start = sync.seq
    return [
        command
        for command in trace.commands
        if command.stream == upload.stream and start < command.seq <= upload.seq
    ]


def _host_span(command: CommandRecord) -> tuple[int, int] | None:
    host = command.host
    return None if host is None else (host.address, host.address + host.nbytes)


def _meets(span: tuple[int, int], spans: Sequence[tuple[int, int]]) -> bool:
    return any(span[0] < end and start < span[1] for start, end in spans)


def _writes_any(command: CommandRecord, ranges: set[tuple[int, int, int]]) -> bool:
    return any(
        (touched.buffer, touched.offset, touched.nbytes) in ranges
        for touched in command.device_ranges
        if touched.access.writes
    )


def _related(
    window: list[CommandRecord], download: CommandRecord, upload: CommandRecord
) -> list[CommandRecord]:
    """The window's commands the upload depends on, walking back from it."""
    ranges = {_key(download), _key(upload)}
    hosts = [span for span in (_host_span(download), _host_span(upload)) if span]
    kept = []
    for command in reversed(window):
        span = _host_span(command)
        if command.id in (download.id, upload.id):
            wanted = True
        elif command.kind is CommandKind.DOWNLOAD:
            wanted = span is not None and _meets(span, hosts)
        else:
            wanted = _writes_any(command, ranges)
        if not wanted or command.status.value in ("failed", "skipped"):
            continue
        kept.append(command)
        if command.kind is CommandKind.DOWNLOAD:
            ranges.add(_key(command))
        elif command.kind is CommandKind.UPLOAD and span is not None:
            hosts.append(span)
    return kept[::-1]


def _key(command: CommandRecord) -> tuple[int, int, int]:
    touched = command.device_ranges[0]
    return touched.buffer, touched.offset, touched.nbytes


class _Builder:
    def __init__(self, trace: Trace, download: CommandRecord, upload: CommandRecord) -> None:
        self.trace = trace
        self.download = download
        self.upload = upload
        self.resources: dict[tuple[int, int, int], Resource] = {}
        self.names: set[str] = set()
        self.private: set[int] = set()

    def program(self, kept: list[CommandRecord]) -> ReproProgram:
        downloads = [_host_span(c) for c in kept if c.kind is CommandKind.DOWNLOAD and c.host]
        self.private = {
            command.id
            for command in kept
            if command.kind is CommandKind.UPLOAD
            and command.id != self.upload.id
            and not (command.host and _meets(_host_span(command), downloads))
        }
        hosts = self._hosts([command for command in kept if command.id not in self.private])
        host_fill = hosts[self._host_of(hosts, self.upload)[0]].initial
        written = self._written_values(host_fill)
        source = self._resource(_key(self.download))
        steps = [Step("write", resource=source.name, values=written, note="setup", pinned=True)]
        for command in kept:
            key = _key(command)
            if command.kind is CommandKind.DOWNLOAD and key != _key(self.download):
                other = self._resource(key)
                if all(step.resource != other.name for step in steps):
                    steps.append(
                        Step("write", resource=other.name, values=Fill("index"), note="setup")
                    )
        submission = None
        for command in kept:
            if submission is not None and command.submission != submission:
                steps.append(Step("end", command_id=None))
            submission = command.submission
            steps.extend(self._steps(command, hosts, written))
        steps.append(Step("end"))
        backend = self.trace.streams[self.upload.stream].backend
        name = f"{'cpu' if backend == 'luisa' else backend}:submit"
        return ReproProgram(
            self.trace_kind(),
            self.download.id,
            self.upload.id,
            name,
            tuple(self.resources.values()),
            tuple(hosts.values()),
            tuple(steps),
            len(self.trace.commands),
        )

    def trace_kind(self) -> HazardKind:
        read, wrote = self.upload.host_read, self.download.host_write
        stale = read is not None and wrote is not None and read < wrote
        return HazardKind.STALE_UPLOAD if stale else HazardKind.LATENT_STALE_UPLOAD

    def _steps(
        self, command: CommandRecord, hosts: dict[str, HostArray], written: Fill
    ) -> list[Step]:
        pinned = command.id in (self.download.id, self.upload.id)
        transfer = command.kind in (CommandKind.UPLOAD, CommandKind.DOWNLOAD)
        if transfer and command.host and command.id not in self.private:
            host, start, stop = self._host_of(hosts, command)
            resource = self._resource(_key(command))
            kind = command.kind.value
            return [Step(kind, command.id, resource.name, host, start, stop, pinned=pinned)]
        steps = []
        for touched in command.device_ranges:
            if not touched.access.writes:
                continue
            key = (touched.buffer, touched.offset, touched.nbytes)
            values = written if key == _key(self.download) else Fill("index")
            if command.id in self.private and command.host is not None:
                host = command.host
                own = _pattern(self.trace, command.data_capture, host.nbytes, host.dtype)
                values = own if own is not None and key != _key(self.download) else values
            resource = self._resource(key)
            note = command.label or command.kind.value
            steps.append(Step("write", command.id, resource.name, values=values, note=note))
        return steps

    def _hosts(self, kept: list[CommandRecord]) -> dict[str, HostArray]:
        """Host arrays: the kept commands' host ranges, overlapping ones merged into one."""
        spans: list[tuple[int, int, list[CommandRecord]]] = []
        for command in sorted((c for c in kept if c.host), key=lambda c: c.host.address):
            start, end = _host_span(command)
            if spans and start < spans[-1][1]:
                first, last, commands = spans[-1]
                spans[-1] = (first, max(last, end), [*commands, command])
            else:
                spans.append((start, end, [command]))
        hosts = {}
        for start, end, commands in spans:
            first = commands[0].host
            itemsize = np.dtype(first.dtype).itemsize
            exact = [c.host for c in commands if c.host.address == start and c.host.end == end]
            shape = exact[0].shape if exact else ((end - start) // itemsize,)
            name = self._name((first.name or "host").split("[")[0])
            initial = self._host_initial(commands, start, end)
            hosts[name] = HostArray(name, np.dtype(first.dtype).name, tuple(shape), initial, start)
        return hosts

    def _host_initial(self, commands: list[CommandRecord], start: int, end: int) -> Fill:
        """What the host array held before the kept downloads: the bytes the finding's
        upload read, when it read the whole array and they follow a pattern."""
        upload = self.upload
        if upload in commands and upload.host.address == start and upload.host.end == end:
            found = _pattern(self.trace, upload.data_capture, upload.host.nbytes, upload.host.dtype)
            if found is not None:
                return found
        return Fill("zeros")

    def _written_values(self, host_fill: Fill) -> Fill:
        """What the download brings: its captured bytes when a line can write them and they
        differ from the host's first contents, else a fill that differs."""
        download = self.download
        host = download.host
        found = _pattern(self.trace, download.data_capture, host.nbytes, host.dtype)
        if found is not None and found != host_fill:
            return found
        return Fill("index") if host_fill.kind != "index" else Fill("full", -1.0)

    def _host_of(self, hosts: dict[str, HostArray], command: CommandRecord) -> tuple[str, int, int]:
        host = command.host
        itemsize = np.dtype(host.dtype).itemsize
        for name, array in hosts.items():
            end = array.address + prod(array.shape) * np.dtype(array.dtype).itemsize
            if array.address <= host.address and host.end <= end:
                start = (host.address - array.address) // itemsize
                return name, start, start + host.nbytes // itemsize
        raise ReproducerError(f"#{command.id}: its host range is in no host array")

    def _resource(self, key: tuple[int, int, int]) -> Resource:
        found = self.resources.get(key)
        if found is not None:
            return found
        buffer, offset, nbytes = key
        info = self.trace.buffers.get(buffer)
        dtype = np.dtype(info.dtype if info is not None else "float32")
        whole = info is not None and offset == 0 and nbytes == info.nbytes
        image = tuple(info.image) if whole and info.image and len(info.image) == 3 else None
        name = self._name((info.name if info is not None else None) or f"buffer{buffer}")
        resource = Resource(
            name, dtype.name, nbytes // dtype.itemsize, image, buffer, offset, nbytes
        )
        self.resources[key] = resource
        return resource

    def _name(self, wanted: str) -> str:
        base = "".join(c if c.isalnum() or c == "_" else "_" for c in wanted) or "array"
        if base[0].isdigit() or base in ("np", "luisa", "lnb", "device", "stream"):
            base = f"a_{base}"
        name, number = base, 1
        while name in self.names:
            number += 1
            name = f"{base}_{number}"
        self.names.add(name)
        return name


def _pattern(trace: Trace, capture: Capture | None, nbytes: int, dtype: str) -> Fill | None:
    """The fill that writes the captured bytes exactly, if the capture is whole and one of
    zeros, a constant or an arithmetic sequence."""
    if capture is None or capture.nbytes != nbytes:
        return None
    raw = trace.captured_bytes(capture)
    if raw is None or raw.nbytes != nbytes or nbytes == 0:
        return None
    values = np.frombuffer(raw.tobytes(), np.dtype(dtype))
    if not np.issubdtype(values.dtype, np.number) or not np.all(np.isfinite(values)):
        return None
    first = values[0].item()
    candidates = [Fill("zeros"), Fill("full", first)]
    if len(values) > 1:
        candidates.append(Fill("arange", first, (values[1] - values[0]).item()))
    shape = (len(values),)
    for fill in candidates:
        if np.array_equal(fill.values(shape, values.dtype.name), values):
            return fill
    return None
