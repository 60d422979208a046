/* The BVH builder of luisa_nb/runtime/bvh.py in C: build_bvh_numpy() there is the same
 * algorithm a level at a time in numpy, used where this module was not built, and the two
 * give the same tree, node for node (tests/runtime/test_bvh.py). Both build a level of
 * the tree at a time, so that nodes are numbered as numpy's builder numbers them: every
 * split node of a level, in the level's order, takes the next two node indices, and the
 * next level lists every left child, then every right child.
 *
 * Float arithmetic follows numpy's: boxes, centroids, bins and areas in float32, the
 * costs of splits (area times count) in float64. setup.py compiles this file without
 * contracting a * b + c into one rounding (-ffp-contract=off), which numpy never does.
 * The GIL is released while a tree is built.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Keep in step with bvh.py (BINS, MAX_LEAF, TRAVERSAL_COST) and
 * kernels/lang/rays.py (MAX_BVH_DEPTH, BVH_NODE). */
#define BINS 16
#define MAX_LEAF 8
#define TRAVERSAL_COST 1.0
#define MAX_BVH_DEPTH 60

typedef struct {
    float lower[3];
    int32_t child; /* a leaf's first triangle, or an inner node's left child */
    float upper[3];
    int32_t count; /* a leaf's triangle count, or -1 - split axis */
} Node;

typedef struct {
    float lower[3], upper[3];
} Box;

/* A triangle while the tree is built: its box, its centroid and its index. Each node's
 * triangles are kept next to each other, in the order numpy's builder keeps them. */
typedef struct {
    Box box;
    float centroid[3];
    int32_t index;
} Item;

/* A node of the level being built: its index, its triangles (start .. end), their box
 * and the box of their centroids. */
typedef struct {
    int64_t node, start, end;
    Box box, centroids;
} Range;

static const Box EMPTY_BOX = {{INFINITY, INFINITY, INFINITY}, {-INFINITY, -INFINITY, -INFINITY}};

/* Every corner and centroid is finite (build_bvh() checks): min and max need no NaN
 * rules. */
static inline float min2(float a, float b) { return a < b ? a : b; }
static inline float max2(float a, float b) { return a > b ? a : b; }

static inline float half_area(const Box *box)
{
    float x = box->upper[0] - box->lower[0], y = box->upper[1] - box->lower[1],
          z = box->upper[2] - box->lower[2];
    x = x > 0.0f ? x : 0.0f;
    y = y > 0.0f ? y : 0.0f;
    z = z > 0.0f ? z : 0.0f;
    return x * y + y * z + z * x;
}

static inline void grow(Box *box, const Box *other)
{
    for (int k = 0; k < 3; k++) {
        box->lower[k] = min2(box->lower[k], other->lower[k]);
        box->upper[k] = max2(box->upper[k], other->upper[k]);
    }
}

static inline void grow_point(Box *box, const float *point)
{
    for (int k = 0; k < 3; k++) {
        box->lower[k] = min2(box->lower[k], point[k]);
        box->upper[k] = max2(box->upper[k], point[k]);
    }
}

static inline Box point_box(const float *point)
{
    Box box = {{point[0], point[1], point[2]}, {point[0], point[1], point[2]}};
    return box;
}

/* numpy's float32 -> int64 cast then clip to 0 .. bins - 1; position is at least 0, or
 * NaN (an infinite distance times a zero scale), which numpy casts to INT64_MIN. */
static inline int bin_of(float position, int bins)
{
    if (position < (float)bins) {
        return (int)position;
    }
    return position == position ? bins - 1 : 0;
}

/* The split of one node found by binning: axis and the last bin of the left side; its
 * cost is infinite where every split leaves one side empty. */
typedef struct {
    int axis, after;
    double cost;
    float low[3], scale[3];
} Split;

