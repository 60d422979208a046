"""luisa-python programs on remote: ``luisa-nb run --device remote`` (or
``luisa.init("remote")``) prints what the same program prints on cpu under the same
staging policy, and its trace finds the same hazards."""

import re
from pathlib import Path

import pytest

pytest.importorskip("zmq")

import luisa_nb.luisa as luisa
from luisa_nb.cli import main
from luisa_nb.kernels import compiler_available

pytestmark = pytest.mark.skipif(not compiler_available(), reason="no C compiler")
ROOT = Path(__file__).parents[2]
PROGRAMS = sorted(
    path.name
    for path in (ROOT / "tests" / "luisa" / "programs").glob("*.py")
    # instrumented.py and upload_bytes.py drive real luisa-python themselves; a remote
    # server's kernels do not send their device prints back (docs/kernels.md, "Device print")
    if path.name not in ("instrumented.py", "upload_bytes.py", "device_print.py")
)
BENCHMARKS = {  # vectors and structs; their argument lists make them small
    "luisa_mandelbrot.py": ["64", "32", "20", "1"],
    "luisa_shading.py": ["32", "16", "1"],
}
REPORT = re.compile(r"^\S+\.py: (\d+) commands traced on ")
TIMINGS = re.compile(r"^first \S+ compile \S+ best \S+ cpu \S+ ")
HAZARD = re.compile(r"^  ([A-Z_]+): ")


def run(capsys, device: str, path: Path, arguments: list[str], token: str | None = None):
    """What ``luisa-nb run`` printed: the program's lines (a benchmark's timings left
    out), the number of commands traced and the kinds of hazards found."""
    options = ["--token", token] if token else []
    assert main(["run", "--device", device, *options, str(path), "cpu", *arguments]) == 0
    lines = capsys.readouterr().out.splitlines()
    end = next(i for i, line in enumerate(lines) if REPORT.match(line))
    printed = [TIMINGS.sub("", line) for line in lines[:end] if line]
    hazards = [found[1] for line in lines[end + 2 :] if (found := HAZARD.match(line))]
    return printed, REPORT.match(lines[end]).group(1), hazards


@pytest.fixture(autouse=True)
def no_session():
    luisa.del_device()
    yield
    luisa.del_device()


@pytest.mark.parametrize("name", [*PROGRAMS, *BENCHMARKS])
def test_programs_print_what_they_print_on_cpu(capsys, process_server, name):
    # a server process: a worker started while a program runs as __main__ in this
    # process would import the program again (multiprocessing prepares its __main__)
    _, endpoint, token = process_server
    folder = ROOT / ("benchmarks" if name in BENCHMARKS else "tests/luisa/programs")
    arguments = BENCHMARKS.get(name, [])
    address = "remote://" + endpoint.removeprefix("tcp://") + ":submit"
    remote = run(capsys, address, folder / name, arguments, token)
    assert remote == run(capsys, "cpu:submit", folder / name, arguments)
    assert remote[0], "the program printed nothing to compare"


@pytest.mark.parametrize("staging", ["submit", "execute"])
def test_the_seed_program_on_a_server_of_its_own(capsys, staging):
    seed = ROOT / "tests" / "luisa" / "programs" / "seed.py"
    remote = run(capsys, f"remote:{staging}", seed, [])
    assert remote == run(capsys, f"cpu:{staging}", seed, [])
    expected = "STALE_UPLOAD" if staging == "submit" else "LATENT_STALE_UPLOAD"
    assert remote[2] == [expected]
