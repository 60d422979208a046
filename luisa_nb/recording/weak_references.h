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

#endif
