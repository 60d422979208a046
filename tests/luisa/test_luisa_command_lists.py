"""luisa-python programs on luisa_nb get real LuisaCompute's results: commands gather in
one list per stream until execute()/synchronize(), and a submit-staging backend reads
upload bytes at that submission."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import luisa_nb as lnb
import luisa_nb.luisa as luisa
from luisa_nb.analysis import AnalyzedTrace, HazardKind
from tests.luisa.running import run_on_luisa_nb

N = 1024
SEED = Path(__file__).parent / "programs" / "seed.py"


def stages_at_submit(device_name: str) -> bool:
    return lnb.default_device().staging is lnb.runtime.StagingPolicy.SUBMIT


def seed_program() -> tuple[np.ndarray, np.ndarray]:
    """Issue #143's program as a luisa-python user writes it (programs/seed.py), in the
    session the fixture made."""
    namespace = run_on_luisa_nb(SEED)
    return namespace["z_data"], namespace["x"].numpy()


def test_the_seed_gives_real_luisas_result(device_name):
    z_data, x = seed_program()
    index = np.arange(N, dtype=np.float32)
    np.testing.assert_array_equal(z_data, index + np.float32(1000) * index)
    if stages_at_submit(device_name):
        np.testing.assert_array_equal(x, np.full(N, 123.0, np.float32))
    else:
        np.testing.assert_array_equal(x, index + np.float32(1000) * index)


def test_the_seed_is_one_list_and_its_stale_upload_is_found(device_name):
    with AnalyzedTrace() as trace:
        seed_program()
    lists = {command.submission for command in trace.commands}
    assert len(lists) == 3  # the program's one list, then two numpy() downloads
    stale = [h for h in trace.hazards if h.kind is HazardKind.STALE_UPLOAD]
    assert bool(stale) == stages_at_submit(device_name)


def test_up_down_up_in_one_list(device_name):
    size = 4096
    a, b = luisa.Buffer(size, float), luisa.Buffer(size, float)
    h1 = np.random.default_rng(7).random(size, dtype=np.float32)
    h2 = np.zeros(size, np.float32)
    a.copy_from(h1)
    a.copy_to(h2, sync=False)
    b.copy_from(h2)
    luisa.synchronize()
    np.testing.assert_array_equal(h2, h1)
    expected = np.zeros(size, np.float32) if stages_at_submit(device_name) else h1
    np.testing.assert_array_equal(b.numpy(), expected)


def test_a_sync_download_before_the_reupload_is_correct_everywhere(device_name):
    a, b = luisa.Buffer(N, float), luisa.Buffer(N, float)
    h1 = np.arange(N, dtype=np.float32)
    h2 = np.zeros(N, np.float32)
    a.copy_from(h1)
    a.copy_to(h2)  # sync=True by default: submits the list and waits
    b.copy_from(h2)
    np.testing.assert_array_equal(b.numpy(), h1)


def test_host_writes_before_execute_reach_the_device(device_name):
    """luisa-python's test-buffer.py relies on this: bytes are read at submission at the
    earliest, so changing the array after copy_from and before execute() counts."""
    buffer = luisa.Buffer(N, float)
    host = np.zeros(N, np.float32)
    buffer.copy_from(host)
    host[:] = np.arange(N)
    luisa.execute()
    luisa.synchronize()
    np.testing.assert_array_equal(buffer.numpy(), np.arange(N, dtype=np.float32))
