"""A luisa-python program whose kernel prints: strings, ints of both signs, uints, floats
of every magnitude, bools, vectors and the dispatch id, from a kernel and a callable."""

import sys

import luisa
from luisa.mathtypes import *
from luisa.types import uint

luisa.init(sys.argv[1] if len(sys.argv) > 1 else "cpu", support_gui=False)


@luisa.func
def shout(v):
    print("callable", v, v * 2.0)


@luisa.func
def printing():
    x = dispatch_id().x
    print(x)
    print("values", -3, uint(4294967295), 1.0, 0.1, 1e10, 1.0 / 3.0, -2.5, 1e-7, 123456789.0)
    print(float(x) * 123456.789, x == 1, bool2(True, False), int2(3, -4), float3(1, 2.5, 3))
    print(dispatch_id())
    shout(float(x) + 0.5)


printing(dispatch_size=3)
luisa.synchronize()
