"""Random programs against the oracle, on every backend here and under both staging
policies (Hypothesis; the programs come from :mod:`luisa_nb.conformance.strategies`).

Each program runs under a trace and is checked by
:func:`luisa_nb.conformance.verify.verify_run`: buffers, host arrays and what callbacks
saw equal the oracle's (``"as-sent"`` under ``staging="submit"``); the analysis names
exactly the uploads that went stale; every synchronize raises
:class:`~luisa_nb.errors.CommandFailedError` exactly when the oracle says, naming every
failed command and callback; every trace record has the status the oracle predicts.
Anything else raised fails the example, and so does a run that has not finished after
:data:`PROGRAM_TIMEOUT_SECONDS`.

What the runtime promises to threads, and what these tests hold it to: each thread may
drive a stream of its own with no lock, and threads may share a stream when they hold a
lock around each call on it.

``LUISA_NB_HYPOTHESIS_EXAMPLES=N`` runs ``N`` examples per test, drawn at random, instead
of a fixed few (see docs/testing.md). The tests at the end are the smallest programs
that showed a bug found this way, kept so that it stays fixed.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
from collections.abc import Callable, Iterator

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, given, settings

import luisa_nb as lnb
from luisa_nb.analysis import AnalyzedTrace, HazardKind
from luisa_nb.conformance.kernels import trap
from luisa_nb.conformance.program import (
    CALLBACK_ERRORS,
    Callback,
    Concurrent,
    Copy,
    Dispatch,
    Download,
    Fill,
    HostSlice,
    Program,
    Signal,
    Submit,
    Upload,
    Wait,
)
from luisa_nb.conformance.runner import run_program
from luisa_nb.conformance.strategies import programs
from luisa_nb.conformance.verify import failure_report, verify_run
from luisa_nb.errors import BackendNotFoundError, CommandFailedError, RemoteError
from luisa_nb.recording import Status
from luisa_nb.runtime import Device

EXAMPLES_VARIABLE = "LUISA_NB_HYPOTHESIS_EXAMPLES"
EXAMPLES = int(os.environ.get(EXAMPLES_VARIABLE, "0")) or None
PROGRAM_TIMEOUT_SECONDS = 30.0
TEST_TIMEOUT_SECONDS = 120 + 2 * (EXAMPLES or 0)
"""pytest-timeout's limit, behind the per-program one: a hang of the test itself."""
SWITCH_INTERVAL_SECONDS = 1e-5
"""How often threads switch in the thread tests: often, so that submissions interleave."""

BACKENDS = ("cpu", "dx", "metal", "remote")
STAGINGS = ("execute", "submit")
SMALL_HEAPS = {"dx": 64, "metal": 16}
"""Staging capacities (bytes) small enough that most uploads wait for space or are split."""


