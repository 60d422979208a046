"""The BVH builders of acceleration structures: the C builder (_bvh_builder.c) gives the
numpy builder's tree node for node on random, degenerate and coincident triangles, and
every tree holds every triangle once in boxes that hold their children. That an accel
built by either traces the same hits is in tests/kernels/test_kernel_rays.py."""

from __future__ import annotations

import os

import numpy as np
import pytest

from luisa_nb.kernels.lang.rays import BVH_NODE, MAX_BVH_DEPTH
from luisa_nb.runtime import bvh as bvh_module
from luisa_nb.runtime.bvh import build_bvh, build_bvh_native, build_bvh_numpy

NATIVE_MISSING = "the C BVH builder is not in use (not built, or LUISA_NB_PYTHON_BVH)"
needs_native = pytest.mark.skipif(not bvh_module.NATIVE, reason=NATIVE_MISSING)


def random_soup(rng, count, spread=1.0, size=0.25):
    centres = rng.uniform(-spread, spread, (count, 1, 3))
    return (centres + rng.normal(0, size, (count, 3, 3))).astype(np.float32)


def degenerate_soup(rng, count):
    """Points, segments and proper triangles mixed."""
    soup = random_soup(rng, count)
    soup[::3, 1:] = soup[::3, :1]  # points
    soup[1::3, 2] = (soup[1::3, 0] + soup[1::3, 1]) / 2  # segments
    return soup


def coincident_centroids(rng, count):
    """Triangles of many sizes around the same few centres."""
    centres = rng.uniform(-1, 1, (3, 1, 3))[rng.integers(0, 3, count)]
    offsets = rng.normal(0, 1, (count, 1, 3)) * np.array([[[1], [-1], [0]]])
    return (centres + offsets).astype(np.float32)


def flat_soup(rng, count):
    soup = random_soup(rng, count)
    soup[:, :, 2] = 0.5
    return soup


def grid_soup(count):
    """Equal triangles on a grid: ties in every bin."""
    side = int(np.ceil(np.sqrt(count)))
    corners = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0]], np.float32)
    cells = np.stack(np.meshgrid(np.arange(side), np.arange(side), [0]), -1).reshape(-1, 1, 3)
    return (cells[:count] + corners).astype(np.float32)


rng_seed = np.random.default_rng
SCENES = {
    "one triangle": lambda: random_soup(rng_seed(1), 1),
    "two triangles": lambda: random_soup(rng_seed(2), 2),
    "nine": lambda: random_soup(rng_seed(3), 9),
    "random 500": lambda: random_soup(rng_seed(4), 500),
    "random 5000 small": lambda: random_soup(rng_seed(5), 5000, size=0.02),
    "clustered and spread": lambda: np.concatenate(
        [random_soup(rng_seed(6), 300, spread=0.01), random_soup(rng_seed(7), 300, spread=50)]
    ),
    "degenerate": lambda: degenerate_soup(rng_seed(8), 600),
    "all at one point": lambda: np.zeros((40, 3, 3), np.float32),
    "one triangle repeated": lambda: np.repeat(random_soup(rng_seed(9), 1), 70, axis=0),
    "coincident centroids": lambda: coincident_centroids(rng_seed(10), 400),
    "flat": lambda: flat_soup(rng_seed(11), 500),
    "grid": lambda: grid_soup(1000),
}


def check_tree(soup, bvh):
    """Every triangle in exactly one leaf, each box holding its triangles and its children,
    inner nodes' children next to each other after their parent, depth within the limit."""
    count = len(soup)
    nodes = bvh.nodes
    lower, upper = nodes["lower"]["elements"], nodes["upper"]["elements"]
    assert sorted(bvh.order.tolist()) == list(range(count))
    seen = np.zeros(count, int)
    depth = {0: 0}
    for index, node in enumerate(nodes):
        if node["count"] >= 0:
            members = bvh.order[node["child"] : node["child"] + node["count"]]
            seen[members] += 1
            assert np.all(soup[members].min(axis=1) >= lower[index])
            assert np.all(soup[members].max(axis=1) <= upper[index])
            continue
        assert -3 <= node["count"] <= -1
        assert index < node["child"] and node["child"] + 1 < len(nodes)
        for child in (node["child"], node["child"] + 1):
            assert child not in depth
            depth[child] = depth[index] + 1
            assert np.all(lower[child] >= lower[index]) and np.all(upper[child] <= upper[index])
    assert len(depth) == len(nodes)
    assert seen.tolist() == [1] * count
    assert max(depth.values()) <= MAX_BVH_DEPTH


