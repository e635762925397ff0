/* half.h - binary16 conversions of quant.c shared with the quantizers (quantize.c). */
#ifndef INGOT_HALF_H
#define INGOT_HALF_H

#include "deps.h"

/* Round to nearest even; NaN keeps sign and top payload bits. */
uint16_t ingot__f32_to_f16(float f);
/* Exact. */
float ingot__f16_to_f32(uint16_t h);

#endif
