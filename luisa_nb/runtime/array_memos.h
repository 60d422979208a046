/* The check of a transfer memo, as the runtime's C code makes it: one definition, included
 * by both runtime extensions. A memo is a tuple (weakref to the host array, its shape, its
 * dtype object, ...) that a buffer keeps of its latest upload or download (runtime/host.py,
 * array_memo; real_luisa.py, LuisaMemory.transfer_fields). */
#ifndef LUISA_NB_ARRAY_MEMOS_H
#define LUISA_NB_ARRAY_MEMOS_H

#include <Python.h>

#include "../recording/weak_references.h"

/* Whether `memo`, a tuple of `size` items, was made for `host` as `host` is now: the same
 * live array, with the same shape and the same dtype object; -1: an error. Needs numpy's
 * C API imported by the including module. */
static inline int memo_made_for(PyObject *memo, Py_ssize_t size, PyObject *host)
{
    if (!PyTuple_CheckExact(memo) || PyTuple_GET_SIZE(memo) != size || !PyArray_Check(host))
        return 0;
    PyArrayObject *array = (PyArrayObject *)host;
    PyObject *shape = PyTuple_GET_ITEM(memo, 1);
    if (PyTuple_GET_ITEM(memo, 2) != (PyObject *)PyArray_DESCR(array) ||
        !PyTuple_CheckExact(shape) || PyTuple_GET_SIZE(shape) != PyArray_NDIM(array))
        return 0;
    const npy_intp *dims = PyArray_DIMS(array);
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(shape); i++) {
        PyObject *extent = PyTuple_GET_ITEM(shape, i);
        if (!PyLong_CheckExact(extent))
            return 0;
        Py_ssize_t value = PyLong_AsSsize_t(extent);
        if (value == -1 && PyErr_Occurred())
            return -1;
        if (value != dims[i])
            return 0;
    }
    return refers_to(PyTuple_GET_ITEM(memo, 0), host);
}

#endif
