"""Functions to differentiate in the autodiff tests: callables of two float64 scalars,
one per construct, and kernels that differentiate code written in the block itself."""

from __future__ import annotations

import luisa_nb as lnb
from luisa_nb.kernels import (
    StructType,
    abs,
    acos,
    acosh,
    asin,
    asinh,
    atan,
    atan2,
    atanh,
    clamp,
    copysign,
    cos,
    cosh,
    cross,
    determinant,
    dispatch_id,
    dot,
    exp,
    exp2,
    exp10,
    float2,
    float3,
    float3x3,
    floor,
    fma,
    fmod,
    fract,
    inverse,
    length,
    lerp,
    log,
    log2,
    log10,
    max,
    min,
    mod,
    normalize,
    pow,
    reflect,
    round,
    rsqrt,
    select,
    sign,
    sin,
    sinh,
    smoothstep,
    sqrt,
    step,
    tan,
    tanh,
    transpose,
)
from luisa_nb.kernels.lang.autodiff import autodiff, backward, detach, grad, requires_grad

STEPS = 3


@lnb.kernel
def arithmetic(x, y):
    return x * y + x / (y * y + 1.0) - 3.0 * x + y**3 - (x - y) * (x + 2.0 * y)


@lnb.kernel
def transcendental(x, y):
    value = sin(x) * cos(y) + exp(x * 0.3) + log(y * y + 1.0) + tanh(x) + tan(x * 0.4)
    return value + atan2(y, x + 3.0) + sqrt(x * x + y * y + 1.0)


@lnb.kernel
def inverse_and_hyperbolic(x, y):
    value = asin(x * 0.3) + acos(y * 0.3) + atan(x) + sinh(x * 0.5) + cosh(y * 0.5)
    return value + asinh(x) + acosh(y * y + 1.5) + atanh(x * 0.3)


@lnb.kernel
def exponentials(x, y):
    value = exp2(x) + log2(y * y + 1.0) + log10(x * x + 2.0) + exp10(y * 0.2)
    return value + rsqrt(x * x + 1.0) + pow(y * y + 1.0, x * 0.5) + (x * x + 2.0) ** y


@lnb.kernel
def piecewise(x, y):
    value = abs(x) * y + min(x, y) + max(x, y * 0.5) + clamp(x, -0.5, 0.7) * y
    value += fmod(x * 3.0, 1.3) + lerp(x, y, x * 0.3) + smoothstep(-1.0, 1.2, x * y)
    value += fract(x * 2.0) * y + copysign(x, y) + fma(x, y, x) + mod(x * 2.0, 0.7) * y
    return value + floor(x * 3.0) * y + round(x * 2.0) * x + sign(x) * y + step(0.1, x) * y


@lnb.kernel
def branches(x, y):
    if x > y:
        r = x * y
        if r > 0.3:
            r = r * r
    elif x < -0.5:
        r = sin(x) + y
    else:
        t = y * y
        r = t * x
    return r


@lnb.kernel
def selects(x, y):
    chosen = select(x * y, x + y, x > 0.2)
    return chosen + (x * x if y > 0.0 else y * 3.0)


@lnb.kernel
def inner(a, b):
    if a < 0.0:
        return -a * b
    return sqrt(a + 1.0) * b


@lnb.kernel
def middle(a, b):
    return inner(a, b) + inner(b, a * 0.5)


@lnb.kernel
def nested_calls(x, y):
    return middle(x, y) * middle(y, x)


@lnb.kernel
def early_return(x, y):
    s = x
    for turn in range(5):
        if s > 2.0:
            return s * y
        s = s * (x + 1.2) + y * float(turn)
    return s


@lnb.kernel
def loops(x, y):
    s = y
    for i in range(4):
        for j in range(2):
            s = s * x * 0.5 + y * float(i - j)
    return s


CALLABLES = {
    "arithmetic": arithmetic,
    "transcendental": transcendental,
    "inverse_and_hyperbolic": inverse_and_hyperbolic,
    "exponentials": exponentials,
    "piecewise": piecewise,
    "branches": branches,
    "selects": selects,
    "nested_calls": nested_calls,
    "early_return": early_return,
    "loops": loops,
}


def in_block(xs, ys, values, dxs, dys):
    """Branches and loops written in the block itself (bounds: a captured int, a constant
    local)."""
    i = dispatch_id().x
    x = xs.read(i)
    y = ys.read(i)
    rounds = 2
    with autodiff():
        requires_grad(x, y)
        s = x
        for _ in range(rounds):
            s = s * 0.75 + y * 0.5
        for k in range(STEPS):
            if s > y:  # noqa: SIM108 (a branch, not a select)
                s = s * y + 0.5
            else:
                s = s + x * x * float(k)
        value = s * y + s * x
        backward(value)
        dx = grad(x)
        dy = grad(y)
    values.write(i, value)
    dxs.write(i, dx)
    dys.write(i, dy)


