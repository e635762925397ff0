/*
 * runtime.c - the model runtime of the _ingot extension: ingot.MLP (runtime.h), ingot.LM and
 * its tokenizer (lm.h, tokenizer.h). Each object wraps one handle of the C API; the GIL is
 * released while a model computes.
 */
#include "module.h"

PyMethodDef ingot__py_runtime_methods[] = {
    {NULL, NULL, 0, NULL},
};

int ingot__py_runtime_init(PyObject *module)
{
    (void)module;
    return 0;
}
