"""The luisa-python surface of ``luisa_nb.luisa``: init, buffers, functions, streams, and
clear errors for what luisa_nb does not have."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

import luisa_nb as lnb
import luisa_nb.luisa as luisa
from luisa_nb.errors import (
    ConfigurationError,
    HostDtypeError,
    HostSizeError,
    InvalidArgumentError,
    KernelError,
    NotInitializedError,
    UnsupportedFeatureError,
)
from luisa_nb.luisa.builtin import dispatch_id


def test_buffers_of_luisa_types_have_numpy_dtypes(device_name):
    expected = {
        float: np.float32,
        int: np.int32,
        bool: np.bool_,
        luisa.uint: np.uint32,
        luisa.long: np.int64,
        luisa.ulong: np.uint64,
    }
    for luisa_type, dtype in expected.items():
        buffer = luisa.Buffer(10, luisa_type)
        assert buffer.dtype == np.dtype(dtype)
        assert buffer.stride == np.dtype(dtype).itemsize
        assert buffer.bytesize == 10 * np.dtype(dtype).itemsize


def test_constructors_fill_through_the_command_list(device_name):
    values = np.arange(5, dtype=np.int32) * 3
    np.testing.assert_array_equal(luisa.Buffer.from_array(values).numpy(), values)
    assert luisa.Buffer.from_list([1.5, 2.5]).to_list() == [1.5, 2.5]
    assert luisa.Buffer.from_list([1, 2, 3]).dtype == np.int32
    assert luisa.buffer([True, False]).to_list() == [True, False]
    np.testing.assert_array_equal(luisa.Buffer.zeros(4, float).numpy(), np.zeros(4, np.float32))


def test_copies_need_the_byte_size_only(device_name):
    buffer = luisa.Buffer(8, luisa.uint)
    source = np.arange(8, dtype=np.float32).reshape(2, 4)
    buffer.copy_from(source)
    out = np.zeros((4, 2), np.float32)
    buffer.copy_to(out)
    np.testing.assert_array_equal(out.reshape(-1), source.reshape(-1))
    np.testing.assert_array_equal(buffer.numpy(), source.reshape(-1).view(np.uint32))
    with pytest.raises(HostSizeError, match="16 bytes, the Buffer 32"):
        buffer.copy_from(np.zeros(4, np.float32))


def test_functions_join_the_list_of_the_stream_they_are_given(device_name):
    stream = luisa.Stream()
    buffer = luisa.Buffer(16, int)

    @luisa.func
    def iota(target, offset):
        target.write(dispatch_id().x, dispatch_id().x + offset)

    iota(buffer, 100, dispatch_size=16, stream=stream)
    assert len(stream.pending) == 1
    luisa.synchronize(stream)
    assert stream.pending == ()
    np.testing.assert_array_equal(buffer.numpy(), np.arange(16) + 100)


def test_events_order_two_streams(device_name):
    first, second = luisa.Stream(), luisa.Stream()
    event = luisa.Event()
    buffer = luisa.Buffer(32, float)
    buffer.copy_from(np.full(32, 4.0, np.float32), stream=first)
    first.signal(event)
    second.wait(event)
    out = np.zeros(32, np.float32)
    buffer.copy_to(out, stream=second)
    np.testing.assert_array_equal(out, np.full(32, 4.0, np.float32))


def test_init_once_and_by_environment(fresh_session, monkeypatch):
    monkeypatch.setenv("LUISA_NB_DEVICE", "metal")
    luisa.init()
    device = lnb.default_device()
    assert device.name == "metal"
    luisa.init("dx")  # as in luisa-python, a second init changes nothing
    assert lnb.default_device() is device
    luisa.del_device()
    luisa.init("cpu:submit", support_gui=False)
    assert lnb.default_device().staging.value == "submit"


def test_use_before_init_says_to_call_init(fresh_session):
    with pytest.raises(NotInitializedError, match=r"call luisa.init\(\)"):
        luisa.Buffer(4, float)


def test_unsupported_features_name_themselves(fresh_session):
    with pytest.raises(UnsupportedFeatureError, match=r"luisa.CommittedHit \(procedural"):
        luisa.CommittedHit()
    with pytest.raises(UnsupportedFeatureError, match="16-bit"):
        luisa.half.anything  # noqa: B018
    luisa.init("cpu")
    with pytest.raises(UnsupportedFeatureError, match="16-bit"):
        luisa.Buffer(4, luisa.half)
    with pytest.raises(InvalidArgumentError, match="a luisa buffer holds"):
        luisa.Buffer(4, "pixels")


def test_star_import_gives_the_whole_surface():
    namespace: dict[str, object] = {}
    exec("from luisa_nb.luisa import *", namespace)
    for name in ("init", "Buffer", "func", "execute", "synchronize", "float3", "Accel"):
        assert name in namespace
    for python_builtin in ("round", "abs", "min", "max", "pow", "all", "any"):
        assert python_builtin not in namespace  # as in luisa-python: kernels find them by name


def test_del_device_gives_luisa_nb_its_own_default_device_back(fresh_session):
    luisa.init("dx")
    session_device = lnb.default_device()
    luisa.del_device()
    assert session_device.closed
    device = lnb.default_device()
    assert device is not session_device and not device.closed


def test_vector_buffers_round_trip_and_are_traced_as_their_components(fresh_session, tmp_path):
    from luisa_nb.luisa.types import float3

    luisa.init("cpu:submit")
    buffer = luisa.Buffer(8, float3)
    assert (buffer.stride, buffer.bytesize) == (16, 128)
    host = np.arange(32, dtype=np.float32)  # x, y, z and the padding of 8 float3
    with lnb.trace() as trace:
        buffer.copy_from(host)
        out = np.zeros(32, np.float32)
        buffer.copy_to(out)
    np.testing.assert_array_equal(out, host)
    info = trace.buffers[buffer.id]
    assert (info.dtype, info.size, info.nbytes) == ("<f4", 32, 128)
    loaded = lnb.load_trace(trace.save(tmp_path / "vectors.lnbtrace"))
    assert loaded.buffers[buffer.id].size == 32
    assert [c.host.dtype for c in loaded.commands] == ["<f4", "<f4"]


def test_the_gui_is_headless_and_runs_the_frames_asked_for(fresh_session, monkeypatch):
    luisa.init("cpu")
    image = luisa.Image2D(4, 2, 4, float, storage="byte")
    image.copy_from(np.full((2, 4, 4), 9, np.uint8))
    monkeypatch.setenv("LUISA_NB_GUI_FRAMES", "3")
    gui = luisa.GUI("window", resolution=(4, 2))
    frames = 0
    while gui.running():
        gui.set_image(image)
        gui.show()
        frames += 1
    assert frames == 3 and len(gui.frames) == 3
    np.testing.assert_array_equal(gui.image, np.full((2, 4, 4), 9, np.uint8))
    monkeypatch.setenv("LUISA_NB_GUI_FRAMES", "many")
    with pytest.raises(ConfigurationError, match="LUISA_NB_GUI_FRAMES"):
        luisa.GUI("window", resolution=(4, 2))


def test_the_headless_gui_answers_input_and_frame_time_as_a_window_would(
    fresh_session, monkeypatch
):
    from luisa_nb.luisa import gui as gui_module
    from luisa_nb.luisa.gui import KeyCode

    clock = iter([10.0, 10.025])
    monkeypatch.setattr(gui_module, "time", SimpleNamespace(perf_counter=lambda: next(clock)))
    monkeypatch.setenv("LUISA_NB_GUI_FRAMES", "2")
    gui = luisa.GUI("window", (4, 2))
    assert gui.show() == 0.0  # the first frame has no previous one
    assert gui.show() == pytest.approx(25.0)  # milliseconds since it, as luisa-python's
    assert not gui.running()
    assert luisa.GUI("window", (4, 2), show_FPS=False).show() == 0.0
    assert not gui.is_key_down(KeyCode.Space) and not gui.is_key_pressed(KeyCode.A)
    assert not gui.is_key_up(KeyCode.F12)
    assert not gui.is_mouse_down(0) and not gui.is_mouse_pressed(0) and not gui.is_mouse_up(1)
    cursor = gui.cursor_pos()
    assert (cursor.x, cursor.y) == (0.0, 0.0)
    assert (KeyCode.A, KeyCode.Z, KeyCode.Alpha0, KeyCode.F1, KeyCode.KeyPad9) == (
        65,
        90,
        48,
        290,
        329,
    )


def test_ite_picks_by_its_condition_first(fresh_session):
    from luisa_nb.luisa.util import ite

    luisa.init("cpu")
    out = luisa.Buffer(4, float)

    @luisa.func
    def pick(out):
        i = dispatch_id().x
        f = float(i) - 1.5
        out.write(i, ite(f < 0.0, ite(i % 2 == 0, 10.0, 20.0), f))

    pick(out, dispatch_size=4)
    np.testing.assert_array_equal(out.numpy(), [10.0, 20.0, 0.5, 1.5])


def test_struct_buffers_are_traced_as_their_values_and_saved(fresh_session, tmp_path):
    from luisa_nb.luisa.types import float3

    luisa.init("cpu:submit")
    pairs = luisa.Buffer(4, luisa.StructType(first=float3, second=float3))
    mixed = luisa.Buffer(4, luisa.StructType(position=float3, count=int))
    with lnb.trace() as trace:
        pairs.copy_from(np.arange(32, dtype=np.float32))
        mixed.copy_from(np.arange(32, dtype=np.float32))
        luisa.synchronize()
    loaded = lnb.load_trace(trace.save(tmp_path / "structs.lnbtrace"))
    assert (loaded.buffers[pairs.id].dtype, loaded.buffers[pairs.id].size) == ("<f4", 32)
    assert (loaded.buffers[mixed.id].dtype, loaded.buffers[mixed.id].size) == ("|u1", 128)


def test_buffer_types_annotate_parameters_as_in_luisa_python(fresh_session):
    from luisa_nb.luisa.types import float3, uint

    luisa.init("cpu")
    values = luisa.Buffer.from_array(np.arange(4, dtype=np.float32))
    assert values.bufferType == luisa.BufferType(float) == luisa.BufferType(np.float32)
    assert luisa.BufferType(float) != luisa.BufferType(int)
    assert luisa.BufferType(float3) != luisa.BufferType(luisa.float4)
    assert len({luisa.BufferType(uint), luisa.Buffer(2, uint).bufferType}) == 1
    assert repr(luisa.BufferType(float3)) == "BufferType(float3)"
    assert repr(luisa.Buffer(2, uint).bufferType) == "BufferType(uint)"
    structs = luisa.StructType(position=float3, count=int)
    assert luisa.Buffer(2, structs).bufferType == luisa.BufferType(structs)
    with pytest.raises(InvalidArgumentError, match="a luisa buffer holds"):
        luisa.BufferType(list)

    @luisa.func
    def doubled(source: luisa.BufferType(float), target: luisa.BufferType(float)):
        i = dispatch_id().x
        target.write(i, source.read(i) * 2.0)

    out = luisa.Buffer(4, float)
    doubled(values, out, dispatch_size=4)
    assert out.numpy().tolist() == [0.0, 2.0, 4.0, 6.0]
    expected = r"'target' is annotated BufferType\(float\), got BufferType\(int\)"
    with pytest.raises(InvalidArgumentError, match=expected):
        doubled(values, luisa.Buffer(4, int), dispatch_size=4)
    with pytest.raises(InvalidArgumentError, match=r"got Texture2DType\(float, 1\)"):
        doubled(luisa.Image2D(2, 2, 1, float), out, dispatch_size=4)
    with pytest.raises(TypeError, match="got 'float'"):  # luisa-python raises TypeError
        doubled(1.5, out, dispatch_size=4)
    namespace: dict[str, object] = {}
    exec("from luisa_nb.luisa import *", namespace)
    assert namespace["BufferType"] is luisa.BufferType


def test_lists_of_vectors_matrices_and_structs_upload_one_element_per_value(fresh_session):
    from luisa_nb.luisa.mathtypes import float2x2, float3, int2

    luisa.init("cpu")
    points = [float3(1, 2, 3), float3(4, 5, 6), float3(7, 8, 9)]
    made = luisa.Buffer.from_list(points)
    copied = luisa.Buffer(3, float3)
    copied.copy_from(points)
    for buffer in (made, copied):
        values = buffer.numpy()
        assert values.shape == (3,)
        assert [tuple(v) for v in values.tolist()] == [(1, 2, 3), (4, 5, 6), (7, 8, 9)]
    matrix = luisa.Buffer.from_list([float2x2(1, 2, 3, 4)]).numpy()
    assert matrix["columns"].tolist() == [[(1.0, 2.0), (3.0, 4.0)]]
    Pair = luisa.StructType(a=int2, b=float)
    pairs = luisa.Buffer.from_list([Pair(a=int2(1, 2), b=3.0), Pair(a=int2(-1, 0), b=0.5)])
    assert pairs.numpy().tolist() == [((1, 2), 3.0), ((-1, 0), 0.5)]

    @luisa.func
    def total(points, out):
        p = points.read(dispatch_id().x)
        out.write(dispatch_id().x, p.x + p.y + p.z)

    out = luisa.Buffer(3, float)
    total(copied, out, dispatch_size=3)
    assert out.numpy().tolist() == [6.0, 15.0, 24.0]
    for mixed in ([float3(1, 2, 3), 2.0, 3.0], [1.0, "x", 2.0]):
        with pytest.raises(HostDtypeError, match="must be of the element type"):
            copied.copy_from(mixed)


def test_log_functions_format_filter_and_reach_a_callback():
    from luisa_nb.luisa import log

    heard = []
    saved = list(log.LOGGER.handlers), log.LOGGER.level
    try:
        luisa.set_log_callback(lambda level, message: heard.append((level, message)))
        luisa.log_level_info()
        luisa.info("x = {}", 3)
        luisa.verbose("hidden {}", 1)
        luisa.warning("careful {name}", name="there")
        luisa.log_level_error()
        luisa.warning("dropped")
        luisa.error_with_location("bad {}", "thing")
        luisa.log_level_verbose()
        luisa.verbose("shown")
    finally:
        log.LOGGER.handlers[:] = saved[0]
        log.LOGGER.setLevel(saved[1])
    line = test_log_functions_format_filter_and_reach_a_callback.__code__.co_firstlineno + 13
    assert heard == [
        ("I", "x = 3"),
        ("W", "careful there"),
        ("E", f"bad thing [{__file__}:{line}]"),
        ("D", "shown"),
    ]


def test_saved_shaders_say_they_are_missing_and_autodiff_works_in_kernels_only(fresh_session):
    from luisa_nb.luisa.autodiff import autodiff, backward, grad, requires_grad

    with pytest.raises(KernelError, match=r"only works inside `with autodiff\(\):`"):
        backward(1.0)
    luisa.init("cpu")
    out = luisa.Buffer(1, float)

    @luisa.func
    def differentiated():
        x = 3.0
        with autodiff():
            requires_grad(x)
            backward(x * x)
            out.write(0, grad(x))

    differentiated(dispatch_size=1)
    assert out.numpy().tolist() == [6.0]

    @luisa.func
    def plain(out):
        out.write(0, 1.0)

    with pytest.raises(UnsupportedFeatureError, match="ahead-of-time"):
        plain.save((float,))
