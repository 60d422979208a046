"""``luisa_nb.luisa`` used wrongly: lists of mixed and overflowing values, buffers and
images of hostile sizes, streams that are not streams, functions called without a
dispatch size or with wrong arguments, and use before ``init()`` or after
``del_device()``."""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

import luisa_nb.luisa as luisa
from luisa_nb.luisa.builtin import dispatch_id

from ..cases import Case, case
from ..oracles import expect, expect_equal_arrays, expect_error, expecting
from ..values import spelled

FROM_LISTS = (
    ([1, 2, 3], "ok"), ([1.5, 2.0, -3.0], "ok"), ([1.5, 2, -3], "error"), ([True, False], "ok"),
    ([math.nan, 1.0], "ok"),
    ([-(2**31), 2**31 - 1], "ok"), ([2**40, 1], "error"), ([1, 2.5, 3.7], "error"),
    ([2**31], "error"), ([1, 2**63], "error"), ([True, 2], "error"), ([], "error"),
    ([None], "error"), (["a"], "error"), ([1, "a"], "error"), ([[1, 2], [3]], "error"),
    ([1, None], "error"), ([1, 1 + 2j], "error"), ([1, [2]], "error"), ([1.0, "2"], "error"),
    ([b"x"], "error"), ([1, math.inf], "error"),
)  # fmt: skip
"""Lists for ``Buffer.from_list``: its element type is the first value's, and every value
must be exactly a value of that type."""
BUFFER_ARGUMENTS = (
    ((16, float), "ok"), ((16, int), "ok"), ((3, bool), "ok"), ((0, float), "error"),
    ((-1, float), "error"), ((2**40, float), "error"), ((2**62, float), "error"),
    ((1.5, float), "error"), (("16", float), "error"), ((16, complex), "error"),
    ((16, str), "error"), ((16, None), "error"), ((None, float), "error"),
    ((16, "nonsense"), "error"),
)  # fmt: skip
IMAGES = (
    ((16, 16, 4), "ok"), ((4, 8, 1, int), "ok"), ((2**20, 2**20, 4), "error"),
    ((2**16, 2**16, 4), "either"), ((0, 4, 4), "error"), ((-1, 4, 4), "error"),
    ((4, 4, 3), "either"), ((4, 4, 5), "error"), ((4, 4, 0), "error"), ((1.5, 4, 4), "error"),
    ((4, 4, 4, complex), "error"), ((4, 4, 4, float, 1, "nonsense"), "error"),
    ((4, None, 4), "error"), ((2**31, 1, 1), "either"),
)  # fmt: skip
"""Image sizes: an image of more than 2**40 bytes cannot be allocated and must be refused;
one of several GiB may be made or refused, with a luisa_nb error."""
IMAGE_SIZES = (
    (1, 1), (3, 5), (64, 64), (0, 4), (4, -2), (2**20, 2**20), (2**31, 1), (1, 2**31),
    (2**16, 2**16), (2**30, 2**30), (-(2**31), -(2**31)),
)  # fmt: skip
MISUSES = (
    "synchronize('x')", "synchronize(3)", "execute('x')", "copy_from(stream='s')",
    "copy_to(stream=3)", "numpy(stream='s')", "f(buffer) without dispatch_size",
    "f(buffer, dispatch_size='16')", "f(buffer, dispatch_size=None)",
    "f(buffer, dispatch_size=-1)", "f(dispatch_size=16)", "f(buffer, buffer, dispatch_size=16)",
    "f(a=buffer, dispatch_size=16)", "f(buffer, dispatch_size=16, stream='s')",
    "f(an int buffer) against BufferType(float)", "f(a numpy array, dispatch_size=16)",
    "copy_to(a list)", "copy_from(a list one too long)",
    "from_array(an object array)", "from_array(a structured array)",
    "Accel().add(a float buffer, a float buffer)", "luisa.half", "Stream(3)",
    "Buffer(16, float).copy_from(None)",
)  # fmt: skip
SESSION_MISUSES = (
    "Buffer before init()", "init('nope')", "init(3)", "init('cpu:later')",
    "a buffer after del_device()", "synchronize() after del_device()",
    "a function after del_device()",
)  # fmt: skip


