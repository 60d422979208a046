"""``luisa-nb run``: unchanged luisa-python programs on luisa_nb, traced, and the same
results as on real luisa-python."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from luisa_nb.cli import main
from luisa_nb.luisa.alias import as_luisa
from tests.luisa.references import mandelbrot_escapes
from tests.luisa.running import require_real_luisa, run_on_luisa_nb, run_on_real_luisa

PROGRAMS = Path(__file__).parent / "programs"
SEED = PROGRAMS / "seed.py"


def result_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith(("z_data ", "x "))]


def test_the_seed_program_runs_unchanged_and_its_stale_upload_is_named(capsys):
    assert main(["run", str(SEED)]) == 0
    output = capsys.readouterr().out
    assert result_lines(output) == [
        "z_data [   0. 1001. 2002. 3003.]",
        "x [123. 123. 123. 123.]",
    ]
    assert "seed.py: 8 commands traced on cpu:submit" in output
    assert "STALE_UPLOAD: #" in output and "upload z <- z_data read z_data[0:1024]" in output


def test_the_device_option_wins_over_the_programs_choice(capsys):
    assert main(["run", "--device", "cpu:execute", str(SEED), "dx"]) == 0
    output = capsys.readouterr().out
    assert "x [   0. 1001. 2002. 3003.]" in output
    assert "LATENT_STALE_UPLOAD" in output and " STALE_UPLOAD" not in output


def test_a_failing_program_keeps_its_trace(tmp_path, capsys):
    program = tmp_path / "fails.py"
    failure = 'raise RuntimeError("late failure")'
    program.write_text(SEED.read_text().replace('print("z_data", z_data[:4])', failure))
    trace_path = tmp_path / "fails.lnbtrace"
    assert main(["run", "--trace", str(trace_path), str(program)]) == 1
    captured = capsys.readouterr()
    assert "RuntimeError: late failure" in captured.err
    assert "STALE_UPLOAD" in captured.out and trace_path.is_file()
    assert "fails.py: 7 commands traced on cpu:submit before it exited with status 1" in (
        captured.out
    )


def test_a_failed_command_shows_the_programs_lines_not_luisa_nbs(tmp_path, capsys):
    program = tmp_path / "overrun.py"
    program.write_text(
        "import luisa\nimport numpy as np\nluisa.init()\n"
        "b = luisa.Buffer.empty(4, dtype=float)\n"
        "@luisa.func\ndef overrun():\n    b.write(dispatch_id().x + 9, 1.0)\n"
        "overrun(dispatch_size=4)\nluisa.synchronize()\n"
    )
    assert main(["run", str(program)]) == 1
    error = capsys.readouterr().err
    frames = [line for line in error.splitlines() if line.strip().startswith("File ")]
    assert frames == [f'  File "{program}", line 9, in <module>'], error
    assert "(dispatch overrun[4]) failed" in error and "writes index 9" in error


def test_a_missing_program_is_one_error_line(tmp_path, capsys):
    assert main(["run", str(tmp_path / "absent.py")]) == 2
    assert "no program at" in capsys.readouterr().err


def test_a_syntax_error_is_reported_as_python_reports_it(tmp_path, capsys):
    program = tmp_path / "broken.py"
    program.write_text("import luisa\nluisa.init(\n")
    assert main(["run", str(program)]) == 1
    assert "SyntaxError" in capsys.readouterr().err


def test_the_alias_restores_what_luisa_named_before():
    before = sys.modules.get("luisa")
    with as_luisa():
        import luisa

        assert luisa.__name__ == "luisa_nb.luisa"
        assert sys.modules["luisa.mathtypes"].__name__ == "luisa_nb.luisa.mathtypes"
    assert sys.modules.get("luisa") is before


def test_real_luisa_gives_the_same_rows():
    require_real_luisa()
    assert result_lines(run_on_real_luisa(SEED, "cpu")) == [
        "z_data [   0. 1001. 2002. 3003.]",
        "x [123. 123. 123. 123.]",
    ]


@pytest.fixture(autouse=True)
def _no_session_left():
    yield
    from luisa_nb.luisa import session

    assert session.forced_device is None
    session.close()


MANDELBROT = Path(__file__).parents[2] / "benchmarks" / "luisa_mandelbrot.py"
MANDELBROT_ARGUMENTS = ("cpu", "256", "128", "50", "1")


def test_a_float2_mandelbrot_matches_numpy(capsys):
    escape = run_on_luisa_nb(MANDELBROT, *MANDELBROT_ARGUMENTS)["escape"]
    ys, xs = np.mgrid[0:128, 0:256]
    escapes = mandelbrot_escapes(xs, ys, 128, 50)
    steps = np.where(escapes >= 0, escapes + 1, 50).astype(np.float32)
    np.testing.assert_array_equal(escape.numpy(), (1 - steps / 50).reshape(-1))
    assert "checksum 22905.117" in capsys.readouterr().out


def test_real_luisa_computes_the_same_mandelbrot():
    require_real_luisa()
    assert "checksum 22905.117" in run_on_real_luisa(MANDELBROT, *MANDELBROT_ARGUMENTS)


def test_commands_left_in_the_list_run_at_exit(tmp_path):
    program = tmp_path / "exits.py"
    program.write_text(
        "import atexit\n"
        "import numpy as np\n"
        "out = np.zeros(4, np.float32)\n"
        "atexit.register(lambda: print('at exit', out.tolist()))\n"
        "import luisa_nb.luisa as luisa\n"
        "luisa.init('cpu:submit')\n"
        "b = luisa.Buffer(4, float)\n"
        "b.copy_from(np.arange(4, dtype=np.float32))\n"
        "b.copy_to(out, sync=False)\n"
        "print('before exit', out.tolist())\n"
    )
    done = subprocess.run(
        [sys.executable, str(program)], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout.splitlines() == [
        "before exit [0.0, 0.0, 0.0, 0.0]",
        "at exit [0.0, 1.0, 2.0, 3.0]",
    ]
