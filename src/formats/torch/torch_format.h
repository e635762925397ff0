/* torch_format.h - what the torch adapter exports to the registry (src/formats/registry.c). */
#ifndef INGOT_TORCH_FORMAT_H
#define INGOT_TORCH_FORMAT_H

#include "file.h"

extern const ingot__format ingot__format_torch;

#endif
