/* The runtime's report of a submission to a recording trace, in C: report_submitted()
 * of luisa_nb/runtime/commands.py (used where this module was not built), which gathers
 * each command's id, enqueue time and trace fields and hands them to the recorder's
 * `submitted` hook. This is runtime code: it reads the runtime's commands by their slot
 * layout, and does the memo checks of the fast paths of UploadCommand, DownloadCommand
 * and DispatchCommand.trace_fields() (a Python call each cost as much as the rest of a
 * traced command). Where a transfer's memo was made for another array (a loop uploading
 * a new array each step), its fields are made here from the memo's and the new array's
 * host range. Otherwise, and for every other command, its trace_fields() works them out;
 * a command of the type named with use_fields_slot_type() keeps its fields in its slot
 * `fields`, which is read instead (real luisa-python's commands). start_run() gathers
 * the ids of a run for the recorder's `run_timer` and calls it. The two paths are tested against each other.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

#include "array_memos.h"
#include "../recording/slot_objects.h"

static PyObject *str_submitted, *str_submitted_one, *str_trace_fields, *str_run_timer;

/* The command types whose memos are read here (use_command_types), strong references. */
static PyTypeObject *upload_type, *download_type, *dispatch_type;
/* A command type that keeps its trace fields in a slot `fields` (use_fields_slot_type). */
static PyTypeObject *fields_slot_type;
static Py_ssize_t capture_field; /* the index of the enqueue capture in trace fields */
static PyObject *host_range_function; /* runtime.host.host_range, a strong reference */

/* An attribute read where it is a slot (commands, views, dispatch arguments and their
 * memo have __slots__) at the slot's offset: looking its name up costs about as much as
 * the rest of a report. The offsets are kept for the last few types seen (a list mixes
 * commands of several types); a class's slots stay as the class was made. */
#define ATTRIBUTE_TYPES 4
typedef struct {
    const char *text;
    PyObject *name; /* interned */
    PyTypeObject *types[ATTRIBUTE_TYPES]; /* strong references, or NULL */
    Py_ssize_t offsets[ATTRIBUTE_TYPES];  /* of the slot in objects of `types[i]`; 0: none */
    int replace;                          /* the entry a type not kept replaces */
} Attribute;

static Attribute attribute_id = {"id"}, attribute_enqueued = {"enqueued"},
                 attribute_target = {"target"}, attribute_source = {"source"},
                 attribute_host = {"host"}, attribute_enqueue_capture = {"enqueue_capture"},
                 attribute_upload_fields = {"upload_fields"},
                 attribute_download_fields = {"download_fields"},
                 attribute_arguments = {"arguments"}, attribute_memo = {"memo"},
                 attribute_described = {"described"}, attribute_dims = {"dims"},
                 attribute_name = {"name"}, attribute_fields = {"fields"};

static Attribute *attributes[] = {
    &attribute_id,        &attribute_enqueued,        &attribute_target,
    &attribute_source,    &attribute_host,            &attribute_enqueue_capture,
    &attribute_upload_fields, &attribute_download_fields, &attribute_arguments,
    &attribute_memo,      &attribute_described,       &attribute_dims,
    &attribute_name,      &attribute_fields,
};

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

/* The shape of `array`, a new tuple. */
static PyObject *shape_of(PyArrayObject *array)
{
    PyObject *shape = PyTuple_New(PyArray_NDIM(array));
    for (int i = 0; shape != NULL && i < PyArray_NDIM(array); i++) {
        PyObject *extent = PyLong_FromSsize_t(PyArray_DIMS(array)[i]);
        if (extent == NULL)
            Py_CLEAR(shape);
        else
            PyTuple_SET_ITEM(shape, i, extent);
    }
    return shape;
}

/* array_memo() of runtime/host.py in C: (a weak reference to `host`, its shape `shape`,
 * its dtype object, `value`), a new tuple that the garbage collector does not track (no
 * cycle runs through it, see untracked_reference). */
static PyObject *new_array_memo(PyObject *host, PyObject *shape, PyObject *value)
{
    PyObject *reference = untracked_reference(host);
    PyObject *memo = reference == NULL ? NULL
                                       : PyTuple_Pack(4, reference, shape,
                                                      (PyObject *)PyArray_DESCR((PyArrayObject *)host), value);
    Py_XDECREF(reference);
    return untracked(memo);
}