@contextmanager
def session() -> Iterator[None]:
    """``luisa.init('cpu')`` for the case; the device is dropped after it."""
    luisa.init("cpu")
    try:
        yield
    finally:
        luisa.del_device()


@luisa.func
def add_one(values: luisa.BufferType(float)):
    i = dispatch_id().x
    values.write(i, values.read(i) + 1.0)


def from_list(values: list, expectation: str) -> None:
    """The buffer holds the values: exactly, or (a list of floats) as float32 rounds them."""
    with session(), expecting(expectation, f"Buffer.from_list({values!r:.60})"):
        buffer = luisa.Buffer.from_list(values)
        stored = buffer.to_list()
        if isinstance(values[0], float):
            values = [float(np.float32(value)) for value in values]
        expect(
            len(stored) == len(values)
            and all(a == b or (a != a and b != b) for a, b in zip(stored, values, strict=True)),
            f"from_list({values!r:.60}) stored {stored!r:.60}",
        )


def buffer_arguments(arguments: tuple, expectation: str) -> None:
    with session(), expecting(expectation, f"Buffer{arguments!r}") as attempt:
        buffer = luisa.Buffer(*arguments)
        attempt.completed()
        values = np.zeros(buffer.size, buffer.dtype)
        values[::2] = 1
        buffer.copy_from(values)
        expect_equal_arrays(buffer.numpy(), values, f"round trip of Buffer{arguments!r}")


def image(arguments: tuple, expectation: str) -> None:
    """The image has the size asked for, and (up to 2**20 values) its texels round-trip."""
    with session(), expecting(expectation, f"Image2D{arguments!r}") as attempt:
        created = luisa.Image2D(*arguments)
        attempt.completed()
        shape = created.host_shape
        expect(shape[:2] == (arguments[1], arguments[0]), f"Image2D{arguments!r} is {shape}")
        if np.prod(shape) <= 2**20:
            values = np.arange(np.prod(shape)).reshape(shape).astype(created.dtype)
            created.copy_from(values)
            expect_equal_arrays(created.numpy(), values, f"round trip of Image2D{arguments!r}")


def misuse(what: str) -> None:
    with session():
        buffer = luisa.Buffer.zeros(16, float)
        uses = {
            "synchronize('x')": lambda: luisa.synchronize("x"),
            "synchronize(3)": lambda: luisa.synchronize(3),
            "execute('x')": lambda: luisa.execute("x"),
            "copy_from(stream='s')": lambda: buffer.copy_from(np.zeros(16, np.float32), stream="s"),
            "copy_to(stream=3)": lambda: buffer.copy_to(np.zeros(16, np.float32), stream=3),
            "numpy(stream='s')": lambda: buffer.numpy(stream="s"),
            "f(buffer) without dispatch_size": lambda: add_one(buffer),
            "f(buffer, dispatch_size='16')": lambda: add_one(buffer, dispatch_size="16"),
            "f(buffer, dispatch_size=None)": lambda: add_one(buffer, dispatch_size=None),
            "f(buffer, dispatch_size=-1)": lambda: add_one(buffer, dispatch_size=-1),
            "f(dispatch_size=16)": lambda: add_one(dispatch_size=16),
            "f(buffer, buffer, dispatch_size=16)": lambda: add_one(
                buffer, buffer, dispatch_size=16
            ),
            "f(a=buffer, dispatch_size=16)": lambda: add_one(values=buffer, dispatch_size=16),
            "f(buffer, dispatch_size=16, stream='s')": lambda: add_one(
                buffer, dispatch_size=16, stream="s"
            ),
            "f(an int buffer) against BufferType(float)": lambda: add_one(
                luisa.Buffer(16, int), dispatch_size=16
            ),
            "f(a numpy array, dispatch_size=16)": lambda: add_one(np.zeros(16), dispatch_size=16),
            "copy_to(a list)": lambda: buffer.copy_to([0.0] * 16),
            "copy_from(a list one too long)": lambda: buffer.copy_from([0.0] * 17),
            "from_array(an object array)": lambda: luisa.Buffer.from_array(
                np.array([1, "a"], dtype=object)
            ),
            "from_array(a structured array)": lambda: luisa.Buffer.from_array(
                np.zeros(4, [("a", "<f4"), ("b", "<i8")])
            ),
            "Accel().add(a float buffer, a float buffer)": lambda: luisa.Accel().add(
                buffer, buffer
            ),
            "luisa.half": lambda: luisa.half(1.0),
            "Stream(3)": lambda: luisa.Stream(3).synchronize(),
            "Buffer(16, float).copy_from(None)": lambda: buffer.copy_from(None),
        }
        with expect_error(what):
            uses[what]()
            luisa.synchronize()


