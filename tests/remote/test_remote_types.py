"""Whatever runs on a local backend runs on remote with the same bytes as a result:
vectors, matrices, structs and arrays in buffers and as arguments, 2D and 3D images,
bindless arrays, indirect dispatch, shared memory and barriers."""

import numpy as np
import pytest

pytest.importorskip("zmq")

import luisa_nb as lnb
from luisa_nb.errors import CommandFailedError, KernelIndexError
from luisa_nb.kernels import (
    ArrayType,
    StructType,
    dispatch_id,
    dtype_of,
    float2,
    float3,
    float3x3,
    float4,
    int2,
    kernel_id,
    set_block_size,
    uint3,
)
from luisa_nb.kernels.lang.scalar_names import uint
from luisa_nb.runtime import BindlessArray
from tests.kernels import block_kernels

Particle = StructType(position=float3, mass=float, tags=ArrayType(2, int))


@lnb.kernel(mode="c")
def move(particles, positions, matrices, offset, scale, frame, template):
    i = dispatch_id().x
    p = template
    p.position = float3(i, 2 * i, 3 * i) + offset
    p.mass = scale * i
    p.tags[1] = i
    particles.write(i, p)
    positions.write(i, frame * p.position)
    matrices.write(i, frame * scale)


@lnb.kernel(mode="c")
def shade(image, volume, ints):
    p = dispatch_id()
    image.write(p.xy, float4(p.x / 4.0, p.y / 2.0, 0.25, 1.0))
    volume.write(p, float2(p.x * 0.1, p.z * 0.3))
    ints.write(p.xy, int2(p.x - p.y, p.z))


@lnb.kernel(mode="c")
def sample(heap, out):
    i = dispatch_id().x
    u = (i + 0.5) / 8.0
    flat = heap.texture2d_sample(1, float2(u, 0.25))
    deep = heap.texture3d_sample(1, float3(u, 0.5, 0.75))
    out.write(i, flat.x + deep.y + heap.buffer_read(float, 0, i))


@lnb.kernel(mode="c")
def record_entries(indirect, count):
    i = dispatch_id().x
    if i == 0:
        indirect.set_dispatch_count(count)
    indirect.set_kernel(i, uint3(4, 1, 1), uint3(i + 1, 1, 1), uint(100 + i))


@lnb.kernel(mode="c")
def add_kernel_id(out):
    set_block_size(4, 1, 1)
    out.atomic_fetch_add(dispatch_id().x, kernel_id())


block_reduction = lnb.kernel(block_kernels.block_reduction, mode="c")


def structs_vectors_and_matrices(device):
    n = 16
    particles = device.create_buffer(n, dtype_of(Particle))
    positions = device.create_buffer(n, dtype_of(float3))
    matrices = device.create_buffer(n, dtype_of(float3x3))
    frame = float3x3(1, 2, 3, 4, 5, 6, 7, 8, 10)
    template = Particle(mass=7.0, tags=ArrayType(2, int)([7, 9]))
    move.dispatch(n, particles, positions, matrices, float3(0.5, -1, 2), 0.25, frame, template)
    particles.view(12, 16).copy_to_buffer(particles.view(0, 4))
    positions.view(2, 4).fill(np.zeros(1, dtype_of(float3))[0])
    return [particles.numpy(), positions.numpy(), matrices.numpy()]


def images(device):
    image = device.create_image(4, 2, 4, "float", "byte")
    volume = device.create_image(4, 2, 2, "float", "short", depth=3)
    ints = device.create_image(4, 2, 2, "int", "byte")
    shade.dispatch((4, 2, 3), image, volume, ints)
    return [image.numpy(), volume.numpy(), ints.numpy()]


def bindless(device):
    flat = device.create_image(8, 4, 4, "float")
    deep = device.create_image(8, 4, 4, "float", depth=2)
    values = device.create_buffer(8, np.float32)
    flat.copy_from(np.linspace(0, 1, flat.size, dtype=np.float32))
    deep.copy_from(np.linspace(1, 2, deep.size, dtype=np.float32))
    values.copy_from(np.arange(8, dtype=np.float32))
    heap = BindlessArray(device, 2)
    heap.emplace(0, values)
    heap.emplace(1, flat)
    heap.emplace(1, deep)
    heap.update()
    out = device.create_buffer(8, np.float32)
    sample.dispatch(8, heap, out)
    return [out.numpy()]


def indirect_dispatch(device):
    indirect = device.create_indirect_dispatch_buffer(6)
    record_entries.dispatch(6, indirect, np.uint32(4))
    out = device.create_buffer(8, np.uint32)
    out.fill(0)
    device.default_stream.submit([add_kernel_id.dispatch_indirect_async(indirect, out, offset=1)])
    return [out.numpy(), indirect.entries()[1]]


def shared_memory_and_barriers(device):
    values = device.create_buffer(256, np.float32)
    values.copy_from(np.random.default_rng(5).integers(-50, 50, 256).astype(np.float32))
    sums = device.create_buffer(4, np.float32)
    block_reduction.dispatch(256, values, sums)
    return [sums.numpy()]


PROGRAMS = [structs_vectors_and_matrices, images, bindless, indirect_dispatch]
PROGRAMS.append(shared_memory_and_barriers)


@pytest.fixture(scope="module")
def local():
    device = lnb.create_device("cpu")
    yield device
    device.close()


@pytest.mark.parametrize("program", PROGRAMS, ids=lambda program: program.__name__)
def test_results_are_those_of_the_cpu_backend(device, local, program):
    remote_results = program(device)
    local_results = program(local)
    for remote_result, local_result in zip(remote_results, local_results, strict=True):
        assert_same_fields(remote_result, local_result)


def assert_same_fields(actual, expected):
    """Bit for bit, field by field: a struct's padding bytes are never written."""
    assert actual.dtype == expected.dtype
    if actual.dtype.names is None:
        assert actual.tobytes() == expected.tobytes()
        return
    for name in actual.dtype.names:
        assert_same_fields(actual[name], expected[name])


@lnb.kernel(mode="c")
def overrun(positions):
    positions.write(dispatch_id().x + 3, float3(1))


def test_a_checked_index_into_a_vector_buffer_fails_as_locally(device, local):
    messages = []
    for on in (device, local):
        positions = on.create_buffer(4, dtype_of(float3))
        with pytest.raises(CommandFailedError) as caught:
            overrun.dispatch(2, positions, sync=True)
        assert isinstance(caught.value.__cause__, KernelIndexError)
        messages.append(str(caught.value.__cause__))
    assert messages[0] == messages[1]
    assert "writes index 4 of buffer 'positions', which has 4 elements" in messages[0]
