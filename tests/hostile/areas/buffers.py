"""The buffer API on every backend: sizes, dtypes, host arrays of every wrong kind, fills,
views out of range, destroyed buffers, closed devices, reused commands, cross-device use
and device names."""

from __future__ import annotations

import math
import random

import numpy as np

import luisa_nb as lnb
from luisa_nb.errors import LuisaNbError

from ..cases import Case, case
from ..devices import backends, own_device, shared_device
from ..oracles import (
    UserError,
    expect,
    expect_equal_arrays,
    expect_error,
    expecting,
)
from ..values import (
    HOST_ARRAY_KINDS,
    VALID_DOWNLOADS,
    VALID_UPLOADS,
    WRONG_HOST_ARRAYS,
    host_array,
    sample_values,
    spelled,
)

SIZE = 16
INVALID_SIZES = (
    None, -1, 0, 1.5, math.nan, math.inf, "16", b"16", True, 2**40, 2**62, 2**63, 2**64,
    10**30, np.int64(-5), np.float32(4), [4], (4,), 4 + 0j, -(2**63),
)  # fmt: skip
VALID_SIZES = (1, 7, np.int64(16), np.uint8(3), 2**16)
VALID_DTYPES = (np.float32, np.int32, np.uint32, np.int64, np.uint64, np.float64, np.bool_)
DTYPES = {
    "None": ("error", None),
    "'float'": ("either", "float"),
    "'f4'": ("ok", "f4"),
    "int": ("either", int),
    "float": ("either", float),
    "complex": ("error", complex),
    "object": ("error", object),
    "np.float16": ("error", np.float16),
    "np.complex64": ("error", np.complex64),
    "'>f4'": ("either", ">f4"),
    "'U3'": ("error", "U3"),
    "'V4'": ("error", "V4"),
    "structured": ("error", [("a", "<f4"), ("b", "<i4")]),
    "'nonsense'": ("error", "nonsense"),
    "3": ("error", 3),
    "np.dtype('datetime64[s]')": ("error", "datetime64[s]"),
}
FILLS = (
    ("float32", 2.5, "ok"),
    ("float32", math.nan, "ok"),
    ("float32", -math.inf, "ok"),
    ("float32", None, "error"),
    ("float32", "3", "error"),
    ("float32", [1.0], "error"),
    ("float32", np.zeros(2), "error"),
    ("float32", 1 + 2j, "error"),
    ("float32", object(), "error"),
    ("int32", 1.5, "error"),
    ("int32", 2**40, "error"),
    ("int32", math.nan, "error"),
    ("int32", -(2**31), "ok"),
    ("uint32", -1, "error"),
    ("bool", 2, "error"),
    ("int64", 2**63, "error"),
    ("uint64", 2**64 - 1, "ok"),
    ("float64", 1e308, "ok"),
)
VIEWS = (
    (0, SIZE, "ok"), (3, 9, "ok"), (5, 5, "ok"), (-1, 4, "error"), (4, 2, "error"),
    (0, SIZE + 1, "error"), (SIZE, SIZE + 1, "error"), (1.5, 4, "error"), (0, None, "ok"),
    (None, 4, "error"), ("1", 4, "error"), (True, 4, "error"), (0, 2**70, "error"),
    (np.int64(2), np.uint64(6), "ok"), (0, math.nan, "error"), (-(2**70), 0, "error"),
)  # fmt: skip
DESTROYED_USES = (
    "copy_from", "copy_to", "fill", "numpy", "view", "copy_from through a view",
    "copy_to_buffer from it", "copy_to_buffer into it", "dispatch", "add_one captured",
)  # fmt: skip
CLOSED_DEVICE_USES = (
    "create_buffer", "copy_from", "copy_to", "fill", "numpy", "create_stream", "submit",
    "dispatch", "create_image",
)  # fmt: skip
"""Uses of a closed device that must raise; signalling an event and adding a callback to
one of its streams may also work (:func:`closed_device_stream`)."""
SUBMITTED_THINGS = (
    "None", "3", "'commands'", "[None]", "[3]", "a command, not a list", "a dict",
    "a generator that raises", "a list holding a list", "the same command twice",
    "a command submitted before", "a command of another device",
)  # fmt: skip
STREAM_ARGUMENTS = ("'s'", "3", "True", "object()", "another device's stream")
DEVICE_NAMES = (
    ("", {}), (None, {}), (3, {}), ("cpu:", {}), ("cpu:later", {}), ("CPU", {}),
    ("nope", {}), ("cpu\0", {}), ("remote://", {}), ("remote://127.0.0.1:1", {}),
    ("remote://[::1]:x", {"token": "t"}), ("cpu", {"staging": "later"}),
    ("cpu", {"checks": "maybe"}), ("dx", {"staging_capacity": -1}),
    ("dx", {"staging_capacity": 1.5}), ("metal", {"staging_capacity": 0}),
    ("cpu", {"frobnicate": 1}), ("cuda:-1", {}), ("cuda:x", {}), ("dx:submit:extra", {}),
)  # fmt: skip


