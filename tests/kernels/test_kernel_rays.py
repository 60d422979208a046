"""Ray tracing on the runtime API: a BVH traversal checked against intersecting every
triangle, on random scenes with instances, transforms and masks, in C and Python mode;
builds as commands of the trace."""

from __future__ import annotations

import numpy as np
import pytest

import luisa_nb as lnb
from luisa_nb.analysis import HazardKind
from luisa_nb.errors import CommandFailedError, InvalidArgumentError, KernelCompileError
from luisa_nb.kernels import compiler_available, dtype_of, float3, float4
from luisa_nb.runtime import accel as accel_module
from luisa_nb.runtime import bvh as bvh_module

from . import ray_kernels

MODES = ["python", pytest.param("c", marks=pytest.mark.skipif(
    not compiler_available(), reason="no C compiler"))]  # fmt: skip
MISS = 0xFFFFFFFF


@pytest.fixture
def device():
    created = lnb.create_device("cpu")
    yield created
    created.close()


def float3_buffer(device, points):
    points = np.asarray(points, np.float32).reshape(-1, 3)
    array = np.zeros(len(points), dtype_of(float3))
    for axis, name in enumerate("xyz"):
        array[name] = points[:, axis]
    buffer = device.create_buffer(len(points), dtype_of(float3))
    buffer.copy_from(array)
    return buffer


def mesh_of(device, vertices, indices):
    triangles = device.create_buffer(len(indices), np.int32)
    triangles.copy_from(np.asarray(indices, np.int32))
    return device.create_mesh(float3_buffer(device, vertices), triangles)


def random_soup(rng, count, spread=1.0, size=0.25):
    centres = rng.uniform(-spread, spread, (count, 1, 3))
    return (centres + rng.normal(0, size, (count, 3, 3))).astype(np.float32)


def random_transform(rng):
    angle = rng.uniform(0, 2 * np.pi)
    c, s = np.cos(angle), np.sin(angle)
    matrix = np.eye(4)
    matrix[:3, :3] = np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]]) * rng.uniform(0.5, 1.5)
    matrix[:3, 3] = rng.uniform(-0.5, 0.5, 3)
    return matrix.astype(np.float32)


def brute_force(world, origins, directions, t_min, t_max):
    """Every ray against every triangle (float64): the nearest triangle's index and
    distance, and how ambiguous the answer is (near edges, near ties)."""
    a, b, c = (world[:, k].astype(np.float64)[None] for k in range(3))
    o = origins.astype(np.float64)[:, None]
    d = directions.astype(np.float64)[:, None]
    e1, e2 = b - a, c - a
    p = np.cross(d, e2)
    det = np.einsum("rtk,rtk->rt", np.broadcast_to(e1, p.shape), p)
    with np.errstate(divide="ignore", invalid="ignore"):
        inverse = 1.0 / det
        s = o - a
        u = np.einsum("rtk,rtk->rt", s, p) * inverse
        q = np.cross(s, np.broadcast_to(e1, s.shape))
        v = np.einsum("rtk,rtk->rt", np.broadcast_to(d, q.shape), q) * inverse
        t = np.einsum("rtk,rtk->rt", np.broadcast_to(e2, q.shape), q) * inverse
    inside = (det != 0) & (u >= 0) & (v >= 0) & (u + v <= 1) & (t >= t_min) & (t <= t_max)
    distances = np.where(inside, t, np.inf)
    nearest = np.argmin(distances, axis=1)
    best = distances[np.arange(len(o)), nearest]
    margin = np.minimum(np.minimum(u, v), 1 - u - v)  # < 0 outside, 0 on an edge
    near_span = (t >= t_min - 1e-3) & (t <= t_max + 1e-3)
    near_edge = np.any((np.abs(margin) < 1e-4) & near_span, axis=1)
    ordered = np.sort(distances, axis=1)
    with np.errstate(invalid="ignore"):
        gap = ordered[:, 1] - ordered[:, 0]
    tie = np.isfinite(ordered[:, 0]) & (gap < 1e-4 * np.maximum(1.0, np.abs(ordered[:, 0])))
    return np.where(np.isfinite(best), nearest, -1), best, near_edge | tie


def trace(device, accel, origins, directions, mode, t_min=0.0, t_max=1e30, mask=-1, checks=None):
    count = len(origins)
    kernel = lnb.kernel(ray_kernels.trace_rays, mode=mode, checks=checks)
    hits = device.create_buffer(2 * count, np.uint32)
    distances = device.create_buffer(3 * count, np.float32)
    anys = device.create_buffer(count, np.int32)
    kernel(
        accel,
        float3_buffer(device, origins),
        float3_buffer(device, directions),
        hits,
        distances,
        anys,
        float(t_min),
        float(t_max),
        mask,
        dispatch_size=count,
    )
    return (
        hits.numpy().reshape(-1, 2),
        distances.numpy().reshape(-1, 3),
        anys.numpy().astype(bool),
    )


