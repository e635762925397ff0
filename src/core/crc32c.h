/* crc32c.h - internal CRC-32C entry points (the public ones are in ingot/native.h). */
#ifndef INGOT_CRC32C_H
#define INGOT_CRC32C_H

#include "deps.h"

/* Thresholds of the x86-64 paths (crc32c.c explains them; tests aim at their edges): inputs of
 * FOLD_MIN bytes and more fold with VPCLMULQDQ, of HYBRID_MIN and more run the loop that also feeds
 * four crc32 streams, HYBRID_UNIT bytes per iteration, prefetching from HYBRID_PREFETCH_MIN on. */
#define INGOT__CRC32C_FOLD_MIN 256u
#define INGOT__CRC32C_HYBRID_MIN 1280u
#define INGOT__CRC32C_HYBRID_UNIT 512u
#define INGOT__CRC32C_HYBRID_PREFETCH_MIN (128u * 1024u)
/* With AVX-512F on Intel (level 4), inputs of ZFOLD_MIN bytes and more fold on eight zmm
 * registers. */
#define INGOT__CRC32C_ZFOLD_MIN 512u

/* Portable path only (tests compare it with the accelerated one). */
uint32_t ingot__crc32c_sw(uint32_t crc, const void *buf, size_t n);
/* Appends nbytes zero bytes to a raw (non-inverted) CRC register; any uint64 nbytes. */
uint32_t ingot__crc32c_shift(uint32_t raw, uint64_t nbytes);
/* True when the hardware crc32 instruction (SSE4.2) is used. */
bool ingot__crc32c_hw(void);
/* True when ingot_crc32c folds with VPCLMULQDQ (inputs of INGOT__CRC32C_FOLD_MIN bytes and more). */
bool ingot__crc32c_clmul(void);
/* True when the CPU and the OS support AVX2 (probed with the CRC paths; other scans use it). */
bool ingot__cpu_avx2(void);
/* The crc32-instruction path alone (three streams; the portable one where the CPU lacks SSE4.2);
 * for tests and benches. */
uint32_t ingot__crc32c_sse42(uint32_t crc, const void *buf, size_t n);
/* The VPCLMULQDQ folding path alone, without the crc32 streams beside it (ingot__crc32c_sse42
 * where the CPU lacks it); for tests and benches. */
uint32_t ingot__crc32c_fold(uint32_t crc, const void *buf, size_t n);
/* ingot_crc32c for data that most likely comes from memory rather than cache (tensor data of a
 * mapping, a writer's source buffers): the same value, but inputs below
 * INGOT__CRC32C_HYBRID_PREFETCH_MIN take the one-stream folding path, which the hardware
 * prefetcher follows better than the joint loop's five streams. */
uint32_t ingot__crc32c_stream(uint32_t crc, const void *buf, size_t n);
/* Tests only, not thread-safe: restricts every entry point above and ingot_crc32c to the paths up to
 * level (0 portable, 1 SSE4.2 crc32 with bit-serial shifts, 2 and PCLMULQDQ shifts, 3 and
 * VPCLMULQDQ folding on ymm, 4 and folding on zmm: AVX-512F, Intel only) that the CPU has;
 * returns the level now in force (0 off x86-64). Below 3, ingot__cpu_avx2 also says no, so the
 * native reader's names scan takes its SSE2 path. A level of INGOT__CRC32C_TOP or more restores
 * the default. */
int ingot__crc32c_limit(int level);
#define INGOT__CRC32C_TOP 4

#endif
