/* tenzor_format.h - what the tenzor adapter exports to the registry (src/formats/registry.c). */
#ifndef INGOT_TENZOR_FORMAT_H
#define INGOT_TENZOR_FORMAT_H

#include "file.h"

extern const ingot__format ingot__format_tenzor;

#endif
