"""``luisa-nb``: the command line.

``luisa-nb demo`` runs the program of LuisaCompute #143 under a trace and prints the two
rows the issue prints, the hazards found, and where staged and expected bytes differ.
``luisa-nb serve`` serves a local backend to ``create_device("remote://HOST:PORT")``.
``luisa-nb report TRACE -o report.html`` writes the trace viewer of a saved trace as one
self-contained page. ``luisa-nb repro TRACE`` writes the smallest program that shows a
stale upload of a saved trace (docs/reproducers.md). ``luisa-nb run PROGRAM.py`` runs an
unchanged luisa-python program on luisa_nb (``import luisa`` gives ``luisa_nb.luisa``)
under a trace and prints its hazards. ``luisa-nb replay TRACE --to N --dump DIR`` writes
each buffer as it stood right after command #N as ``DIR/NAME.npy``. ``luisa-nb export
TRACE... --parquet FOLDER`` writes saved traces as a Parquet dataset; ``--perfetto PATH``
and ``--chrome PATH`` write one trace for Perfetto's UI.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import traceback
import types
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from luisa_nb.analysis import AnalyzedTrace, HazardKind
from luisa_nb.errors import ConfigurationError, LuisaNbError, RemoteError, user_traceback
from luisa_nb.recording.trace import DEFAULT_CAPTURE_LIMIT, capture_limit
from luisa_nb.remote.options import add_serve_options
from luisa_nb.runtime import DeviceConfig, StagingPolicy
from luisa_nb.seed import expected_rows, run_seed

ROW_ELEMENTS = 16
DIFF_ROWS = 8


def _row(values: np.ndarray) -> str:
    """The first elements, printed as the issue prints them: ``[0.0, 1001.0, ...]``."""
    return "[" + ", ".join(repr(float(v)) for v in values[:ROW_ELEMENTS]) + "]"


def demo(arguments: argparse.Namespace) -> int:
    device = demo_config(arguments).create()
    run = run_seed(device)
    trace = run.trace
    expected = expected_rows(run.x.size)
    print(f"LuisaCompute #143 on {device.name!r}, staging={device.staging!r}")
    print(
        "one command list: upload z <- z_data, dispatch vecadd(z), download z -> z_data, "
        "upload z <- z_data, copy z -> x\n"
    )
    for name, values in (("z_data", run.z_data), ("x", run.x)):
        verdict = "as stream order says" if np.array_equal(values, expected) else "WRONG"
        print(f"{name:>6} = {_row(values)}  ({verdict})")
    print(f"expect = {_row(expected)}\n")

    _print_hazards(trace)
    _save(trace, arguments)
    return 0


def _print_hazards(trace) -> None:
    """The findings, one per place in the program with its count (``trace.hazards`` has
    every occurrence); the staged bytes of each place's first stale upload."""
    findings = trace.findings
    occurrences = sum(group.count for group in findings)
    places = "" if occurrences == len(findings) else f" at {len(findings)} place(s)"
    print(f"hazards: {occurrences}{places}")
    for group in findings:
        print(f"  {group}")
        if group.kind is HazardKind.STALE_UPLOAD:
            _print_difference(trace, trace.upload(group.first.command_ids[-1]))


def _save(trace, arguments: argparse.Namespace) -> None:
    if arguments.trace:
        print(f"\ntrace saved to {trace.save(arguments.trace)}")
    if arguments.chrome:
        trace.to_chrome_trace(arguments.chrome)
        print(f"Chrome/Perfetto trace written to {arguments.chrome}")


