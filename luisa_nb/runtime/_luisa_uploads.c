/* Traced uploads into real luisa-python buffers, in C: the common case of
 * Instrumentation.upload() in luisa_nb/runtime/real_luisa.py, as one call.
 *
 * TracedUpload replaces luisa.Buffer.copy_from while luisa_nb instruments luisa-python.
 * A call that is recorded, asks for no synchronize, names its arguments by position, and
 * uploads a C-contiguous numpy array into a buffer that the instrumentation knows already
 * (on a stream it knows) is done here, on the same Python objects and in the same order as
 * the Python method: the stream's latest upload pair and its byte view, the recorder's
 * `upload_enqueued` hook, the buffer's transfer memo, the waiting shadow readback, luisa's
 * own copy_from, the command and the pending readback. Every other call goes, unchanged,
 * to the Python wrapper, which the extension is built without as well. Wherever the fast
 * path needs Python's rules (new trace fields, a readback to add first) it calls the same
 * Python methods. record_host_accesses() is the synchronize side: the host read of each
 * upload of a finished list, at its submission.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

#include "../recording/trace_clock.h"
#include "../recording/slot_objects.h"
#include "array_memos.h"

static PyObject *str_recording, *str_vars, *str_stream, *str_stream_of, *str_upload_memo,
    *str_transfer_fields, *str_unread, *str_read_back, *str_upload_enqueued,
    *str_host_reads, *str_id, *str_views, *str_memories;

/* The slots of the luisa command type, by offset: id, enqueued, fields, views, host, sent. */
#define COMMAND_SLOTS 6
static const char *command_slot_names[COMMAND_SLOTS] = {"id",    "enqueued", "fields",
                                                        "views", "host",     "sent"};
enum { SLOT_ID, SLOT_ENQUEUED, SLOT_FIELDS, SLOT_VIEWS, SLOT_HOST, SLOT_SENT };

/* The slots of the luisa stream type read and written here: the commands not submitted,
 * the uploads whose readback waits, the latest upload pair. */
#define STREAM_SLOTS 3
static const char *stream_slot_names[STREAM_SLOTS] = {"pending", "unread", "last_upload"};
enum { SLOT_PENDING, SLOT_UNREAD, SLOT_LAST_UPLOAD };

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *state;           /* the Instrumentation */
    PyObject *fallback;        /* the Python wrapper, which every other call goes to */
    PyObject *original;        /* luisa's own copy_from */
    PyObject *active_recorder; /* recording.recorder.active_recorder */
    PyObject *globalvars;      /* luisa.globalvars, whose vars.stream is the default stream */
    PyObject *ids;             /* the runtime's command id counter (an iterator) */
    PyTypeObject *command_type, *stream_type;
    Py_ssize_t slots[COMMAND_SLOTS], stream_slots[STREAM_SLOTS];
    Py_ssize_t host_field;     /* the index of the host range in trace fields */
    int shadow;                /* the instrumentation adds shadow readbacks */
    PyObject *stream, *luisa_stream; /* the latest stream and the state's LuisaStream of it */
    PyObject *memory, *memory_id, *views; /* the latest memory and its id and views, which stay */
} TracedUploadObject;

/* A slot of a luisa stream (a new reference); an AttributeError where it is not set. */
static PyObject *stream_slot(TracedUploadObject *self, PyObject *luisa_stream, int slot)
{
    PyObject *value = *(PyObject **)((char *)luisa_stream + self->stream_slots[slot]);
    if (value == NULL)
        PyErr_Format(PyExc_AttributeError, "a luisa stream has no %s", stream_slot_names[slot]);
    Py_XINCREF(value);
    return value;
}

/* Set a slot of a luisa stream to `value` (a new reference, which it takes). */
static void set_stream_slot(TracedUploadObject *self, PyObject *luisa_stream, int slot,
                            PyObject *value)
{
    Py_XSETREF(*(PyObject **)((char *)luisa_stream + self->stream_slots[slot]), value);
}

static PyObject *call_fallback(TracedUploadObject *self, PyObject *const *args, size_t nargsf,
                               PyObject *kwnames)
{
    return PyObject_Vectorcall(self->fallback, args, nargsf, kwnames);
}

/* The instrumentation's LuisaStream of `stream` (a new reference): the latest one's, or
 * the state's stream_of(), kept for the next call. */
