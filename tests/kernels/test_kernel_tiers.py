"""Tiered compile: the fast build runs first, the optimised build takes over, both compute
the same bytes, and only the optimised build reaches the cache."""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

import luisa_nb as lnb
from luisa_nb.errors import ConfigurationError, KernelBuildError, LuisaNbWarning
from luisa_nb.kernels import KernelDefinition, compiler_available
from luisa_nb.kernels.c import toolchain
from luisa_nb.kernels.c.launch_runs import run_launches
from luisa_nb.kernels.executable import NEVER_CANCELLED

from . import sample_kernels
from .helpers import FakeBuffer, dims_of, run

pytestmark = pytest.mark.skipif(not compiler_available(), reason="no C compiler")

GATED_COMPILER = """\
#!/bin/sh
# The system compiler, except that a kernel build other than -O0 (the optimised one) notes its
# process id and waits until the gate file exists (or fails, with "fail" in the gate).
case " $* " in
  *" --version "*|*" -O0 "*|*lnb_fault_guard*) exec cc "$@" ;;
esac
echo $$ >> "{pids}"
while [ ! -e "{gate}" ]; do sleep 0.01; done
if grep -q fail "{gate}"; then echo "optimised build refused" >&2; exit 5; fi
exec cc "$@"
"""


class Gate:
    """A compiler whose optimised builds wait until :meth:`open` (see ``GATED_COMPILER``)."""

    def __init__(self, folder: Path) -> None:
        self.path, self.pids = folder / "gate", folder / "pids"
        self.compiler = folder / "gated-cc"
        self.compiler.write_text(GATED_COMPILER.format(pids=self.pids, gate=self.path))
        self.compiler.chmod(0o755)

    def open(self, content: str = "") -> None:
        self.path.write_text(content)

    def waiting_processes(self) -> list[int]:
        return [int(word) for word in self.pids.read_text().split()] if self.pids.exists() else []


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("LUISA_NB_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv(toolchain.TIERED_VARIABLE, raising=False)
    yield tmp_path / "cache"
    toolchain.finish_background_builds(timeout=60)


@pytest.fixture
def gate(tmp_path, monkeypatch, cache_dir):
    gate = Gate(tmp_path)
    monkeypatch.setenv("CC", str(gate.compiler))
    yield gate
    gate.open()  # let a build the test left waiting end
    toolchain.finish_background_builds(timeout=60)


def mandelbrot_arguments():
    return [FakeBuffer(np.zeros(64 * 48, np.int32)), 64, 48, 200]


def math_arguments():
    return [FakeBuffer(np.zeros(4000, np.float32)), FakeBuffer(np.zeros(4000, np.int32)), 0.0015]


def saxpy_arguments():
    x = FakeBuffer(np.linspace(-3, 3, 5000, dtype=np.float32))
    return [np.float32(1.7), x, FakeBuffer(np.sin(x.array)), FakeBuffer(np.zeros(5000, np.float32))]


KERNELS = {
    "mandelbrot": (sample_kernels.mandelbrot, (64, 48), mandelbrot_arguments),
    "math_functions": (sample_kernels.math_functions, 4000, math_arguments),
    "saxpy": (sample_kernels.saxpy, 5000, saxpy_arguments),
}


def kernel_files(cache_dir: Path) -> list[str]:
    """The names of the files in the cache folder but the fault guard's."""
    return sorted(
        path.name
        for path in cache_dir.iterdir()
        if path.is_file() and not path.name.startswith("lnb_fault_guard")
    )


def outputs(arguments) -> list[bytes]:
    return [argument.array.tobytes() for argument in arguments if isinstance(argument, FakeBuffer)]


@pytest.mark.parametrize("name", sorted(KERNELS))
@pytest.mark.parametrize("checks", [True, False])
def test_fast_and_optimised_builds_compute_the_same_bytes(gate, name, checks) -> None:
    function, size, make_arguments = KERNELS[name]
    definition = KernelDefinition(function, mode="c")
    fast_arguments = make_arguments()
    executable = run(definition, size, *fast_arguments, checks=checks)
    assert executable.tier == "fast"
    prepared_arguments = make_arguments()
    prepared = prepare(executable, size, prepared_arguments)  # holds the fast entry
    assert not [name for name in kernel_files(gate.path.parent / "cache") if name.endswith(".so")]
    gate.open()
    assert executable.wait_optimised(timeout=60)
    assert executable.tier == "optimised"
    optimised_arguments = make_arguments()
    assert run(definition, size, *optimised_arguments, checks=checks) is executable
    assert run_launches([prepared], NEVER_CANCELLED) == (1, None)  # forwarded to optimised
    expected = outputs(optimised_arguments)
    assert outputs(fast_arguments) == expected
    assert outputs(prepared_arguments) == expected
    assert any(np.frombuffer(data, np.uint8).any() for data in expected)


def prepare(executable, size, arguments):
    """A prepared launch of ``executable`` with ``arguments`` (as ``run`` launches)."""
    buffers = [argument for argument in arguments if isinstance(argument, FakeBuffer)]
    scalars = [argument for argument in arguments if not isinstance(argument, FakeBuffer)]
    scalars += [
        buffers[p.count_of].array.size
        for p in executable.scalar_parameters
        if p.count_of is not None
    ]
    handles = [buffer.array.ctypes.data for buffer in buffers]
    return executable.prepare(dims_of(size), handles, scalars)


def test_a_running_launch_takes_the_optimised_blocks(gate) -> None:
    """With only the block function handed over (as a launch that started on the fast
    build sees it), the fast entry runs its blocks on the optimised build: same bytes."""
    definition = KernelDefinition(sample_kernels.mandelbrot, mode="c")
    fast_arguments = mandelbrot_arguments()
    executable = run(definition, (64, 48), *fast_arguments)
    gate.open()
    assert executable.wait_optimised(timeout=60)
    fast = executable._fast_library
    assert ctypes.c_void_p.in_dll(fast, "lnb_mandelbrot_optimised_block").value
    ctypes.c_void_p.in_dll(fast, "lnb_mandelbrot_optimised_launch").value = None
    executable._use(fast)
    handed_arguments = mandelbrot_arguments()
    run(definition, (64, 48), *handed_arguments)
    assert outputs(handed_arguments) == outputs(fast_arguments)


def test_the_cache_keeps_only_the_optimised_build(gate, cache_dir) -> None:
    arguments = saxpy_arguments()
    executable = run(KernelDefinition(sample_kernels.saxpy, mode="c"), 5000, *arguments)
    assert executable.tier == "fast"
    (source,) = [name for name in kernel_files(cache_dir) if not name.endswith(".tmp")]
    assert source.endswith(".c")  # and the optimised build's temporary file
    gate.open()
    assert executable.wait_optimised(timeout=60)
    files = kernel_files(cache_dir)
    stem = files[0].removesuffix(".c")
    assert files == [f"{stem}.c", f"{stem}.so"]
    again = run(KernelDefinition(sample_kernels.saxpy, mode="c"), 5000, *saxpy_arguments())
    assert again.tier == "optimised"  # found in the cache: no fast build
    assert len(gate.waiting_processes()) == 1


def test_a_failed_optimised_build_keeps_the_fast_one_and_warns(gate) -> None:
    arguments = mandelbrot_arguments()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        executable = run(
            KernelDefinition(sample_kernels.mandelbrot, mode="c"), (64, 48), *arguments
        )
        gate.open("fail")
        assert not executable.wait_optimised(timeout=60)
        assert executable.tier == "fast"
        again = mandelbrot_arguments()
        run(KernelDefinition(sample_kernels.mandelbrot, mode="c"), (64, 48), *again)
        assert toolchain.finish_background_builds(timeout=60)  # the second one fails too
    messages = [str(w.message) for w in caught if issubclass(w.category, LuisaNbWarning)]
    assert len(messages) == 2 and "optimised build refused" in messages[0]
    assert toolchain.TIERED_VARIABLE in messages[0]
    assert outputs(again) == outputs(arguments)


def test_tiering_off_builds_once_optimised(cache_dir, monkeypatch) -> None:
    monkeypatch.setenv(toolchain.TIERED_VARIABLE, "0")
    executable = run(KernelDefinition(sample_kernels.saxpy, mode="c"), 5000, *saxpy_arguments())
    assert executable.tier == "optimised"
    assert [Path(name).suffix for name in kernel_files(cache_dir)] == [".c", ".so"]


def test_a_tiering_setting_not_understood_is_rejected(cache_dir, monkeypatch) -> None:
    monkeypatch.setenv(toolchain.TIERED_VARIABLE, "yes")
    with pytest.raises(ConfigurationError, match="LUISA_NB_TIERED_COMPILE='yes'"):
        run(KernelDefinition(sample_kernels.saxpy, mode="c"), 50, *saxpy_arguments())


def test_a_compiler_failure_surfaces_in_the_fast_build(cache_dir, monkeypatch, tmp_path) -> None:
    broken = tmp_path / "broken-cc"
    broken.write_text('#!/bin/sh\ncase " $* " in *" --version "*) exec cc "$@";; esac\nexit 4\n')
    broken.chmod(0o755)
    monkeypatch.setenv("CC", str(broken))
    out = lnb.create_device("cpu").create_buffer(16, np.float32)

    @lnb.kernel
    def fill(buffer):
        buffer.write(lnb.dispatch_id().x, 2.0)

    with pytest.raises(KernelBuildError, match="exit 4"):
        fill.dispatch(16, out)  # raised before a command exists
    assert not list(cache_dir.glob("*.so*"))
    assert toolchain.finish_background_builds(timeout=0)


EXIT_AFTER_FIRST_DISPATCH = """\
import numpy as np
import luisa_nb as lnb

out = lnb.create_device("cpu").create_buffer(1000, np.float32)

@lnb.kernel
def ramp(buffer):
    i = lnb.dispatch_id().x
    buffer.write(i, float(i) * 0.5)

ramp.dispatch(1000, out)
print(out.numpy()[:4].tolist())
"""


def test_exit_right_after_the_first_dispatch(gate, cache_dir, tmp_path) -> None:
    """The process ends without waiting for its optimised build, which goes on alone and
    puts the whole library in the cache when it is done, never part of one."""
    script = tmp_path / "first_dispatch.py"
    script.write_text(textwrap.dedent(EXIT_AFTER_FIRST_DISPATCH))
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=environment, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[0.0, 0.5, 1.0, 1.5]"
    assert len(gate.waiting_processes()) == 1  # the optimised build, still held at the gate
    (source,) = [name for name in kernel_files(cache_dir) if not name.endswith(".tmp")]
    library = cache_dir / source.replace(".c", ".so")
    assert not library.exists()
    gate.open()
    assert eventually(library.exists)
    assert eventually(lambda: kernel_files(cache_dir) == [source, library.name])
    assert ctypes.CDLL(str(library)).lnb_ramp_launch  # a whole library


def eventually(condition) -> bool:
    """Whether ``condition()`` holds within about a minute of polling."""
    for _ in range(6000):
        if condition():
            return True
        time.sleep(0.01)
    return False


def test_background_build_reuses_a_running_one(gate) -> None:
    source = "int lnb_twice(int x) { return 2 * x; }\n"
    first = toolchain.start_background_build("lnb_twice", source)
    assert toolchain.start_background_build("lnb_twice", source) is first
    gate.open()
    assert first.wait(timeout=60) and first.error is None and first.library.exists()
    assert toolchain.start_background_build("lnb_twice", source) is not first  # a new one