def in_block_value(xs, ys, values):
    """``in_block``'s value without autodiff."""
    i = dispatch_id().x
    x = xs.read(i)
    y = ys.read(i)
    s = x
    for _ in range(2):
        s = s * 0.75 + y * 0.5
    for k in range(STEPS):
        if s > y:  # noqa: SIM108 (as in_block)
            s = s * y + 0.5
        else:
            s = s + x * x * float(k)
    values.write(i, s * y + s * x)


def vectors(points, directions, values, gradients):
    """float3 arithmetic, swizzles, a component store, length, normalize, dot, cross,
    reflect, and min/max/clamp component-wise; the gradient by ``points``."""
    i = dispatch_id().x
    p = points.read(i)
    d = directions.read(i)
    with autodiff():
        requires_grad(p)
        n = normalize(p + d * 0.5)
        q = cross(p, d) + reflect(d, n) * length(p)
        q.y = q.y * p.z
        r = clamp(q, -1.0, 2.0) + max(p, d) * min(p.zxy, d)
        value = dot(r, p) + length(q.xz) + sin(p.x) * p[1]
        backward(value)
        g = grad(p)
    values.write(i, value)
    gradients.write(i, g)


def detached(xs, values, dxs):
    """``x * detach(x * x)``: the gradient is ``x * x`` (the detached factor is a
    constant), where ``x ** 3`` would give ``3 * x * x``."""
    i = dispatch_id().x
    x = xs.read(i)
    with autodiff():
        requires_grad(x)
        value = x * detach(x * x)
        backward(value)
        dx = grad(x)
    values.write(i, value)
    dxs.write(i, dx)


@lnb.kernel
def slope(a):
    """A callable holding its own block: the derivative of ``a ** 3``, ``3 a * a``, for a
    float or (component-wise) a float3 ``a``."""
    with autodiff():
        requires_grad(a)
        value = a * a * a
        backward(value)
        g = grad(a)
    return g


def slopes(xs, out):
    i = dispatch_id().x
    out.write(i, slope(xs.read(i)))


def slopes_of_two_types(xs, out):
    i = dispatch_id().x
    x = xs.read(i)
    v = slope(float3(x, x, x))
    out.write(i, slope(x) + v.y)


Shape = StructType(scale=float, offset=float3)


def struct_fields(xs, out):
    """Fields of a struct made before the block are constants in it."""
    i = dispatch_id().x
    x = xs.read(i)
    shape = Shape(scale=x * 2.0, offset=float3(1.0, 2.0, x))
    with autodiff():
        requires_grad(x)
        value = x * shape.scale + shape.offset.z * x * x
        backward(value)
        dx = grad(x)
    out.write(i, dx)


def intermediates(xs, out, w):
    """``grad`` of an intermediate value, of a local assigned again after
    ``requires_grad``, of a scalar argument, and of a local the output ignores."""
    i = dispatch_id().x
    x = xs.read(i)
    ignored = x * 5.0
    with autodiff():
        requires_grad(x, w)
        y = x * x
        z = y * w + x
        x = x * 3.0
        backward(z + x)
        out.write(i * 4, grad(y))
        out.write(i * 4 + 1, grad(x))
        out.write(i * 4 + 2, grad(w))
        out.write(i * 4 + 3, grad(ignored))


def matrices(xs, out):
    """Matrix products (by a matrix, a vector and a scalar), division by a scalar, a
    column, ``transpose``, ``inverse`` and ``determinant``; gradients by a float, a
    float3x3 and a float3, written as 13 floats per thread (the matrix column by
    column)."""
    i = dispatch_id().x
    x = xs.read(i)
    m = float3x3(float3(x, 1.0, 0.5), float3(0.2, x * x, 1.0), float3(0.3, 0.1, 2.0))
    v = float3(1.0, x, 2.0)
    with autodiff():
        requires_grad(x, m, v)
        n = m * transpose(m) * 0.5 + inverse(m) / 2.0
        w = n * v + m[1] * sin(x)
        y = dot(w, v) + determinant(m) * x
        backward(y)
        gx = grad(x)
        gm = grad(m)
        gv = grad(v)
    out.write(i * 13, gx)
    for c in range(3):
        out.write(i * 13 + 1 + c, gv[c])
        for r in range(3):
            out.write(i * 13 + 4 + c * 3 + r, gm[c][r])


def image_weights(image, out):
    """An image texel read in the block is a constant; the block writes the image too."""
    coord = dispatch_id().xy
    x = float(coord.x) * 0.25 + 0.5
    with autodiff():
        requires_grad(x)
        texel = image.read(coord)
        value = texel.x * x * x + texel.y * x
        image.write(coord, float2(value, texel.y))
        backward(value)
        dx = grad(x)
    out.write(coord.y * 4 + coord.x, dx)


def repeated_blocks(xs, out):
    """A block inside a run-time loop starts its gradients from zero each time; a local
    first assigned in one branch of the block holds zero on the other path."""
    i = dispatch_id().x
    x = xs.read(i)
    round_ = 0
    while round_ < 3:
        with autodiff():
            requires_grad(x)
            y = x * x
            if y > 1.0:
                scaled = y * 3.0
                y = scaled
            backward(y + scaled)
            g = grad(x)
        out.write(i * 3 + round_, g)
        x = x + 0.5
        round_ += 1
