/* A trace recorder's rows, in C: the hooks the runtime calls once per command append
 * the plain values it hands them (ids, times, host bytes, trace fields) to logs of int64
 * rows. luisa_nb/recording/row_appender.py holds the same code in Python (used where this
 * module was not built) and documents what each part does; the two are tested against
 * each other. Nothing here reads an attribute of a runtime object but a stream's `id`
 * (sync_issued): objects the runtime hands for the recorder's own slow paths (a stream's
 * first submission, trace fields not seen before) are passed on to the recorder's Python
 * methods unread. Beyond the rows, the C hooks name a new host array (the recorder's
 * `_note_array`), capture new bytes the trace keeps whole or not at all (Trace.capture)
 * and log sync points (the recorder's sync_issued and sync_completed) themselves.
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
#if defined(__unix__) || defined(__APPLE__)
#include <dlfcn.h>
#include <sys/mman.h>
#endif
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#define NPY_TARGET_VERSION NPY_1_24_API_VERSION /* runs with numpy 1.24 on, as luisa_nb does */
#include <numpy/arrayobject.h>

#include "trace_clock.h"
#include "slot_objects.h"
#include "weak_references.h"

#define SUBMISSION_WIDTH 7 /* submission, stream, submitted, seq, id, enqueued, described */
#define ACCESS_WIDTH 6     /* command id, kind, offset, time, digest (16 bytes) */
#define RUN_WIDTH 2        /* first step, steps */
#define TICK_WIDTH 2       /* run, time */
#define SYNC_WIDTH 7       /* id, seq, kind, stream, event, covers, issued */
#define COMPLETION_WIDTH 4 /* sync, completed, status, error */
#define SEQ_COLUMN 3       /* of a submission row */
#define MISSING (-1)       /* a log's value for "none" */
#define HOST_READ 0
#define HOST_WRITE 1
#define DIGEST_BYTES 16
#define REMEMBERED_BYTES (64 * 1024) /* the most bytes `capture_of` keeps to compare with */
#define UNNAMED_LIMIT 8 /* unnamed arrays one line of user code may make before it is not looked at */

static PyObject *digest_function; /* xxhash.xxh3_128_digest */

/* XXH3_128bits (or its dispatching twin) of the library inside the xxhash module, where
 * that module's shared object exports it (find_direct_hash), else NULL. The digest of bytes up to DIRECT_HASH_BYTES is
 * worked out by it here, without a Python call (which cost as much as the hashing of a 4 KiB
 * upload): the same bytes as digest_function's, which the module checks before using it.
 * Longer inputs go through digest_function, which lets other threads run while it hashes. */
typedef struct {
    uint64_t low64, high64;
} Hash128;
typedef Hash128 (*Hash128Function)(const void *, size_t);
static Hash128Function direct_hash;
#define DIRECT_HASH_BYTES (64 * 1024)

/* The binary digest of `length` bytes at `start` (a new bytes object), as digest_function
 * gives it: the 128-bit hash, high half first, each half big-endian. */
static PyObject *direct_digest(const void *start, size_t length)
{
    Hash128 hash = direct_hash(start, length);
    unsigned char out[DIGEST_BYTES];
    for (int i = 0; i < 8; i++) {
        out[i] = (unsigned char)(hash.high64 >> (56 - 8 * i));
        out[8 + i] = (unsigned char)(hash.low64 >> (56 - 8 * i));
    }
    return PyBytes_FromStringAndSize((const char *)out, DIGEST_BYTES);
}
/* The value `dict` holds under the key id(`object`), borrowed: NULL with an error set, or
 * without one where there is none. */
static PyObject *by_identity(PyObject *dict, PyObject *object)
{
    PyObject *key = PyLong_FromVoidPtr(object);
    if (key == NULL)
        return NULL;
    PyObject *value = PyDict_GetItemWithError(dict, key);
    Py_DECREF(key);
    return value;
}

static PyObject *str_first_submission_of, *str_describe, *str_note_array, *str_capture_method,
    *str_run_failed, *str_run_ended, *str_run_spans;
static PyObject *library_folders, *given_names; /* naming._LIBRARY_FOLDERS, naming._given_names */
static PyObject *sync_kinds, *host_wait_kinds, *statuses; /* tuples of enum members (use_sync_kinds) */
static PyObject *str_id, *str_name, *str_host, *str_locked;

/* Whether a call got other than `expected` arguments (then a TypeError names `signature`). */
static int wrong_arguments(Py_ssize_t nargs, Py_ssize_t expected, const char *signature)
{
    if (nargs == expected)
        return 0;
    PyErr_Format(PyExc_TypeError, "%s takes %zd arguments, not %zd", signature, expected, nargs);
    return 1;
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
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "luisa_nb.recording._row_appender.Log",
    .tp_doc = "Rows of `width` int64 values, appended to, read as bytes.",
    .tp_basicsize = sizeof(LogObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = log_new,
    .tp_dealloc = (destructor)log_dealloc,
    .tp_as_sequence = &log_as_sequence,
    .tp_methods = log_methods,
    .tp_getset = log_getset,
};

/* -- RowAppender ---------------------------------------------------------------------- */

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
    PyObject *unnamed_sites;  /* dict: (code, line) -> how many arrays made there were unnamed */
    PyObject *captured;       /* dict: binary digest -> Capture */
    PyObject *last_kept;      /* a uint8 array: a copy of the last bytes hashed (capture_of) */
    char last_digest[DIGEST_BYTES]; /* their digest */
    PyObject *last_capture;   /* their capture; NULL with `last_kept` */
    PyObject *last_named;     /* the (weakref, name) entry of the last array found named */
    PyObject *last_fields;    /* the trace fields last logged, at `last_position` */
    PyObject *described_ranges; /* dict: id(device ranges) -> those ranges, of transfers described */
    PyObject *recorder_state; /* (described, _hosts, _host_owners, _lock) of the recorder, or NULL */
    LogObject *syncs;         /* a row per sync point issued (recorder.SYNC_COLUMNS) */
    LogObject *sync_completions; /* a row per sync point completed (recorder.COMPLETION_COLUMNS) */
    PyObject *sync_errors;    /* list: the errors the completions name */
    PyObject *host_waits;     /* dict: row in `syncs` -> seq, of each host wait in progress */
    PyObject *looked_at;      /* dict: stream id -> (rows a synchronize looked at, last seq) */
    PyObject *last_placed;    /* dict: stream id -> seq of its last sync point placed */
    PyObject *blobs;          /* the trace's blobs (dict: digest -> bytes), or NULL */
    PyObject *capture_head;   /* the bytes of a transfer the trace keeps (None: every byte) */
    Py_ssize_t capture_left;  /* the bytes the trace may still keep (its capture limit) */
    PyObject *block;          /* the capsule of the block new captured bytes go into, or NULL */
    char *block_next;         /* its first free byte */
    Py_ssize_t block_left;    /* its free bytes */
    Py_ssize_t block_bytes;   /* the size of the next block */
    int64_t last_position;
    int64_t last_stream;      /* the id of the stream last submitted to */
    int64_t submission_count;
    int64_t sequence;
} AppenderObject;

static PyObject *appender_new(PyTypeObject *type, PyObject *args, PyObject *kwds)
{
    AppenderObject *appender = (AppenderObject *)type->tp_alloc(type, 0);
    if (appender == NULL)
        return NULL;
    appender->submissions = make_log(SUBMISSION_WIDTH);
    appender->accesses = make_log(ACCESS_WIDTH);
    appender->steps = make_log(1);
    appender->runs = make_log(RUN_WIDTH);
    appender->ticks = make_log(TICK_WIDTH);
    appender->described_at = PyDict_New();
    appender->policies = PyDict_New();
    appender->array_names = PyDict_New();
    appender->unnamed_sites = PyDict_New();
    appender->syncs = make_log(SYNC_WIDTH);
    appender->sync_completions = make_log(COMPLETION_WIDTH);
    appender->sync_errors = PyList_New(0);
    appender->host_waits = PyDict_New();
    appender->looked_at = PyDict_New();
    appender->last_placed = PyDict_New();
    appender->captured = PyDict_New();
    appender->described_ranges = PyDict_New();
    appender->last_stream = INT64_MIN;
    if (!appender->submissions || !appender->accesses || !appender->steps || !appender->runs || !appender->ticks ||
        !appender->described_at || !appender->policies || !appender->array_names || !appender->unnamed_sites || !appender->captured ||
        !appender->syncs || !appender->sync_completions || !appender->sync_errors || !appender->host_waits ||
        !appender->looked_at || !appender->last_placed || !appender->described_ranges) {
        Py_DECREF(appender);
        return NULL;
    }
    return (PyObject *)appender;
}

/* Set direct_hash where the shared object of xxhash's extension module exports
 * XXH3_128bits and it digests a few inputs of several lengths as digest_function does;
 * -1 on a Python error (a failed look-up is no error: digests then take the Python call). */
