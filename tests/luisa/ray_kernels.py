"""luisa-python kernels tracing rays, for tests/luisa/test_luisa_accel.py (imported with
`import luisa` standing for luisa_nb.luisa)."""

import luisa
from luisa.builtin import dispatch_id
from luisa.mathtypes import float3


@luisa.func
def depth(accel, out):
    i = dispatch_id().x
    ray = luisa.make_ray(float3(float(i) * 2.0, 0.25, 5.0), float3(0.0, 0.0, -1.0), 0.0, 1e30)
    hit = accel.trace_closest(ray, -1)
    out.write(i, -1.0)
    if hit.hitted():
        out.write(i, hit.ray_t + float(hit.inst) * 100.0)


@luisa.func
def query(accel, out):
    accel.query_all(luisa.inf_ray(float3(0.0), float3(0.0, 0.0, 1.0)), -1)
    out.write(0, 1.0)
