/* llama2c_format.h - what the llama2c adapter (llama2c_adapter.c, read-only) exports to the
 * registry (src/formats/registry.c). Layouts: docs/formats/llama2c.md. */
#ifndef INGOT_LLAMA2C_FORMAT_H
#define INGOT_LLAMA2C_FORMAT_H

#include "file.h"

extern const ingot__format ingot__format_llama2c;

#endif
