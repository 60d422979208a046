"""A luisa-python program whose values depend on luisa-python's types: dispatch ids as
uint3, the conversions stores and calls perform, integer vector division, host vector
arithmetic and how vectors and matrices print. One row per rule."""

import sys

import numpy as np

import luisa
from luisa.mathtypes import *
from luisa.types import dtype_of, long, uint

luisa.init(sys.argv[1] if len(sys.argv) > 1 else "cpu", support_gui=False)
floats = luisa.Buffer(8, float)
ints = luisa.Buffer(8, int)
uints = luisa.Buffer(8, uint)


@luisa.func
def half_of(x: float):
    return x / 2.0


@luisa.func
def rules():
    i = dispatch_id().x
    uints.write(0, i - 1)  # a uint: wraps
    uints.write(1, dispatch_size().x - 3)
    uints.write(2, i + 1)
    ints.write(0, 2.7)  # a float stored into an int: truncated
    ints.write(1, -2.7)
    a = 1
    a = 2.5  # the local keeps the type of its first value
    floats.write(0, a)
    floats.write(1, 3)
    v = int2(7, -8) / int2(2, 3)  # a float2 in a kernel (an int2 on the host)
    ints.write(2, v.x)
    ints.write(3, v.y)
    floats.write(6, v.y)
    w = int2(9, 4) / 2
    ints.write(4, w.x)
    ints.write(5, w.y)
    floats.write(7, w.x)
    floats.write(2, 7 / 2)
    floats.write(3, half_of(3))
    sampler = luisa.RandomSampler(i)
    floats.write(4, sampler.next())
    floats.write(5, sampler.next())
    b = i
    b = 5
    uints.write(3, b)


rules(dispatch_size=1)
luisa.synchronize()
for name, buffer, dtype in (("floats", floats, np.float32), ("ints", ints, np.int32)):
    values = np.zeros(8, dtype)
    buffer.copy_to(values)
    print(name, values[: 8 if name == "floats" else 6].tolist())
unsigned = np.zeros(8, np.uint32)
uints.copy_to(unsigned)
print("uints", unsigned[:4].tolist())
print("divide", int2(3) / int2(2), int2(-7) / int2(2), int2(1, 2) / 2, int2(7) % int2(2))
print("multiply", int2(3) * 2, 2.5 * float2(3), float3(1) * float3(2), int2(3) + int2(2))
print("float3", float3(0.1, 1e10, 1.0 / 3.0), float3(123456.789, 1e-7, 100), float3(-0.0))
print("magnitudes", float3(1e16), float3(1e15), float2(1e-4, 1.5e-5), float2(3.0e38))
print("others", float4(3, 3, 3, 3), bool2(True, False), int3(-1, 0, 2147483647))
print("matrices", float2x2(1, 2, 3, 4), float3x3(1))
print("compare", float3(1, 2, 3) == float3(1, 2, 3), int2(3) < int2(4))
print("aggregates", luisa.struct(a=float3(4), b=2), luisa.array([5, 32, 6]))
print("vector array", luisa.array([float3(1), float3(2.5, 3, 4)]))

sampler = luisa.RandomSampler(state=45)
pair = luisa.struct(a=float3(4), b=2)
print("struct types", dtype_of(sampler), dtype_of(pair), dtype_of(luisa.array([1, 2])))
nested = luisa.StructType(a=uint, m=float3x3, f=float, g=bool2, inner=luisa.StructType(x=long))
print("nested", nested, luisa.ArrayType(3, int2), luisa.ArrayType(2, luisa.StructType(x=float)))
print("aggregate reprs", repr(pair), repr(luisa.array([5, 32, 6])), repr(sampler.copy()))
print(
    "value types",
    dtype_of(1),
    dtype_of(2.5),
    dtype_of(True),
    dtype_of(float3(1)).__name__,
    dtype_of(floats.bufferType),
    dtype_of(floats) == floats.bufferType,
)
offset = float3(1, 2, 3)
captured = luisa.Buffer(4, float)


@luisa.func
def members_of_captured_values():
    captured.write(0, offset.y)  # a captured vector's component
    captured.write(1, pair.a.z + pair.b)  # a captured struct's fields
    u = sampler.next2f()  # a method of a captured struct: each use advances its own copy
    captured.write(2, u.y)
    captured.write(3, sampler.next())


members_of_captured_values(dispatch_size=1)
print("captured members", captured.numpy().tolist(), sampler)