/* The trace fields of a transfer of `host` (an array) with enqueue capture `capture`, made
 * from `known`, those of the view's previous transfer (another array): the same kind, label
 * and device ranges (the view's own, made once per access), this array's host range and
 * this capture, as trace_fields() makes them. The view's memo (`memo_name`) of `view_object`
 * is set to them, as array_memo() makes it. NULL without an error where `known` is not
 * such fields (trace_fields() then works them out); a new reference. */
static PyObject *new_transfer_fields(PyObject *view_object, Attribute *memo_name, PyObject *known,
                                     PyObject *host, PyObject *capture)
{
    if (host_range_function == NULL || !PyTuple_CheckExact(known) ||
        PyTuple_GET_SIZE(known) != capture_field + 1 || capture_field != 4 || !PyArray_Check(host))
        return NULL;
    PyObject *range = PyObject_CallOneArg(host_range_function, host);
    if (range == NULL)
        return NULL;
    PyObject *fields = untracked(PyTuple_Pack(5, PyTuple_GET_ITEM(known, 0), PyTuple_GET_ITEM(known, 1),
                                              PyTuple_GET_ITEM(known, 2), range, capture));
    Py_DECREF(range);
    PyObject *shape = fields == NULL ? NULL : shape_of((PyArrayObject *)host);
    PyObject *memo = shape == NULL ? NULL : new_array_memo(host, shape, fields);
    if (memo == NULL || PyObject_SetAttr(view_object, memo_name->name, memo) < 0)
        Py_CLEAR(fields);
    Py_XDECREF(memo);
    Py_XDECREF(shape);
    return fields;
}

/* The trace fields of a transfer (`command`) whose view (its attribute `view`) keeps its
 * latest transfer's in `memo_name`: that memo's if it holds (an upload's: with the same
 * capture), else made from it for a new array (new_transfer_fields); NULL without an
 * error where neither is so. */
static PyObject *transfer_fields(PyObject *command, Attribute *view, Attribute *memo_name,
                                 int upload)
{
    PyObject *view_object = read_attribute(view, command);
    if (view_object == NULL)
        return NULL;
    PyObject *memo = read_attribute(memo_name, view_object), *fields = NULL;
    PyObject *host = memo == NULL ? NULL : read_attribute(&attribute_host, command);
    PyObject *capture = Py_None;
    Py_INCREF(capture);
    if (upload && host != NULL)
        Py_SETREF(capture, read_attribute(&attribute_enqueue_capture, command));
    int holds = host == NULL || capture == NULL ? -1 : memo_made_for(memo, 4, host);
    if (holds >= 0) {
        PyObject *known = PyTuple_CheckExact(memo) && PyTuple_GET_SIZE(memo) == 4
                              ? PyTuple_GET_ITEM(memo, 3) : NULL;
        if (holds == 1 && PyTuple_CheckExact(known) && PyTuple_GET_SIZE(known) > capture_field &&
            (!upload || PyTuple_GET_ITEM(known, capture_field) == capture)) {
            fields = known;
            Py_INCREF(fields);
        } else if (holds == 0 && known != NULL) {
            fields = new_transfer_fields(view_object, memo_name, known, host, capture);
        }
    }
    Py_XDECREF(capture);
    Py_XDECREF(host);
    Py_XDECREF(memo);
    Py_DECREF(view_object);
    return fields;
}

/* a == b for two dispatch sizes, tuples of small ints, compared item by item: comparing the
 * two tuples themselves costs a tenth of a traced dispatch's report. */
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

/* The trace fields of a dispatch (`command`) if its arguments' memo holds them for its
 * size and kernel name; NULL without an error where it does not. */
