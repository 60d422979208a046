"""A bounding volume hierarchy over triangles, built with a binned surface area heuristic,
in the layout kernels traverse (:mod:`luisa_nb.kernels.lang.rays`).

Each node's triangles are sorted into :data:`BINS` bins by centroid along each axis; the
split between two bins that minimises ``area(left) * count(left) + area(right) *
count(right)`` wins, unless intersecting every triangle of a node of up to
:data:`MAX_LEAF` triangles costs less (the node is then a leaf). A node whose centroids
coincide is split at its middle triangle. The tree is built a level at a time, every
node of a level in the same numpy operations, and its nodes are numbered level by level:
an inner node's two children are next to each other.

:func:`build_bvh` builds in C (``_bvh_builder.c``, the same algorithm node for node) where
setup.py built it, and with :func:`build_bvh_numpy` where it did not."""

from __future__ import annotations

import os
from typing import NamedTuple

import numpy as np

from luisa_nb.kernels.lang.rays import BVH_NODE, MAX_BVH_DEPTH

BINS = 16
MAX_LEAF = 8  # a node with more triangles is always split
TRAVERSAL_COST = 1.0  # the cost of visiting a node, in triangle intersections
PYTHON_BUILDER_VARIABLE = "LUISA_NB_PYTHON_BVH"
"""Set to 1, trees are built with numpy even where the C builder was built."""


class Bvh(NamedTuple):
    """``nodes`` (a record array of ``BVH_NODE``) and ``order``: the triangle each leaf
    position holds."""

    nodes: np.ndarray
    order: np.ndarray


