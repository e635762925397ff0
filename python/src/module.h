/*
 * module.h - what the files of the _ingot extension share: the error bridge to ingot.Error,
 * argument converters and the file handle type. Private to python/src.
 */
#ifndef INGOT_PY_MODULE_H
#define INGOT_PY_MODULE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <ingot/ingot.h>

/* One open ingot_file, closed when the last Python reference goes. */
typedef struct {
    PyObject_HEAD
    ingot_file *f;
} Handle;

extern PyObject *ingot__py_handle_type;

/* Raises the ingot.Error subclass for e (or for st when e is NULL); returns NULL. */
PyObject *ingot__py_raise(const ingot_error *e, ingot_status st);
/* Raises for a status without detail, `what` naming the place; returns NULL. */
PyObject *ingot__py_raise_status(ingot_status st, const char *what);
/* UTF-8 bytes to str, invalid sequences replaced by U+FFFD. */
PyObject *ingot__py_str(const char *s, size_t n);
/* PyArg "O&" converter to uint64_t. */
int ingot__py_u64(PyObject *o, void *out);

/* save.c: writer and conversion; runtime.c: MLP, language models, tokenizers. */
extern PyMethodDef ingot__py_save_methods[];
extern PyMethodDef ingot__py_runtime_methods[];
int ingot__py_runtime_init(PyObject *module);

#endif