static int find_direct_hash(void)
{
#if defined(__unix__) || defined(__APPLE__)
    PyObject *extension = PyImport_ImportModule("xxhash._xxhash");
    if (extension == NULL) {
        PyErr_Clear(); /* another layout of the package: no direct hash */
        return 0;
    }
    PyObject *path = PyObject_GetAttrString(extension, "__file__");
    Py_DECREF(extension);
    if (path == NULL || !PyUnicode_Check(path)) {
        Py_XDECREF(path);
        PyErr_Clear();
        return 0;
    }
    const char *text = PyUnicode_AsUTF8(path);
    void *library = text == NULL ? NULL : dlopen(text, RTLD_LAZY | RTLD_NOLOAD);
    Py_DECREF(path);
    if (text == NULL)
        return -1;
    if (library == NULL)
        return 0;
    /* the dispatching entry picks the widest vector code the CPU runs (AVX2: half the
     * instructions of the SSE2 code XXH3_128bits runs), as xxh3_128_digest does */
    Hash128Function found = (Hash128Function)dlsym(library, "XXH3_128bits_dispatch");
    if (found == NULL)
        found = (Hash128Function)dlsym(library, "XXH3_128bits");
    if (found == NULL) {
        dlclose(library);
        return 0;
    }
    direct_hash = found; /* the library stays open: its module is loaded for good */
    unsigned char sample[4096];
    for (size_t i = 0; i < sizeof sample; i++)
        sample[i] = (unsigned char)(i * 131u + 7u);
    static const size_t lengths[] = {0, 1, 3, 8, 16, 17, 128, 129, 240, 241, 1000, 4096};
    for (size_t i = 0; i < sizeof lengths / sizeof lengths[0]; i++) {
        PyObject *input = PyBytes_FromStringAndSize((const char *)sample, (Py_ssize_t)lengths[i]);
        PyObject *expected = input == NULL ? NULL : PyObject_CallOneArg(digest_function, input);
        PyObject *got = expected == NULL ? NULL : direct_digest(sample, lengths[i]);
        int same = got == NULL ? -1 : PyObject_RichCompareBool(expected, got, Py_EQ);
        Py_XDECREF(input);
        Py_XDECREF(expected);
        Py_XDECREF(got);
        if (same != 1) {
            direct_hash = NULL;
            return same < 0 ? -1 : 0;
        }
    }
#endif
    return 0;
}

static int appender_traverse(AppenderObject *appender, visitproc visit, void *arg)
{
    Py_VISIT(appender->described_at);
    Py_VISIT(appender->policies);
    Py_VISIT(appender->array_names);
    Py_VISIT(appender->unnamed_sites);
    Py_VISIT(appender->sync_errors);
    Py_VISIT(appender->host_waits);
    Py_VISIT(appender->looked_at);
    Py_VISIT(appender->last_placed);
    Py_VISIT(appender->captured);
    Py_VISIT(appender->last_named);
    Py_VISIT(appender->last_capture);
    Py_VISIT(appender->last_kept);
    Py_VISIT(appender->last_fields);
    Py_VISIT(appender->described_ranges);
    Py_VISIT(appender->recorder_state);
    Py_VISIT(appender->blobs);
    Py_VISIT(appender->capture_head);
    return 0;
}

static int appender_clear(AppenderObject *appender)
{
    Py_CLEAR(appender->described_at);
    Py_CLEAR(appender->policies);
    Py_CLEAR(appender->array_names);
    Py_CLEAR(appender->unnamed_sites);
    Py_CLEAR(appender->sync_errors);
    Py_CLEAR(appender->host_waits);
    Py_CLEAR(appender->looked_at);
    Py_CLEAR(appender->last_placed);
    Py_CLEAR(appender->captured);
    Py_CLEAR(appender->last_named);
    Py_CLEAR(appender->last_capture);
    Py_CLEAR(appender->last_kept);
    Py_CLEAR(appender->last_fields);
    Py_CLEAR(appender->described_ranges);
    Py_CLEAR(appender->recorder_state);
    Py_CLEAR(appender->blobs);
    Py_CLEAR(appender->capture_head);
    Py_CLEAR(appender->block);
    return 0;
}

static void appender_dealloc(AppenderObject *appender)
{
    PyObject_GC_UnTrack(appender);
    appender_clear(appender);
    Py_CLEAR(appender->submissions);
    Py_CLEAR(appender->accesses);
    Py_CLEAR(appender->steps);
    Py_CLEAR(appender->runs);
    Py_CLEAR(appender->ticks);
    Py_CLEAR(appender->syncs);
    Py_CLEAR(appender->sync_completions);
    Py_TYPE(appender)->tp_free((PyObject *)appender);
}

#define TRANSFER_FIELDS 5 /* kind, label, device ranges, host range, enqueue capture */
#define RANGES_FIELD 2
#define HOST_FIELD 3

/* The recorder's (described, _hosts, _host_owners, _lock), borrowed, looked up once; NULL
 * without an error where it has not all of them (a recorder that describes in Python). */
static PyObject *recorder_state(AppenderObject *appender)
{
    if (appender->recorder_state == NULL) {
        static const char *names[4] = {"described", "_hosts", "_host_owners", "_lock"};
        PyObject *state = PyTuple_New(4);
        for (int i = 0; state != NULL && i < 4; i++) {
            PyObject *value = PyObject_GetAttrString((PyObject *)appender, names[i]);
            if (value == NULL) {
                Py_CLEAR(state);
                if (!PyErr_ExceptionMatches(PyExc_AttributeError))
                    return NULL;
                PyErr_Clear();
                state = Py_NewRef(Py_None);
                break;
            }
            PyTuple_SET_ITEM(state, i, value);
        }
        if (state == NULL)
            return NULL;
        if (state != Py_None && (!PyList_CheckExact(PyTuple_GET_ITEM(state, 0)) ||
                                 !PyDict_CheckExact(PyTuple_GET_ITEM(state, 1)) ||
                                 !PyDict_CheckExact(PyTuple_GET_ITEM(state, 2))))
            Py_SETREF(state, Py_NewRef(Py_None));
        appender->recorder_state = state;
    }
    return appender->recorder_state == Py_None ? NULL : appender->recorder_state;
}

/* The recorder's _describe(fields, command, stream), in C, for the transfer of a host array
 * into or out of a view whose transfers were described before (a loop uploading a new
 * array each step): its buffers are noted already and it runs no kernel, so what is left
 * is the host range (named after the array's name where it was made, kept with a weak
 * reference to the array) and the fields' position. 1: done, `*out` set; 0: _describe must
 * do it; -1: an error. The position is taken and the fields appended with no Python code in
 * between, while no thread is inside _describe's own taking of one (its lock is free). */
static int describe_transfer(AppenderObject *appender, PyObject *fields, PyObject *command, int64_t *out)
{
    if (!PyTuple_CheckExact(fields) || PyTuple_GET_SIZE(fields) != TRANSFER_FIELDS ||
        PyTuple_GET_ITEM(fields, HOST_FIELD) == Py_None)
        return 0;
    PyObject *ranges = PyTuple_GET_ITEM(fields, RANGES_FIELD), *host = PyTuple_GET_ITEM(fields, HOST_FIELD);
    PyObject *known_ranges = by_identity(appender->described_ranges, ranges);
    if (known_ranges != ranges)
        return PyErr_Occurred() ? -1 : 0;
    PyObject *state = recorder_state(appender);
    if (state == NULL)
        return PyErr_Occurred() ? -1 : 0;
    PyObject *described = PyTuple_GET_ITEM(state, 0), *hosts = PyTuple_GET_ITEM(state, 1);
    PyObject *host_owners = PyTuple_GET_ITEM(state, 2), *lock = PyTuple_GET_ITEM(state, 3);
    PyObject *host_key = PyLong_FromVoidPtr(host), *array = NULL, *reference = NULL;
    int status = -1;
    if (host_key == NULL)
        return -1;
    int noted = PyDict_Contains(hosts, host_key);
    if (noted < 0)
        goto done;
    if (!noted) {
        status = 0;
        array = PyObject_GetAttr(command, str_host);
        if (array == NULL) {
            PyErr_Clear();
            goto done;
        }
        if (!PyArray_Check(array) || PyArray_BASE((PyArrayObject *)array) != NULL)
            goto done; /* a view: _describe keeps the arrays it views too */
        status = -1;
        PyObject *name = PyObject_GetAttr(host, str_name);
        if (name == NULL)
            goto done;
        int unnamed = name == Py_None;
        Py_DECREF(name);
        PyObject *entry = by_identity(appender->array_names, array);
        if (entry == NULL && PyErr_Occurred())
            goto done;
        if (unnamed && entry != NULL && PyTuple_CheckExact(entry) && PyTuple_GET_SIZE(entry) == 2) {
            Py_INCREF(entry);
            int named = refers_to(PyTuple_GET_ITEM(entry, 0), array);
            if (named == 1 && PyObject_SetAttr(host, str_name, PyTuple_GET_ITEM(entry, 1)) < 0)
                named = -1;
            Py_DECREF(entry);
            if (named < 0)
                goto done;
        }
        if ((reference = untracked_reference(array)) == NULL || PyDict_SetItem(hosts, host_key, host) < 0 ||
            PyDict_SetItem(host_owners, host_key, reference) < 0)
            goto done;
    }
    status = 0;
    PyObject *locked = PyObject_CallMethodNoArgs(lock, str_locked);
    if (locked == NULL) {
        status = -1;
        goto done;
    }
    int busy = PyObject_IsTrue(locked);
    Py_DECREF(locked);
    if (busy != 0) {
        status = busy < 0 ? -1 : 0;
        goto done;
    }
    /* no Python code from here to the end */
    status = -1;
    Py_ssize_t position = PyList_GET_SIZE(described);
    PyObject *fields_key = PyLong_FromVoidPtr(fields), *position_object = PyLong_FromSsize_t(position);
    if (fields_key != NULL && position_object != NULL && PyList_Append(described, fields) == 0 &&
        PyDict_SetItem(appender->described_at, fields_key, position_object) == 0) {
        *out = position;
        status = 1;
    }
    Py_XDECREF(fields_key);
    Py_XDECREF(position_object);
done:
    Py_XDECREF(reference);
    Py_XDECREF(array);
    Py_DECREF(host_key);
    return status;
}