def create_buffer(backend: str, size: object, dtype: object, expectation: str) -> None:
    device = shared_device(backend)
    with expecting(expectation, f"create_buffer({size!r}, {dtype!r})") as attempt:
        buffer = device.create_buffer(size, dtype)
        attempt.completed()
        expect(buffer.size == int(size), f"create_buffer({size!r}) has {buffer.size} elements")
        values = sample_values(buffer.dtype, buffer.size)
        buffer.copy_from(values)
        expect_equal_arrays(buffer.numpy(), values, f"round trip of {buffer!r}")
        buffer.destroy()


def _expectation(kind: str, array: object, valid: frozenset[str], buffer: lnb.Buffer) -> str:
    if kind in valid:
        return "ok"
    exact = (
        isinstance(array, np.ndarray) and array.dtype == buffer.dtype and array.size == buffer.size
    )
    return "error" if kind in WRONG_HOST_ARRAYS and not exact else "either"


def upload(backend: str, kind: str, dtype: str, size: int) -> None:
    buffer = shared_device(backend).create_buffer(size, dtype)
    array = host_array(kind, sample_values(buffer.dtype, size, seed=1))
    with expecting(_expectation(kind, array, VALID_UPLOADS, buffer), f"copy_from({kind})"):
        buffer.copy_from(array, sync=True)
        sent = np.asarray(array).reshape(-1)
        expect_equal_arrays(buffer.numpy(), sent, f"buffer after copy_from({kind})")


def download(backend: str, kind: str, dtype: str, size: int) -> None:
    buffer = shared_device(backend).create_buffer(size, dtype)
    values = sample_values(buffer.dtype, size, seed=2)
    buffer.copy_from(values)
    target = host_array(kind, np.zeros(size, buffer.dtype))
    with expecting(_expectation(kind, target, VALID_DOWNLOADS, buffer), f"copy_to({kind})"):
        buffer.copy_to(target)
        received = np.asarray(target).reshape(-1)
        expect_equal_arrays(received, values, f"host array after copy_to into {kind}")


def fill(backend: str, dtype: str, value: object, expectation: str) -> None:
    buffer = shared_device(backend).create_buffer(SIZE, dtype)
    with expecting(expectation, f"fill({value!r:.40}) of a {dtype} buffer"):
        buffer.fill(value)
        expected = np.full(SIZE, value, dtype=buffer.dtype)
        expect_equal_arrays(buffer.numpy(), expected, f"{dtype} buffer after fill({value!r})")


def view(backend: str, start: object, stop: object, expectation: str) -> None:
    buffer = shared_device(backend).create_buffer(SIZE, np.float32)
    buffer.fill(0.0)
    with expecting(expectation, f"view({start!r}, {stop!r})"):
        part = buffer.view(start, stop)
        first, last = int(start), SIZE if stop is None else int(stop)
        values = np.arange(1, last - first + 1, dtype=np.float32)
        part.copy_from(values)
        expected = np.zeros(SIZE, np.float32)
        expected[first:last] = values
        expect_equal_arrays(buffer.numpy(), expected, f"buffer after view({start}, {stop})")


