"""Meshes and acceleration structures, as LuisaCompute's ``Mesh`` and ``Accel``.

A :class:`Mesh` names a vertex buffer (``float3`` or ``float4`` elements) and a triangle
buffer (int32 or uint32, three indices per triangle). An :class:`Accel` holds instances
of meshes, each with an object-to-world transform, a visibility mask, a user id and an
opacity flag. Its build is a command (:class:`AccelBuildCommand`): it runs in stream
order, reads every instance's vertex and triangle buffers on the device, and writes the
structure's own buffers, so a trace shows what it read and a build from a buffer whose
upload was stale is found like any other use of that buffer.

The build puts every instance's triangles in world space under one BVH
(:mod:`luisa_nb.runtime.bvh`); a mesh needs no build of its own, and ``set_transform``
or ``set_visibility`` followed by a build rebuilds it whole. Kernels see an accel as a
bindless array of its three buffers (nodes, triangles, instances), read by every
dispatch that uses it; see docs/kernels.md, "Ray tracing".
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from luisa_nb.backends.base import DeviceSpan
from luisa_nb.errors import InvalidArgumentError, KernelError, UnsupportedFeatureError
from luisa_nb.kernels.lang.rays import ACCEL_INSTANCE, BVH_NODE, BVH_TRIANGLE
from luisa_nb.recording.records import Access, CommandKind, DeviceRange
from luisa_nb.runtime.buffer import BufferView
from luisa_nb.runtime.bvh import build_bvh
from luisa_nb.runtime.commands import Command
from luisa_nb.runtime.indirect import finish
from luisa_nb.runtime.stream import submit_one

if TYPE_CHECKING:
    from luisa_nb.runtime.device import Device
    from luisa_nb.runtime.staging import Transfers
    from luisa_nb.runtime.stream import Stream

VERTEX_FIELDS = ("x", "y", "z")
ALL_VISIBLE = 0xFF  # visibility masks have 8 bits, as in LuisaCompute
IDENTITY = np.eye(4, dtype=np.float32)


class AccelBuildError(KernelError):
    """An acceleration structure's build met a triangle index outside its vertex buffer."""


