"""Compiler discovery, the disk cache, build failures and the Python-mode fallback."""

from __future__ import annotations

import os
import shutil
import subprocess
import warnings

import numpy as np
import pytest

from luisa_nb.errors import KernelBuildError, LuisaNbWarning
from luisa_nb.kernels import KernelDefinition, compiler_available, definition
from luisa_nb.kernels.c import toolchain

from . import sample_kernels
from .helpers import FakeBuffer, run

needs_compiler = pytest.mark.skipif(not compiler_available(), reason="no C compiler")


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("LUISA_NB_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture
def compiler_calls(monkeypatch):
    """Records compiler invocations (not ``--version`` queries)."""
    calls = []
    real_run = subprocess.run

    def recording_run(command, *args, **kwargs):
        if "--version" not in command:
            calls.append(command)
        return real_run(command, *args, **kwargs)

    monkeypatch.setattr(toolchain.subprocess, "run", recording_run)
    return calls


@pytest.fixture
def no_compiler(monkeypatch):
    monkeypatch.setenv("CC", "/nonexistent/cc")
    monkeypatch.setenv("PATH", "")
    monkeypatch.setattr(definition, "_fallback_warned", False)


def saxpy_arguments(size: int = 50):
    x = FakeBuffer(np.arange(size, dtype=np.float32))
    y = FakeBuffer(np.ones(size, np.float32))
    return [np.float32(3.0), x, y, FakeBuffer(np.zeros(size, np.float32))]


@needs_compiler
def test_second_build_uses_the_cache(cache_dir, compiler_calls) -> None:
    first = run(KernelDefinition(sample_kernels.saxpy, mode="c"), 50, *saxpy_arguments())
    assert first.wait_optimised(timeout=60)
    assert len(compiler_calls) == 1  # the fast build; the optimised one ran in the background
    libraries = list(cache_dir.glob("*.so"))
    assert len(libraries) == 1 and len(list(cache_dir.glob("*.c"))) == 1
    modified = libraries[0].stat().st_mtime_ns
    arguments = saxpy_arguments()
    run(KernelDefinition(sample_kernels.saxpy, mode="c"), 50, *arguments)
    assert len(compiler_calls) == 1
    assert libraries[0].stat().st_mtime_ns == modified
    assert not list(cache_dir.glob("*.tmp"))
    np.testing.assert_array_equal(arguments[3].array, 3 * np.arange(50) + 1)


@needs_compiler
def test_other_flags_or_source_rebuild(cache_dir, compiler_calls, monkeypatch) -> None:
    run(KernelDefinition(sample_kernels.saxpy, mode="c"), 50, *saxpy_arguments())
    assert toolchain.finish_background_builds(timeout=60)
    monkeypatch.setattr(toolchain, "FLAGS", (*toolchain.FLAGS, "-DLNB_TEST_FLAG"))
    run(KernelDefinition(sample_kernels.saxpy, mode="c"), 50, *saxpy_arguments())
    assert toolchain.finish_background_builds(timeout=60)
    assert len(compiler_calls) == 2
    assert len(list(cache_dir.glob("*.so"))) == 2


def test_no_compiler_falls_back_to_python_with_one_warning(no_compiler, cache_dir) -> None:
    assert not compiler_available()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        arguments = saxpy_arguments()
        executable = run(KernelDefinition(sample_kernels.saxpy), 50, *arguments)
        run(KernelDefinition(sample_kernels.vecadd), 4, FakeBuffer(np.zeros(4, np.float32)))
    assert executable.mode == "python"
    fallback = [w for w in caught if issubclass(w.category, LuisaNbWarning)]
    assert len(fallback) == 1
    assert "no C compiler found" in str(fallback[0].message)
    np.testing.assert_array_equal(arguments[3].array, 3 * np.arange(50) + 1)


def test_c_mode_without_compiler_is_a_build_error(no_compiler) -> None:
    definition_c = KernelDefinition(sample_kernels.saxpy, mode="c")
    with pytest.raises(KernelBuildError, match="no C compiler found"):
        run(definition_c, 50, *saxpy_arguments())


def test_compiler_failure_reports_output_and_source(cache_dir, monkeypatch, tmp_path) -> None:
    fake = tmp_path / "broken-cc"
    fake.write_text("#!/bin/sh\necho 'fake compiler: internal error' >&2\nexit 3\n")
    fake.chmod(0o755)
    monkeypatch.setenv("CC", str(fake))
    with pytest.raises(KernelBuildError) as caught:
        run(KernelDefinition(sample_kernels.saxpy, mode="c"), 50, *saxpy_arguments())
    message = str(caught.value)
    assert "fake compiler: internal error" in message and "exit 3" in message
    source_path = next(cache_dir.glob("*.c"))
    assert str(source_path) in message
    assert "lnb_saxpy" in source_path.read_text()
    assert not list(cache_dir.glob("*.so*"))


def test_compiler_version_is_asked_once_per_installed_compiler(
    cache_dir, monkeypatch, tmp_path
) -> None:
    fake = tmp_path / "fake-cc"
    log = tmp_path / "asked.log"
    fake.write_text(f'#!/bin/sh\necho asked >> "{log}"\necho "fake cc 1.0"\n')
    fake.chmod(0o755)
    for _ in range(2):  # two processes: the second reads the first one's answer
        monkeypatch.setattr(toolchain, "_versions", {})
        assert toolchain.compiler_version([str(fake)]) == "fake cc 1.0\n"
    assert log.read_text().splitlines() == ["asked"]
    fake.write_text(fake.read_text().replace("1.0", "12.0"))
    monkeypatch.setattr(toolchain, "_versions", {})
    assert toolchain.compiler_version([str(fake)]) == "fake cc 12.0\n"
    assert log.read_text().splitlines() == ["asked", "asked"]


def test_cc_may_carry_arguments(monkeypatch) -> None:
    monkeypatch.setenv("CC", "sh -c true")
    assert toolchain.find_compiler()[1:] == ["-c", "true"]
    monkeypatch.setenv("CC", "/nonexistent/cc")
    assert toolchain.find_compiler() is None


def test_default_cache_directory(monkeypatch) -> None:
    monkeypatch.delenv("LUISA_NB_CACHE_DIR")
    assert toolchain.cache_directory().parts[-2:] == ("luisa_nb", "kernels") or (
        toolchain.cache_directory().name == "kernels"
    )


@pytest.mark.parametrize(
    ("user_environment", "expected"),
    [
        ({}, {"OMP_WAIT_POLICY": "passive"}),
        ({"OMP_WAIT_POLICY": "active"}, {"OMP_WAIT_POLICY": "active"}),
        ({"GOMP_SPINCOUNT": "1000"}, {"GOMP_SPINCOUNT": "1000"}),
    ],
)
def test_openmp_waits_passively_unless_the_user_chose(monkeypatch, user_environment, expected):
    for name in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT"):
        monkeypatch.delenv(name, raising=False)
    for name, value in user_environment.items():
        monkeypatch.setenv(name, value)
    toolchain.configure_openmp()
    chosen = {
        name: value
        for name in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")
        if (value := os.environ.get(name))
    }
    assert chosen == expected


@pytest.mark.skipif(shutil.which("clang") is None, reason="no clang")
def test_clang_builds_with_gccs_openmp_runtime(cache_dir, monkeypatch) -> None:
    monkeypatch.setenv("CC", "clang")
    assert "-fopenmp=libgomp" in toolchain.compiler_flags(toolchain.find_compiler())
    flags = toolchain.compiler_flags(toolchain.find_compiler(), toolchain.THREAD_BY_THREAD)
    assert flags[0] == "-O2" and not set(toolchain.GCC_ONLY) & set(flags)
    arguments = saxpy_arguments()
    run(KernelDefinition(sample_kernels.saxpy, mode="c"), 50, *arguments)
    expected = np.float32(3) * np.arange(50, dtype=np.float32) + np.float32(1)
    np.testing.assert_array_equal(arguments[3].array, expected)
