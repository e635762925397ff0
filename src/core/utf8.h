/* utf8.h - strict UTF-8 validation (no overlongs, no surrogates, <= U+10FFFF). Freestanding. */
#ifndef INGOT_UTF8_H
#define INGOT_UTF8_H

#include "deps.h"

/* True if s[0..n) is valid UTF-8. If allow_nul is false, a NUL byte makes it invalid. */
bool ingot__utf8_valid(const uint8_t *s, size_t n, bool allow_nul);

#endif
