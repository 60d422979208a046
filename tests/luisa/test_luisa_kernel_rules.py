"""luisa-python's kernel rules: ``luisa.func`` kernels compute integer ``//`` and ``%`` as
C does, float ``//`` as a division, reject float ``%``, leave a ``for`` variable at its
loop's end value, and convert with ``uint(x)``; in C and in Python mode, beside real
luisa-python where it runs. luisa_nb's own kernels keep Python's rules."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import luisa_nb as lnb
import luisa_nb.luisa as luisa
from luisa_nb.errors import ConfigurationError, KernelCompileError
from luisa_nb.kernels import BufferType, KernelDefinition, ScalarType, dispatch_id, int2
from luisa_nb.kernels.rules import LUISA_RULES, PYTHON_RULES, KernelRules
from luisa_nb.luisa.types import long, uint, ulong
from luisa_nb.runtime import Kernel
from tests.luisa.running import require_real_luisa, run_on_luisa_nb, run_on_real_luisa

PROGRAM = Path(__file__).parent / "programs" / "kernel_rules.py"
MODES = ["c", "python"]
RULES = {"luisa": LUISA_RULES, "python": PYTHON_RULES}
INT32_MIN = -(2**31)
LEFT = np.array([-7, 7, -7, 7, -8, 0, 9, -1, INT32_MIN, 5, -9], np.int32)
RIGHT = np.array([2, 2, -2, -2, 3, 5, -4, 3, -1, 0, 4], np.int32)
NEGATIVE = -3  # captured: constant conditions fold by the kernel's rules too
COLUMNS = 12


def wrap32(value: int) -> int:
    return (value + 2**31) % 2**32 - 2**31


def c_quotient(a: int, b: int) -> int:
    """C's ``a / b`` (0 for a zero divisor, as luisa_nb's helpers give)."""
    return 0 if b == 0 else wrap32(math.trunc(a / b))


def c_remainder(a: int, b: int) -> int:
    return 0 if b == 0 else wrap32(int(math.fmod(a, b)))


def python_quotient(a: int, b: int) -> int:
    return 0 if b == 0 else wrap32(a // b)


def python_remainder(a: int, b: int) -> int:
    return 0 if b == 0 else wrap32(a % b)


def divisions(left, right, out, fout):
    i = dispatch_id().x
    a = left.read(i)
    b = right.read(i)
    row = i * COLUMNS
    out.write(row, a // b)
    out.write(row + 1, a % b)
    c = a
    c //= b
    out.write(row + 2, c)
    d = a
    d %= b
    out.write(row + 3, d)
    v = int2(a, -a) % int2(b, b)
    out.write(row + 4, v.x)
    out.write(row + 5, v.y)
    w = int2(a, 1) // b
    out.write(row + 6, w.x)
    out.write(row + 7, (-7 // 2) * 100 + (-7 % 2) * 10 + 7 % -2)
    out.write(row + 8, 1 if NEGATIVE % 2 == -1 else 0)
    fout.write(i * 2, float(a) // float(b))
    fout.write(i * 2 + 1, -7.5 // 2.0)


def loops(left, out):
    i = dispatch_id().x
    a = left.read(i)
    row = i * 5
    for ran in range(2, 11, 4):  # noqa: B007 (read after the loop)
        pass
    out.write(row, ran)
    for broke in range(10):
        if broke == i:
            break
    out.write(row + 1, broke)
    for down in range(10, 0, -3):  # noqa: B007 (read after the loop)
        pass
    out.write(row + 2, down)
    for counted in range(i + 1):  # noqa: B007 (read after the loop)
        pass
    out.write(row + 3, counted)
    for never in range(a + 20, 3):  # noqa: B007 (read after the loop)
        pass
    out.write(row + 4, never)


def run_divisions(rules: KernelRules, mode: str) -> tuple[np.ndarray, np.ndarray]:
    threads = len(LEFT)
    left, right = luisa.Buffer.from_array(LEFT), luisa.Buffer.from_array(RIGHT)
    out = luisa.Buffer.zeros(threads * COLUMNS, int)
    fout = luisa.Buffer.zeros(threads * 2, float)
    Kernel(divisions, mode=mode, rules=rules)(left, right, out, fout, dispatch_size=threads)
    return out.numpy().reshape(threads, COLUMNS), fout.numpy().reshape(threads, 2)


@pytest.mark.parametrize("mode", MODES)
def test_luisa_rules_divide_integers_as_c_does(fresh_session, mode):
    luisa.init("cpu")
    values, floats = run_divisions(LUISA_RULES, mode)
    pairs = list(zip(LEFT.tolist(), RIGHT.tolist(), strict=True))
    quotients = [c_quotient(a, b) for a, b in pairs]
    remainders = [c_remainder(a, b) for a, b in pairs]
    assert quotients[:3] == [-3, 3, 3] and remainders[:3] == [-1, 1, -1]
    np.testing.assert_array_equal(values[:, 0], quotients)
    np.testing.assert_array_equal(values[:, 1], remainders)
    np.testing.assert_array_equal(values[:, 2], quotients)  # //=
    np.testing.assert_array_equal(values[:, 3], remainders)  # %=
    np.testing.assert_array_equal(values[:, 4], remainders)  # int2 % int2
    np.testing.assert_array_equal(values[:, 5], [c_remainder(wrap32(-a), b) for a, b in pairs])
    np.testing.assert_array_equal(values[:, 6], quotients)  # int2 // int
    assert (values[:, 7] == -3 * 100 + -1 * 10 + 1).all()  # folded literals
    assert (values[:, 8] == 1).all()  # -3 % 2 == -1 in a constant condition
    with np.errstate(divide="ignore", invalid="ignore"):
        divided = LEFT.astype(np.float32) / RIGHT.astype(np.float32)
    np.testing.assert_array_equal(floats[:, 0], divided)  # float // is a division
    assert (floats[:, 1] == -3.75).all()


@pytest.mark.parametrize("mode", MODES)
def test_python_rules_keep_floored_division(fresh_session, mode):
    luisa.init("cpu")
    values, floats = run_divisions(PYTHON_RULES, mode)
    pairs = list(zip(LEFT.tolist(), RIGHT.tolist(), strict=True))
    quotients = [python_quotient(a, b) for a, b in pairs]
    remainders = [python_remainder(a, b) for a, b in pairs]
    assert quotients[:3] == [-4, 3, 3] and remainders[:3] == [1, 1, -1]
    for column, expected in enumerate([quotients, remainders, quotients, remainders]):
        np.testing.assert_array_equal(values[:, column], expected)
    np.testing.assert_array_equal(values[:, 4], remainders)
    np.testing.assert_array_equal(values[:, 6], quotients)
    assert (values[:, 7] == -4 * 100 + 1 * 10 - 1).all()
    assert (values[:, 8] == 0).all()  # -3 % 2 == 1
    with np.errstate(divide="ignore", invalid="ignore"):
        floored = np.floor_divide(LEFT.astype(np.float32), RIGHT.astype(np.float32))
    np.testing.assert_array_equal(floats[:, 0], floored)
    assert (floats[:, 1] == -4.0).all()


@pytest.mark.parametrize("mode", MODES)
def test_luisa_rules_leave_the_loop_counter_at_its_end_value(fresh_session, mode):
    luisa.init("cpu")
    threads = len(LEFT)
    starts = np.arange(threads, dtype=np.int32) - 5  # `never` does not run
    left = luisa.Buffer.from_array(starts)
    out = luisa.Buffer.zeros(threads * 5, int)
    Kernel(loops, mode=mode, rules=LUISA_RULES)(left, out, dispatch_size=threads)
    values = out.numpy().reshape(threads, 5)
    assert (values[:, 0] == 14).all()  # 2 + 3 * 4, where Python leaves 10
    np.testing.assert_array_equal(values[:, 1], np.minimum(np.arange(threads), 10))
    assert (values[:, 2] == -2).all()  # 10 + 4 * -3: Python's iterations, C's end value
    np.testing.assert_array_equal(values[:, 3], np.arange(threads) + 1)  # range(i + 1)
    np.testing.assert_array_equal(values[:, 4], starts + 20)  # never ran: the start


@pytest.mark.parametrize("mode", MODES)
def test_python_rules_leave_the_last_value(fresh_session, mode):
    luisa.init("cpu")
    threads = len(LEFT)
    left = luisa.Buffer.from_array(np.full(threads, -30, np.int32))  # every loop runs
    out = luisa.Buffer.zeros(threads * 5, int)
    Kernel(loops, mode=mode, rules=PYTHON_RULES)(left, out, dispatch_size=threads)
    values = out.numpy().reshape(threads, 5)
    assert (values[:, 0] == 10).all()
    np.testing.assert_array_equal(values[:, 1], np.minimum(np.arange(threads), 9))
    assert (values[:, 2] == 1).all()
    np.testing.assert_array_equal(values[:, 3], np.arange(threads))
    assert (values[:, 4] == 2).all()  # range(-10, 3) ends at 2


def test_luisa_func_follows_luisa_rules_and_lnb_kernel_python_rules(fresh_session):
    luisa.init("cpu")
    out = luisa.Buffer.zeros(4, int)

    def small(out):
        a = -7 + int(dispatch_id().x)
        out.write(0, a // 2)
        out.write(1, a % 2)
        for k in range(3):  # noqa: B007 (read after the loop)
            pass
        out.write(2, k)

    luisa.func(small)(out, dispatch_size=1)
    assert out.numpy()[:3].tolist() == [-3, -1, 3]
    lnb.kernel(small)(out, dispatch_size=1)
    assert out.numpy()[:3].tolist() == [-4, 1, 2]
    lnb.kernel(rules=LUISA_RULES)(small)(out, dispatch_size=1)
    assert out.numpy()[:3].tolist() == [-3, -1, 3]


def test_a_callable_follows_its_own_definitions_rules(fresh_session):
    luisa.init("cpu")
    out = luisa.Buffer.zeros(2, int)

    @luisa.func
    def luisa_half(a):
        return a // 2

    @lnb.kernel
    def python_half(a):
        return a // 2

    @luisa.func
    def both(out):
        a = -7 + int(dispatch_id().x)
        out.write(0, luisa_half(a))
        out.write(1, python_half(a))

    both(out, dispatch_size=1)
    assert out.numpy().tolist() == [-3, -4]


@pytest.mark.parametrize("mode", MODES)
def test_float_remainder_is_a_compile_error_under_luisa_rules(fresh_session, mode):
    luisa.init("cpu")
    out = luisa.Buffer.zeros(2, float)

    def remainder(out):
        x = float(dispatch_id().x) + 0.5
        out.write(0, x % 2.0)

    with pytest.raises(KernelCompileError, match=r"operator % on float32.*fmod") as error:
        Kernel(remainder, mode=mode, rules=LUISA_RULES)(out, dispatch_size=1)
    assert error.value.lineno == remainder.__code__.co_firstlineno + 2
    Kernel(remainder, mode=mode, rules=PYTHON_RULES)(out, dispatch_size=1)
    assert out.numpy()[0] == 0.5


@pytest.mark.parametrize("mode", MODES)
def test_uint_and_the_other_scalar_names_convert_in_kernels(fresh_session, mode):
    luisa.init("cpu")
    source = luisa.Buffer.from_array(np.array([-3, 7], np.int32))
    unsigned = luisa.Buffer.zeros(8, luisa.uint)
    wide = luisa.Buffer.zeros(4, np.int64)
    wide_unsigned = luisa.Buffer.zeros(2, np.uint64)

    def conversions(source, unsigned, wide, wide_unsigned):
        x = source.read(0)
        u = uint(3)
        unsigned.write(0, u - uint(5))
        unsigned.write(1, uint(-1))
        unsigned.write(2, uint(x))
        unsigned.write(3, uint(2.9))
        unsigned.write(4, uint(True))
        unsigned.write(5, uint(float(source.read(1)) * 1.5))
        unsigned.write(6, uint(x) // uint(7))
        unsigned.write(7, uint(x) % uint(7))
        wide.write(0, long(x) * long(1 << 20))
        wide.write(1, long(2**40))
        wide.write(2, long(uint(x)))
        wide.write(3, int(uint(x)))
        wide_unsigned.write(0, ulong(-1))
        wide_unsigned.write(1, ulong(x))

    for rules in RULES.values():
        kernel = Kernel(conversions, mode=mode, rules=rules)
        kernel(source, unsigned, wide, wide_unsigned, dispatch_size=1)
        wrapped = 2**32 - 3
        assert unsigned.numpy().tolist() == [
            2**32 - 2,
            2**32 - 1,
            wrapped,
            2,
            1,
            10,
            wrapped // 7,
            wrapped % 7,
        ]
        assert wide.numpy().tolist() == [-3 * 2**20, 2**40, wrapped, -3]
        assert wide_unsigned.numpy().tolist() == [2**64 - 1, 2**64 - 3]


def test_scalar_names_convert_on_the_host_as_in_kernels():
    assert uint(-1) == np.uint32(2**32 - 1) and type(uint(-1)) is np.uint32
    assert uint(np.int32(-2)) == 2**32 - 2
    assert long(3.9) == 3 and type(long(3.9)) is np.int64
    assert ulong(True) == 1 and type(ulong(True)) is np.uint64
    assert np.dtype(uint) == np.uint32 and uint.kernel_type is ScalarType.UINT32
    with pytest.raises(lnb.errors.InvalidArgumentError, match="uint32"):
        uint("3")


def test_16_bit_names_are_unsupported_in_kernels(fresh_session):
    luisa.init("cpu")
    out = luisa.Buffer.zeros(1, float)

    @luisa.func
    def halves(out):
        out.write(0, float(luisa.types.half(1.0)))

    with pytest.raises(KernelCompileError, match="does not support"):
        halves(out, dispatch_size=1)


def test_the_rules_are_part_of_the_compiled_kernel():
    def halve(out):
        out.write(0, -7 + int(dispatch_id().x) // 2)

    types = (BufferType(ScalarType.INT32),)
    sources = {
        name: KernelDefinition(halve, mode="c", rules=rules).executable(types).source
        for name, rules in RULES.items()
    }
    assert "luisa rules" in sources["luisa"].splitlines()[0]
    assert "lnb_div_int32" in sources["luisa"] and "lnb_floordiv_int32" in sources["python"]
    assert "rules" not in sources["python"].splitlines()[0]
    assert repr(KernelDefinition(halve, rules=LUISA_RULES)).endswith("rules=luisa>")
    with pytest.raises(ConfigurationError, match="LUISA_RULES"):
        KernelDefinition(halve, rules="luisa")


def printed_rows(output: str) -> dict[str, str]:
    rows = (line.split(" ", 1) for line in output.splitlines() if " " in line)
    return {name: values for name, values in rows if not name.startswith("[")}


def test_the_program_gives_luisa_values(fresh_session, capsys):
    run_on_luisa_nb(PROGRAM, "cpu")
    rows = printed_rows(capsys.readouterr().out)
    assert rows["quotient"] == "-3 3 3 -3 -2 0 -2 0"
    assert rows["remainder"] == "-1 1 -1 1 -2 0 1 -1"
    assert rows["float_quotient"] == "-350 350 350 -350 -266 0 -225 -33"
    assert rows["ran"] == "0 1 2 3 4 5 6 7"
    assert rows["never_ran"] == "13 27 13 27 12 20 29 19"
    assert rows["stepped"] == "13 13 13 13 14 12 11 14"
    assert rows["literals"] == " ".join(["-309"] * 8)


def test_the_program_matches_real_luisa(fresh_session, capsys):
    require_real_luisa()
    real = printed_rows(run_on_real_luisa(PROGRAM, "cpu"))
    run_on_luisa_nb(PROGRAM, "cpu")
    ours = printed_rows(capsys.readouterr().out)
    assert len(ours) == 14
    assert ours == {name: real[name] for name in ours}


def sign_mixing(source, out):
    a = source.read(0)
    b = source.read(1)
    out.write(0, 1 if a < uint(2) else 0)  # -1 compares as 4294967295
    out.write(1, 1 if uint(2) > -1 else 0)  # the literal wraps too
    mixed = int2(a, b) + luisa.uint2(uint(1), uint(1))
    out.write(2, int(mixed.x))
    out.write(3, 1 if all(int2(a, b) < luisa.uint2(uint(2), uint(2))) else 0)
    out.write(4, int(max(a, uint(5))))
    count = uint(0)
    count += a  # 4294967295: the sum of a uint and an int is a uint, as in C
    out.write(5, 1 if count > uint(5) else 0)


@pytest.mark.parametrize("mode", MODES)
def test_luisa_rules_mix_signed_and_unsigned_as_c_does(fresh_session, mode):
    luisa.init("cpu")
    source = luisa.Buffer.from_array(np.array([-1, 3], np.int32))
    out = luisa.Buffer.zeros(6, int)
    Kernel(sign_mixing, mode=mode, rules=LUISA_RULES)(source, out, dispatch_size=1)
    # as real luisa-python 0.3.7 gives: int32 with uint32 is uint32
    assert out.numpy().tolist() == [0, 0, 0, 0, -1, 1]
    with pytest.raises(KernelCompileError, match="mixing signed int32 and unsigned uint32"):
        Kernel(sign_mixing, mode=mode, rules=PYTHON_RULES)(source, out, dispatch_size=1)


def vector_booleans(source, out):
    v = luisa.float3(source.read(0), source.read(1), source.read(2))
    low = v > luisa.float3(0.0)
    high = v < luisa.float3(2.0)
    both = low and high
    either = (v < luisa.float3(-1.0)) or (high and low)
    out.write(0, 1 if all(both == luisa.bool3(False, True, False)) else 0)
    out.write(1, 1 if all(either == luisa.bool3(False, True, False)) else 0)
    out.write(2, 1 if (source.read(0) < 0.0 and source.read(1) > 0.0) else 0)


@pytest.mark.parametrize("mode", MODES)
def test_luisa_rules_combine_bool_vectors_with_and_and_or(fresh_session, mode):
    luisa.init("cpu")
    source = luisa.Buffer.from_array(np.array([-1.0, 1.0, 3.0], np.float32))
    out = luisa.Buffer.zeros(3, int)
    Kernel(vector_booleans, mode=mode, rules=LUISA_RULES)(source, out, dispatch_size=1)
    assert out.numpy().tolist() == [1, 1, 1]
    with pytest.raises(KernelCompileError, match="bool3 value is used where a scalar is needed"):
        Kernel(vector_booleans, mode=mode, rules=PYTHON_RULES)(source, out, dispatch_size=1)


def zero_casts(out, fout):
    count = uint()
    count += uint(3)
    out.write(0, int(count) + 0)
    fout.write(0, 0.0 + 1.5)
    out.write(1, 1 if False else 2)


@pytest.mark.parametrize("mode", MODES)
def test_a_cast_of_nothing_is_zero_of_its_type(fresh_session, mode):
    luisa.init("cpu")
    out, fout = luisa.Buffer.zeros(2, int), luisa.Buffer.zeros(1, float)
    Kernel(zero_casts, mode=mode, rules=LUISA_RULES)(out, fout, dispatch_size=1)
    assert out.numpy().tolist() == [3, 2]
    assert fout.numpy().tolist() == [1.5]
    assert uint() == 0 and type(uint()) is np.uint32
