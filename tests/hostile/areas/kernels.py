"""Kernels: dispatch sizes, arguments of the wrong kind or number, keyword arguments,
missing dispatch sizes, indices out of range with and without checks, kernels the
language refuses, and Ctrl-C while a kernel runs forever or over a huge dispatch."""

from __future__ import annotations

import contextlib
import math
import random
from collections.abc import Iterator

import numpy as np

import luisa_nb as lnb
from luisa_nb.runtime import Device
from tests.kernels.checked_kernels import spin_forever

from .. import kernel_functions as functions
from ..cases import Case, case
from ..devices import backends, own_device, shared_device
from ..interrupts import ctrl_c_after
from ..oracles import expect, expect_equal_arrays, expect_error, expecting
from ..values import spelled

SIZE = 16
INTERRUPT_SECONDS = 0.3
PROMPT_SECONDS = 5.0
"""How soon after Ctrl-C a wait must give the user the ``KeyboardInterrupt``."""
DISPATCH_SIZES = (
    (16, "ok"), (0, "ok"), ((4, 2), "ok"), ((16, 1, 1), "ok"), (np.int64(16), "ok"),
    ([16], "ok"), ((16, 0), "ok"), (None, "error"), (-1, "error"), (1.5, "error"),
    (math.nan, "error"), ("16", "error"), ((), "error"), ((1, 2, 3, 4), "error"),
    ((2**31,), "error"), (2**31, "error"), (2**63, "error"), (True, "error"),
    ((16.0,), "error"), ((4, -1), "error"), (16 + 0j, "error"), ({16}, "error"),
)  # fmt: skip
SCALE_FACTORS = (
    (2.0, "ok"), (3, "ok"), (np.float32(0.5), "ok"), (math.nan, "ok"), (math.inf, "ok"),
    ("2", "error"), (None, "error"), ([2.0], "error"), (1 + 1j, "error"),
    (np.zeros(2), "error"), (object(), "error"), (b"2", "error"),
)  # fmt: skip
ARGUMENT_MISTAKES = (
    "no arguments", "one argument too many", "None for the buffer", "a numpy array",
    "a list", "an int", "an int32 buffer", "a destroyed buffer", "a keyword argument",
    "keyword and positional", "a buffer of another device, captured one of this",
    "a view", "a 2-d image",
)  # fmt: skip
CALL_MISTAKES = (
    "no dispatch_size", "dispatch_size='16'", "stream='s'", "stream=3",
    "another device's stream", "dispatch() with no size", "size and buffer swapped",
    "dispatch_async submitted twice", "a dispatch_size keyword to dispatch",
    "source() with a string",
)  # fmt: skip
REFUSED_KERNELS = (
    "squares", "recursive", "imports_a_module", "takes_varargs", "yields", "awaits",
    "no_source", "a lambda", "an int", "the builtin print", "mode='gpu'", "checks='maybe'",
    "a class",
)  # fmt: skip
INDICES = (-1, SIZE, 2**31 - 1, -(2**31), 10**6)
STRIDES = (2, 10**3, 10**6, 2**20)


def dispatch_size(backend: str, size: object, expectation: str) -> None:
    out = shared_device(backend).create_buffer(SIZE)
    out.fill(0.0)
    with expecting(expectation, f"dispatch({spelled(size)})") as attempt:
        functions.MARK.dispatch(size, out, SIZE)
        attempt.completed()
        dims = [*np.atleast_1d(np.array(size, dtype=object)).tolist(), 1, 1][:3]
        threads_x = min(int(dims[0]), SIZE) if int(dims[1]) * int(dims[2]) else 0
        expected = (np.arange(SIZE) < threads_x).astype(np.float32)
        expect_equal_arrays(out.numpy(), expected, f"buffer after dispatch({size!r})")


