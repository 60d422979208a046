"""The system C compiler: finding it, building shared libraries, and the disk cache.

Libraries are cached under ``platformdirs.user_cache_dir("luisa_nb")/kernels`` (or
``$LUISA_NB_CACHE_DIR``), keyed by a hash of the source, the compiler's path and
version, and the flags; the compilers' ``--version`` answers are kept there too, in
``compilers/``. Builds write to a temporary file and ``os.replace`` it, so concurrent
builds of one kernel are safe.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shlex
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import platformdirs

from luisa_nb.errors import KernelBuildError
from luisa_nb.kernels.checks import LaunchRecord

FLAGS = (
    "-std=gnu11",
    "-march=native",
    "-fopenmp",
    "-fPIC",
    "-shared",
    "-fno-math-errno",
    "-ffp-contract=off",
    "-fwrapv",
    "-Werror=implicit-function-declaration",
    "-pipe",
)
SIMD_LOOPS = ("-O3",)
"""Optimization of kernels whose block runs its threads as a simd loop: vectorizing
across threads needs -O3 (``checks="nan"`` vecadd ran 8x slower at -O2)."""
THREAD_BY_THREAD = ("-O2", "-fno-schedule-insns2", "-fno-expensive-optimizations")
"""Optimization of kernels whose threads run one by one (bodies with loops or returns):
-O2 without the second scheduling pass and without what GCC calls "minor optimizations
that are relatively expensive" runs them as fast and builds with ~13% fewer instructions."""
GCC_ONLY = ("-fno-schedule-insns2", "-fno-expensive-optimizations")
LIBRARIES = ("-nostdlib", "-lgomp", "-lgcc")
"""What a kernel library links: libgomp and libgcc's helpers. Not the C runtime's start
files, libc or libm: every Python process has loaded libc and libm already (the
interpreter links both), and the dynamic loader binds a kernel's ``memset`` or ``powf`` to
them as it would through a ``DT_NEEDED`` entry. Linking them cost ld 49 M instructions
(libc's linker script and the start files) and 17 M (libm's symbols); it now takes 12 M."""
OPENMP_ENVIRONMENT = {"OMP_WAIT_POLICY": "passive"}
_versions: dict[str, str] = {}
_versions_lock = threading.Lock()
_compiler_runs = 0


def find_compiler() -> list[str] | None:
    """The compiler command: ``$CC`` (may carry arguments), else ``cc`` on ``PATH``."""
    words = shlex.split(os.environ.get("CC", "")) or ["cc"]
    path = shutil.which(words[0])
    return [path, *words[1:]] if path else None


def compiler_available() -> bool:
    """Whether a C compiler exists (``$CC``, else ``cc`` on ``PATH``)."""
    return find_compiler() is not None


def compiler_version(compiler: list[str]) -> str:
    """The compiler's ``--version`` output, kept in memory and on disk (see
    :func:`_stored_version`)."""
    key = "\0".join(compiler)
    with _versions_lock:
        if key not in _versions:
            _versions[key] = _stored_version(compiler)
        return _versions[key]


def _stored_version(compiler: list[str]) -> str:
    """``compiler --version``, asked once per installed compiler: the answer is stored in
    the cache folder under a hash of the command and of the size and modification time of
    the executable it resolves to (a wrapper's, such as ccache's), so an upgrade or an
    ``alternatives`` switch asks again. Asking cost each process ~2 ms (mostly starting a
    process) in its first build."""
    executable = Path(compiler[0]).resolve()
    status = executable.stat()
    identity = "\0".join([*compiler, str(executable), str(status.st_size), str(status.st_mtime_ns)])
    digest = hashlib.sha256(identity.encode()).hexdigest()[:24]
    stored = cache_directory() / "compilers" / f"{digest}.txt"
    try:
        return stored.read_text()
    except OSError:
        pass
    result = subprocess.run([*compiler, "--version"], capture_output=True, text=True, check=False)
    version = result.stdout + result.stderr
    if result.returncode == 0:
        stored.parent.mkdir(parents=True, exist_ok=True)
        _write_atomically(stored, version.encode())
    return version


def compiler_flags(
    compiler: list[str], optimization: Sequence[str] = SIMD_LOOPS
) -> tuple[str, ...]:
    """``optimization`` and ``FLAGS`` for ``compiler``: clang takes GCC's OpenMP runtime
    (libgomp), which every GCC install has, instead of its own libomp, which is often
    missing, and not the flags only GCC knows."""
    if "clang" not in compiler_version(compiler):
        return (*optimization, *FLAGS)
    flags = ("-fopenmp=libgomp" if flag == "-fopenmp" else flag for flag in FLAGS)
    return (*(flag for flag in optimization if flag not in GCC_ONLY), *flags)


