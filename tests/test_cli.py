import json
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

import luisa_nb as lnb
from luisa_nb.cli import main


def test_demo_under_submit_prints_the_wrong_row_and_the_stale_upload(capsys, tmp_path):
    trace_path = tmp_path / "seed.lnbtrace"
    chrome_path = tmp_path / "seed.json"
    assert main(["demo", "--trace", str(trace_path), "--chrome", str(chrome_path)]) == 0
    out = capsys.readouterr().out
    assert "z_data = [0.0, 1001.0, 2002.0, 3003.0," in out
    assert "     x = [123.0, 123.0, 123.0," in out and "(WRONG)" in out
    assert "  STALE_UPLOAD: #" in out and "LATENT" not in out
    assert "123.0" in out.split("index")[1]
    loaded = lnb.load_trace(trace_path)
    assert [h.kind.value for h in loaded.hazards] == ["STALE_UPLOAD"]
    assert json.loads(chrome_path.read_text())["traceEvents"]


def test_demo_under_execute_is_correct_and_warns(capsys):
    assert main(["demo", "--staging", "execute"]) == 0
    out = capsys.readouterr().out
    assert "WRONG" not in out
    assert "     x = [0.0, 1001.0, 2002.0," in out
    assert "  LATENT_STALE_UPLOAD: #" in out and "  STALE_UPLOAD:" not in out


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ([], "on 'cpu', staging='submit'"),
        (["--backend", "cpu:execute"], "on 'cpu', staging='execute'"),
        (["--backend", "dx:execute", "--staging", "submit"], "on 'dx', staging='submit'"),
    ],
)
def test_demo_reads_the_device_as_device_config_does(capsys, arguments, expected):
    assert main(["demo", *arguments]) == 0
    assert expected in capsys.readouterr().out


def test_demo_names_a_bad_device_in_one_line(capsys):
    assert main(["demo", "--backend", "cpu:sumbit"]) == 2
    assert "did you mean cpu:submit?" in capsys.readouterr().err
    assert main(["demo", "--token", "secret"]) == 2
    assert "backend 'cpu' does not take these options" in capsys.readouterr().err


