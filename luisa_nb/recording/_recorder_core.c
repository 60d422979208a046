/* The recorder's hot paths in C: the hooks the runtime calls once per command, and the
 * logs they append to. luisa_nb/recording/recorder_core.py holds the same code in Python
 * (used where this module was not built) and documents what each part does; the two
 * are tested against each other.
 *
 * Each hook runs with the GIL held. The part of a hook that draws a seq and a time and
 * appends its row runs no Python code (it allocates no Python object), so no other
 * thread runs in between: seqs, times and rows are in one order without a lock. A row
 * is a fixed number of int64 values, so a log of a long loop holds no Python object per
 * command for the garbage collector to walk.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define NPY_TARGET_VERSION NPY_1_24_API_VERSION /* runs with numpy 1.24 on, as luisa_nb does */
#include <numpy/arrayobject.h>

#define SUBMISSION_WIDTH 7 /* submission, stream, submitted, seq, id, enqueued, described */
#define ACCESS_WIDTH 6     /* command id, kind, offset, time, digest (16 bytes) */
#define RUN_WIDTH 2        /* first step, steps */
#define TICK_WIDTH 2       /* run, time */
#define HOST_READ 0
#define HOST_WRITE 1
#define DIGEST_BYTES 16
#define CAPTURE_FIELD 4 /* the enqueue capture's position in a command's trace fields */
#define REMEMBERED_BYTES (64 * 1024) /* the most bytes `capture_of` keeps to compare with */

static PyObject *digest_function; /* xxhash.xxh3_128_digest */
static PyObject *str_device, *str_trace_fields, *str_first_submission_of, *str_describe,
    *str_note_array, *str_capture_method, *str_run_failed, *str_run_ended, *str_run_spans;
static PyTypeObject *upload_type, *download_type, *dispatch_type; /* set_command_types */

/* time.perf_counter_ns(), without making an int object */
static inline int64_t clock_now(void)
{
#if PY_VERSION_HEX >= 0x030D0000
    PyTime_t now;
    (void)PyTime_PerfCounterRaw(&now);
    return (int64_t)now;
#else
    return (int64_t)_PyTime_GetPerfCounter();
#endif
}

/* Whether a call got other than `expected` arguments (then a TypeError names `signature`). */
static int wrong_arguments(Py_ssize_t nargs, Py_ssize_t expected, const char *signature)
{
    if (nargs == expected)
        return 0;
    PyErr_Format(PyExc_TypeError, "%s takes %zd arguments, not %zd", signature, expected, nargs);
    return 1;
}

/* An attribute the hooks read per command, read where it is a slot (commands, their
 * arguments and those arguments' memo have __slots__) at the slot's offset: looking its
 * name up costs about as much as the rest of a hook. The offsets are kept for the last
 * few types seen (a list mixes commands of several types); a class's slots stay as the
 * class was made. */
#define ATTRIBUTE_TYPES 4
typedef struct {
    PyObject *name; /* interned */
    PyTypeObject *types[ATTRIBUTE_TYPES]; /* strong references, or NULL */
    Py_ssize_t offsets[ATTRIBUTE_TYPES];  /* of the slot in objects of `types[i]`; 0: none */
    int replace;                          /* the entry a type not kept replaces */
} Attribute;

static Attribute attribute_id, attribute_enqueued, attribute_target, attribute_source,
    attribute_host, attribute_enqueue_capture, attribute_upload_fields, attribute_download_fields,
    attribute_arguments, attribute_memo, attribute_described, attribute_dims, attribute_name;

/* The offset of `type`'s slot named `name`, or 0 where the name is not a slot of it. */
static int slot_offset(PyTypeObject *type, PyObject *name, Py_ssize_t *offset)
{
    *offset = 0;
    PyObject *descriptor = PyObject_GetAttr((PyObject *)type, name);
    if (descriptor == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError))
            return -1;
        PyErr_Clear(); /* an instance's own attribute, or none */
        return 0;
    }
    if (Py_IS_TYPE(descriptor, &PyMemberDescr_Type)) {
        PyMemberDef *member = ((PyMemberDescrObject *)descriptor)->d_member;
        if (member->type == T_OBJECT_EX)
            *offset = member->offset;
    }
    Py_DECREF(descriptor);
    return 0;
}

/* getattr(object, attribute's name), a new reference */
static PyObject *read_attribute(Attribute *attribute, PyObject *object)
{
    PyTypeObject *type = Py_TYPE(object);
    int entry = 0;
    while (entry < ATTRIBUTE_TYPES && attribute->types[entry] != type)
        entry++;
    if (entry == ATTRIBUTE_TYPES) {
        Py_ssize_t offset;
        if (slot_offset(type, attribute->name, &offset) < 0)
            return NULL;
        entry = attribute->replace;
        attribute->replace = (entry + 1) % ATTRIBUTE_TYPES;
        Py_INCREF(type);
        Py_XSETREF(attribute->types[entry], type);
        attribute->offsets[entry] = offset;
    }
    if (attribute->offsets[entry]) {
        PyObject *value = *(PyObject **)((char *)object + attribute->offsets[entry]);
        if (value != NULL) {
            Py_INCREF(value);
            return value;
        }
    }
    return PyObject_GetAttr(object, attribute->name); /* an unset slot raises there */
}

/* -- Log ---------------------------------------------------------------------------- */

/* A log's rows lie in blocks of at most BLOCK_BYTES (of one row, where a row is larger),
 * each allocated once and never moved: a log grows without copying its rows, and leaves
 * no freed memory behind, which the process would keep (doubled by realloc, the logs of a
 * long loop left about half as much again in holes). A block holds a power of two rows,
 * so finding a row takes a shift and a mask. */
#define BLOCK_BYTES (64 * 1024)

typedef struct {
    PyObject_HEAD
    int64_t **blocks;
    Py_ssize_t block_count; /* blocks allocated */
    Py_ssize_t block_slots; /* room in `blocks` */
    int block_shift;        /* a block holds 1 << block_shift rows */
    Py_ssize_t block_rows;  /* 1 << block_shift */
    Py_ssize_t rows;
    Py_ssize_t width;
} LogObject;

static PyTypeObject LogType;

static void log_init(LogObject *log, Py_ssize_t width)
{
    log->blocks = NULL;
    log->block_count = log->block_slots = log->rows = 0;
    log->width = width;
    log->block_shift = 0;
    while (((Py_ssize_t)2 << log->block_shift) * width * (Py_ssize_t)sizeof(int64_t) <= BLOCK_BYTES)
        log->block_shift++;
    log->block_rows = (Py_ssize_t)1 << log->block_shift;
}

/* The values of row `row`, which has room. */
static inline int64_t *log_row_values(LogObject *log, Py_ssize_t row)
{
    return log->blocks[row >> log->block_shift] + (row & (log->block_rows - 1)) * log->width;
}

