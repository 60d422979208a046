"""The magics of ``%load_ext luisa_nb``. They are glue: tracing, devices and comparisons
live in the library (``lnb.trace``, ``lnb.create_device``, :mod:`luisa_nb.comparing`),
where plain Python reaches them too.

A cell runs through the shell (``shell.run_cell``) inside the trace, so the user's own
exceptions and the value of the cell's last expression look as they always do, and the
trace always closes. A cell that raises fails as itself: its error is the magic cell's.
A bad option is a one-line ``UsageError``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from IPython.display import display

from luisa_nb.analysis import AnalyzedTrace, find_hazards, group_findings
from luisa_nb.analysis.comparison import Comparison, Run
from luisa_nb.backends import backend_names
from luisa_nb.comparing import (
    ViewableComparison,
    parse_configs,
    touched_arrays,
    traced,
    using_device,
)
from luisa_nb.errors import LuisaNbError
from luisa_nb.ipython.display import HazardTable, show_comparison, show_trace
from luisa_nb.ipython.state import STATE, ExtensionState, InstalledHooks, last_trace
from luisa_nb.recording import Trace, recorder
from luisa_nb.recording.trace import CAPTURE_POLICIES, DEFAULT_CAPTURE_LIMIT, capture_limit
from luisa_nb.runtime import Device, DeviceConfig, StagingPolicy, default_device
from luisa_nb.runtime import set_default_device as _set_default_device
from luisa_nb.runtime.real_luisa import instrumented, real_luisa_backend, start_real_luisa

_BACKENDS = ", ".join(backend_names())
_TOKEN_HELP = (
    "the token of a remote://HOST:PORT device (the one `luisa-nb serve` printed); default: none"
)


@magics_class
class LuisaMagics(Magics):
    """``%%luisa_trace``, ``%luisa_device``, ``%%luisa_compare`` and ``%luisa_hazards``."""

    def __init__(self, shell: Any, state: ExtensionState) -> None:
        super().__init__(shell)
        self.state = state

    # -- %%luisa_trace -------------------------------------------------------------------

    @magic_arguments()
    @argument(
        "--backend",
        metavar="NAME",
        help=f"run the cell on a new device of this backend ({_BACKENDS}, remote://HOST:PORT "
        "or NAME:STAGING, e.g. cpu:submit), or on real luisa-python instrumented "
        "(luisa:cpu, luisa:cuda); default: the session's default device, lnb.default_device()",
    )
    @argument(
        "--staging",
        choices=list(StagingPolicy),
        help="when uploads read host memory: at submit() (what LuisaCompute's CPU, DX, Metal "
        "and remote backends do) or when they execute, in stream order; default: the "
        "backend's",
    )
    @argument("--token", help=_TOKEN_HELP)
    @argument(
        "--capture",
        choices=CAPTURE_POLICIES,
        default="head",
        help="host bytes kept in the trace: none (digests only), head (the first 64 KiB of "
        "each transfer) or full; default: head",
    )
    @argument(
        "--capture-limit",
        type=capture_limit,
        default=DEFAULT_CAPTURE_LIMIT,
        metavar="BYTES",
        help="the captured bytes kept in all, e.g. 4GiB, or none for no limit; past it, "
        "digests only; default: 1GiB",
    )
    @argument("--save", metavar="PATH", help="save the trace to PATH (lnb.load_trace opens it)")
    @line_cell_magic
    def luisa_trace(self, line: str, cell: str | None = None) -> None:
        """Run the cell under a trace and show the trace below it: its hazards, the
        staged-vs-expected elements of each stale upload, and the trace viewer.

        As a line magic, %luisa_trace [options] STATEMENT traces one statement.
        With --backend or --staging the code runs with a new device as
        lnb.default_device(), and the previous default device comes back after it. The
        trace is then lnb.last_trace(), and %luisa_hazards lists its hazards.
        """
        if cell is None:
            line, cell = _split_statement(line)
        arguments = _parse(self.luisa_trace, line)
        save = _save_path(arguments.save)
        real = self._real_luisa(arguments.backend, arguments.staging)
        if real is None and arguments.backend is None and arguments.staging is None:
            real = self.state.real_luisa
        device = (
            None if real else self._device(arguments.backend, arguments.staging, arguments.token)
        )
        _check_no_trace_recording()
        trace = AnalyzedTrace(capture=arguments.capture, capture_limit=arguments.capture_limit)
        if real is not None:
            with traced(trace, self.shell.user_ns), _real_luisa_errors(), instrumented(real):
                _run_cell(self.shell, cell)
        else:
            with using_device(device), traced(trace, self.shell.user_ns):
                _run_cell(self.shell, cell)
        self.state.last_trace = trace
        show_trace(trace)
        if save is not None:
            try:
                print(f"trace saved to {trace.save(save)}")
            except (OSError, LuisaNbError) as error:
                raise UsageError(f"--save {arguments.save}: {error}") from None

    # -- %luisa_device -------------------------------------------------------------------

    @magic_arguments()
    @argument(
        "name",
        nargs="?",
        metavar="NAME",
        help=f"backend name ({_BACKENDS}, or one another package registered), "
        "remote://HOST:PORT, or either with :STAGING (e.g. cpu:submit); luisa:BACKEND "
        "(e.g. luisa:cpu, luisa:cuda) makes %%%%luisa_trace cells run real luisa-python, "
        "instrumented; without it, show the default device",
    )
    @argument(
        "--staging",
        choices=list(StagingPolicy),
        help="staging policy of the new device; default: the backend's",
    )
    @argument("--token", help=_TOKEN_HELP)
    @line_magic
    def luisa_device(self, line: str) -> None:
        """Set the device that lnb.default_device() returns for the rest of the session."""
        arguments = _parse(self.luisa_device, line)
        if arguments.name is None and arguments.staging is None and arguments.token is None:
            print(f"lnb.default_device() is {_describe_device(default_device())}")
            return
        real = self._real_luisa(arguments.name, arguments.staging)
        if real is not None:
            with _real_luisa_errors():
                start_real_luisa(real)
            self.state.real_luisa = real
            print(
                f"real luisa-python is initialized on {real} and instrumented: "
                "%%luisa_trace cells record its commands; lnb.default_device() is unchanged"
            )
            return
        self.state.real_luisa = None
        device = self._device(arguments.name, arguments.staging, arguments.token)
        _set_default_device(device)
        print(f"lnb.default_device() is now {_describe_device(device)}")

    # -- %%luisa_compare -----------------------------------------------------------------

    @magic_arguments()
    @argument(
        "configs",
        nargs="*",
        metavar="CONFIG",
        help="two or more BACKEND:STAGING, e.g. cpu:execute cpu:submit dx:submit "
        "metal:execute remote://HOST:PORT:submit; a bare BACKEND keeps its default staging. "
        "The first is the reference",
    )
    @argument("--token", help=_TOKEN_HELP + "; given to every remote://HOST:PORT")
    @line_cell_magic
    def luisa_compare(self, line: str, cell: str | None = None) -> None:
        """Run the cell once per configuration, each time with that configuration's device
        as lnb.default_device() and under a trace, then show side by side every buffer and
        host array the cell touched (by variable name), with the differences marked.

        A cell magic: %%luisa_compare CONFIG... on the first line of the cell. The cell's
        variables keep the values of the last run. The comparison is also available as
        luisa_nb.ipython.state.STATE.last_comparison.
        """
        if cell is None:
            raise UsageError(
                "%%luisa_compare is a cell magic: put %%luisa_compare CONFIG... on the first "
                "line of the cell whose code should run once per configuration"
            )
        arguments = _parse(self.luisa_compare, line)
        try:
            configs = parse_configs(arguments.configs)
            if arguments.token is not None:
                configs = _with_token(configs, arguments.token)
        except LuisaNbError as error:
            raise UsageError(str(error)) from None
        _check_no_trace_recording()
        runs = []
        for config in configs:
            device = _create(config)
            trace = AnalyzedTrace()
            with using_device(device), traced(trace, self.shell.user_ns):
                result = _run_cell(self.shell, cell)
            if not result.success:
                show_trace(trace, title=config.label)
                return
            arrays = touched_arrays(trace, self.shell.user_ns)
            runs.append(Run(config.label, arrays, trace, device.info))
        comparison = ViewableComparison(runs)
        self.state.last_comparison = comparison
        show_comparison(comparison)

    # -- %luisa_hazards ------------------------------------------------------------------

    @magic_arguments()
    @argument(
        "trace",
        nargs="?",
        metavar="TRACE",
        help="name of a variable holding a trace; default: lnb.last_trace()",
    )
    @line_magic
    def luisa_hazards(self, line: str) -> None:
        """Show the hazards of the last trace (or of TRACE) as a table: kind, commands,
        message, fix."""
        arguments = _parse(self.luisa_hazards, line)
        if arguments.trace is None:
            try:
                trace = last_trace()
            except LuisaNbError as error:
                raise UsageError(str(error)) from None
            title = "hazards of the last trace"
        else:
            trace = self.shell.user_ns.get(arguments.trace)
            if not isinstance(trace, Trace):
                raise UsageError(
                    f"{arguments.trace!r} is not a variable holding a luisa_nb trace; pass "
                    "the name of one, or nothing for lnb.last_trace()"
                )
            title = f"hazards of {arguments.trace}"
        display(HazardTable(group_findings(trace, find_hazards(trace)), title=title))

    # -- helpers -------------------------------------------------------------------------

    def _real_luisa(self, name: str | None, staging: str | None) -> str | None:
        """The real luisa-python backend ``name`` (``luisa:cpu``) asks for; None for a
        luisa_nb device name."""
        try:
            backend = real_luisa_backend(name)
        except LuisaNbError as error:
            raise UsageError(str(error)) from None
        if backend is not None and staging is not None:
            raise UsageError(
                f"--staging does not apply to {name}: real luisa-python stages as its backend "
                "does (the CPU backend at submit)"
            )
        return backend

    def _device(
        self, backend: str | None, staging: str | None, token: str | None = None
    ) -> Device | None:
        """A new device for ``--backend``/``--staging``/``--token`` (``None`` when none is
        given), configured by :meth:`DeviceConfig.parse`."""
        if backend is None and staging is None and token is None:
            return None
        name = backend if backend is not None else default_device().name
        options = {} if token is None else {"token": token}
        try:
            config = DeviceConfig.parse(name, staging=staging, **options)
        except LuisaNbError as error:
            raise UsageError(str(error)) from None
        return _create(config)


@contextmanager
def _real_luisa_errors() -> Iterator[None]:
    """Real luisa-python that cannot start is a one-line ``UsageError``."""
    try:
        yield
    except LuisaNbError as error:
        raise UsageError(str(error)) from None


def _create(config: DeviceConfig) -> Device:
    """A new device of ``config``; a failure to create it is a one-line ``UsageError``."""
    try:
        return config.create()
    except LuisaNbError as error:
        raise UsageError(str(error)) from None


def _with_token(configs: list[DeviceConfig], token: str) -> list[DeviceConfig]:
    """``configs`` with ``token`` given to each ``remote://HOST:PORT``."""
    remote = [config.backend == "remote" and "address" in config.option_dict for config in configs]
    if not any(remote):
        raise UsageError(
            "--token is for remote://HOST:PORT configurations, and none is listed; drop "
            "--token or add one"
        )
    return [
        DeviceConfig.parse(config, token=token) if is_remote else config
        for config, is_remote in zip(configs, remote, strict=True)
    ]