/* Remember the device ranges of transfer fields `fields` that _describe described: the
 * next transfers into or out of that view take describe_transfer. */
static int note_described_ranges(AppenderObject *appender, PyObject *fields)
{
    if (!PyTuple_CheckExact(fields) || PyTuple_GET_SIZE(fields) != TRANSFER_FIELDS ||
        PyTuple_GET_ITEM(fields, HOST_FIELD) == Py_None)
        return 0;
    PyObject *ranges = PyTuple_GET_ITEM(fields, RANGES_FIELD), *key = PyLong_FromVoidPtr(ranges);
    int status = key == NULL ? -1 : PyDict_SetItem(appender->described_ranges, key, ranges);
    Py_XDECREF(key);
    return status;
}

/* The position of `fields` (a command's trace fields) in the recorder's `described`
 * list, from `described_at` or, for fields not seen before, from describe_transfer or else
 * `_describe`, which gets the command and its stream as the runtime handed them:
 * `commands[index]`, or with `index` -1 `commands` itself (one command). */
static int fields_position(AppenderObject *appender, PyObject *fields, PyObject *commands,
                           Py_ssize_t index, PyObject *stream, int64_t *out)
{
    PyObject *position = by_identity(appender->described_at, fields);
    if (position != NULL)
        return as_int64(position, out);
    if (PyErr_Occurred())
        return -1;
    PyObject *command = index < 0 ? Py_NewRef(commands) : PySequence_GetItem(commands, index);
    if (command == NULL)
        return -1;
    int described = describe_transfer(appender, fields, command, out);
    if (described != 0) {
        Py_DECREF(command);
        return described < 0 ? -1 : 0;
    }
    position = PyObject_CallMethodObjArgs((PyObject *)appender, str_describe, fields, command,
                                          stream, NULL);
    Py_DECREF(command);
    if (position == NULL)
        return -1;
    int result = as_int64(position, out);
    Py_DECREF(position);
    return result < 0 ? -1 : note_described_ranges(appender, fields);
}

/* The position of `described`, the trace fields of command `index` of `commands` (see
 * fields_position), kept as the last fields logged: a loop's commands mostly share theirs. */
static int last_fields_position(AppenderObject *appender, PyObject *described, PyObject *commands,
                                Py_ssize_t index, PyObject *stream, int64_t *out)
{
    if (described == appender->last_fields) {
        *out = appender->last_position;
        return 0;
    }
    if (fields_position(appender, described, commands, index, stream, out) < 0)
        return -1;
    appender->last_position = *out;
    Py_INCREF(described);
    Py_XSETREF(appender->last_fields, described);
    return 0;
}

/* Note a submission to stream `stream_id` (the int `id_object`), telling the recorder's
 * `_first_submission_of` of a stream not seen before. */
static int note_stream(AppenderObject *appender, int64_t stream_id, PyObject *id_object,
                       PyObject *stream)
{
    int known = stream_id == appender->last_stream ? 1 : PyDict_Contains(appender->policies, id_object);
    if (known < 0)
        return -1;
    if (!known) {
        PyObject *noted =
            PyObject_CallMethodOneArg((PyObject *)appender, str_first_submission_of, stream);
        if (noted == NULL)
            return -1;
        Py_DECREF(noted);
    }
    appender->last_stream = stream_id;
    return 0;
}

/* The int64 values of the sequence `values` into `out`, which has room for `count`; -1
 * (an error) where it holds another number of them. (Converting an int subclass may run
 * Python code, which may shorten a list: its length is read again for every item.) */
static int int64_values(PyObject *values, Py_ssize_t count, int64_t *out, const char *what)
{
    PyObject *fast = PySequence_Fast(values, what);
    if (fast == NULL)
        return -1;
    Py_ssize_t i = 0;
    int failed = 0;
    for (; !failed && i < count && i < PySequence_Fast_GET_SIZE(fast); i++) {
        PyObject *value = PySequence_Fast_GET_ITEM(fast, i);
        Py_INCREF(value);
        failed = as_int64(value, &out[i]) < 0;
        Py_DECREF(value);
    }
    if (!failed && (i != count || PySequence_Fast_GET_SIZE(fast) != count)) {
        PyErr_Format(PyExc_ValueError, "%s: %zd values, not %zd", what,
                     PySequence_Fast_GET_SIZE(fast), count);
        failed = 1;
    }
    Py_DECREF(fast);
    return failed ? -1 : 0;
}

/* submitted(stream_id, ids, enqueued, fields, stream, commands): a row per command, one
 * submission number. `ids`, `enqueued` and `fields` hold each command's id, enqueue time
 * and trace fields; `stream` and `commands` are only passed on, to the recorder's
 * `_first_submission_of` and `_describe`. */