def _half_area(lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """Half the surface area of boxes (zero for empty boxes, whose lower > upper)."""
    extent = np.maximum(upper - lower, 0.0)
    x, y, z = extent[..., 0], extent[..., 1], extent[..., 2]
    return x * y + y * z + z * x


def _coordinate_half_area(lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """:func:`_half_area` of boxes whose coordinates are the first axis."""
    extent = np.maximum(upper - lower, 0.0)
    return extent[0] * extent[1] + extent[1] * extent[2] + extent[2] * extent[0]


class _Level:
    """The nodes of one level: their indices and their ranges of ``order``."""

    def __init__(self, nodes: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> None:
        self.nodes, self.starts, self.ends = nodes, starts, ends
        self.sizes = ends - starts
        # where each node's triangles begin when the level's ranges are laid end to end
        self.offsets = np.concatenate([[0], np.cumsum(self.sizes)[:-1]])
        self.segment = np.repeat(np.arange(len(nodes)), self.sizes)
        self.positions = (
            np.arange(int(self.sizes.sum())) - self.offsets[self.segment] + starts[self.segment]
        )


def _running(operation: np.ufunc, values: np.ndarray, reverse: bool = False) -> np.ndarray:
    """``operation.accumulate(values, axis=1)`` (from the last bin back with ``reverse``),
    a whole row of bins at a time: numpy's accumulate steps along the short bin axis once
    per row, which is far slower."""
    result = np.empty_like(values)
    bins = values.shape[1]
    first = bins - 1 if reverse else 0
    result[:, first] = values[:, first]
    for index in range(bins - 2, -1, -1) if reverse else range(1, bins):
        previous = index + 1 if reverse else index - 1
        operation(result[:, previous], values[:, index], out=result[:, index])
    return result


def _split_costs(
    level: _Level, lower: np.ndarray, upper: np.ndarray, centroids: np.ndarray, bins_used: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per triangle of the level its bin on each axis ``(n, 3)``, and per node the cost
    of splitting after each of ``bins_used`` bins on each axis ``(k, 3, bins_used - 1)``
    (inf where a side would be empty)."""
    count = len(level.nodes)
    low = np.minimum.reduceat(centroids, level.offsets)
    high = np.maximum.reduceat(centroids, level.offsets)
    extent = high - low
    scale = np.divide(bins_used, extent, out=np.zeros_like(extent), where=extent > 0)
    segment = level.segment
    bins = ((centroids - low[segment]) * scale[segment]).astype(np.int64)
    np.clip(bins, 0, bins_used - 1, out=bins)
    # bin-major keys (bin, node, axis): the scans over bins below then run over whole
    # rows of nodes and axes at a time, not over many rows of a few bins
    keys = ((bins * count + segment[:, None]) * 3 + np.arange(3)).ravel()
    counts = np.bincount(keys, minlength=bins_used * count * 3).reshape(bins_used, count, 3)
    bin_lower = np.full((3, bins_used * count * 3), np.inf, np.float32)
    bin_upper = np.full((3, bins_used * count * 3), -np.inf, np.float32)
    for coordinate in range(3):  # one-dimensional ufunc.at is numpy's fast path
        np.minimum.at(bin_lower[coordinate], keys, np.repeat(lower[:, coordinate], 3))
        np.maximum.at(bin_upper[coordinate], keys, np.repeat(upper[:, coordinate], 3))
    bin_lower = bin_lower.reshape(3, bins_used, count, 3)  # (coordinate, bin, node, axis)
    bin_upper = bin_upper.reshape(3, bins_used, count, 3)
    left_area = _coordinate_half_area(
        _running(np.minimum, bin_lower)[:, :-1], _running(np.maximum, bin_upper)[:, :-1]
    )
    right_area = _coordinate_half_area(
        _running(np.minimum, bin_lower, reverse=True)[:, 1:],
        _running(np.maximum, bin_upper, reverse=True)[:, 1:],
    )
    left_count = _running(np.add, counts[None])[0, :-1]
    right_count = level.sizes[None, :, None] - left_count
    costs = left_area * left_count + right_area * right_count
    costs[(left_count == 0) | (right_count == 0)] = np.inf
    return bins, np.moveaxis(costs, 0, -1)  # (node, axis, split)


def _empty_bvh() -> Bvh:
    """The BVH of no triangles: one empty leaf, which no ray enters."""
    nodes = np.zeros(1, BVH_NODE.dtype)
    nodes["lower"]["elements"], nodes["upper"]["elements"] = np.inf, -np.inf
    return Bvh(nodes, np.zeros(0, np.int64))


def build_bvh_native(triangles: np.ndarray) -> Bvh:
    """:func:`build_bvh_numpy` in C (``_bvh_builder.c``): the same tree, node for node.
    Triangles with a NaN or infinite coordinate are left to numpy, whose rules for them
    the C builder does not repeat."""
    count = len(triangles)
    if count == 0:
        return _empty_bvh()
    corners = np.ascontiguousarray(triangles, dtype=np.float32)
    nodes = np.empty(2 * count - 1, BVH_NODE.dtype)
    order = np.empty(count, np.int64)
    used = _native_build(corners, nodes, order, corners.shape[2])
    if used is None:
        return build_bvh_numpy(triangles)
    return Bvh(nodes[:used], order)


def build_bvh_numpy(triangles: np.ndarray) -> Bvh:
    """The BVH of ``triangles`` (an ``(n, 3, 3)`` float32 array of vertex positions, or
    ``(n, 3, 4)`` whose fourth value per corner is ignored), built with numpy. With no
    triangles it is one empty leaf, which no ray enters."""
    triangles = triangles[:, :, :3]
    count = len(triangles)
    if count == 0:
        return _empty_bvh()
    nodes = np.zeros(2 * count - 1, BVH_NODE.dtype)
    order = np.arange(count, dtype=np.int64)
    lowers = nodes["lower"]["elements"]
    uppers = nodes["upper"]["elements"]
    lower = triangles.min(axis=1)
    upper = triangles.max(axis=1)
    centroids = (lower + upper) * np.float32(0.5)
    level = _Level(np.array([0]), np.array([0]), np.array([count]))
    used = 1
    for depth in range(MAX_BVH_DEPTH + 1):
        members = order[level.positions]
        member_lower, member_upper = lower[members], upper[members]
        node_lower = np.minimum.reduceat(member_lower, level.offsets)
        node_upper = np.maximum.reduceat(member_upper, level.offsets)
        lowers[level.nodes], uppers[level.nodes] = node_lower, node_upper
        split = level.sizes > 1 if depth < MAX_BVH_DEPTH else np.zeros(len(level.nodes), bool)
        bins_used = int(min(BINS, max(2, level.sizes.max())))
        bins, costs = _split_costs(level, member_lower, member_upper, centroids[members], bins_used)
        flat = costs.reshape(len(level.nodes), -1)
        best = np.argmin(flat, axis=1)
        best_cost = flat[np.arange(len(best)), best]
        area = _half_area(node_lower, node_upper)
        with np.errstate(divide="ignore", invalid="ignore"):
            cheaper_as_leaf = TRAVERSAL_COST + best_cost / area >= level.sizes
        split &= ~((level.sizes <= MAX_LEAF) & (area > 0) & cheaper_as_leaf)
        leaves = ~split
        nodes["child"][level.nodes[leaves]] = level.starts[leaves]
        nodes["count"][level.nodes[leaves]] = level.sizes[leaves]
        if not split.any():
            break
        axis, after = best // (bins_used - 1), best % (bins_used - 1)
        segment = level.segment
        binned = np.isfinite(best_cost)
        goes_left = np.where(
            binned[segment],
            bins[np.arange(len(segment)), axis[segment]] <= after[segment],
            np.arange(len(segment)) - level.offsets[segment] < level.sizes[segment] // 2,
        )
        splitting = split[segment]
        rank = np.lexsort((~goes_left, segment))
        order[level.positions[splitting]] = members[rank][splitting[rank]]
        left_sizes = np.bincount(segment, weights=goes_left, minlength=len(split)).astype(int)
        parents = level.nodes[split]
        children = used + 2 * np.arange(len(parents))
        used += 2 * len(parents)
        nodes["child"][parents] = children
        nodes["count"][parents] = -1 - np.where(binned[split], axis[split], 0)
        starts, ends = level.starts[split], level.ends[split]
        middles = starts + left_sizes[split]
        level = _Level(
            np.concatenate([children, children + 1]),
            np.concatenate([starts, middles]),
            np.concatenate([middles, ends]),
        )
    return Bvh(nodes[:used], order)


try:
    from luisa_nb.runtime._bvh_builder import build as _native_build
except ImportError:  # not built (no C compiler or Python headers at install)
    _native_build = None
NATIVE = _native_build is not None and os.environ.get(PYTHON_BUILDER_VARIABLE, "") in ("", "0")
"""Whether :func:`build_bvh` builds in C."""
build_bvh = build_bvh_native if NATIVE else build_bvh_numpy
"""The BVH of ``triangles`` (an ``(n, 3, 3)`` float32 array of vertex positions, or
``(n, 3, 4)`` whose fourth value per corner is ignored): in C where the extension was
built, else with numpy; with no triangles one empty leaf."""
