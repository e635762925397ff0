/* npy_load.h - the tests' loader of golden arrays: the first tensor of an .npy (or any file
 * ingot opens), copied into malloc'ed memory when it has the dtype asked for. */
#ifndef INGOT_TEST_NPY_LOAD_H
#define INGOT_TEST_NPY_LOAD_H

#include <stdlib.h>

#include "ingot/ingot.h"

/* NULL if the file does not open, its first tensor is not of dtype want, or memory runs out;
 * *nelem is set when the dtype matches. The caller frees the result. */
static inline void *load_npy(const char *path, ingot_dtype want, uint64_t *nelem)
{
    ingot_file *f = NULL;
    if (ingot_file_open(path, NULL, &f, NULL) != INGOT_OK) return NULL;
    ingot_tensor_info ti;
    void *p = NULL;
    if (ingot_file_tensor_at(f, 0, &ti) == INGOT_OK && ti.dtype == want) {
        p = malloc((size_t)ti.nbytes ? (size_t)ti.nbytes : 1);
        if (p && ingot_file_tensor_copy(f, 0, p, (size_t)ti.nbytes, NULL) != INGOT_OK) {
            free(p);
            p = NULL;
        }
        *nelem = ti.nelem;
    }
    ingot_file_close(f);
    return p;
}

#endif
