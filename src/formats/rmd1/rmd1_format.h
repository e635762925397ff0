/* rmd1_format.h - what the rmd1 adapter exports to the registry (src/formats/registry.c). */
#ifndef INGOT_RMD1_FORMAT_H
#define INGOT_RMD1_FORMAT_H

#include "file.h"

extern const ingot__format ingot__format_rmd1;

#endif
