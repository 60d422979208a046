"""Observing a program must not change it: traced and untraced runs of the conformance
programs hold the host-memory lock for every host read and write, and touch host memory
in the same order with the same bytes."""

from __future__ import annotations

import threading
from collections import defaultdict

import numpy as np
import pytest
import xxhash

import luisa_nb as lnb
from luisa_nb.conformance.program import Download, Program, Submit, Synchronize, Upload
from luisa_nb.conformance.programs import FIXED_PROGRAMS
from luisa_nb.conformance.runner import run_program
from luisa_nb.recording import recorder as recorder_module
from luisa_nb.recording.recorder import Recorder, TraceRecorder
from luisa_nb.runtime.host import HOST_MEMORY
from luisa_nb.runtime.stream import Stream

HostAccess = tuple[str, str, int, str]


class HostAccessProbe:
    """Wraps the recorder's host hooks (the null recorder's and a trace's alike) to list
    each thread's host accesses, checking that the lock is held at each. Work a waiting
    caller runs itself (``Stream._run_queued``) counts as its stream worker's: which
    thread takes a quick run depends on timing."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.accesses: dict[str, list[HostAccess]] = defaultdict(list)
        self.unlocked: list[HostAccess] = []
        self.running_for = threading.local()
        for recorder_class in (Recorder, TraceRecorder):
            for hook in ("host_read", "host_write"):
                monkeypatch.setattr(recorder_class, hook, self._wrap(recorder_class, hook))
        run_queued = Stream._run_queued

        def run_queued_as_worker(stream):
            self.running_for.stream = stream
            try:
                return run_queued(stream)
            finally:
                self.running_for.stream = None

        monkeypatch.setattr(Stream, "_run_queued", run_queued_as_worker)

    def _thread_name(self) -> str:
        stream = getattr(self.running_for, "stream", None)
        return threading.current_thread().name if stream is None else f"luisa_nb {stream.name}"

    def _wrap(self, recorder_class: type, hook: str):
        original = getattr(recorder_class, hook)

        def probe(recorder, row, *rest):
            data = rest[-1]
            digest = xxhash.xxh3_64_hexdigest(data)
            access = (self._thread_name(), hook, data.nbytes, digest)
            (self.accesses[access[0]] if HOST_MEMORY.locked() else self.unlocked).append(access)
            return original(recorder, row, *rest)

        return probe

    def per_thread(self, with_bytes: bool = True) -> dict[str, list[HostAccess]]:
        """Each thread's accesses; without ``with_bytes``, without the bytes' digests."""
        return {
            name.split(" ", 1)[-1]: [access if with_bytes else access[:3] for access in found]
            for name, found in self.accesses.items()
        }


def stages_during_a_download(program: Program) -> bool:
    """Whether, under ``staging="submit"``, a submission stages a host array that a download
    of a list the host has not synchronized with may be writing at that moment. Which
    bytes such an upload reads depends on timing, traced or not (the race the analysis
    calls racy), so only the shape of the host accesses can be compared."""
    downloading: dict[str, set[str]] = {}
    for step in program.steps:
        if isinstance(step, Synchronize):
            for stream in [step.stream] if step.stream else list(downloading):
                downloading.pop(stream, None)
        elif isinstance(step, Submit):
            written = set().union(*downloading.values())
            if any(
                isinstance(command, Upload) and command.source.array in written
                for command in step.commands
            ):
                return True
            downloading.setdefault(step.stream, set()).update(
                command.target.array for command in step.commands if isinstance(command, Download)
            )
    return False


def _run(monkeypatch, backend: str, staging: str, program, traced: bool):
    probe = HostAccessProbe(monkeypatch)
    device = lnb.create_device(backend, staging=staging)
    run = run_program(device, program, traced=traced)
    assert recorder_module.active_recorder() is recorder_module.NULL_RECORDER
    monkeypatch.undo()
    return probe, run


def test_only_programs_that_stage_during_a_download_are_compared_without_bytes():
    racy = {make.__name__ for make in FIXED_PROGRAMS if stages_during_a_download(make())}
    assert racy == {"copy_only_separate_lists", "two_streams_host_handoff"}


@pytest.mark.parametrize("staging", ["execute", "submit"])
@pytest.mark.parametrize("backend", ["cpu", "dx"])
@pytest.mark.parametrize("make_program", FIXED_PROGRAMS, ids=lambda make: make.__name__)
def test_traced_and_untraced_runs_touch_host_memory_alike(
    monkeypatch, backend, staging, make_program
):
    program = make_program()
    untraced, plain = _run(monkeypatch, backend, staging, program, traced=False)
    traced, recorded = _run(monkeypatch, backend, staging, program, traced=True)
    assert plain.trace is None and recorded.trace is not None
    assert untraced.unlocked == [] and traced.unlocked == []
    with_bytes = staging == "execute" or not stages_during_a_download(program)
    assert untraced.per_thread(with_bytes) == traced.per_thread(with_bytes)
    host_commands = sum(command.host is not None for command in recorded.trace.commands)
    assert sum(map(len, traced.per_thread().values())) > host_commands > 0
    if len(program.streams) == 1:
        for name in plain.hosts:
            np.testing.assert_array_equal(plain.hosts[name], recorded.hosts[name])