static Split best_split(const Item *items, const Range *range, int bins)
{
    Split split = {-1, 0, INFINITY, {0}, {0}};
    for (int k = 0; k < 3; k++) {
        float extent = range->centroids.upper[k] - range->centroids.lower[k];
        split.low[k] = range->centroids.lower[k];
        split.scale[k] = extent > 0.0f ? (float)bins / extent : 0.0f;
    }
    int64_t counts[3][BINS] = {{0}};
    Box boxes[3][BINS];
    for (int k = 0; k < 3; k++) {
        for (int b = 0; b < bins; b++) {
            boxes[k][b] = EMPTY_BOX;
        }
    }
    for (int64_t i = range->start; i < range->end; i++) {
        const Item *item = &items[i];
        for (int k = 0; k < 3; k++) {
            int b = bin_of((item->centroid[k] - split.low[k]) * split.scale[k], bins);
            counts[k][b]++;
            grow(&boxes[k][b], &item->box);
        }
    }
    int64_t size = range->end - range->start;
    for (int k = 0; k < 3; k++) {
        /* A split after an empty bin costs exactly what the split before it costs, which
         * numpy's argmin (the first minimum) prefers: only splits after the bins that
         * hold triangles are tried. Bin 0 always holds the lowest centroid. */
        int filled[BINS], filled_count = 0;
        for (int b = 0; b < bins; b++) {
            if (counts[k][b]) {
                filled[filled_count++] = b;
            }
        }
        float right_areas[BINS]; /* of the box right of the split after filled[j] */
        Box running = boxes[k][filled[filled_count - 1]];
        for (int j = filled_count - 2; j >= 0; j--) {
            right_areas[j] = half_area(&running);
            grow(&running, &boxes[k][filled[j]]);
        }
        running = boxes[k][0];
        int64_t left_count = 0;
        for (int j = 0; j < filled_count - 1; j++) {
            int b = filled[j];
            if (j) {
                grow(&running, &boxes[k][b]);
            }
            left_count += counts[k][b];
            int64_t right_count = size - left_count;
            double left = (double)half_area(&running) * (double)left_count;
            double right = (double)right_areas[j] * (double)right_count;
            double cost = left + right;
            if (cost < split.cost) {
                split.cost = cost;
                split.axis = k;
                split.after = b;
            }
        }
    }
    return split;
}

/* Reorder range's items, those going left first, each side in its old order, into the
 * two ranges `left` and `right` (their boxes too). */
static void partition(Item *items, Item *scratch, const Range *range, const Split *split,
                      int bins, Range *left, Range *right)
{
    int64_t size = range->end - range->start, left_end = range->start, right_count = 0;
    int binned = isfinite(split->cost);
    int k = split->axis;
    for (int64_t i = range->start; i < range->end; i++) {
        const Item *item = &items[i];
        int goes_left;
        if (binned) {
            float position = (item->centroid[k] - split->low[k]) * split->scale[k];
            goes_left = bin_of(position, bins) <= split->after;
        } else {
            goes_left = i - range->start < size / 2;
        }
        Range *side = goes_left ? left : right;
        if (side->start == side->end) {
            side->box = item->box;
            side->centroids = point_box(item->centroid);
        } else {
            grow(&side->box, &item->box);
            grow_point(&side->centroids, item->centroid);
        }
        side->end++;
        if (goes_left) {
            items[left_end++] = *item;
        } else {
            scratch[right_count++] = *item;
        }
    }
    memcpy(items + left_end, scratch, (size_t)right_count * sizeof(Item));
    right->start = left_end;
    right->end = left_end + right_count;
}

/* Build the tree of `count` items (whose order ends as the leaves list them) into
 * `nodes`; the number of nodes used, or -1 where memory ran out. */
static int64_t build(Item *items, int64_t count, Node *nodes)
{
    Item *scratch = malloc((size_t)count * sizeof(Item));
    Range *level = malloc((size_t)count * sizeof(Range));
    Range *next = malloc((size_t)2 * count * sizeof(Range));
    Range *lefts = malloc((size_t)count * sizeof(Range));
    Range *rights = malloc((size_t)count * sizeof(Range));
    if (!scratch || !level || !next || !lefts || !rights) {
        free(scratch), free(level), free(next), free(lefts), free(rights);
        return -1;
    }
    Range root = {0, 0, count, items[0].box, point_box(items[0].centroid)};
    for (int64_t i = 1; i < count; i++) {
        grow(&root.box, &items[i].box);
        grow_point(&root.centroids, items[i].centroid);
    }
    int64_t level_size = 1, used = 1;
    level[0] = root;
    for (int depth = 0; depth <= MAX_BVH_DEPTH && level_size > 0; depth++) {
        int64_t largest = 0;
        for (int64_t j = 0; j < level_size; j++) {
            int64_t size = level[j].end - level[j].start;
            largest = size > largest ? size : largest;
        }
        int bins = largest < 2 ? 2 : (largest > BINS ? BINS : (int)largest);
        int64_t splits = 0;
        for (int64_t j = 0; j < level_size; j++) {
            const Range *range = &level[j];
            Node *node = &nodes[range->node];
            memcpy(node->lower, range->box.lower, sizeof node->lower);
            memcpy(node->upper, range->box.upper, sizeof node->upper);
            int64_t size = range->end - range->start;
            int split_node = size > 1 && depth < MAX_BVH_DEPTH;
            Split split;
            if (split_node) {
                split = best_split(items, range, bins);
                float area = half_area(&range->box);
                int cheaper_as_leaf = TRAVERSAL_COST + split.cost / (double)area >= (double)size;
                if (size <= MAX_LEAF && area > 0.0f && cheaper_as_leaf) {
                    split_node = 0;
                }
            }
            if (!split_node) {
                node->child = (int32_t)range->start;
                node->count = (int32_t)size;
                continue;
            }
            int64_t children = used + 2 * splits;
            Range *left = &lefts[splits], *right = &rights[splits];
            left->node = children;
            right->node = children + 1;
            left->start = left->end = range->start;
            right->start = right->end = 0;
            partition(items, scratch, range, &split, bins, left, right);
            node->child = (int32_t)children;
            node->count = -1 - (isfinite(split.cost) ? split.axis : 0);
            splits++;
        }
        memcpy(next, lefts, (size_t)splits * sizeof(Range));
        memcpy(next + splits, rights, (size_t)splits * sizeof(Range));
        used += 2 * splits;
        level_size = 2 * splits;
        Range *swap = level;
        level = next;
        next = swap;
    }
    free(scratch), free(level), free(next), free(lefts), free(rights);
    return used;
}

