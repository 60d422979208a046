"""A luisa-python program whose kernels loop over captured and local arrays, vectors and
matrices (``for x in a:``), with ``break``. (luisa-python 0.3.7 gives garbage for the
loop variable read after such a loop, and for one reused with another type; luisa_nb gives
the last element, as Python does.) Prints
one row per loop."""

import sys

import numpy as np

import luisa
from luisa.mathtypes import *

luisa.init(sys.argv[1] if len(sys.argv) > 1 else "cpu", support_gui=False)
out = luisa.Buffer(8, float)
a = luisa.array([5, 32, 6])
vectors = luisa.array([float3(1, 2, 3), float3(4, 5, 6)])
captured = float3(1.5, 2.5, 3.5)


@luisa.func
def loops():
    s = 0.0
    for x in a:
        s += x
    out.write(0, s)
    s = 0.0
    for y in captured:
        s += y
    out.write(1, s)
    v = float3(1.0, 2.0, 4.0)
    s = 0.0
    for y in v:
        s += y * y
    out.write(2, s)
    m = float2x2(1.0, 2.0, 3.0, 4.0)
    s = 0.0
    for column in m:
        s = s * 100.0 + column.x * 10.0 + column.y
    out.write(3, s)
    s = 0.0
    for w in vectors:
        s += w.y
    out.write(4, s)
    s = 0.0
    for x in a:
        if x > 10:
            break
        s += x
    out.write(5, s)
    last = 0
    for x in a:
        last = x
    out.write(6, last)
    count = 0
    for column3 in float3x3(1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0, 1.0):
        count += int(column3.x + column3.y + column3.z)
    out.write(7, count)


loops(dispatch_size=1)
values = np.zeros(8, np.float32)
out.copy_to(values)
print(values.tolist())
