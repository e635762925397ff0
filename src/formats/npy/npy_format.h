/* npy_format.h - what the npy adapter exports to the registry (src/formats/registry.c). */
#ifndef INGOT_NPY_FORMAT_H
#define INGOT_NPY_FORMAT_H

#include "file.h"

extern const ingot__format ingot__format_npy;
extern const ingot__format ingot__format_npz;

#endif
