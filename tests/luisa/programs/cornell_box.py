"""A Cornell-box style path tracer written as a luisa-python program: a white room with
a red and a green wall, a ceiling light and a rotated box (three meshes, the box placed
by an instance transform). Each pixel averages SAMPLES paths of up to BOUNCES diffuse
bounces, with its own random sequence, so every run computes the same image. Prints the
image as rows of numbers."""

import math
import sys

import numpy as np

import luisa
from luisa.mathtypes import *
from luisa.types import uint

luisa.init(sys.argv[1] if len(sys.argv) > 1 else "cpu", support_gui=False)
WIDTH = int(sys.argv[2]) if len(sys.argv) > 2 else 40
HEIGHT = WIDTH
SAMPLES = int(sys.argv[3]) if len(sys.argv) > 3 else 8
BOUNCES = 4


def quad(a, b, c, d):
    """Two triangles a-b-c and a-c-d."""
    return [a, b, c, a, c, d]


room = (
    quad((0, 0, 0), (1, 0, 0), (1, 0, 1), (0, 0, 1))  # floor
    + quad((0, 1, 0), (0, 1, 1), (1, 1, 1), (1, 1, 0))  # ceiling
    + quad((0, 0, 0), (0, 1, 0), (1, 1, 0), (1, 0, 0))  # back wall
)
red_wall = quad((0, 0, 0), (0, 0, 1), (0, 1, 1), (0, 1, 0))
green_wall = quad((1, 0, 0), (1, 1, 0), (1, 1, 1), (1, 0, 1))
light = quad((0.35, 0.998, 0.35), (0.65, 0.998, 0.35), (0.65, 0.998, 0.65), (0.35, 0.998, 0.65))
box = []
for low, high in (((-0.15, 0.0, -0.15), (0.15, 0.35, 0.15)),):
    x0, y0, z0 = low
    x1, y1, z1 = high
    box += quad((x0, y1, z0), (x0, y1, z1), (x1, y1, z1), (x1, y1, z0))  # top
    box += quad((x0, y0, z1), (x1, y0, z1), (x1, y1, z1), (x0, y1, z1))  # front
    box += quad((x0, y0, z0), (x0, y1, z0), (x1, y1, z0), (x1, y0, z0))  # back
    box += quad((x0, y0, z0), (x0, y0, z1), (x0, y1, z1), (x0, y1, z0))  # left
    box += quad((x1, y0, z0), (x1, y1, z0), (x1, y1, z1), (x1, y0, z1))  # right
angle = 0.4
box_transform = float4x4(
    math.cos(angle), 0.0, -math.sin(angle), 0.0,
    0.0, 1.0, 0.0, 0.0,
    math.sin(angle), 0.0, math.cos(angle), 0.0,
    0.62, 0.0, 0.55, 1.0,
)  # fmt: skip
meshes = [  # (triangle corners, albedo, emission, transform)
    (room, (0.73, 0.73, 0.73), (0.0, 0.0, 0.0), None),
    (red_wall, (0.65, 0.05, 0.05), (0.0, 0.0, 0.0), None),
    (green_wall, (0.12, 0.45, 0.15), (0.0, 0.0, 0.0), None),
    (light, (0.0, 0.0, 0.0), (15.0, 15.0, 15.0), None),
    (box, (0.73, 0.73, 0.73), (0.0, 0.0, 0.0), box_transform),
]

accel = luisa.Accel()
normal_list = []
first_normal = []
keep = []  # the buffers the accel reads
for corners, _, _, transform in meshes:
    points = np.array(corners, dtype=np.float32)
    vertices = luisa.Buffer(len(points), float3)
    vertices.copy_from([float3(*p) for p in points.tolist()])
    indices = luisa.Buffer(len(points), int)
    indices.copy_from(np.arange(len(points), dtype=np.int32))
    keep += [vertices, indices]
    if transform is None:
        accel.add(vertices, indices)
        world = points
    else:
        accel.add(vertices, indices, transform=transform)
        rotation = np.array([[math.cos(angle), 0, math.sin(angle)], [0, 1, 0],
                             [-math.sin(angle), 0, math.cos(angle)]])  # fmt: skip
        world = points @ rotation.T + np.array([0.62, 0.0, 0.55])
    first_normal.append(len(normal_list))
    for a, b, c in world.reshape(-1, 3, 3):
        n = np.cross(b - a, c - a)
        normal_list.append(n / np.linalg.norm(n))