static PyObject *luisa_stream_of(TracedUploadObject *self, PyObject *stream)
{
    if (stream != self->stream) {
        PyObject *known = PyObject_CallMethodOneArg(self->state, str_stream_of, stream);
        if (known == NULL)
            return NULL;
        if (Py_TYPE(known) != self->stream_type) {
            PyErr_SetString(PyExc_TypeError, "stream_of() gave no luisa stream");
            Py_DECREF(known);
            return NULL;
        }
        Py_INCREF(stream);
        Py_XSETREF(self->stream, stream);
        Py_XSETREF(self->luisa_stream, known);
    }
    Py_INCREF(self->luisa_stream);
    return self->luisa_stream;
}

/* The stream an upload with stream argument `given` goes to (a new reference). */
static PyObject *resolve_stream(TracedUploadObject *self, PyObject *given)
{
    if (given != Py_None) {
        Py_INCREF(given);
        return given;
    }
    PyObject *vars = PyObject_GetAttr(self->globalvars, str_vars);
    if (vars == NULL)
        return NULL;
    PyObject *stream = PyObject_GetAttr(vars, str_stream);
    Py_DECREF(vars);
    return stream;
}

/* `host`'s bytes as a one-dimensional uint8 array that shares its memory (as
 * real_luisa._bytes_of gives for a C-contiguous array). */
static PyObject *byte_view(PyObject *host)
{
    PyArrayObject *array = (PyArrayObject *)host;
    npy_intp length = PyArray_NBYTES(array);
    PyArray_Descr *bytes = PyArray_DescrFromType(NPY_UINT8); /* stolen below */
    if (bytes == NULL)
        return NULL;
    int flags = NPY_ARRAY_C_CONTIGUOUS | (PyArray_FLAGS(array) & NPY_ARRAY_WRITEABLE);
    PyObject *view = PyArray_NewFromDescr(&PyArray_Type, bytes, 1, &length, NULL,
                                          PyArray_DATA(array), flags, NULL);
    if (view == NULL)
        return NULL;
    Py_INCREF(host);
    if (PyArray_SetBaseObject((PyArrayObject *)view, host) < 0) {
        Py_DECREF(view);
        return NULL;
    }
    return view;
}

/* The stream's latest upload pair (resource, host, data, memory) for `resource` and
 * `host` (a new reference): the one kept, or a new one where the instrumentation knows
 * the resource and `host` is C-contiguous, which replaces it; None where neither holds. */
static PyObject *upload_pair(TracedUploadObject *self, PyObject *luisa_stream, PyObject *resource,
                             PyObject *host)
{
    PyObject *last = stream_slot(self, luisa_stream, SLOT_LAST_UPLOAD);
    if (last == NULL)
        return NULL;
    if (PyTuple_CheckExact(last) && PyTuple_GET_SIZE(last) == 4 &&
        PyTuple_GET_ITEM(last, 0) == resource && PyTuple_GET_ITEM(last, 1) == host)
        return last;
    Py_DECREF(last);
    if (!PyArray_IS_C_CONTIGUOUS((PyArrayObject *)host) || PyArray_NBYTES((PyArrayObject *)host) == 0)
        Py_RETURN_NONE;
    PyObject *memories = PyObject_GetAttr(self->state, str_memories);
    if (memories == NULL)
        return NULL;
    PyObject *key = PyLong_FromVoidPtr(resource), *known = NULL;
    if (key != NULL && PyDict_CheckExact(memories))
        known = PyDict_GetItemWithError(memories, key); /* borrowed */
    Py_XDECREF(key);
    if (known == NULL || !PyTuple_CheckExact(known) || PyTuple_GET_SIZE(known) != 2 ||
        PyTuple_GET_ITEM(known, 0) != resource) {
        Py_DECREF(memories);
        if (PyErr_Occurred())
            return NULL;
        Py_RETURN_NONE;
    }
    PyObject *memory = PyTuple_GET_ITEM(known, 1), *data = NULL, *pair = NULL;
    Py_INCREF(memory); /* an allocation may collect garbage, whose finalizers may change dicts */
    Py_DECREF(memories);
    if ((data = byte_view(host)) != NULL)
        pair = PyTuple_Pack(4, resource, host, data, memory);
    Py_XDECREF(data);
    Py_DECREF(memory);
    if (pair != NULL) {
        Py_INCREF(pair);
        set_stream_slot(self, luisa_stream, SLOT_LAST_UPLOAD, pair);
    }
    return pair;
}

