/* Objects of slotted classes (dataclasses with slots=True) made in C: one definition,
 * included by the recording layer's and the runtime's extensions. Setting a slot through
 * its name looks the name up in the class each time, which cost a third of making a
 * record field; the slots' offsets are looked up once instead (the runtime's extensions read
 * slots at their offsets the same way). */
#ifndef LUISA_NB_SLOT_OBJECTS_H
#define LUISA_NB_SLOT_OBJECTS_H

#include <Python.h>
#include <structmember.h>

#define MOST_SLOTS 8

/* How to make objects of a slotted class: its type and the offsets of the slots, in the
 * order the values are given. */
typedef struct {
    PyTypeObject *type; /* a strong reference, or NULL before slot_layout */
    int count;
    Py_ssize_t offsets[MOST_SLOTS];
} SlotLayout;

/* The offset of `type`'s slot named `name` in `*offset`, or 0 where the name is no slot of
 * it (an instance's own attribute, or none); -1 on an error. */
static inline int slot_offset(PyTypeObject *type, PyObject *name, Py_ssize_t *offset)
{
    *offset = 0;
    PyObject *descriptor = PyObject_GetAttr((PyObject *)type, name);
    if (descriptor == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError))
            return -1;
        PyErr_Clear();
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

/* The offset of `type`'s slot named `name`; -1 with a TypeError where it is no slot of it. */
static inline Py_ssize_t required_slot_offset(PyTypeObject *type, const char *name)
{
    PyObject *text = PyUnicode_FromString(name);
    Py_ssize_t offset = 0;
    int failed = text == NULL || slot_offset(type, text, &offset) < 0;
    Py_XDECREF(text);
    if (failed)
        return -1;
    if (offset == 0) {
        PyErr_Format(PyExc_TypeError, "%s.%s is not a slot", type->tp_name, name);
        return -1;
    }
    return offset;
}

/* Fill `layout` for `type` (a class) and its slots `names`; -1 with a TypeError where one
 * is no slot of it. */
static inline int slot_layout(SlotLayout *layout, PyObject *type, const char *const *names, int count)
{
    if (!PyType_Check(type) || count > MOST_SLOTS) {
        PyErr_SetString(PyExc_TypeError, "slot_layout() takes a class of at most 8 slots");
        return -1;
    }
    for (int i = 0; i < count; i++)
        if ((layout->offsets[i] = required_slot_offset((PyTypeObject *)type, names[i])) < 0)
            return -1;
    Py_INCREF(type);
    Py_XSETREF(layout->type, (PyTypeObject *)type);
    layout->count = count;
    return 0;
}

/* A new object of `layout`'s class with its slots set to `values` (each is given a new
 * reference), as its __init__ would set them but without running it; not tracked by the
 * garbage collector: the callers' values (ints, strings, tuples of ints, objects of such
 * classes) hold nothing a cycle could run through. */
static inline PyObject *new_slot_object(const SlotLayout *layout, PyObject *const *values)
{
    PyObject *object = layout->type->tp_alloc(layout->type, 0);
    if (object == NULL)
        return NULL;
    for (int i = 0; i < layout->count; i++)
        *(PyObject **)((char *)object + layout->offsets[i]) = Py_NewRef(values[i]);
    PyObject_GC_UnTrack(object);
    return object;
}

#endif