accel.update()

normals = luisa.Buffer(len(normal_list), float3)
normals.copy_from([float3(*n) for n in np.array(normal_list, dtype=np.float32).tolist()])
offsets = luisa.Buffer(len(first_normal), uint)
offsets.copy_from(np.array(first_normal, dtype=np.uint32))
albedos = luisa.Buffer(len(meshes), float3)
albedos.copy_from([float3(*m[1]) for m in meshes])
emissions = luisa.Buffer(len(meshes), float3)
emissions.copy_from([float3(*m[2]) for m in meshes])
image = luisa.Buffer(WIDTH * HEIGHT * 3, float)

Rng = luisa.StructType(state=uint)


@luisa.func
def rng_next(self):
    """A float in [0, 1). Every constant is a uint: real luisa-python computes
    ``uint * int`` differently from C's unsigned arithmetic."""
    self.state = self.state * uint(1664525) + uint(1013904223)
    word = self.state ^ (self.state >> uint(16))
    word = word * uint(73244475)
    word = word ^ (word >> uint(15))
    return float(word >> uint(8)) * (1.0 / 16777216.0)


Rng.add_method(rng_next, "next")


@luisa.func
def sample_direction(normal, u, v):
    """A cosine-weighted direction about ``normal``."""
    helper = select(float3(1.0, 0.0, 0.0), float3(0.0, 1.0, 0.0), abs(normal.x) > 0.9)
    tangent = normalize(cross(helper, normal))
    bitangent = cross(normal, tangent)
    r = sqrt(u)
    phi = 6.2831853 * v
    return normalize(
        r * cos(phi) * tangent + r * sin(phi) * bitangent + sqrt(max(1.0 - u, 0.0)) * normal
    )


@luisa.func
def render(accel, normals, offsets, albedos, emissions, image):
    set_block_size(8, 8, 1)
    x = dispatch_id().x
    y = dispatch_id().y
    pixel = y * WIDTH + x
    rng = Rng()
    rng.state = uint(pixel) * uint(9781) + uint(12345)
    total = float3(0.0)
    for _sample in range(SAMPLES):
        u = (float(x) + rng.next()) / WIDTH * 2.0 - 1.0
        v = 1.0 - (float(y) + rng.next()) / HEIGHT * 2.0
        origin = float3(0.5, 0.5, 2.4)
        ray = luisa.make_ray(origin, normalize(float3(u * 0.42, v * 0.42, -1.0)), 0.0, 1e30)
        throughput = float3(1.0)
        radiance = float3(0.0)
        for _bounce in range(BOUNCES):
            hit = accel.trace_closest(ray, -1)
            if hit.miss():
                break
            radiance += throughput * emissions.read(hit.inst)
            normal = normals.read(offsets.read(hit.inst) + hit.prim)
            if dot(normal, ray.get_dir()) > 0.0:
                normal = -normal
            point = ray.get_origin() + ray.get_dir() * hit.ray_t
            throughput *= albedos.read(hit.inst)
            direction = sample_direction(normal, rng.next(), rng.next())
            ray = luisa.make_ray(point + normal * 1e-4, direction, 0.0, 1e30)
        total += radiance
    mean = total / SAMPLES
    image.write(pixel * 3, mean.x)
    image.write(pixel * 3 + 1, mean.y)
    image.write(pixel * 3 + 2, mean.z)


render(accel, normals, offsets, albedos, emissions, image, dispatch_size=(WIDTH, HEIGHT, 1))
pixels = np.zeros(WIDTH * HEIGHT * 3, dtype=np.float32)
image.copy_to(pixels)
luisa.synchronize()
for row in pixels.reshape(HEIGHT, WIDTH * 3):
    print("row", " ".join(repr(float(value)) for value in row))
