/* burnpack_format.h - what the burnpack adapter exports to the registry (src/formats/registry.c). */
#ifndef INGOT_BURNPACK_FORMAT_H
#define INGOT_BURNPACK_FORMAT_H

#include "file.h"

extern const ingot__format ingot__format_burnpack;
extern const ingot__writer_ops ingot__writer_burnpack;

#endif