@pytest.mark.parametrize("builder", [build_bvh_numpy, pytest.param(build_bvh_native,
    marks=needs_native)], ids=["numpy", "c"])  # fmt: skip
@pytest.mark.parametrize("scene", list(SCENES))
def test_each_builder_makes_a_tree_over_every_triangle(builder, scene):
    soup = SCENES[scene]()
    check_tree(soup, builder(soup))


@needs_native
@pytest.mark.parametrize("scene", list(SCENES))
def test_the_c_builder_gives_the_numpy_tree_node_for_node(scene):
    soup = SCENES[scene]()
    native, reference = build_bvh_native(soup), build_bvh_numpy(soup)
    assert native.nodes.dtype == reference.nodes.dtype
    assert native.nodes.tobytes() == reference.nodes.tobytes()
    assert native.order.tolist() == reference.order.tolist()


def test_a_random_soup_makes_a_shallow_tree_with_leaves_of_several_triangles():
    soup = random_soup(np.random.default_rng(3), 500)
    bvh = build_bvh(soup)
    check_tree(soup, bvh)
    assert len(bvh.nodes) < 2 * 500 - 1


@pytest.mark.parametrize("builder", [build_bvh_numpy, pytest.param(build_bvh_native,
    marks=needs_native)], ids=["numpy", "c"])  # fmt: skip
def test_no_triangles_make_one_empty_leaf(builder):
    empty = builder(np.zeros((0, 3, 3), np.float32))
    assert len(empty.nodes) == 1 and empty.nodes[0]["count"] == 0 and len(empty.order) == 0
    assert np.all(empty.nodes[0]["lower"]["elements"] > empty.nodes[0]["upper"]["elements"])


@needs_native
@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")  # numpy's, on NaN
def test_triangles_with_a_non_finite_corner_are_built_as_numpy_builds_them():
    soup = random_soup(np.random.default_rng(12), 50)
    soup[7, 1, 0] = np.nan
    soup[20, 2, 2] = np.inf
    native, reference = build_bvh_native(soup), build_bvh_numpy(soup)
    assert native.nodes.tobytes() == reference.nodes.tobytes()
    assert native.order.tolist() == reference.order.tolist()


@pytest.mark.parametrize("builder", [build_bvh_numpy, pytest.param(build_bvh_native,
    marks=needs_native)], ids=["numpy", "c"])  # fmt: skip
def test_a_fourth_value_per_corner_is_ignored(builder):
    """The accel hands its triangle records, (n, 3, 4) with instance, primitive and mask
    bits in the fourth column."""
    soup = degenerate_soup(np.random.default_rng(16), 300)
    records = np.concatenate([soup, np.full((300, 3, 1), np.nan, np.float32)], axis=2)
    plain, padded = builder(soup), builder(records)
    assert padded.nodes.tobytes() == plain.nodes.tobytes()
    assert padded.order.tolist() == plain.order.tolist()


def test_the_c_builder_writes_the_node_layout_kernels_read():
    """_bvh_builder.c writes 32-byte nodes: lower, child, upper, count."""
    fields = BVH_NODE.dtype.fields
    assert BVH_NODE.dtype.itemsize == 32
    assert [fields[name][1] for name in ("lower", "child", "upper", "count")] == [0, 12, 16, 28]


def test_the_c_builder_is_built_where_ci_asks_for_it():
    """CI sets LUISA_NB_REQUIRE_NATIVE: a build that silently fell back to numpy fails it."""
    if not os.environ.get("LUISA_NB_REQUIRE_NATIVE"):
        pytest.skip("LUISA_NB_REQUIRE_NATIVE is not set")
    assert bvh_module.NATIVE, NATIVE_MISSING
