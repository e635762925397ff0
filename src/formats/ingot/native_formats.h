/* native_formats.h - what the .ingot adapter exports to the registry. */
#ifndef INGOT_NATIVE_FORMATS_H
#define INGOT_NATIVE_FORMATS_H

#include "file.h"
#include "writer_impl.h"

extern const ingot__format ingot__format_native;
extern const ingot__writer_ops ingot__writer_native;

#endif
