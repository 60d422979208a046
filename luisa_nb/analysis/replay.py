"""Replay: every buffer and host array as it stood right after any command of a trace.

The commands that ran are applied in the order they ran (:func:`run_order`, the one
interleaving a trace of several streams saw) to bytes of host memory standing in for each
buffer: an upload writes the bytes it staged (its capture), a fill its captured value, a
copy moves bytes, a download copies device bytes into its host array and a dispatch runs
its kernel again (a live trace keeps each dispatch's :class:`KernelLaunch`). A buffer made
during the trace starts as zeros, as every luisa_nb backend makes it. So the replay shows
what the device held, stale bytes included, not what the program meant.

What replay cannot know is tracked per byte range with the reason (an upload captured in
part, a kernel a saved trace no longer has, a buffer made before the trace started): the
bytes that depend on it raise :class:`ReplayDataMissingError` naming it and the capture
setting that keeps it. The same :class:`DeviceWrites` model as ``UNINITIALIZED_READ`` says
which command wrote each byte (:meth:`ReplayState.writers`).

Stepping is interactive on long traces: the state is checkpointed every
:data:`CHECKPOINT_EVERY` commands, and a replay starts from the nearest one before it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from luisa_nb.analysis.device_writes import BEFORE_TRACE, DeviceWrites, run_order
from luisa_nb.analysis.intervals import IntervalMap
from luisa_nb.analysis.uninitialized import fresh_buffers
from luisa_nb.errors import RecordNotFoundError, ReplayDataMissingError
from luisa_nb.recording import Access, CommandKind, DeviceRange, HostRange, Trace
from luisa_nb.recording.records import BufferInfo, Capture
from luisa_nb.recording.table import KIND_CODES

CHECKPOINT_EVERY = 256
"""Commands between two checkpoints of a replay's state."""

_UPLOAD, _DOWNLOAD = KIND_CODES[CommandKind.UPLOAD], KIND_CODES[CommandKind.DOWNLOAD]
_COPY, _FILL = KIND_CODES[CommandKind.COPY], KIND_CODES[CommandKind.FILL]
_DISPATCH = KIND_CODES[CommandKind.DISPATCH]
_FULL = "record with lnb.trace(capture='full') to keep every byte"


@dataclass
class _Memory:
    """What a replay holds at one point: each buffer's bytes, the reason for each byte
    range it cannot know, who wrote each byte, and each host array's bytes with the
    command that left them (by address and size)."""

    device: dict[int, np.ndarray]
    unknown: dict[int, IntervalMap[str]]
    writes: DeviceWrites
    host: dict[tuple[int, int], tuple[np.ndarray | None, str | None, HostRange]]
    addresses: dict[int, int] = field(default_factory=dict)
    """Each buffer's address in this process, as a compiled kernel takes it (made once)."""

    def address(self, buffer: int) -> int:
        found = self.addresses.get(buffer)
        if found is None:
            found = self.addresses[buffer] = self.device[buffer].ctypes.data
        return found

    def copy(self) -> _Memory:
        return _Memory(
            {buffer: data.copy() for buffer, data in self.device.items()},
            {buffer: pieces.copy() for buffer, pieces in self.unknown.items()},
            self.writes.copy(),
            dict(self.host),
        )


class ReplayedBuffer:
    """One buffer or image of a :class:`ReplayState`; ``info`` is the trace's
    :class:`BufferInfo` of it."""

    def __init__(self, state: ReplayState, info: BufferInfo, image: bool) -> None:
        self.state = state
        self.info = info
        self._image = image

    def __repr__(self) -> str:
        return f"<ReplayedBuffer {_buffer_name(self.info)} {self.state!r}>"

    def numpy(self) -> np.ndarray:
        """A new read-only array of the contents; raises :class:`ReplayDataMissingError`
        naming what the trace lacks where some bytes are not known."""
        info = self.info
        whole = DeviceRange(info.id, 0, info.nbytes, Access.READ)
        values = self.state._bytes(info, whole).view(np.dtype(info.dtype))
        return values.reshape(info.image) if self._image else values

    def writers(self) -> list[tuple[int, int, int]]:
        """``(start, end, command id)``: which command wrote each byte range last; ranges
        no traced command wrote (before the trace, or never) are left out."""
        whole = DeviceRange(self.info.id, 0, self.info.nbytes, Access.READ)
        writers = self.state._memory.writes.writers(whole)
        return [piece for piece in writers if piece[2] != BEFORE_TRACE]


