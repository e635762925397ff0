/*
 * tok_unicode.c - a lenient UTF-8 decoder for the tokenizers: each invalid byte is a one-byte
 * unit (code point UINT32_MAX, no class). The class table lives with its only user, the
 * pre-tokenizers (tok_pretok.c).
 */
#include "tok_internal.h"

size_t ingot__tok_utf8(const uint8_t *s, size_t n, uint32_t *cp)
{
    uint8_t c = s[0];
    if (c < 0x80) {
        *cp = c;
        return 1;
    }
    size_t need;
    uint32_t v, min;
    if (c >= 0xC2 && c <= 0xDF) need = 1, v = c & 0x1Fu, min = 0x80;
    else if (c >= 0xE0 && c <= 0xEF) need = 2, v = c & 0x0Fu, min = 0x800;
    else if (c >= 0xF0 && c <= 0xF4) need = 3, v = c & 0x07u, min = 0x10000;
    else goto bad;
    if (n <= need) goto bad;
    for (size_t k = 1; k <= need; k++) {
        if ((s[k] & 0xC0) != 0x80) goto bad;
        v = (v << 6) | (s[k] & 0x3Fu);
    }
    if (v < min || v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) goto bad;
    *cp = v;
    return need + 1;
bad:
    *cp = UINT32_MAX;
    return 1;
}
