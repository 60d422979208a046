"""A Jupyter kernel that ran real luisa-python through luisa_nb shuts down when asked.

luisa-python logs through a Python callback in a kernel, and LuisaCompute's teardown
then waits for the GIL forever (luisa_nb/runtime/luisa_shutdown.py). jupyter_client is
given 30 s here, so a kernel that hangs is terminated only after 15 s: one that leaves by
itself does so well within 10 s.
"""

from __future__ import annotations

import time

import pytest

from tests.luisa.running import environment, require_real_luisa

SHUTDOWN_LIMIT_S = 10.0

LUISA_DEVICE = [
    "%load_ext luisa_nb\n%luisa_device luisa:cpu",
    "import numpy as np\nimport luisa\n"
    "z = luisa.Buffer(256, float)\n"
    "h1 = np.arange(256, dtype=np.float32)\nh2 = np.zeros(256, np.float32)",
    "%%luisa_trace\nz.copy_from(h1)\nz.copy_to(h2, sync=False)\nz.copy_from(h2)",
    "import luisa_nb as lnb\n"
    "print('findings', [hazard.kind.value for hazard in lnb.last_trace().hazards])",
]

INSTRUMENT_LUISA = [
    "import numpy as np\nimport luisa_nb as lnb\nlnb.instrument_luisa()\n"
    "import luisa\nluisa.init('cpu', support_gui=False)",
    "z = luisa.Buffer(256, float)\n"
    "h1 = np.arange(256, dtype=np.float32)\nh2 = np.zeros(256, np.float32)\n"
    "with lnb.trace() as trace:\n"
    "    z.copy_from(h1)\n    z.copy_to(h2, sync=False)\n    z.copy_from(h2)\n"
    "    luisa.synchronize()\n"
    "print('findings', [hazard.kind.value for hazard in trace.hazards])",
]


def _executed(cells: list[str], tmp_path):
    """The notebook run in a fresh kernel; the kernel manager, still running it."""
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    pytest.importorskip("ipykernel", reason="ipykernel provides the python3 kernel")
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(c) for c in cells])
    client = nbclient.NotebookClient(
        notebook, kernel_name="python3", timeout=120, resources={"metadata": {"path": tmp_path}}
    )
    manager = client.create_kernel_manager()
    manager.shutdown_wait_time = 30.0
    client.start_new_kernel(env=environment(), cwd=str(tmp_path))
    client.start_new_kernel_client()
    for index, cell in enumerate(notebook.cells):
        client.execute_cell(cell, index)
    output = "".join(output.get("text", "") for cell in notebook.cells for output in cell.outputs)
    return manager, output


@pytest.mark.parametrize("cells", [LUISA_DEVICE, INSTRUMENT_LUISA], ids=["magic", "instrument"])
def test_a_kernel_that_traced_real_luisa_shuts_down_politely(cells, tmp_path):
    require_real_luisa()
    from jupyter_core.utils import run_sync

    manager, output = _executed(cells, tmp_path)
    assert "findings ['STALE_UPLOAD']" in output, output[-2000:]
    assert "[luisa]" in output, "luisa-python's own log still reaches the notebook"
    started = time.perf_counter()
    run_sync(manager.shutdown_kernel)(now=False)
    took = time.perf_counter() - started
    assert took < SHUTDOWN_LIMIT_S, f"the kernel took {took:.1f} s to shut down"
