"""When host memory is read and written: the one place that decides it for every backend.

A submission becomes one or more runs (:data:`Run`), each run by the stream's worker as one
unit. What differs between the staging policies is only *when an upload reads its host
bytes*:

- :attr:`StagingPolicy.SUBMIT` reads every upload while ``submit()`` runs, into staging
  memory (what LuisaCompute's CPU, DX, Metal and remote backends do): memory the backend
  gives (``Backend.snapshot_memory``: CUDA's is pinned), which the upload then sends. On
  a backend with a finite staging heap, an upload waits for space, and one larger than
  the whole heap is split into chunks of the heap's size, each read at submit once the
  chunk before it has reached the device.
- :attr:`StagingPolicy.EXECUTE` reads an upload's host bytes when it runs, in stream
  order, after landing every readback still pending in its run.

Downloads write host memory when they run, or, on a backend that reads back after a fence
(``Backend.readback == "fence"``), once their run has finished. Every host read and write
holds :data:`~luisa_nb.runtime.host.HOST_MEMORY` and reports to the recorder inside it,
traced or not, so a traced program touches host memory in the same order as an untraced
one.
"""

from __future__ import annotations

import difflib
import threading
from collections.abc import Callable, Sequence
from enum import Enum
from typing import TYPE_CHECKING, Any

import numpy as np

from luisa_nb.backends.base import DeviceSpan, copy_bytes
from luisa_nb.errors import ConfigurationError
from luisa_nb.recording.clock import now
from luisa_nb.recording.recorder import NULL_RECORDER
from luisa_nb.runtime.callbacks import in_callback
from luisa_nb.runtime.commands import UploadCommand
from luisa_nb.runtime.host import HOST_MEMORY

if TYPE_CHECKING:
    from luisa_nb.backends.base import Backend
    from luisa_nb.recording.recorder import Recorder
    from luisa_nb.runtime.commands import Command, DownloadCommand


