"""Replay on real runs: every buffer as it stood after any command equals what the device
held there, which the downloads of the live run saw."""

import io
import itertools
from contextlib import redirect_stdout

import numpy as np
import pytest

import luisa_nb as lnb
import luisa_nb.luisa as luisa
from luisa_nb.analysis import ReplayEngine
from luisa_nb.conformance.generator import random_program
from luisa_nb.conformance.programs import FIXED_PROGRAMS, TYPED_PROGRAMS
from luisa_nb.conformance.runner import run_program
from luisa_nb.errors import RecordNotFoundError, ReplayDataMissingError
from luisa_nb.recording import CommandKind, Status
from luisa_nb.seed import SEED_FILL, run_seed
from tests.luisa.running import run_on_luisa_nb


def doubled_values(source, target):
    i = lnb.dispatch_id().x
    target.write(i, source.read(i) * 2.0)


doubled = lnb.kernel(doubled_values)
KERNELS = {"c": doubled, "python": lnb.kernel(doubled_values, mode="python")}


def device_bytes(state, device_range) -> np.ndarray:
    whole = state.buffer(device_range.buffer).numpy().view(np.uint8)
    return whole[device_range.offset : device_range.offset + device_range.nbytes]


def check_downloads(trace) -> int:
    """Each download's bytes (captured in the live run) equal the replayed bytes of its
    source right after it; returns how many were compared."""
    compared = 0
    for record in trace.commands:
        if record.kind is not CommandKind.DOWNLOAD or record.status is not Status.OK:
            continue
        captured = trace.captured_bytes(record.data_capture)
        assert record.data_capture.complete, f"#{record.id} was not captured whole"
        replayed = device_bytes(trace.replay(to=record.id), record.device_ranges[0])
        np.testing.assert_array_equal(replayed, captured, err_msg=f"download #{record.id}")
        compared += 1
    return compared


@pytest.mark.parametrize("backend", ["cpu", "dx", "metal"])
def test_the_seed_replays_the_sum_and_the_stale_bytes_of_its_backend(backend):
    run = run_seed(lnb.create_device(backend), capture="full")
    trace = run.trace
    upload, dispatch, download, reupload, copy = (r.id for r in trace.commands)
    x, y = (
        trace.replay(to=dispatch).buffer("x").numpy(),
        trace.replay(to=dispatch).buffer("y").numpy(),
    )
    np.testing.assert_array_equal(
        trace.replay(to=upload).buffer("z").numpy(), np.full(1024, SEED_FILL)
    )
    np.testing.assert_array_equal(trace.replay(to=dispatch).buffer("z").numpy(), x + y)
    after_reupload = trace.replay(to=reupload).buffer("z").numpy()
    if backend == "cpu":  # staging="execute": the upload sends the downloaded sum
        np.testing.assert_array_equal(after_reupload, x + y)
    else:  # staging="submit": the bytes at submit, as on real LuisaCompute
        np.testing.assert_array_equal(after_reupload, np.full(1024, SEED_FILL))
    np.testing.assert_array_equal(trace.replay(to=copy).buffer("x").numpy(), run.x)
    np.testing.assert_array_equal(trace.replay(to=download).host("z_data"), x + y)
    np.testing.assert_array_equal(trace.replay(to=reupload).staged(reupload), after_reupload)
    assert check_downloads(trace) == 1


@pytest.mark.parametrize("backend", ["cpu", "dx", "metal"])
@pytest.mark.parametrize("make", [*FIXED_PROGRAMS, *TYPED_PROGRAMS], ids=lambda m: m.__name__)
def test_conformance_programs_replay_what_their_downloads_saw(backend, make):
    run = run_program(lnb.create_device(backend), make())
    assert check_downloads(run.trace) > 0


@pytest.mark.parametrize("index", range(0, 200, 10))
def test_random_programs_replay_what_their_downloads_saw(index):
    run = run_program(lnb.create_device("dx" if index % 20 else "cpu"), random_program(index))
    check_downloads(run.trace)
    last = run.trace.replay()
    names = {info.name: info.id for info in run.trace.buffers.values()}
    for name, live in run.buffers.items():  # the buffers the trace saw, as the program left them
        if name in names:
            replayed = last.buffer(names[name]).numpy().view(np.uint8)
            np.testing.assert_array_equal(replayed, live.reshape(-1).view(np.uint8))


@pytest.mark.parametrize("mode", ["c", "python"])
def test_every_command_kind_and_a_host_array(mode):
    device = lnb.create_device("cpu")
    host = np.zeros(8, np.float32)
    with lnb.trace(capture="full") as trace:
        source = device.create_buffer(8, np.float32, name="source")
        target = device.create_buffer(8, np.float32, name="target")
        copied = device.create_buffer(8, np.float32, name="copied")
        source.fill(1.5)
        source.view(2, 4).copy_from(np.array([7, 8], np.float32))
        KERNELS[mode](source, target, dispatch_size=8)
        target.copy_to_buffer(copied)
        copied.copy_to(host)
    fill, upload, dispatch, copy, download = (r.id for r in trace.commands)
    expected = np.array([1.5, 1.5, 7, 8, 1.5, 1.5, 1.5, 1.5], np.float32)
    np.testing.assert_array_equal(trace.replay(to=fill).buffer("source").numpy(), np.full(8, 1.5))
    np.testing.assert_array_equal(trace.replay(to=upload).buffer("source").numpy(), expected)
    np.testing.assert_array_equal(trace.replay(to=upload).buffer("target").numpy(), np.zeros(8))
    np.testing.assert_array_equal(trace.replay(to=dispatch).buffer("target").numpy(), expected * 2)
    np.testing.assert_array_equal(trace.replay(to=dispatch).buffer("copied").numpy(), np.zeros(8))
    np.testing.assert_array_equal(trace.replay(to=copy).buffer("copied").numpy(), expected * 2)
    state = trace.replay(to=download)
    np.testing.assert_array_equal(state.host("host"), host)
    assert state.writers("copied") == [(0, 32, copy)]
    assert state.writers("source") == [(0, 8, fill), (8, 16, upload), (16, 32, fill)]
    with pytest.raises(ValueError):
        state.buffer("source").numpy()[0] = 0  # read-only