/* Room for `count` more rows; runs no Python code. */
static int log_reserve(LogObject *log, Py_ssize_t count)
{
    if (count <= (log->block_count << log->block_shift) - log->rows)
        return 0;
    if (count > PY_SSIZE_T_MAX - log->block_rows - log->rows) {
        PyErr_NoMemory();
        return -1;
    }
    Py_ssize_t needed = (log->rows + count + log->block_rows - 1) >> log->block_shift;
    if (needed > log->block_slots) {
        Py_ssize_t slots = log->block_slots ? log->block_slots : 16;
        while (slots < needed) {
            if (slots > PY_SSIZE_T_MAX / 2 / (Py_ssize_t)sizeof(int64_t *)) {
                PyErr_NoMemory();
                return -1;
            }
            slots *= 2;
        }
        int64_t **blocks = PyMem_Realloc(log->blocks, (size_t)slots * sizeof(int64_t *));
        if (blocks == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        log->blocks = blocks;
        log->block_slots = slots;
    }
    while (log->block_count < needed) {
        int64_t *block = PyMem_Malloc((size_t)(log->block_rows * log->width) * sizeof(int64_t));
        if (block == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        log->blocks[log->block_count++] = block;
    }
    return 0;
}

/* Append `count` rows given one after another in `values`; runs no Python code. */
static int log_extend(LogObject *log, const int64_t *values, Py_ssize_t count)
{
    if (log_reserve(log, count) < 0)
        return -1;
    while (count > 0) {
        Py_ssize_t room = log->block_rows - (log->rows & (log->block_rows - 1));
        Py_ssize_t rows = count < room ? count : room;
        memcpy(log_row_values(log, log->rows), values, (size_t)(rows * log->width) * sizeof(int64_t));
        log->rows += rows;
        values += rows * log->width;
        count -= rows;
    }
    return 0;
}

/* Append one row (the hooks' case, without log_extend's loop); runs no Python code. */
static int log_append(LogObject *log, const int64_t *row)
{
    if (log->rows == log->block_count << log->block_shift && log_reserve(log, 1) < 0)
        return -1;
    memcpy(log_row_values(log, log->rows), row, (size_t)log->width * sizeof(int64_t));
    log->rows++;
    return 0;
}

/* Copy rows [start, stop) one after another into `out`. */
static void log_copy_rows(LogObject *log, Py_ssize_t start, Py_ssize_t stop, int64_t *out)
{
    while (start < stop) {
        Py_ssize_t room = log->block_rows - (start & (log->block_rows - 1));
        Py_ssize_t rows = stop - start < room ? stop - start : room;
        memcpy(out, log_row_values(log, start), (size_t)(rows * log->width) * sizeof(int64_t));
        out += rows * log->width;
        start += rows;
    }
}

static PyObject *log_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    Py_ssize_t width;
    static char *keywords[] = {"width", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwds, "n:Log", keywords, &width))
        return NULL;
    if (width < 1) {
        PyErr_SetString(PyExc_ValueError, "a log's rows hold at least one value");
        return NULL;
    }
    LogObject *log = (LogObject *)type->tp_alloc(type, 0);
    if (log != NULL)
        log_init(log, width);
    return (PyObject *)log;
}

static LogObject *make_log(Py_ssize_t width)
{
    LogObject *log = PyObject_New(LogObject, &LogType);
    if (log != NULL)
        log_init(log, width);
    return log;
}

static void log_dealloc(LogObject *log)
{
    for (Py_ssize_t block = 0; block < log->block_count; block++)
        PyMem_Free(log->blocks[block]);
    PyMem_Free(log->blocks);
    Py_TYPE(log)->tp_free((PyObject *)log);
}

static Py_ssize_t log_length(LogObject *log)
{
    return log->rows;
}

static int as_int64(PyObject *value, int64_t *out)
{
#if LONG_MAX == INT64_MAX /* PyLong_AsLong reads a large int's digits; AsLongLong goes by bytes */
    long converted = PyLong_AsLong(value);
#else
    long long converted = PyLong_AsLongLong(value);
#endif
    if (converted == -1 && PyErr_Occurred())
        return -1;
    *out = (int64_t)converted;
    return 0;
}

static PyObject *log_append_method(LogObject *log, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != log->width) {
        PyErr_Format(PyExc_TypeError, "a row of this log holds %zd values, not %zd", log->width,
                     nargs);
        return NULL;
    }
    int64_t row[16] = {0};
    int64_t *values = nargs <= 16 ? row : PyMem_Malloc((size_t)nargs * sizeof(int64_t));
    if (values == NULL)
        return PyErr_NoMemory();
    int failed = 0;
    for (Py_ssize_t i = 0; i < nargs && !failed; i++)
        failed = as_int64(args[i], &values[i]) < 0;
    if (!failed)
        failed = log_append(log, values) < 0;
    if (values != row)
        PyMem_Free(values);
    if (failed)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *log_tobytes(LogObject *log, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t start = 0;
    if (nargs > 1) {
        PyErr_SetString(PyExc_TypeError, "tobytes(start=0)");
        return NULL;
    }
    if (nargs == 1 && (start = PyLong_AsSsize_t(args[0])) == -1 && PyErr_Occurred())
        return NULL;
    if (start < 0 || start > log->rows)
        start = start < 0 ? 0 : log->rows;
    PyObject *data = PyBytes_FromStringAndSize(
        NULL, (log->rows - start) * log->width * (Py_ssize_t)sizeof(int64_t));
    if (data != NULL)
        log_copy_rows(log, start, log->rows, (int64_t *)PyBytes_AS_STRING(data));
    return data;
}

