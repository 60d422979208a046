"""The system C compiler: finding it, building shared libraries, and the disk cache.

Libraries are cached under ``platformdirs.user_cache_dir("luisa_nb")/kernels`` (or
``$LUISA_NB_CACHE_DIR``), keyed by a hash of the source, the compiler's path and
version, and the flags; the compilers' ``--version`` answers are kept there too, in
``compilers/``. Builds write to a temporary file and ``os.replace`` it, so concurrent
builds of one kernel are safe.

A tiered compile (see ``c/tiers.py``) builds a kernel twice from one source: a fast build
(:data:`FAST_BUILD`) on the calling thread, never cached, and the optimised build in a
:class:`BackgroundBuild`, which ends in the cache. A background build still running when
the interpreter exits finishes on its own; nothing waits for it.
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import os
import shlex
import shutil
import subprocess
import tempfile
import threading
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import platformdirs

from luisa_nb.errors import ConfigurationError, KernelBuildError, LuisaNbWarning
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
TRACING_RAYS = ("-O2",)
"""Optimization of kernels that trace rays (see ``c/rays.py``): the traversal ran ~7%
slower without GCC's second scheduling pass and its "expensive optimizations"."""
FAST_BUILD = ("-O0",)
"""Optimization of the fast build of a tiered compile: the shading kernel of
benchmarks/luisa_shading.py built in 350 M compiler instructions at -O0 against 606 M at
-O2 (cc1 alone; 477 M at -O1), and ran ~10x slower, which the switch to the optimised build
within a launch bounds (see ``c/tiers.py``)."""
TIERED_VARIABLE = "LUISA_NB_TIERED_COMPILE"
"""``0`` builds each kernel once, optimised, on the calling thread; ``1`` (the default)
runs a kernel missing from the cache from a fast build until its optimised build is in."""
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
    build = _kernel_build(name, source, optimization)
    if build.library.exists():
        return build.library
    build.write_source()
    temporary = build.temporary()
    _compile(build, temporary, f"kernel {name!r}: the C compiler")
    os.replace(temporary, build.library)
    if counted:
        _count_compiler_run()
    return build.library


def tiered_compile() -> bool:
    """Whether kernels missing from the cache start from a fast build
    (``$LUISA_NB_TIERED_COMPILE``)."""
    value = os.environ.get(TIERED_VARIABLE, "1")
    if value not in ("0", "1"):
        raise ConfigurationError(
            f"{TIERED_VARIABLE}={value!r} is not understood; set it to 1 (a fast build first, "
            f"the optimised one in the background) or 0 (only the optimised build)"
        )
    return value == "1"