def _settings(examples: int) -> settings:
    """``examples`` fixed examples, or as many random ones as the variable says."""
    return settings(
        max_examples=EXAMPLES or examples,
        derandomize=EXAMPLES is None,
        database=None,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


def _create_device(name: str, staging: str | None = None, **options: object) -> Device:
    try:
        return lnb.create_device(name, staging=staging, **options)
    except (BackendNotFoundError, RemoteError) as error:
        pytest.skip(f"device {name!r} does not start here: {error}")


@contextlib.contextmanager
def _open(device: Device) -> Iterator[Device]:
    try:
        yield device
    finally:
        with contextlib.suppress(CommandFailedError):
            device.close()


@pytest.fixture(scope="module", params=[f"{b}:{s}" for b in BACKENDS for s in STAGINGS], ids=str)
def backend_device(request: pytest.FixtureRequest) -> Iterator[Device]:
    with _open(_create_device(request.param)) as device:
        yield device


@pytest.fixture
def frequent_thread_switches() -> Iterator[None]:
    previous = sys.getswitchinterval()
    sys.setswitchinterval(SWITCH_INTERVAL_SECONDS)
    try:
        yield
    finally:
        sys.setswitchinterval(previous)


def _check(device: Device, program: Program) -> None:
    run = run_program(device, program, timeout=PROGRAM_TIMEOUT_SECONDS)
    problems = verify_run(run, device.staging)
    if problems:
        pytest.fail(failure_report(device, program, problems), pytrace=False)


# -- properties -----------------------------------------------------------------------


@pytest.mark.timeout(TEST_TIMEOUT_SECONDS)
def test_random_programs_follow_the_oracle(backend_device):
    @_settings(80)
    @given(program=programs())
    def check(program: Program) -> None:
        _check(backend_device, program)

    check()


@pytest.mark.timeout(TEST_TIMEOUT_SECONDS)
def test_threads_submitting_at_once_follow_the_oracle(backend_device, frequent_thread_switches):
    @_settings(25)
    @given(program=programs(only_concurrent=True, max_steps=3))
    def check(program: Program) -> None:
        _check(backend_device, program)

    check()


@pytest.mark.timeout(TEST_TIMEOUT_SECONDS)
@pytest.mark.parametrize(("backend", "capacity"), sorted(SMALL_HEAPS.items()))
def test_random_programs_on_a_small_staging_heap(backend, capacity):
    """Uploads wait for staging memory and larger ones are read in pieces. No ``trap``:
    a submission that waits for space becomes several command lists, and a failure skips
    only the rest of its own list, so what it skips depends on timing."""
    with _open(_create_device(backend, "submit", staging_capacity=capacity)) as device:

        @_settings(50)
        @given(program=programs(traps=False))
        def check(program: Program) -> None:
            _check(device, program)

        check()


# -- every feature on every backend ------------------------------------------------------


def _commands(program: Program) -> Iterator[tuple[Submit, int]]:
    for _, step in program.serial_steps():
        if isinstance(step, Submit):
            for position in range(len(step.commands)):
                yield step, position


def _has_command(program: Program, matches: Callable[[object], bool]) -> bool:
    return any(matches(step.commands[position]) for step, position in _commands(program))


def _size(command: object) -> int:
    if isinstance(command, Dispatch):
        return command.views[0].size
    return command.target.size


def _host_slice(transfer: Upload | Download) -> HostSlice:
    return transfer.source if isinstance(transfer, Upload) else transfer.target


def _slices_overlap(first: HostSlice, second: HostSlice) -> bool:
    return (
        first.array == second.array
        and (first.start, first.stop) != (second.start, second.stop)
        and first.start < second.stop
        and second.start < first.stop
    )


def _overlapping_host_slices(program: Program) -> bool:
    """A download and another transfer in one list on overlapping, unequal host slices."""
    for step, position in _commands(program):
        first = step.commands[position]
        if not isinstance(first, Download):
            continue
        for second in step.commands[position + 1 :]:
            if isinstance(second, (Upload, Download)) and _slices_overlap(
                first.target, _host_slice(second)
            ):
                return True
    return False


def _overlapping_copy(command: object) -> bool:
    if not isinstance(command, Copy) or command.source.buffer != command.target.buffer:
        return False
    source, target = command.source, command.target
    return source != target and source.start < target.stop and target.start < source.stop


def _failure_skips_a_command(program: Program) -> bool:
    for step, position in _commands(program):
        command = step.commands[position]
        if isinstance(command, Dispatch) and command.kernel == "trap" and command.views[0].size:
            return position + 1 < len(step.commands)
    return False


def _event_orders_two_streams(program: Program) -> bool:
    signalled: dict[str, str] = {}
    for _, step in program.serial_steps():
        if isinstance(step, Signal):
            signalled[step.event] = step.stream
        elif isinstance(step, Wait) and signalled.get(step.event, step.stream) != step.stream:
            return True
    return False


def _threads(locked: bool) -> Callable[[Program], bool]:
    def matches(program: Program) -> bool:
        return any(
            isinstance(step, Concurrent)
            and step.locked == locked
            and sum(any(isinstance(s, Submit) and s.commands for s in b) for b in step.branches)
            >= 2
            for step in program.steps
        )

    return matches


def _raising(kind: str) -> Callable[[Program], bool]:
    def matches(program: Program) -> bool:
        return any(
            isinstance(step, Callback) and step.raises == kind for _, step in program.serial_steps()
        )

    return matches


def _zero_byte(kind: type) -> Callable[[Program], bool]:
    return lambda program: _has_command(
        program, lambda command: isinstance(command, kind) and _size(command) == 0
    )


FEATURES: dict[str, Callable[[Program], bool]] = {
    "zero_byte_upload": _zero_byte(Upload),
    "zero_byte_download": _zero_byte(Download),
    "zero_byte_copy": _zero_byte(Copy),
    "zero_byte_fill": _zero_byte(Fill),
    "empty_host_array": lambda program: (
        any(spec.size == 0 for spec in program.hosts) and _zero_byte(Upload)(program)
    ),
    "overlapping_copy": lambda program: _has_command(program, _overlapping_copy),
    "overlapping_host_slices": _overlapping_host_slices,
    "reshaped_host_slice": lambda program: _has_command(
        program,
        lambda command: (
            isinstance(command, (Upload, Download))
            and len((command.source if isinstance(command, Upload) else command.target).shape or ())
            > 1
        ),
    ),
    "vecadd_in_place": lambda program: _has_command(
        program,
        lambda command: (
            isinstance(command, Dispatch)
            and command.kernel == "vecadd"
            and command.views[0] == command.views[1]
        ),
    ),
    **{f"callback_raising_{kind}": _raising(kind) for kind in CALLBACK_ERRORS},
    "failure_skips_a_command": _failure_skips_a_command,
    "event_orders_two_streams": _event_orders_two_streams,
    "threads_on_their_own_streams": _threads(locked=False),
    "threads_sharing_a_locked_stream": _threads(locked=True),
}
"""What the strategies must reach; each test below runs the smallest program with it."""
DRAWN_PROGRAMS = 400
"""How many programs (fixed ones) the feature tests draw to find the smallest with each."""


@functools.cache
def _drawn_programs() -> tuple[Program, ...]:
    drawn: list[Program] = []

    @settings(
        max_examples=DRAWN_PROGRAMS,
        derandomize=True,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(program=programs())
    def collect(program: Program) -> None:
        drawn.append(program)

    collect()
    return tuple(drawn)


def _smallest_program(feature: str) -> Program:
    having = [program for program in _drawn_programs() if FEATURES[feature](program)]
    if not having:
        pytest.fail(
            f"none of {DRAWN_PROGRAMS} programs drawn has {feature}: the strategies "
            f"no longer reach it",
            pytrace=False,
        )
    return min(having, key=lambda program: len(program.listing()))


@pytest.mark.timeout(TEST_TIMEOUT_SECONDS)
@pytest.mark.parametrize("feature", FEATURES)
def test_the_smallest_program_with_each_feature_follows_the_oracle(backend_device, feature):
    _check(backend_device, _smallest_program(feature))


# -- bugs the properties found, now fixed ---------------------------------------------


@pytest.mark.parametrize("backend", ["dx", "metal"])
def test_a_failed_command_lands_the_readbacks_before_it(backend):
    with _open(lnb.create_device(backend)) as device:
        buffer = device.create_buffer(4)
        buffer.copy_from(np.arange(4, dtype=np.float32))
        host = np.zeros(4, np.float32)
        with AnalyzedTrace() as trace:
            device.default_stream.submit(
                [buffer.copy_to_async(host), trap.dispatch_async(4, buffer)]
            )
            with pytest.raises(CommandFailedError, match="dispatch trap"):
                device.synchronize()
        download = trace.commands[0]
        assert download.status is Status.OK
        np.testing.assert_array_equal(host, np.arange(4, dtype=np.float32))


def test_a_zero_byte_command_races_with_nothing():
    with _open(lnb.create_device("cpu")) as device:
        side = device.create_stream("side")
        buffer = device.create_buffer(2)
        with AnalyzedTrace() as trace:
            buffer.fill(1.0)
            buffer.view(1, 1).fill(2.0, stream=side)
            device.synchronize()
        assert [hazard.kind for hazard in trace.hazards] == []


def test_a_skipped_upload_is_not_reported_stale():
    with _open(lnb.create_device("cpu", staging="submit")) as device:
        source, target = device.create_buffer(4), device.create_buffer(4)
        source.fill(7.0)
        host = np.zeros(4, np.float32)
        stream = device.default_stream
        with AnalyzedTrace() as trace:
            stream.submit(
                [
                    source.copy_to_async(host),
                    trap.dispatch_async(1, source),
                    target.copy_from_async(host),
                ]
            )
            with pytest.raises(CommandFailedError, match="1 later command"):
                device.synchronize()
        assert trace.commands[-1].status is Status.SKIPPED
        assert [h.kind for h in trace.hazards if h.kind is HazardKind.STALE_UPLOAD] == []


def test_a_kernel_index_error_comes_back_from_remote():
    with _open(_create_device("remote", "execute")) as device:
        buffer = device.create_buffer(4)
        device.default_stream.submit([trap.dispatch_async(4, buffer)])
        with pytest.raises(CommandFailedError, match="KernelIndexError"):
            device.synchronize()