/* The trace fields of the upload of `host` into `memory` with enqueue capture `capture`
 * (a new reference): the memo's, where it was made for `host` now and `capture`, else
 * from memory.transfer_fields(). */
static PyObject *upload_fields(PyObject *memory, PyObject *host, PyObject *capture)
{
    PyObject *memo = PyObject_GetAttr(memory, str_upload_memo);
    if (memo == NULL)
        return NULL;
    int holds = memo_made_for(memo, 5, host);
    PyObject *fields = NULL;
    if (holds == 1 && PyTuple_GET_ITEM(memo, 3) == capture) {
        fields = PyTuple_GET_ITEM(memo, 4);
        Py_INCREF(fields);
    } else if (holds >= 0) {
        PyObject *call[4] = {memory, host, capture, Py_True};
        fields = PyObject_VectorcallMethod(str_transfer_fields, call, 4, NULL);
    }
    Py_DECREF(memo);
    return fields;
}

/* The host range of trace fields `fields` (borrowed), or NULL where they hold none. */
static PyObject *host_range_of(TracedUploadObject *self, PyObject *fields)
{
    if (!PyTuple_Check(fields) || PyTuple_GET_SIZE(fields) <= self->host_field)
        return NULL;
    return PyTuple_GET_ITEM(fields, self->host_field);
}

/* A new command of the luisa command type, its slots set as LuisaCommand.__init__ sets
 * them: a new id, the enqueue time now (the trace clock), `fields`, `views` and `host`,
 * nothing sent. */
static PyObject *new_command(TracedUploadObject *self, PyObject *fields, PyObject *views,
                             PyObject *host)
{
    PyObject *id = PyIter_Next(self->ids);
    if (id == NULL) {
        if (!PyErr_Occurred())
            PyErr_SetString(PyExc_RuntimeError, "the command ids ran out");
        return NULL;
    }
    PyObject *enqueued = PyLong_FromLongLong(clock_now());
    PyObject *command = enqueued == NULL ? NULL : self->command_type->tp_alloc(self->command_type, 0);
    if (command == NULL) {
        Py_DECREF(id);
        Py_XDECREF(enqueued);
        return NULL;
    }
    PyObject *values[COMMAND_SLOTS] = {id, enqueued, fields, views, host, Py_None};
    for (int slot = 0; slot < COMMAND_SLOTS; slot++) {
        if (slot >= SLOT_FIELDS)
            Py_INCREF(values[slot]);
        *(PyObject **)((char *)command + self->slots[slot]) = values[slot];
    }
    /* nothing a command refers to refers back to it: the cycle collector need not visit it
     * (a loop's thousands of commands made its young collections cost a tenth of an upload) */
    PyObject_GC_UnTrack(command);
    return command;
}

/* The rest of a recorded upload, from the capture on (once the recorder was told, the
 * upload is done here, whatever holds). */
