"""A mandelbrot set in luisa-python's style: float2 arithmetic, length(), a 2D dispatch.

python mandelbrot.py [BACKEND]           # real luisa-python
luisa-nb run mandelbrot.py               # luisa_nb
"""

import sys

import luisa
from luisa.mathtypes import *

width, height, iterations = 256, 128, 50
luisa.init(sys.argv[1] if len(sys.argv) > 1 else None, support_gui=False)
escape = luisa.Buffer(width * height, float)


@luisa.func
def draw(max_iter):
    p = dispatch_id().xy
    z, c = float2(0), 2 * float2(p) / height - float2(2, 1)
    steps = 0
    for _ in range(max_iter):
        z = float2(z.x * z.x - z.y * z.y, 2 * z.x * z.y) + c
        steps += 1
        if length(z) > 20:
            break
    escape.write(p.y * width + p.x, 1 - steps / max_iter)


draw(iterations, dispatch_size=(width, height))
values = escape.numpy()
print("checksum", round(float(values.sum()), 3))
