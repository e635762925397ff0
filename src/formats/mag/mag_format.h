/* mag_format.h - what the mag adapter exports to the registry (src/formats/registry.c). */
#ifndef INGOT_MAG_FORMAT_H
#define INGOT_MAG_FORMAT_H

#include "file.h"

extern const ingot__format ingot__format_mag;
extern const ingot__format ingot__format_mag_snapshot;

#endif
