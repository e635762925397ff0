/* crc32c.h - internal CRC-32C entry points (the public ones are in ingot/native.h). */
#ifndef INGOT_CRC32C_H
#define INGOT_CRC32C_H

#include "deps.h"

/* Portable path only (tests compare it with the accelerated one). */
uint32_t ingot__crc32c_sw(uint32_t crc, const void *buf, size_t n);
/* Appends nbytes zero bytes to a raw (non-inverted) CRC register. */
uint32_t ingot__crc32c_shift(uint32_t raw, uint64_t nbytes);
/* True when the hardware crc32 instruction (SSE4.2) is used. */
bool ingot__crc32c_hw(void);
/* True when ingot_crc32c folds with VPCLMULQDQ (inputs of 512 bytes and more). */
bool ingot__crc32c_clmul(void);
/* The SSE4.2 crc32 path alone (the portable one where the CPU lacks it); for tests and benches. */
uint32_t ingot__crc32c_sse42(uint32_t crc, const void *buf, size_t n);

#endif