class ReplayState:
    """Every buffer and host array right after command ``command_id`` (``None``: before the
    first). Read-only: each call returns a new read-only array."""

    def __init__(self, trace: Trace, command_id: int | None, memory: _Memory) -> None:
        self.trace = trace
        self.command_id = command_id
        self._memory = memory

    def __repr__(self) -> str:
        at = "before the first command" if self.command_id is None else f"after #{self.command_id}"
        return f"<ReplayState {at}: {len(self._memory.device)} buffers>"

    def buffer(self, name_or_id: str | int) -> ReplayedBuffer:
        """A buffer (by name or id) as it stood: ``.numpy()`` its elements as the trace
        records them (``BufferInfo.dtype``, flat), ``.writers()`` who wrote them."""
        return ReplayedBuffer(self, self._info(name_or_id), image=False)

    def image(self, name_or_id: str | int) -> ReplayedBuffer:
        """An image as it stood: ``.numpy()`` its texels, ``(height, width, channels)`` (a 3D
        image: depth first)."""
        info = self._info(name_or_id)
        if info.image is None:
            raise RecordNotFoundError(
                f"{_buffer_name(info)} is a buffer, not an image; use state.buffer(...)"
            )
        return ReplayedBuffer(self, info, image=True)

    def writers(self, name_or_id: str | int) -> list[tuple[int, int, int]]:
        """``(start, end, command id)``: which command wrote each byte range of the buffer
        last; ranges no traced command wrote (before the trace, or never) are left out."""
        return self.buffer(name_or_id).writers()

    def host(self, name: str) -> np.ndarray:
        """The host array called ``name`` as stream order leaves it: the bytes the last
        command that touched it read (an upload) or wrote (a download); of an array touched
        in slices, the slice touched last."""
        found = [entry for entry in self._memory.host.values() if entry[2].name == name]
        if not found:
            names = sorted({h.name for h in self.trace.host_ranges() if h.name})
            raise RecordNotFoundError(
                f"no host array {name!r} was touched by then; the trace names {names}"
            )
        data, reason, host = found[-1]
        if data is None:
            raise ReplayDataMissingError(f"host array {name!r}: {reason}")
        return _read_only(data.view(np.dtype(host.dtype)).reshape(host.shape))

    def staged(self, command_id: int) -> np.ndarray:
        """The bytes upload ``#command_id`` sent, as values of its host array."""
        record = self.trace.command(command_id)
        if record.kind is not CommandKind.UPLOAD or record.host is None:
            raise RecordNotFoundError(f"#{command_id} is not an upload from a host array")
        data = _complete_bytes(self.trace, record.data_capture)
        if data is None:
            raise ReplayDataMissingError(
                f"upload #{command_id}: {_partial(record.data_capture, 'staged bytes')}"
            )
        host = record.host
        return _read_only(data.view(np.dtype(host.dtype)).reshape(host.shape))

    def _info(self, name_or_id: str | int) -> BufferInfo:
        buffers = self.trace.buffers
        if isinstance(name_or_id, str):
            found = [info for info in buffers.values() if info.name == name_or_id]
            if len(found) == 1:
                return found[0]
            names = sorted(info.name for info in buffers.values() if info.name)
            what = "several buffers are" if found else "no buffer is"
            raise RecordNotFoundError(
                f"{what} called {name_or_id!r} in this trace; use a buffer id or one of {names}"
            )
        info = buffers.get(name_or_id)
        if info is None:
            raise RecordNotFoundError(f"buffer {name_or_id} is not in this trace")
        return info

    def _bytes(self, info: BufferInfo, device: DeviceRange) -> np.ndarray:
        unknown = self._memory.unknown[info.id].query(device.offset, device.offset + device.nbytes)
        if unknown:
            start, end, reason = unknown[0]
            more = f" (and {len(unknown) - 1} more ranges)" if len(unknown) > 1 else ""
            raise ReplayDataMissingError(
                f"{_buffer_name(info)} bytes [{start}:{end}){more} are not known here: {reason}"
            )
        data = self._memory.device[info.id][device.offset : device.offset + device.nbytes]
        return _read_only(data)


