/* safetensors_format.h - what the safetensors adapter exports to the registry (src/formats/registry.c). */
#ifndef INGOT_SAFETENSORS_FORMAT_H
#define INGOT_SAFETENSORS_FORMAT_H

#include "file.h"

extern const ingot__format ingot__format_safetensors;
extern const ingot__format ingot__format_safetensors_index;

#endif
