"""Acceleration structures in Python mode: the methods kernels call on one run the
traversal callables of :mod:`luisa_nb.kernels.lang.rays` (in Python mode too) over the
structure's buffer shims, so both modes run one traversal."""

from __future__ import annotations

from typing import Any

import numpy as np

from luisa_nb.kernels.lang.rays import ACCEL_CALLABLES, ACCEL_METHOD_ALIASES


class AccelShimMethods:
    """Mixin of the bindless shim: the methods of an acceleration structure, whose
    slots 0, 1 and 2 hold its nodes, triangles and instances (typing only lets these
    calls through on one)."""

    executable: Any
    shims: dict[tuple[int, str], Any]

    def _accel_call(self, method: str, *arguments: Any) -> Any:
        function = self.executable._python_function(ACCEL_CALLABLES[method].definition)
        buffers = (self.shims[(slot, "buffer")] for slot in range(3))
        return function(*buffers, *arguments)

    def trace_closest(self, ray: Any, vis_mask: Any) -> Any:
        return self._accel_call("trace_closest", ray, _unsigned(vis_mask))

    def trace_any(self, ray: Any, vis_mask: Any) -> Any:
        return self._accel_call("trace_any", ray, _unsigned(vis_mask))

    def instance_transform(self, index: Any) -> Any:
        return self._accel_call("instance_transform", _unsigned(index))

    def instance_user_id(self, index: Any) -> Any:
        return self._accel_call("instance_user_id", _unsigned(index))

    def instance_visibility_mask(self, index: Any) -> Any:
        return self._accel_call("instance_visibility_mask", _unsigned(index))

    def __getattr__(self, name: str) -> Any:
        alias = ACCEL_METHOD_ALIASES.get(name)
        if alias is None:
            raise AttributeError(name)
        return getattr(self, alias)


def _unsigned(value: Any) -> np.uint32:
    """An integer as the uint32 kernels see (``-1`` is every bit)."""
    return np.uint32(int(value) & 0xFFFFFFFF)