class ReplayEngine:
    """Replays one trace; keeps a checkpoint every ``every`` commands of the run order."""

    def __init__(self, trace: Trace, every: int = CHECKPOINT_EVERY) -> None:
        self.trace = trace
        self.every = every
        table = trace.table
        self._objects = table.objects
        rows = run_order(trace)
        ids = table.numbers["id"][rows].tolist()
        ranges = self._objects["device_ranges"]
        self._steps = [
            (row, command_id, kind, ranges[row])
            for row, command_id, kind in zip(
                rows.tolist(), ids, table.numbers["kind"][rows].tolist(), strict=True
            )
        ]
        """``(row, command id, kind code, device ranges)`` of each command, in run order."""
        self._position = {command_id: index for index, command_id in enumerate(ids)}
        self._checkpoints: list[_Memory] = [self._initial()]

    @property
    def command_ids(self) -> list[int]:
        """The ids of the commands replayed, in the order replay applies them."""
        return [step[1] for step in self._steps]

    def state(self, to: int | None = None) -> ReplayState:
        """The state right after command ``to`` (``None``: after the last)."""
        if to is None:
            return self._replay(len(self._steps), None)
        return self._replay(self._position_of(to) + 1, to)

    def before(self, command_id: int) -> ReplayState:
        """The state right before command ``command_id``: after the command replay applies
        before it, or before the first (its ``command_id`` is then ``None``)."""
        position = self._position_of(command_id)
        previous = self._steps[position - 1][1] if position else None
        return self._replay(position, previous)

    def _position_of(self, command_id: int) -> int:
        position = self._position.get(command_id)
        if position is None:
            record = self.trace.command(command_id)  # raises for an id the trace does not hold
            raise RecordNotFoundError(
                f"#{command_id} did not run (its status is {record.status.value}): "
                "replay to a command that ran"
            )
        return position

    def _replay(self, end: int, to: int | None) -> ReplayState:
        checkpoint = min(end // self.every, len(self._checkpoints) - 1)
        memory = self._checkpoints[checkpoint].copy()
        at = checkpoint * self.every
        while at < end:
            self._apply(memory, at)
            at += 1
            if at % self.every == 0 and at // self.every == len(self._checkpoints):
                self._checkpoints.append(memory.copy())
        return ReplayState(self.trace, to, memory)

    def _initial(self) -> _Memory:
        trace = self.trace
        fresh = fresh_buffers(trace)
        device, unknown = {}, {}
        for info in trace.buffers.values():
            device[info.id] = np.zeros(info.nbytes, np.uint8)
            unknown[info.id] = IntervalMap()
            if info.id in fresh:
                continue
            initial = _complete_bytes(trace, info.initial)
            if initial is not None and initial.nbytes == info.nbytes:
                device[info.id][:] = initial
                continue
            if info.initial is not None:
                why = _partial(info.initial, "bytes at its first use")
            elif info.created is None:
                why = "the trace does not know when it was made or what it held"
            else:
                why = (
                    "the trace could not read its memory at its first use (only the CPU "
                    "backends' memory is read; capture='none' reads none)"
                )
            unknown[info.id].assign(
                0,
                info.nbytes,
                f"{_buffer_name(info)} was made before the trace started and {why}; or start "
                "the trace before making the buffer",
            )
        before = [(info.id, info.nbytes) for info in trace.buffers.values() if info.id not in fresh]
        return _Memory(device, unknown, DeviceWrites(before), {})

    def _apply(self, memory: _Memory, position: int) -> None:
        row, command_id, kind, ranges = self._steps[position]
        if kind == _UPLOAD:
            self._upload(memory, row, command_id, ranges)
        elif kind == _DOWNLOAD:
            self._download(memory, row, ranges[0])
        elif kind == _COPY and len(ranges) == 2:
            self._copy(memory, *ranges)
        elif kind == _FILL:
            self._fill(memory, row, command_id, ranges)
        elif kind == _DISPATCH:
            self._dispatch(memory, row, command_id, ranges)
        memory.writes.apply(command_id, kind, ranges)

    def _upload(self, memory: _Memory, row: int, command_id: int, ranges: tuple) -> None:
        capture, host = self._objects["data_capture"][row], self._objects["host"][row]
        data = _complete_bytes(self.trace, capture)
        target = ranges[0]
        if data is None or data.nbytes != target.nbytes:
            _forget(memory, target, f"upload #{command_id}: {_partial(capture, 'staged bytes')}")
            return
        _write(memory, target, data)
        if host is not None:
            _touch_host(memory, host, data, None)

    def _download(self, memory: _Memory, row: int, source: DeviceRange) -> None:
        host = self._objects["host"][row]
        if host is None:
            return
        unknown = memory.unknown[source.buffer].query(source.offset, source.offset + source.nbytes)
        if unknown:
            _touch_host(memory, host, None, unknown[0][2])
        else:
            data = memory.device[source.buffer][source.offset : source.offset + source.nbytes]
            _touch_host(memory, host, data.copy(), None)

    def _copy(self, memory: _Memory, source: DeviceRange, target: DeviceRange) -> None:
        data = memory.device[source.buffer][source.offset : source.offset + source.nbytes].copy()
        _write(memory, target, data)
        shift = target.offset - source.offset
        for start, end, reason in memory.unknown[source.buffer].query(
            source.offset, source.offset + source.nbytes
        ):
            memory.unknown[target.buffer].assign(start + shift, end + shift, reason)

    def _fill(self, memory: _Memory, row: int, command_id: int, ranges: tuple) -> None:
        capture = self._objects["enqueue_capture"][row]
        element = _complete_bytes(self.trace, capture)
        target = ranges[0]
        if element is None or not element.nbytes or target.nbytes % element.nbytes:
            _forget(memory, target, f"fill #{command_id}: {_partial(capture, 'value')}")
            return
        end = target.offset + target.nbytes
        memory.device[target.buffer][target.offset : end].reshape(-1, element.nbytes)[:] = element
        memory.unknown[target.buffer].clear(target.offset, end)

    def _dispatch(self, memory: _Memory, row: int, command_id: int, ranges: tuple) -> None:
        key = (self._objects["label"][row], ranges)
        written = [r for r in ranges if r.access.writes and r.nbytes]
        launch = self.trace.launches.get(key)
        reason = None
        if key not in self.trace.launches:
            reason = (
                f"dispatch #{command_id} cannot run again: a saved trace keeps no kernels "
                "(replay the live trace, before saving it)"
            )
        elif launch is None:
            reason = (
                f"dispatch #{command_id}: two different kernels share its label and buffers, "
                "so replay cannot tell which ran; give the kernels different names"
            )
        elif launch.executable.mode not in ("c", "python"):
            reason = (
                f"dispatch #{command_id} ran a kernel compiled for {launch.executable.mode}, "
                "which replay on the CPU cannot run"
            )
        else:
            for device in ranges:
                if device.access is Access.WRITE:
                    continue
                end = device.offset + device.nbytes
                unknown = memory.unknown[device.buffer].query(device.offset, end)
                if unknown:
                    reason = f"dispatch #{command_id} read bytes not known: {unknown[0][2]}"
                    break
        if reason is not None:
            for device in written:
                _forget(memory, device, reason)
            return
        if launch.executable.mode == "c":
            address = memory.address
            buffers = [address(buffer) + offset for buffer, offset, _, _ in launch.buffers]
        else:
            buffers = [
                memory.device[buffer][offset : offset + nbytes].view(dtype)
                for buffer, offset, nbytes, dtype in launch.buffers
            ]
        launch.executable.launch(launch.dims, buffers, launch.scalars)
        for device in written:
            memory.unknown[device.buffer].clear(device.offset, device.offset + device.nbytes)


def _touch_host(
    memory: _Memory, host: HostRange, data: np.ndarray | None, reason: str | None
) -> None:
    """Note the bytes a command left in ``host``, as the latest host memory touched (the
    dict's order is the order of the last touch)."""
    key = (host.address, host.nbytes)
    memory.host.pop(key, None)
    memory.host[key] = (data, reason, host)


def _write(memory: _Memory, target: DeviceRange, data: np.ndarray) -> None:
    end = target.offset + target.nbytes
    memory.device[target.buffer][target.offset : end] = data
    memory.unknown[target.buffer].clear(target.offset, end)


def _forget(memory: _Memory, target: DeviceRange, reason: str) -> None:
    memory.unknown[target.buffer].assign(target.offset, target.offset + target.nbytes, reason)


def _complete_bytes(trace: Trace, capture: Capture | None) -> np.ndarray | None:
    if capture is None or not capture.complete:
        return None
    return trace.blobs.get(capture.blob)


def _partial(capture: Capture | None, what: str) -> str:
    if capture is None or capture.blob is None:
        return f"the trace kept none of its {what}; {_FULL}"
    kept = capture.nbytes if capture.complete else None
    return f"the trace kept {kept or 'only the first bytes'} of its {what}; {_FULL}"


def _buffer_name(info: BufferInfo) -> str:
    return repr(info.name) if info.name else f"buffer{info.id}"


def _read_only(data: np.ndarray) -> np.ndarray:
    view = data.copy()
    view.flags.writeable = False
    return view
