/*
 * error.h - filling ingot_error records (freestanding: no stdio, own formatter).
 */
#ifndef INGOT_ERROR_H
#define INGOT_ERROR_H

#include <stdarg.h>

#include "deps.h"
#include "ingot/core.h"

/* printf subset: %s %.*s %c %d %u %x (%08x-style zero-padded width) %ld %lu %lx %lld %llu %llx %zu %%. Always NUL-terminates;
 * returns the length written (without NUL). */
size_t ingot__vfmt(char *buf, size_t cap, const char *fmt, va_list ap);
size_t ingot__fmt(char *buf, size_t cap, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Fills *err (if not NULL) and returns code, so parsers can write `return ingot__err(...)`.
 * where/where_len name the tensor, key or region (may be NULL). */
ingot_status ingot__err(ingot_error *err, ingot_status code, uint64_t offset, const char *where,
                        size_t where_len, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 6, 7)))
#endif
    ;

#define ING_TRY(expr)                                                                              \
    do {                                                                                           \
        ingot_status ing_try_st_ = (expr);                                                         \
        if (ing_try_st_ != INGOT_OK) return ing_try_st_;                                           \
    } while (0)

#endif
