"""Kernels with loops whose threads run as lanes (``luisa_nb/kernels/c/lanes.py``):
divergent loops, every way out of a loop, vector locals and integer division."""

from luisa_nb.kernels import abs, dispatch_id, dispatch_size, float2, int2, length, sin, sqrt


def escape_time(out, limit, scale):
    """A float2 recurrence whose threads leave after different numbers of steps."""
    p = dispatch_id()
    c = float2(float(p.x), float(p.y)) * scale - float2(2.0, 1.0)
    z = float2(0.0, 0.0)
    steps = 0
    for _ in range(limit):
        z = float2(z.x * z.x - z.y * z.y, 2.0 * z.x * z.y) + c
        steps += 1
        if length(z) > 20.0:
            break
    out.write(p.y * dispatch_size().x + p.x, float(steps) + z.x * 0.001 + sqrt(abs(z.y)))


def every_exit(out, values, n):
    """continue, break, while, an early return, a component store and integer division in
    divergent lanes (some threads divide by zero in a branch others take)."""
    i = dispatch_id().x
    v = values.read(i)
    acc = int2(0, 0)
    total = 0.0
    for j in range(i % 7, n, 1 + i % 3):
        if j % 4 == 0:
            continue
        if j > v + 9:
            break
        acc.y = acc.y + j
        total += sin(float(j) * 0.5) / (float(j) + 0.25)
    count = 0
    while count * count < i:
        count += 1
        if count == 5:
            acc.x = 99
    if i % 11 == 3:
        out.write(i, -1.0)
        return
    divisor = i % 5 - 2
    quotient = 0
    if divisor != 0:
        quotient = v // divisor + v % divisor
    out.write(i, total + float(acc.x * 1000 + acc.y * 10 + count + quotient))


def looped_shifted_copy(source, out, shift):
    """Writes past the end of ``out`` from thread ``len(out) - shift`` on."""
    i = dispatch_id().x
    total = 0.0
    for _ in range(3):
        total += source.read(i)
    out.write(i + shift, total)
