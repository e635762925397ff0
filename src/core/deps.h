/*
 * deps.h - the only libc the freestanding parts of ingot use (zstd's zstd_deps.h idea).
 * Files of the freestanding core include this and nothing from libc but <stddef.h>, <stdint.h>,
 * <stdbool.h>, <stdarg.h> and <limits.h>, which every freestanding C11 compiler provides.
 */
#ifndef INGOT_DEPS_H
#define INGOT_DEPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Compilers may lower these builtins to calls of memcpy/memset/memcmp even in freestanding mode;
 * an embedded target must provide those three (every C toolchain does). */
#define ING_MEMCPY(d, s, n) __builtin_memcpy((d), (s), (n))
#define ING_MEMSET(d, c, n) __builtin_memset((d), (c), (n))
#define ING_MEMCMP(a, b, n) __builtin_memcmp((a), (b), (n))

#if defined(__GNUC__)
#define ING_LIKELY(x) __builtin_expect(!!(x), 1)
#define ING_UNLIKELY(x) __builtin_expect(!!(x), 0)
#else
#define ING_LIKELY(x) (x)
#define ING_UNLIKELY(x) (x)
#endif

static inline size_t ing_strlen(const char *s)
{
    size_t n = 0;
    while (s[n]) n++;
    return n;
}

/* Little-endian loads/stores that are safe on any alignment and any host byte order. */
static inline uint16_t ing_ld16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static inline uint32_t ing_ld32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static inline uint64_t ing_ld64(const uint8_t *p)
{
    return (uint64_t)ing_ld32(p) | ((uint64_t)ing_ld32(p + 4) << 32);
}
static inline void ing_st16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}
static inline void ing_st32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static inline void ing_st64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

#endif