def cache_directory() -> Path:
    """Where compiled kernels live; ``$LUISA_NB_CACHE_DIR`` overrides the default."""
    override = os.environ.get("LUISA_NB_CACHE_DIR")
    if override:
        return Path(override)
    return Path(platformdirs.user_cache_dir("luisa_nb")) / "kernels"


def _write_atomically(path: Path, data: bytes) -> None:
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    with os.fdopen(descriptor, "wb") as file:
        file.write(data)
    os.replace(temporary, path)


def build_library(
    name: str, source: str, *, optimization: Sequence[str] = SIMD_LOOPS, counted: bool = True
) -> Path:
    """The path of a shared library built from ``source`` with the ``optimization`` flags
    (:data:`SIMD_LOOPS` or :data:`THREAD_BY_THREAD`), compiling only on a cache miss;
    ``counted``: a build adds to :func:`compiler_runs`."""
    compiler = find_compiler()
    if compiler is None:
        raise KernelBuildError(
            f"kernel {name!r}: no C compiler found (set CC or put `cc` on PATH), or use "
            f'mode="python"'
        )
    library, built = cached_build(
        name,
        source,
        compiler,
        compiler_flags(compiler, optimization),
        f"kernel {name!r}: the C compiler",
        libraries=LIBRARIES,
    )
    if built and counted:
        _count_compiler_run()
    return library


def cached_build(
    name: str,
    source: str,
    compiler: list[str],
    flags: Sequence[str],
    what: str,
    extension: str = "c",
    libraries: Sequence[str] = ("-lm",),
) -> tuple[Path, bool]:
    """The shared library ``compiler`` builds from ``source`` with ``flags``, linking
    ``libraries``, cached on disk by a hash of all four and the compiler's version, and
    whether it was built now (else found in the cache). A failure is a
    ``KernelBuildError`` that starts with ``what`` and shows the command and the
    compiler's output."""
    key_text = "\0".join([source, *compiler, compiler_version(compiler), *flags, *libraries])
    digest = hashlib.sha256(key_text.encode()).hexdigest()[:24]
    directory = cache_directory()
    library = directory / f"{name}-{digest}.so"
    if library.exists():
        return library, False
    directory.mkdir(parents=True, exist_ok=True)
    source_path = directory / f"{name}-{digest}.{extension}"
    _write_atomically(source_path, source.encode())
    descriptor, temporary = tempfile.mkstemp(dir=directory, prefix=library.name, suffix=".tmp")
    os.close(descriptor)
    command = [*compiler, *flags, str(source_path), "-o", temporary, *libraries]
    try:
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise KernelBuildError(
                f"{what} failed (exit {result.returncode}) on {source_path}\n"
                f"$ {shlex.join(command)}\n{result.stdout}{result.stderr}"
            )
        os.replace(temporary, library)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)
    return library, True


def _count_compiler_run() -> None:
    global _compiler_runs
    with _versions_lock:
        _compiler_runs += 1


def compiler_runs() -> int:
    """How many libraries this process has built (not found in the cache) so far."""
    return _compiler_runs


def configure_openmp() -> None:
    """Set ``OPENMP_ENVIRONMENT`` unless the user set any OpenMP wait variable.

    Idle OpenMP threads then sleep instead of spinning, which keeps kernels fast when
    another process uses a core (see "OpenMP" in docs/kernels.md). libgomp reads the
    environment once, when the first kernel library loads it; if another library loaded
    libgomp earlier, its settings stay.
    """
    if any(name in os.environ for name in ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT")):
        return
    os.environ.update(OPENMP_ENVIRONMENT)


def load_library(path: Path) -> ctypes.CDLL:
    """The kernel library at ``path``, loaded after :func:`configure_openmp`."""
    configure_openmp()
    return ctypes.CDLL(str(path))


def launch_function(library: ctypes.CDLL, symbol: str) -> Callable[[bytes, Any], None]:
    """``symbol`` from ``library`` as ``void f(const void *arguments, lnb_launch *record)``;
    call it with the packed arguments and ``ctypes.byref`` of a :class:`LaunchRecord`."""
    function = getattr(library, symbol)
    function.argtypes = [ctypes.c_char_p, ctypes.POINTER(LaunchRecord)]
    function.restype = None
    return function


def load_launch_function(path: Path, symbol: str) -> Callable[[bytes, Any], None]:
    """:func:`launch_function` of the library at ``path``."""
    return launch_function(load_library(path), symbol)
