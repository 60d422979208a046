/* Objects of slotted classes (dataclasses with slots=True) made in C: one definition,
 * included by the recording layer's and the runtime's extensions. Setting a slot through
 * its name looks the name up in the class each time, which cost a third of making a
 * record field; the slots' offsets are looked up once instead. */
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

/* Fill `layout` for `type` (a class) and its slots `names`; -1 with a TypeError where one
 * is no slot of it. */
static inline int slot_layout(SlotLayout *layout, PyObject *type, const char *const *names, int count)
{
    if (!PyType_Check(type) || count > MOST_SLOTS) {
        PyErr_SetString(PyExc_TypeError, "slot_layout() takes a class of at most 8 slots");
        return -1;
    }
    for (int i = 0; i < count; i++) {
        PyObject *descriptor = PyObject_GetAttrString(type, names[i]);
        if (descriptor == NULL)
            return -1;
        int slot = Py_IS_TYPE(descriptor, &PyMemberDescr_Type) &&
                   ((PyMemberDescrObject *)descriptor)->d_member->type == T_OBJECT_EX;
        if (slot)
            layout->offsets[i] = ((PyMemberDescrObject *)descriptor)->d_member->offset;
        Py_DECREF(descriptor);
        if (!slot) {
            PyErr_Format(PyExc_TypeError, "%s.%s is not a slot", ((PyTypeObject *)type)->tp_name,
                         names[i]);
            return -1;
        }
    }
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