def _split_statement(line: str) -> tuple[str, str]:
    """``--backend cpu run(x)`` → (``--backend cpu``, ``run(x)``): the leading options (each
    ``--name value`` or ``--name=value``) and the statement after them."""
    options: list[str] = []
    rest = line
    while match := re.match(r"\s*(-\S*)", rest):
        options.append(match.group(1))
        rest = rest[match.end() :]
        value = None if "=" in match.group(1) else re.match(r"\s*(\S+)", rest)
        if value is not None:
            options.append(value.group(1))
            rest = rest[value.end() :]
    if not rest.strip():
        raise UsageError(
            "%luisa_trace needs a statement to trace: %luisa_trace [options] STATEMENT, or "
            "%%luisa_trace [options] on the first line of a cell"
        )
    return " ".join(options), rest.strip()


def _parse(magic: Any, line: str) -> Any:
    """The options of ``line`` for ``magic``; an unclosed quote, which the shell-like
    splitting refuses with ``ValueError``, is a one-line ``UsageError`` too."""
    try:
        return parse_argstring(magic, line)
    except ValueError as error:
        raise UsageError(f"{line.strip()[:80]}: {error}; close the quote") from None


def _describe_device(device: Device) -> str:
    description = device.info.get("description")
    return f"{device!r}" + (f": {description}" if description else "")


