"""luisa-python's ray tracing on luisa_nb: ``Accel``, ``make_ray``, ``trace_closest``,
``trace_any`` and the hit's fields, beside real luisa-python, and the build as a command
of the command list."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import luisa_nb as lnb
import luisa_nb.luisa as luisa
from luisa_nb.analysis import HazardKind
from luisa_nb.errors import InvalidArgumentError, KernelCompileError, UnsupportedFeatureError
from luisa_nb.luisa.alias import as_luisa
from luisa_nb.luisa.mathtypes import float3, float4x4
from tests.luisa.running import require_real_luisa, run_on_luisa_nb, run_on_real_luisa

PROGRAMS = Path(__file__).parent / "programs"
PROGRAM = PROGRAMS / "rays.py"


def printed_rows(output: str) -> np.ndarray:
    rows = [line.split()[2:] for line in output.splitlines() if line.startswith("ray ")]
    return np.asarray(rows, np.float64)


def kernels():
    with as_luisa():
        from tests.luisa import ray_kernels
    return ray_kernels


def square(z: float = 0.0):
    """A vertex and a triangle buffer of the square [-1, 1]^2 at depth ``z``."""
    vertices = luisa.Buffer(4, float3)
    vertices.copy_from([float3(-1, -1, z), float3(1, -1, z), float3(1, 1, z), float3(-1, 1, z)])
    triangles = luisa.Buffer(6, int)
    triangles.copy_from(np.array([0, 1, 2, 0, 2, 3], np.int32))
    return vertices, triangles


def test_the_program_matches_real_luisa(fresh_session, capsys):
    """Same hits, distances and barycentrics within 4e-6 relative (a few float32 ulps:
    the two intersect in different orders of operations)."""
    require_real_luisa()
    real = printed_rows(run_on_real_luisa(PROGRAM, "cpu"))
    run_on_luisa_nb(PROGRAM, "cpu")
    ours = printed_rows(capsys.readouterr().out)
    assert real.shape == ours.shape == (144, 8)
    hit = real[:, 0] >= 0
    assert 30 < hit.sum() < 120 and len(set(real[hit, 0])) == 3
    np.testing.assert_array_equal(ours[:, [0, 1, 5, 6]], real[:, [0, 1, 5, 6]])
    assert real[:, 6].sum() > 0
    np.testing.assert_allclose(ours[:, [2, 7]], real[:, [2, 7]], rtol=4e-6)
    np.testing.assert_allclose(ours[:, 3:5], real[:, 3:5], rtol=0, atol=2e-6)


def test_the_program_runs_on_every_backend(device_name, capsys):
    run_on_luisa_nb(PROGRAM, device_name)
    rows = printed_rows(capsys.readouterr().out)
    hit = rows[:, 0] >= 0
    assert 30 < hit.sum() < 120
    barycentrics = rows[hit, 3:5]
    assert np.all(barycentrics >= 0) and np.all(barycentrics.sum(axis=1) <= 1 + 1e-6)


def test_update_is_a_command_of_the_list_and_transforms_apply_from_the_next(fresh_session):
    luisa.init("cpu")
    accel = luisa.Accel()
    accel.add(*square())
    accel.add(*square(-1.0), transform=float4x4(1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 2, 0, 0, 1))
    assert len(accel) == 2
    accel.update()
    assert [type(c).__name__ for c in luisa.session.stream().pending][-1] == "AccelBuildCommand"
    out = luisa.Buffer(3, float)
    kernels().depth(accel, out, dispatch_size=3)
    assert out.numpy().tolist() == [5.0, 106.0, -1.0]
    accel.set_transform_on_update(1, float4x4(1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 4, 0, -2, 1))
    kernels().depth(accel, out, dispatch_size=3)
    assert out.numpy().tolist() == [5.0, 106.0, -1.0]  # not built yet
    accel.update()
    kernels().depth(accel, out, dispatch_size=3)
    assert out.numpy().tolist() == [5.0, -1.0, 108.0]
    accel.pop()
    accel.update(sync=True)
    kernels().depth(accel, out, dispatch_size=3)
    assert out.numpy().tolist() == [5.0, -1.0, -1.0]


def test_a_stale_vertex_upload_before_update_is_found(fresh_session):
    luisa.init("cpu:submit")
    vertices, triangles = square()
    moved = luisa.Buffer(4, float3)
    moved.copy_from([float3(1, -1, 0), float3(3, -1, 0), float3(3, 1, 0), float3(1, 1, 0)])
    accel = luisa.Accel()
    accel.add(vertices, triangles)
    host = vertices.numpy()
    luisa.synchronize()
    with lnb.trace() as trace:
        moved.copy_to(host, sync=False)
        vertices.copy_from(host)
        accel.update()
        out = luisa.Buffer(3, float)
        kernels().depth(accel, out, dispatch_size=3)
        luisa.synchronize()
    [stale] = [h for h in trace.hazards if h.kind is HazardKind.STALE_UPLOAD]
    build = next(r for r in trace.commands if r.label.startswith("build "))
    upload = trace.command(stale.command_ids[1])
    assert upload.seq < build.seq
    assert any(r.buffer == upload.device_ranges[0].buffer for r in build.device_ranges)
    assert out.numpy().tolist() == [5.0, -1.0, -1.0]  # built from the old square


def test_what_luisa_nb_lacks_says_so(fresh_session):
    luisa.init("cpu")
    accel = luisa.Accel()
    with pytest.raises(UnsupportedFeatureError, match="procedural primitives"):
        accel.add_procedural(luisa.Buffer(6, float))
    with pytest.raises(InvalidArgumentError, match="int32 or uint32 indices"):
        accel.add(square()[0], luisa.Buffer(6, float))
    accel.add(*square())
    accel.update()
    with pytest.raises(KernelCompileError, match="ray queries is not supported"):
        kernels().query(accel, luisa.Buffer(1, float), dispatch_size=1)


def test_cuda_devices_say_to_use_another_backend():
    from luisa_nb.runtime import Accel

    cuda_like = SimpleNamespace(backend=SimpleNamespace(name="cuda"))
    with pytest.raises(UnsupportedFeatureError, match="create the device with 'cpu'"):
        Accel(cuda_like)
