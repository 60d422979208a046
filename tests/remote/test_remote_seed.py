"""The program of LuisaCompute #143 on a remote device the backend starts itself."""

import os

import numpy as np
import pytest

pytest.importorskip("zmq")

import luisa_nb as lnb
from luisa_nb.analysis import HazardKind
from luisa_nb.seed import SEED_FILL, expected_rows, run_seed


def test_seed_under_submit_sends_the_stale_bytes_and_says_so():
    device = lnb.create_device("remote", staging="submit")
    try:
        run = run_seed(device)
    finally:
        device.backend.close()
    assert np.array_equal(run.z_data, expected_rows())
    assert np.all(run.x == SEED_FILL)
    stale = [h for h in run.trace.hazards if h.kind is HazardKind.STALE_UPLOAD]
    assert len(run.trace.hazards) == 1 and len(stale) == 1
    download, upload = (run.trace.command(i) for i in stale[0].command_ids)
    assert (download.kind.value, upload.kind.value) == ("download", "upload")
    assert (download.index, upload.index) == (2, 3)


def test_seed_under_execute_keeps_stream_order_and_warns():
    device = lnb.create_device("remote", staging="execute")
    try:
        run = run_seed(device)
    finally:
        device.backend.close()
    assert np.array_equal(run.z_data, expected_rows())
    assert np.array_equal(run.x, expected_rows())
    kinds = [h.kind for h in run.trace.hazards]
    assert kinds == [HazardKind.LATENT_STALE_UPLOAD]


def test_device_info_names_the_server_and_the_policy():
    device = lnb.create_device("remote")
    try:
        info = device.info
        assert info["name"] == "remote" and info["simulated"] is False
        assert info["staging"] == "submit" and info["readback"] == "fence"
        assert info["staging_capacity"] is None
        assert info["server_backend"] == "cpu" and info["started_server"] is True
        assert info["server_worker_pid"] not in (info["server_pid"], os.getpid())
        assert info["address"].startswith("tcp://127.0.0.1:")
        assert info["max_message_bytes"] == 16 << 20
        assert 0 <= info["clock_error_ns"] < 50_000_000
        assert abs(info["clock_offset_ns"]) <= info["clock_error_ns"] + 1_000_000
    finally:
        device.backend.close()