def _save_path(text: str | None) -> Path | None:
    if text is None:
        return None
    path = Path(text).expanduser()
    if not path.name or path.is_dir():
        raise UsageError(f"--save {text}: it names a folder; pass the path of a file")
    if not path.parent.is_dir():
        raise UsageError(f"--save {text}: folder {str(path.parent)!r} does not exist; create it")
    return path


def _check_no_trace_recording() -> None:
    if recorder.active_trace() is not None:
        raise UsageError(
            "a trace is already recording (a `with lnb.trace()` block still open?); stop it "
            "before running a cell under a luisa_nb magic"
        )


def _run_cell(shell: Any, cell: str) -> Any:
    """Run ``cell`` through ``shell``, which shows what it raises as it shows any cell's
    error; the error also becomes that of the cell running the magic, so that Run All and
    nbclient stop there and name it. Returns the run's ``ExecutionResult``."""
    running = shell.displayhook.exec_result  # the result of the cell running the magic
    result = shell.run_cell(cell)
    shell.displayhook.exec_result = running  # the nested run reset it
    if running is not None and not result.success:
        running.error_before_exec = result.error_before_exec
        running.error_in_exec = result.error_in_exec
    return result


# -- installing and removing the extension ----------------------------------------------


def _display_trace(trace: AnalyzedTrace) -> None:
    show_trace(trace)


