"""A luisa-python program with block-shared arrays and sync_block(): each block of 64
threads reverses its values through shared memory, and a second kernel sums each block
(2D blocks of 8x4 threads). Prints the results as rows."""

import sys

import numpy as np

import luisa
from luisa.mathtypes import *

luisa.init(sys.argv[1] if len(sys.argv) > 1 else "cpu", support_gui=False)
N = 256
values = np.arange(N, dtype=np.float32) * 0.5 + 1
source = luisa.Buffer.from_array(values)
reversed_out = luisa.Buffer(N, float)
sums = luisa.Buffer(N // 32, float)
Tile = luisa.SharedArrayType(64, float)
Grid = luisa.SharedArrayType(32, float)


@luisa.func
def reverse_tiles(source, target):
    set_block_size(64, 1, 1)
    tile = Tile()
    t = thread_id().x
    tile[t] = source.read(dispatch_id().x)
    sync_block()
    target.write(dispatch_id().x, tile[63 - t] * 2.0)


@luisa.func
def block_sums(source, sums):
    set_block_size(8, 4, 1)
    cells = Grid()
    t = thread_id()
    p = dispatch_id()
    local = t.y * 8 + t.x
    cells[local] = source.read(p.y * 16 + p.x)
    sync_block()
    if local < 16:
        cells[local] = cells[local] + cells[local + 16]
    sync_block()
    if local == 0:
        total = 0.0
        for i in range(16):
            total += cells[i]
        b = block_id()
        sums.write(b.y * 2 + b.x, total)


reverse_tiles(source, reversed_out, dispatch_size=N)
block_sums(source, sums, dispatch_size=(16, 16))
print("reversed", " ".join(f"{v:g}" for v in reversed_out.numpy()))
print("sums", " ".join(f"{v:g}" for v in sums.numpy()))
