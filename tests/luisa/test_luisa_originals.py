"""LuisaCompute's own luisa-python programs, run unchanged by `luisa-nb run`, checked
against numpy references written here. The programs are not part of this project: set
LUISA_NB_LUISA_PROGRAMS to a folder holding them, made from a LuisaCompute checkout:

    git show 4f96202e:src/py/mandelbrot.py > DIR/mandelbrot.py
    git show 13bba975:src/py/tests/fractal.py > DIR/fractal.py
    git show HEAD:src/tests/python/test-helloworld.py > DIR/test-helloworld.py
    git show HEAD:src/tests/python/test-buffer.py > DIR/test-buffer.py
    git show HEAD:src/tests/python/test-bindless.py > DIR/test-bindless.py
    git show HEAD:src/tests/python/test-game-of-life.py > DIR/test-game-of-life.py
    git show HEAD:src/tests/python/test-raymarch.py > DIR/test-raymarch.py
    git show HEAD:src/tests/python/test-mpm.py > DIR/test-mpm.py
    git show HEAD:src/tests/python/test-indirect.py > DIR/test-indirect.py

Each test skips, saying so, when its program is not there.

The tests at the end run every program that real luisa-python 0.3.7 completed on its CPU
backend, among the 148 that ``benchmarks/bench_luisa_originals.py extract`` collects from
a LuisaCompute checkout (its ``src/py`` and ``src/tests/python``, every version of the
2022 ``test.py`` snippets), on both runtimes, and check that their outputs agree. Set
LUISA_NB_LUISA_ORIGINALS to the folder that ``extract --out`` wrote.
"""

from __future__ import annotations

import os
import runpy
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import luisa_nb.luisa as luisa
from luisa_nb.luisa.alias import as_luisa
from tests.luisa.references import (
    julia,
    mandelbrot_escapes,
    mirrored_uv_display,
    png_pixels,
    unorm8,
)

F32 = np.float32


def program(name: str, tmp_path: Path) -> Path:
    folder = os.environ.get("LUISA_NB_LUISA_PROGRAMS")
    source = Path(folder) / name if folder else None
    if source is None or not source.is_file():
        pytest.skip(f"{name} not found: set LUISA_NB_LUISA_PROGRAMS (see this module's docstring)")
    shutil.copy(source, tmp_path / name)
    return tmp_path / name


def run(
    path: Path, monkeypatch, read: Callable[[dict[str, Any]], Any] = dict
) -> dict[str, Any] | Any:
    """Run the program as `luisa-nb run` does (``import luisa`` gives luisa_nb.luisa), in
    its folder; ``read`` of its globals, called while its device is still open."""
    monkeypatch.chdir(path.parent)
    monkeypatch.setattr(sys, "argv", [str(path)])
    try:
        with as_luisa():
            return read(runpy.run_path(str(path), run_name="__main__"))
    finally:
        luisa.del_device()


def test_helloworld(tmp_path, monkeypatch):
    run(program("test-helloworld.py", tmp_path), monkeypatch)
    size = F32(1024)
    ys, xs = np.mgrid[0:1024, 0:1024].astype(F32)
    u, v = (xs + F32(0.5)) / size, (ys + F32(0.5)) / size
    expected = unorm8(np.stack([u, v, np.full_like(u, 0.5), np.ones_like(u)], axis=-1))
    np.testing.assert_array_equal(png_pixels((tmp_path / "helloworld.png").read_bytes()), expected)


def test_mandelbrot(tmp_path, monkeypatch):
    image = pytest.importorskip("PIL.Image", reason="mandelbrot.py saves its picture with Pillow")
    run(program("mandelbrot.py", tmp_path), monkeypatch)
    pixels = np.asarray(image.open(tmp_path / "mandelbrot.png").convert("RGBA"))
    n, stride = 4096, 17  # every 17th row and column
    ys, xs = np.mgrid[0:n:stride, 0 : 2 * n : stride]
    escapes = mandelbrot_escapes(xs, ys, n, 50)
    # luisa-python's rules: after a loop that ran to its end, `itr` is max_iter (50), so
    # pixels inside the set are 0 (Python would leave 49, and 5 / 255)
    itr = np.where(escapes >= 0, escapes, 50)
    grey = unorm8(F32(1) - itr.astype(F32) / F32(50))
    assert (grey[escapes < 0] == 0).all() and (escapes < 0).any()
    np.testing.assert_array_equal(pixels[::stride, ::stride, 0], grey)
    assert (pixels[..., 3] == 255).all()