def install(shell: Any, state: ExtensionState = STATE) -> None:
    """Register the magics, and the display of traces and comparisons, in ``shell``;
    remember each hook."""
    if state.hooks is not None:
        if state.hooks.shell is shell:
            return
        uninstall(state.hooks.shell, state)
    magics = LuisaMagics(shell, state)
    shell.register_magics(magics)
    names = {kind: list(table) for kind, table in magics.magics.items()}
    hooks = InstalledHooks(shell, magics=names, magics_instance=magics)
    formatter = shell.display_formatter.ipython_display_formatter
    for shown_type, show in ((AnalyzedTrace, _display_trace), (Comparison, show_comparison)):
        previous = formatter.for_type(shown_type, show)
        hooks.formatters.append((formatter, shown_type, previous))
    state.hooks = hooks


def uninstall(shell: Any, state: ExtensionState = STATE) -> None:
    """Remove every hook :func:`install` put into ``shell``, and nothing else."""
    hooks = state.hooks
    if hooks is None or hooks.shell is not shell:
        return
    manager = shell.magics_manager
    instance = hooks.magics_instance
    for kind, names in hooks.magics.items():
        table = manager.magics.get(kind, {})
        for name in names:
            if getattr(table.get(name), "__self__", None) is instance:
                del table[name]
    key = type(instance).__name__
    if manager.registry.get(key) is instance:
        del manager.registry[key]
    for formatter, registered_type, previous in hooks.formatters:
        if previous is None:
            formatter.pop(registered_type, None)
        else:
            formatter.for_type(registered_type, previous)
    state.hooks = None