class _Build:
    """Where one build of ``source`` goes: the library's path in the cache (named by a hash
    of the source, the compiler and its version, the flags and libraries) and the command
    that builds it into ``output``."""

    def __init__(
        self,
        name: str,
        source: str,
        compiler: list[str],
        flags: Sequence[str],
        extension: str = "c",
        libraries: Sequence[str] = ("-lm",),
    ) -> None:
        key_text = "\0".join([source, *compiler, compiler_version(compiler), *flags, *libraries])
        digest = hashlib.sha256(key_text.encode()).hexdigest()[:24]
        self.directory = cache_directory()
        self.library = self.directory / f"{name}-{digest}.so"
        self.source = source
        self.source_path = self.directory / f"{name}-{digest}.{extension}"
        self._arguments = (compiler, flags, libraries)

    def write_source(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        _write_atomically(self.source_path, self.source.encode())

    def temporary(self, suffix: str = ".tmp") -> str:
        """A new empty file beside the library, for the compiler to write."""
        descriptor, temporary = tempfile.mkstemp(
            dir=self.directory, prefix=self.library.name, suffix=suffix
        )
        os.close(descriptor)
        return temporary

    def command(self, output: str) -> list[str]:
        compiler, flags, libraries = self._arguments
        return [*compiler, *flags, str(self.source_path), "-o", output, *libraries]


def _failure(
    what: str, build: _Build, command: list[str], code: int, output: str
) -> KernelBuildError:
    return KernelBuildError(
        f"{what} failed (exit {code}) on {build.source_path}\n$ {shlex.join(command)}\n{output}"
    )


def _compile(build: _Build, output: str, what: str) -> None:
    """Run the compiler into ``output`` on this thread; a failure removes ``output``."""
    command = build.command(output)
    try:
        result = subprocess.run(command, capture_output=True, text=True, check=False)
        if result.returncode != 0:
            raise _failure(what, build, command, result.returncode, result.stdout + result.stderr)
    except BaseException:
        _remove(output)
        raise


def _remove(path: str | Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


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
    build = _Build(name, source, compiler, flags, extension, libraries)
    if build.library.exists():
        return build.library, False
    build.write_source()
    temporary = build.temporary()
    _compile(build, temporary, what)
    os.replace(temporary, build.library)
    return build.library, True


def _kernel_build(name: str, source: str, optimization: Sequence[str]) -> _Build:
    compiler = find_compiler()
    if compiler is None:
        raise KernelBuildError(
            f"kernel {name!r}: no C compiler found (set CC or put `cc` on PATH), or use "
            f'mode="python"'
        )
    return _Build(name, source, compiler, compiler_flags(compiler, optimization), "c", LIBRARIES)


def cached_library(name: str, source: str, optimization: Sequence[str] = SIMD_LOOPS) -> Path | None:
    """The library :func:`build_library` would return, if the cache holds it already."""
    library = _kernel_build(name, source, optimization).library
    return library if library.exists() else None


def build_fast_library(name: str, source: str, optimization: Sequence[str] = SIMD_LOOPS) -> Path:
    """A library built from ``source`` with :data:`FAST_BUILD` on this thread, outside the
    cache: a temporary file beside the cached ones, for the caller to load and remove. Its
    source is the file of the ``optimization`` build's cache entry. Counted in
    :func:`compiler_runs`."""
    build = _kernel_build(name, source, FAST_BUILD)
    build.source_path = _kernel_build(name, source, optimization).source_path
    build.write_source()
    temporary = build.temporary(".fast.tmp")
    _compile(build, temporary, f"kernel {name!r}: the C compiler")
    _count_compiler_run()
    return Path(temporary)


MOVE_INTO_CACHE = (
    'temporary=$1 library=$2; shift 2; "$@" || { status=$?; rm -f "$temporary"; exit $status; }; '
    'exec mv -f "$temporary" "$library"'
)
"""The shell around a background build: it renames the library into the cache (one
``rename`` in the cache folder) when the compiler succeeds, and removes its output when it
fails, whether or not the process that started it is still there."""


class BackgroundBuild:
    """A library compiled by a child process that moves it into the cache when it succeeds
    (:data:`MOVE_INTO_CACHE`). A thread waits for it and then calls each :meth:`when_done`
    callback with this object: ``error`` is None and ``library`` holds the build, or
    ``error`` says why not. The interpreter does not wait for it at exit: the child finishes
    on its own, in a session of its own, and the cache holds either the whole library or
    none."""

    def __init__(self, build: _Build, what: str) -> None:
        self.library = build.library
        self.error: KernelBuildError | None = None
        self._build, self._what = build, what
        temporary = build.temporary()
        self._command = build.command(temporary)
        self._callbacks: list[Callable[[BackgroundBuild], None]] = []
        self._lock = threading.Lock()
        self._finished = threading.Event()
        self._ended = False
        try:
            self._process = subprocess.Popen(
                [
                    "/bin/sh",
                    "-c",
                    MOVE_INTO_CACHE,
                    "sh",
                    temporary,
                    str(self.library),
                    *self._command,
                ],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                start_new_session=True,
            )
        except OSError:
            _remove(temporary)
            raise
        threading.Thread(target=self._wait, name=f"build {self.library.name}", daemon=True).start()

    @property
    def done(self) -> bool:
        return self._finished.is_set()

    def _wait(self) -> None:
        output, _ = self._process.communicate()
        with self._lock:
            self._ended = True
            if self._process.returncode != 0:
                code = self._process.returncode
                self.error = _failure(self._what, self._build, self._command, code, output)
            callbacks, self._callbacks = self._callbacks, []
        try:
            for callback in callbacks:
                callback(self)
        finally:
            _forget(self)
            self._finished.set()

    def when_done(self, callback: Callable[[BackgroundBuild], None]) -> None:
        """Call ``callback(self)`` when the build has ended (now, if it has)."""
        with self._lock:
            if not self._ended:
                self._callbacks.append(callback)
                return
        callback(self)

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until the build ended and its callbacks returned; whether it did in time."""
        return self._finished.wait(timeout)


_background_builds: dict[Path, BackgroundBuild] = {}
_background_lock = threading.Lock()


def _forget(build: BackgroundBuild) -> None:
    with _background_lock:
        if _background_builds.get(build.library) is build:
            del _background_builds[build.library]


def start_background_build(
    name: str, source: str, optimization: Sequence[str] = SIMD_LOOPS
) -> BackgroundBuild:
    """The :class:`BackgroundBuild` of the library :func:`build_library` would build, started
    now, or the one of this process already running for it."""
    build = _kernel_build(name, source, optimization)
    with _background_lock:
        running = _background_builds.get(build.library)
        if running is None:
            build.write_source()
            what = f"kernel {name!r}: the C compiler (optimised build)"
            running = _background_builds[build.library] = BackgroundBuild(build, what)
        return running


def finish_background_builds(timeout: float | None = None) -> bool:
    """Wait for the background builds running now; whether all ended in time."""
    with _background_lock:
        running = list(_background_builds.values())
    return all(build.wait(timeout) for build in running)


def warn_background_failure(build: BackgroundBuild) -> None:
    """Say that ``build`` failed and its kernel keeps running from its fast build."""
    warnings.warn(
        f"{build.error}\nThe kernel keeps running from its fast (-O0) build; set "
        f"{TIERED_VARIABLE}=0 to see this error at the first dispatch",
        LuisaNbWarning,
        stacklevel=2,
    )


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