def scale_factor(backend: str, factor: object, expectation: str) -> None:
    a = shared_device(backend).create_buffer(SIZE)
    values = np.arange(SIZE, dtype=np.float32) - 3
    a.copy_from(values)
    with expecting(expectation, f"scale by {factor!r:.30}"):
        functions.SCALE.dispatch(SIZE, a, factor)
        expected = (values * np.float32(factor)).astype(np.float32)
        expect_equal_arrays(a.numpy(), expected, f"buffer after scale({factor!r})")


def argument_mistake(backend: str, mistake: str) -> None:
    device = shared_device(backend)
    a = device.create_buffer(SIZE)
    kernel = functions.ADD_ONE
    destroyed = device.create_buffer(SIZE)
    destroyed.destroy()
    with own_device("cpu") as other:
        calls = {
            "no arguments": lambda: kernel.dispatch(SIZE),
            "one argument too many": lambda: kernel.dispatch(SIZE, a, a),
            "None for the buffer": lambda: kernel.dispatch(SIZE, None),
            "a numpy array": lambda: kernel.dispatch(SIZE, np.zeros(SIZE, np.float32)),
            "a list": lambda: kernel.dispatch(SIZE, [0.0] * SIZE),
            "an int": lambda: kernel.dispatch(SIZE, 3),
            "an int32 buffer": lambda: kernel.dispatch(SIZE, device.create_buffer(SIZE, "i4")),
            "a destroyed buffer": lambda: kernel.dispatch(SIZE, destroyed),
            "a keyword argument": lambda: kernel.dispatch(SIZE, a=a),
            "keyword and positional": lambda: kernel.dispatch(SIZE, a, a=a),
            "a buffer of another device, captured one of this": lambda: _captured_mix(
                a, other.create_buffer(SIZE)
            ),
            "a view": lambda: _add_one_to_a_view(a),
            "a 2-d image": lambda: kernel.dispatch(SIZE, device.create_image(4, 4)),
        }
        expectation = "ok" if mistake == "a view" else "error"
        with expecting(expectation, f"add_one with {mistake}"):
            calls[mistake]()
            device.synchronize()


def _captured_mix(captured: lnb.Buffer, argument: lnb.Buffer) -> None:
    functions.captured = captured
    try:
        lnb.kernel(functions.add_captured).dispatch(SIZE, argument)
    finally:
        functions.captured = None


def _add_one_to_a_view(a: lnb.Buffer) -> None:
    a.fill(1.0)
    functions.ADD_ONE.dispatch(4, a.view(4, 8))
    expected = np.where((np.arange(SIZE) >= 4) & (np.arange(SIZE) < 8), 2.0, 1.0)
    expect_equal_arrays(a.numpy(), expected.astype(np.float32), "buffer after add_one on a view")


def call_mistake(backend: str, mistake: str) -> None:
    device = shared_device(backend)
    a = device.create_buffer(SIZE)
    kernel = functions.ADD_ONE
    command = kernel.dispatch_async(SIZE, a)
    device.default_stream.submit([command])
    with own_device("cpu") as other:
        calls = {
            "no dispatch_size": lambda: kernel(a),
            "dispatch_size='16'": lambda: kernel(a, dispatch_size="16"),
            "stream='s'": lambda: kernel(a, dispatch_size=SIZE, stream="s"),
            "stream=3": lambda: kernel(a, dispatch_size=SIZE, stream=3),
            "another device's stream": lambda: kernel(
                a, dispatch_size=SIZE, stream=other.default_stream
            ),
            "dispatch() with no size": lambda: kernel.dispatch(),
            "size and buffer swapped": lambda: kernel.dispatch(a, SIZE),
            "dispatch_async submitted twice": lambda: device.default_stream.submit([command]),
            "a dispatch_size keyword to dispatch": lambda: kernel.dispatch(a, dispatch_size=SIZE),
            "source() with a string": lambda: kernel.source("a"),
        }
        with expect_error(f"add_one called with {mistake}"):
            calls[mistake]()
            device.synchronize()