static PyObject *record_upload(TracedUploadObject *self, PyObject *recorder, PyObject *luisa_stream,
                               PyObject *stream, PyObject *resource, PyObject *host, PyObject *pair)
{
    PyObject *data = PyTuple_GET_ITEM(pair, 2), *memory = PyTuple_GET_ITEM(pair, 3);
    PyObject *call[3] = {recorder, host, data};
    PyObject *capture = PyObject_VectorcallMethod(str_upload_enqueued, call, 3, NULL);
    if (capture == NULL)
        return NULL;
    PyObject *fields = upload_fields(memory, host, capture);
    Py_DECREF(capture);
    if (fields == NULL)
        return NULL;
    PyObject *memory_id = NULL, *views = NULL, *unread = NULL, *waiting = NULL, *command = NULL,
             *pending = NULL, *result = NULL;
    if (memory != self->memory) {
        if ((memory_id = PyObject_GetAttr(memory, str_id)) == NULL ||
            (views = PyObject_GetAttr(memory, str_views)) == NULL)
            goto done;
        Py_INCREF(memory);
        Py_XSETREF(self->memory, memory);
        Py_XSETREF(self->memory_id, memory_id);
        Py_XSETREF(self->views, views);
    }
    memory_id = self->memory_id;
    views = self->views;
    Py_INCREF(memory_id);
    Py_INCREF(views);
    if ((unread = stream_slot(self, luisa_stream, SLOT_UNREAD)) == NULL)
        goto done;
    if (!PyDict_CheckExact(unread)) {
        PyErr_SetString(PyExc_TypeError, "a luisa stream's unread uploads are not a dict");
        goto done;
    }
    waiting = PyDict_GetItemWithError(unread, memory_id);
    if (waiting == NULL && PyErr_Occurred())
        goto done;
    Py_XINCREF(waiting);
    if (waiting != NULL) {
        /* (resource, [uploads]): another array's upload into the buffer waits for its readback */
        PyObject *uploads = PyTuple_CheckExact(waiting) && PyTuple_GET_SIZE(waiting) == 2
                                ? PyTuple_GET_ITEM(waiting, 1) : NULL;
        if (uploads == NULL || !PyList_CheckExact(uploads) || PyList_GET_SIZE(uploads) == 0) {
            PyErr_SetString(PyExc_TypeError, "a luisa stream's unread entry is malformed");
            goto done;
        }
        PyObject *last = PyList_GET_ITEM(uploads, PyList_GET_SIZE(uploads) - 1);
        PyObject *last_fields = Py_TYPE(last) != self->command_type ? NULL
                                : *(PyObject **)((char *)last + self->slots[SLOT_FIELDS]);
        if (last_fields == NULL) {
            PyErr_SetString(PyExc_TypeError, "a luisa stream's unread upload is no luisa command");
            goto done;
        }
        if (host_range_of(self, last_fields) != host_range_of(self, fields)) {
            PyObject *read = PyObject_CallMethodOneArg(self->state, str_read_back, luisa_stream);
            if (read == NULL)
                goto done;
            Py_DECREF(read);
            Py_CLEAR(waiting);
        }
    }
    PyObject *original_call[4] = {resource, host, Py_False, stream};
    PyObject *done_copy = PyObject_Vectorcall(self->original, original_call, 4, NULL);
    if (done_copy == NULL)
        goto done;
    Py_DECREF(done_copy);
    if ((command = new_command(self, fields, views, host)) == NULL ||
        (pending = stream_slot(self, luisa_stream, SLOT_PENDING)) == NULL ||
        PyList_Append(pending, command) < 0)
        goto done;
    if (self->shadow) {
        if (waiting != NULL) {
            if (PyList_Append(PyTuple_GET_ITEM(waiting, 1), command) < 0)
                goto done;
        } else {
            PyObject *uploads = PyList_New(1);
            if (uploads == NULL)
                goto done;
            Py_INCREF(command);
            PyList_SET_ITEM(uploads, 0, command);
            PyObject *entry = PyTuple_Pack(2, resource, uploads);
            Py_DECREF(uploads);
            /* read_back() and luisa's copy_from may have replaced the stream's dict */
            Py_SETREF(unread, entry == NULL ? NULL : stream_slot(self, luisa_stream, SLOT_UNREAD));
            int stored = unread == NULL ? -1 : PyObject_SetItem(unread, memory_id, entry);
            Py_XDECREF(entry);
            PyObject *streams = stored < 0 ? NULL : PyObject_GetAttr(self->state, str_unread);
            if (streams == NULL)
                goto done;
            stored = PySet_Add(streams, luisa_stream);
            Py_DECREF(streams);
            if (stored < 0)
                goto done;
        }
    }
    result = Py_None;
    Py_INCREF(result);
done:
    Py_DECREF(fields);
    Py_XDECREF(memory_id);
    Py_XDECREF(unread);
    Py_XDECREF(waiting);
    Py_XDECREF(views);
    Py_XDECREF(command);
    Py_XDECREF(pending);
    return result;
}