def use_destroyed(backend: str, use: str) -> None:
    from ..kernel_functions import ADD_ONE, add_captured

    device = shared_device(backend)
    buffer, other = device.create_buffer(SIZE), device.create_buffer(SIZE)
    host = np.zeros(SIZE, np.float32)
    part = buffer.view(2, 6)
    buffer.destroy()
    uses = {
        "copy_from": lambda: buffer.copy_from(host),
        "copy_to": lambda: buffer.copy_to(host),
        "fill": lambda: buffer.fill(1.0),
        "numpy": buffer.numpy,
        "view": lambda: buffer.view(0, 4).fill(1.0),
        "copy_from through a view": lambda: part.copy_from(host[:4]),
        "copy_to_buffer from it": lambda: buffer.copy_to_buffer(other),
        "copy_to_buffer into it": lambda: other.copy_to_buffer(buffer),
        "dispatch": lambda: ADD_ONE.dispatch(SIZE, buffer),
        "add_one captured": lambda: _dispatch_captured(add_captured, other, buffer),
    }
    with expect_error(f"{use} of a destroyed buffer"):
        uses[use]()
        device.synchronize()


def _dispatch_captured(function: object, argument: lnb.Buffer, captured: lnb.Buffer) -> None:
    from .. import kernel_functions

    kernel_functions.captured = captured
    try:
        lnb.kernel(function).dispatch(argument.size, argument)
    finally:
        kernel_functions.captured = None


def destroy_in_flight(backend: str) -> None:
    device = shared_device(backend)
    buffer = device.create_buffer(4096)
    values = sample_values(np.float32, 4096)
    out = np.zeros(4096, np.float32)
    device.default_stream.submit([buffer.copy_from_async(values), buffer.copy_to_async(out)])
    buffer.destroy()
    device.synchronize()
    expect_equal_arrays(out, values, "download of a buffer destroyed while in flight")


def closed_device(backend: str, use: str) -> None:
    from ..kernel_functions import ADD_ONE

    with own_device(backend) as device:
        buffer = device.create_buffer(SIZE)
        stream = device.create_stream()
        command = buffer.fill_async(1.0)
        device.close()
        uses = {
            "create_buffer": lambda: device.create_buffer(SIZE),
            "copy_from": lambda: buffer.copy_from(np.zeros(SIZE, np.float32)),
            "copy_to": lambda: buffer.copy_to(np.zeros(SIZE, np.float32)),
            "fill": lambda: buffer.fill(1.0),
            "numpy": buffer.numpy,
            "create_stream": device.create_stream,
            "submit": lambda: stream.submit([command]),
            "dispatch": lambda: ADD_ONE.dispatch(SIZE, buffer),
            "create_image": lambda: device.create_image(4, 4),
        }
        with expect_error(f"{use} on a closed device"):
            uses[use]()
            stream.synchronize()
        device.close()  # closing twice is fine


def closed_device_stream(backend: str, use: str) -> None:
    with own_device(backend) as device:
        stream = device.create_stream()
        event = device.create_event()
        called = []
        device.close()
        with expecting("either", f"{use} on a closed device's stream"):
            if use == "signal":
                stream.signal(event)
                event.synchronize()
            else:
                stream.add_callback(lambda: called.append(1))
                stream.synchronize()
                expect(called == [1], f"the callback ran {len(called)} times, not once")


def submit_things(backend: str, thing: str) -> None:
    device = shared_device(backend)
    buffer = device.create_buffer(SIZE)
    command = buffer.fill_async(1.0)
    submitted = buffer.fill_async(2.0)
    device.default_stream.submit([submitted])

    def raising():
        yield command
        raise UserError("the generator's own error")

    with own_device("cpu") as other:
        things = {
            "None": None,
            "3": 3,
            "'commands'": "commands",
            "[None]": [None],
            "[3]": [3],
            "a command, not a list": command,
            "a dict": {"command": command},
            "a generator that raises": raising(),
            "a list holding a list": [[command]],
            "the same command twice": [command, command],
            "a command submitted before": [submitted],
            "a command of another device": [other.create_buffer(SIZE).fill_async(1.0)],
        }
        try:
            with expect_error(f"submit({thing})"):
                device.default_stream.submit(things[thing])
        except UserError:
            pass  # the user's own exception, as it should
    device.default_stream.submit([command])  # nothing above submitted it
    device.synchronize()
    expect_equal_arrays(buffer.numpy(), np.ones(SIZE, np.float32), "buffer after the fill")


