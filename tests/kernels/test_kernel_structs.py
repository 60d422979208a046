"""Structs and arrays in kernels: layout, constructors, fields, elements, methods, buffers
and arguments of structs, in C and in Python mode; luisa.util's RandomSampler."""

from __future__ import annotations

import numpy as np
import pytest

import luisa_nb as lnb
from luisa_nb.errors import KernelCompileError
from luisa_nb.kernels import (
    ArrayType,
    KernelDefinition,
    StructType,
    argument_type,
    compiler_available,
    dispatch_id,
    dtype_of,
    float3,
    float4,
    sin,
)

from .helpers import FakeBuffer, run

MODES = ["python", pytest.param("c", marks=pytest.mark.skipif(
    not compiler_available(), reason="no C compiler"))]  # fmt: skip
F32 = np.float32

Pair = StructType(my_v0=float3, my_v1=float4)
Floats3 = ArrayType(size=3, dtype=float)
Inner = StructType(a=int, b=Floats3, c=bool)
Outer = StructType(s=Pair, inner=Inner, k=float)


@lnb.kernel
def add_to_w(self, x):
    self.my_v1.w += x
    return self.my_v1.w


Pair.add_method(add_to_w, "add")


@lnb.kernel
def make_pair(x):
    return Pair(my_v0=float3(x), my_v1=float4(1.0, 2.0, 3.0, x))


def test_layouts_are_luisacompute_s():
    # sizes as LuisaCompute's Type::from_("struct<...>") reports them
    assert Pair.dtype.itemsize == 32 and dtype_of(Pair) == Pair.dtype
    assert Floats3.dtype.itemsize == 12
    assert Inner.dtype.itemsize == 20 and Inner.alignment == 4
    assert Outer.dtype.itemsize == 64 and Outer.alignment == 16
    assert Outer.dtype.fields["k"][1] == 52
    assert StructType(16, x=float).dtype.itemsize == 16
    assert argument_type(FakeBuffer(np.zeros(2, Pair.dtype))).element is Pair


def structs_kernel(pairs, outs):
    i = dispatch_id().x
    tmp = pairs.read(i)
    tmp.my_v0 = sin(tmp.my_v0)
    tmp.my_v1.x = 7.0
    r = tmp.add(2.0)
    values = Floats3()
    values[0] = 1.0
    values[i % 3] += 2.0
    o = Outer(s=tmp, k=values[1] + r)
    o.inner.b[2] = 5.0
    o.inner.c = True
    o.inner.a = int(make_pair(float(i)).my_v1.w) * 2
    pairs.write(i, tmp)
    outs.write(i, o)


@pytest.mark.parametrize("mode", MODES)
def test_fields_elements_methods_and_buffers_of_structs(mode):
    n = 5
    data = np.zeros(n, Pair.dtype)
    data["my_v0"]["x"] = np.arange(n)
    data["my_v1"]["w"] = 10
    pairs, outs = FakeBuffer(data), FakeBuffer(np.zeros(n, Outer.dtype))
    run(KernelDefinition(structs_kernel, mode=mode), n, pairs, outs)
    np.testing.assert_allclose(pairs.array["my_v0"]["x"], np.sin(np.arange(n, dtype=F32)), 1e-6)
    assert (pairs.array["my_v1"]["x"] == 7).all() and (pairs.array["my_v1"]["w"] == 12).all()
    out = outs.array
    np.testing.assert_array_equal(out["s"]["my_v1"]["w"], np.full(n, 12, F32))
    np.testing.assert_array_equal(out["k"], 12 + 2 * (np.arange(n) % 3 == 1))
    np.testing.assert_array_equal(out["inner"]["b"]["elements"][:, 2], 5)
    np.testing.assert_array_equal(out["inner"]["a"], 2 * np.arange(n))
    assert out["inner"]["c"].all()


@lnb.kernel
def scaled(pair, f):
    pair.my_v0 = pair.my_v0 * f
    return pair


def struct_arguments(out, pair, f):
    i = dispatch_id().x
    copy = pair
    copy.my_v1.y = float(i)
    result = scaled(copy, f)
    out.write(i, result.my_v0.x + copy.my_v0.x + pair.my_v0.x + result.my_v1.y)


@pytest.mark.parametrize("mode", MODES)
def test_struct_arguments_are_copies_and_callables_take_them_by_reference(mode):
    pair = Pair(my_v0=float3(1.0, 2.0, 3.0))
    out = FakeBuffer(np.zeros(4, np.float32))
    run(KernelDefinition(struct_arguments, mode=mode), 4, out, pair, F32(3))
    np.testing.assert_array_equal(out.array, 3 + 3 + 1 + np.arange(4, dtype=F32))
    assert pair.my_v0.x == 1  # the host value is unchanged