def random_rays(rng, count):
    origins = rng.uniform(-2.5, 2.5, (count, 3)).astype(np.float32)
    targets = rng.uniform(-1, 1, (count, 3))
    directions = (targets - origins).astype(np.float32)
    directions[: count // 8, 1:] = 0  # axis-aligned rays: zero direction components
    return origins, directions


@pytest.mark.parametrize(("mode", "triangles", "rays"), [("python", 60, 64), ("c", 2000, 4096)])
def test_closest_and_any_hits_match_every_triangle_tried(device, mode, triangles, rays):
    if mode == "c" and not compiler_available():
        pytest.skip("no C compiler")
    rng = np.random.default_rng(triangles)
    soup = random_soup(rng, triangles)
    accel = device.create_accel()
    accel.emplace_back(mesh_of(device, soup.reshape(-1, 3), np.arange(soup.size // 3)))
    accel.build()
    origins, directions = random_rays(rng, rays)
    hits, distances, anys = trace(device, accel, origins, directions, mode)
    nearest, best, ambiguous = brute_force(soup, origins, directions, 0.0, 1e30)
    clear = ~ambiguous
    assert clear.mean() > 0.9
    assert 0.2 < (nearest[clear] >= 0).mean() < 0.95  # the scene is neither empty nor a wall
    expected_prim = np.where(nearest >= 0, nearest, MISS)
    np.testing.assert_array_equal(hits[clear, 1], expected_prim[clear])
    np.testing.assert_array_equal(hits[clear, 0], np.where(nearest >= 0, 0, MISS)[clear])
    found = clear & (nearest >= 0)
    np.testing.assert_allclose(distances[found, 0], best[found], rtol=1e-4, atol=1e-5)
    np.testing.assert_array_equal(anys[clear], nearest[clear] >= 0)


@pytest.mark.parametrize("mode", MODES)
def test_instances_transforms_masks_and_ray_spans(device, mode):
    rng = np.random.default_rng(7)
    meshes = [random_soup(rng, n, 0.6, 0.2) for n in (40, 25)]
    accel = device.create_accel()
    placements = []
    for index in range(4):
        soup = meshes[index % 2]
        transform = random_transform(rng)
        mask = (1, 2, 4, 8)[index]
        accel.emplace_back(
            mesh_of(device, soup.reshape(-1, 3), np.arange(soup.size // 3)),
            transform,
            visibility_mask=mask,
            user_id=100 + index,
        )
        world = np.einsum("ij,tkj->tki", transform[:3, :3], soup) + transform[:3, 3]
        placements.append((index, mask, world.astype(np.float32)))
    accel.build()
    origins, directions = random_rays(rng, 48 if mode == "python" else 2048)
    for ray_mask, t_min, t_max in ((-1, 0.0, 1e30), (0b0101, 0.5, 3.0)):
        hits, distances, anys = trace(
            device, accel, origins, directions, mode, t_min, t_max, ray_mask
        )
        chosen = [(i, w) for i, m, w in placements if m & ray_mask & 0xFF]
        world = np.concatenate([w for _, w in chosen])
        owners = np.concatenate([np.full((len(w), 2), (i, 0)) for i, w in chosen])
        owners[:, 1] = np.concatenate([np.arange(len(w)) for _, w in chosen])
        nearest, best, ambiguous = brute_force(world, origins, directions, t_min, t_max)
        clear = ~ambiguous
        assert clear.mean() > 0.85
        expected = np.where(nearest[:, None] >= 0, owners[nearest], MISS)
        np.testing.assert_array_equal(hits[clear], expected[clear])
        found = clear & (nearest >= 0)
        assert found.sum() > 5
        np.testing.assert_allclose(distances[found, 0], best[found], rtol=1e-4, atol=1e-5)
        np.testing.assert_array_equal(anys[clear], nearest[clear] >= 0)


@pytest.mark.parametrize("mode", MODES)
def test_rebuild_after_set_transform_and_set_visibility(device, mode):
    accel = device.create_accel()
    square = [(-1, -1, 0), (1, -1, 0), (1, 1, 0), (-1, 1, 0)]
    mesh = mesh_of(device, square, [0, 1, 2, 0, 2, 3])
    accel.emplace_back(mesh)
    accel.build()
    origins = np.array([[0.25, 0.5, 5.0], [3.5, 0.0, 5.0]], np.float32)
    directions = np.array([[0, 0, -1], [0, 0, -1]], np.float32)
    hits, distances, _ = trace(device, accel, origins, directions, mode)
    assert hits.tolist() == [[0, 1], [MISS, MISS]]
    assert distances[0, 0] == 5.0
    moved = np.eye(4, dtype=np.float32)
    moved[:3, 3] = (3.0, 0.0, -1.0)
    accel.set_transform(0, moved)
    accel.build()
    hits, distances, _ = trace(device, accel, origins, directions, mode)
    assert hits.tolist() == [[MISS, MISS], [0, 0]]
    assert distances[1, 0] == 6.0
    accel.set_visibility(0, 0b10)
    accel.build()
    assert trace(device, accel, origins, directions, mode, mask=0b01)[0][1, 0] == MISS
    assert trace(device, accel, origins, directions, mode, mask=0b10)[0][1, 0] == 0


@pytest.mark.parametrize("mode", MODES)
def test_barycentrics_interpolate_and_instance_fields(device, mode):
    accel = device.create_accel()
    mesh = mesh_of(device, [(0, 0, 0), (1, 0, 0), (0, 1, 0)], [0, 1, 2])
    shifted = np.eye(4, dtype=np.float32)
    shifted[:3, 3] = (5.0, 6.0, 7.0)
    accel.emplace_back(mesh, user_id=42, visibility_mask=0x13)
    accel.emplace_back(mesh, shifted, user_id=7)
    accel.build()
    origins = np.array([[0.25, 0.5, 1.0], [9.0, 9.0, 1.0]], np.float32)
    directions = np.array([[0, 0, -1], [0, 0, -1]], np.float32)
    out = device.create_buffer(2, dtype_of(float3))
    lnb.kernel(ray_kernels.interpolated, mode=mode)(
        accel, float3_buffer(device, origins), float3_buffer(device, directions), out,
        dispatch_size=2,
    )  # fmt: skip
    values = out.numpy()
    assert [values[name][0] for name in "xyz"] == [0.25, 0.25, 0.5]
    assert [values[name][1] for name in "xyz"] == [-1.0, -1.0, -1.0]
    transforms = device.create_buffer(2, dtype_of(float4))
    ids = device.create_buffer(4, np.uint32)
    lnb.kernel(ray_kernels.instance_fields, mode=mode)(accel, transforms, ids, dispatch_size=2)
    columns = transforms.numpy()
    assert [columns[name][1] for name in "xyzw"] == [5.0, 6.0, 7.0, 1.0]
    assert ids.numpy().tolist() == [42, 0x13, 7, 0xFF]


@pytest.mark.parametrize("mode", MODES)
def test_a_captured_accel_is_typed_again_when_a_build_replaces_its_buffers(device, mode):
    first = mesh_of(device, [(0, 0, 0), (1, 0, 0), (0, 1, 0)], [0, 1, 2])
    ray_kernels.scene = accel = device.create_accel()
    accel.emplace_back(first)
    accel.build()
    kernel = lnb.kernel(ray_kernels.trace_captured, mode=mode)
    origins = float3_buffer(device, [(0.2, 0.2, 1.0), (3.2, 0.2, 1.0)])
    directions = float3_buffer(device, [(0, 0, -1), (0, 0, -1)])
    hits = device.create_buffer(2, np.uint32)
    kernel(origins, directions, hits, dispatch_size=2)
    assert hits.numpy().tolist() == [0, MISS]
    moved = np.eye(4, dtype=np.float32)
    moved[0, 3] = 3.0
    accel.emplace_back(mesh_of(device, [(0, 0, 0), (1, 0, 0), (0, 1, 0), (1, 1, 0)],
                               [0, 1, 2, 1, 3, 2]), moved)  # fmt: skip
    accel.build()
    kernel(origins, directions, hits, dispatch_size=2)
    assert hits.numpy().tolist() == [0, 1]


def test_the_build_is_a_command_reading_the_mesh_buffers(device):
    mesh = mesh_of(device, [(0, 0, 0), (1, 0, 0), (0, 1, 0)], [0, 1, 2])
    accel = device.create_accel(name="scene")
    accel.emplace_back(mesh)
    accel.emplace_back(mesh)
    with lnb.trace() as trace_:
        accel.build(sync=True)
    (record,) = [r for r in trace_.commands if r.label.startswith("build scene")]
    assert record.label == "build scene (2 instances, 2 triangles)"
    reads = {r.buffer for r in record.device_ranges if r.access.value == "read"}
    writes = {r.buffer for r in record.device_ranges if r.access.value == "write"}
    assert reads == {mesh.vertices.buffer.id, mesh.triangles.buffer.id}
    assert writes == {view.buffer.id for view in accel.views()}


def test_a_build_from_a_stale_upload_is_reported_with_the_upload(device):
    """The seed's pattern on a vertex buffer: download, re-upload of the same host array,
    build, in one command list on a device that stages at submit."""
    device = lnb.create_device("cpu:submit")
    try:
        old = [(0, 0, 0), (1, 0, 0), (0, 1, 0)]
        mesh = mesh_of(device, old, [0, 1, 2])
        moved = float3_buffer(device, [(10, 0, 0), (11, 0, 0), (10, 1, 0)])
        accel = device.create_accel(name="scene")
        accel.emplace_back(mesh)
        host = mesh.vertices.numpy()  # the old vertices, which the download overwrites
        stream = device.default_stream
        with lnb.trace() as trace_:
            commands = [
                moved.copy_to_async(host),
                mesh.vertices.copy_from_async(host),
                accel.build_async(),
            ]
            stream.submit(commands)
            stream.synchronize()
        download, upload, build = (trace_.number_of(command) for command in commands)
        stale = [h for h in trace_.hazards if h.kind is HazardKind.STALE_UPLOAD]
        assert [h.command_ids for h in stale] == [(download, upload)]
        record = trace_.command(build)
        assert any(
            r.buffer == mesh.vertices.buffer.id and r.access.value == "read"
            for r in record.device_ranges
        )
        # the build read the stale vertices: a ray at the moved triangle misses
        hits, _, _ = trace(device, accel, np.array([[10.2, 0.2, 1], [0.2, 0.2, 1]], np.float32),
                           np.array([[0, 0, -1], [0, 0, -1]], np.float32), "c")  # fmt: skip
        assert hits[:, 0].tolist() == [MISS, 0]
    finally:
        device.close()


def test_bad_input_is_rejected_before_anything_is_enqueued(device):
    vertices = float3_buffer(device, [(0, 0, 0)])
    floats = device.create_buffer(3, np.float32)
    with pytest.raises(InvalidArgumentError, match="int32 or uint32 indices, three per"):
        device.create_mesh(vertices, floats)
    with pytest.raises(InvalidArgumentError, match="vertex buffer holds float3"):
        device.create_mesh(floats, device.create_buffer(3, np.int32))
    accel = device.create_accel()
    with pytest.raises(InvalidArgumentError, match="instance transform is a float4x4"):
        accel.emplace_back(device.create_mesh(vertices, device.create_buffer(3, np.int32)),
                           np.eye(3))  # fmt: skip
    with pytest.raises(InvalidArgumentError, match="never built"):
        accel.views()


def test_an_index_outside_the_vertices_fails_the_build(device):
    accel = device.create_accel(name="scene")
    accel.emplace_back(mesh_of(device, [(0, 0, 0), (1, 0, 0), (0, 1, 0)], [0, 1, 3]))
    with pytest.raises(CommandFailedError, match="holds index 3, outside its vertex buffer"):
        accel.build(sync=True)


@pytest.mark.parametrize("mode", MODES)
def test_kernel_errors_name_the_accel_methods(device, mode):
    accel = device.create_accel()
    accel.emplace_back(mesh_of(device, [(0, 0, 0), (1, 0, 0), (0, 1, 0)], [0, 1, 2]))
    accel.build()
    out = device.create_buffer(1, np.uint32)
    with pytest.raises(KernelCompileError, match="ray must be a Ray"):
        lnb.kernel(ray_kernels.wrong_ray, mode=mode)(accel, out, dispatch_size=1)
    with pytest.raises(KernelCompileError, match="back-face culling is not supported"):
        lnb.kernel(ray_kernels.culled, mode=mode)(
            accel, float3_buffer(device, [(0, 0, 1)]), out, dispatch_size=1
        )


@pytest.mark.skipif(not compiler_available(), reason="no C compiler")
def test_the_c_traversal_gives_python_modes_hits_bit_for_bit(device):
    """C runs its own traversal (kernels/c/rays.py), Python mode the kernel-language one:
    the same hits, barycentrics and distances, with and without index checks, on rays
    aimed at vertices and edge midpoints, along axes, over spans and masks."""
    rng = np.random.default_rng(15)
    soups = [random_soup(rng, 80), random_soup(rng, 60)]
    soups[1][::4, 2] = soups[1][::4, 0]  # segments
    accel = device.create_accel()
    for index, soup in enumerate(soups):
        mesh = mesh_of(device, soup.reshape(-1, 3), np.arange(soup.size // 3))
        transform = None if index == 0 else random_transform(rng)
        accel.emplace_back(mesh, transform, visibility_mask=1 << index)
    accel.build()
    origins, directions = random_rays(rng, 48)
    corners = soups[0].reshape(-1, 3)[rng.integers(0, soups[0].size // 3, 32)]
    aimed = np.concatenate([corners[:16], (corners[16:] + corners[:16]) / 2])
    origins = np.concatenate([origins, np.full((32, 3), 2.5, np.float32)])
    directions = np.concatenate([directions, (aimed - 2.5).astype(np.float32)])
    for t_min, t_max, mask in [(0.0, 1e30, -1), (0.5, 3.0, -1), (0.0, 1e30, 2)]:
        reference = trace(device, accel, origins, directions, "python", t_min, t_max, mask)
        assert 3 <= (reference[0][:, 0] != MISS).sum() <= len(origins) - 3
        for checks in (True, False):
            traced = trace(device, accel, origins, directions, "c", t_min, t_max, mask, checks)
            for got, expected in zip(traced, reference, strict=True):
                assert got.tobytes() == expected.tobytes()


@pytest.mark.skipif(not bvh_module.NATIVE, reason="the C BVH builder is not in use")
@pytest.mark.parametrize("mode", MODES)
def test_an_accel_traces_the_same_hits_whichever_builder_built_it(device, mode, monkeypatch):
    """The C builder and the numpy builder, on triangles that are points, segments, and
    proper triangles around a few shared centroids."""
    rng = np.random.default_rng(14)
    soup = random_soup(rng, 120 if mode == "python" else 1500)
    soup[::3, 1:] = soup[::3, :1]
    soup[1::3, 2] = (soup[1::3, 0] + soup[1::3, 1]) / 2
    soup[::5] += soup[0].mean(axis=0) - soup[::5].mean(axis=1, keepdims=True)
    origins, directions = random_rays(rng, 64 if mode == "python" else 2048)
    traced = []
    for builder in (bvh_module.build_bvh_native, bvh_module.build_bvh_numpy):
        monkeypatch.setattr(accel_module, "build_bvh", builder)
        accel = device.create_accel()
        accel.emplace_back(mesh_of(device, soup.reshape(-1, 3), np.arange(soup.size // 3)))
        accel.build()
        traced.append(trace(device, accel, origins, directions, mode))
    assert 0.1 < (traced[0][0][:, 0] != MISS).mean() < 0.95
    for native, reference in zip(*traced, strict=True):
        np.testing.assert_array_equal(native, reference)


def test_a_dispatch_reads_the_accel_and_a_build_on_another_stream_races_it(device):
    mesh = mesh_of(device, [(0, 0, 0), (1, 0, 0), (0, 1, 0)], [0, 1, 2])
    accel = device.create_accel(name="scene")
    accel.emplace_back(mesh)
    accel.build(sync=True)
    builder = device.create_stream("builder")
    origins = float3_buffer(device, [(0.2, 0.2, 1.0)])
    directions = float3_buffer(device, [(0.0, 0.0, -1.0)])
    hits = device.create_buffer(1, np.uint32)
    kernel = lnb.kernel(ray_kernels.trace_captured)
    ray_kernels.scene = accel
    device.synchronize()
    with lnb.trace() as trace_:
        builder.submit([accel.build_async()])
        device.default_stream.submit([kernel.dispatch_async(1, origins, directions, hits)])
        device.synchronize()
    dispatch = next(r for r in trace_.commands if r.label.startswith("trace_captured"))
    read = {r.buffer for r in dispatch.device_ranges if r.access.value == "read"}
    assert {view.buffer.id for view in accel.views()} <= read
    races = [h for h in trace_.hazards if h.kind is HazardKind.DEVICE_RACE]
    assert races and all(dispatch.id in h.command_ids for h in races)
    assert {h.device.buffer for h in races} <= {view.buffer.id for view in accel.views()}


@pytest.mark.parametrize("mode", MODES)
def test_an_accel_with_no_instances_misses_everything(device, mode):
    accel = device.create_accel()
    accel.emplace_back(mesh_of(device, [(0, 0, 0), (1, 0, 0), (0, 1, 0)], [0, 1, 2]))
    accel.pop_back()
    accel.build()
    origins = np.array([[0.2, 0.2, 1.0]], np.float32)
    hits, _, anys = trace(device, accel, origins, np.array([[0, 0, -1]], np.float32), mode)
    assert hits.tolist() == [[MISS, MISS]] and anys.tolist() == [False]