def refused_kernel(backend: str, what: str) -> None:
    out = shared_device(backend).create_buffer(SIZE)

    class NotAFunction:
        def __call__(self, out):
            out.write(0, 1.0)

    makers = {
        "a lambda": lambda: lnb.kernel(lambda out: out.write(0, 1.0)),
        "an int": lambda: lnb.kernel(3),
        "the builtin print": lambda: lnb.kernel(print),
        "mode='gpu'": lambda: lnb.kernel(mode="gpu")(functions.add_one),
        "checks='maybe'": lambda: lnb.kernel(checks="maybe")(functions.add_one),
        "a class": lambda: lnb.kernel(NotAFunction()),
    }
    maker = makers.get(what, lambda: lnb.kernel(getattr(functions, what)))
    expectation = "either" if what == "a lambda" else "error"
    with expecting(expectation, f"a kernel from {what}"):
        maker().dispatch(1, out)
        out.numpy()
        expect(what == "a lambda", f"{what} ran as a kernel")


@contextlib.contextmanager
def _device_for(backend: str, checks: object, mode: str) -> Iterator[Device]:
    """The worker's shared device of ``backend``, or for an unchecked compiled kernel,
    whose writes out of range may land anywhere and break what they hit (as documented),
    one of its own (on remote, a server session of its own)."""
    if _unchecked_c(checks, mode):
        with own_device(backend) as device:
            yield device
    else:
        yield shared_device(backend)


def index_out_of_range(backend: str, index: int, checks: object, mode: str) -> None:
    with _device_for(backend, checks, mode) as device:
        out = device.create_buffer(SIZE)
        out.fill(0.0)
        kernel = lnb.kernel(mode=mode, checks=checks)(functions.write_at)
        expectation = "error" if checks else "either"
        with expecting(expectation, f"write_at({index}) with checks={checks}"):
            kernel.dispatch(1, out, index)
            expect_equal_arrays(out.numpy(), np.zeros(SIZE, np.float32), "buffer after the write")


def stride_out_of_range(backend: str, stride: int, checks: object, mode: str) -> None:
    with _device_for(backend, checks, mode) as device:
        out = device.create_buffer(SIZE)
        out.fill(0.0)
        kernel = lnb.kernel(mode=mode, checks=checks)(functions.stride_write)
        expectation = "either" if not checks else "error"
        with expecting(expectation, f"stride_write({stride}) with checks={checks}"):
            kernel.dispatch(SIZE, out, stride)
            expected = (np.arange(SIZE) % stride == 0).astype(np.float32)
            expect_equal_arrays(out.numpy(), expected, f"in-range elements after {stride}")


def non_finite(backend: str, checks: object) -> None:
    device = shared_device(backend)
    a, b, out = (device.create_buffer(SIZE) for _ in range(3))
    a.fill(0.0)
    b.fill(0.0)
    kernel = lnb.kernel(checks=checks)(functions.ratio)
    with expecting("error" if checks == "nan" else "ok", f"0/0 with checks={checks!r}"):
        kernel.dispatch(SIZE, a, b, out)
        expect(np.isnan(out.numpy()).all(), "0/0 is not NaN everywhere")


HUGE = (2**31 - 1, 2**31 - 1, 1)