/* copy_from(self, arr, sync=False, stream=None) */
static PyObject *traced_upload_call(TracedUploadObject *self, PyObject *const *args, size_t nargsf,
                                    PyObject *kwnames)
{
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (kwnames != NULL || nargs < 2 || nargs > 4 || (nargs >= 3 && args[2] != Py_False) ||
        !PyArray_CheckExact(args[1]))
        return call_fallback(self, args, nargsf, kwnames);
    PyObject *resource = args[0], *host = args[1], *given = nargs == 4 ? args[3] : Py_None;
    PyObject *recorder = PyObject_CallNoArgs(self->active_recorder);
    if (recorder == NULL)
        return NULL;
    PyObject *recording = PyObject_GetAttr(recorder, str_recording);
    int is_recording = recording == NULL ? -1 : PyObject_IsTrue(recording);
    Py_XDECREF(recording);
    PyObject *stream = NULL, *luisa_stream = NULL, *pair = NULL, *result = NULL;
    if (is_recording < 0)
        goto done;
    if (!is_recording) {
        /* no readback waits, which a buffer's upload may have to add first: luisa's own */
        PyObject *waiting = PyObject_GetAttr(self->state, str_unread);
        if (waiting != NULL && PyAnySet_CheckExact(waiting) && PySet_GET_SIZE(waiting) == 0)
            result = PyObject_Vectorcall(self->original, args, nargsf, kwnames);
        else if (waiting != NULL)
            result = call_fallback(self, args, nargsf, kwnames);
        Py_XDECREF(waiting);
        goto done;
    }
    if ((stream = resolve_stream(self, given)) == NULL ||
        (luisa_stream = luisa_stream_of(self, stream)) == NULL ||
        (pair = upload_pair(self, luisa_stream, resource, host)) == NULL)
        goto done;
    if (pair == Py_None)
        result = call_fallback(self, args, nargsf, kwnames);
    else
        result = record_upload(self, recorder, luisa_stream, stream, resource, host, pair);
done:
    Py_DECREF(recorder);
    Py_XDECREF(stream);
    Py_XDECREF(luisa_stream);
    Py_XDECREF(pair);
    return result;
}

static PyObject *traced_upload_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *keywords[] = {"state",       "fallback",     "original",   "active_recorder",
                               "globalvars",  "ids",          "command_type", "stream_type",
                               "host_field",  "shadow",       NULL};
    PyObject *state, *fallback, *original, *active_recorder, *globalvars, *ids;
    PyTypeObject *command_type, *stream_type;
    Py_ssize_t host_field;
    int shadow;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOOOOO!O!np:TracedUpload", keywords, &state,
                                     &fallback, &original, &active_recorder, &globalvars, &ids,
                                     &PyType_Type, &command_type, &PyType_Type,
                                     &stream_type, &host_field, &shadow))
        return NULL;
    if (!PyIter_Check(ids)) {
        PyErr_SetString(PyExc_TypeError, "TracedUpload(): ids must be an iterator");
        return NULL;
    }
    TracedUploadObject *self = (TracedUploadObject *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    for (int slot = 0; slot < COMMAND_SLOTS; slot++)
        if ((self->slots[slot] = required_slot_offset(command_type, command_slot_names[slot])) < 0) {
            Py_DECREF(self);
            return NULL;
        }
    for (int slot = 0; slot < STREAM_SLOTS; slot++)
        if ((self->stream_slots[slot] = required_slot_offset(stream_type, stream_slot_names[slot])) < 0) {
            Py_DECREF(self);
            return NULL;
        }
    self->vectorcall = (vectorcallfunc)traced_upload_call;
    PyObject **fields[] = {&self->state,      &self->fallback, &self->original,
                           &self->active_recorder, &self->globalvars, &self->ids};
    PyObject *values[] = {state, fallback, original, active_recorder, globalvars, ids};
    for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
        Py_INCREF(values[i]);
        *fields[i] = values[i];
    }
    Py_INCREF(command_type);
    self->command_type = command_type;
    Py_INCREF(stream_type);
    self->stream_type = stream_type;
    self->host_field = host_field;
    self->shadow = shadow;
    return (PyObject *)self;
}

static int traced_upload_traverse(TracedUploadObject *self, visitproc visit, void *arg)
{
    Py_VISIT(self->state);
    Py_VISIT(self->fallback);
    Py_VISIT(self->original);
    Py_VISIT(self->active_recorder);
    Py_VISIT(self->globalvars);
    Py_VISIT(self->ids);
    Py_VISIT(self->command_type);
    Py_VISIT(self->stream_type);
    Py_VISIT(self->stream);
    Py_VISIT(self->luisa_stream);
    Py_VISIT(self->memory);
    Py_VISIT(self->memory_id);
    Py_VISIT(self->views);
    return 0;
}

