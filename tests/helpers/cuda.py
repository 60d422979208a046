"""What the CUDA tests share (a test helper, not part of the package): whether NVRTC can
compile here, which needs no GPU, and a stand-in for CuPy's NVRTC bindings when the
NVRTC library cannot be found."""

from __future__ import annotations

import pytest

from luisa_nb.errors import BackendUnavailableError
from luisa_nb.kernels.cuda.nvrtc import nvrtc_version


def nvrtc_missing() -> str | None:
    """Why NVRTC cannot compile here, or None when it can."""
    try:
        nvrtc_version()
    except BackendUnavailableError as error:
        return str(error)
    return None


NVRTC_MISSING = nvrtc_missing()
needs_nvrtc = pytest.mark.skipif(NVRTC_MISSING is not None, reason=NVRTC_MISSING or "")


def nvrtc_library_not_found() -> tuple[int, int]:
    """``cupy.cuda.nvrtc.getVersion`` where CuPy cannot find the NVRTC library."""
    raise RuntimeError('Failure finding "libnvrtc.so.13 or libnvrtc.so.12"')