def luisa_program(mode):
    """A luisa-python program: a buffer of StructType(my_v0=float3, my_v1=float4)."""
    import luisa_nb.luisa as luisa
    from luisa_nb.luisa.mathtypes import float3 as f3

    luisa.init("cpu")
    struct_type = luisa.StructType(my_v0=f3, my_v1=float4)
    buffer = luisa.Buffer(32, struct_type)
    host = np.zeros(32, struct_type.dtype)
    host["my_v0"]["x"] = np.arange(32)
    host["my_v1"]["y"] = 1.5
    buffer.copy_from(host)

    @lnb.kernel(mode=mode)
    def update(buf):
        i = dispatch_id().x
        tmp = buf.read(i)
        tmp.my_v0 = tmp.my_v0 * 2.0
        tmp.my_v1.w = tmp.my_v1.y + float(i)
        buf.write(i, tmp)

    update(buffer, dispatch_size=32)
    result = np.zeros(32, struct_type.dtype)
    buffer.copy_to(result)
    luisa.del_device()
    return result


@pytest.mark.parametrize("mode", MODES)
def test_luisa_python_style_buffer_of_structs_bytes(mode):
    result = luisa_program(mode)
    raw = np.frombuffer(result.tobytes(), np.float32).reshape(32, 8)
    expected = np.zeros((32, 8), np.float32)  # my_v0 at bytes 0-11 (+4 padding), my_v1 16-31
    expected[:, 0] = 2 * np.arange(32)
    expected[:, 5] = 1.5
    expected[:, 7] = 1.5 + np.arange(32)
    np.testing.assert_array_equal(raw, expected)


def numpy_samplers(count):
    """make_random_sampler(i, 7).next() and make_random_sampler3d((i, 0, 0)).next2f().y."""
    with np.errstate(over="ignore"):
        v0, v1 = np.arange(count, dtype=np.uint32), np.full(count, 7, np.uint32)
        total = np.uint32(0)
        for _ in range(4):
            total += np.uint32(0x9E3779B9)
            v0 += (
                ((v1 << 4) + np.uint32(0xA341316C))
                ^ (v1 + total)
                ^ ((v1 >> 5) + np.uint32(0xC8013EA4))
            )
            v1 += (
                ((v0 << 4) + np.uint32(0xAD90777D))
                ^ (v0 + total)
                ^ ((v0 >> 5) + np.uint32(0x7E95761E))
            )
        p2, p3, p4, p5 = (np.uint32(v) for v in (2246822519, 3266489917, 668265263, 374761393))
        x = np.arange(count, dtype=np.uint32)
        h = p5 + x * p3
        h = p4 * ((h << 17) | (h >> 15))
        h = p4 * ((h << 17) | (h >> 15))
        h = p2 * (h ^ (h >> 15))
        h = p3 * (h ^ (h >> 13))
        h = h ^ (h >> 16)

        def lcg(state):
            state = np.uint32(1664525) * state + np.uint32(1013904223)
            return state, (state & np.uint32(0xFFFFFF)).astype(F32) * F32(1 / 16777216)

        _, first = lcg(v0)
        h, _ = lcg(h)
        _, second = lcg(h)
    return first, second


@pytest.mark.parametrize("mode", MODES)
def test_random_sampler(mode):
    from luisa_nb.luisa.util import make_random_sampler, make_random_sampler3d

    def samples(out):
        i = dispatch_id().x
        s = make_random_sampler(i, 7)
        t = make_random_sampler3d(dispatch_id())
        out.write(2 * i, s.next())
        out.write(2 * i + 1, t.next2f().y)

    out = FakeBuffer(np.zeros(64, np.float32))
    run(KernelDefinition(samples, mode=mode), 32, out)
    first, second = numpy_samplers(32)
    np.testing.assert_array_equal(out.array[0::2], first)
    np.testing.assert_array_equal(out.array[1::2], second)


def wrong_field_store(out):
    p = Pair()
    p.my_v1 = float3(1.0)


def wrong_buffer_write(out):
    out.write(0, Pair())


def unknown_field(out):
    Pair(my_v2=float3(0.0))


@pytest.mark.parametrize(
    ("function", "message"),
    [
        (wrong_field_store, "cannot store a float3 value into a float4 place"),
        (
            wrong_buffer_write,
            "cannot write a StructType[16](my_v0:float3, my_v1:float4) value into 'out', a "
            "buffer of StructType[4](a:int, b:ArrayType(3,float), c:bool)",
        ),
        (unknown_field, "has no field 'my_v2'"),
    ],
)
def test_struct_type_errors(function, message):
    definition = KernelDefinition(function, mode="python")
    types = (argument_type(FakeBuffer(np.zeros(1, Inner.dtype))),)
    with pytest.raises(KernelCompileError) as caught:
        definition.executable(types)
    assert message in str(caught.value)