static int traced_upload_clear(TracedUploadObject *self)
{
    Py_CLEAR(self->state);
    Py_CLEAR(self->fallback);
    Py_CLEAR(self->original);
    Py_CLEAR(self->active_recorder);
    Py_CLEAR(self->globalvars);
    Py_CLEAR(self->ids);
    Py_CLEAR(self->command_type);
    Py_CLEAR(self->stream_type);
    Py_CLEAR(self->stream);
    Py_CLEAR(self->luisa_stream);
    Py_CLEAR(self->memory);
    Py_CLEAR(self->memory_id);
    Py_CLEAR(self->views);
    return 0;
}

static void traced_upload_dealloc(TracedUploadObject *self)
{
    PyObject_GC_UnTrack(self);
    traced_upload_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* A method of luisa.Buffer: bound to an instance, as a function is. */
static PyObject *traced_upload_get(PyObject *self, PyObject *instance, PyObject *owner)
{
    if (instance == NULL || instance == Py_None) {
        Py_INCREF(self);
        return self;
    }
    return PyMethod_New(self, instance);
}

static PyMemberDef traced_upload_members[] = {
    {"fallback", T_OBJECT, offsetof(TracedUploadObject, fallback), READONLY,
     "the Python wrapper, which the calls not done here go to"},
    {"original", T_OBJECT, offsetof(TracedUploadObject, original), READONLY,
     "luisa-python's own copy_from"},
    {NULL},
};

static PyTypeObject TracedUploadType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "luisa_nb.runtime._luisa_uploads.TracedUpload",
    .tp_doc = PyDoc_STR("TracedUpload(state, fallback, original, active_recorder, globalvars, ids, "
                        "command_type, stream_type, host_field, shadow)\n--\n\n"
                        "luisa.Buffer.copy_from, traced: the common case of "
                        "Instrumentation.upload() in one call, every other call to `fallback`."),
    .tp_basicsize = sizeof(TracedUploadObject),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL |
                Py_TPFLAGS_METHOD_DESCRIPTOR,
    .tp_new = traced_upload_new,
    .tp_dealloc = (destructor)traced_upload_dealloc,
    .tp_traverse = (traverseproc)traced_upload_traverse,
    .tp_clear = (inquiry)traced_upload_clear,
    .tp_vectorcall_offset = offsetof(TracedUploadObject, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_descr_get = traced_upload_get,
    .tp_members = traced_upload_members,
};

PyDoc_STRVAR(record_host_accesses_doc,
             "record_host_accesses(recorder, commands, submitted, upload_kind, command_type)\n"
             "--\n\n"
             "Record the host read of each upload of `commands` (a finished list's, all of "
             "`command_type`; an upload's trace fields start with `upload_kind`) at "
             "`submitted`, the bytes it sent: one `recorder.host_reads` call for each run of "
             "uploads that sent the same bytes object. Returns the other commands, in order.");

/* recorder.host_reads(ids, 0, sent, submitted) of the uploads gathered in `ids`, which it
 * empties; 0 where there are none, -1 with an error. */
static int flush_reads(PyObject *host_reads, PyObject *ids, PyObject *sent, PyObject *submitted,
                       PyObject *zero)
{
    if (PyList_GET_SIZE(ids) == 0)
        return 0;
    PyObject *call[4] = {ids, zero, sent, submitted};
    PyObject *read = PyObject_Vectorcall(host_reads, call, 4, NULL);
    if (read == NULL)
        return -1;
    Py_DECREF(read);
    return PyList_SetSlice(ids, 0, PyList_GET_SIZE(ids), NULL);
}

static PyObject *record_host_accesses(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5) {
        PyErr_Format(PyExc_TypeError, "record_host_accesses() takes 5 arguments, not %zd", nargs);
        return NULL;
    }
    PyObject *recorder = args[0], *submitted = args[2], *upload_kind = args[3];
    if (!PyList_CheckExact(args[1]) || !PyType_Check(args[4])) {
        PyErr_SetString(PyExc_TypeError, "record_host_accesses(): commands must be a list of "
                                         "commands of the given type");
        return NULL;
    }
    PyTypeObject *command_type = (PyTypeObject *)args[4];
    Py_ssize_t offsets[3];
    const char *names[3] = {"id", "fields", "sent"};
    for (int i = 0; i < 3; i++)
        if ((offsets[i] = required_slot_offset(command_type, names[i])) < 0)
            return NULL;
    /* a copy: host_reads may run Python code (a capture), which may change the list */
    PyObject *commands = PyList_GetSlice(args[1], 0, PyList_GET_SIZE(args[1]));
    PyObject *others = PyList_New(0), *ids = PyList_New(0), *zero = PyLong_FromLong(0);
    PyObject *host_reads = NULL, *sent_by_run = NULL; /* the bytes the gathered uploads sent */
    if (commands == NULL || others == NULL || ids == NULL || zero == NULL ||
        (host_reads = PyObject_GetAttr(recorder, str_host_reads)) == NULL)
        goto failed;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(commands); i++) {
        PyObject *command = PyList_GET_ITEM(commands, i);
        if (Py_TYPE(command) != command_type) {
            PyErr_SetString(PyExc_TypeError, "record_host_accesses(): a command of another type");
            goto failed;
        }
        PyObject *id = *(PyObject **)((char *)command + offsets[0]);
        PyObject *fields = *(PyObject **)((char *)command + offsets[1]);
        PyObject *sent = *(PyObject **)((char *)command + offsets[2]);
        if (id == NULL || fields == NULL || !PyTuple_Check(fields) || PyTuple_GET_SIZE(fields) == 0) {
            PyErr_SetString(PyExc_TypeError, "record_host_accesses(): a command without fields");
            goto failed;
        }
        if (PyTuple_GET_ITEM(fields, 0) != upload_kind) {
            if (PyList_Append(others, command) < 0)
                goto failed;
            continue;
        }
        if (sent == NULL)
            sent = Py_None; /* what host_reads rejects, as host_read would */
        if (sent != sent_by_run) {
            if (flush_reads(host_reads, ids, sent_by_run, submitted, zero) < 0)
                goto failed;
            Py_INCREF(sent);
            Py_XSETREF(sent_by_run, sent);
        }
        if (PyList_Append(ids, id) < 0)
            goto failed;
    }
    if (flush_reads(host_reads, ids, sent_by_run, submitted, zero) < 0)
        goto failed;
    Py_DECREF(commands);
    Py_DECREF(ids);
    Py_DECREF(zero);
    Py_DECREF(host_reads);
    Py_XDECREF(sent_by_run);
    return others;