static PyObject *dispatch_fields(PyObject *command)
{
    PyObject *memo = attribute_of_attribute(command, &attribute_arguments, &attribute_memo);
    if (memo == NULL)
        return NULL;
    PyObject *known = read_attribute(&attribute_described, memo), *fields = NULL;
    Py_DECREF(memo);
    if (known == NULL)
        return NULL;
    if (PyTuple_CheckExact(known) && PyTuple_GET_SIZE(known) == 3) {
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

/* `command`'s trace fields (a new reference): from its memo where that holds, else from
 * its trace_fields(). */
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
    else if (type == fields_slot_type)
        return read_attribute(&attribute_fields, command);
    if (fields != NULL || PyErr_Occurred())
        return fields;
    return PyObject_CallMethodNoArgs(command, str_trace_fields);
}

/* The recorder's submitted_one() of `command`, the one command submitted to `stream`
 * (whose id is `stream_id`): the common case, a synchronous call's submission, without
 * the tuples of submitted(). */
static PyObject *report_one(PyObject *recorder, PyObject *stream_id, PyObject *stream,
                            PyObject *command)
{
    Py_INCREF(command);
    PyObject *id = read_attribute(&attribute_id, command), *result = NULL;
    PyObject *time = id == NULL ? NULL : read_attribute(&attribute_enqueued, command);
    PyObject *described = time == NULL ? NULL : trace_fields_of(command);
    if (described != NULL) {
        PyObject *call[7] = {recorder, stream_id, id, time, described, stream, command};
        result = PyObject_VectorcallMethod(str_submitted_one, call, 7, NULL);
    }
    Py_XDECREF(described);
    Py_XDECREF(time);
    Py_XDECREF(id);
    Py_DECREF(command);
    return result;
}

PyDoc_STRVAR(report_submitted_doc,
             "report_submitted(recorder, stream, commands)\n--\n\n"
             "Tell `recorder`, which is recording, that `commands` (a sequence) were "
             "submitted to `stream`: calls its `submitted` hook with the stream's id and each "
             "command's id, enqueue time and trace fields (`submitted_one` for one command).");

static PyObject *report_submitted(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3) {
        PyErr_Format(PyExc_TypeError, "report_submitted(recorder, stream, commands) takes 3 "
                                      "arguments, not %zd", nargs);
        return NULL;
    }
    PyObject *recorder = args[0], *stream = args[1];
    PyObject *commands = PySequence_Fast(args[2], "report_submitted(): commands must be a sequence");
    if (commands == NULL)
        return NULL;
    Py_ssize_t count = PySequence_Fast_GET_SIZE(commands);
    PyObject *stream_id = read_attribute(&attribute_id, stream), *result = NULL;
    if (count == 1 && stream_id != NULL) {
        result = report_one(recorder, stream_id, stream, PySequence_Fast_GET_ITEM(commands, 0));
        Py_DECREF(stream_id);
        Py_DECREF(commands);
        return result;
    }
    PyObject *ids = PyTuple_New(count), *enqueued = PyTuple_New(count), *fields = PyTuple_New(count);
    if (stream_id == NULL || ids == NULL || enqueued == NULL || fields == NULL)
        goto done;
    for (Py_ssize_t i = 0; i < count; i++) {
        /* a trace_fields() call may change a list of commands */
        if (i >= PySequence_Fast_GET_SIZE(commands)) {
            PyErr_SetString(PyExc_RuntimeError, "report_submitted(): the commands changed");
            goto done;
        }
        PyObject *command = PySequence_Fast_GET_ITEM(commands, i);
        Py_INCREF(command);
        PyObject *id = read_attribute(&attribute_id, command);
        PyObject *time = id == NULL ? NULL : read_attribute(&attribute_enqueued, command);
        PyObject *described = time == NULL ? NULL : trace_fields_of(command);
        Py_DECREF(command);
        if (described == NULL) {
            Py_XDECREF(id);
            Py_XDECREF(time);
            goto done;
        }
        PyTuple_SET_ITEM(ids, i, id);
        PyTuple_SET_ITEM(enqueued, i, time);
        PyTuple_SET_ITEM(fields, i, described);
    }
    PyObject *call[7] = {recorder, stream_id, ids, enqueued, fields, stream, args[2]};
    result = PyObject_VectorcallMethod(str_submitted, call, 7, NULL);
done:
    Py_DECREF(commands);
    Py_XDECREF(stream_id);
    Py_XDECREF(ids);
    Py_XDECREF(enqueued);
    Py_XDECREF(fields);
    return result;
}