def test_fractal_headless(tmp_path, monkeypatch, capsys):
    gui = run(program("fractal.py", tmp_path), monkeypatch)["gui"]
    assert "frames = 1" in capsys.readouterr().out
    assert len(gui.frames) == 1 and gui.image.shape == (320, 640, 4)
    close = np.isclose(gui.image[..., 0], julia(640, 320, t=0.0), atol=1e-6)
    assert close.mean() > 0.995  # the program paints at the elapsed time, about 0 s


def test_buffer_of_structs(tmp_path, monkeypatch, capsys):
    run(program("test-buffer.py", tmp_path), monkeypatch)
    output = capsys.readouterr().out
    assert "buffer byte size(should be 32 * 32 = 1024): 1024" in output
    values = np.array(output.split("result:")[1].split()[:256], dtype=F32).reshape(32, 8)
    index = np.arange(256, dtype=F32).reshape(32, 8)
    expected = np.concatenate([np.sin(index[:, :3]), index[:, 3:4], np.cos(index[:, 4:])], axis=1)
    np.testing.assert_allclose(values, expected, rtol=0, atol=2e-6)


def test_bindless_slot_with_an_image_and_a_buffer(tmp_path, monkeypatch):
    """Slot 55 holds a 2D image and then also a buffer; the kernel samples the image."""
    gui = run(program("test-bindless.py", tmp_path), monkeypatch)["gui"]
    assert len(gui.frames) == 1
    np.testing.assert_array_equal(gui.image, mirrored_uv_display(1024, 1024))


def life_step(alive: np.ndarray) -> np.ndarray:
    """One generation of Conway's rule on a torus."""
    shifts = [(dy, dx) for dy in (-1, 0, 1) for dx in (-1, 0, 1) if (dy, dx) != (0, 0)]
    neighbours = sum(np.roll(alive, shift, axis=(0, 1)).astype(int) for shift in shifts)
    return (alive & (neighbours == 2)) | (neighbours == 3)


def test_game_of_life(tmp_path, monkeypatch):
    """uint images of byte storage, ``uint()``, ``ite`` and a window loop: each frame
    shows the generation before it, upsampled 8 times."""
    monkeypatch.setenv("LUISA_NB_GUI_FRAMES", "3")
    names = run(program("test-game-of-life.py", tmp_path), monkeypatch)
    alive = (names["host_image"].reshape(128, 128) & 0xFF) == 255
    frames = names["gui"].frames
    assert len(frames) == 3 and alive.any()
    for frame in frames:
        expected = np.repeat(np.repeat(alive, 8, axis=0), 8, axis=1)
        assert frame.shape == (1024, 1024, 4)
        np.testing.assert_array_equal(frame[..., 0] == 255, expected)
        np.testing.assert_array_equal(frame[..., 3], 255)
        alive = life_step(alive)


def test_raymarch_downsamples_with_barriers_in_a_loop(tmp_path, monkeypatch):
    """The shadertoy raymarcher renders at twice the size; ``downsample_tex`` averages each
    2x2 block through a shared array, with ``sync_block()`` inside a ``while`` loop. The
    window shows what it made: the average of the rendered bytes, in its order."""
    monkeypatch.setenv("LUISA_NB_GUI_FRAMES", "1")
    path = program("test-raymarch.py", tmp_path)
    rendered, frames = run(
        path, monkeypatch, lambda names: (names["render_image"].numpy(), names["gui"].frames)
    )
    colors = rendered[..., :3].astype(F32) / F32(255)
    assert colors.shape == (1440, 2560, 3) and len(np.unique(rendered)) > 100
    corners = [colors[y::2, x::2] for x, y in ((0, 0), (0, 1), (1, 0), (1, 1))]
    average = (((corners[0] + corners[1]) + corners[2]) + corners[3]) * F32(0.25)
    [frame] = frames
    np.testing.assert_array_equal(frame[..., :3], unorm8(average))


def test_mpm_falls_freely(tmp_path, monkeypatch):
    """The MLS-MPM simulation (a matrix divided by a scalar, atomics, 3D grids): a cube of
    particles released at rest falls freely for 75 substeps, so its mean velocity is
    gravity times the time passed and it keeps its place and volume."""
    monkeypatch.setenv("LUISA_NB_GUI_FRAMES", "3")

    def state(names: dict[str, Any]) -> tuple[np.ndarray, ...]:
        vectors = [names[name].numpy().view(F32).reshape(-1, 4)[:, :3] for name in "vx"]
        return (*vectors, names["J"].numpy(), 3 * names["n_steps"] * names["dt"])

    velocity, position, volume, elapsed = run(program("test-mpm.py", tmp_path), monkeypatch, state)
    np.testing.assert_allclose(velocity.mean(axis=0), [0, -9.8 * elapsed, 0], atol=1e-5)
    assert position.min() > 0.19 and position.max() < 0.61
    np.testing.assert_allclose(volume, 1, atol=1e-4)