failed:
    Py_XDECREF(commands);
    Py_XDECREF(others);
    Py_XDECREF(ids);
    Py_XDECREF(zero);
    Py_XDECREF(host_reads);
    Py_XDECREF(sent_by_run);
    return NULL;
}

static PyMethodDef methods[] = {
    {"record_host_accesses", (PyCFunction)(void (*)(void))record_host_accesses, METH_FASTCALL,
     record_host_accesses_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "luisa_nb.runtime._luisa_uploads",
    .m_doc = "Traced uploads into real luisa-python buffers, in C (see Instrumentation.upload "
             "in real_luisa.py).",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC PyInit__luisa_uploads(void)
{
    struct {
        PyObject **name;
        const char *text;
    } names[] = {
        {&str_recording, "recording"},     {&str_vars, "vars"},
        {&str_stream, "stream"},           {&str_stream_of, "stream_of"},
        {&str_upload_memo, "upload_memo"},
        {&str_transfer_fields, "transfer_fields"}, {&str_unread, "unread"},
        {&str_read_back, "read_back"},
        {&str_upload_enqueued, "upload_enqueued"}, {&str_host_reads, "host_reads"},
        {&str_id, "id"},                   {&str_views, "views"},
        {&str_memories, "memories"},
    };
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if ((*names[i].name = PyUnicode_InternFromString(names[i].text)) == NULL)
            return NULL;
    import_array1(NULL);
    if (clock_init() < 0 || PyType_Ready(&TracedUploadType) < 0)
        return NULL;
    PyObject *created = PyModule_Create(&module);
    if (created == NULL)
        return NULL;
    Py_INCREF(&TracedUploadType);
    if (PyModule_AddObject(created, "TracedUpload", (PyObject *)&TracedUploadType) < 0) {
        Py_DECREF(&TracedUploadType);
        Py_DECREF(created);
        return NULL;
    }
    return created;
}