def test_images_and_bindless_programs_replay_what_their_downloads_saw():
    for program in ("bindless.py", "bindless3d.py", "from_list.py", "seed.py"):
        luisa.del_device()
        with lnb.trace(capture="full") as trace, redirect_stdout(io.StringIO()):
            run_on_luisa_nb(
                __import__("pathlib").Path(__file__).parents[1] / "luisa" / "programs" / program,
                *(("cpu",) if program.startswith("bindless") else ()),
            )
        luisa.del_device()
        assert check_downloads(trace) > 0, program
        if program == "bindless3d.py":
            images = [info for info in trace.buffers.values() if info.image is not None]
            assert images and trace.replay().image(images[0].id).numpy().shape == images[0].image


def test_two_streams_replay_in_the_order_they_ran():
    device = lnb.create_device("cpu")
    side = device.create_stream("side")
    host = np.zeros(16, np.float32)
    with lnb.trace(capture="full") as trace:
        shared = device.create_buffer(16, np.float32, name="shared")
        doubled_values = device.create_buffer(16, np.float32, name="doubled")
        event = device.create_event()
        device.default_stream.submit([shared.copy_from_async(np.arange(16, dtype=np.float32))])
        device.default_stream.signal(event)
        side.wait(event)
        side.submit([doubled.dispatch_async(16, shared, doubled_values)])
        side.submit([doubled_values.copy_to_async(host)])
        side.synchronize()
    np.testing.assert_array_equal(trace.replay().buffer("doubled").numpy(), np.arange(16) * 2.0)
    assert check_downloads(trace) == 1


def test_what_replay_lacks_is_named_with_the_setting_that_keeps_it(tmp_path):
    device = lnb.create_device("cpu")
    with lnb.trace(capture="head", capture_bytes=16) as trace:
        partial = device.create_buffer(16, np.float32, name="partial")
        partial.copy_from(np.arange(16, dtype=np.float32))
        device.synchronize()
    with pytest.raises(ReplayDataMissingError, match=r"capture='full'"):
        trace.replay().buffer("partial").numpy()

    with lnb.trace(capture="full") as trace:
        source = device.create_buffer(4, np.float32, name="source")
        target = device.create_buffer(4, np.float32, name="target")
        source.copy_from(np.ones(4, np.float32))
        doubled(source, target, dispatch_size=4)
        device.synchronize()
    loaded = lnb.load_trace(trace.save(tmp_path / "trace.lnbtrace"))
    upload, dispatch = (r.id for r in loaded.commands)
    np.testing.assert_array_equal(loaded.replay(to=upload).buffer("source").numpy(), np.ones(4))
    np.testing.assert_array_equal(loaded.replay().buffer("source").numpy(), np.ones(4))
    with pytest.raises(ReplayDataMissingError, match=f"dispatch #{dispatch}.*saved trace"):
        loaded.replay().buffer("target").numpy()
    with pytest.raises(RecordNotFoundError, match="no buffer is called 'nothing'"):
        loaded.replay().buffer("nothing").numpy()


def test_a_buffer_made_before_the_trace_starts_from_its_bytes_at_first_use():
    device = lnb.create_device("cpu")
    before = device.create_buffer(4, np.float32, name="before")
    before.copy_from(np.array([1, 2, 3, 4], np.float32))
    with lnb.trace(capture="full") as trace:
        target = device.create_buffer(4, np.float32, name="target")
        doubled(before, target, dispatch_size=4)
        device.synchronize()
    np.testing.assert_array_equal(trace.replay().buffer("target").numpy(), [2, 4, 6, 8])
    with lnb.trace(capture="none") as blind:
        doubled(before, target, dispatch_size=4)
        device.synchronize()
    with pytest.raises(ReplayDataMissingError, match="made before the trace started"):
        blind.replay().buffer("target").numpy()


def test_checkpoints_do_not_change_what_replay_shows():
    run = run_program(lnb.create_device("cpu"), random_program(7))
    trace = run.trace
    every_command, rarely = ReplayEngine(trace, every=1), ReplayEngine(trace, every=1000)
    for record in reversed(trace.commands):  # backwards: from checkpoints, not one pass
        if record.status is not Status.OK:
            continue
        for info in trace.buffers.values():
            np.testing.assert_array_equal(
                every_command.state(record.id).buffer(info.id).numpy(),
                rarely.state(record.id).buffer(info.id).numpy(),
            )


def test_before_a_command_is_the_state_after_the_one_replayed_before_it():
    run = run_program(lnb.create_device("cpu"), random_program(3))
    trace = run.trace
    engine = ReplayEngine(trace, every=4)
    order = engine.command_ids
    assert sorted(order) == sorted(c.id for c in trace.commands if c.status is Status.OK)
    assert engine.before(order[0]).command_id is None  # nothing replayed yet
    for previous, command_id in itertools.pairwise(order):
        before = engine.before(command_id)
        assert before.command_id == previous
        for info in trace.buffers.values():
            np.testing.assert_array_equal(
                before.buffer(info.id).numpy(), engine.state(previous).buffer(info.id).numpy()
            )
    with pytest.raises(RecordNotFoundError):
        engine.before(10**9)
