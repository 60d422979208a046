"""How faithfully luisa_nb's devices reproduce real LuisaCompute: conformance programs on
real luisa-python's CPU backend and on luisa_nb devices, outcome by outcome.

    LUISA_CLANG_PATH=$(which clang++) python -m luisa_nb.conformance.fidelity [--random 200]

Each program runs ``--runs`` times on each runtime; a run is *correct* when every buffer
and host array ends as the in-order oracle says, else *stale*. A runtime's outcome for a
program is ``correct`` (every run), ``stale`` (every run) or ``racy`` (both). The table
says, per luisa_nb device, on how many programs its outcome agrees with real luisa's and
lists those where it does not.

Real LuisaCompute's CPU backend copies a list's uploads into staging memory on the
submitting thread and runs the list on the stream's native worker thread, which keeps
running while Python builds the next list: an upload that reads what a download of an
*earlier* list writes races with that worker (docs/reproducers.md). A luisa_nb device
runs every program under the race's two extreme schedules: as written, where its worker
(a Python thread, held back by the GIL) has not run the earlier list yet, and
:func:`caught_up`, where it has. Its outcome is ``racy`` when the two differ. Where a
device says ``racy`` and real luisa showed one outcome in ``--runs`` runs, real luisa runs
the program up to ``--racy-runs`` more times, looking for the other.

On luisa-python 0.3.7 a submission is a list of ``lcapi`` commands (uploads, downloads
and copies of buffer views; a fill is an upload of a private array; empty commands are
left out) ended by ``execute()``, and a synchronize is ``stream.synchronize()``.
Dispatches run luisa ``func`` twins of the conformance kernels on views. Programs with
more than one stream, events, the ``trap`` kernel (an out-of-range read, undefined on
real luisa) or a copy within one buffer (LuisaCompute's CPU backend aborts on it) are
left out; callbacks are not run (luisa-python 0.3.7 has none), which changes no buffer
or host array.
"""

from __future__ import annotations

import argparse
import os
import shutil
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from luisa_nb.conformance import programs
from luisa_nb.conformance.generator import random_program
from luisa_nb.conformance.oracle import predict
from luisa_nb.conformance.program import (
    MAIN_STREAM,
    Callback,
    Copy,
    Dispatch,
    Download,
    Fill,
    HostSlice,
    Program,
    Submit,
    Synchronize,
    Upload,
    View,
)
from luisa_nb.conformance.runner import run_program
from luisa_nb.conformance.verify import compare_arrays
from luisa_nb.runtime import create_device

DEVICES = ("cpu:submit", "dx", "metal")
RACY_RUNS = 10_000
NAMED_PROGRAMS: tuple[Callable[[], Program], ...] = (
    programs.seed,
    programs.copy_only,
    programs.copy_only_synchronized,
    programs.copy_only_stream_synchronized,
    programs.copy_only_separate_lists,
    programs.disjoint_slices,
    programs.overlapping_slices,
    programs.reshaped_views,
    programs.fills,
    programs.buffer_copies,
)


def expressible(program: Program) -> bool:
    """Whether luisa-python 0.3.7 can run ``program`` (see the module docstring)."""
    for step in program.steps:
        if isinstance(step, Submit):
            if step.stream != MAIN_STREAM:
                return False
            if any(_undefined_on_real_luisa(command) for command in step.commands):
                return False
        elif isinstance(step, Synchronize):
            if step.stream not in (None, MAIN_STREAM):
                return False
        elif not isinstance(step, Callback):
            return False
    return True


def _undefined_on_real_luisa(command: Any) -> bool:
    """The ``trap`` kernel reads out of range, and LuisaCompute's CPU backend aborts the
    process on a copy within one buffer."""
    if isinstance(command, Dispatch):
        return command.kernel == "trap"
    return isinstance(command, Copy) and command.source.buffer == command.target.buffer


def caught_up(program: Program) -> Program:
    """``program`` with a synchronize of its stream before each list that follows another
    with none between: the schedule in which the worker has finished every list before the
    host submits the next. Stream order, and so the oracle's prediction, is unchanged."""
    steps: list = []
    for step in program.steps:
        if isinstance(step, Submit) and _unsynchronized_list_before(steps):
            steps.append(Synchronize(step.stream))
        steps.append(step)
    return replace(program, steps=tuple(steps))


