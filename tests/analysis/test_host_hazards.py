"""Host-memory hazards: stale and latent stale uploads, host writes in flight."""

import numpy as np
import pytest

from luisa_nb.analysis import HazardKind, Source, find_hazards
from luisa_nb.recording import Access, CommandKind, Status, SyncKind

OLD = np.full(1024, 123.0, np.float32)
NEW = np.arange(1024, dtype=np.float32)


def kinds_and_ids(trace):
    return [(hazard.kind, hazard.command_ids) for hazard in find_hazards(trace)]


@pytest.fixture
def setup(builder):
    """A buffer ``z``, a stream and a host array ``h`` of 1024 float32."""
    z = builder.buffer("z")
    builder.stream("s0")
    h = np.zeros(1024, np.float32)
    return builder, z, h


def test_copy_only_list_has_no_hazard_and_no_upload(builder):
    x, y, z = builder.buffer("x"), builder.buffer("y"), builder.buffer("z")
    builder.stream("s0")
    builder.command(
        CommandKind.COPY, [builder.whole(x, Access.READ), builder.whole(y, Access.WRITE)]
    )
    builder.command(
        CommandKind.COPY, [builder.whole(y, Access.READ), builder.whole(z, Access.WRITE)]
    )
    builder.command(CommandKind.FILL, [builder.whole(x, Access.WRITE)])
    trace = builder.finish()
    assert trace.hazards == []
    assert trace.uploads == []


def test_synchronize_covering_the_download_removes_the_hazard(setup):
    builder, z, h = setup
    download = builder.download(z, builder.host(h, "h"), NEW)
    builder.sync(SyncKind.SYNCHRONIZE, 0, covers=download.seq)
    upload = builder.upload(z, builder.host(h, "h"), NEW, staging="submit")
    trace = builder.finish()
    assert trace.hazards == []
    check = trace.upload(upload.id)
    assert not check.stale
    np.testing.assert_array_equal(check.expected, NEW)


def test_synchronize_issued_before_the_download_does_not_cover_it(setup):
    builder, z, h = setup
    earlier = builder.command(CommandKind.FILL, [builder.whole(z, Access.WRITE)])
    download = builder.download(z, builder.host(h, "h"), NEW)
    builder.sync(SyncKind.SYNCHRONIZE, 0, covers=earlier.seq)
    upload = builder.upload(z, builder.host(h, "h"), NEW)
    assert kinds_and_ids(builder.finish()) == [
        (HazardKind.LATENT_STALE_UPLOAD, (download.id, upload.id))
    ]


def test_synchronize_of_another_stream_does_not_cover_the_download(setup):
    builder, z, h = setup
    builder.stream("s1")
    download = builder.download(z, builder.host(h), NEW)
    builder.sync(SyncKind.SYNCHRONIZE, 1, covers=download.seq)
    upload = builder.upload(z, builder.host(h), NEW)
    assert kinds_and_ids(builder.finish()) == [
        (HazardKind.LATENT_STALE_UPLOAD, (download.id, upload.id))
    ]


def test_device_wide_synchronize_covers_every_stream(setup):
    builder, z, h = setup
    builder.download(z, builder.host(h), NEW)
    builder.sync(SyncKind.SYNCHRONIZE, None)
    builder.upload(z, builder.host(h), NEW)
    assert find_hazards(builder.finish()) == []


def test_event_synchronize_on_an_event_signalled_after_the_download_covers_it(setup):
    builder, z, h = setup
    builder.download(z, builder.host(h), NEW)
    builder.sync(SyncKind.SIGNAL, 0, event=7)
    builder.sync(SyncKind.EVENT_SYNCHRONIZE, event=7)
    builder.upload(z, builder.host(h), NEW)
    assert find_hazards(builder.finish()) == []


def test_event_signalled_before_the_download_does_not_cover_it(setup):
    builder, z, h = setup
    builder.sync(SyncKind.SIGNAL, 0, event=7)
    download = builder.download(z, builder.host(h), NEW)
    builder.sync(SyncKind.EVENT_SYNCHRONIZE, event=7)
    upload = builder.upload(z, builder.host(h), NEW)
    assert kinds_and_ids(builder.finish()) == [
        (HazardKind.LATENT_STALE_UPLOAD, (download.id, upload.id))
    ]


def test_callback_does_not_order_anything(setup):
    builder, z, h = setup
    download = builder.download(z, builder.host(h), NEW)
    builder.sync(SyncKind.CALLBACK, 0)
    upload = builder.upload(z, builder.host(h), NEW)
    assert kinds_and_ids(builder.finish()) == [
        (HazardKind.LATENT_STALE_UPLOAD, (download.id, upload.id))
    ]


def test_only_the_last_pending_download_of_each_byte_counts(setup):
    builder, z, h = setup
    builder.download(z, builder.host(h), OLD)
    last = builder.download(z, builder.host(h), NEW)
    upload = builder.upload(z, builder.host(h), NEW)
    assert kinds_and_ids(builder.finish()) == [
        (HazardKind.LATENT_STALE_UPLOAD, (last.id, upload.id))
    ]


