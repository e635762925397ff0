/* tenzor_format.h - what the tenzor adapter exports to the registry (src/formats/registry.c), and
 * what its reader (tenzor_adapter.c) and writer (tenzor_write.c) share. Spec:
 * ../shared/formats/tenzor.md (facts from src/io/tenzor_format.zig); mapping: docs/formats/tenzor.md. */
#ifndef INGOT_TENZOR_FORMAT_H
#define INGOT_TENZOR_FORMAT_H

#include "file.h"

extern const ingot__format ingot__format_tenzor;
extern const ingot__writer_ops ingot__writer_tenzor;

#define TZ_MAGIC "TENZOR\0\0"
#define TZ_HDR 64u
#define TZ_ENTRY 48u
#define TZ_PAGE 4096u
#define TZ_MAX_DIMS 5u
#define TZ_DTYPES 12u
/* The JSON key under which ingot records tensor names (the format stores only their hashes). */
#define TZ_NAMES_KEY "ingot.tensor_names"
/* Metadata key (string array) for the JSON member order, when it is not sorted (reader adds it,
 * writer consumes it). */
#define TZ_ORDER_KEY "tenzor.key_order"

/* FNV-1a 64 of s[0..n). */
static inline uint64_t ingot__tz_fnv1a(const char *s, size_t n)
{
    uint64_t h = 0xCBF29CE484222325ull;
    for (size_t i = 0; i < n; i++) {
        h ^= (uint8_t)s[i];
        h *= 0x00000100000001B3ull;
    }
    return h;
}

/* ingot dtype of a tenzor dtype code (INVALID for codes >= 12), and the reverse (-1 if none). */
ingot_dtype ingot__tz_dtype(uint8_t code);
int ingot__tz_code(ingot_dtype dt);

/* True if s[0..n) is "#" + 16 lower-case hex digits (the name ingot gives a tensor whose name is
 * unknown); *h receives the value. */
bool ingot__tz_hexname(const char *s, size_t n, uint64_t *h);

#endif