def run_program(arguments: argparse.Namespace) -> int:
    """Run a luisa-python program as ``__main__``, with ``luisa`` standing for
    ``luisa_nb.luisa`` on the ``--device`` device (or real luisa-python, instrumented, for
    ``luisa:BACKEND``), under a trace that names buffers and arrays after the program's
    variables. Its exit status is this command's; a program that raises prints its
    traceback, and the hazards found so far are printed either way."""
    from luisa_nb.luisa import session
    from luisa_nb.luisa.alias import as_luisa
    from luisa_nb.recording import recorder
    from luisa_nb.runtime.real_luisa import instrumented, real_luisa_backend

    program = Path(arguments.program)
    if not program.is_file():
        raise LuisaNbError(f"no program at {program}; pass the path of a .py file")
    options = {} if arguments.token is None else {"token": arguments.token}
    try:
        # dont_inherit: this module's ``from __future__ import annotations`` would turn the
        # program's annotations into strings, which luisa-python's type checks refuse
        code = compile(program.read_bytes(), str(program), "exec", dont_inherit=True)
    except SyntaxError:
        traceback.print_exc(limit=0)
        return 1
    main_module = types.ModuleType("__main__")
    main_module.__file__ = str(program)
    saved = sys.argv, list(sys.path), sys.modules["__main__"]
    sys.argv = [str(program), *arguments.arguments]
    sys.path.insert(0, str(program.resolve().parent))
    sys.modules["__main__"] = main_module
    session.close()
    real = real_luisa_backend(arguments.device)
    if real is None:
        session.forced_device = DeviceConfig.parse(arguments.device, **options)
    trace = AnalyzedTrace(capture=arguments.capture, capture_limit=arguments.capture_limit)
    recorder.start(trace)
    status = 0
    try:
        # real luisa-python starts on ``real`` before the program; its init() then keeps it
        with as_luisa() if real is None else instrumented(real):
            exec(code, main_module.__dict__)
    except SystemExit as exit_:
        status = exit_.code if isinstance(exit_.code, int) else int(exit_.code is not None)
    except Exception as error:
        print(user_traceback(error), end="", file=sys.stderr)
        status = 1
    finally:
        try:
            session.close()  # what luisa-python does at exit: submit and synchronize
        finally:
            recorder.stop(trace, main_module.__dict__)
            sys.argv, sys.path[:], sys.modules["__main__"] = saved
            session.forced_device = None
    traced = f"{len(trace.commands)} commands traced on {arguments.device}"
    if status:
        traced += f" before it exited with status {status}"
    print(f"\n{program.name}: {traced}")
    _print_hazards(trace)
    _save(trace, arguments)
    return status


def demo_config(arguments: argparse.Namespace) -> DeviceConfig:
    """The device of ``demo``: ``--backend`` as :meth:`DeviceConfig.parse` reads it, under
    ``--staging``, else the policy ``--backend`` names, else ``submit`` (the bug)."""
    options = {} if arguments.token is None else {"token": arguments.token}
    config = DeviceConfig.parse(arguments.backend, staging=arguments.staging, **options)
    if config.staging is None:
        config = DeviceConfig.parse(config, staging=StagingPolicy.SUBMIT)
    return config


def _print_difference(trace: AnalyzedTrace, check) -> None:
    if check.expected is None or check.staged is None:
        print(f"    (bytes were not captured: {trace.uncaptured_reason()})")
        return
    indices = check.differing_indices
    print(
        f"    upload #{check.command_id} staged {indices.size} element(s) that differ from "
        f"what stream order says; the first {min(DIFF_ROWS, indices.size)}:"
    )
    print(f"    {'index':>7} {'staged':>10} {'expected':>10}")
    for index in indices[:DIFF_ROWS]:
        print(f"    {index:>7} {check.staged[index]:>10} {check.expected[index]:>10}")


def serve(arguments: argparse.Namespace) -> int:
    try:
        import luisa_nb.remote.server  # noqa: F401 (it needs pyzmq)
    except ImportError as error:
        raise RemoteError(f"serve needs pyzmq ({error}); pip install 'luisa_nb[remote]'") from None
    from luisa_nb.remote.options import stop_on_terminate
    from luisa_nb.remote.server import make_server

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    server = make_server(arguments)
    terminated = stop_on_terminate()
    print(f"serving backend {arguments.backend!r} on {server.endpoint}")
    print(f"token: {server.token}")
    print(f"connect: luisa_nb.create_device({server.address!r}, token=...)", flush=True)
    try:
        server.serve(stop=terminated)
    except KeyboardInterrupt:
        pass
    finally:
        server.close()
    print("stopped")
    return 0


def report(arguments: argparse.Namespace) -> int:
    """Every way the trace or the page can fail is a TraceError (a malformed trace a
    TraceFormatError, a path that cannot be read or written a TraceFileError), which
    :func:`main` prints as one error line."""
    from luisa_nb.report import write_report

    trace = AnalyzedTrace.load(arguments.trace)
    path = write_report(trace, arguments.output, title=arguments.title)
    print(f"report written to {path}")
    return 0


def repro(arguments: argparse.Namespace) -> int:
    """Write finding ``--finding``'s reproducer to ``-o`` (else print it); with
    ``--confirm``, run it on real luisa-python and say what the real runtime did: status 1
    when it showed no bug or the fix did not pass."""
    from luisa_nb.analysis.outcomes import finding_outcome
    from luisa_nb.analysis.reproducer import choose_finding
    from luisa_nb.testing.reproducers import confirm, reproducer

    trace = AnalyzedTrace.load(arguments.trace)
    finding = choose_finding(trace.hazards, arguments.finding)
    found = reproducer(trace, finding, api=arguments.api)
    summary = (
        f"{finding.kind.value} #{found.program.upload} <- #{found.program.download}: "
        f"{found.lines} lines, from {found.sliced_steps} steps of the dependency slice "
        f"({found.candidates_run} candidates run on {found.program.device}); in the trace, "
        f"{finding_outcome(trace, finding)}"
    )
    if arguments.output:
        found.save(arguments.output)
        print(f"reproducer written to {arguments.output}: {summary}")
    else:
        print(found.text, end="")
        print(f"# {summary}", file=sys.stderr)
    if not arguments.confirm:
        return 0
    confirmation = confirm(found, runs=arguments.runs)
    print(f"real luisa-python: {confirmation.reason}")
    shown = confirmation.outcome != "correct" and confirmation.fixed_passed
    return 0 if shown else 1


