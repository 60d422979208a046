"""The seed program (LuisaCompute #143): a stale upload under staging="submit", a latent
one under "execute", and the bytes each upload should have sent."""

import json

import numpy as np

from luisa_nb.analysis import HazardKind, Source, describe
from luisa_nb.recording import Access, CommandKind

EXPECTED = np.arange(1024, dtype=np.float32) * np.float32(1001.0)


def test_submit_reports_one_stale_upload_naming_both_commands(make_seed):
    trace = make_seed("submit")
    [hazard] = trace.hazards
    assert hazard.kind is HazardKind.STALE_UPLOAD
    assert hazard.command_ids == (3, 4)
    assert hazard.message == (
        "#4 upload z <- z_data read z_data[0:1024] 0.4 µs before #3 download z -> z_data "
        "wrote it, so it sent the old bytes"
    )
    assert hazard.fix == (
        "synchronize after #3 (copy_to(..., sync=True) or stream.synchronize()) before "
        "uploading, or use staging='execute'"
    )
    assert hazard.host == trace.command(4).host
    assert hazard.device is None
    assert hazard.times == {
        "download_submitted": 2000,
        "host_write": 2400,
        "upload_submitted": 2000,
        "host_read": 2000,
    }


def test_submit_expected_bytes_are_the_download_and_staged_bytes_are_old(make_seed):
    trace = make_seed("submit")
    check = trace.upload(4)
    assert check.stale
    np.testing.assert_array_equal(check.expected, EXPECTED)
    np.testing.assert_array_equal(check.staged, np.full(1024, 123.0, np.float32))
    np.testing.assert_array_equal(check.differing_indices, np.arange(1024))
    assert check.sources == [Source(0, 1024, 3)]
    assert check.expected.dtype == np.float32


def test_first_upload_sends_what_was_enqueued(make_seed, staging):
    check = make_seed(staging).upload(1)
    assert not check.stale
    np.testing.assert_array_equal(check.expected, np.full(1024, 123.0, np.float32))
    np.testing.assert_array_equal(check.staged, check.expected)
    assert check.sources == [Source(0, 1024, None)]
    assert check.differing_indices.size == 0


def test_execute_reports_a_latent_stale_upload_and_correct_bytes(make_seed):
    trace = make_seed("execute")
    assert [(h.kind, h.command_ids) for h in trace.hazards] == [
        (HazardKind.LATENT_STALE_UPLOAD, (3, 4))
    ]
    assert "staging='execute'" in trace.hazards[0].message
    assert trace.hazards[0].fix.startswith("synchronize after #3 ")
    check = trace.upload(4)
    assert not check.stale
    assert check.differing_indices.size == 0
    np.testing.assert_array_equal(check.staged, EXPECTED)
    np.testing.assert_array_equal(check.expected, EXPECTED)


def test_uploads_lists_both_uploads_in_issue_order(seed):
    assert [check.command_id for check in seed.uploads] == [1, 4]


def test_hazard_reads_well_and_serialises(make_seed):
    [hazard] = make_seed("submit").hazards
    first, second = str(hazard).splitlines()
    assert first.startswith("STALE_UPLOAD: #4 upload z <- z_data read z_data[0:1024]")
    assert second.strip().startswith("fix: synchronize after #3")
    data = json.loads(json.dumps(hazard.to_dict()))
    assert data["kind"] == "STALE_UPLOAD"
    assert data["command_ids"] == [3, 4]
    assert data["host"]["nbytes"] == 4096 and data["host"]["name"] == "z_data"
    assert data["device"] is None
    assert data["times"]["host_write"] == 2400


def test_describe_names_every_command_of_the_seed(seed):
    names = [describe(seed, record) for record in seed.records]
    assert names == [
        "#1 upload z <- z_data",
        "#2 dispatch vecadd(x, y, z)",
        "#3 download z -> z_data",
        "#4 upload z <- z_data",
        "#5 copy z -> x",
        "synchronize default",
    ]


def test_without_captured_bytes_digests_decide_stale(make_seed):
    trace = make_seed("submit", capture="none")
    check = trace.upload(4)
    assert check.expected is None and check.staged is None
    assert check.differing_indices.size == 0
    assert check.stale  # decided by digests: one download with the upload's exact range
    assert [h.kind for h in trace.hazards] == [HazardKind.STALE_UPLOAD]


def test_head_capture_compares_the_captured_head_only(make_seed):
    check = make_seed("submit", capture_bytes=64).upload(4)
    assert check.stale
    np.testing.assert_array_equal(check.expected, EXPECTED[:16])
    np.testing.assert_array_equal(check.staged, np.full(16, 123.0, np.float32))
    np.testing.assert_array_equal(check.differing_indices, np.arange(16))
    assert check.sources == [Source(0, 1024, 3)]


def test_describe_names_the_kernel_and_its_buffers(builder):
    x = builder.buffer("x")
    builder.stream("s0")
    record = builder.command(CommandKind.DISPATCH, [builder.whole(x, Access.WRITE)], label="vecadd")
    assert describe(builder.trace, record) == "#1 dispatch vecadd(x)"