PyDoc_STRVAR(start_run_doc,
             "start_run(recorder, commands)\n--\n\n"
             "`recorder.run_timer(ids)` with the `id` of each of `commands` (a sequence), "
             "in order: the timer of a run of those commands.");

static PyObject *start_run(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "start_run(recorder, commands) takes 2 arguments, not %zd",
                     nargs);
        return NULL;
    }
    PyObject *commands = PySequence_Fast(args[1], "start_run(): commands must be a sequence");
    if (commands == NULL)
        return NULL;
    Py_ssize_t count = PySequence_Fast_GET_SIZE(commands);
    PyObject *ids = PyTuple_New(count), *timer = NULL;
    for (Py_ssize_t i = 0; ids != NULL && i < count; i++) {
        /* reading an attribute that is no slot may run Python code, which may change a list */
        PyObject *id = NULL;
        if (i >= PySequence_Fast_GET_SIZE(commands)) {
            PyErr_SetString(PyExc_RuntimeError, "start_run(): the commands changed");
        } else {
            PyObject *command = PySequence_Fast_GET_ITEM(commands, i);
            Py_INCREF(command);
            id = read_attribute(&attribute_id, command);
            Py_DECREF(command);
        }
        if (id == NULL)
            Py_CLEAR(ids);
        else
            PyTuple_SET_ITEM(ids, i, id);
    }
    Py_DECREF(commands);
    if (ids != NULL) {
        PyObject *call[2] = {args[0], ids};
        timer = PyObject_VectorcallMethod(str_run_timer, call, 2, NULL);
        Py_DECREF(ids);
    }
    return timer;
}

/* -- host ranges -------------------------------------------------------------------------- */

/* What host_range() of runtime/host.py keeps (use_host_ranges): its memo table (id(array) ->
 * (weakref, shape, dtype, HostRange)), the HostRange type and records.value_layout. */
static PyObject *host_ranges, *value_layout;
static SlotLayout host_range_layout;
static Py_ssize_t sweep_at = 64; /* the table's size at which freed arrays' memos are dropped */

/* The dtype string of the last dtype seen (`dtype.str` makes a new string each time, a
 * third of the cost of a range): a loop's new arrays mostly share one dtype. */
static PyObject *last_descr, *last_descr_text;

static PyObject *dtype_text(PyArray_Descr *descr)
{
    if ((PyObject *)descr != last_descr) {
        PyObject *text = PyObject_GetAttrString((PyObject *)descr, "str");
        if (text == NULL)
            return NULL;
        Py_INCREF(descr);
        Py_XSETREF(last_descr, (PyObject *)descr);
        Py_XSETREF(last_descr_text, text);
    }
    Py_INCREF(last_descr_text);
    return last_descr_text;
}

/* Drop the memos of freed arrays, and sweep again when the live ones have doubled. */
static int drop_freed_host_ranges(void)
{
    PyObject *items = PyDict_Items(host_ranges);
    if (items == NULL)
        return -1;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(items); i++) {
        PyObject *key = PyTuple_GET_ITEM(PyList_GET_ITEM(items, i), 0);
        PyObject *memo = PyTuple_GET_ITEM(PyList_GET_ITEM(items, i), 1);
        if (!PyTuple_CheckExact(memo) || PyTuple_GET_SIZE(memo) != 4 ||
            !PyWeakref_Check(PyTuple_GET_ITEM(memo, 0)))
            continue;
#if PY_VERSION_HEX >= 0x030D0000
        PyObject *referent;
        if (PyWeakref_GetRef(PyTuple_GET_ITEM(memo, 0), &referent) < 0) {
            Py_DECREF(items);
            return -1;
        }
        Py_XDECREF(referent);
        if (referent != NULL)
            continue;
#else
        if (PyWeakref_GET_OBJECT(PyTuple_GET_ITEM(memo, 0)) != Py_None)
            continue;
#endif
        if (PyDict_GetItemWithError(host_ranges, key) == memo && PyDict_DelItem(host_ranges, key) < 0) {
            Py_DECREF(items);
            return -1;
        }
    }
    Py_DECREF(items);
    Py_ssize_t live = PyDict_GET_SIZE(host_ranges);
    sweep_at = 2 * live > 64 ? 2 * live : 64;
    return 0;
}