def replay(arguments: argparse.Namespace) -> int:
    """Write each buffer the replay knows; name each one it does not, with why. Exits 1 when
    some buffer could not be written."""
    from luisa_nb.errors import ReplayDataMissingError

    trace = AnalyzedTrace.load(arguments.trace)
    state = trace.replay(to=arguments.to)
    folder = Path(arguments.dump)
    folder.mkdir(parents=True, exist_ok=True)
    infos = sorted(trace.buffers.values(), key=lambda info: info.id)
    names = [info.name for info in infos]
    at = "the end" if arguments.to is None else f"#{arguments.to}"
    print(f"buffers right after {at}:")
    missing = 0
    for info in infos:
        plain = info.name is not None and info.name.isidentifier() and names.count(info.name) == 1
        path = folder / f"{info.name if plain else f'buffer{info.id}'}.npy"
        try:
            values = (
                state.image(info.id).numpy()
                if info.image is not None
                else state.buffer(info.id).numpy()
            )
        except ReplayDataMissingError as error:
            print(f"  not written: {error}")
            missing += 1
            continue
        np.save(path, values, allow_pickle=False)
        print(f"  {path}  {values.dtype} {list(values.shape)}")
    return 1 if missing else 0


def _add_output_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--trace", metavar="PATH", help="save the trace to PATH")
    parser.add_argument("--chrome", metavar="PATH", help="write Chrome/Perfetto JSON to PATH")


def export(arguments: argparse.Namespace) -> int:
    from luisa_nb.analysis.datasets import export_parquet
    from luisa_nb.viewable_trace import load_trace

    if not (arguments.parquet or arguments.perfetto or arguments.chrome):
        raise ConfigurationError(
            "say what to write: --parquet FOLDER, --perfetto PATH or --chrome PATH"
        )
    if (arguments.perfetto or arguments.chrome) and len(arguments.traces) != 1:
        raise ConfigurationError(
            f"--perfetto and --chrome write one trace, got {len(arguments.traces)}; "
            "run export once per trace, or use --parquet for many"
        )
    names = _trace_names([Path(path) for path in arguments.traces])
    traces = {name: load_trace(path) for name, path in zip(names, arguments.traces, strict=True)}
    if arguments.parquet:
        written = export_parquet(traces, arguments.parquet)
        print(f"wrote {len(written)} Parquet files under {arguments.parquet}")
    trace = next(iter(traces.values()))  # the only one, where --perfetto or --chrome is given
    if arguments.perfetto:
        print(f"wrote {trace.save_perfetto(arguments.perfetto)}")
    if arguments.chrome:
        trace.to_chrome_trace(arguments.chrome)
        print(f"wrote {arguments.chrome}")
    return 0


