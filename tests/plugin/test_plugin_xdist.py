"""Campaigns over pytest-xdist workers: a failed test's trace comes back to the
controller in its report and is written into the controller's trace folder."""

import re
from pathlib import Path

import pytest
from test_plugin_hazards import SEED_TESTS

import luisa_nb as lnb
from luisa_nb.analysis import HazardKind
from luisa_nb.cli import main as cli_main

pytest.importorskip("xdist", reason="pytest-xdist is not installed")

FAILED = ("test_seed_stale[cpu:submit]", "test_seed_any[cpu:execute]", "test_seed_any[cpu:submit]")


def summary_traces(output: str) -> dict[str, Path]:
    """The summary's ``nodeid: path`` lines, by test name."""
    section = output.split("luisa_nb traces of failed tests", 1)[1]
    found = re.findall(r"^\S+::(\S+): (\S+\.lnbtrace)$", section, re.MULTILINE)
    return {name: Path(path) for name, path in found}


def assert_stale_traces(traces: dict[str, Path], folder: Path) -> None:
    assert sorted(traces) == sorted(FAILED)
    for path in traces.values():
        assert path.is_relative_to(folder) and path.is_file()
        kinds = {hazard.kind for hazard in lnb.load_trace(path).hazards}
        assert HazardKind.STALE_UPLOAD in kinds or HazardKind.LATENT_STALE_UPLOAD in kinds


def test_workers_send_failed_tests_traces_to_the_controllers_folder(pytester, tmp_path):
    pytester.makepyfile(test_seed=SEED_TESTS)
    folder = tmp_path / "campaign"
    result = pytester.runpytest_subprocess(
        "-n", "2", "--luisa-backend", "cpu", "--luisa-trace-dir", str(folder)
    )
    result.assert_outcomes(passed=3, failed=3)
    output = result.stdout.str()
    assert_stale_traces(summary_traces(output), folder)
    assert len(re.findall(rf"trace saved to {re.escape(str(folder))}\S+", output)) == 3


def test_the_returned_traces_export_as_one_dataset(pytester, tmp_path):
    pytest.importorskip("pyarrow", reason="the data extra (pyarrow) is not installed")
    pytester.makepyfile(test_seed=SEED_TESTS)
    folder = tmp_path / "campaign"
    pytester.runpytest_subprocess(
        "-n", "2", "--luisa-backend", "cpu", "--luisa-trace-dir", str(folder)
    )
    paths = sorted(str(path) for path in folder.glob("*/*.lnbtrace"))
    assert len(paths) == 3
    assert cli_main(["export", *paths, "--parquet", str(tmp_path / "dataset")]) == 0
    names = sorted(path.stem for path in (tmp_path / "dataset" / "findings").iterdir())
    assert names == sorted(f"{Path(path).parent.name}-luisa-trace" for path in paths)


def test_without_a_folder_the_controller_makes_one(pytester):
    pytester.makepyfile(test_seed=SEED_TESTS)
    result = pytester.runpytest_subprocess("-n", "2", "--luisa-backend", "cpu")
    result.assert_outcomes(passed=3, failed=3)
    traces = summary_traces(result.stdout.str())
    (folder,) = {path.parents[1] for path in traces.values()}
    assert folder.name.startswith("luisa-traces-")
    assert_stale_traces(traces, folder)


def test_one_process_writes_into_the_folder_too(pytester, tmp_path):
    pytester.makepyfile(test_seed=SEED_TESTS)
    folder = tmp_path / "local"
    result = pytester.runpytest_subprocess(
        "--luisa-backend", "cpu", "--luisa-trace-dir", str(folder)
    )
    result.assert_outcomes(passed=3, failed=3)
    assert_stale_traces(summary_traces(result.stdout.str()), folder)