def interrupt_kernel(
    backend: str, kind: str, mode: str, dims: tuple = HUGE, delay: float = INTERRUPT_SECONDS
) -> None:
    """Ctrl-C ``delay`` seconds into a kernel that runs forever (or over ``dims``
    threads): the user gets KeyboardInterrupt soon, and the device keeps working."""
    device = shared_device(backend)
    out = device.create_buffer(SIZE)
    if kind == "huge dispatch":
        kernel = lnb.kernel(mode=mode)(functions.mark)
        kernel.dispatch(SIZE, out, SIZE)
        device.synchronize()  # compiled before the clock starts
        kernel.dispatch(dims, out, SIZE)
    else:
        lnb.kernel(mode=mode)(spin_forever).dispatch(SIZE, out)
    with ctrl_c_after(delay) as interrupted:
        device.synchronize()
    expect(interrupted.seconds is not None, f"synchronize() returned from a {kind}")
    expect(
        interrupted.seconds < PROMPT_SECONDS,
        f"KeyboardInterrupt came {interrupted.seconds:.1f} s after Ctrl-C",
    )
    device.synchronize()
    out.fill(1.0)
    functions.ADD_ONE.dispatch(SIZE, out)
    expect_equal_arrays(out.numpy(), np.full(SIZE, 2.0, np.float32), "add_one after Ctrl-C")


def catalogue() -> list[Case]:
    cases = []
    for backend in backends():
        cases += [
            case(dispatch_size, f"dispatch({spelled(s)}) on {backend}", backend, s, e)
            for s, e in DISPATCH_SIZES
        ]
        cases += [
            case(scale_factor, f"scale by {spelled(f)} on {backend}", backend, f, e)
            for f, e in SCALE_FACTORS
        ]
        cases += [
            case(argument_mistake, f"add_one with {m} on {backend}", backend, m)
            for m in ARGUMENT_MISTAKES
        ]
        cases += [
            case(call_mistake, f"add_one called with {m} on {backend}", backend, m)
            for m in CALL_MISTAKES
        ]
        for checks in (True, False):
            for mode in ("c", "python"):
                title = f"with checks={checks} in {mode} mode on {backend}"
                cases += [
                    case(index_out_of_range, f"write_at({spelled(i)}) {title}", backend, i,
                         checks, mode, isolated=_unchecked_c(checks, mode))
                    for i in INDICES
                ]  # fmt: skip
                cases += [
                    case(stride_out_of_range, f"stride {spelled(s)} {title}", backend, s,
                         checks, mode, isolated=_unchecked_c(checks, mode))
                    for s in STRIDES
                ]  # fmt: skip
        cases += [
            case(non_finite, f"0/0 with checks={c!r} on {backend}", backend, c)
            for c in (True, "nan")
        ]
        cases += [
            case(interrupt_kernel, f"Ctrl-C in a {kind} ({mode}) on {backend}", backend, kind,
                 mode, timeout=15, isolated=True)
            for kind in ("kernel that never ends", "huge dispatch")
            for mode in ("c", "python")
        ]  # fmt: skip
    cases += [
        case(refused_kernel, f"a kernel from {what}", "cpu", what) for what in REFUSED_KERNELS
    ]
    return cases


def variant(rng: random.Random) -> Case:
    backend = rng.choice(backends())
    choice = rng.randrange(3)
    if choice == 0:
        dims = tuple(
            rng.choice((0, 1, 3, 16, 17, 100, -1, 2**31)) for _ in range(rng.randint(1, 3))
        )
        valid = all(0 <= d < 2**31 for d in dims)
        return case(dispatch_size, f"dispatch({dims}) on {backend}", backend, dims,
                    "ok" if valid else "error")  # fmt: skip
    checks, mode = rng.choice((True, False)), rng.choice(("c", "python"))
    title = f"with checks={checks} in {mode} mode on {backend}"
    if choice == 1:
        index = rng.choice((rng.randint(SIZE, 10**9), -rng.randint(1, 10**9)))
        return case(index_out_of_range, f"write_at({index}) {title}", backend, index, checks,
                    mode, isolated=_unchecked_c(checks, mode))  # fmt: skip
    stride = rng.randint(2, 10**7)
    return case(stride_out_of_range, f"stride {stride} {title}", backend, stride, checks, mode,
                isolated=_unchecked_c(checks, mode))  # fmt: skip


def _unchecked_c(checks: object, mode: str) -> bool:
    """Whether a kernel may write outside its buffers (a worker that ran it is replaced)."""
    return not checks and mode == "c"
