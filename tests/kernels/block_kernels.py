"""Kernels with blocks (shared arrays, ``sync_block()``, ``set_block_size``) and bindless
arrays, for the CUDA codegen tests: each has a C twin to compare with bit for bit."""

from luisa_nb.kernels import (
    SharedArrayType,
    block_id,
    dispatch_id,
    dispatch_size,
    float2,
    int2,
    set_block_size,
    sync_block,
    thread_id,
    uint2,
)

Partial = SharedArrayType(64, float)
Tile = SharedArrayType(66, float)
Cells = SharedArrayType(32, float)


def block_reduction(values, sums):
    """Each block of 64 threads sums its values by halving strides in a while loop with a
    barrier in every iteration, as LuisaCompute's test-raymarch reduces a tile."""
    set_block_size(64, 1, 1)
    partial = Partial()
    t = thread_id().x
    partial[t] = values.read(dispatch_id().x)
    stride = 32
    while stride > 0:
        sync_block()
        if t < stride:
            partial[t] = partial[t] + partial[t + stride]
        stride = stride // 2
    if t == 0:
        sums.write(block_id().x, partial[0])


def stencil(values, out):
    """A three-point stencil through a shared tile with a halo on each side; threads past
    the end leave their tile cells zeroed, which the last thread in range reads."""
    set_block_size(64, 1, 1)
    tile = Tile()
    i = dispatch_id().x
    t = thread_id().x
    n = dispatch_size().x
    tile[t + 1] = values.read(i)
    if t == 0 and i > 0:
        tile[0] = values.read(i - 1)
    if t == 63 and i + 1 < n:
        tile[65] = values.read(i + 1)
    sync_block()
    out.write(i, tile[t] * 0.25 + tile[t + 1] * 0.5 + tile[t + 2] * 0.25)


def block_sums_2d(values, sums, width):
    """2D blocks of 8 x 4: some threads return before the barriers; the others fold the
    block's cells and thread (0, 0) writes the block's sum at its block id."""
    set_block_size(8, 4, 1)
    cells = Cells()
    p = dispatch_id()
    t = thread_id()
    local = t.y * 8 + t.x
    if local >= 28:
        return
    cells[local] = values.read(p.y * width + p.x)
    sync_block()
    if local < 16:
        cells[local] = cells[local] + cells[local + 16]
    sync_block()
    if local == 0:
        total = 0.0
        for k in range(16):
            total += cells[k]
        b = block_id()
        sums.write(b.y * (width // 8) + b.x, total)


def block_ids(out):
    """thread_id() and block_id() under a 4 x 2 x 2 block, without shared memory."""
    set_block_size(4, 2, 2)
    p = dispatch_id()
    s = dispatch_size()
    t = thread_id()
    b = block_id()
    out.write(
        (p.z * s.y + p.y) * s.x + p.x,
        t.x + 10 * t.y + 100 * t.z + 1000 * (b.x + 7 * b.y + 49 * b.z),
    )


def bindless_mix(heap, out):
    """Buffer reads (a slot chosen per thread), sizes, texel reads of a 4-channel byte
    image and a 1-channel float image, and bilinear samples of both with repeat
    addressing, uv outside [0, 1) included."""
    i = dispatch_id().x
    slot = (i % 2) * 2
    uv = float2(float(i) * 0.37 - 3.0, float(i) * 0.11 + 0.2)
    texel = heap.texture2d_read(3, int2(i % 5, i % 3))
    single = heap.texture2d_read(4, uint2(i % 6, i % 4))
    bright = heap.texture2d_sample(3, uv)
    plain = heap.texture2d_sample(4, uv)
    size = heap.texture2d_size(4)
    out.write(i * 8 + 0, heap.buffer_read(float, 0, i) + heap.buffer_read(float, slot, i % 8))
    out.write(i * 8 + 1, float(heap.buffer_size(1)) + float(heap.buffer_read(int, 1, i % 3)))
    out.write(i * 8 + 2, texel.x + texel.y * 2.0 + texel.w * 4.0)
    out.write(i * 8 + 3, single.x + single.y + float(size.x * 10 + size.y))
    out.write(i * 8 + 4, bright.x)
    out.write(i * 8 + 5, bright.y + bright.z + bright.w)
    out.write(i * 8 + 6, plain.x)
    out.write(i * 8 + 7, plain.y + plain.w)


def prefix_scan(values, out, steps):
    """An inclusive prefix sum of each block of 32 values (Hillis and Steele): ``steps``
    iterations of a for loop with two barriers each, then one in a branch that every
    thread of a block takes. Threads past the end return first."""
    set_block_size(32, 1, 1)
    cells = Cells()
    t = thread_id().x
    cells[t] = values.read(dispatch_id().x)
    for step in range(steps):
        offset = 1 << step
        sync_block()
        value = cells[t]
        if t >= offset:
            value = value + cells[t - offset]
        sync_block()
        cells[t] = value
    if steps > 0:
        sync_block()
    out.write(dispatch_id().x, cells[t])


def diverging_barriers(out):
    """Threads 0 and 1 of each block wait at one barrier, threads 2 and 3 at another."""
    set_block_size(4, 1, 1)
    if thread_id().x < 2:
        sync_block()
    else:
        sync_block()
    out.write(dispatch_id().x, 1.0)
