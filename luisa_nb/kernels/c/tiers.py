"""Tiered compile: a kernel missing from the disk cache starts from a fast build.

The first dispatch of a kernel waits for its build. When the cache lacks the kernel's
optimised library, :func:`start_tiers` builds its source with ``toolchain.FAST_BUILD``
(``-O0``) on the calling thread, loads that, and then starts the optimised build in the
background (``toolchain.BackgroundBuild``): one after the other, so that on two cores the
fast build has a core to itself and the optimised build runs beside the first launch. A
compile error still surfaces in the fast build, before anything is enqueued.

When the optimised build is in the cache, :func:`hand_over` loads it and writes its launch
entry and block function into the fast library (``<entry>_optimised_launch``,
``<entry>_optimised_block``; see ``c/launch.py``): launches that start later, prepared ones
included, go to the optimised entry, and a launch running on the fast build runs the blocks
it claims from then on with the optimised block function. Both builds come from one source
with the same floating-point flags (``-ffp-contract=off``, no fast-math), so they compute
the same bytes.

The fast build is never cached: its temporary file is removed once loaded. The optimised
build reaches the cache whole or not at all, even if this process ends first. Kernels with
device prints build once, optimised (their print log is a global of the library).
"""

from __future__ import annotations

import ctypes
import os

from luisa_nb.kernels.c.toolchain import (
    BackgroundBuild,
    build_fast_library,
    load_library,
    start_background_build,
)


def start_tiers(
    name: str, source: str, optimization: tuple[str, ...]
) -> tuple[ctypes.CDLL, BackgroundBuild]:
    """The fast build of ``source`` loaded, and the optimised build (``optimization``)
    started; raises ``KernelBuildError`` if the fast build fails (then nothing started)."""
    path = build_fast_library(name, source, optimization)
    try:
        fast = load_library(path)
    finally:
        os.unlink(path)
    return fast, start_background_build(name, source, optimization)


def hand_over(fast: ctypes.CDLL, optimised: ctypes.CDLL, entry_name: str, launch_name: str) -> None:
    """Make ``fast`` run its later blocks and launches on ``optimised``: the block function
    first, so that a launch that starts on the optimised entry finds it too."""
    own_block = ctypes.c_void_p.in_dll(optimised, f"{entry_name}_own_block").value
    launch = ctypes.cast(getattr(optimised, launch_name), ctypes.c_void_p).value
    ctypes.c_void_p.in_dll(fast, f"{entry_name}_optimised_block").value = own_block
    ctypes.c_void_p.in_dll(fast, f"{entry_name}_optimised_launch").value = launch