/* tick(): append the clock (a log of one value per row) */
static PyObject *log_tick(LogObject *log, PyObject *unused)
{
    if (log->width != 1) {
        PyErr_SetString(PyExc_ValueError, "tick() appends to a log of one value per row");
        return NULL;
    }
    int64_t now = clock_now();
    if (log_append(log, &now) < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* frombytes(data): append rows given as native int64 values */
static PyObject *log_frombytes(LogObject *log, PyObject *data)
{
    Py_buffer view;
    if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    Py_ssize_t row_bytes = log->width * (Py_ssize_t)sizeof(int64_t);
    Py_ssize_t rows = view.len / row_bytes;
    int failed = 0;
    if (view.len % row_bytes) {
        PyErr_Format(PyExc_ValueError, "%zd bytes are not whole rows of %zd bytes", view.len,
                     row_bytes);
        failed = 1;
    } else {
        failed = log_extend(log, (const int64_t *)view.buf, rows) < 0;
    }
    PyBuffer_Release(&view);
    if (failed)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *log_row(LogObject *log, PyObject *index_object)
{
    Py_ssize_t index = PyLong_AsSsize_t(index_object);
    if (index == -1 && PyErr_Occurred())
        return NULL;
    if (index < 0)
        index += log->rows;
    if (index < 0 || index >= log->rows) {
        PyErr_SetString(PyExc_IndexError, "log row out of range");
        return NULL;
    }
    PyObject *row = PyTuple_New(log->width);
    for (Py_ssize_t i = 0; row != NULL && i < log->width; i++) {
        PyObject *value = PyLong_FromLongLong(log_row_values(log, index)[i]);
        if (value == NULL) {
            Py_CLEAR(row);
            break;
        }
        PyTuple_SET_ITEM(row, i, value);
    }
    return row;
}

/* The index of the last row from `stop` on whose `column` holds `value`, or -1. */
static Py_ssize_t log_last_where(LogObject *log, Py_ssize_t column, int64_t value, Py_ssize_t stop)
{
    for (Py_ssize_t index = log->rows - 1; index >= stop && index >= 0; index--)
        if (log_row_values(log, index)[column] == value)
            return index;
    return -1;
}

static PyObject *log_last_row_where(LogObject *log, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t column, stop;
    int64_t value;
    if (wrong_arguments(nargs, 3, "last_row_where(column, value, stop)"))
        return NULL;
    if (((column = PyLong_AsSsize_t(args[0])) == -1 && PyErr_Occurred()) ||
        as_int64(args[1], &value) < 0 ||
        ((stop = PyLong_AsSsize_t(args[2])) == -1 && PyErr_Occurred()))
        return NULL;
    if (column < 0 || column >= log->width) {
        PyErr_SetString(PyExc_IndexError, "log column out of range");
        return NULL;
    }
    return PyLong_FromSsize_t(log_last_where(log, column, value, stop));
}

/* column(index, stop): column `index` of rows [0, stop), as a new int64 array */
static PyObject *log_column(LogObject *log, PyObject *const *args, Py_ssize_t nargs)
{
    Py_ssize_t column, stop;
    if (wrong_arguments(nargs, 2, "column(index, stop)"))
        return NULL;
    if (((column = PyLong_AsSsize_t(args[0])) == -1 && PyErr_Occurred()) ||
        ((stop = PyLong_AsSsize_t(args[1])) == -1 && PyErr_Occurred()))
        return NULL;
    if (column < 0 || column >= log->width) {
        PyErr_SetString(PyExc_IndexError, "log column out of range");
        return NULL;
    }
    npy_intp length = stop < 0 ? 0 : stop > log->rows ? log->rows : stop;
    PyObject *values = PyArray_SimpleNew(1, &length, NPY_INT64);
    if (values == NULL)
        return NULL;
    int64_t *out = PyArray_DATA((PyArrayObject *)values);
    for (npy_intp row = 0; row < length; row++)
        out[row] = log_row_values(log, row)[column];
    return values;
}

static PyObject *log_get_width(LogObject *log, void *closure)
{
    return PyLong_FromSsize_t(log->width);
}

static PyMethodDef log_methods[] = {
    {"append", (PyCFunction)(void (*)(void))log_append_method, METH_FASTCALL,
     "append(*values): add one row."},
    {"tobytes", (PyCFunction)(void (*)(void))log_tobytes, METH_FASTCALL,
     "tobytes(start=0): the rows from `start` on, as native int64 values."},
    {"row", (PyCFunction)log_row, METH_O, "row(index): one row as a tuple."},
    {"tick", (PyCFunction)log_tick, METH_NOARGS,
     "tick(): append the clock (time.perf_counter_ns) to a log of one value per row."},
    {"frombytes", (PyCFunction)log_frombytes, METH_O,
     "frombytes(data): append rows given as native int64 values."},
    {"column", (PyCFunction)(void (*)(void))log_column, METH_FASTCALL,
     "column(index, stop): column `index` of rows [0, stop), as a new int64 array."},
    {"last_row_where", (PyCFunction)(void (*)(void))log_last_row_where, METH_FASTCALL,
     "last_row_where(column, value, stop): the index of the last row from `stop` on whose "
     "`column` holds `value`, or -1."},
    {NULL}};

static PyGetSetDef log_getset[] = {{"width", (getter)log_get_width, NULL, "values per row"}, {NULL}};

static PySequenceMethods log_as_sequence = {.sq_length = (lenfunc)log_length};

static PyTypeObject LogType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "luisa_nb.recording._recorder_core.Log",
    .tp_doc = "Rows of `width` int64 values, appended to, read as bytes.",
    .tp_basicsize = sizeof(LogObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = log_new,
    .tp_dealloc = (destructor)log_dealloc,
    .tp_as_sequence = &log_as_sequence,
    .tp_methods = log_methods,
    .tp_getset = log_getset,
};

/* -- RecorderCore --------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    LogObject *submissions;
    LogObject *accesses;
    LogObject *steps;         /* the step ids of every run, run after run */
    LogObject *runs;          /* a row per run: its first row in `steps`, its steps */
    LogObject *ticks;         /* a row per tick of a run's worker: run, time */
    PyObject *described_at;   /* dict: id(trace fields) -> position */
    PyObject *policies;       /* dict: stream id -> staging policy */
    PyObject *array_names;    /* dict: id(array) -> (weakref, name) */
    PyObject *captured;       /* dict: binary digest -> Capture */
    PyObject *last_kept;      /* a uint8 array: a copy of the last bytes hashed (capture_of) */
    char last_digest[DIGEST_BYTES]; /* their digest */
    PyObject *last_capture;   /* their capture; NULL with `last_kept` */
    PyObject *last_named;     /* the (weakref, name) entry of the last array found named */
    PyObject *last_fields;    /* the trace fields last logged, at `last_position` */
    int64_t last_position;
    int64_t last_stream;      /* the id of the stream last submitted to */
    int64_t submission_count;
    int64_t sequence;
} CoreObject;

static PyObject *core_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    CoreObject *core = (CoreObject *)type->tp_alloc(type, 0);
    if (core == NULL)
        return NULL;
    core->submissions = make_log(SUBMISSION_WIDTH);
    core->accesses = make_log(ACCESS_WIDTH);
    core->steps = make_log(1);
    core->runs = make_log(RUN_WIDTH);
    core->ticks = make_log(TICK_WIDTH);
    core->described_at = PyDict_New();
    core->policies = PyDict_New();
    core->array_names = PyDict_New();
    core->captured = PyDict_New();
    core->last_stream = INT64_MIN;
    if (!core->submissions || !core->accesses || !core->steps || !core->runs || !core->ticks ||
        !core->described_at || !core->policies || !core->array_names || !core->captured) {
        Py_DECREF(core);
        return NULL;
    }
    return (PyObject *)core;
}

static int core_traverse(CoreObject *core, visitproc visit, void *arg)
{
    Py_VISIT(core->described_at);
    Py_VISIT(core->policies);
    Py_VISIT(core->array_names);
    Py_VISIT(core->captured);
    Py_VISIT(core->last_named);
    Py_VISIT(core->last_capture);
    Py_VISIT(core->last_kept);
    Py_VISIT(core->last_fields);
    return 0;
}

static int core_clear(CoreObject *core)
{
    Py_CLEAR(core->described_at);
    Py_CLEAR(core->policies);
    Py_CLEAR(core->array_names);
    Py_CLEAR(core->captured);
    Py_CLEAR(core->last_named);
    Py_CLEAR(core->last_capture);
    Py_CLEAR(core->last_kept);
    Py_CLEAR(core->last_fields);
    return 0;
}

static void core_dealloc(CoreObject *core)
{
    PyObject_GC_UnTrack(core);
    core_clear(core);
    Py_CLEAR(core->submissions);
    Py_CLEAR(core->accesses);
    Py_CLEAR(core->steps);
    Py_CLEAR(core->runs);
    Py_CLEAR(core->ticks);
    Py_TYPE(core)->tp_free((PyObject *)core);
}

static int attribute_int64(PyObject *object, Attribute *attribute, int64_t *out)
{
    PyObject *value = read_attribute(attribute, object);
    if (value == NULL)
        return -1;
    int result = as_int64(value, out);
    Py_DECREF(value);
    return result;
}

/* getattr(getattr(object, first), second), a new reference */
static PyObject *attribute_of_attribute(PyObject *object, Attribute *first, Attribute *second)
{
    PyObject *middle = read_attribute(first, object);
    if (middle == NULL)
        return NULL;
    PyObject *value = read_attribute(second, middle);
    Py_DECREF(middle);
    return value;
}

/* Whether `ref` is a weak reference to `object` (alive); -1: an error. */
static int refers_to(PyObject *ref, PyObject *object)
{
    if (!PyWeakref_Check(ref))
        return 0;
#if PY_VERSION_HEX >= 0x030D0000
    PyObject *referent;
    if (PyWeakref_GetRef(ref, &referent) < 0)
        return -1;
    Py_XDECREF(referent);
    return referent == object;
#else
    return PyWeakref_GET_OBJECT(ref) == object;
#endif
}

/* Whether `latest`, a view's (weakref, shape, dtype, fields) entry of its latest transfer
 * (runtime/host.py, array_memo), moved `host` as `host` is now; -1: an error. */
static int moved_as_now(PyObject *latest, PyObject *host)
{
    if (!PyTuple_Check(latest) || PyTuple_GET_SIZE(latest) != 4 || !PyArray_Check(host))
        return 0;
    PyArrayObject *array = (PyArrayObject *)host;
    PyObject *shape = PyTuple_GET_ITEM(latest, 1);
    if (PyTuple_GET_ITEM(latest, 2) != (PyObject *)PyArray_DESCR(array) || !PyTuple_Check(shape) ||
        PyTuple_GET_SIZE(shape) != PyArray_NDIM(array))
        return 0;
    const npy_intp *dims = PyArray_DIMS(array);
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(shape); i++) {
        Py_ssize_t extent = PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, i));
        if (extent == -1 && PyErr_Occurred())
            return -1;
        if (extent != dims[i])
            return 0;
    }
    return refers_to(PyTuple_GET_ITEM(latest, 0), host);
}