def _trace_names(paths: list[Path]) -> list[str]:
    """Each trace's name in a dataset: its file's stem, or, where stems repeat (the
    pytest plugin saves every test's trace as luisa-trace.lnbtrace in a folder of its
    own), its path from the folder all share, without the suffix, ``/`` made ``-``."""
    stems = [path.stem for path in paths]
    if len(set(stems)) == len(stems):
        return stems
    resolved = [path.resolve() for path in paths]
    common = Path(os.path.commonpath([path.parent for path in resolved]))
    names = ["-".join(path.relative_to(common).with_suffix("").parts) for path in resolved]
    if len(set(names)) != len(names):
        raise ConfigurationError("the same trace is named twice; name each trace once")
    return names


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="luisa-nb", description="Make host-memory staging bugs of GPU runtimes visible."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    demo_parser = commands.add_parser(
        "demo", help="run the program of LuisaCompute #143 and show what went wrong"
    )
    demo_parser.add_argument(
        "--backend",
        default="cpu",
        help="device: a backend name, remote://HOST:PORT, or either with :STAGING, e.g. "
        "cpu:execute (default: cpu)",
    )
    demo_parser.add_argument(
        "--staging",
        choices=list(StagingPolicy),
        help="when uploads read host memory (default: the one --backend names, else submit, "
        "which reproduces the bug)",
    )
    demo_parser.add_argument(
        "--token", help="the token of a remote://HOST:PORT device, as `luisa-nb serve` printed"
    )
    _add_output_options(demo_parser)
    demo_parser.set_defaults(run=demo)
    run_parser = commands.add_parser(
        "run",
        help="run a luisa-python program unchanged on luisa_nb, traced, and show its hazards",
    )
    run_parser.add_argument("program", metavar="PROGRAM", help="the program's .py file")
    run_parser.add_argument(
        "arguments", nargs=argparse.REMAINDER, metavar="ARGS", help="the program's arguments"
    )
    run_parser.add_argument(
        "--device",
        default="cpu:submit",
        help="the device luisa.init() gets, whatever the program asks for (default: "
        "cpu:submit, which stages as real LuisaCompute's CPU backend does); luisa:BACKEND "
        "(e.g. luisa:cpu) runs the program on real luisa-python, instrumented",
    )
    run_parser.add_argument("--token", help="the token of a remote://HOST:PORT device")
    run_parser.add_argument(
        "--capture",
        default="head",
        choices=["none", "head", "full"],
        help="how many bytes of each transfer the trace keeps (default: head)",
    )
    run_parser.add_argument(
        "--capture-limit",
        type=capture_limit,
        default=DEFAULT_CAPTURE_LIMIT,
        metavar="BYTES",
        help="the captured bytes the trace keeps in all, e.g. 4GiB, or none for no limit; "
        "past it, digests only (default: 1GiB)",
    )
    _add_output_options(run_parser)
    run_parser.set_defaults(run=run_program)
    serve_parser = commands.add_parser(
        "serve", help="serve a local backend to remote clients until interrupted"
    )
    add_serve_options(serve_parser).set_defaults(run=serve)
    report_parser = commands.add_parser(
        "report", help="write a self-contained HTML report of a saved trace"
    )
    report_parser.add_argument("trace", metavar="TRACE", help="a trace saved with trace.save()")
    report_parser.add_argument(
        "-o",
        "--output",
        metavar="PATH",
        default="report.html",
        help="the page to write (default: report.html)",
    )
    report_parser.add_argument("--title", help="the page's title")
    report_parser.set_defaults(run=report)
    export_parser = commands.add_parser(
        "export",
        help="export saved traces: a Parquet dataset of many, or one in Perfetto's or "
        "Chrome's format",
    )
    export_parser.add_argument(
        "traces", nargs="+", metavar="TRACE", help="traces saved with trace.save()"
    )
    export_parser.add_argument(
        "--parquet",
        metavar="FOLDER",
        help="write FOLDER/commands/NAME.parquet and FOLDER/findings/NAME.parquet for each "
        "TRACE, NAME being its file's stem, or its path from the folder all share where "
        "stems repeat (needs luisa_nb[data])",
    )
    export_parser.add_argument(
        "--perfetto", metavar="PATH", help="write the one TRACE in Perfetto's protobuf format"
    )
    export_parser.add_argument(
        "--chrome", metavar="PATH", help="write the one TRACE as Chrome Trace Event JSON"
    )
    export_parser.set_defaults(run=export)
    repro_parser = commands.add_parser(
        "repro", help="write the smallest program that shows a stale upload of a saved trace"
    )
    repro_parser.add_argument("trace", metavar="TRACE", help="a trace saved with trace.save()")
    repro_parser.add_argument(
        "--finding",
        type=int,
        metavar="N",
        help="the finding to reproduce, numbered from 1 as trace.hazards lists them "
        "(default: the first stale upload)",
    )
    repro_parser.add_argument(
        "-o", "--output", metavar="PATH", help="write the program to PATH (default: print it)"
    )
    repro_parser.add_argument(
        "--api",
        choices=["luisa", "lnb"],
        default="luisa",
        help="write for real luisa-python (luisa) or for luisa_nb (lnb) (default: luisa)",
    )
    repro_parser.add_argument(
        "--confirm",
        action="store_true",
        help="run the program and its fix on real luisa-python and say what it did",
    )
    repro_parser.add_argument(
        "--runs", type=int, default=5, help="runs of each with --confirm (default: 5)"
    )
    repro_parser.set_defaults(run=repro)
    replay_parser = commands.add_parser(
        "replay", help="write every buffer of a saved trace as it stood after a command"
    )
    replay_parser.add_argument("trace", metavar="TRACE", help="a trace saved with trace.save()")
    replay_parser.add_argument(
        "--to", type=int, metavar="N", help="the command id to stop after (default: the last)"
    )
    replay_parser.add_argument(
        "--dump", metavar="DIR", required=True, help="the folder to write NAME.npy files into"
    )
    replay_parser.set_defaults(run=replay)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    arguments = build_parser().parse_args(argv)
    try:
        return arguments.run(arguments)
    except LuisaNbError as error:
        print(f"luisa-nb: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
