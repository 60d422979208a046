"""A bounding volume hierarchy over triangles, built with a binned surface area heuristic,
in the layout kernels traverse (:mod:`luisa_nb.kernels.lang.rays`).

Each node's triangles are sorted into :data:`BINS` bins by centroid along each axis; the
split between two bins that minimises ``area(left) * count(left) + area(right) *
count(right)`` wins if it costs less than intersecting every triangle of the node (which
then becomes a leaf). Leaves hold up to :data:`MAX_LEAF` triangles, fewer when splitting
pays; a node whose centroids coincide is split at its middle triangle. Nodes are written
depth first, each inner node's first child right after it."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from luisa_nb.kernels.lang.rays import BVH_NODE, MAX_BVH_DEPTH

BINS = 16
MAX_LEAF = 8  # a node with more triangles is always split
TRAVERSAL_COST = 1.0  # the cost of visiting a node, in triangle intersections


class Bvh(NamedTuple):
    """``nodes`` (a record array of ``BVH_NODE``) and ``order``: the triangle each leaf
    position holds."""

    nodes: np.ndarray
    order: np.ndarray


def _half_area(lower: np.ndarray, upper: np.ndarray) -> np.ndarray:
    """Half the surface area of boxes (zero for empty boxes, whose lower > upper)."""
    extent = np.maximum(upper - lower, 0.0)
    return (
        extent[..., 0] * extent[..., 1]
        + extent[..., 1] * extent[..., 2]
        + (extent[..., 2] * extent[..., 0])
    )


def _best_split(
    centroids: np.ndarray, lower: np.ndarray, upper: np.ndarray
) -> tuple[float, int, np.ndarray] | None:
    """``(cost, axis, goes_left)`` of the cheapest binned split of these triangles
    (bounds ``lower``/``upper``), or None when all centroids coincide."""
    low, high = centroids.min(axis=0), centroids.max(axis=0)
    best: tuple[float, int, np.ndarray] | None = None
    for axis in range(3):
        extent = float(high[axis] - low[axis])
        if not extent > 0.0:
            continue
        bins = ((centroids[:, axis] - low[axis]) * (BINS / extent)).astype(np.int64)
        np.clip(bins, 0, BINS - 1, out=bins)
        counts = np.bincount(bins, minlength=BINS)
        bin_lower = np.full((BINS, 3), np.inf, np.float32)
        bin_upper = np.full((BINS, 3), -np.inf, np.float32)
        np.minimum.at(bin_lower, bins, lower)
        np.maximum.at(bin_upper, bins, upper)
        left_area = _half_area(
            np.minimum.accumulate(bin_lower)[:-1], np.maximum.accumulate(bin_upper)[:-1]
        )
        right_area = _half_area(
            np.minimum.accumulate(bin_lower[::-1])[::-1][1:],
            np.maximum.accumulate(bin_upper[::-1])[::-1][1:],
        )
        left_count = np.cumsum(counts)[:-1]
        right_count = len(centroids) - left_count
        costs = left_area * left_count + right_area * right_count
        costs[(left_count == 0) | (right_count == 0)] = np.inf
        split = int(np.argmin(costs))
        if np.isfinite(costs[split]) and (best is None or costs[split] < best[0]):
            best = (float(costs[split]), axis, bins <= split)
    return best


def build_bvh(triangles: np.ndarray) -> Bvh:
    """The BVH of ``triangles`` (an ``(n, 3, 3)`` float32 array of vertex positions).
    With no triangles it is one empty leaf, which no ray enters."""
    count = len(triangles)
    nodes = np.zeros(max(2 * count - 1, 1), BVH_NODE.dtype)
    order = np.arange(count, dtype=np.int64)
    if count == 0:
        nodes[0]["lower"]["elements"] = np.inf
        nodes[0]["upper"]["elements"] = -np.inf
        return Bvh(nodes, order)
    lower = triangles.min(axis=1)
    upper = triangles.max(axis=1)
    centroids = (lower + upper) * np.float32(0.5)
    lowers = nodes["lower"]["elements"]
    uppers = nodes["upper"]["elements"]
    used = 0
    work = [(-1, 0, count, 0)]  # (parent whose second child this is, start, end, depth)
    while work:
        parent, start, end, depth = work.pop()
        index, used = used, used + 1
        if parent >= 0:
            nodes[parent]["child"] = index
        members = order[start:end]
        node_lower = lower[members].min(axis=0)
        node_upper = upper[members].max(axis=0)
        lowers[index] = node_lower
        uppers[index] = node_upper
        size = end - start
        split = None
        if size > 1 and depth < MAX_BVH_DEPTH:
            split = _best_split(centroids[members], lower[members], upper[members])
            if split is None:  # coincident centroids: halve the list
                split = (0.0, 0, np.arange(size) < size // 2)
            elif size <= MAX_LEAF:
                area = float(_half_area(node_lower, node_upper))
                if area > 0.0 and TRAVERSAL_COST + split[0] / area >= size:
                    split = None
        if split is None:
            nodes[index]["child"] = start
            nodes[index]["count"] = size
            continue
        _, axis, goes_left = split
        middle = start + int(goes_left.sum())
        order[start:end] = np.concatenate([members[goes_left], members[~goes_left]])
        nodes[index]["count"] = -1 - axis
        work.append((index, middle, end, depth + 1))
        work.append((-1, start, middle, depth + 1))
    return Bvh(nodes[:used], order)
