"""A luisa-python program whose values depend on luisa-python's kernel rules: integer
``//`` and ``%`` of every sign (from buffers and folded literals), float ``//``, a
``for`` variable read after loops that ran to their end, never ran or broke, and
``uint``/``int``/``float`` conversions. Prints one row per quantity, one value per
thread."""

import sys

import numpy as np

import luisa
from luisa.mathtypes import *
from luisa.types import uint

luisa.init(sys.argv[1] if len(sys.argv) > 1 else "cpu", support_gui=False)
LEFT = [-7, 7, -7, 7, -8, 0, 9, -1]
RIGHT = [2, 2, -2, -2, 3, 5, -4, 3]
THREADS = len(LEFT)
ROWS = ("quotient", "remainder", "float_quotient", "updated", "ran", "never_ran", "broke")
ROWS += ("stepped", "literals", "subtracted", "wrapped", "converted", "vector")
left = luisa.Buffer.from_array(np.array(LEFT, np.int32))
right = luisa.Buffer.from_array(np.array(RIGHT, np.int32))
out = luisa.Buffer(THREADS * len(ROWS), int)
unsigned = luisa.Buffer(THREADS * 2, uint)


@luisa.func
def rules(left, right, out, unsigned):
    i = dispatch_id().x
    a = left.read(i)
    b = right.read(i)
    n = len_rows
    out.write(i * n, a // b)
    out.write(i * n + 1, a % b)
    out.write(i * n + 2, int(float(a) // float(b) * 100.0))
    c = a
    c //= b
    d = a
    d %= b
    out.write(i * n + 3, c * 100 + d)
    t = int(i)
    for ran in range(t):  # noqa: B007 (read after the loop)
        c += 1
    out.write(i * n + 4, ran)
    for never in range(a + 20, 3):  # noqa: B007 (read after the loop)
        c += 1
    out.write(i * n + 5, never)
    for broke in range(10):
        if broke == t:
            break
    out.write(i * n + 6, broke)
    for stepped in range(b + 3, 11, 4):  # noqa: B007 (read after the loop)
        c += 1
    out.write(i * n + 7, stepped)
    out.write(i * n + 8, (-7 // 2) * 100 + (-7 % 2) * 10 + 7 % -2)
    u = uint(a) + uint(3)
    unsigned.write(i * 2, u // uint(5))
    unsigned.write(i * 2 + 1, u % uint(7))
    out.write(i * n + 9, 1 if uint(3) - uint(5) == uint(4294967294) else 0)
    out.write(i * n + 10, 1 if uint(-1) // uint(2) == uint(2147483647) else 0)
    out.write(i * n + 11, int(float(a) * 1.5))
    v = make_int2(a, -a) % make_int2(b, b)
    w = make_int2(a, -a) // b
    out.write(i * n + 12, v.x * 1000 + v.y * 100 + w.x * 10 + w.y)


len_rows = len(ROWS)
rules(left, right, out, unsigned, dispatch_size=THREADS)
values = out.numpy().reshape(THREADS, len(ROWS))
for index, name in enumerate(ROWS):
    print(name, " ".join(str(int(value)) for value in values[:, index]))
unsigned_values = np.zeros(THREADS * 2, np.uint32)  # luisa-python has no uint numpy()
unsigned.copy_to(unsigned_values)
print("unsigned", " ".join(str(int(value)) for value in unsigned_values))
