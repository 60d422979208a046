"""Kernels on images, written as luisa-python programs write them. ``picture`` is an
image captured from this module (the tests bind it)."""

from luisa_nb.kernels import dispatch_id, float2, float3, float4, int2, int4, length, uint2

MAX_ITER = 50
picture = None


def gradient(image):
    coord = dispatch_id().xy
    size = image.texture_size()
    uv = (float2(coord) + 0.5) / float2(size)
    image.write(coord, float4(uv, 0.5, 1.0))


def mandelbrot(image):
    coord = dispatch_id().xy
    size = float2(image.texture_size())
    c = float2(3.0, 2.0) * float2(coord) / size - float2(2.0, 1.0)
    z = float2(0)
    itr = 0
    for itr in range(MAX_ITER):  # noqa: B007 (itr is read after the loop)
        z = float2(z.x * z.x - z.y * z.y, 2.0 * z.x * z.y) + c
        if length(z) > 2.0:
            break
    image.write(coord, float4(float3(1.0 - float(itr) / MAX_ITER), 1.0))


def copy_into_floats(image, out):
    coord = dispatch_id().xy
    texel = image.read(coord)
    i = (coord.y * 4 + coord.x) * 2
    out.write(i, float(texel.x))
    out.write(i + 1, float(texel.y))


def copy_into_ints(image, out):
    coord = dispatch_id().xy
    out.write(coord.y * 4 + coord.x, image.read(coord))


def write_scalars(values, image):
    coord = dispatch_id().xy
    image.write(coord, values.read(coord.y * 4 + coord.x))


def write_pairs(values, image):
    coord = dispatch_id().xy
    i = (coord.y * 4 + coord.x) * 2
    image.write(uint2(coord), float2(values.read(i), values.read(i + 1)))


def brighten_captured(amount):
    coord = dispatch_id().xy
    picture.write(coord, picture.read(coord) + int4(amount))


def outside(image, dx):
    coord = dispatch_id().xy
    image.write(coord + int2(dx, 0), float4(1.0))