/* The trace fields of a transfer (`command`) whose view (its attribute `view`) keeps its
 * latest transfer's in `latest`, if that one moved the same host array (an upload: with
 * the same capture). */
static PyObject *transfer_fields(PyObject *command, Attribute *view, Attribute *latest_name,
                                 int upload)
{
    PyObject *latest = attribute_of_attribute(command, view, latest_name);
    if (latest == NULL)
        return NULL;
    PyObject *host = read_attribute(&attribute_host, command), *fields = NULL, *capture = NULL;
    int moved = host == NULL ? -1 : moved_as_now(latest, host);
    if (moved == 1) {
        fields = PyTuple_GET_ITEM(latest, 3);
        if (upload && (capture = read_attribute(&attribute_enqueue_capture, command)) == NULL)
            fields = NULL;
        else if (upload && (!PyTuple_Check(fields) || PyTuple_GET_SIZE(fields) <= CAPTURE_FIELD ||
                            PyTuple_GET_ITEM(fields, CAPTURE_FIELD) != capture))
            fields = NULL;
        Py_XINCREF(fields);
    }
    Py_XDECREF(capture);
    Py_XDECREF(host);
    Py_DECREF(latest);
    return fields;
}

/* a == b for two dispatch sizes, tuples of small ints, compared item by item: comparing the
 * two tuples themselves cost a tenth of a traced dispatch's hook. */
static int same_dims(PyObject *a, PyObject *b)
{
    if (!PyTuple_CheckExact(a) || !PyTuple_CheckExact(b) || PyTuple_GET_SIZE(a) != PyTuple_GET_SIZE(b))
        return PyObject_RichCompareBool(a, b, Py_EQ);
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(a); i++) {
        int same = PyObject_RichCompareBool(PyTuple_GET_ITEM(a, i), PyTuple_GET_ITEM(b, i), Py_EQ);
        if (same != 1)
            return same;
    }
    return 1;
}

/* The trace fields of a dispatch (`command`) whose arguments' memo holds them for its size
 * and kernel name. */
static PyObject *dispatch_fields(PyObject *command)
{
    PyObject *memo = attribute_of_attribute(command, &attribute_arguments, &attribute_memo);
    if (memo == NULL)
        return NULL;
    PyObject *known = read_attribute(&attribute_described, memo), *fields = NULL;
    Py_DECREF(memo);
    if (known == NULL)
        return NULL;
    if (PyTuple_Check(known) && PyTuple_GET_SIZE(known) == 3) {
        PyObject *dims = read_attribute(&attribute_dims, command);
        PyObject *name = dims == NULL ? NULL : read_attribute(&attribute_name, command);
        int same = name == NULL ? -1 : same_dims(PyTuple_GET_ITEM(known, 0), dims);
        if (same == 1)
            same = PyObject_RichCompareBool(PyTuple_GET_ITEM(known, 1), name, Py_EQ);
        if (same == 1) {
            fields = PyTuple_GET_ITEM(known, 2);
            Py_INCREF(fields);
        }
        Py_XDECREF(dims);
        Py_XDECREF(name);
    }
    Py_DECREF(known);
    return fields;
}

/* `command`'s trace fields (a new reference). For the command types the runtime names
 * (set_command_types) they are first looked for where the runtime memoizes them, with
 * the checks of the fast path of each type's trace_fields() (runtime/commands.py), as
 * that costs a Python call per command; otherwise, and where the memo does not hold
 * them, trace_fields() works them out. */
static PyObject *trace_fields_of(PyObject *command)
{
    PyTypeObject *type = Py_TYPE(command);
    PyObject *fields = NULL;
    if (type == upload_type)
        fields = transfer_fields(command, &attribute_target, &attribute_upload_fields, 1);
    else if (type == download_type)
        fields = transfer_fields(command, &attribute_source, &attribute_download_fields, 0);
    else if (type == dispatch_type)
        fields = dispatch_fields(command);
    if (fields != NULL || PyErr_Occurred())
        return fields;
    return PyObject_CallMethodNoArgs(command, str_trace_fields);
}