/* A new HostRange(address, nbytes, dtype, shape), not tracked by the garbage collector
 * (see new_slot_object). */
static PyObject *new_host_range(PyArrayObject *array, PyObject *dtype, PyObject *shape)
{
    PyObject *address = PyLong_FromVoidPtr(PyArray_DATA(array));
    PyObject *nbytes = address == NULL ? NULL : PyLong_FromSsize_t(PyArray_NBYTES(array));
    PyObject *range = NULL;
    if (nbytes != NULL) {
        PyObject *values[5] = {address, nbytes, dtype, shape, Py_None};
        range = new_slot_object(&host_range_layout, values);
    }
    Py_XDECREF(address);
    Py_XDECREF(nbytes);
    return range;
}

/* The HostRange of a new array: a plain dtype as it is, others as value_layout() gives
 * them. */
static PyObject *made_host_range(PyArrayObject *array, PyObject *shape)
{
    PyArray_Descr *descr = PyArray_DESCR(array);
    if (!PyDataType_HASFIELDS(descr) && !PyDataType_HASSUBARRAY(descr)) {
        PyObject *text = dtype_text(descr);
        PyObject *range = text == NULL ? NULL : new_host_range(array, text, shape);
        Py_XDECREF(text);
        return range;
    }
    PyObject *layout = PyObject_CallFunctionObjArgs(value_layout, (PyObject *)descr, shape, NULL);
    PyObject *range = NULL;
    if (layout != NULL && PyTuple_CheckExact(layout) && PyTuple_GET_SIZE(layout) == 2)
        range = new_host_range(array, PyTuple_GET_ITEM(layout, 0), PyTuple_GET_ITEM(layout, 1));
    else if (layout != NULL)
        PyErr_SetString(PyExc_TypeError, "value_layout() gave no (dtype, shape) pair");
    Py_XDECREF(layout);
    return range;
}

PyDoc_STRVAR(host_range_doc,
             "host_range(array)\n--\n\n"
             "The address range `array` occupies, as a trace record field: "
             "runtime.host.python_host_range in C, with the same memo table.");

static PyObject *host_range(PyObject *module, PyObject *host)
{
    if (host_ranges == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "host_range(): use_host_ranges() was not called");
        return NULL;
    }
    if (!PyArray_Check(host)) {
        PyErr_Format(PyExc_TypeError, "host_range() takes a numpy array, not %.100s",
                     Py_TYPE(host)->tp_name);
        return NULL;
    }
    PyArrayObject *array = (PyArrayObject *)host;
    PyObject *key = PyLong_FromVoidPtr(host);
    if (key == NULL)
        return NULL;
    PyObject *memo = PyDict_GetItemWithError(host_ranges, key), *range = NULL;
    int made = memo == NULL ? (PyErr_Occurred() ? -1 : 0) : memo_made_for(memo, 4, host);
    if (made == 1) {
        range = Py_NewRef(PyTuple_GET_ITEM(memo, 3));
        goto done;
    }
    if (made < 0)
        goto done;
    PyObject *shape = shape_of(array), *made_memo = NULL;
    range = shape == NULL ? NULL : made_host_range(array, shape);
    if (range != NULL && PyDict_GET_SIZE(host_ranges) >= sweep_at && drop_freed_host_ranges() < 0)
        Py_CLEAR(range);
    if (range != NULL && ((made_memo = new_array_memo(host, shape, range)) == NULL ||
                          PyDict_SetItem(host_ranges, key, made_memo) < 0))
        Py_CLEAR(range);
    Py_XDECREF(made_memo);
    Py_XDECREF(shape);
done:
    Py_DECREF(key);
    return range;
}

PyDoc_STRVAR(use_host_ranges_doc,
             "use_host_ranges(table, host_range_type, value_layout)\n--\n\n"
             "The memo table host_range() keeps ranges in, the HostRange type it makes and "
             "the function giving a record dtype's layout.");

