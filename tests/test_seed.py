"""The program of LuisaCompute #143 reproduces the issue's rows exactly."""

import numpy as np

import luisa_nb as lnb
from luisa_nb.analysis import HazardKind
from luisa_nb.seed import SEED_FILL, expected_rows, run_seed


def test_seed_under_submit_sends_the_old_bytes():
    run = run_seed(lnb.create_device("cpu", staging="submit"))
    np.testing.assert_array_equal(run.z_data[:4], [0.0, 1001.0, 2002.0, 3003.0])
    np.testing.assert_array_equal(run.z_data, expected_rows())
    np.testing.assert_array_equal(run.x, np.full(1024, SEED_FILL))

    _, _, download, upload2, _ = run.trace.commands
    hazards = run.trace.hazards
    assert [h.kind for h in hazards] == [HazardKind.STALE_UPLOAD]
    assert hazards[0].command_ids == (download.id, upload2.id)
    assert "z_data" in hazards[0].message and "#" + str(upload2.id) in hazards[0].message

    check = run.trace.upload(upload2.id)
    assert check.stale
    np.testing.assert_array_equal(check.staged, np.full(1024, SEED_FILL))
    np.testing.assert_array_equal(check.expected, expected_rows())
    np.testing.assert_array_equal(check.differing_indices, np.arange(1024))


def test_seed_under_execute_is_correct_and_warns():
    run = run_seed(lnb.create_device("cpu", staging="execute"))
    np.testing.assert_array_equal(run.z_data, expected_rows())
    np.testing.assert_array_equal(run.x, expected_rows())
    _, _, download, upload2, _ = run.trace.commands
    assert [(h.kind, h.command_ids) for h in run.trace.hazards] == [
        (HazardKind.LATENT_STALE_UPLOAD, (download.id, upload2.id))
    ]
    check = run.trace.upload(upload2.id)
    assert not check.stale and check.differing_indices.size == 0