class StagingPolicy(str, Enum):
    """When uploads read host memory: at ``submit()`` or when they execute."""

    SUBMIT = "submit"
    EXECUTE = "execute"

    @classmethod
    def parse(cls, value: object) -> StagingPolicy:
        """``value`` as a policy (a policy or its name); raises :class:`ConfigurationError`."""
        if isinstance(value, cls):
            return value
        if isinstance(value, str):
            try:
                return cls(value.strip().lower())
            except ValueError:
                pass
        names = [policy.value for policy in cls]
        close = difflib.get_close_matches(str(value), names, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise ConfigurationError(
            f"staging={value!r} is not a staging policy; use 'submit' or 'execute'.{hint}"
        )

    def __str__(self) -> str:
        return self.value

    def __repr__(self) -> str:
        """``'submit'``: messages show ``staging='submit'``, as the user wrote it."""
        return repr(self.value)


class StagingBlock:
    """``memory`` is bytes ``[start, start + memory.nbytes)`` of a heap; one object per
    reservation, so releasing a block never frees another that starts at the same byte."""

    __slots__ = ("memory", "start")

    def __init__(self, start: int, memory: np.ndarray) -> None:
        self.start = start
        self.memory = memory

    @property
    def end(self) -> int:
        return self.start + self.memory.nbytes


class StagingHeap:
    """``capacity`` bytes of staging memory handed out first-fit, allocated on first use
    and reused after, as an upload heap is. Shared by a device's streams."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._memory: np.ndarray | None = None
        self._taken: list[StagingBlock] = []
        self._condition = threading.Condition()

    @property
    def free(self) -> int:
        with self._condition:
            return self.capacity - sum(block.memory.nbytes for block in self._taken)

    def _take(self, nbytes: int) -> StagingBlock | None:
        if not 0 < nbytes <= self.capacity:
            raise ValueError(f"a staging block holds 1 to {self.capacity} bytes, not {nbytes}")
        taken = self._taken
        start, position = (taken[-1].end if taken else 0), len(taken)
        if self.capacity - start < nbytes:
            start = 0
            for position, block in enumerate(taken):  # noqa: B007
                if block.start - start >= nbytes:
                    break
                start = block.end
            else:
                return None
        if self._memory is None:
            self._memory = np.empty(self.capacity, np.uint8)
        block = StagingBlock(start, self._memory[start : start + nbytes])
        taken.insert(position, block)
        return block

    def try_reserve(self, nbytes: int) -> StagingBlock | None:
        """A block of ``nbytes`` (1 to ``capacity``) if one is free now."""
        with self._condition:
            return self._take(nbytes)

    def reserve(self, nbytes: int) -> StagingBlock:
        """A block of ``nbytes`` (1 to ``capacity``), waiting for earlier work to free one."""
        with self._condition:
            while (block := self._take(nbytes)) is None:
                self._condition.wait()
            return block

    def release(self, blocks: Sequence[StagingBlock]) -> None:
        with self._condition:
            released = {id(block) for block in blocks}
            self._taken = [block for block in self._taken if id(block) not in released]
            self._condition.notify_all()


class UploadChunk:
    """One heap-sized piece of an upload larger than the staging heap; a step of a run in
    place of its upload, read at submit into ``staged``."""

    __slots__ = ("offset", "staged", "upload")

    def __init__(self, upload: UploadCommand, offset: int, staged: np.ndarray) -> None:
        self.upload = upload
        self.offset = offset
        self.staged = staged

    @property
    def id(self) -> int:
        return self.upload.id

    def device_ranges(self) -> Any:
        return self.upload.device_ranges()

    def describe(self) -> str:
        return f"{self.upload.describe()} bytes {self.offset}+{self.staged.nbytes}"

    def run(self, transfers: Transfers) -> DeviceSpan | None:
        allocation, offset = self.upload.memory.allocation, self.upload.memory.offset + self.offset
        mapped = transfers.mapped(allocation, offset, self.staged.nbytes)
        return transfers.to_device(allocation, offset, self.staged, mapped)


Step = Any  # a Command or an UploadChunk: something with id, describe() and run()


Run = tuple[Sequence[Step], Sequence["StagingBlock"], "Recorder"]
"""Steps a worker runs in order as one unit, the staging blocks they hold, and the
recorder of their submission. A plain tuple, the cheapest object to make per submission:
the worker's queue tells runs from its other items (callables) by their type."""


Enqueue = Callable[[Run], None]
"""Hands one run to the worker."""


Snapshot = Callable[[int], np.ndarray]
"""Gives the uint8 memory an upload of that many bytes is read into at submit (without a
staging heap): ``Backend.snapshot_memory``."""


class Staging:
    """The staging policy of one device: plans submissions and reads uploads.
    ``snapshot`` gives the memory of a read at submit when there is no ``heap``."""

    policy: StagingPolicy

    def __init__(self, heap: StagingHeap | None, snapshot: Snapshot) -> None:
        self.heap = heap
        self.snapshot = snapshot

    @staticmethod
    def create(policy: StagingPolicy, heap: StagingHeap | None, snapshot: Snapshot) -> Staging:
        kind = SubmitStaging if policy is StagingPolicy.SUBMIT else ExecuteStaging
        return kind(heap, snapshot)

    def submit(self, commands: Sequence[Command], recorder: Recorder, enqueue: Enqueue) -> None:
        """Turn one submission into runs and hand each to ``enqueue`` in order. Under
        ``submit`` this waits for the worker to free staging memory used by the runs
        handed over before."""
        raise NotImplementedError

    def upload(self, transfers: Transfers, upload: UploadCommand) -> DeviceSpan | None:
        """Run ``upload`` on the worker."""
        raise NotImplementedError

    def release(self, blocks: Sequence[StagingBlock]) -> None:
        """Free the staging blocks a finished run held (only a heap hands them out)."""
        self.heap.release(blocks)


class SubmitStaging(Staging):
    policy = StagingPolicy.SUBMIT

    def submit(self, commands: Sequence[Command], recorder: Recorder, enqueue: Enqueue) -> None:
        for command in commands:
            if type(command) is UploadCommand:
                break
        else:  # nothing to read now
            enqueue((commands, (), recorder))
            return
        heap = self.heap
        steps: list[Step] = []
        blocks: list[StagingBlock] = []
        for command in commands:
            if type(command) is not UploadCommand:
                steps.append(command)
                continue
            nbytes = command.source.nbytes
            if heap is None or nbytes == 0:
                command.staged = _read(command, 0, nbytes, self.snapshot(nbytes), recorder)
                steps.append(command)
                continue
            chunk = min(nbytes, heap.capacity)
            for offset in range(0, nbytes, chunk):
                size = min(chunk, nbytes - offset)
                block = heap.try_reserve(size)
                if block is None and not in_callback():
                    if steps:
                        enqueue((steps, blocks, recorder))
                        steps, blocks = [], []
                    block = heap.reserve(size)
                if block is None:  # a callback holds a worker, so it never waits for the heap
                    memory = self.snapshot(size)
                else:
                    blocks.append(block)
                    memory = block.memory
                staged = _read(command, offset, size, memory, recorder)
                if size == nbytes:
                    command.staged = staged
                    steps.append(command)
                else:
                    steps.append(UploadChunk(command, offset, staged))
        enqueue((steps, blocks, recorder))

    def upload(self, transfers: Transfers, upload: UploadCommand) -> DeviceSpan | None:
        staged, upload.staged = upload.staged, None
        memory = upload.memory
        mapped = transfers.mapped(memory.allocation, memory.offset, staged.nbytes)
        return transfers.to_device(memory.allocation, memory.offset, staged, mapped)


class ExecuteStaging(Staging):
    policy = StagingPolicy.EXECUTE

    def submit(self, commands: Sequence[Command], recorder: Recorder, enqueue: Enqueue) -> None:
        enqueue((commands, (), recorder))

    def upload(self, transfers: Transfers, upload: UploadCommand) -> DeviceSpan | None:
        if transfers.pending:
            transfers.land()
        memory, source = upload.memory, upload.source
        # only a fence backend may map device memory: a local upload, the hot path, calls
        # the backend at once
        mapped = (
            transfers.mapped(memory.allocation, memory.offset, source.nbytes)
            if transfers.fence
            else None
        )
        with HOST_MEMORY:
            if mapped is None:
                span = transfers.backend.upload(memory.allocation, memory.offset, source)
            else:
                span = transfers.to_device(memory.allocation, memory.offset, source, mapped)
            transfers.recorder.host_read(upload.id, 0, source)
        return span


def _read(
    upload: UploadCommand, offset: int, nbytes: int, into: np.ndarray, recorder: Recorder
) -> np.ndarray:
    """Copy host bytes ``[offset, offset + nbytes)`` of ``upload`` into ``into`` now;
    returns ``into``."""
    source = upload.source
    if nbytes != source.nbytes:
        source = source[offset : offset + nbytes]
    with HOST_MEMORY:
        copy_bytes(into, source)
        recorder.host_read(upload.id, offset, into)
    return into


SPARE_READBACK_BYTES = 256 << 20
"""The most readback memory a stream of a fence backend keeps for its next downloads."""


class Transfers:
    """Host transfers on one stream's worker: uploads as the staging policy says,
    downloads now or (fence backends) once their run has finished. ``recorder`` is the
    current run's (the null recorder between runs).

    A fence backend's downloads land in readback memory first. Memory new to the process
    costs more than the copy itself: the OS maps and clears each page as the backend's
    first write touches it (two thirds of a 256 MiB remote download). So the stream
    keeps the readback memory of its largest recent run, up to
    :data:`SPARE_READBACK_BYTES`, and hands it out again."""

    __slots__ = (
        "backend",
        "fence",
        "fresh",
        "pending",
        "recorder",
        "spare",
        "spare_used",
        "staging",
    )

    def __init__(self, backend: Backend, staging: Staging) -> None:
        self.backend = backend
        self.staging = staging
        self.recorder: Recorder = NULL_RECORDER
        self.fence = backend.readback == "fence"
        self.pending: list[DownloadCommand] = []
        self.spare: np.ndarray | None = None
        self.spare_used = 0
        self.fresh: np.ndarray | None = None
        """The largest readback memory made for this run (not the spare's)."""

    def upload(self, upload: UploadCommand) -> DeviceSpan | None:
        return self.staging.upload(self, upload)

    def mapped(self, allocation: Any, offset: int, nbytes: int) -> np.ndarray | None:
        """Device bytes ``[offset, offset + nbytes)`` as memory this process maps, once
        the work before them has finished (a flush); ``None`` where the backend maps none
        (see ``Backend.mapped_bytes``). Called outside the host lock: a flush waits."""
        if not self.fence:
            return None
        mapped = self.backend.mapped_bytes(allocation, offset, nbytes)
        if mapped is not None:
            self.backend.flush()
        return mapped

    def to_device(
        self, allocation: Any, offset: int, data: np.ndarray, mapped: np.ndarray | None
    ) -> DeviceSpan | None:
        """Copy ``data`` (an upload's staged or host bytes) into device memory at
        ``offset``: through the backend, or into ``mapped`` (from :meth:`mapped`) here,
        one copy timed as the upload's span."""
        if mapped is None:
            return self.backend.upload(allocation, offset, data)
        started = now()
        copy_bytes(mapped, data.reshape(-1).view(np.uint8))
        return DeviceSpan(started, now())

    def download(self, download: DownloadCommand) -> DeviceSpan | None:
        memory = download.memory
        if self.fence:
            nbytes = download.target.nbytes
            mapped = self.mapped(memory.allocation, memory.offset, nbytes)
            if mapped is not None:
                return self._download_mapped(download, mapped)
            download.readback = self._readback_memory(nbytes)
            self.pending.append(download)
            return self.backend.download(memory.allocation, memory.offset, download.readback)
        with HOST_MEMORY:
            span = self.backend.download(memory.allocation, memory.offset, download.target)
            self.recorder.host_write(download.id, download.target)
        return span

    def _download_mapped(self, download: DownloadCommand, mapped: np.ndarray) -> DeviceSpan:
        """A download from device memory this process maps, the work before it finished:
        write the readbacks still pending (host writes keep stream order), then copy the
        device bytes into the host array now, one copy, timed as the download's span."""
        if self.pending:
            self._write_readbacks()
        target = download.target
        with HOST_MEMORY:
            started = now()
            copy_bytes(target, mapped)
            span = DeviceSpan(started, now())
            self.recorder.host_write(download.id, target)
        return span

    def land(self) -> None:
        """Finish deferred device work, then write pending readbacks into host memory."""
        if not self.pending:
            return
        self.backend.flush()
        self._write_readbacks()

    def land_before(self, order: Sequence[Step], failed: int) -> None:
        """After ``order[failed]`` failed: write the readbacks of the downloads before it,
        which ran, and drop the others."""
        positions = {id(step): position for position, step in enumerate(order)}
        self.pending[:] = [d for d in self.pending if positions[id(d)] < failed]
        self._write_readbacks()

    def _readback_memory(self, nbytes: int) -> np.ndarray:
        """``nbytes`` of readback memory: the spare's next bytes, else new memory."""
        spare, used = self.spare, self.spare_used
        if spare is not None and used + nbytes <= spare.nbytes:
            self.spare_used = used + nbytes
            return spare[used : used + nbytes]
        memory = self.backend.readback_memory(nbytes)
        if self.fresh is None or self.fresh.nbytes < nbytes:
            self.fresh = memory
        return memory

    def _write_readbacks(self) -> None:
        needed = 0
        for download in self.pending:
            with HOST_MEMORY:
                copy_bytes(download.target, download.readback)
                self.recorder.host_write(download.id, download.target)
            needed += download.readback.nbytes
            download.readback = None
        self.pending.clear()
        self.spare_used = 0
        spare = self.spare
        fresh, self.fresh = self.fresh, None
        if needed <= SPARE_READBACK_BYTES and (spare is None or spare.nbytes < needed):
            if fresh is not None and fresh.nbytes >= needed:
                self.spare = fresh  # its pages are mapped already
            else:
                self.spare = self.backend.readback_memory(needed)  # first touched by the next run