PyDoc_STRVAR(build_doc,
             "build(triangles, nodes, order, corner_floats=3) -> int\n\n"
             "Build the BVH of triangles (n * 3 * corner_floats contiguous float32: three "
             "corners of x, y, z and, with corner_floats 4, a value that is ignored) "
             "into nodes (at least 2n - 1 writable 32-byte BVH_NODE records) and order "
             "(n writable int64, set to the triangle each leaf position holds); the number "
             "of nodes used, or None (nothing built) where a corner is not finite. n is at "
             "least 1.");

static PyObject *build_bvh(PyObject *self, PyObject *args)
{
    Py_buffer triangles, nodes, order;
    int corner_floats = 3;
    if (!PyArg_ParseTuple(args, "y*w*w*|i", &triangles, &nodes, &order, &corner_floats)) {
        return NULL;
    }
    PyObject *result = NULL;
    Item *items = NULL;
    if (corner_floats != 3 && corner_floats != 4) {
        PyErr_SetString(PyExc_ValueError, "corner_floats must be 3 or 4");
        goto done;
    }
    Py_ssize_t triangle_bytes = 3 * corner_floats * (Py_ssize_t)sizeof(float);
    int64_t count = (int64_t)(triangles.len / triangle_bytes);
    if (count < 1 || count > INT32_MAX / 2 || triangles.len != count * triangle_bytes) {
        PyErr_SetString(PyExc_ValueError,
                        "triangles must be 1 to 2**30 - 1 times 3 corners of float32 values");
        goto done;
    }
    if (nodes.len < (2 * count - 1) * (Py_ssize_t)sizeof(Node) ||
        order.len != count * (Py_ssize_t)sizeof(int64_t)) {
        PyErr_SetString(PyExc_ValueError, "nodes must hold 2n - 1 nodes and order n int64");
        goto done;
    }
    items = malloc((size_t)count * sizeof(Item));
    if (!items) {
        PyErr_NoMemory();
        goto done;
    }
    int64_t used = 0;
    int finite = 1;
    Py_BEGIN_ALLOW_THREADS
    const float *corners = triangles.buf;
    for (int64_t t = 0; t < count; t++) {
        const float *a = corners + 3 * corner_floats * t;
        const float *b = a + corner_floats, *c = b + corner_floats;
        Item *item = &items[t];
        for (int k = 0; k < 3; k++) {
            float lower = min2(min2(a[k], b[k]), c[k]);
            float upper = max2(max2(a[k], b[k]), c[k]);
            item->box.lower[k] = lower;
            item->box.upper[k] = upper;
            item->centroid[k] = (lower + upper) * 0.5f;
            finite &= isfinite(lower) & isfinite(upper) & isfinite(item->centroid[k]);
        }
        item->index = (int32_t)t;
    }
    if (finite) {
        used = build(items, count, nodes.buf);
        int64_t *positions = order.buf;
        for (int64_t i = 0; i < count; i++) {
            positions[i] = items[i].index;
        }
    }
    Py_END_ALLOW_THREADS
    if (!finite) {
        result = Py_NewRef(Py_None);
    } else if (used < 0) {
        PyErr_NoMemory();
    } else {
        result = PyLong_FromLongLong(used);
    }
done:
    free(items);
    PyBuffer_Release(&triangles);
    PyBuffer_Release(&nodes);
    PyBuffer_Release(&order);
    return result;
}

static PyMethodDef methods[] = {
    {"build", build_bvh, METH_VARARGS, build_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_bvh_builder",
    "The BVH builder of luisa_nb.runtime.bvh in C.", -1, methods,
};

PyMODINIT_FUNC PyInit__bvh_builder(void) { return PyModule_Create(&module); }