def test_downloads_into_two_halves_give_one_hazard_each(setup):
    builder, z, h = setup
    first = builder.download(z, builder.host(h[:512], "h"), NEW[:512])
    second = builder.download(z, builder.host(h[512:], "h"), NEW[512:], device_offset=2048)
    upload = builder.upload(z, builder.host(h, "h"), NEW)
    hazards = find_hazards(builder.finish())
    assert [(x.command_ids, x.host.address, x.host.nbytes) for x in hazards] == [
        ((first.id, upload.id), upload.host.address, 2048),
        ((second.id, upload.id), upload.host.address + 2048, 2048),
    ]
    assert "h[512:1024]" in hazards[1].message


def test_disjoint_slices_do_not_overlap(setup):
    builder, z, h = setup
    builder.download(z, builder.host(h[:512]), NEW[:512])
    builder.upload(z, builder.host(h[512:]), OLD[512:], device_offset=2048)
    assert find_hazards(builder.finish()) == []


def test_overlapping_slices_report_only_the_overlap(setup):
    builder, z, h = setup
    download = builder.download(z, builder.host(h[:512], "h"), NEW[:512])
    view = h[256:768]
    upload = builder.upload(z, builder.host(view, "view"), OLD[:512], host_read=1, enqueued=0)
    [hazard] = find_hazards(builder.finish())
    assert hazard.kind is HazardKind.STALE_UPLOAD
    assert hazard.command_ids == (download.id, upload.id)
    assert hazard.host.address == view.__array_interface__["data"][0]
    assert hazard.host.nbytes == 256 * 4
    assert "view[0:256]" in hazard.message


def test_a_reshaped_view_is_the_same_memory(setup):
    builder, z, h = setup
    download = builder.download(z, builder.host(h.reshape(32, 32), "h2d"), NEW)
    upload = builder.upload(z, builder.host(h, "h"), NEW)
    [hazard] = find_hazards(builder.finish())
    assert hazard.command_ids == (download.id, upload.id)
    assert hazard.host.nbytes == 4096 and hazard.host.shape == (1024,)


def test_upload_reading_before_the_write_is_stale_whatever_its_staging(setup):
    builder, z, h = setup
    download = builder.download(z, builder.host(h), NEW, host_write=5000)
    upload = builder.upload(z, builder.host(h), OLD, host_read=4000, staging="execute")
    assert kinds_and_ids(builder.finish()) == [(HazardKind.STALE_UPLOAD, (download.id, upload.id))]


def test_host_write_in_flight_names_the_changed_elements(setup):
    builder, z, h = setup
    changed = OLD.copy()
    changed[10:20] = -1.0
    upload = builder.upload(z, builder.host(h, "h"), OLD, changed, enqueued=1000, host_read=3500)
    trace = builder.finish()
    [hazard] = trace.hazards
    assert hazard.kind is HazardKind.HOST_WRITE_IN_FLIGHT
    assert hazard.command_ids == (upload.id,)
    assert hazard.host.address == upload.host.address + 40 and hazard.host.nbytes == 40
    assert hazard.times == {"enqueued": 1000, "host_read": 3500}
    assert "h[10:20] changed between enqueue and host read (2.5 µs later)" in hazard.message
    check = trace.upload(upload.id)
    assert check.stale
    np.testing.assert_array_equal(check.differing_indices, np.arange(10, 20))
    assert check.sources == [Source(0, 1024, None)]


def test_host_write_in_flight_is_found_by_digest_without_captured_bytes(make_builder):
    builder = make_builder(capture="none")
    z = builder.buffer("z")
    builder.stream("s0")
    h = np.zeros(1024, np.float32)
    upload = builder.upload(z, builder.host(h), OLD, NEW)
    trace = builder.finish()
    assert kinds_and_ids(trace) == [(HazardKind.HOST_WRITE_IN_FLIGHT, (upload.id,))]
    assert trace.hazards[0].host == upload.host
    check = trace.upload(upload.id)
    assert check.stale and check.expected is None and check.staged is None


def test_a_synchronized_download_after_enqueue_explains_the_change(setup):
    builder, z, h = setup
    download = builder.download(z, builder.host(h), NEW, enqueued=1500, host_write=1600)
    builder.sync(SyncKind.SYNCHRONIZE, 0, covers=download.seq)
    upload = builder.upload(z, builder.host(h), OLD, NEW, enqueued=1050)
    trace = builder.finish()
    assert trace.hazards == []
    check = trace.upload(upload.id)
    assert not check.stale
    assert check.sources == [Source(0, 1024, download.id)]
    np.testing.assert_array_equal(check.expected, NEW)


def test_failed_and_skipped_records_are_tolerated(setup):
    builder, z, h = setup
    skipped = dict(started=None, finished=None, host_write=None, host_read=None)
    builder.download(z, builder.host(h), None, status=Status.SKIPPED, **skipped)
    builder.upload(z, builder.host(h), OLD, None, status=Status.FAILED, **skipped)
    writes = [builder.whole(z, Access.WRITE)]
    builder.command(CommandKind.DISPATCH, writes, status=Status.FAILED, finished=None)
    download = builder.download(z, builder.host(h), NEW)
    builder.upload(z, builder.host(h), NEW, status=Status.FAILED, **skipped)
    upload = builder.upload(z, builder.host(h), NEW)
    builder.sync(SyncKind.SYNCHRONIZE, 0, status=Status.FAILED)
    trace = builder.finish()
    assert kinds_and_ids(trace) == [(HazardKind.LATENT_STALE_UPLOAD, (download.id, upload.id))]
    assert [check.command_id for check in trace.uploads] == [2, 5, 6]
    assert trace.upload(2).staged is None and not trace.upload(2).stale
    trace.to_chrome_trace()
