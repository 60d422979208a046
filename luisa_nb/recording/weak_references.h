/* Weak references as the recording layer's and the runtime's C code check them: one
 * definition, included by both extensions (runtime code may include recording code; the
 * other way round it may not). */
#ifndef LUISA_NB_WEAK_REFERENCES_H
#define LUISA_NB_WEAK_REFERENCES_H

#include <Python.h>

/* Whether `ref` is a weak reference to `object` (alive); -1: an error. */
static inline int refers_to(PyObject *ref, PyObject *object)
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

/* A weak reference to `object` without a callback (a new reference), which the garbage
 * collector does not track: it holds no strong reference a cycle could run through. A
 * trace keeps one per new host array, and tracked ones made the collector's passes over a
 * long trace a sixth of the cost of tracing a notebook loop. */
static inline PyObject *untracked_reference(PyObject *object)
{
    PyObject *reference = PyWeakref_NewRef(object, NULL);
    if (reference != NULL)
        PyObject_GC_UnTrack(reference);
    return reference;
}

/* `object` (a new reference, or NULL), no longer tracked by the garbage collector: for a
 * tuple the caller made, through which no cycle can run (its items hold no reference back
 * to it). The collector itself stops tracking a tuple only once no item may be tracked,
 * which a weak reference or a slotted object never stops being. */
static inline PyObject *untracked(PyObject *object)
{
    if (object != NULL)
        PyObject_GC_UnTrack(object);
    return object;
}

#endif