def stream_argument(backend: str, argument: str, method: str) -> None:
    device = shared_device(backend)
    buffer = device.create_buffer(SIZE)
    with own_device("cpu") as other:
        streams = {
            "'s'": "s",
            "3": 3,
            "True": True,
            "object()": object(),
            "another device's stream": other.default_stream,
        }
        host = np.zeros(SIZE, np.float32)
        calls = {
            "copy_from": lambda stream: buffer.copy_from(host, stream=stream),
            "copy_to": lambda stream: buffer.copy_to(host, stream=stream),
            "fill": lambda stream: buffer.fill(1.0, stream=stream),
            "numpy": lambda stream: buffer.numpy(stream=stream),
        }
        with expect_error(f"{method}(stream={argument})"):
            calls[method](streams[argument])


def cross_device(first: str, second: str, use: str) -> None:
    from ..kernel_functions import ratio

    one = shared_device(first)
    with own_device(second) as two:
        a, b = one.create_buffer(SIZE), two.create_buffer(SIZE)
        uses = {
            "copy_to_buffer": lambda: a.copy_to_buffer(b),
            "submit to the other's stream": lambda: two.default_stream.submit([a.fill_async(1)]),
            "signal the other's event": lambda: one.default_stream.signal(two.create_event()),
            "wait for the other's event": lambda: one.default_stream.wait(two.create_event()),
            "kernel on both": lambda: lnb.kernel(ratio).dispatch(SIZE, a, b, a),
        }
        with expect_error(f"{use} across a {first} and a {second} device"):
            uses[use]()


def copy_between(backend: str, other: str) -> None:
    device = shared_device(backend)
    source = device.create_buffer(SIZE)
    targets = {
        "None": None,
        "a numpy array": np.zeros(SIZE, np.float32),
        "an int32 buffer": device.create_buffer(SIZE, np.int32),
        "a shorter buffer": device.create_buffer(SIZE - 1),
        "a view one longer": device.create_buffer(2 * SIZE).view(0, SIZE + 1),
    }
    with expect_error(f"copy_to_buffer({other})"):
        source.copy_to_buffer(targets[other])


def copy_to_itself(backend: str) -> None:
    device = shared_device(backend)
    buffer = device.create_buffer(SIZE)
    values = sample_values(np.float32, SIZE)
    buffer.copy_from(values)
    buffer.copy_to_buffer(buffer)
    expect_equal_arrays(buffer.numpy(), values, "buffer copied onto itself")


def create_device(name: object, options: dict) -> None:
    try:
        with expect_error(f"create_device({name!r}, {options!r})"):
            lnb.create_device(name, **options).close()
    except LuisaNbError as error:
        expect(str(error).strip(), f"create_device({name!r}) raised an empty message")
        raise


