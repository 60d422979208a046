import json
import subprocess
import sys

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
    assert "https://" not in html and "http://" not in html


def test_report_of_a_missing_trace_is_one_line(capsys, tmp_path):
    assert main(["report", str(tmp_path / "nothing.lnbtrace")]) == 2
    assert "no trace file at" in capsys.readouterr().err
