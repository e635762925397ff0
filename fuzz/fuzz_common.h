/*
 * fuzz_common.h - helpers shared by the fuzz targets: a check macro that aborts (so libFuzzer, and
 * the plain replay driver, report the input), error-record checks, little-endian loads and an
 * independent header-checksum computation. Everything is static: each target is one translation
 * unit plus the library.
 */
#ifndef INGOT_FUZZ_COMMON_H
#define INGOT_FUZZ_COMMON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ingot/ingot.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FZ_CHECK(cond)                                                                             \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);               \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* Status a == b, printing both names on failure. */
#define FZ_ST(a, b)                                                                                \
    do {                                                                                           \
        ingot_status fz_a_ = (a), fz_b_ = (b);                                                     \
        if (fz_a_ != fz_b_) {                                                                      \
            fprintf(stderr, "%s:%d: %s == %s: %s != %s\n", __FILE__, __LINE__, #a, #b,             \
                    ingot_status_name(fz_a_), ingot_status_name(fz_b_));                           \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

static inline uint32_t fz_ld32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}
static inline uint64_t fz_ld64(const uint8_t *p)
{
    return (uint64_t)fz_ld32(p) | ((uint64_t)fz_ld32(p + 4) << 32);
}

/* True when the status is one of the codes the library defines. */
static inline bool fz_known_status(ingot_status s)
{
    switch (s) {
#define FZ_X_(name, value, msg) case INGOT_##name:
        INGOT_STATUS_LIST(FZ_X_)
#undef FZ_X_
        return true;
    }
    return false;
}

/* What reading stored bytes p[0..n) of a tensor of dtype dt must give: BAD_VALUE if it is BOOL
 * and a byte is neither 0 nor 1 (the library's one value check), else OK. */
static inline ingot_status fz_values_status(ingot_dtype dt, const void *p, uint64_t n)
{
    if (dt != INGOT_DTYPE_BOOL) return INGOT_OK;
    for (uint64_t k = 0; k < n; k++)
        if (((const uint8_t *)p)[k] > 1) return INGOT_BAD_VALUE;
    return INGOT_OK;
}

#define FZ_ERR_SENTINEL ((ingot_status)0x5a5a5a5a)

static inline void fz_err_reset(ingot_error *e)
{
    memset(e, 0x5a, sizeof *e);
    e->code = FZ_ERR_SENTINEL;
}

/* After a call that returned st with *e as its error record: on failure the record names the same
 * code and both strings are NUL-terminated inside their arrays; on success it is untouched. */
static inline void fz_err_check(const ingot_error *e, ingot_status st)
{
    FZ_CHECK(fz_known_status(st));
    if (st == INGOT_OK) {
        FZ_CHECK(e->code == FZ_ERR_SENTINEL);
        return;
    }
    FZ_CHECK(e->code == st);
    FZ_CHECK(memchr(e->where, 0, sizeof e->where) != NULL);
    FZ_CHECK(memchr(e->msg, 0, sizeof e->msg) != NULL);
    char buf[48];
    FZ_CHECK(ingot_error_format(e, buf, sizeof buf) == buf);
    FZ_CHECK(memchr(buf, 0, sizeof buf) != NULL);
    FZ_CHECK(strcmp(ingot_status_name(st), "UNKNOWN") != 0);
}

/* [p, p+n) lies inside [base, base+size). */
static inline bool fz_inside(const void *p, uint64_t n, const uint8_t *base, size_t size)
{
    const uint8_t *q = p;
    if (!q || q < base) return false;
    uint64_t off = (uint64_t)(q - base);
    return off <= size && n <= size - off;
}

/* Strict UTF-8 (no overlongs, surrogates or code points past U+10FFFF), written independently of
 * the library's validator. */
static inline bool fz_utf8(const uint8_t *s, uint64_t n, bool allow_nul)
{
    for (uint64_t i = 0; i < n;) {
        uint8_t c = s[i];
        if (c < 0x80) {
            if (!c && !allow_nul) return false;
            i++;
            continue;
        }
        uint32_t need, cp, min;
        if ((c & 0xE0) == 0xC0) need = 1, cp = c & 0x1Fu, min = 0x80;
        else if ((c & 0xF0) == 0xE0) need = 2, cp = c & 0x0Fu, min = 0x800;
        else if ((c & 0xF8) == 0xF0) need = 3, cp = c & 0x07u, min = 0x10000;
        else return false;
        if (n - i <= need) return false;
        for (uint32_t k = 1; k <= need; k++) {
            if ((s[i + k] & 0xC0) != 0x80) return false;
            cp = (cp << 6) | (s[i + k] & 0x3Fu);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
        i += need + 1;
    }
    return true;
}

/* Byte-string order: memcmp, then shorter first. */
static inline int fz_bytes_cmp(const void *a, size_t al, const void *b, size_t bl)
{
    size_t n = al < bl ? al : bl;
    int c = n ? memcmp(a, b, n) : 0;
    return c ? (c < 0 ? -1 : 1) : al < bl ? -1 : al > bl ? 1 : 0;
}

/* The .ingot header checksum as docs/FORMAT.md defines it: CRC-32C of [0,156) ++
 * [160, data_offset), compared with the stored value at 156 (data_offset is the u64 at 128). Only
 * call when the structure was accepted (then 160 <= data_offset <= size). */
static inline bool fz_header_crc_ok(const uint8_t *d, size_t size)
{
    /* docs/FORMAT.md §4: 192-byte fixed header, data_offset at 160, header_crc at 188 */
    if (size < 192) return false;
    uint64_t data_off = fz_ld64(d + 160);
    if (data_off < 192 || data_off > size) return false;
    uint32_t crc = ingot_crc32c(0, d, 188);
    crc = ingot_crc32c(crc, d + 192, (size_t)(data_off - 192));
    return crc == fz_ld32(d + 188);
}

#endif
