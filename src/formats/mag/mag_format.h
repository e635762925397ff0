/* mag_format.h - what the mag adapter exports to the registry (src/formats/registry.c). */
#ifndef INGOT_MAG_FORMAT_H
#define INGOT_MAG_FORMAT_H

#include "file.h"

/* magnetron storage archive (Format A, versions 1 and 100): read and write. */
extern const ingot__format ingot__format_mag;
/* magnetron snapshot (Format B, version 100): read and write. */
extern const ingot__format ingot__format_mag_snapshot;

#endif