def test_console_script_runs():
    done = subprocess.run(
        [sys.executable, "-m", "luisa_nb.cli", "demo", "--backend", "cpux"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert "did you mean 'cpu'" in done.stderr


def test_report_writes_a_self_contained_page(capsys, tmp_path):
    trace_path = tmp_path / "seed.lnbtrace"
    assert main(["demo", "--trace", str(trace_path)]) == 0
    page = tmp_path / "seed.html"
    assert main(["report", str(trace_path), "-o", str(page)]) == 0
    assert f"report written to {page}" in capsys.readouterr().out
    html = page.read_text()
    assert "STALE_UPLOAD" in html and "z_data" in html
    fetched = html.replace('"http://www.w3.org/2000/svg"', "")  # a name, never fetched
    assert "https://" not in fetched and "http://" not in fetched


def test_report_of_a_missing_trace_is_one_line(capsys, tmp_path):
    assert main(["report", str(tmp_path / "nothing.lnbtrace")]) == 2
    assert "cannot read the trace" in capsys.readouterr().err


def recorded_trace(path):
    """A small trace recorded through the public API (copies only, no kernels)."""
    device = lnb.create_device("cpu", staging="submit")
    buffer = device.create_buffer(256, np.float32)
    data = np.arange(256, dtype=np.float32)
    with lnb.trace() as trace:
        buffer.copy_from(data, sync=True)
        buffer.copy_to(data, sync=True)
    return trace.save(path)


def _text(folder):
    path = folder / "notes.txt"
    path.write_text("not a trace")
    return path


def _truncated(folder):
    path = recorded_trace(folder / "whole.lnbtrace")
    path.write_bytes(path.read_bytes()[:-100])
    return path


def _deep(folder):
    path = folder / "deep.lnbtrace"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("trace.json", "[" * 100_000)
    return path


MALFORMED = {
    "text": (_text, "cannot be read as a zip file"),
    "truncated": (_truncated, "cannot be read as a zip file"),
    "deep": (_deep, "nests 100000 levels"),
    "directory": (lambda folder: folder, "is a directory, not a trace file"),
    "dev-zero": (lambda folder: Path("/dev/zero"), "is a character device, not a trace file"),
}


@pytest.mark.parametrize("kind", MALFORMED)
def test_report_of_a_malformed_trace_is_one_line(capsys, tmp_path, kind):
    make, message = MALFORMED[kind]
    trace_path = make(tmp_path)
    if kind == "dev-zero" and not trace_path.is_char_device():
        pytest.skip("/dev/zero is not a character device here")
    page = tmp_path / "page.html"
    assert main(["report", str(trace_path), "-o", str(page)]) == 2
    captured = capsys.readouterr()
    assert captured.err.startswith(f"luisa-nb: error: {trace_path}") and message in captured.err
    assert captured.err.count("\n") == 1 and not captured.out and not page.exists()


def test_console_report_of_a_malformed_trace_exits_with_one_line(tmp_path):
    trace_path = _truncated(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "luisa_nb.cli", "report", str(trace_path)],
        capture_output=True,
        text=True,
        check=False,
        cwd=tmp_path,
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert "cannot be read as a zip file" in done.stderr


def test_report_to_an_unwritable_path_is_one_line(capsys, tmp_path):
    trace_path = recorded_trace(tmp_path / "trace.lnbtrace")
    assert main(["report", str(trace_path), "-o", str(tmp_path / "missing" / "page.html")]) == 2
    error = capsys.readouterr().err
    assert error.startswith("luisa-nb: error: cannot write") and error.count("\n") == 1


def _loop(folder):
    link = folder / "loop"
    link.symlink_to(link)
    return link


#: Command lines whose trace path (in ``{folder}``, a test's folder) cannot be read or
#: written, and the path their error line names.
BAD_PATHS = {
    "report-loop": (["report", "{folder}/loop"], "{folder}/loop"),
    "report-too-long": (["report", "{folder}/" + "t" * 300], "{folder}/" + "t" * 300),
    "report-output-loop": (["report", "{trace}", "-o", "{folder}/loop/page.html"],
                           "{folder}/loop/page.html"),
    "demo-trace": (["demo", "--trace", "{folder}/missing/t.lnbtrace"],
                   "{folder}/missing/t.lnbtrace"),
    "demo-chrome": (["demo", "--chrome", "{folder}/loop/t.json"], "{folder}/loop/t.json"),
}  # fmt: skip


@pytest.mark.parametrize("case", BAD_PATHS)
def test_a_bad_trace_path_is_one_error_line(capsys, tmp_path, case):
    _loop(tmp_path)
    trace = recorded_trace(tmp_path / "trace.lnbtrace") if case.startswith("report") else None
    arguments, named = BAD_PATHS[case]
    fill = {"folder": tmp_path, "trace": trace}
    assert main([argument.format(**fill) for argument in arguments]) == 2
    error = capsys.readouterr().err
    assert error.startswith("luisa-nb: error: cannot ") and error.count("\n") == 1, error
    assert named.format(**fill) in error and "; " in error


def test_replay_dumps_each_buffer_after_a_command_and_names_what_it_cannot(capsys, tmp_path):
    device = lnb.create_device("dx")
    with lnb.trace(capture="full") as trace:
        z = device.create_buffer(4, np.float32, name="z")
        x = device.create_buffer(4, np.float32, name="x")
        staged = np.full(4, 123.0, np.float32)
        z.copy_from(staged)
        z.copy_to_buffer(x)
        z.fill(7.0)
        device.synchronize()
    _, copy, _ = (r.id for r in trace.commands)
    trace_path = trace.save(tmp_path / "trace.lnbtrace")
    assert main(["replay", str(trace_path), "--to", str(copy), "--dump", str(tmp_path / "d")]) == 0
    assert f"buffers right after #{copy}:" in capsys.readouterr().out
    np.testing.assert_array_equal(np.load(tmp_path / "d" / "x.npy"), staged)
    np.testing.assert_array_equal(np.load(tmp_path / "d" / "z.npy"), staged)
    assert main(["replay", str(trace_path), "--dump", str(tmp_path / "end")]) == 0
    np.testing.assert_array_equal(np.load(tmp_path / "end" / "z.npy"), np.full(4, 7.0))

    with lnb.trace(capture="head", capture_bytes=4) as partial:
        z.copy_from(staged)
        device.synchronize()
    partial_path = partial.save(tmp_path / "partial.lnbtrace")
    assert main(["replay", str(partial_path), "--dump", str(tmp_path / "p")]) == 1
    assert "not written: 'z' bytes [0:16)" in capsys.readouterr().out
    assert not (tmp_path / "p" / "z.npy").exists()
    assert main(["replay", str(partial_path), "--to", "999999", "--dump", str(tmp_path)]) == 2
    assert "#999999" in capsys.readouterr().err