def _unsynchronized_list_before(steps: Sequence[Any]) -> bool:
    for step in reversed(steps):
        if isinstance(step, Synchronize):
            return False
        if isinstance(step, Submit):
            return True
    return False


def model_outcome(device: Any, program: Program, runs: int) -> str:
    """``device``'s outcome for ``program``: ``runs`` runs under each extreme schedule."""
    results = []
    for schedule in (program, caught_up(program)):
        for _ in range(runs):
            run = run_program(device, schedule, traced=False)
            results.append(matches_oracle(program, run.buffers, run.hosts))
    return outcome(results)


def matches_oracle(program: Program, buffers: dict, hosts: dict) -> bool:
    """Whether every buffer and host array ends as the in-order oracle says, bit for bit."""
    return not compare_arrays(buffers, hosts, predict(program, "execute"), "stream order")


def outcome(correct: Iterable[bool]) -> str:
    seen = set(correct)
    return "racy" if len(seen) == 2 else ("correct" if seen == {True} else "stale")


class RealLuisa:
    """Runs conformance programs on real luisa-python's CPU backend, in this process."""

    def __init__(self) -> None:
        import luisa
        from luisa.dylibs import lcapi

        luisa.init("cpu", support_gui=False)
        self.luisa, self.lcapi = luisa, lcapi
        self.stream = luisa.globalvars.vars.stream
        self.kernels = _luisa_kernels(luisa)

    def run(self, program: Program) -> bool:
        """One run; whether it matched the oracle."""
        if not expressible(program):
            raise ValueError(
                f"program {program.name!r} cannot run on luisa-python 0.3.7 (see "
                f"luisa_nb.conformance.fidelity); check expressible() first"
            )
        buffers = {spec.name: self.luisa.Buffer(spec.size, float) for spec in program.buffers}
        for spec in program.buffers:
            buffers[spec.name].copy_from(spec.initial(program.name), sync=True)
        hosts = {spec.name: spec.initial(program.name) for spec in program.hosts}
        alive: list[np.ndarray] = []
        for step in program.steps:
            if isinstance(step, Submit):
                for command in step.commands:
                    self._add(command, buffers, hosts, alive)
                self.stream.execute()
            elif isinstance(step, Synchronize):
                self.stream.synchronize()
        self.stream.synchronize()
        final = {}
        for name, buffer in buffers.items():
            final[name] = np.empty(buffer.size, np.float32)
            buffer.copy_to(final[name], sync=True)
        return matches_oracle(program, final, hosts)

    def _add(self, command: Any, buffers: dict, hosts: dict, alive: list) -> None:
        """Add ``command`` to the stream's list; an empty one does nothing, so none is
        made (LuisaCompute does not promise to accept zero-byte commands)."""
        lcapi, stream = self.lcapi, self.stream
        views = command.views if isinstance(command, Dispatch) else _views(command)
        if not views[0].size:
            return
        if isinstance(command, Upload):
            source = _host_part(hosts, command.source)
            alive.append(source)
            target = buffers[command.target.buffer]
            offset, size = _range(command.target)
            stream.add(lcapi.BufferUploadCommand.create(target.handle, offset, size, source))
        elif isinstance(command, Download):
            target = _host_part(hosts, command.target)
            source = buffers[command.source.buffer]
            offset, size = _range(command.source)
            stream.add(lcapi.BufferDownloadCommand.create(source.handle, offset, size, target))
        elif isinstance(command, Copy):
            source, target = buffers[command.source.buffer], buffers[command.target.buffer]
            (source_offset, size), (target_offset, _) = (
                _range(command.source),
                _range(command.target),
            )
            stream.add(
                lcapi.BufferCopyCommand.create(
                    source.handle, target.handle, source_offset, target_offset, size
                )
            )
        elif isinstance(command, Fill):
            values = np.full(command.target.size, command.value, np.float32)
            alive.append(values)
            target = buffers[command.target.buffer]
            offset, size = _range(command.target)
            stream.add(lcapi.BufferUploadCommand.create(target.handle, offset, size, values))
        else:
            function = self.kernels[command.kernel]
            arguments = [buffers[view.buffer] for view in command.views]
            starts = [view.start for view in command.views]
            function(*arguments, *starts, dispatch_size=command.views[0].size)