def _vertex_positions(raw: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """``(n, 3)`` float32 positions from a vertex buffer's bytes."""
    records = raw.view(dtype)
    return np.stack([records[field] for field in VERTEX_FIELDS], axis=1).astype(np.float32)


def _check_vertices(view: Any) -> BufferView:
    if not isinstance(view, BufferView):
        raise InvalidArgumentError(
            f"a mesh's vertices are a buffer of float3 or float4, got {type(view).__name__}"
        )
    fields = view.dtype.names or ()
    if fields[:3] != VERTEX_FIELDS or view.dtype.fields["x"][0] != np.float32:
        raise InvalidArgumentError(
            f"a mesh's vertex buffer holds float3 or float4, {view._name()} holds "
            f"{view.dtype}; create it with dtype float3"
        )
    return view


def _check_triangles(view: Any) -> BufferView:
    if not isinstance(view, BufferView):
        raise InvalidArgumentError(
            f"a mesh's triangles are a buffer of int or uint indices, got {type(view).__name__}"
        )
    if view.dtype not in (np.dtype(np.int32), np.dtype(np.uint32)) or view.size % 3:
        raise InvalidArgumentError(
            f"a mesh's triangle buffer holds int32 or uint32 indices, three per triangle; "
            f"{view._name()} holds {view.size} of {view.dtype}"
        )
    return view


class Mesh:
    """The triangles of ``vertices`` (a buffer of float3 or float4) indexed by
    ``triangles`` (a buffer of int32 or uint32, three per triangle), on ``device``."""

    def __init__(self, device: Device, vertices: BufferView, triangles: BufferView) -> None:
        self.device = device
        self.vertices = _check_vertices(vertices)
        self.triangles = _check_triangles(triangles)
        for view in (self.vertices, self.triangles):
            view.buffer.check_alive()
            if view.device is not device:
                raise InvalidArgumentError(
                    f"{view._name()} lives on {view.device.name!r}, the mesh on {device.name!r}"
                )

    @property
    def triangle_count(self) -> int:
        return self.triangles.size // 3

    def __repr__(self) -> str:
        return (
            f"<Mesh {self.triangle_count} triangles of {self.vertices._name()} "
            f"by {self.triangles._name()}>"
        )


def as_transform(value: Any) -> np.ndarray:
    """A 4x4 float32 matrix (rows by columns, ``p' = M @ p``) from a ``float4x4`` or an
    array-like of that shape."""
    matrix = np.asarray(value, dtype=np.float32)
    if matrix.shape != (4, 4) or not np.all(np.isfinite(matrix)):
        raise InvalidArgumentError(
            f"an instance transform is a float4x4 (or a 4x4 array) of finite values, got "
            f"{value!r:.80}"
        )
    return matrix


def as_mask(value: Any) -> int:
    """A visibility mask: an int whose low 8 bits are kept (``-1`` is every bit)."""
    if not isinstance(value, (int, np.integer)) or isinstance(value, bool):
        raise InvalidArgumentError(f"a visibility mask is an int, got {value!r}")
    return int(value) & ALL_VISIBLE


@dataclass(frozen=True)
class Instance:
    """One instance of an accel: ``mesh`` placed by ``transform``."""

    mesh: Mesh
    transform: np.ndarray
    visibility_mask: int = ALL_VISIBLE
    opaque: bool = True
    user_id: int = 0


class Accel:
    """An acceleration structure of instances of meshes on ``device``.

    ``emplace_back``, ``set``, ``pop_back``, ``set_transform``, ``set_visibility`` and
    ``set_user_id`` change its instances; the next build (``build_async()`` as a command,
    or ``build()``) makes them what later dispatches trace against."""

    __lnb_bindless__ = True
    __lnb_accel__ = True

    def __init__(self, device: Device, name: str | None = None) -> None:
        if device.backend.name == "cuda":
            raise UnsupportedFeatureError(
                "acceleration structures are not supported on luisa_nb's cuda backend: its "
                "kernels have no ray traversal yet; create the device with 'cpu' (or dx, "
                "metal, remote) to trace rays"
            )
        self.device = device
        self.name = name
        self.instances: list[Instance] = []
        self.version = 0  # counts builds that gave it new buffers
        self._buffers: tuple[BufferView, BufferView, BufferView] | None = None

    def _check_index(self, index: int) -> int:
        if not isinstance(index, (int, np.integer)) or not 0 <= index < len(self.instances):
            raise InvalidArgumentError(
                f"accel instance index must be an int in 0 <= index < {len(self.instances)}, "
                f"got {index!r}"
            )
        return int(index)

    def _instance(
        self, mesh: Mesh, transform: Any, visibility_mask: Any, opaque: bool, user_id: Any
    ) -> Instance:
        if not isinstance(mesh, Mesh):
            raise InvalidArgumentError(f"an accel holds meshes, got {type(mesh).__name__}")
        if mesh.device is not self.device:
            raise InvalidArgumentError(
                f"{mesh!r} lives on {mesh.device.name!r}, the accel on {self.device.name!r}"
            )
        if not isinstance(user_id, (int, np.integer)) or not 0 <= user_id <= 0xFFFFFFFF:
            raise InvalidArgumentError(f"a user id is a uint32, got {user_id!r}")
        matrix = np.eye(4, dtype=np.float32) if transform is None else as_transform(transform)
        return Instance(mesh, matrix, as_mask(visibility_mask), bool(opaque), int(user_id))

    def emplace_back(
        self,
        mesh: Mesh,
        transform: Any = None,
        visibility_mask: int = ALL_VISIBLE,
        opaque: bool = True,
        user_id: int = 0,
    ) -> None:
        """Add an instance of ``mesh`` (identity transform by default)."""
        self.instances.append(self._instance(mesh, transform, visibility_mask, opaque, user_id))

    def set(
        self,
        index: int,
        mesh: Mesh,
        transform: Any = None,
        visibility_mask: int = ALL_VISIBLE,
        opaque: bool = True,
        user_id: int = 0,
    ) -> None:
        """Replace instance ``index``."""
        self.instances[self._check_index(index)] = self._instance(
            mesh, transform, visibility_mask, opaque, user_id
        )

    def pop_back(self) -> None:
        """Remove the last instance."""
        if not self.instances:
            raise InvalidArgumentError("pop_back on an accel with no instances")
        self.instances.pop()

    def set_transform(self, index: int, transform: Any) -> None:
        """Give instance ``index`` a new object-to-world transform (from the next build)."""
        position = self._check_index(index)
        self.instances[position] = replace(
            self.instances[position], transform=as_transform(transform)
        )

    def set_visibility(self, index: int, visibility_mask: int) -> None:
        """Give instance ``index`` a new visibility mask (from the next build)."""
        position = self._check_index(index)
        self.instances[position] = replace(
            self.instances[position], visibility_mask=as_mask(visibility_mask)
        )

    def set_user_id(self, index: int, user_id: int) -> None:
        """Give instance ``index`` a new user id (from the next build)."""
        position = self._check_index(index)
        instance = self.instances[position]
        self.instances[position] = self._instance(
            instance.mesh, instance.transform, instance.visibility_mask, instance.opaque, user_id
        )

    def __len__(self) -> int:
        return len(self.instances)

    def build_async(self) -> AccelBuildCommand:
        """A command that builds the structure of the instances as they are now."""
        self.device.check_open()
        for instance in self.instances:
            for view in (instance.mesh.vertices, instance.mesh.triangles):
                view.buffer.check_alive()
        triangles = sum(instance.mesh.triangle_count for instance in self.instances)
        sizes = (max(2 * triangles - 1, 1), max(triangles, 1), max(len(self.instances), 1))
        if self._buffers is None or tuple(b.size for b in self._buffers) != sizes:
            self._buffers = self._create_buffers(sizes)
            self.version += 1
        return AccelBuildCommand(self, tuple(self.instances), self._buffers)

    def build(self, *, sync: bool = False, stream: Stream | None = None) -> None:
        """Build on ``stream`` (default: the device's), after its earlier work."""
        submit_one(self.build_async(), stream, sync)

    def _create_buffers(self, sizes: tuple[int, int, int]) -> tuple[BufferView, ...]:
        label = self._name()
        nodes, triangles, instances = sizes
        return (
            self.device.create_buffer(nodes, BVH_NODE.dtype, name=f"{label}.nodes"),
            self.device.create_buffer(triangles, BVH_TRIANGLE.dtype, name=f"{label}.triangles"),
            self.device.create_buffer(instances, ACCEL_INSTANCE.dtype, name=f"{label}.instances"),
        )

    def _name(self) -> str:
        return self.name or f"accel#{id(self) & 0xFFFF:04x}"

    # -- what kernels see (a bindless array of three buffers) ----------------------------

    def _built(self) -> tuple[BufferView, BufferView, BufferView]:
        if self._buffers is None:
            raise InvalidArgumentError(
                f"{self._name()} was never built; build it (accel.build(), or "
                f"stream.add(accel.build_async())) before a kernel traces rays against it"
            )
        return self._buffers

    def resources(self) -> dict[tuple[int, str], BufferView]:
        return {(slot, "buffer"): view for slot, view in enumerate(self._built())}

    def samplers(self) -> dict[tuple[int, str], Any]:
        return {}

    def views(self) -> list[BufferView]:
        return list(self._built())

    def __repr__(self) -> str:
        return f"<Accel {self._name()}: {len(self.instances)} instances on {self.device.name}>"


class AccelBuildCommand(Command):
    """Builds ``accel``'s structure of ``instances`` into its buffers ``outputs``. It
    reads the instances' vertex and triangle buffers, on the device, when it runs."""

    kind = CommandKind.DISPATCH
    __slots__ = ("accel", "instances", "outputs", "reads")

    def __init__(
        self,
        accel: Accel,
        instances: tuple[Instance, ...],
        outputs: tuple[BufferView, BufferView, BufferView],
    ) -> None:
        reads: list[BufferView] = []
        for instance in instances:
            for view in (instance.mesh.vertices, instance.mesh.triangles):
                if all(view is not known for known in reads):
                    reads.append(view)
        Command.__init__(self, accel.device, (*reads, *outputs))
        self.accel = accel
        self.instances = instances
        self.outputs = outputs
        self.reads = tuple(reads)

    @property
    def label(self) -> str:  # type: ignore[override]
        triangles = sum(instance.mesh.triangle_count for instance in self.instances)
        return (
            f"build {self.accel._name()} ({len(self.instances)} instances, {triangles} triangles)"
        )

    def device_ranges(self) -> tuple[DeviceRange, ...]:
        read = tuple(r for view in self.reads for r in view.device_ranges(Access.READ))
        return read + tuple(r for view in self.outputs for r in view.device_ranges(Access.WRITE))

    def describe(self) -> str:
        return self.label

    def run(self, transfers: Transfers) -> DeviceSpan | None:
        backend = transfers.backend
        contents: dict[int, np.ndarray] = {}
        for view in self.reads:
            memory = view.kernel_buffer
            raw = np.empty(memory.nbytes, np.uint8)
            finish(backend, backend.download(memory.allocation, memory.offset, raw))
            contents[id(view)] = raw
        records = self._triangles(contents)
        bvh = build_bvh(records)
        ordered = np.take(records, bvh.order, axis=0)
        instances = np.zeros(self.outputs[2].size, ACCEL_INSTANCE.dtype)
        columns = instances["transform"]["columns"]
        for index, instance in enumerate(self.instances):
            for axis, name in enumerate(("x", "y", "z", "w")):
                columns[index][name] = instance.transform[axis, :]
            instances[index]["user_id"] = instance.user_id
            instances[index]["mask"] = instance.visibility_mask
        triangles = ordered.reshape(-1).view(BVH_TRIANGLE.dtype)
        for view, data in zip(self.outputs, (bvh.nodes, triangles, instances), strict=True):
            memory = view.kernel_buffer
            finish(backend, backend.upload(memory.allocation, memory.offset, data.view(np.uint8)))
        return None

    def _triangles(self, contents: dict[int, np.ndarray]) -> np.ndarray:
        """Every instance's triangles in world space as ``BVH_TRIANGLE`` records seen as
        float32 ``(n, 3, 4)``: ``[:, :, :3]`` the corners, ``[:, :, 3]`` the bits of the
        instance, primitive and mask."""
        count = sum(instance.mesh.triangle_count for instance in self.instances)
        records = np.empty((count, 3, 4), np.float32)  # every value is set below
        fields = records.view(np.uint32)[:, :, 3]
        first = 0
        for index, instance in enumerate(self.instances):
            mesh = instance.mesh
            positions = _vertex_positions(contents[id(mesh.vertices)], mesh.vertices.dtype)
            corners = contents[id(mesh.triangles)].view(mesh.triangles.dtype)
            if corners.size and (corners.min() < 0 or corners.max() >= len(positions)):
                bad = int(corners[(corners < 0) | (corners >= len(positions))][0])
                raise AccelBuildError(
                    f"building {self.accel._name()}: instance {index}'s triangle buffer "
                    f"{mesh.triangles._name()} holds index {bad}, outside its vertex buffer "
                    f"{mesh.vertices._name()} of {len(positions)} vertices"
                )
            if not np.array_equal(instance.transform, IDENTITY):
                homogeneous = np.concatenate(
                    [positions, np.ones((len(positions), 1), np.float32)], 1
                )
                positions = (homogeneous @ instance.transform.T)[:, :3].astype(np.float32)
            last = first + mesh.triangle_count
            records[first:last, :, :3] = positions[corners.reshape(-1, 3)]
            fields[first:last, 0] = index
            fields[first:last, 1] = np.arange(mesh.triangle_count)
            fields[first:last, 2] = instance.visibility_mask
            first = last
        return records
