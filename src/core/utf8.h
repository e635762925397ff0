/* utf8.h - strict UTF-8 validation (no overlongs, no surrogates, <= U+10FFFF). Freestanding. */
#ifndef INGOT_UTF8_H
#define INGOT_UTF8_H

#include "deps.h"

/* True if s[0..n) is valid UTF-8. If allow_nul is false, a NUL byte makes it invalid. */
bool ingot__utf8_valid(const uint8_t *s, size_t n, bool allow_nul);

/* Length of the longest valid prefix of s[0..n): n if valid, else the index of the first byte of
 * the first invalid sequence (for error offsets). */
size_t ingot__utf8_prefix(const uint8_t *s, size_t n, bool allow_nul);

#endif
