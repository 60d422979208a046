"""LuisaCompute #143 as a luisa-python program: run it with real luisa-python, or on
luisa_nb with `luisa-nb run tests/luisa/programs/seed.py`."""

import sys

import numpy as np

import luisa

n = 1024
luisa.init(sys.argv[1] if len(sys.argv) > 1 else "cpu", support_gui=False)
x = luisa.Buffer(n, float)
y = luisa.Buffer(n, float)
z = luisa.Buffer(n, float)
x.copy_from(np.arange(n, dtype=np.float32))
y.copy_from(np.arange(n, dtype=np.float32) * 1000)


@luisa.func
def vecadd(buf_z):
    tid = dispatch_id().x
    buf_z.write(tid, x.read(tid) + y.read(tid))


@luisa.func
def copy(source, target):
    tid = dispatch_id().x
    target.write(tid, source.read(tid))


z_data = np.full(n, 123.0, np.float32)
z.copy_from(z_data)
vecadd(z, dispatch_size=n)
z.copy_to(z_data, sync=False)
z.copy_from(z_data)
copy(z, x, dispatch_size=n)
luisa.synchronize()
print("z_data", z_data[:4])
print("x", x.numpy()[:4])
