"""Kernels that trace rays, as the runtime API writes them. ``scene`` is an accel
captured from this module (the tests bind it)."""

from luisa_nb.kernels import dispatch_id, float3, make_ray

scene = None


def trace_rays(accel, origins, directions, hits, distances, anys, t_min, t_max, mask):
    i = dispatch_id().x
    ray = make_ray(origins.read(i), directions.read(i), t_min, t_max)
    hit = accel.trace_closest(ray, mask)
    hits.write(i * 2, hit.inst)
    hits.write(i * 2 + 1, hit.prim)
    distances.write(i * 3, hit.ray_t)
    distances.write(i * 3 + 1, hit.bary.x)
    distances.write(i * 3 + 2, hit.bary.y)
    anys.write(i, 1 if accel.trace_any(ray, mask) else 0)


def trace_captured(origins, directions, hits):
    i = dispatch_id().x
    ray = make_ray(origins.read(i), directions.read(i), 0.0, 1e30)
    hit = scene.trace_closest(ray, -1)
    hits.write(i, hit.inst)


def instance_fields(accel, transforms, ids):
    i = dispatch_id().x
    m = accel.instance_transform(i)
    transforms.write(i, m[3])
    ids.write(i * 2, accel.instance_user_id(i))
    ids.write(i * 2 + 1, accel.visibility_mask(i))


def interpolated(accel, origins, directions, out):
    i = dispatch_id().x
    hit = accel.trace_closest(make_ray(origins.read(i), directions.read(i), 0.0, 100.0), 255)
    p = float3(-1.0)
    if hit.hitted():
        p = hit.interpolate(float3(1.0, 0.0, 0.0), float3(0.0, 1.0, 0.0), float3(0.0, 0.0, 1.0))
    out.write(i, p)


def wrong_ray(accel, out):
    out.write(0, accel.trace_any(1.0, 255))


def culled(accel, origins, out):
    hit = accel.trace_closest_cullback(make_ray(origins.read(0), origins.read(0), 0.0, 1.0), 1)
    out.write(0, hit.prim)