/* The position of `fields` (a command's trace fields) in the recorder's `described`
 * list, from `described_at` or, for fields not seen before, from `_describe`. */
static int fields_position(CoreObject *core, PyObject *fields, PyObject *command, PyObject *stream,
                           int64_t *out)
{
    PyObject *key = PyLong_FromVoidPtr(fields);
    if (key == NULL)
        return -1;
    PyObject *position = PyDict_GetItemWithError(core->described_at, key);
    Py_DECREF(key);
    if (position != NULL)
        return as_int64(position, out);
    if (PyErr_Occurred())
        return -1;
    PyObject *device = PyObject_GetAttr(stream, str_device);
    if (device == NULL)
        return -1;
    position = PyObject_CallMethodObjArgs((PyObject *)core, str_describe, fields, command, device,
                                          NULL);
    Py_DECREF(device);
    if (position == NULL)
        return -1;
    int result = as_int64(position, out);
    Py_DECREF(position);
    return result;
}

/* submitted(stream, commands): a row per command, one submission number */
static PyObject *core_submitted(CoreObject *core, PyObject *const *args, Py_ssize_t nargs)
{
    if (wrong_arguments(nargs, 2, "submitted(stream, commands)"))
        return NULL;
    PyObject *stream = args[0];
    /* a tuple (a list's copy): the Python code called below may change a list */
    PyObject *commands = PySequence_Tuple(args[1]);
    if (commands == NULL)
        return NULL;
    Py_ssize_t count = PyTuple_GET_SIZE(commands);
    PyObject *stream_id = NULL, *result = NULL;
    int64_t one[3], *values = one, row[SUBMISSION_WIDTH], position = core->last_position;
    if ((stream_id = read_attribute(&attribute_id, stream)) == NULL ||
        as_int64(stream_id, &row[1]) < 0)
        goto done;
    int known = row[1] == core->last_stream ? 1 : PyDict_Contains(core->policies, stream_id);
    if (known < 0)
        goto done;
    if (!known) {
        PyObject *noted = PyObject_CallMethodOneArg((PyObject *)core, str_first_submission_of, stream);
        if (noted == NULL)
            goto done;
        Py_DECREF(noted);
    }
    core->last_stream = row[1];
    if (count > 1 && (values = PyMem_Malloc((size_t)(3 * count) * sizeof(int64_t))) == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    /* values: ids, then enqueue times, then positions of trace fields */
    for (Py_ssize_t j = 0; j < count; j++) {
        PyObject *command = PyTuple_GET_ITEM(commands, j);
        PyObject *fields = trace_fields_of(command);
        if (fields == NULL)
            goto done;
        if (fields == core->last_fields) { /* a loop's commands mostly share their fields */
            position = core->last_position;
            Py_DECREF(fields);
        } else {
            if (fields_position(core, fields, command, stream, &position) < 0) {
                Py_DECREF(fields);
                goto done;
            }
            core->last_position = position;
            Py_XSETREF(core->last_fields, fields);
        }
        values[2 * count + j] = position;
        if (attribute_int64(command, &attribute_id, &values[j]) < 0 ||
            attribute_int64(command, &attribute_enqueued, &values[count + j]) < 0)
            goto done;
    }
    /* no Python code from here to the last append */
    if (count == 0 || log_reserve(core->submissions, count) < 0)
        goto succeeded;
    row[0] = ++core->submission_count;
    row[2] = clock_now();
    for (Py_ssize_t j = 0; j < count; j++) {
        row[3] = ++core->sequence;
        row[4] = values[j];
        row[5] = values[count + j];
        row[6] = values[2 * count + j];
        log_append(core->submissions, row);
    }
succeeded:
    if (!PyErr_Occurred()) {
        result = Py_None;
        Py_INCREF(result);
    }
done:
    Py_DECREF(commands);
    Py_XDECREF(stream_id);
    if (values != one)
        PyMem_Free(values);
    return result;
}

/* The bytes of a host array (or another object with a buffer). */
typedef struct {
    const char *start;
    Py_ssize_t len;
    Py_buffer view; /* exported when `exported` */
    int exported;
} Bytes;

/* Find `data`'s bytes: a C-contiguous array's own memory, or else its buffer (asking an
 * array for one makes numpy describe it first, which for an array made per command, as an
 * upload's view of its host bytes is, costs more than the rest of a hook). */
static int bytes_of(PyObject *data, Bytes *bytes)
{
    bytes->exported = 0;
    if (PyArray_Check(data) && PyArray_IS_C_CONTIGUOUS((PyArrayObject *)data)) {
        bytes->start = PyArray_BYTES((PyArrayObject *)data);
        bytes->len = PyArray_NBYTES((PyArrayObject *)data);
        return 0;
    }
    if (PyObject_GetBuffer(data, &bytes->view, PyBUF_SIMPLE) < 0)
        return -1;
    bytes->exported = 1;
    bytes->start = bytes->view.buf;
    bytes->len = bytes->view.len;
    return 0;
}

static void release_bytes(Bytes *bytes)
{
    if (bytes->exported)
        PyBuffer_Release(&bytes->view);
}

/* The capture of `data`'s bytes, captured into the trace if they are new, as a borrowed
 * reference (the trace's captures hold every capture); their binary digest goes to
 * `digest`. Bytes equal to the last ones hashed (up to REMEMBERED_BYTES, kept here) are
 * compared instead of hashed: a loop that moves one array's unchanged bytes hashes them
 * once (for 4 KiB, a third of the instructions of calling XXH3), and the hooks of the
 * user's thread and the worker then share no object they write to.
 *
 * New bytes (up to REMEMBERED_BYTES) are copied first, into an array this call alone
 * holds, and the copy is hashed, captured and kept. Other threads may run during the
 * call: capturing runs Python code, an allocation may start a garbage collection that
 * does, and the digest function lets them run while it hashes a large input. So the host
 * memory may change meanwhile (another thread's download writes it), and so may what
 * this core keeps (another thread's hook replaces it). A digest, its capture's bytes and
 * the bytes later ones are compared with are thus always the same bytes. The kept copy,
 * its digest and its capture are replaced together, with no Python code in between. The
 * Python core hashes every time; the digests are the same. */
static PyObject *capture_of(CoreObject *core, PyObject *data, char *digest)
{
    Bytes bytes;
    if (bytes_of(data, &bytes) < 0)
        return NULL;
    PyObject *capture = NULL, *hashed = NULL, *copy = NULL;
    PyArrayObject *kept = (PyArrayObject *)core->last_kept;
    if (kept != NULL && bytes.len == PyArray_NBYTES(kept) &&
        memcmp(bytes.start, PyArray_BYTES(kept), (size_t)bytes.len) == 0) {
        memcpy(digest, core->last_digest, DIGEST_BYTES);
        capture = core->last_capture;
        goto done;
    }
    if (bytes.len <= REMEMBERED_BYTES) {
        npy_intp length = bytes.len;
        if ((copy = PyArray_SimpleNew(1, &length, NPY_UINT8)) == NULL)
            goto done;
        if (length)
            memcpy(PyArray_BYTES((PyArrayObject *)copy), bytes.start, (size_t)length);
    }
    PyObject *hashed_bytes = copy != NULL ? copy : data;
    if ((hashed = PyObject_CallOneArg(digest_function, hashed_bytes)) == NULL)
        goto done;
    if (!PyBytes_Check(hashed) || PyBytes_GET_SIZE(hashed) != DIGEST_BYTES) {
        PyErr_SetString(PyExc_TypeError, "the digest function gave no 16-byte digest");
        goto done;
    }
    capture = PyDict_GetItemWithError(core->captured, hashed);
    if (capture == NULL && !PyErr_Occurred()) {
        PyObject *made = PyObject_CallMethodObjArgs((PyObject *)core, str_capture_method,
                                                    hashed_bytes, hashed, NULL);
        Py_XDECREF(made); /* the trace's captures hold it */
        capture = made == NULL ? NULL : PyDict_GetItemWithError(core->captured, hashed);
        if (capture == NULL && !PyErr_Occurred())
            PyErr_SetString(PyExc_RuntimeError, "the trace did not keep the capture it made");
    }
    if (capture != NULL) {
        memcpy(digest, PyBytes_AS_STRING(hashed), DIGEST_BYTES);
        if (copy != NULL) {
            PyObject *old_kept = core->last_kept, *old_capture = core->last_capture;
            memcpy(core->last_digest, digest, DIGEST_BYTES);
            core->last_kept = copy;
            copy = NULL;
            Py_INCREF(capture);
            core->last_capture = capture;
            Py_XDECREF(old_kept);
            Py_XDECREF(old_capture);
        }
    }
done:
    Py_XDECREF(copy);
    Py_XDECREF(hashed);
    release_bytes(&bytes);
    return capture;
}

static PyObject *host_access(CoreObject *core, int64_t kind, PyObject *command_id, PyObject *offset,
                             PyObject *data, PyObject *at)
{
    int64_t row[ACCESS_WIDTH];
    row[1] = kind;
    row[2] = 0;
    if (at == NULL || at == Py_None)
        row[3] = clock_now();
    else if (as_int64(at, &row[3]) < 0)
        return NULL;
    if (as_int64(command_id, &row[0]) < 0 || (offset != NULL && as_int64(offset, &row[2]) < 0))
        return NULL;
    if (capture_of(core, data, (char *)&row[4]) == NULL || log_append(core->accesses, row) < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* Positional arguments `args[0:nargs]` and an optional keyword `at`, into `out`. */
static int positional_and_at(const char *name, PyObject *const *args, Py_ssize_t nargs,
                             PyObject *kwnames, Py_ssize_t required, PyObject **out)
{
    Py_ssize_t keywords = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    out[required] = NULL;
    if (nargs < required || nargs > required + 1 || keywords > 1 ||
        (keywords == 1 && (nargs > required ||
                           !PyUnicode_Check(PyTuple_GET_ITEM(kwnames, 0)) ||
                           PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, 0), "at")))) {
        PyErr_Format(PyExc_TypeError, "%s: bad arguments", name);
        return -1;
    }
    for (Py_ssize_t i = 0; i < nargs + keywords; i++)
        out[i] = args[i];
    return 0;
}

/* host_read(command_id, offset, data, at=None) */
static PyObject *core_host_read(CoreObject *core, PyObject *const *args, size_t nargsf,
                                PyObject *kwnames)
{
    PyObject *values[4] = {NULL};
    if (positional_and_at("host_read(command_id, offset, data, at=None)", args,
                          PyVectorcall_NARGS(nargsf), kwnames, 3, values) < 0)
        return NULL;
    return host_access(core, HOST_READ, values[0], values[1], values[2], values[3]);
}

/* host_write(command_id, data, at=None) */
static PyObject *core_host_write(CoreObject *core, PyObject *const *args, size_t nargsf,
                                 PyObject *kwnames)
{
    PyObject *values[3] = {NULL};
    if (positional_and_at("host_write(command_id, data, at=None)", args,
                          PyVectorcall_NARGS(nargsf), kwnames, 2, values) < 0)
        return NULL;
    return host_access(core, HOST_WRITE, values[0], NULL, values[1], values[2]);
}

/* Whether `known` is the (weakref, name) entry of `host`, alive; -1: an error. */
static int names_array(PyObject *known, PyObject *host)
{
    if (known == NULL || !PyTuple_Check(known) || PyTuple_GET_SIZE(known) != 2)
        return 0;
    return refers_to(PyTuple_GET_ITEM(known, 0), host);
}

/* upload_enqueued(host, data) */
static PyObject *core_upload_enqueued(CoreObject *core, PyObject *const *args, Py_ssize_t nargs)
{
    if (wrong_arguments(nargs, 2, "upload_enqueued(host, data)"))
        return NULL;
    PyObject *host = args[0], *data = args[1];
    int named = names_array(core->last_named, host); /* a loop uploads one array again */
    if (named == 0) {
        PyObject *key = PyLong_FromVoidPtr(host);
        if (key == NULL)
            return NULL;
        PyObject *known = PyDict_GetItemWithError(core->array_names, key); /* borrowed */
        Py_DECREF(key);
        if (known == NULL && PyErr_Occurred())
            return NULL;
        if ((named = names_array(known, host)) == 1) {
            Py_INCREF(known);
            Py_XSETREF(core->last_named, known);
        }
    }
    if (named < 0)
        return NULL;
    if (!named) {
        PyObject *noted = PyObject_CallMethodOneArg((PyObject *)core, str_note_array, host);
        if (noted == NULL)
            return NULL;
        Py_DECREF(noted);
    }
    char digest[DIGEST_BYTES];
    PyObject *capture = capture_of(core, data, digest);
    Py_XINCREF(capture);
    return capture;
}

/* stamp_sync(stream_id, stop): a sync point's seq and time, the index of the last
 * submission row of stream `stream_id` (None: no stream) from row `stop` on (-1: none),
 * and the number of rows then */
static PyObject *core_stamp_sync(CoreObject *core, PyObject *const *args, Py_ssize_t nargs)
{
    if (wrong_arguments(nargs, 2, "stamp_sync(stream_id, stop)"))
        return NULL;
    int64_t stream_id = 0;
    Py_ssize_t stop;
    if ((args[0] != Py_None && as_int64(args[0], &stream_id) < 0) ||
        ((stop = PyLong_AsSsize_t(args[1])) == -1 && PyErr_Occurred()))
        return NULL;
    Py_ssize_t last = args[0] == Py_None ? -1 : log_last_where(core->submissions, 1, stream_id, stop);
    int64_t seq = ++core->sequence;
    return Py_BuildValue("LLnn", (long long)seq, (long long)clock_now(), last,
                         core->submissions->rows);
}

/* -- RunLog: the timer of one run ------------------------------------------------------ */

/* What a run's worker reports: each tick goes to the core's `ticks` log as a row (run,
 * time), so a run leaves no object behind; its rare events (a failure, an early end,
 * device spans) go to the recorder's Python methods. A run's `times` is the run itself. */
typedef struct {
    PyObject_HEAD
    CoreObject *core;
    int64_t run;
} RunLogObject;

static PyTypeObject RunLogType;

static PyObject *run_tick_at_time(RunLogObject *run, int64_t time)
{
    int64_t row[TICK_WIDTH] = {run->run, time};
    if (log_append(run->core->ticks, row) < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* tick(): a tick now */
static PyObject *run_tick(RunLogObject *run, PyObject *unused)
{
    return run_tick_at_time(run, clock_now());
}

/* append(time): a tick at a moment measured elsewhere (also tick_at) */
static PyObject *run_append(RunLogObject *run, PyObject *time_object)
{
    int64_t time;
    if (as_int64(time_object, &time) < 0)
        return NULL;
    return run_tick_at_time(run, time);
}

/* frombytes(data): ticks at the native int64 times of `data` */
static PyObject *run_frombytes(RunLogObject *run, PyObject *data)
{
    Py_buffer view;
    if (PyObject_GetBuffer(data, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    Py_ssize_t count = view.len / (Py_ssize_t)sizeof(int64_t);
    LogObject *ticks = run->core->ticks;
    int failed = 0;
    if (view.len % (Py_ssize_t)sizeof(int64_t)) {
        PyErr_Format(PyExc_ValueError, "%zd bytes are not whole int64 values", view.len);
        failed = 1;
    } else if (!(failed = log_reserve(ticks, count) < 0)) {
        int64_t row[TICK_WIDTH] = {run->run, 0};
        for (Py_ssize_t i = 0; i < count; i++) {
            memcpy(&row[1], (const int64_t *)view.buf + i, sizeof(int64_t));
            log_append(ticks, row); /* room reserved: cannot fail */
        }
    }
    PyBuffer_Release(&view);
    if (failed)
        return NULL;
    Py_RETURN_NONE;
}

/* core.<method>(run, *arguments): the recorder notes a run's failure, end or spans */
static PyObject *tell_core(RunLogObject *run, PyObject *method, PyObject *first, PyObject *second,
                           PyObject *third)
{
    PyObject *number = PyLong_FromLongLong(run->run);
    if (number == NULL)
        return NULL;
    PyObject *result = PyObject_CallMethodObjArgs((PyObject *)run->core, method, number, first,
                                                  second, third, NULL);
    Py_DECREF(number);
    return result;
}

/* failed(position, status, error) */
static PyObject *run_failed(RunLogObject *run, PyObject *const *args, Py_ssize_t nargs)
{
    if (wrong_arguments(nargs, 3, "failed(position, status, error)"))
        return NULL;
    return tell_core(run, str_run_failed, args[0], args[1], args[2]);
}

/* end_at(count) */
static PyObject *run_end_at(RunLogObject *run, PyObject *count)
{
    return tell_core(run, str_run_ended, count, NULL, NULL);
}

/* spans(spans): kept where there are any */
static PyObject *run_spans(RunLogObject *run, PyObject *spans)
{
    int any = PyObject_IsTrue(spans);
    if (any < 0)
        return NULL;
    if (!any)
        Py_RETURN_NONE;
    return tell_core(run, str_run_spans, spans, NULL, NULL);
}

static PyObject *run_get_times(RunLogObject *run, void *closure)
{
    Py_INCREF(run);
    return (PyObject *)run;
}

static void run_dealloc(RunLogObject *run)
{
    Py_XDECREF(run->core);
    Py_TYPE(run)->tp_free((PyObject *)run);
}

static PyMethodDef run_methods[] = {
    {"tick", (PyCFunction)run_tick, METH_NOARGS, "tick(): a tick now (time.perf_counter_ns)."},
    {"append", (PyCFunction)run_append, METH_O, "append(time): a tick at `time`."},
    {"tick_at", (PyCFunction)run_append, METH_O,
     "tick_at(time): a tick at a moment measured elsewhere."},
    {"frombytes", (PyCFunction)run_frombytes, METH_O,
     "frombytes(data): ticks at times given as native int64 values."},
    {"failed", (PyCFunction)(void (*)(void))run_failed, METH_FASTCALL,
     "failed(position, status, error): the step at `position` failed."},
    {"end_at", (PyCFunction)run_end_at, METH_O,
     "end_at(count): the run ended after its first `count` steps."},
    {"spans", (PyCFunction)run_spans, METH_O, "spans(spans): (position, DeviceSpan) pairs."},
    {NULL}};

static PyMemberDef run_members[] = {
    {"run", T_LONGLONG, offsetof(RunLogObject, run), READONLY, "the run's row in `runs`"},
    {NULL}};

static PyGetSetDef run_getset[] = {
    {"times", (getter)run_get_times, NULL, "where the worker ticks: the run itself"}, {NULL}};

static PyTypeObject RunLogType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "luisa_nb.recording._recorder_core.RunLog",
    .tp_doc = "The timer of one traced run: appends its ticks to its recorder's logs.",
    .tp_basicsize = sizeof(RunLogObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_dealloc = (destructor)run_dealloc,
    .tp_methods = run_methods,
    .tp_members = run_members,
    .tp_getset = run_getset,
};

/* run_timer(steps): a RunLog for a run of `steps`, whose ids go to `steps` and whose row
 * (first step, steps) to `runs` */
static PyObject *core_run_timer(CoreObject *core, PyObject *steps)
{
    /* a tuple (a list's copy): reading an id may run Python code, which may change a list */
    PyObject *items = PySequence_Tuple(steps);
    if (items == NULL)
        return NULL;
    Py_ssize_t count = PyTuple_GET_SIZE(items);
    int64_t one, *ids = count > 1 ? PyMem_Malloc((size_t)count * sizeof(int64_t)) : &one;
    RunLogObject *run = NULL;
    if (ids == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < count; i++)
        if (attribute_int64(PyTuple_GET_ITEM(items, i), &attribute_id, &ids[i]) < 0)
            goto done;
    if ((run = PyObject_New(RunLogObject, &RunLogType)) == NULL)
        goto done;
    Py_INCREF(core);
    run->core = core;
    /* no Python code from here to the last append: the run's number, row and ids agree */
    if (log_reserve(core->steps, count) < 0 || log_reserve(core->runs, 1) < 0) {
        Py_CLEAR(run);
        goto done;
    }
    int64_t row[RUN_WIDTH] = {core->steps->rows, count};
    run->run = core->runs->rows;
    log_append(core->runs, row);
    log_extend(core->steps, ids, count);
done:
    if (ids != &one)
        PyMem_Free(ids);
    Py_DECREF(items);
    return (PyObject *)run;
}

static PyMethodDef core_methods[] = {
    {"submitted", (PyCFunction)(void (*)(void))core_submitted, METH_FASTCALL, NULL},
    {"host_read", (PyCFunction)(void (*)(void))core_host_read, METH_FASTCALL | METH_KEYWORDS, NULL},
    {"host_write", (PyCFunction)(void (*)(void))core_host_write, METH_FASTCALL | METH_KEYWORDS,
     NULL},
    {"upload_enqueued", (PyCFunction)(void (*)(void))core_upload_enqueued, METH_FASTCALL, NULL},
    {"stamp_sync", (PyCFunction)(void (*)(void))core_stamp_sync, METH_FASTCALL, NULL},
    {"run_timer", (PyCFunction)core_run_timer, METH_O, NULL},
    {NULL}};

#define CORE_MEMBER(name, field)                                                                   \
    {name, T_OBJECT_EX, offsetof(CoreObject, field), READONLY, NULL}

static PyMemberDef core_members[] = {
    CORE_MEMBER("submissions", submissions),
    CORE_MEMBER("accesses", accesses),
    CORE_MEMBER("steps", steps),
    CORE_MEMBER("runs", runs),
    CORE_MEMBER("ticks", ticks),
    CORE_MEMBER("_described_at", described_at),
    CORE_MEMBER("_policies", policies),
    CORE_MEMBER("_array_names", array_names),
    {NULL}};

static PyObject *core_get_captured(CoreObject *core, void *closure)
{
    if (core->captured == NULL) {
        PyErr_SetString(PyExc_AttributeError, "_captured");
        return NULL;
    }
    Py_INCREF(core->captured);
    return core->captured;
}

static int core_set_captured(CoreObject *core, PyObject *value, void *closure)
{
    if (value == NULL || !PyDict_Check(value)) {
        PyErr_SetString(PyExc_TypeError, "_captured is a dict (the trace's captures)");
        return -1;
    }
    Py_INCREF(value);
    Py_SETREF(core->captured, value);
    return 0;
}

static PyGetSetDef core_getset[] = {
    {"_captured", (getter)core_get_captured, (setter)core_set_captured,
     "the trace's captures, by binary digest"},
    {NULL}};

static PyTypeObject CoreType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "luisa_nb.recording._recorder_core.RecorderCore",
    .tp_doc = "The hooks a trace recorder runs per command (see recorder_core.py).",
    .tp_basicsize = sizeof(CoreObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_new = core_new,
    .tp_dealloc = (destructor)core_dealloc,
    .tp_traverse = (traverseproc)core_traverse,
    .tp_clear = (inquiry)core_clear,
    .tp_methods = core_methods,
    .tp_members = core_members,
    .tp_getset = core_getset,
};

/* -- module ------------------------------------------------------------------------------ */

/* set_command_types(upload, download, dispatch) */
static PyObject *set_command_types(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (wrong_arguments(nargs, 3, "set_command_types(upload, download, dispatch)"))
        return NULL;
    for (Py_ssize_t i = 0; i < nargs; i++)
        if (!PyType_Check(args[i])) {
            PyErr_Format(PyExc_TypeError, "set_command_types takes classes, not %.100s",
                         Py_TYPE(args[i])->tp_name);
            return NULL;
        }
    PyTypeObject **types[] = {&upload_type, &download_type, &dispatch_type};
    for (Py_ssize_t i = 0; i < nargs; i++) {
        Py_INCREF(args[i]);
        Py_XSETREF(*types[i], (PyTypeObject *)args[i]);
    }
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"set_command_types", (PyCFunction)(void (*)(void))set_command_types, METH_FASTCALL,
     "set_command_types(upload, download, dispatch): the command classes whose trace fields "
     "the core looks for in the runtime's memos before calling trace_fields()."},
    {NULL}};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "luisa_nb.recording._recorder_core",
    .m_doc = "The recorder's hot paths in C (see recorder_core.py).",
    .m_size = -1,
    .m_methods = module_methods,
};

static int intern(PyObject **slot, const char *text)
{
    *slot = PyUnicode_InternFromString(text);
    return *slot == NULL ? -1 : 0;
}

PyMODINIT_FUNC PyInit__recorder_core(void)
{
    if (intern(&attribute_id.name, "id") < 0 || intern(&attribute_enqueued.name, "enqueued") < 0 ||
        intern(&str_device, "device") < 0 || intern(&str_trace_fields, "trace_fields") < 0 ||
        intern(&str_first_submission_of, "_first_submission_of") < 0 ||
        intern(&str_describe, "_describe") < 0 || intern(&str_note_array, "_note_array") < 0 ||
        intern(&str_capture_method, "_capture") < 0 ||
        intern(&str_run_failed, "_run_failed") < 0 || intern(&str_run_ended, "_run_ended") < 0 ||
        intern(&str_run_spans, "_run_spans") < 0 ||
        intern(&attribute_target.name, "target") < 0 ||
        intern(&attribute_source.name, "source") < 0 ||
        intern(&attribute_host.name, "host") < 0 ||
        intern(&attribute_enqueue_capture.name, "enqueue_capture") < 0 ||
        intern(&attribute_upload_fields.name, "upload_fields") < 0 ||
        intern(&attribute_download_fields.name, "download_fields") < 0 ||
        intern(&attribute_arguments.name, "arguments") < 0 ||
        intern(&attribute_memo.name, "memo") < 0 ||
        intern(&attribute_described.name, "described") < 0 ||
        intern(&attribute_dims.name, "dims") < 0 || intern(&attribute_name.name, "name") < 0)
        return NULL;
    import_array1(NULL);
    PyObject *xxhash = PyImport_ImportModule("xxhash");
    if (xxhash == NULL)
        return NULL;
    digest_function = PyObject_GetAttrString(xxhash, "xxh3_128_digest");
    Py_DECREF(xxhash);
    if (digest_function == NULL || PyType_Ready(&LogType) < 0 || PyType_Ready(&CoreType) < 0 ||
        PyType_Ready(&RunLogType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    if (PyModule_AddObjectRef(m, "Log", (PyObject *)&LogType) < 0 ||
        PyModule_AddObjectRef(m, "RecorderCore", (PyObject *)&CoreType) < 0 ||
        PyModule_AddObjectRef(m, "RunLog", (PyObject *)&RunLogType) < 0 ||
        PyModule_AddIntConstant(m, "SUBMISSION_WIDTH", SUBMISSION_WIDTH) < 0 ||
        PyModule_AddIntConstant(m, "ACCESS_WIDTH", ACCESS_WIDTH) < 0 ||
        PyModule_AddIntConstant(m, "RUN_WIDTH", RUN_WIDTH) < 0 ||
        PyModule_AddIntConstant(m, "TICK_WIDTH", TICK_WIDTH) < 0 ||
        PyModule_AddIntConstant(m, "CAPTURE_FIELD", CAPTURE_FIELD) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
