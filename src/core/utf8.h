/* utf8.h - strict UTF-8 validation (no overlongs, no surrogates, <= U+10FFFF). Freestanding. */
#ifndef INGOT_UTF8_H
#define INGOT_UTF8_H

#include "deps.h"

/* True if s[0..n) is valid UTF-8. If allow_nul is false, a NUL byte makes it invalid. Validates a
 * whole section (strings separated by NUL bytes, with allow_nul) as fast as one string: SSE4.1,
 * AVX2 or AVX-512BW, chosen at run time, at several GB/s on mixed text. */
bool ingot__utf8_valid(const uint8_t *s, size_t n, bool allow_nul);

/* Length of the longest valid prefix of s[0..n): n if valid, else the index of the first byte of
 * the first invalid sequence (for error offsets). */
size_t ingot__utf8_prefix(const uint8_t *s, size_t n, bool allow_nul);

/* The portable code alone (tests and benches compare the vector paths with it). */
size_t ingot__utf8_prefix_sw(const uint8_t *s, size_t n, bool allow_nul);

/* Tests only, not thread-safe: restricts ingot__utf8_prefix/valid to the paths up to level (0
 * portable, 1 SSE4.1, 2 AVX2, 3 AVX-512BW, 4 AVX-512BW with VBMI) that the CPU has; returns the
 * level now in force (0 off x86-64). A level of INGOT__UTF8_TOP or more restores the default. */
int ingot__utf8_limit(int level);
#define INGOT__UTF8_TOP 4

/* The level in force (as above); other scans of string sections take their vector path from it
 * (3 or more: AVX-512F, BW and VL). */
int ingot__utf8_level(void);

#endif