def test_indirect_dispatch_runs_each_recorded_entry(tmp_path, monkeypatch, capsys):
    """One kernel sets the count, one records 16 entries (entry i: i threads of kernel id
    i, blocks of 64), and the dispatch with the buffer as its size adds each entry's
    dispatch size at its kernel id: element i is i * i. The program's commented-out
    variant, from ``dispatch_buffer_offset=15``, runs entry 15 only."""
    path = program("test-indirect.py", tmp_path)
    squares = " ".join(str(i * i) for i in range(16))
    run(path, monkeypatch)
    output = capsys.readouterr().out
    assert f"Result: {squares} " in output.splitlines()
    assert f"Result should be: {squares}" in output.splitlines()
    source = path.read_text()
    call = "dispatch(buffer, dispatch_size=dispatch_buffer)\n"
    offset = "dispatch(buffer, dispatch_size=dispatch_buffer, dispatch_buffer_offset=15)\n"
    assert source.count(call) == 1
    path.write_text(source.replace(call, offset))
    run(path, monkeypatch)
    assert f"Result: {'0 ' * 15}225 " in capsys.readouterr().out.splitlines()


# The programs real luisa-python 0.3.7 completed on its CPU backend, of the 148 collected
# (`bench_luisa_originals.py run`); the others stop there (docs/luisa.md says why).
COMPLETED_BY_REAL = [
    "src_py_glass",
    "src_py_test-2022-05-04-778e1209",
    "src_py_test-2022-05-04-9b6e8cc9",
    "src_py_test-2022-05-05-8d0fe469",
    "src_py_test-2022-05-06-ca36d9de",
    "src_py_test-2022-05-11-16c38d59",
    "src_py_test-2022-05-11-41b9dae8",
    "src_py_test-2022-05-11-716868d6",
    "src_py_test-2022-05-11-c88afe9a",
    "src_py_test-2022-05-12-0c8109d0",
    "src_py_test-2022-05-12-14b10716",
    "src_py_test-2022-05-12-20925584",
    "src_py_test-2022-05-12-bf25ef46",
    "src_py_test-2022-05-12-eb7dfa7b",
    "src_py_tests_glass",
    "src_tests_python_test-autodiff",
    "src_tests_python_test-buffer",
    "src_tests_python_test-helloworld",
]
SURVEY = Path(__file__).parents[2] / "benchmarks" / "bench_luisa_originals.py"


def collected_program(name: str) -> tuple[dict[str, Any], Path]:
    """The survey's functions and the folder of collected program ``name``; skips where
    the programs or real luisa-python are missing."""
    from tests.luisa.running import require_real_luisa

    folder = os.environ.get("LUISA_NB_LUISA_ORIGINALS")
    programs = Path(folder) / "programs" if folder else None
    if programs is None or not (programs / name).is_dir():
        pytest.skip(f"{name} not found: set LUISA_NB_LUISA_ORIGINALS (see this module's docstring)")
    require_real_luisa()
    return runpy.run_path(str(SURVEY)), programs / name


@pytest.mark.parametrize("name", COMPLETED_BY_REAL)
def test_collected_program_agrees_with_real_luisa_python(name):
    survey, program = collected_program(name)
    theirs = survey["run_one"](program, True, 300)
    assert theirs["status"] == 0, theirs["error"]
    ours = survey["run_one"](program, False, 300)
    assert ours["status"] == 0, ours["error"]
    assert survey["same_lines"](ours["lines"], theirs["lines"]), (ours["lines"], theirs["lines"])
    assert survey["same_files"](ours, theirs)


FOUND_WHEN_TRACED = {
    # writes its array after copy_from() and before execute(), and says so: "write array
    # after copy_from command is fine here"; the upload sends the new bytes, as reported
    "src_tests_python_test-buffer": ["HOST_WRITE_IN_FLIGHT"],
}


@pytest.mark.parametrize("name", COMPLETED_BY_REAL)
def test_collected_program_traced_on_real_luisa_python_is_unchanged(name):
    """Under ``luisa-nb run --device luisa:cpu`` (real luisa-python, instrumented) the
    program prints and writes what it does uninstrumented, and no finding is reported
    but the one a program has on purpose."""
    survey, program = collected_program(name)
    plain = survey["run_one"](program, True, 300)
    assert plain["status"] == 0, plain["error"]
    traced = survey["run_one"](program, True, 300, traced=True)
    assert traced["status"] == 0, traced["error"]
    assert traced["commands"] is not None, "luisa-nb run printed no report"
    assert traced["findings"] == FOUND_WHEN_TRACED.get(name, [])
    assert survey["same_lines"](traced["lines"], plain["lines"]), (traced["lines"], plain["lines"])
    assert survey["same_files"](traced, plain)
