/* utf8.c - strict UTF-8 validation for names, keys and string values read from files. */
#include "utf8.h"

size_t ingot__utf8_prefix(const uint8_t *s, size_t n, bool allow_nul)
{
    size_t i = 0;
    while (i < n) {
        /* ASCII fast path, 8 bytes at a time (names are mostly ASCII; open validates thousands). */
        while (n - i >= 8) {
            uint64_t w;
            ING_MEMCPY(&w, s + i, 8);
            if (w & 0x8080808080808080ull) break;
            if (!allow_nul && ((w - 0x0101010101010101ull) & ~w & 0x8080808080808080ull)) break;
            i += 8;
        }
        if (i >= n) break;
        uint8_t c = s[i];
        if (c < 0x80) {
            if (c == 0 && !allow_nul) return i;
            i++;
            continue;
        }
        size_t len;
        uint32_t cp;
        if (c >= 0xC2 && c <= 0xDF) len = 2, cp = c & 0x1F;
        else if (c >= 0xE0 && c <= 0xEF) len = 3, cp = c & 0x0F;
        else if (c >= 0xF0 && c <= 0xF4) len = 4, cp = c & 0x07;
        else return i;
        if (n - i < len) return i;
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xC0) != 0x80) return i;
            cp = (cp << 6) | (s[i + k] & 0x3F);
        }
        if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10FFFF ||
            (cp >= 0xD800 && cp <= 0xDFFF))
            return i;
        i += len;
    }
    return n;
}

bool ingot__utf8_valid(const uint8_t *s, size_t n, bool allow_nul)
{
    return ingot__utf8_prefix(s, n, allow_nul) == n;
}