static PyObject *appender_submitted(AppenderObject *appender, PyObject *const *args,
                                    Py_ssize_t nargs)
{
    if (wrong_arguments(nargs, 6, "submitted(stream_id, ids, enqueued, fields, stream, commands)"))
        return NULL;
    PyObject *stream_id = args[0], *stream = args[4], *commands = args[5];
    /* a tuple (a list's copy): the Python code called below may change a list */
    PyObject *fields = PySequence_Tuple(args[3]);
    if (fields == NULL)
        return NULL;
    Py_ssize_t count = PyTuple_GET_SIZE(fields);
    PyObject *result = NULL;
    int64_t one[3], *values = one, row[SUBMISSION_WIDTH], position;
    if (as_int64(stream_id, &row[1]) < 0)
        goto done;
    if (count > 1 && (values = PyMem_Malloc((size_t)(3 * count) * sizeof(int64_t))) == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    /* values: ids, then enqueue times, then positions of trace fields */
    if (int64_values(args[1], count, values, "submitted(): ids") < 0 ||
        int64_values(args[2], count, values + count, "submitted(): enqueued") < 0)
        goto done;
    if (note_stream(appender, row[1], stream_id, stream) < 0)
        goto done;
    for (Py_ssize_t j = 0; j < count; j++) {
        PyObject *described = PyTuple_GET_ITEM(fields, j);
        if (last_fields_position(appender, described, commands, j, stream, &position) < 0)
            goto done;
        values[2 * count + j] = position;
    }
    /* no Python code from here to the last append */
    if (count == 0 || log_reserve(appender->submissions, count) < 0)
        goto succeeded;
    row[0] = ++appender->submission_count;
    row[2] = clock_now();
    for (Py_ssize_t j = 0; j < count; j++) {
        row[3] = ++appender->sequence;
        row[4] = values[j];
        row[5] = values[count + j];
        row[6] = values[2 * count + j];
        log_append(appender->submissions, row);
    }
succeeded:
    if (!PyErr_Occurred()) {
        result = Py_None;
        Py_INCREF(result);
    }
done:
    Py_DECREF(fields);
    if (values != one)
        PyMem_Free(values);
    return result;
}

/* submitted_one(stream_id, id, enqueued, fields, stream, command): submitted() of one
 * command (a synchronous call's submission), given its values themselves. */
static PyObject *appender_submitted_one(AppenderObject *appender, PyObject *const *args,
                                        Py_ssize_t nargs)
{
    if (wrong_arguments(nargs, 6, "submitted_one(stream_id, id, enqueued, fields, stream, command)"))
        return NULL;
    int64_t row[SUBMISSION_WIDTH], position;
    if (as_int64(args[0], &row[1]) < 0 || as_int64(args[1], &row[4]) < 0 ||
        as_int64(args[2], &row[5]) < 0 || note_stream(appender, row[1], args[0], args[4]) < 0 ||
        last_fields_position(appender, args[3], args[5], -1, args[4], &position) < 0)
        return NULL;
    /* no Python code from here to the append */
    if (log_reserve(appender->submissions, 1) < 0)
        return NULL;
    row[0] = ++appender->submission_count;
    row[2] = clock_now();
    row[3] = ++appender->sequence;
    row[6] = position;
    log_append(appender->submissions, row);
    Py_RETURN_NONE;
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

/* -- captured bytes ------------------------------------------------------------------ */

#define FIRST_BLOCK_BYTES (64 * 1024)
#define LAST_BLOCK_BYTES (4 * 1024 * 1024)
#define BLOCK_NAME "luisa_nb.recording.capture_block"

/* Blocks of captures no trace holds any more, by size (FIRST_BLOCK_BYTES << class), for
 * the next trace's captures, up to SPARE_BLOCK_BYTES in all: a program that traces a loop
 * again and drops the last trace reuses its pages, as the allocator reuses freed memory,
 * instead of making new ones. The GIL guards them. */
#define BLOCK_CLASSES 7 /* 64 KiB to 4 MiB */
#define SPARE_BLOCK_BYTES (64 * 1024 * 1024)
#define SPARES_PER_CLASS 16
static void *spare_blocks[BLOCK_CLASSES][SPARES_PER_CLASS];
static int spare_counts[BLOCK_CLASSES];
static size_t spare_bytes;

static int block_class(size_t size)
{
    for (int i = 0; i < BLOCK_CLASSES; i++)
        if ((size_t)FIRST_BLOCK_BYTES << i == size)
            return i;
    return -1;
}

/* The tracemalloc domain of the blocks traces hold: tracemalloc counts them, as it counts
 * numpy's arrays. */
#define BLOCK_DOMAIN 0x6c6e62 /* "lnb" */

/* `size` bytes of new memory, its pages made now in one call where the system can: on a
 * virtual machine a fault per 4 KiB page costs more than copying the page, and that adds
 * up, as a trace keeps each new capture. (Huge pages asked for with MADV_HUGEPAGE cost
 * less per page on average, but a fault that had to compact memory first stalled a copy
 * of 4 KiB for 37 µs.) */
#if defined(__unix__) || defined(__APPLE__)
static void *new_block(size_t size)
{
    int flags = MAP_PRIVATE | MAP_ANONYMOUS;
#ifdef MAP_POPULATE
    flags |= MAP_POPULATE;
#endif
    void *memory = mmap(NULL, size, PROT_READ | PROT_WRITE, flags, -1, 0);
    return memory == MAP_FAILED ? NULL : memory;
}

static void unmap_block(void *memory, size_t size)
{
    munmap(memory, size);
}
#else
static void *new_block(size_t size)
{
    return PyMem_RawMalloc(size);
}

static void unmap_block(void *memory, size_t size)
{
    PyMem_RawFree(memory);
}
#endif

/* The destructor of a block's capsule: the block becomes a spare, or goes. */
static void free_block(PyObject *capsule)
{
    void *memory = PyCapsule_GetPointer(capsule, BLOCK_NAME);
    size_t size = (size_t)(uintptr_t)PyCapsule_GetContext(capsule);
    PyTraceMalloc_Untrack(BLOCK_DOMAIN, (uintptr_t)memory);
    int size_class = block_class(size);
    if (size_class >= 0 && spare_counts[size_class] < SPARES_PER_CLASS &&
        spare_bytes + size <= SPARE_BLOCK_BYTES) {
        spare_blocks[size_class][spare_counts[size_class]++] = memory;
        spare_bytes += size;
        return;
    }
    unmap_block(memory, size);
}

/* `size` bytes for captured bytes, a spare block or else a new one, counted by tracemalloc
 * while a trace holds them; NULL where there is no memory. */
static void *take_block(size_t size)
{
    int size_class = block_class(size);
    void *memory;
    if (size_class >= 0 && spare_counts[size_class] > 0) {
        spare_bytes -= size;
        memory = spare_blocks[size_class][--spare_counts[size_class]];
    } else if ((memory = new_block(size)) == NULL) {
        return NULL;
    }
    PyTraceMalloc_Track(BLOCK_DOMAIN, (uintptr_t)memory, size);
    return memory;
}

/* A new read-only uint8 array holding a copy of the `length` bytes at `start`, in the
 * appender's current block of captured bytes (a new one where it has no room): captures
 * follow one another in blocks of 64 KiB, doubling up to 4 MiB, each block freed with
 * the last array in it. A trace keeps every new capture: an array allocated per capture,
 * on pages new to the process, costs a fifth of tracing a notebook loop. */
static PyObject *captured_copy(AppenderObject *appender, const char *start, Py_ssize_t length)
{
    npy_intp extent = length;
    if (length == 0) {
        PyObject *empty = PyArray_SimpleNew(1, &extent, NPY_UINT8);
        if (empty != NULL)
            PyArray_CLEARFLAGS((PyArrayObject *)empty, NPY_ARRAY_WRITEABLE);
        return empty;
    }
    Py_ssize_t needed = (length + 63) & ~(Py_ssize_t)63; /* the next starts on a cache line */
    if (needed > appender->block_left) {
        Py_ssize_t size = appender->block_bytes ? appender->block_bytes : FIRST_BLOCK_BYTES;
        while (size < needed)
            size *= 2;
        void *memory = take_block((size_t)size);
        if (memory == NULL)
            return PyErr_NoMemory();
        PyObject *block = PyCapsule_New(memory, BLOCK_NAME, NULL);
        if (block == NULL || PyCapsule_SetContext(block, (void *)(uintptr_t)size) < 0 ||
            PyCapsule_SetDestructor(block, free_block) < 0) {
            Py_XDECREF(block);
            PyTraceMalloc_Untrack(BLOCK_DOMAIN, (uintptr_t)memory);
            unmap_block(memory, (size_t)size);
            return NULL;
        }
        Py_XSETREF(appender->block, block);
        appender->block_next = memory;
        appender->block_left = size;
        appender->block_bytes = size < LAST_BLOCK_BYTES ? 2 * size : size;
    }
    char *at = appender->block_next;
    appender->block_next += needed;
    appender->block_left -= needed;
    PyObject *block = Py_NewRef(appender->block);
    PyObject *copy = PyArray_NewFromDescr(&PyArray_Type, PyArray_DescrFromType(NPY_UINT8), 1, &extent,
                                          NULL, at, 0 /* read-only */, NULL);
    if (copy == NULL) {
        Py_DECREF(block);
        return NULL;
    }
    if (PyArray_SetBaseObject((PyArrayObject *)copy, block) < 0) { /* it took the reference */
        Py_DECREF(copy);
        return NULL;
    }
    memcpy(at, start, (size_t)length);
    return copy;
}

static SlotLayout capture_layout; /* luisa_nb.recording.records.Capture */

/* A new Capture(nbytes, blob, digest), not tracked by the garbage collector (see
 * new_slot_object). */
static PyObject *new_capture(Py_ssize_t nbytes, PyObject *blob, PyObject *digest)
{
    PyObject *size = PyLong_FromSsize_t(nbytes);
    if (size == NULL)
        return NULL;
    PyObject *values[3] = {size, blob, digest}, *capture = new_slot_object(&capture_layout, values);
    Py_DECREF(size);
    return capture;
}

/* Capture `copy` (this call's own read-only copy of new bytes, whose binary digest is
 * `hashed`) as Trace.capture(copy, hashed, owned=True) does, into the trace's captures and
 * blobs, where the trace's policy keeps all of the bytes or none: 1 when it was captured,
 * 0 when Trace.capture must do it (a head of part of the bytes, bytes the capture limit
 * has no room for, or no blobs given), -1 on an error. The blobs need no lock: a dict's
 * setdefault and copy run whole under the GIL, and so does the count of bytes left. */
static int capture_here(AppenderObject *appender, PyObject *copy, PyObject *hashed)
{
    PyObject *head_object = appender->capture_head, *blobs = appender->blobs;
    if (blobs == NULL || !PyDict_CheckExact(blobs) || head_object == NULL)
        return 0;
    Py_ssize_t nbytes = PyArray_NBYTES((PyArrayObject *)copy), head = nbytes;
    if (head_object != Py_None) {
        if (!PyLong_CheckExact(head_object))
            return 0;
        Py_ssize_t limit = PyLong_AsSsize_t(head_object);
        if (limit == -1 && PyErr_Occurred())
            return -1;
        head = limit < nbytes ? limit : nbytes;
    }
    if (head != 0 && (head != nbytes || nbytes > appender->capture_left))
        return 0;
    static const char hex_digits[] = "0123456789abcdef";
    PyObject *digest = PyUnicode_New(2 * DIGEST_BYTES, 127);
    if (digest == NULL)
        return -1;
    Py_UCS1 *text = PyUnicode_1BYTE_DATA(digest);
    const unsigned char *binary = (const unsigned char *)PyBytes_AS_STRING(hashed);
    for (int i = 0; i < DIGEST_BYTES; i++) {
        text[2 * i] = (Py_UCS1)hex_digits[binary[i] >> 4];
        text[2 * i + 1] = (Py_UCS1)hex_digits[binary[i] & 15];
    }
    PyObject *capture = NULL;
    if (head == 0)
        capture = new_capture(nbytes, Py_None, digest);
    else {
        PyObject *kept = PyDict_SetDefault(blobs, digest, copy); /* borrowed; bytes kept before stay */
        if (kept == copy)
            appender->capture_left -= nbytes;
        if (kept != NULL)
            capture = new_capture(nbytes, digest, digest);
    }
    int status = capture == NULL || PyDict_SetItem(appender->captured, hashed, capture) < 0 ? -1 : 1;
    Py_XDECREF(capture);
    Py_DECREF(digest);
    return status;
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
 * this appender keeps (another thread's hook replaces it). A digest, its capture's bytes and
 * the bytes later ones are compared with are thus always the same bytes. The kept copy,
 * its digest and its capture are replaced together, with no Python code in between. The
 * Python appender hashes every time; the digests are the same. */
static PyObject *capture_of(AppenderObject *appender, PyObject *data, char *digest)
{
    Bytes bytes;
    if (bytes_of(data, &bytes) < 0)
        return NULL;
    PyObject *capture = NULL, *hashed = NULL, *copy = NULL;
    PyArrayObject *kept = (PyArrayObject *)appender->last_kept;
    if (kept != NULL && bytes.len == PyArray_NBYTES(kept) &&
        memcmp(bytes.start, PyArray_BYTES(kept), (size_t)bytes.len) == 0) {
        memcpy(digest, appender->last_digest, DIGEST_BYTES);
        capture = appender->last_capture;
        goto done;
    }
    /* read-only: the trace may keep it as a blob, which its readers get as it is */
    if (bytes.len <= REMEMBERED_BYTES && (copy = captured_copy(appender, bytes.start, bytes.len)) == NULL)
        goto done;
    PyObject *hashed_bytes = copy != NULL ? copy : data;
    if (direct_hash != NULL && bytes.len <= DIRECT_HASH_BYTES)
        hashed = direct_digest(bytes.start, (size_t)bytes.len);
    else
        hashed = PyObject_CallOneArg(digest_function, hashed_bytes);
    if (hashed == NULL)
        goto done;
    if (!PyBytes_Check(hashed) || PyBytes_GET_SIZE(hashed) != DIGEST_BYTES) {
        PyErr_SetString(PyExc_TypeError, "the digest function gave no 16-byte digest");
        goto done;
    }
    capture = PyDict_GetItemWithError(appender->captured, hashed);
    int captured_here = 0;
    if (capture == NULL && !PyErr_Occurred() && copy != NULL &&
        (captured_here = capture_here(appender, copy, hashed)) == 1)
        capture = PyDict_GetItemWithError(appender->captured, hashed);
    if (capture == NULL && !PyErr_Occurred() && captured_here == 0) {
        /* the copy is this call's alone, and never written: the trace may keep it as is */
        PyObject *made = PyObject_CallMethodObjArgs((PyObject *)appender, str_capture_method,
                                                    hashed_bytes, hashed,
                                                    copy != NULL ? Py_True : Py_False, NULL);
        Py_XDECREF(made); /* the trace's captures hold it */
        capture = made == NULL ? NULL : PyDict_GetItemWithError(appender->captured, hashed);
        if (capture == NULL && !PyErr_Occurred())
            PyErr_SetString(PyExc_RuntimeError, "the trace did not keep the capture it made");
    }
    if (capture != NULL) {
        memcpy(digest, PyBytes_AS_STRING(hashed), DIGEST_BYTES);
        if (copy != NULL) {
            PyObject *old_kept = appender->last_kept, *old_capture = appender->last_capture;
            memcpy(appender->last_digest, digest, DIGEST_BYTES);
            appender->last_kept = copy;
            copy = NULL;
            Py_INCREF(capture);
            appender->last_capture = capture;
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

static PyObject *host_access(AppenderObject *appender, int64_t kind, PyObject *command_id, PyObject *offset,
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
    if (capture_of(appender, data, (char *)&row[4]) == NULL || log_append(appender->accesses, row) < 0)
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
static PyObject *appender_host_read(AppenderObject *appender, PyObject *const *args, size_t nargsf,
                                PyObject *kwnames)
{
    PyObject *values[4] = {NULL};
    if (positional_and_at("host_read(command_id, offset, data, at=None)", args,
                          PyVectorcall_NARGS(nargsf), kwnames, 3, values) < 0)
        return NULL;
    return host_access(appender, HOST_READ, values[0], values[1], values[2], values[3]);
}

/* host_reads(command_ids, offset, data, at): host_read() of each of the commands, which
 * read the same bytes at the same moment: one capture, a row each, in one step */
static PyObject *appender_host_reads(AppenderObject *appender, PyObject *const *args, Py_ssize_t nargs)
{
    if (wrong_arguments(nargs, 4, "host_reads(command_ids, offset, data, at)"))
        return NULL;
    Py_ssize_t count = PyObject_Length(args[0]);
    if (count < 0)
        return NULL;
    int64_t row[ACCESS_WIDTH] = {0, HOST_READ, 0, 0};
    if (as_int64(args[1], &row[2]) < 0 || as_int64(args[3], &row[3]) < 0)
        return NULL;
    int64_t one, *ids = count > 1 ? PyMem_Malloc((size_t)count * sizeof(int64_t)) : &one;
    if (ids == NULL)
        return PyErr_NoMemory();
    PyObject *result = NULL;
    if (count && (int64_values(args[0], count, ids, "host_reads(command_ids)") < 0 ||
                  capture_of(appender, args[2], (char *)&row[4]) == NULL ||
                  log_reserve(appender->accesses, count) < 0))
        goto done;
    /* no Python code from here to the last row: never some of the rows */
    for (Py_ssize_t i = 0; i < count; i++) {
        row[0] = ids[i];
        log_append(appender->accesses, row);
    }
    result = Py_None;
    Py_INCREF(result);
done:
    if (ids != &one)
        PyMem_Free(ids);
    return result;
}

/* host_write(command_id, data, at=None) */
static PyObject *appender_host_write(AppenderObject *appender, PyObject *const *args, size_t nargsf,
                                 PyObject *kwnames)
{
    PyObject *values[3] = {NULL};
    if (positional_and_at("host_write(command_id, data, at=None)", args,
                          PyVectorcall_NARGS(nargsf), kwnames, 2, values) < 0)
        return NULL;
    return host_access(appender, HOST_WRITE, values[0], NULL, values[1], values[2]);
}

/* Whether `known` is the (weakref, name) entry of `host`, alive; -1: an error. */
static int names_array(PyObject *known, PyObject *host)
{
    if (known == NULL || !PyTuple_Check(known) || PyTuple_GET_SIZE(known) != 2)
        return 0;
    return refers_to(PyTuple_GET_ITEM(known, 0), host);
}

#if PY_VERSION_HEX >= 0x030B0000
/* Whether `code` is luisa_nb's runtime's (naming.user_frame skips its frames); -1: an error. */
static int library_code(PyCodeObject *code)
{
    PyObject *filename = code->co_filename;
    if (!PyUnicode_Check(filename))
        return 0;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(library_folders); i++) {
        Py_ssize_t match = PyUnicode_Tailmatch(filename, PyTuple_GET_ITEM(library_folders, i), 0,
                                               PY_SSIZE_T_MAX, -1);
        if (match != 0)
            return (int)match;
    }
    return 0;
}

/* The first public variable of `namespace` (a dict) holding `value` itself, borrowed, in
 * `*name` (NULL: none): 0, or 1 when a key is not a str (Python decides), -1 on an error. */
static int variable_in(PyObject *namespace, PyObject *value, PyObject **name)
{
    Py_ssize_t position = 0;
    PyObject *key, *held;
    *name = NULL;
    while (PyDict_Next(namespace, &position, &key, &held)) {
        if (held != value)
            continue;
        if (!PyUnicode_Check(key))
            return 1;
        if (PyUnicode_GET_LENGTH(key) && PyUnicode_READ_CHAR(key, 0) == '_')
            continue;
        *name = key;
        return 0;
    }
    return 0;
}

/* The given name of `array` (naming.given_name), borrowed, or NULL (none, or an error). */
static PyObject *given_name_of(PyObject *array)
{
    PyObject *given = by_identity(given_names, array);
    if (given == NULL || !PyTuple_Check(given) || PyTuple_GET_SIZE(given) != 2 ||
        refers_to(PyTuple_GET_ITEM(given, 0), array) != 1)
        return NULL;
    PyObject *name = PyTuple_GET_ITEM(given, 1);
    return PyUnicode_Check(name) && PyUnicode_GET_LENGTH(name) ? name : NULL;
}

/* The (code, line) site `frame` (running `code`) is at, a new reference. The line is
 * worked out from the code's location table, which costs a scan of it: the site of the last
 * (code, instruction offset) seen is kept, since a loop makes its arrays on the same line.
 * The kept tuple holds the code object, so its address names no other code. */
static PyObject *last_site;
static int last_site_offset = -1;

static PyObject *frame_site(PyFrameObject *frame, PyCodeObject *code)
{
    int offset = PyFrame_GetLasti(frame);
    if (last_site != NULL && offset >= 0 && offset == last_site_offset &&
        PyTuple_GET_ITEM(last_site, 0) == (PyObject *)code) {
        Py_INCREF(last_site);
        return last_site;
    }
    PyObject *line = PyLong_FromLong(PyFrame_GetLineNumber(frame));
    PyObject *site = line == NULL ? NULL : PyTuple_Pack(2, (PyObject *)code, line);
    Py_XDECREF(line);
    if (site != NULL && offset >= 0) {
        Py_INCREF(site);
        last_site_offset = offset; /* first: dropping the old site may run Python code */
        Py_XSETREF(last_site, site);
    }
    return site;
}

/* The recorder's `_note_array(host)` for an array not named yet, in C: the name the
 * variables of the user's frame give it, found as naming.array_name finds it. 1: done
 * (noted, or not looked at); 0: Python must do it (a view no variable holds, which is
 * named after the array it views; namespaces that are not dicts); -1: an error. */
static int note_array_here(AppenderObject *appender, PyObject *host)
{
    if (!PyArray_Check(host))
        return 0;
    if (library_folders == NULL) {
        PyObject *naming = PyImport_ImportModule("luisa_nb.recording.naming");
        if (naming == NULL)
            return -1;
        library_folders = PyObject_GetAttrString(naming, "_LIBRARY_FOLDERS");
        given_names = library_folders == NULL ? NULL : PyObject_GetAttrString(naming, "_given_names");
        Py_DECREF(naming);
        if (given_names == NULL || !PyTuple_Check(library_folders) || !PyDict_Check(given_names)) {
            Py_CLEAR(library_folders);
            Py_CLEAR(given_names);
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_TypeError, "naming's library folders or given names are not "
                                                 "a tuple and a dict");
            return -1;
        }
    }
    PyFrameObject *frame = PyEval_GetFrame(); /* borrowed: the innermost frame */
    Py_XINCREF(frame);
    PyCodeObject *code = NULL;
    int status = -1;
    PyObject *site = NULL, *locals = NULL, *globals = NULL, *entry = NULL;
    while (frame != NULL) {
        code = PyFrame_GetCode(frame);
        int library = library_code(code);
        if (library < 0)
            goto done;
        if (!library)
            break;
        Py_CLEAR(code);
        PyFrameObject *back = PyFrame_GetBack(frame);
        Py_SETREF(frame, back);
    }
    status = 1;
    if (frame == NULL) /* no user code: nothing to name it after */
        goto done;
    status = -1;
    if ((site = frame_site(frame, code)) == NULL)
        goto done;
    PyObject *count = PyDict_GetItemWithError(appender->unnamed_sites, site); /* borrowed */
    long unnamed = 0;
    if (count == NULL && PyErr_Occurred())
        goto done;
    if (count != NULL && ((unnamed = PyLong_AsLong(count)) == -1 && PyErr_Occurred()))
        goto done;
    status = 1;
    if (unnamed >= UNNAMED_LIMIT)
        goto done;
    status = -1;
    PyObject *name = given_name_of(host);
    if (name == NULL && PyErr_Occurred())
        goto done;
    if (name == NULL) {
        if ((locals = PyFrame_GetLocals(frame)) == NULL || (globals = PyFrame_GetGlobals(frame)) == NULL)
            goto done;
        status = 0;
        if (!PyDict_Check(locals) || !PyDict_Check(globals))
            goto done;
        int undecided = variable_in(locals, host, &name);
        if (!undecided && name == NULL)
            undecided = variable_in(globals, host, &name);
        if (undecided || (name == NULL && PyArray_BASE((PyArrayObject *)host) != NULL))
            goto done;
    }
    Py_XINCREF(name); /* borrowed until now: what follows allocates, which may run Python code */
    status = -1;
    if (name == NULL) {
        PyObject *more = PyLong_FromLong(unnamed + 1);
        int failed = more == NULL || PyDict_SetItem(appender->unnamed_sites, site, more) < 0;
        Py_XDECREF(more);
        if (failed)
            goto done;
    }
    PyObject *reference = untracked_reference(host), *key = PyLong_FromVoidPtr(host);
    if (reference != NULL && key != NULL &&
        (entry = untracked(PyTuple_Pack(2, reference, name == NULL ? Py_None : name))) != NULL &&
        PyDict_SetItem(appender->array_names, key, entry) == 0)
        status = 1;
    Py_XDECREF(reference);
    Py_XDECREF(key);
    Py_XDECREF(name);
done:
    Py_XDECREF(entry);
    Py_XDECREF(locals);
    Py_XDECREF(globals);
    Py_XDECREF(site);
    Py_XDECREF(code);
    Py_XDECREF(frame);
    return status;
}
#else
static int note_array_here(AppenderObject *appender, PyObject *host)
{
    return 0; /* before Python 3.11 frames are read in Python */
}
#endif

/* upload_enqueued(host, data) */
static PyObject *appender_upload_enqueued(AppenderObject *appender, PyObject *const *args, Py_ssize_t nargs)
{
    if (wrong_arguments(nargs, 2, "upload_enqueued(host, data)"))
        return NULL;
    PyObject *host = args[0], *data = args[1];
    int named = names_array(appender->last_named, host); /* a loop uploads one array again */
    if (named == 0) {
        PyObject *known = by_identity(appender->array_names, host);
        if (known == NULL && PyErr_Occurred())
            return NULL;
        if ((named = names_array(known, host)) == 1) {
            Py_INCREF(known);
            Py_XSETREF(appender->last_named, known);
        }
    }
    if (named < 0)
        return NULL;
    if (!named && (named = note_array_here(appender, host)) < 0)
        return NULL;
    if (!named) {
        PyObject *noted = PyObject_CallMethodOneArg((PyObject *)appender, str_note_array, host);
        if (noted == NULL)
            return NULL;
        Py_DECREF(noted);
    }
    char digest[DIGEST_BYTES];
    PyObject *capture = capture_of(appender, data, digest);
    Py_XINCREF(capture);
    return capture;
}

/* stamp_sync(stream_id, stop): a sync point's seq and time, the index of the last
 * submission row of stream `stream_id` (None: no stream) from row `stop` on (-1: none),
 * and the number of rows then */
static PyObject *appender_stamp_sync(AppenderObject *appender, PyObject *const *args, Py_ssize_t nargs)
{
    if (wrong_arguments(nargs, 2, "stamp_sync(stream_id, stop)"))
        return NULL;
    int64_t stream_id = 0;
    Py_ssize_t stop;
    if ((args[0] != Py_None && as_int64(args[0], &stream_id) < 0) ||
        ((stop = PyLong_AsSsize_t(args[1])) == -1 && PyErr_Occurred()))
        return NULL;
    Py_ssize_t last = args[0] == Py_None ? -1 : log_last_where(appender->submissions, 1, stream_id, stop);
    int64_t seq = ++appender->sequence;
    return Py_BuildValue("LLnn", (long long)seq, (long long)clock_now(), last,
                         appender->submissions->rows);
}

/* The position of `member` (by identity) in `members`, a tuple of enum members, or -1
 * with a KeyError (a member hashes by a Python call: a dict of them is slower). */
static Py_ssize_t member_code(PyObject *members, PyObject *member, const char *what)
{
    if (members == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "use_sync_kinds() was not called");
        return -1;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(members); i++)
        if (PyTuple_GET_ITEM(members, i) == member)
            return i;
    PyErr_Format(PyExc_KeyError, "%R is not a %s", member, what);
    return -1;
}

/* An int64 from an int, or MISSING for None. */
static int int64_or_missing(PyObject *value, int64_t *out)
{
    if (value == Py_None) {
        *out = MISSING;
        return 0;
    }
    return as_int64(value, out);
}

/* sync_issued(kind, stream, event, sync_id): TraceRecorderBase.sync_issued in C; returns
 * the sync point's row in `syncs`. It runs no Python code between drawing the seq and
 * appending the row but what an allocation may start, as the Python hook under its lock. */
static PyObject *appender_sync_issued(AppenderObject *appender, PyObject *const *args, Py_ssize_t nargs)
{
    if (wrong_arguments(nargs, 4, "sync_issued(kind, stream, event, sync_id)"))
        return NULL;
    PyObject *kind = args[0], *stream = args[1];
    int64_t row[SYNC_WIDTH];
    Py_ssize_t kind_code = member_code(sync_kinds, kind, "SyncKind");
    if (kind_code < 0 || as_int64(args[3], &row[0]) < 0 || int64_or_missing(args[2], &row[4]) < 0)
        return NULL;
    PyObject *stream_key = stream == Py_None ? Py_NewRef(Py_None) : PyObject_GetAttr(stream, str_id);
    if (stream_key == NULL)
        return NULL;
    PyObject *result = NULL, *looked = NULL, *seq_object = NULL;
    int64_t stream_id = MISSING, covered = MISSING;
    if (stream_key != Py_None && as_int64(stream_key, &stream_id) < 0)
        goto done;
    int covers = kind == PyTuple_GET_ITEM(sync_kinds, 0); /* SyncKind.SYNCHRONIZE */
    int64_t seq;
    if (covers) {
        PyObject *before = PyDict_GetItemWithError(appender->looked_at, stream_key); /* borrowed */
        if (before == NULL && PyErr_Occurred())
            goto done;
        Py_ssize_t stop = 0;
        int64_t last = MISSING;
        int has_last = 0;
        if (before != NULL) {
            if (!PyTuple_Check(before) || PyTuple_GET_SIZE(before) != 2 ||
                (stop = PyLong_AsSsize_t(PyTuple_GET_ITEM(before, 0))) == -1 ||
                ((has_last = PyTuple_GET_ITEM(before, 1) != Py_None) &&
                 as_int64(PyTuple_GET_ITEM(before, 1), &last) < 0)) {
                if (!PyErr_Occurred())
                    PyErr_SetString(PyExc_TypeError, "_looked_at holds (rows, last seq or None)");
                goto done;
            }
        }
        seq = ++appender->sequence;
        row[6] = clock_now();
        Py_ssize_t last_row = stream_key == Py_None ? -1 : log_last_where(appender->submissions, 1, stream_id, stop);
        Py_ssize_t rows = appender->submissions->rows;
        if (last_row >= 0) {
            last = log_row_values(appender->submissions, last_row)[SEQ_COLUMN];
            has_last = 1;
        }
        PyObject *rows_object = PyLong_FromSsize_t(rows);
        PyObject *last_object = has_last ? PyLong_FromLongLong(last) : Py_NewRef(Py_None);
        if (rows_object != NULL && last_object != NULL)
            looked = PyTuple_Pack(2, rows_object, last_object);
        Py_XDECREF(rows_object);
        Py_XDECREF(last_object);
        if (looked == NULL || PyDict_SetItem(appender->looked_at, stream_key, looked) < 0)
            goto done;
        PyObject *placed = PyDict_GetItemWithError(appender->last_placed, stream_key); /* borrowed */
        int64_t placed_seq = MISSING;
        if ((placed == NULL && PyErr_Occurred()) || (placed != NULL && as_int64(placed, &placed_seq) < 0))
            goto done;
        covered = !has_last || (placed != NULL && placed_seq > last) ? (placed != NULL ? placed_seq : MISSING) : last;
    } else {
        seq = ++appender->sequence;
        row[6] = clock_now();
        if (stream_key != Py_None) {
            if ((seq_object = PyLong_FromLongLong(seq)) == NULL ||
                PyDict_SetItem(appender->last_placed, stream_key, seq_object) < 0)
                goto done;
        }
    }
    Py_ssize_t token = appender->syncs->rows;
    row[1] = seq;
    row[2] = kind_code;
    row[3] = stream_id;
    row[5] = covered;
    if (log_append(appender->syncs, row) < 0 || (result = PyLong_FromSsize_t(token)) == NULL)
        goto done;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(host_wait_kinds); i++) {
        if (PyTuple_GET_ITEM(host_wait_kinds, i) != kind)
            continue;
        Py_XSETREF(seq_object, PyLong_FromLongLong(seq));
        if (seq_object == NULL || PyDict_SetItem(appender->host_waits, result, seq_object) < 0)
            Py_CLEAR(result);
        break;
    }
done:
    Py_XDECREF(seq_object);
    Py_XDECREF(looked);
    Py_DECREF(stream_key);
    return result;
}

/* sync_completed(token, status, error=None): TraceRecorderBase.sync_completed in C. */
static PyObject *appender_sync_completed(AppenderObject *appender, PyObject *const *args, size_t nargsf,
                                         PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf), keywords = kwnames == NULL ? 0 : PyTuple_GET_SIZE(kwnames);
    if (nargs < 2 || nargs + keywords > 3 ||
        (keywords == 1 && (!PyUnicode_Check(PyTuple_GET_ITEM(kwnames, 0)) ||
                           PyUnicode_CompareWithASCIIString(PyTuple_GET_ITEM(kwnames, 0), "error")))) {
        PyErr_SetString(PyExc_TypeError, "sync_completed(token, status, error=None): bad arguments");
        return NULL;
    }
    PyObject *error = nargs + keywords == 3 ? args[2] : Py_None;
    int64_t row[COMPLETION_WIDTH];
    Py_ssize_t status_code = member_code(statuses, args[1], "Status");
    if (status_code < 0 || as_int64(args[0], &row[0]) < 0)
        return NULL;
    row[3] = MISSING;
    if (error != Py_None) {
        row[3] = PyList_GET_SIZE(appender->sync_errors);
        if (PyList_Append(appender->sync_errors, error) < 0)
            return NULL;
    }
    row[1] = clock_now();
    row[2] = status_code;
    if (log_append(appender->sync_completions, row) < 0)
        return NULL;
    int waiting = PyDict_Contains(appender->host_waits, args[0]);
    if (waiting < 0 || (waiting && PyDict_DelItem(appender->host_waits, args[0]) < 0))
        return NULL;
    Py_RETURN_NONE;
}

/* -- RunLog: the timer of one run ------------------------------------------------------ */

/* What a run's worker reports: each tick goes to the appender's `ticks` log as a row (run,
 * time), so a run leaves no object behind; its rare events (a failure, an early end,
 * device spans) go to the recorder's Python methods. A run's `times` is the run itself. */
typedef struct {
    PyObject_HEAD
    AppenderObject *appender;
    int64_t run;
} RunLogObject;

static PyTypeObject RunLogType;

static PyObject *run_tick_at_time(RunLogObject *run, int64_t time)
{
    int64_t row[TICK_WIDTH] = {run->run, time};
    if (log_append(run->appender->ticks, row) < 0)
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
    LogObject *ticks = run->appender->ticks;
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

/* appender.<method>(run, *arguments): the recorder notes a run's failure, end or spans */
static PyObject *tell_recorder(RunLogObject *run, PyObject *method, PyObject *first, PyObject *second,
                           PyObject *third)
{
    PyObject *number = PyLong_FromLongLong(run->run);
    if (number == NULL)
        return NULL;
    PyObject *result = PyObject_CallMethodObjArgs((PyObject *)run->appender, method, number, first,
                                                  second, third, NULL);
    Py_DECREF(number);
    return result;
}

/* failed(position, status, error) */
static PyObject *run_failed(RunLogObject *run, PyObject *const *args, Py_ssize_t nargs)
{
    if (wrong_arguments(nargs, 3, "failed(position, status, error)"))
        return NULL;
    return tell_recorder(run, str_run_failed, args[0], args[1], args[2]);
}

/* end_at(count) */
static PyObject *run_end_at(RunLogObject *run, PyObject *count)
{
    return tell_recorder(run, str_run_ended, count, NULL, NULL);
}

/* spans(spans): kept where there are any */
static PyObject *run_spans(RunLogObject *run, PyObject *spans)
{
    int any = PyObject_IsTrue(spans);
    if (any < 0)
        return NULL;
    if (!any)
        Py_RETURN_NONE;
    return tell_recorder(run, str_run_spans, spans, NULL, NULL);
}

static PyObject *run_get_times(RunLogObject *run, void *closure)
{
    Py_INCREF(run);
    return (PyObject *)run;
}

static void run_dealloc(RunLogObject *run)
{
    Py_XDECREF(run->appender);
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
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "luisa_nb.recording._row_appender.RunLog",
    .tp_doc = "The timer of one traced run: appends its ticks to its recorder's logs.",
    .tp_basicsize = sizeof(RunLogObject),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_dealloc = (destructor)run_dealloc,
    .tp_methods = run_methods,
    .tp_members = run_members,
    .tp_getset = run_getset,
};

/* run_timer(ids): a RunLog for a run of the steps with command ids `ids`, which go to
 * `steps`, and whose row (first step, steps) goes to `runs` */
static PyObject *appender_run_timer(AppenderObject *appender, PyObject *ids_object)
{
    Py_ssize_t count = PyObject_Length(ids_object);
    if (count < 0)
        return NULL;
    int64_t one, *ids = count > 1 ? PyMem_Malloc((size_t)count * sizeof(int64_t)) : &one;
    RunLogObject *run = NULL;
    if (ids == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    if (int64_values(ids_object, count, ids, "run_timer(ids)") < 0)
        goto done;
    if ((run = PyObject_New(RunLogObject, &RunLogType)) == NULL)
        goto done;
    Py_INCREF(appender);
    run->appender = appender;
    /* no Python code from here to the last append: the run's number, row and ids agree */
    if (log_reserve(appender->steps, count) < 0 || log_reserve(appender->runs, 1) < 0) {
        Py_CLEAR(run);
        goto done;
    }
    int64_t row[RUN_WIDTH] = {appender->steps->rows, count};
    run->run = appender->runs->rows;
    log_append(appender->runs, row);
    log_extend(appender->steps, ids, count);
done:
    if (ids != &one)
        PyMem_Free(ids);
    return (PyObject *)run;
}

static PyMethodDef appender_methods[] = {
    {"submitted", (PyCFunction)(void (*)(void))appender_submitted, METH_FASTCALL, NULL},
    {"submitted_one", (PyCFunction)(void (*)(void))appender_submitted_one, METH_FASTCALL, NULL},
    {"host_read", (PyCFunction)(void (*)(void))appender_host_read, METH_FASTCALL | METH_KEYWORDS, NULL},
    {"host_reads", (PyCFunction)(void (*)(void))appender_host_reads, METH_FASTCALL, NULL},
    {"host_write", (PyCFunction)(void (*)(void))appender_host_write, METH_FASTCALL | METH_KEYWORDS,
     NULL},
    {"upload_enqueued", (PyCFunction)(void (*)(void))appender_upload_enqueued, METH_FASTCALL, NULL},
    {"stamp_sync", (PyCFunction)(void (*)(void))appender_stamp_sync, METH_FASTCALL, NULL},
    {"sync_issued", (PyCFunction)(void (*)(void))appender_sync_issued, METH_FASTCALL, NULL},
    {"sync_completed", (PyCFunction)(void (*)(void))appender_sync_completed, METH_FASTCALL | METH_KEYWORDS,
     NULL},
    {"run_timer", (PyCFunction)appender_run_timer, METH_O, NULL},
    {NULL}};

#define CORE_MEMBER(name, field)                                                                   \
    {name, T_OBJECT_EX, offsetof(AppenderObject, field), READONLY, NULL}

static PyMemberDef appender_members[] = {
    CORE_MEMBER("submissions", submissions),
    CORE_MEMBER("accesses", accesses),
    CORE_MEMBER("steps", steps),
    CORE_MEMBER("runs", runs),
    CORE_MEMBER("ticks", ticks),
    CORE_MEMBER("_described_at", described_at),
    CORE_MEMBER("_policies", policies),
    CORE_MEMBER("_array_names", array_names),
    CORE_MEMBER("_unnamed_sites", unnamed_sites),
    CORE_MEMBER("syncs", syncs),
    CORE_MEMBER("sync_completions", sync_completions),
    CORE_MEMBER("sync_errors", sync_errors),
    CORE_MEMBER("_host_waits", host_waits),
    CORE_MEMBER("_looked_at", looked_at),
    CORE_MEMBER("_last_placed", last_placed),
    {"_blobs", T_OBJECT, offsetof(AppenderObject, blobs), 0,
     "the trace's blobs, which the hooks capture new bytes into where its policy keeps all of "
     "them or none (else, and while None, Trace.capture does)"},
    {"_capture_head", T_OBJECT, offsetof(AppenderObject, capture_head), 0,
     "how many bytes of a transfer the trace keeps (None: every byte)"},
    {"_capture_left", T_PYSSIZET, offsetof(AppenderObject, capture_left), 0,
     "how many more bytes the trace may keep under its capture limit (Trace.capture takes "
     "the captures that would pass it)"},
    {NULL}};

static PyObject *appender_get_captured(AppenderObject *appender, void *closure)
{
    if (appender->captured == NULL) {
        PyErr_SetString(PyExc_AttributeError, "_captured");
        return NULL;
    }
    Py_INCREF(appender->captured);
    return appender->captured;
}

static int appender_set_captured(AppenderObject *appender, PyObject *value, void *closure)
{
    if (value == NULL || !PyDict_Check(value)) {
        PyErr_SetString(PyExc_TypeError, "_captured is a dict (the trace's captures)");
        return -1;
    }
    Py_INCREF(value);
    Py_SETREF(appender->captured, value);
    return 0;
}

static PyGetSetDef appender_getset[] = {
    {"_captured", (getter)appender_get_captured, (setter)appender_set_captured,
     "the trace's captures, by binary digest"},
    {NULL}};

static PyTypeObject AppenderType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "luisa_nb.recording._row_appender.RowAppender",
    .tp_doc = "The rows of a trace recorder and the hooks that append to them (see row_appender.py).",
    .tp_basicsize = sizeof(AppenderObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_new = appender_new,
    .tp_dealloc = (destructor)appender_dealloc,
    .tp_traverse = (traverseproc)appender_traverse,
    .tp_clear = (inquiry)appender_clear,
    .tp_methods = appender_methods,
    .tp_members = appender_members,
    .tp_getset = appender_getset,
};

/* -- module ------------------------------------------------------------------------------ */

/* data_address(array): the address of a numpy array's first byte */
static PyObject *data_address(PyObject *module, PyObject *array)
{
    if (!PyArray_Check(array)) {
        PyErr_Format(PyExc_TypeError, "data_address() takes a numpy array, not %.100s",
                     Py_TYPE(array)->tp_name);
        return NULL;
    }
    return PyLong_FromVoidPtr(PyArray_DATA((PyArrayObject *)array));
}

/* use_sync_kinds(kinds, host_waits, statuses): the SyncKind members (SYNCHRONIZE first) in
 * the order their codes number them, those at which the host waits, and the Status members
 * in order: what sync_issued and sync_completed log. */
static PyObject *use_sync_kinds(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (wrong_arguments(nargs, 3, "use_sync_kinds(kinds, host_waits, statuses)"))
        return NULL;
    for (int i = 0; i < 3; i++)
        if (!PyTuple_CheckExact(args[i]) || (i == 0 && PyTuple_GET_SIZE(args[i]) == 0)) {
            PyErr_SetString(PyExc_TypeError, "use_sync_kinds() takes three tuples of enum members");
            return NULL;
        }
    Py_XSETREF(sync_kinds, Py_NewRef(args[0]));
    Py_XSETREF(host_wait_kinds, Py_NewRef(args[1]));
    Py_XSETREF(statuses, Py_NewRef(args[2]));
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"use_sync_kinds", (PyCFunction)(void (*)(void))use_sync_kinds, METH_FASTCALL,
     "use_sync_kinds(kinds, host_waits, statuses)\n--\n\nThe enum members the sync hooks log "
     "by position: SyncKind's (SYNCHRONIZE first), those at which the host waits, Status's."},
    {"data_address", (PyCFunction)data_address, METH_O,
     "data_address(array)\n--\n\nThe address of `array`'s first byte, as "
     "`array.__array_interface__['data'][0]` gives it, without building that dict."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "luisa_nb.recording._row_appender",
    .m_doc = "A trace recorder's rows and the hooks that append to them, in C (see "
             "row_appender.py).",
    .m_size = -1,
    .m_methods = module_methods,
};

static int intern(PyObject **slot, const char *text)
{
    *slot = PyUnicode_InternFromString(text);
    return *slot == NULL ? -1 : 0;
}

PyMODINIT_FUNC PyInit__row_appender(void)
{
    if (intern(&str_first_submission_of, "_first_submission_of") < 0 ||
        intern(&str_describe, "_describe") < 0 || intern(&str_note_array, "_note_array") < 0 ||
        intern(&str_capture_method, "_capture") < 0 ||
        intern(&str_run_failed, "_run_failed") < 0 || intern(&str_run_ended, "_run_ended") < 0 ||
        intern(&str_run_spans, "_run_spans") < 0 || intern(&str_id, "id") < 0 ||
        intern(&str_name, "name") < 0 || intern(&str_host, "host") < 0 ||
        intern(&str_locked, "locked") < 0 || clock_init() < 0)
        return NULL;
    import_array1(NULL);
    PyObject *xxhash = PyImport_ImportModule("xxhash");
    if (xxhash == NULL)
        return NULL;
    digest_function = PyObject_GetAttrString(xxhash, "xxh3_128_digest");
    Py_DECREF(xxhash);
    if (digest_function != NULL && find_direct_hash() < 0)
        return NULL;
    PyObject *records = PyImport_ImportModule("luisa_nb.recording.records");
    if (records == NULL)
        return NULL;
    PyObject *capture_type = PyObject_GetAttrString(records, "Capture");
    Py_DECREF(records);
    static const char *const capture_slots[3] = {"nbytes", "blob", "digest"};
    int laid_out = capture_type == NULL ? -1 : slot_layout(&capture_layout, capture_type, capture_slots, 3);
    Py_XDECREF(capture_type);
    if (laid_out < 0)
        return NULL;
    if (digest_function == NULL || PyType_Ready(&LogType) < 0 || PyType_Ready(&AppenderType) < 0 ||
        PyType_Ready(&RunLogType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    if (PyModule_AddObjectRef(m, "Log", (PyObject *)&LogType) < 0 ||
        PyModule_AddObjectRef(m, "RowAppender", (PyObject *)&AppenderType) < 0 ||
        PyModule_AddObjectRef(m, "RunLog", (PyObject *)&RunLogType) < 0 ||
        PyModule_AddIntConstant(m, "SUBMISSION_WIDTH", SUBMISSION_WIDTH) < 0 ||
        PyModule_AddIntConstant(m, "ACCESS_WIDTH", ACCESS_WIDTH) < 0 ||
        PyModule_AddIntConstant(m, "RUN_WIDTH", RUN_WIDTH) < 0 ||
        PyModule_AddIntConstant(m, "TICK_WIDTH", TICK_WIDTH) < 0 ||
        PyModule_AddIntConstant(m, "UNNAMED_LIMIT", UNNAMED_LIMIT) < 0 ||
        PyModule_AddObjectRef(m, "DIRECT_HASH", direct_hash != NULL ? Py_True : Py_False) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
