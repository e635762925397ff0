/*
 * checked.h - the one place size arithmetic on file-supplied numbers happens (RELIABILITY.md §0).
 * Every helper returns false on overflow and leaves *out unspecified.
 */
#ifndef INGOT_CHECKED_H
#define INGOT_CHECKED_H

#include "deps.h"

static inline bool ing_add(uint64_t a, uint64_t b, uint64_t *out)
{
    return !__builtin_add_overflow(a, b, out);
}
static inline bool ing_mul(uint64_t a, uint64_t b, uint64_t *out)
{
    return !__builtin_mul_overflow(a, b, out);
}
/* Rounds v up to a multiple of the power of two `align`, checking `v + align - 1`. */
static inline bool ing_round_up(uint64_t v, uint64_t align, uint64_t *out)
{
    uint64_t t;
    if (!ing_add(v, align - 1, &t)) return false;
    *out = t & ~(align - 1);
    return true;
}
static inline bool ing_is_pow2(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }
/* True when [off, off+len) lies inside [0, size). */
static inline bool ing_in_bounds(uint64_t off, uint64_t len, uint64_t size)
{
    return off <= size && len <= size - off;
}

#endif
