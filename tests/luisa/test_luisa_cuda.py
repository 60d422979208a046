"""Real luisa-python's CUDA backend through ``%luisa_device luisa:cuda``: the seed traced
where a GPU and its driver let the backend start; elsewhere, a one-line refusal that
leaves the process alive (luisa-python's own ``init("cuda")`` aborts it there). Each
scenario runs in its own process, since luisa-python initializes once per process."""

from __future__ import annotations

import functools
import json

import pytest

from luisa_nb.errors import LuisaNbError
from luisa_nb.runtime.luisa_backends import check_backend_starts
from tests.luisa.running import require_real_luisa, run_python

SHELL = r"""
import json, sys
from IPython.core.interactiveshell import InteractiveShell
from IPython.core.error import UsageError
from traitlets.config import Config
import luisa_nb as lnb

config = Config()
config.HistoryManager.hist_file = ":memory:"
shell = InteractiveShell.instance(config=config)
shell.run_line_magic("load_ext", "luisa_nb")
refused = None
try:
    shell.run_line_magic("luisa_device", sys.argv[1])
except UsageError as error:
    refused = str(error)
    shell.run_line_magic("luisa_device", "luisa:cpu")
shell.run_cell('''
import numpy as np
import luisa
n = 1024
z = luisa.Buffer(n, float)
z_data = np.arange(n, dtype=np.float32)
@luisa.func
def vecadd(z):
    i = dispatch_id().x
    z.write(i, z.read(i) + 1000.0 * i)
''')
shell.run_cell_magic("luisa_trace", "", '''
z.copy_from(z_data)
vecadd(z, dispatch_size=n)
z.copy_to(z_data, sync=False)
z.copy_from(z_data)
''')
trace = lnb.last_trace()
print(json.dumps({
    "refused": refused,
    "devices": sorted({info.device for info in trace.buffers.values()}),
    "kinds": [hazard.kind.value for hazard in trace.hazards],
    "staged": shell.user_ns["z"].numpy()[:4].tolist(),
}), flush=True)
"""


@functools.cache
def cuda_unavailable_reason() -> str | None:
    require_real_luisa()
    try:
        check_backend_starts("cuda")
    except LuisaNbError as error:
        return str(error)
    return None


def run_shell(device: str) -> dict:
    output = run_python("-c", SHELL, device, timeout=180)
    return json.loads(output.strip().splitlines()[-1])


def test_luisa_cuda_without_a_gpu_is_refused_and_the_process_goes_on():
    reason = cuda_unavailable_reason()
    if reason is None:
        pytest.skip("CUDA starts here: test_the_seed_is_traced_on_luisa_cuda covers it")
    result = run_shell("luisa:cuda")
    assert result["refused"].startswith("real luisa-python cannot start backend 'cuda' here: ")
    assert "or luisa:cpu" in result["refused"]
    assert result["devices"] == ["luisa:cpu"], "the refusal left luisa-python unstarted"
    assert result["kinds"] == ["STALE_UPLOAD"]


def test_the_seed_is_traced_on_luisa_cuda():
    reason = cuda_unavailable_reason()
    if reason is not None:
        pytest.skip(reason)
    result = run_shell("luisa:cuda")
    assert result["refused"] is None and result["devices"] == ["luisa:cuda"]
    # the trace reports what happened to the bytes: stale where the re-upload sent z's
    # old host bytes (z = 0, 1, 2, 3 rather than 0, 1001, 2002, 3003)
    stale = result["staged"] == [0.0, 1.0, 2.0, 3.0]
    assert ("STALE_UPLOAD" in result["kinds"]) == stale
    assert set(result["kinds"]) <= {"STALE_UPLOAD", "LATENT_STALE_UPLOAD"}


def test_a_cuda_probe_failure_names_the_missing_library():
    from luisa_nb.runtime.luisa_backends import failure_reason

    log = (
        "[console] [warning] Failed to load dynamic module 'liblc-backend-cuda.so', reason: "
        "libcuda.so.1: cannot open shared object file: No such file or directory. "
        "[/project/src/core/platform.cpp:228]\n"
        "[console] [error] Assertion 'm.module' failed: Failed to load backend 'cuda'. "
        "[/project/src/runtime/context.cpp:84]\n"
    )
    assert failure_reason(log, -6) == (
        "libcuda.so.1: cannot open shared object file: No such file or directory"
    )
    assert failure_reason("NameError: backend 'x' is not installed.\n", 1) == (
        "NameError: backend 'x' is not installed."
    )
    assert failure_reason("", -6) == "the probe exited with status -6"