def _views(command: Upload | Download | Copy | Fill) -> tuple[View | HostSlice, ...]:
    if isinstance(command, Upload):
        return (command.target,)
    if isinstance(command, Download):
        return (command.source,)
    if isinstance(command, Copy):
        return (command.source,)
    return (command.target,)


def _range(view: View) -> tuple[int, int]:
    return view.start * 4, view.size * 4


def _host_part(hosts: dict[str, np.ndarray], part: HostSlice) -> np.ndarray:
    return hosts[part.array][part.start : part.stop]


def _luisa_kernels(luisa: Any) -> dict[str, Any]:
    """luisa ``func`` twins of the conformance kernels, on views given by their starts."""

    @luisa.func
    def vecadd(out, a, b, out_start, a_start, b_start):
        i = dispatch_id().x  # noqa: F821 - luisa-python resolves builtins by name
        out.write(out_start + i, a.read(a_start + i) + b.read(b_start + i))

    @luisa.func
    def scale(values, start):
        i = dispatch_id().x  # noqa: F821
        values.write(start + i, values.read(start + i) * 2.0 + 1.0)

    return {"vecadd": vecadd, "scale": scale}


@dataclass
class Row:
    program: str
    outcomes: dict[str, str]
    real_runs: int = 0


def measure(chosen: Sequence[Program], runs: int, racy_runs: int = 0) -> list[Row]:
    """The outcome of every program on real luisa and on each of :data:`DEVICES`; real
    luisa runs up to ``racy_runs`` more times where a device says ``racy`` and it has
    shown one outcome only."""
    real = RealLuisa()
    devices = {name: create_device(name) for name in DEVICES}
    rows = []
    for program in chosen:
        outcomes = {name: model_outcome(device, program, runs) for name, device in devices.items()}
        results = [real.run(program) for _ in range(runs)]
        if "racy" in outcomes.values():
            for _ in range(racy_runs):
                if len(set(results)) == 2:
                    break
                results.append(real.run(program))
        outcomes["luisa-python"] = outcome(results)
        rows.append(Row(program.name, outcomes, len(results)))
    for device in devices.values():
        device.close()
    return rows


def print_report(rows: Sequence[Row], skipped: int, runs: int) -> None:
    print(f"{len(rows)} programs ({skipped} left out: not expressible on luisa-python 0.3.7)")
    print("\n| luisa_nb device | agrees with real luisa-python | programs where it does not |")
    print("|---|---|---|")
    for name in DEVICES:
        differ = [r for r in rows if r.outcomes[name] != r.outcomes["luisa-python"]]
        listed = ", ".join(
            f"{r.program} (real {r.outcomes['luisa-python']}, here {r.outcomes[name]})"
            for r in differ[:8]
        )
        more = f", and {len(differ) - 8} more" if len(differ) > 8 else ""
        print(f"| `{name}` | {len(rows) - len(differ)} of {len(rows)} | {listed or '-'}{more} |")
    totals: dict[str, int] = {}
    for row in rows:
        totals[row.outcomes["luisa-python"]] = totals.get(row.outcomes["luisa-python"], 0) + 1
    print(f"\nreal luisa-python outcomes: {totals}")
    rerun = [row for row in rows if row.real_runs > runs]
    found = sum(row.outcomes["luisa-python"] == "racy" for row in rerun)
    print(
        f"real luisa-python reran {len(rerun)} programs a device calls racy; "
        f"both outcomes seen in {found}"
    )


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--random", type=int, default=200, help="random programs to run")
    parser.add_argument("--runs", type=int, default=5, help="runs of each program")
    parser.add_argument(
        "--racy-runs",
        type=int,
        default=RACY_RUNS,
        help=f"more real runs, at most, of a program a device calls racy (default: {RACY_RUNS}; "
        "real luisa was stale in 3 of 2,000 runs of some, and in none under some loads)",
    )
    arguments = parser.parse_args(argv)
    if "LUISA_CLANG_PATH" not in os.environ and shutil.which("clang++"):
        os.environ["LUISA_CLANG_PATH"] = shutil.which("clang++")
    candidates = [make() for make in NAMED_PROGRAMS]
    candidates += [random_program(index) for index in range(arguments.random)]
    chosen = [program for program in candidates if expressible(program)]
    rows = measure(chosen, arguments.runs, arguments.racy_runs)
    print_report(rows, len(candidates) - len(chosen), arguments.runs)


if __name__ == "__main__":
    main()
