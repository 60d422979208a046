"""The luisa_nb pytest plugin, loaded through the ``pytest11`` entry point.

- ``luisa_device``: a device, and every test that asks for it runs once per backend and
  staging policy (ids are the device's label, as in ``test_x[cpu:execute]``); narrow the
  set with ``--luisa-backend`` and ``--luisa-staging`` (or the ini options
  ``luisa_backends`` and ``luisa_staging``). Devices are named as
  :meth:`~luisa_nb.runtime.DeviceConfig.parse` reads them.
- ``luisa_trace``: an :class:`~luisa_nb.analysis.AnalyzedTrace` (``capture="full"``)
  recording while the test runs. When the test fails, the trace is saved under the
  test session's temporary directory and the report says where. With
  ``--luisa-backend luisa:cpu`` it records real luisa-python (initialized on that
  backend and instrumented), synchronized when the test ends; ``luisa_device`` then
  runs only on the luisa_nb backends also named.
- ``@pytest.mark.luisa_no_hazards`` (optionally ``kinds=[...]``): the test fails if its
  trace has hazards (of those kinds), listing each in words with its fix.

The hooks and fixtures here are thin; what they keep and do lives in
:mod:`luisa_nb.testing`, imported only when a test needs it.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from luisa_nb.runtime.staging import StagingPolicy

if TYPE_CHECKING:
    from collections.abc import Iterator

    from luisa_nb.analysis import AnalyzedTrace, HazardKind
    from luisa_nb.runtime import Device
    from luisa_nb.testing import SessionDevices, TracedTest

DEVICES_KEY: pytest.StashKey[SessionDevices] = pytest.StashKey()
TRACED_KEY: pytest.StashKey[TracedTest] = pytest.StashKey()
KINDS_KEY: pytest.StashKey[frozenset[HazardKind] | None] = pytest.StashKey()
MARKER = "luisa_no_hazards"


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("luisa_nb", "luisa_nb devices, traces and hazard checks")
    group.addoption(
        "--luisa-backend",
        action="append",
        dest="luisa_backends",
        metavar="NAME",
        help="run tests that use luisa_device on backend NAME (or NAME:POLICY for one "
        "staging policy only); repeat for several (default: every available backend, or "
        "the ini option luisa_backends). luisa:BACKEND (e.g. luisa:cpu) makes luisa_trace "
        "record real luisa-python on that backend",
    )
    group.addoption(
        "--luisa-staging",
        action="append",
        dest="luisa_staging",
        metavar="POLICY",
        choices=list(StagingPolicy),
        help="staging policy of luisa_device: execute or submit; repeat for both "
        "(default: execute and submit, or the ini option luisa_staging)",
    )
    group.addoption(
        "--luisa-trace-dir",
        dest="luisa_trace_dir",
        metavar="DIR",
        help="write the traces of failed tests into DIR, one file per test (default: the "
        "session's temporary directory). Under pytest-xdist, workers, also on other "
        "machines, send each trace back and the controller writes it there",
    )
    parser.addini("luisa_backends", type="args", help="default of --luisa-backend")
    parser.addini("luisa_staging", type="args", help="default of --luisa-staging")


def _requested(config: pytest.Config) -> tuple[list[str] | None, list[str] | None]:
    backends = config.getoption("luisa_backends") or config.getini("luisa_backends") or None
    stagings = config.getoption("luisa_staging") or config.getini("luisa_staging") or None
    return backends, stagings


def _devices(config: pytest.Config) -> SessionDevices:
    """The session's devices, made on first use so that luisa_nb is imported only by
    sessions that need it."""
    devices = config.stash.get(DEVICES_KEY, None)
    if devices is None:
        from luisa_nb.testing import SelectionError, SessionDevices

        try:
            devices = SessionDevices(*_requested(config))
        except SelectionError as error:
            raise pytest.UsageError(str(error)) from None
        config.stash[DEVICES_KEY] = devices
    return devices


def pytest_configure(config: pytest.Config) -> None:
    if config.pluginmanager.has_plugin("xdist") and not hasattr(config, "workerinput"):
        config.pluginmanager.register(TraceReceiver(config.getoption("luisa_trace_dir")))
    config.addinivalue_line(
        "markers",
        f"{MARKER}(*kinds, kinds=None): fail the test if its luisa_nb trace has hazards "
        "(of these HazardKind names; default: every kind)",
    )
    if any(_requested(config)):
        _devices(config)  # a wrong backend name is a usage error before collection


def pytest_unconfigure(config: pytest.Config) -> None:
    devices = config.stash.get(DEVICES_KEY, None)
    if devices is not None:
        devices.pool.close()


def pytest_report_header(config: pytest.Config) -> str | None:
    devices = config.stash.get(DEVICES_KEY, None)
    return None if devices is None else f"luisa_nb: {devices.selection.describe()}"


def _parametrized_by_user(metafunc: pytest.Metafunc) -> bool:
    for marker in metafunc.definition.iter_markers("parametrize"):
        names = marker.args[0] if marker.args else marker.kwargs.get("argnames", ())
        if isinstance(names, str):
            names = [name.strip() for name in names.split(",")]
        if "luisa_device" in names:
            return True
    return False


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "luisa_device" not in metafunc.fixturenames or _parametrized_by_user(metafunc):
        return
    params = _devices(metafunc.config).selection.params()
    metafunc.parametrize("luisa_device", params, ids=[p.label for p in params], indirect=True)


@pytest.fixture
def luisa_device(request: pytest.FixtureRequest) -> Iterator[Device]:
    """A device of one backend and staging policy; the test runs once per pair."""
    from luisa_nb.testing import SelectionError, device_config

    message = (
        "luisa_device was not parametrized; ask for it as a test argument (not through "
        "request.getfixturevalue) or parametrize it with indirect=True"
    )
    param = None
    if hasattr(request, "param"):
        try:
            param = device_config(request.param)
        except SelectionError as error:
            message = str(error)
    if param is None:
        pytest.fail(message, pytrace=False)
    pool = _devices(request.config).pool
    device = pool.get(param)
    yield device
    pool.settle(device)


@pytest.fixture
def luisa_trace(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[AnalyzedTrace]:
    """A trace (``capture="full"``) recording while the test runs; saved if it fails."""
    from luisa_nb.testing import TracedTest

    name = re.sub(r"\W", "_", request.node.name)[:40]
    devices = request.config.stash.get(DEVICES_KEY, None)
    real = None if devices is None else devices.selection.real_luisa
    chosen = request.config.getoption("luisa_trace_dir")
    if chosen and not hasattr(request.config, "workerinput"):
        from luisa_nb.testing.returned_traces import test_folder

        traced = TracedTest(lambda: test_folder(Path(chosen), request.node.nodeid), real)
    else:
        traced = TracedTest(lambda: tmp_path_factory.mktemp(f"luisa-{name}", numbered=True), real)
    traced.start()
    request.node.stash[TRACED_KEY] = traced
    yield traced.trace
    traced.stop()


@pytest.fixture(autouse=True)
def _luisa_no_hazards_trace(request: pytest.FixtureRequest) -> None:
    """Give every test marked luisa_no_hazards a trace, after checking the marker."""
    marker = request.node.get_closest_marker(MARKER)
    if marker is None:
        return
    from luisa_nb.testing import hazard_kinds

    try:
        request.node.stash[KINDS_KEY] = hazard_kinds(marker.args, marker.kwargs.get("kinds"))
    except ValueError as error:
        message = str(error)
    else:
        request.getfixturevalue("luisa_trace")
        return
    pytest.fail(message, pytrace=False)


@pytest.hookimpl(wrapper=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function):
    traced = pyfuncitem.stash.get(TRACED_KEY, None)
    if traced is None or not traced.recording:
        return (yield)
    from luisa_nb.testing import hazard_report, locals_at_return, unwanted_hazards

    try:
        with locals_at_return(pyfuncitem.obj) as test_locals:
            result = yield
    finally:
        module = getattr(pyfuncitem.module, "__dict__", {})
        traced.namespace = {**module, **pyfuncitem.funcargs, **test_locals}
        traced.stop()
    if KINDS_KEY in pyfuncitem.stash:
        kinds = pyfuncitem.stash[KINDS_KEY]
        hazards = unwanted_hazards(traced.trace, kinds)
        if hazards:
            pytest.fail(hazard_report(hazards, kinds), pytrace=False)
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    report = yield
    traced = item.stash.get(TRACED_KEY, None)
    if traced is not None and report.when == "call" and report.failed:
        from luisa_nb.testing import returned_traces

        try:
            path = traced.save()
            if hasattr(item.config, "workerinput"):  # an xdist worker: send the bytes too
                returned_traces.attach(report, path)
        except Exception as error:  # the report must still be made
            report.sections.append((returned_traces.SECTION, f"could not save the trace: {error}"))
        else:
            report.user_properties.append((returned_traces.PATH_PROPERTY, str(path)))
            report.sections.append(
                (
                    returned_traces.SECTION,
                    f"trace saved to {path}\nopen it with luisa_nb.load_trace(path)",
                )
            )
    return report


class TraceReceiver:
    """On a pytest-xdist controller: writes each trace a worker sent back into the trace
    folder (``--luisa-trace-dir``, else a new temporary folder)."""

    def __init__(self, folder: str | None) -> None:
        self.folder = Path(folder) if folder else None

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        from luisa_nb.testing import returned_traces

        if returned_traces.sent(report):
            if self.folder is None:
                self.folder = Path(tempfile.mkdtemp(prefix="luisa-traces-"))
            returned_traces.receive(report, self.folder)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    saved = [
        (report.nodeid, value)
        for report in terminalreporter.stats.get("failed", [])
        for name, value in getattr(report, "user_properties", ())
        if name == "luisa_trace"
    ]
    if saved:
        terminalreporter.section("luisa_nb traces of failed tests")
        for nodeid, path in saved:
            terminalreporter.line(f"{nodeid}: {path}")