def catalogue() -> list[Case]:
    cases = []
    devices = backends()
    for backend in devices:
        cases += [
            case(
                create_buffer,
                f"create_buffer({spelled(s)}) on {backend}",
                backend,
                s,
                "f4",
                "error",
            )
            for s in INVALID_SIZES
        ]
        cases += [
            case(create_buffer, f"create_buffer({spelled(s)}) on {backend}", backend, s, "f4", "ok")
            for s in VALID_SIZES
        ]
        cases += [
            case(create_buffer, f"create_buffer(16, {title}) on {backend}", backend, 16, d, e)
            for title, (e, d) in DTYPES.items()
        ]
        cases += [
            case(upload, f"copy_from({kind}) on {backend}", backend, kind, "float32", SIZE)
            for kind in HOST_ARRAY_KINDS
        ]
        cases += [
            case(download, f"copy_to({kind}) on {backend}", backend, kind, "float32", SIZE)
            for kind in HOST_ARRAY_KINDS
        ]
        cases += [
            case(fill, f"fill({spelled(v)}) of {d} on {backend}", backend, d, v, e)
            for d, v, e in FILLS
        ]
        cases += [
            case(view, f"view({spelled(a)}, {spelled(b)}) on {backend}", backend, a, b, e)
            for a, b, e in VIEWS
        ]
        cases += [
            case(use_destroyed, f"{use} of a destroyed buffer on {backend}", backend, use)
            for use in DESTROYED_USES
        ]
        cases.append(case(destroy_in_flight, f"destroy in flight on {backend}", backend))
        cases += [
            case(closed_device, f"{use} on a closed {backend} device", backend, use, timeout=20)
            for use in CLOSED_DEVICE_USES
        ]
        cases += [
            case(closed_device_stream, f"{use} on a closed {backend} device", backend, use)
            for use in ("signal", "add_callback")
        ]
        cases += [
            case(copy_between, f"copy_to_buffer({other}) on {backend}", backend, other)
            for other in ("None", "a numpy array", "an int32 buffer", "a shorter buffer")
        ]
        cases.append(case(copy_to_itself, f"copy_to_buffer onto itself on {backend}", backend))
    for backend in ("cpu", "remote"):  # checks made before a backend is involved
        cases += [
            case(submit_things, f"submit({thing}) on {backend}", backend, thing)
            for thing in SUBMITTED_THINGS
        ]
        cases += [
            case(stream_argument, f"{m}(stream={a}) on {backend}", backend, a, m)
            for a in STREAM_ARGUMENTS
            for m in ("copy_from", "copy_to", "fill", "numpy")
        ]
    cases += [
        case(cross_device, f"{use} across {a} and {b}", a, b, use)
        for a, b in (("cpu", "cpu"), ("cpu", "dx"), ("metal", "remote"))
        for use in (
            "copy_to_buffer",
            "submit to the other's stream",
            "signal the other's event",
            "wait for the other's event",
            "kernel on both",
        )
    ]
    cases += [
        case(create_device, f"create_device({name!r}, {options!r})", name, options, timeout=20)
        for name, options in DEVICE_NAMES
    ]
    return cases


def variant(rng: random.Random) -> Case:
    backend = rng.choice(backends())
    dtype = rng.choice(VALID_DTYPES).__name__
    size = rng.choice((1, 2, 3, 17, 100, 1000, 4097))
    kind = rng.choice(list(HOST_ARRAY_KINDS))
    choice = rng.randrange(4)
    if choice < 2:
        action, name = (upload, "copy_from") if choice == 0 else (download, "copy_to")
        title = f"{name}({kind}) {dtype}[{size}] on {backend}"
        return case(action, title, backend, kind, dtype, size)
    if choice == 2:
        start, stop = sorted(rng.randint(-3, SIZE + 3) for _ in range(2))
        start, stop = (stop, start) if rng.random() < 0.2 else (start, stop)
        expectation = "ok" if 0 <= start <= stop <= SIZE else "error"
        return case(view, f"view({start}, {stop}) on {backend}", backend, start, stop, expectation)
    value = rng.choice((rng.randint(-(2**65), 2**65), rng.uniform(-1e6, 1e6), rng.randint(-9, 9)))
    exact = _exact_in(value, dtype)
    return case(
        fill, f"fill({spelled(value)}) of {dtype} on {backend}", backend, dtype, value, exact
    )


def _exact_in(value: float, dtype: str) -> str:
    """``"ok"`` if ``value`` is exactly a ``dtype`` value (floats: a float of that width,
    rounded), else ``"error"``."""
    kind = np.dtype(dtype).kind
    if kind == "f":
        return "ok"
    if kind == "b":
        return "ok" if value in (0, 1) and type(value) is not float else "error"
    info = np.iinfo(dtype)
    return "ok" if float(value).is_integer() and info.min <= value <= info.max else "error"