static PyObject *use_host_ranges(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 3 || !PyDict_CheckExact(args[0]) || !PyType_Check(args[1]) || !PyCallable_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "use_host_ranges(table, host_range_type, value_layout) "
                                         "takes a dict, a type and a function");
        return NULL;
    }
    static const char *const slots[5] = {"address", "nbytes", "dtype", "shape", "name"};
    if (slot_layout(&host_range_layout, args[1], slots, 5) < 0)
        return NULL;
    Py_XSETREF(host_ranges, Py_NewRef(args[0]));
    Py_XSETREF(value_layout, Py_NewRef(args[2]));
    Py_RETURN_NONE;
}

PyDoc_STRVAR(use_command_types_doc,
             "use_command_types(upload, download, dispatch, capture_field, host_range)\n--\n\n"
             "The command types whose memos report_submitted reads, the index of the "
             "enqueue capture in trace fields, and the function giving a host array's range.");

static PyObject *use_command_types(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    if (nargs != 5) {
        PyErr_Format(PyExc_TypeError, "use_command_types(upload, download, dispatch, "
                                      "capture_field, host_range) takes 5 arguments, not %zd",
                     nargs);
        return NULL;
    }
    if (!PyCallable_Check(args[4])) {
        PyErr_SetString(PyExc_TypeError, "use_command_types(): host_range is not callable");
        return NULL;
    }
    for (int i = 0; i < 3; i++)
        if (!PyType_Check(args[i])) {
            PyErr_SetString(PyExc_TypeError, "use_command_types(): a command type is not a type");
            return NULL;
        }
    Py_ssize_t index = PyLong_AsSsize_t(args[3]);
    if (index == -1 && PyErr_Occurred())
        return NULL;
    capture_field = index;
    Py_INCREF(args[4]);
    Py_XSETREF(host_range_function, args[4]);
    PyTypeObject **types[3] = {&upload_type, &download_type, &dispatch_type};
    for (int i = 0; i < 3; i++) {
        Py_INCREF(args[i]);
        Py_XSETREF(*types[i], (PyTypeObject *)args[i]);
    }
    Py_RETURN_NONE;
}

PyDoc_STRVAR(use_fields_slot_type_doc,
             "use_fields_slot_type(command_type)\n--\n\n"
             "A command type whose objects keep their trace fields, as trace_fields() gives "
             "them, in their attribute `fields`, which report_submitted reads.");

static PyObject *use_fields_slot_type(PyObject *module, PyObject *command_type)
{
    if (!PyType_Check(command_type)) {
        PyErr_SetString(PyExc_TypeError, "use_fields_slot_type(): the command type is not a type");
        return NULL;
    }
    Py_INCREF(command_type);
    Py_XSETREF(fields_slot_type, (PyTypeObject *)command_type);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"report_submitted", (PyCFunction)(void (*)(void))report_submitted, METH_FASTCALL,
     report_submitted_doc},
    {"start_run", (PyCFunction)(void (*)(void))start_run, METH_FASTCALL, start_run_doc},
    {"use_command_types", (PyCFunction)(void (*)(void))use_command_types, METH_FASTCALL,
     use_command_types_doc},
    {"use_fields_slot_type", use_fields_slot_type, METH_O, use_fields_slot_type_doc},
    {"host_range", host_range, METH_O, host_range_doc},
    {"use_host_ranges", (PyCFunction)(void (*)(void))use_host_ranges, METH_FASTCALL,
     use_host_ranges_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "luisa_nb.runtime._submission_fields",
    .m_doc = "The runtime's report of a submission to a recording trace, in C (see "
             "report_submitted in commands.py).",
    .m_size = -1,
    .m_methods = methods,
};

PyMODINIT_FUNC PyInit__submission_fields(void)
{
    if ((str_submitted = PyUnicode_InternFromString("submitted")) == NULL ||
        (str_submitted_one = PyUnicode_InternFromString("submitted_one")) == NULL ||
        (str_trace_fields = PyUnicode_InternFromString("trace_fields")) == NULL ||
        (str_run_timer = PyUnicode_InternFromString("run_timer")) == NULL)
        return NULL;
    for (size_t i = 0; i < sizeof(attributes) / sizeof(attributes[0]); i++)
        if ((attributes[i]->name = PyUnicode_InternFromString(attributes[i]->text)) == NULL)
            return NULL;
    import_array1(NULL);
    return PyModule_Create(&module);
}