def session_misuse(what: str) -> None:
    if what == "Buffer before init()":
        with expect_error(what):
            luisa.Buffer(16, float)
        return
    if what.startswith("init("):
        argument = {"init('nope')": "nope", "init(3)": 3, "init('cpu:later')": "cpu:later"}[what]
        try:
            with expect_error(what):
                luisa.init(argument)
        finally:
            luisa.del_device()
        return
    with session():
        buffer = luisa.Buffer.zeros(16, float)
        luisa.synchronize()
    uses = {
        "a buffer after del_device()": buffer.numpy,
        "synchronize() after del_device()": luisa.synchronize,
        "a function after del_device()": lambda: add_one(buffer, dispatch_size=16),
    }
    with expect_error(what):
        uses[what]()


def function_call(expectation: str) -> None:
    """The control: a luisa function called as luisa-python calls it."""
    with session(), expecting(expectation, "add_one(buffer, dispatch_size=16)"):
        buffer = luisa.Buffer.from_array(np.arange(16, dtype=np.float32))
        add_one(buffer, dispatch_size=16)
        luisa.synchronize()
        expect_equal_arrays(buffer.numpy(), np.arange(1, 17, dtype=np.float32), "add_one")


def catalogue() -> list[Case]:
    cases = [
        case(from_list, f"Buffer.from_list({spelled(values)})", values, expectation)
        for values, expectation in FROM_LISTS
    ]
    cases += [case(buffer_arguments, f"Buffer{spelled(a)}", a, e) for a, e in BUFFER_ARGUMENTS]
    cases += [case(image, f"Image2D{spelled(a)}", a, e) for a, e in IMAGES]
    cases += [case(misuse, what, what) for what in MISUSES]
    cases += [case(session_misuse, what, what) for what in SESSION_MISUSES]
    cases.append(case(function_call, "add_one(buffer, dispatch_size=16)", "ok"))
    return cases


def variant(rng: random.Random) -> Case:
    choice = rng.random()
    if choice < 0.4:
        first = rng.choice((rng.randint(-9, 9), rng.uniform(-9, 9), rng.uniform(-9, 9), True))
        values = [first] + [
            rng.choice((rng.randint(-(2**40), 2**40), rng.randint(-9, 9), rng.uniform(-9, 9)))
            for _ in range(rng.randint(0, 5))
        ]
        title = f"Buffer.from_list({spelled(values)})"
        return case(from_list, title, values, _from_list_exact(values))
    if choice < 0.7:
        width, height = rng.choice(IMAGE_SIZES)
        arguments = (width, height, rng.choice((1, 2, 4, 3, 8)))
        return case(
            image, f"Image2D{spelled(arguments)}", arguments, _image_expectation(*arguments)
        )
    size = rng.choice((1, 5, 2**10, 2**20, 2**40, 2**50, 0, -7))
    dtype = rng.choice((float, int, bool, luisa.uint, complex))
    valid = 0 < size <= 2**20 and dtype is not complex
    expectation = "ok" if valid else "error"
    return case(buffer_arguments, f"Buffer{spelled((size, dtype))}", (size, dtype), expectation)


def _image_expectation(width: int, height: int, channels: int) -> str:
    if width <= 0 or height <= 0 or channels not in (1, 2, 3, 4):
        return "error"
    if width * height * channels * 4 > 2**40:
        return "error"
    if channels == 3 or width * height > 4096:
        return "either"
    return "ok"


def _from_list_exact(values: list) -> str:
    """``"ok"`` when every value is a value of the first one's type, as luisa-python asks
    (bool, int32, or a float that float32 holds, rounded)."""
    first = values[0]
    if isinstance(first, bool):
        return "ok" if all(isinstance(v, bool) for v in values) else "error"
    if isinstance(first, int):
        exact = all(type(v) is int and -(2**31) <= v < 2**31 for v in values)
        return "ok" if exact else "error"
    return "ok" if all(type(v) is float and abs(v) < 3e38 for v in values) else "error"
