/*
 * json.c - strict RFC 8259 JSON pull scanner (see json.h). Non-recursive, allocation-free. The
 * hot loops are the string scan (16 bytes a step with SSE2, 8 with a word trick elsewhere, to the
 * first quote, backslash, control or non-ASCII byte; those go through the byte classes) and digit
 * runs (8 a step, json.h). Hosted core: strtod for the slow path of doubles.
 */
#include "json.h"

#include <locale.h>
#include <stdlib.h>

#include "error.h"
#include "utf8.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#if defined(__GNUC__)
#define ING_HOT_INLINE inline __attribute__((always_inline))
#else
#define ING_HOT_INLINE inline
#endif

/* Word-at-a-time scans locate the first interesting byte of a little-endian word with ctz; on a
 * big-endian host they fall back to byte loops. */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ && defined(__GNUC__)
#define ING_JSON_SWAR 1
#else
#define ING_JSON_SWAR 0
#endif

#define ONES8 0x0101010101010101ull
#define HIGH8 0x8080808080808080ull

enum { S_VALUE = 0, S_OBJ_FIRST, S_KEY, S_ARR_FIRST, S_AFTER, S_DONE };

/* Byte classes inside a string: 0 plain, 1 quote, 2 backslash, 3 control, 4 non-ASCII. */
static const uint8_t str_class[256] = {
    3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3, 3,
    0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
    4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
    4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
    4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
    4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
};

void ingot__json_init(ingot__json *j, const void *buf, size_t len, uint32_t max_depth,
                      uint64_t base_offset)
{
    ING_MEMSET(j, 0, sizeof *j);
    j->buf = (const uint8_t *)buf;
    j->len = len;
    j->base_offset = base_offset;
    j->syntax_code = INGOT_BAD_METADATA;
    j->failed = INGOT_OK;
    j->max_depth = (max_depth == 0 || max_depth > ING_JSON_DEPTH_CAP) ? ING_JSON_DEPTH_CAP
                                                                      : max_depth;
    j->state = S_VALUE;
}

static ingot_status fail(ingot__json *j, ingot_error *err, ingot_status code, size_t pos,
                         const char *what)
{
    j->failed = code;
    j->pos = pos;
    return ingot__err(err, code, j->base_offset + pos, "header", 6, "JSON: %s", what);
}

/* Sticky error re-reported by later calls. */
static ingot_status refail(ingot__json *j, ingot_error *err)
{
    return ingot__err(err, j->failed, j->base_offset + j->pos, "header", 6,
                      "JSON: scanner already failed");
}

static inline size_t skip_ws(const uint8_t *b, size_t pos, size_t len)
{
    if (ING_LIKELY(pos < len && b[pos] > 0x20)) return pos; /* compact JSON: no whitespace */
    while (pos < len) {
        uint8_t c = b[pos];
        if (c != 0x20 && c != 0x0A && c != 0x0D && c != 0x09) break;
        pos++;
    }
    return pos;
}

static int hexval(uint8_t c)
{
    if (c >= '0' && c <= '9') return c - '0';
    c = (uint8_t)(c | 0x20);
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

/* Reads 4 hex digits at b[pos..pos+4); -1 if not all hex or out of bounds. */
static int32_t hex4(const uint8_t *b, size_t pos, size_t len)
{
    if (len - pos < 4) return -1;
    int32_t v = 0;
    for (int i = 0; i < 4; i++) {
        int h = hexval(b[pos + (size_t)i]);
        if (h < 0) return -1;
        v = (v << 4) | h;
    }
    return v;
}

static size_t utf8_len(uint32_t cp) { return cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4; }

/* The first byte at or after pos that is '"', '\\' or a control character (len if none): the end
 * of a run of text, ASCII or not. */
static size_t text_run(const uint8_t *b, size_t pos, size_t len)
{
#if defined(__SSE2__)
    const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\'),
                  ctl = _mm_set1_epi8(0x1F);
    while (len - pos >= 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(b + pos));
        /* unsigned v <= 0x1F: min(v, 0x1F) == v */
        __m128i m = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, bslash)),
                                 _mm_cmpeq_epi8(_mm_min_epu8(v, ctl), v));
        unsigned mask = (unsigned)_mm_movemask_epi8(m);
        if (mask) return pos + (unsigned)__builtin_ctz(mask);
        pos += 16;
    }
#endif
    while (pos < len && b[pos] >= 0x20 && b[pos] != '"' && b[pos] != '\\') pos++;
    return pos;
}

/* Returns the position of the first byte at or after pos that ends a plain run inside a string:
 * '"', '\\', a control character or a byte >= 0x80 (len if none). SSE2 (baseline on x86-64)
 * takes 16 bytes a step; elsewhere 8 bytes a step with the zero-byte trick, whose lowest flagged
 * byte is exact (a borrow only propagates upwards, past a byte that is really flagged). */
static ING_HOT_INLINE size_t plain_run(const uint8_t *b, size_t pos, size_t len)
{
#if defined(__SSE2__)
    const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\'),
                  space = _mm_set1_epi8(0x20);
    while (len - pos >= 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(const void *)(b + pos));
        /* signed compare: 0x00..0x1F and 0x80..0xFF are both below 0x20 */
        __m128i m = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, bslash)),
                                 _mm_cmplt_epi8(v, space));
        unsigned mask = (unsigned)_mm_movemask_epi8(m);
        if (mask) return pos + (unsigned)__builtin_ctz(mask);
        pos += 16;
    }
#endif
    while (len - pos >= 8) {
        uint64_t v;
        ING_MEMCPY(&v, b + pos, 8);
        uint64_t q = v ^ (ONES8 * '"'), bs = v ^ (ONES8 * '\\');
        uint64_t special =
            (((q - ONES8) & ~q) | ((bs - ONES8) & ~bs) | ((v - ONES8 * 0x20) & ~v) | v) & HIGH8;
        if (special) {
#if ING_JSON_SWAR
            return pos + ((unsigned)__builtin_ctzll(special) >> 3);
#else
            break;
#endif
        }
        pos += 8;
    }
    while (pos < len && str_class[b[pos]] == 0) pos++;
    return pos;
}

/* Scans a string whose opening quote is at j->pos. Fills t (p, len, dlen, flags) and leaves j->pos
 * after the closing quote. */
static ING_HOT_INLINE ingot_status scan_string(ingot__json *j, ingot__json_tok *t, ingot_error *err)
{
    const uint8_t *b = j->buf;
    size_t len = j->len;
    size_t start = j->pos + 1, pos = start;
    size_t dlen = 0;
    uint32_t flags = 0;
    for (;;) {
        size_t run = pos;
        pos = plain_run(b, pos, len);
        dlen += pos - run;
        if (ING_UNLIKELY(pos >= len)) return fail(j, err, INGOT_BAD_STRING, j->pos, "unterminated string");
        uint8_t c = b[pos];
        switch (str_class[c]) {
        case 1:
            t->p = b + start;
            t->len = pos - start;
            t->dlen = dlen;
            t->flags = flags;
            j->pos = pos + 1;
            return INGOT_OK;
        case 2: {
            flags |= ING_JSON_ESCAPED;
            if (pos + 1 >= len) return fail(j, err, INGOT_BAD_STRING, pos, "unterminated escape");
            uint8_t e = b[pos + 1];
            if (e == '"' || e == '\\' || e == '/' || e == 'b' || e == 'f' || e == 'n' ||
                e == 'r' || e == 't') {
                dlen++;
                pos += 2;
                break;
            }
            if (e != 'u') return fail(j, err, INGOT_BAD_STRING, pos, "invalid escape");
            int32_t cp = hex4(b, pos + 2, len);
            if (cp < 0) return fail(j, err, INGOT_BAD_STRING, pos, "invalid \\u escape");
            if (cp >= 0xDC00 && cp <= 0xDFFF)
                return fail(j, err, INGOT_BAD_STRING, pos, "lone low surrogate escape");
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                int32_t lo = -1;
                if (len - pos >= 12 && b[pos + 6] == '\\' && b[pos + 7] == 'u')
                    lo = hex4(b, pos + 8, len);
                if (lo < 0xDC00 || lo > 0xDFFF)
                    return fail(j, err, INGOT_BAD_STRING, pos, "lone high surrogate escape");
                dlen += 4;
                pos += 12;
                break;
            }
            if (cp == 0) flags |= ING_JSON_HAS_NUL;
            dlen += utf8_len((uint32_t)cp);
            pos += 6;
            break;
        }
        case 3:
            return fail(j, err, INGOT_BAD_STRING, pos, "control character in string");
        default: {
            /* Non-ASCII text: the run up to the next '"', '\\' or control character, validated in
             * one call (src/core/utf8.c; vector code for long runs). The first invalid sequence
             * is the one a sequence-by-sequence check finds: none can span those ASCII bytes. */
            size_t end = text_run(b, pos, len);
            size_t ok = ingot__utf8_prefix(b + pos, end - pos, true);
            if (ok != end - pos)
                return fail(j, err, INGOT_BAD_STRING, pos + ok, "invalid UTF-8 in string");
            flags |= ING_JSON_NONASCII;
            dlen += end - pos;
            pos = end;
            break;
        }
        }
    }
}

static ingot_status scan_number(ingot__json *j, ingot__json_tok *t, ingot_error *err)
{
    const uint8_t *b = j->buf;
    size_t len = j->len, start = j->pos, pos = start;
    uint32_t flags = 0;
    if (b[pos] == '-') {
        flags |= ING_JSON_NEG;
        pos++;
    }
    if (pos >= len || b[pos] < '0' || b[pos] > '9')
        return fail(j, err, j->syntax_code, pos, "invalid number");
    uint64_t mag = 0;
    if (b[pos] == '0')
        pos++;
    else
        pos = ingot__json_digits(b, pos, len, &mag);
    if (pos < len && b[pos] == '.') {
        flags |= ING_JSON_FRAC;
        pos++;
        if (pos >= len || b[pos] < '0' || b[pos] > '9')
            return fail(j, err, j->syntax_code, pos, "invalid number fraction");
        while (pos < len && b[pos] >= '0' && b[pos] <= '9') pos++;
    }
    if (pos < len && (b[pos] == 'e' || b[pos] == 'E')) {
        flags |= ING_JSON_EXP;
        pos++;
        if (pos < len && (b[pos] == '+' || b[pos] == '-')) pos++;
        if (pos >= len || b[pos] < '0' || b[pos] > '9')
            return fail(j, err, j->syntax_code, pos, "invalid number exponent");
        while (pos < len && b[pos] >= '0' && b[pos] <= '9') pos++;
    }
    t->p = b + start;
    t->len = pos - start;
    t->flags = flags;
    t->mag = mag;
    j->pos = pos;
    return INGOT_OK;
}

static bool lit(const ingot__json *j, const char *s, size_t n)
{
    return j->len - j->pos >= n && ING_MEMCMP(j->buf + j->pos, s, n) == 0;
}

static inline bool top_is_object(const ingot__json *j)
{
    uint32_t d = j->depth - 1;
    return (j->stack[d >> 6] >> (d & 63)) & 1u;
}

/* Parses a value starting at j->pos (whitespace already skipped, pos < len). */
static ING_HOT_INLINE ingot_status scan_value(ingot__json *j, ingot__json_tok *t, ingot_error *err)
{
    uint8_t c = j->buf[j->pos];
    t->pos = j->pos;
    t->depth = j->depth;
    t->flags = 0;
    t->p = NULL;
    t->len = t->dlen = 0;
    t->mag = 0;
    switch (c) {
    case '{':
    case '[':
        if (j->depth >= j->max_depth)
            return fail(j, err, INGOT_BAD_ARRAY, j->pos, "nesting too deep");
        {
            uint32_t d = j->depth;
            uint64_t bit = (uint64_t)1 << (d & 63);
            if (c == '{')
                j->stack[d >> 6] |= bit;
            else
                j->stack[d >> 6] &= ~bit;
        }
        j->depth++;
        j->pos++;
        t->type = c == '{' ? ING_JSON_OBJECT : ING_JSON_ARRAY;
        j->state = c == '{' ? S_OBJ_FIRST : S_ARR_FIRST;
        return INGOT_OK;
    case '"':
        ING_TRY(scan_string(j, t, err));
        t->type = ING_JSON_STRING;
        break;
    case 't':
        if (!lit(j, "true", 4)) return fail(j, err, j->syntax_code, j->pos, "invalid literal");
        j->pos += 4;
        t->type = ING_JSON_TRUE;
        break;
    case 'f':
        if (!lit(j, "false", 5)) return fail(j, err, j->syntax_code, j->pos, "invalid literal");
        j->pos += 5;
        t->type = ING_JSON_FALSE;
        break;
    case 'n':
        if (!lit(j, "null", 4)) return fail(j, err, j->syntax_code, j->pos, "invalid literal");
        j->pos += 4;
        t->type = ING_JSON_NULL;
        break;
    default:
        if (c == '-' || (c >= '0' && c <= '9')) {
            ING_TRY(scan_number(j, t, err));
            t->type = ING_JSON_NUMBER;
            break;
        }
        return fail(j, err, j->syntax_code, j->pos, "expected a value");
    }
    j->state = j->depth == 0 ? S_DONE : S_AFTER;
    return INGOT_OK;
}

static ING_HOT_INLINE ingot_status scan_key(ingot__json *j, ingot__json_tok *t, ingot_error *err)
{
    if (j->buf[j->pos] != '"') return fail(j, err, j->syntax_code, j->pos, "expected a member name");
    t->pos = j->pos;
    t->depth = j->depth;
    ING_TRY(scan_string(j, t, err));
    t->type = ING_JSON_KEY;
    size_t pos = skip_ws(j->buf, j->pos, j->len);
    if (pos >= j->len) return fail(j, err, j->syntax_code, pos, "unexpected end after member name");
    if (j->buf[pos] != ':') return fail(j, err, j->syntax_code, pos, "expected ':'");
    j->pos = pos + 1;
    j->state = S_VALUE;
    return INGOT_OK;
}

static ingot_status close_container(ingot__json *j, ingot__json_tok *t, bool object)
{
    j->depth--;
    t->type = object ? ING_JSON_OBJECT_END : ING_JSON_ARRAY_END;
    t->pos = j->pos;
    t->depth = j->depth;
    t->flags = 0;
    t->p = NULL;
    t->len = t->dlen = 0;
    t->mag = 0;
    j->pos++;
    j->state = j->depth == 0 ? S_DONE : S_AFTER;
    return INGOT_OK;
}

ingot_status ingot__json_next(ingot__json *j, ingot__json_tok *t, ingot_error *err)
{
    if (ING_UNLIKELY(j->failed != INGOT_OK)) return refail(j, err);
    size_t pos = skip_ws(j->buf, j->pos, j->len);
    j->pos = pos;
    if (j->state == S_DONE) {
        if (pos < j->len) return fail(j, err, j->syntax_code, pos, "trailing characters after the value");
        ING_MEMSET(t, 0, sizeof *t);
        t->type = ING_JSON_END;
        t->pos = pos;
        return INGOT_OK;
    }
    if (ING_UNLIKELY(pos >= j->len))
        return fail(j, err, j->syntax_code, pos, "unexpected end of input");
    uint8_t c = j->buf[pos];
    switch (j->state) {
    case S_VALUE:
        return scan_value(j, t, err);
    case S_OBJ_FIRST:
        if (c == '}') return close_container(j, t, true);
        return scan_key(j, t, err);
    case S_KEY:
        return scan_key(j, t, err);
    case S_ARR_FIRST:
        if (c == ']') return close_container(j, t, false);
        return scan_value(j, t, err);
    default: { /* S_AFTER */
        bool obj = top_is_object(j);
        if (c == (obj ? '}' : ']')) return close_container(j, t, obj);
        if (c != ',') return fail(j, err, j->syntax_code, pos, obj ? "expected ',' or '}'" : "expected ',' or ']'");
        pos = skip_ws(j->buf, pos + 1, j->len);
        j->pos = pos;
        if (pos >= j->len) return fail(j, err, j->syntax_code, pos, "unexpected end of input");
        if (obj) return scan_key(j, t, err);
        return scan_value(j, t, err);
    }
    }
}

size_t ingot__json_value_at(const ingot__json *j)
{
    if (j->failed != INGOT_OK || j->state != S_VALUE) return SIZE_MAX;
    return skip_ws(j->buf, j->pos, j->len);
}

void ingot__json_value_done(ingot__json *j, size_t end)
{
    j->pos = end;
    j->state = j->depth == 0 ? S_DONE : S_AFTER;
}

ingot_status ingot__json_skip(ingot__json *j, const ingot__json_tok *t, ingot_error *err)
{
    if (t->type != ING_JSON_OBJECT && t->type != ING_JSON_ARRAY) return INGOT_OK;
    uint32_t d = t->depth;
    ingot__json_tok u;
    for (;;) {
        ING_TRY(ingot__json_next(j, &u, err));
        if ((u.type == ING_JSON_OBJECT_END || u.type == ING_JSON_ARRAY_END) && u.depth == d)
            return INGOT_OK;
        if (u.type == ING_JSON_END) /* unreachable: the end of a container comes first */
            return fail(j, err, j->syntax_code, u.pos, "unbalanced containers");
    }
}

static size_t put_utf8(uint8_t *d, uint32_t cp)
{
    if (cp < 0x80) {
        d[0] = (uint8_t)cp;
        return 1;
    }
    if (cp < 0x800) {
        d[0] = (uint8_t)(0xC0 | (cp >> 6));
        d[1] = (uint8_t)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        d[0] = (uint8_t)(0xE0 | (cp >> 12));
        d[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
        d[2] = (uint8_t)(0x80 | (cp & 0x3F));
        return 3;
    }
    d[0] = (uint8_t)(0xF0 | (cp >> 18));
    d[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3F));
    d[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
    d[3] = (uint8_t)(0x80 | (cp & 0x3F));
    return 4;
}

/* Decodes the escape at s[i] (a backslash) of a token already validated by the scanner; writes up
 * to 4 bytes to out and returns the number of raw bytes consumed (0 if malformed). */
static size_t decode_escape(const uint8_t *s, size_t i, size_t n, uint8_t *out, size_t *olen)
{
    if (i + 1 >= n) return 0;
    uint8_t e = s[i + 1], c;
    switch (e) {
    case '"': c = '"'; break;
    case '\\': c = '\\'; break;
    case '/': c = '/'; break;
    case 'b': c = '\b'; break;
    case 'f': c = '\f'; break;
    case 'n': c = '\n'; break;
    case 'r': c = '\r'; break;
    case 't': c = '\t'; break;
    case 'u': {
        int32_t cp = hex4(s, i + 2, n);
        if (cp < 0) return 0;
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (n - i < 12 || s[i + 6] != '\\' || s[i + 7] != 'u') return 0;
            int32_t lo = hex4(s, i + 8, n);
            if (lo < 0xDC00 || lo > 0xDFFF) return 0;
            uint32_t full = 0x10000u + (((uint32_t)cp - 0xD800u) << 10) + ((uint32_t)lo - 0xDC00u);
            *olen = put_utf8(out, full);
            return 12;
        }
        if (cp >= 0xDC00 && cp <= 0xDFFF) return 0;
        *olen = put_utf8(out, (uint32_t)cp);
        return 6;
    }
    default: return 0;
    }
    out[0] = c;
    *olen = 1;
    return 2;
}

ingot_status ingot__json_str(const ingot__json_tok *t, void *dst, size_t cap, size_t *out_len,
                             ingot_error *err)
{
    if (t->type != ING_JSON_STRING && t->type != ING_JSON_KEY)
        return ingot__err(err, INGOT_WRONG_TYPE, t->pos, NULL, 0, "JSON: token is not a string");
    if (cap < t->dlen)
        return ingot__err(err, INGOT_RANGE, t->pos, NULL, 0, "JSON: string buffer too small");
    uint8_t *d = (uint8_t *)dst;
    const uint8_t *s = t->p;
    size_t n = t->len, o = 0;
    if (!(t->flags & ING_JSON_ESCAPED)) {
        if (n) ING_MEMCPY(d, s, n);
        o = n;
    } else {
        size_t i = 0;
        while (i < n) {
            size_t k = i;
            while (k < n && s[k] != '\\') k++;
            if (k > i) {
                if (o + (k - i) > cap) goto bad;
                ING_MEMCPY(d + o, s + i, k - i);
                o += k - i;
                i = k;
                if (i >= n) break;
            }
            uint8_t tmp[4];
            size_t tl = 0, used = decode_escape(s, i, n, tmp, &tl);
            if (used == 0 || o + tl > cap) goto bad;
            ING_MEMCPY(d + o, tmp, tl);
            o += tl;
            i += used;
        }
    }
    if (out_len) *out_len = o;
    return INGOT_OK;
bad:
    return ingot__err(err, INGOT_BAD_STRING, t->pos, NULL, 0, "JSON: malformed string token");
}

bool ingot__json_str_eq(const ingot__json_tok *t, const char *str, size_t n)
{
    if (t->dlen != n) return false;
    if (!(t->flags & ING_JSON_ESCAPED)) return n == 0 || ING_MEMCMP(t->p, str, n) == 0;
    const uint8_t *s = t->p;
    const uint8_t *want = (const uint8_t *)str;
    size_t i = 0, o = 0, len = t->len;
    while (i < len) {
        if (s[i] != '\\') {
            if (o >= n || s[i] != want[o]) return false;
            i++;
            o++;
            continue;
        }
        uint8_t tmp[4];
        size_t tl = 0, used = decode_escape(s, i, len, tmp, &tl);
        if (used == 0 || o + tl > n || ING_MEMCMP(tmp, want + o, tl) != 0) return false;
        o += tl;
        i += used;
    }
    return o == n;
}

static ingot_status num_err(const ingot__json *j, const ingot__json_tok *t, ingot_error *err,
                            ingot_status code, const char *what)
{
    return ingot__err(err, code, j->base_offset + t->pos, "header", 6, "JSON: %s", what);
}

ingot_status ingot__json_u64(const ingot__json *j, const ingot__json_tok *t, uint64_t *out,
                             ingot_error *err)
{
    if (t->type != ING_JSON_NUMBER) return num_err(j, t, err, INGOT_WRONG_TYPE, "expected a number");
    if (t->flags & (ING_JSON_FRAC | ING_JSON_EXP))
        return num_err(j, t, err, INGOT_WRONG_TYPE, "expected an integer, got a fraction or exponent");
    if (t->flags & ING_JSON_NEG)
        return num_err(j, t, err, INGOT_WRONG_TYPE, "expected a non-negative integer");
    uint64_t v = 0;
    if (t->len <= 19) { /* at most 19 digits cannot overflow: the scan's value is exact */
        v = t->mag;
    } else {
        for (size_t i = 0; i < t->len; i++)
            if (__builtin_mul_overflow(v, 10, &v) ||
                __builtin_add_overflow(v, (uint64_t)(t->p[i] - '0'), &v))
                return num_err(j, t, err, INGOT_RANGE, "integer overflows 64 bits");
    }
    *out = v;
    return INGOT_OK;
}

ingot_status ingot__json_i64(const ingot__json *j, const ingot__json_tok *t, int64_t *out,
                             ingot_error *err)
{
    if (t->type != ING_JSON_NUMBER) return num_err(j, t, err, INGOT_WRONG_TYPE, "expected a number");
    if (t->flags & (ING_JSON_FRAC | ING_JSON_EXP))
        return num_err(j, t, err, INGOT_WRONG_TYPE, "expected an integer, got a fraction or exponent");
    bool neg = (t->flags & ING_JSON_NEG) != 0;
    uint64_t lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    uint64_t v = 0;
    for (size_t i = neg ? 1 : 0; i < t->len; i++) {
        uint64_t dgt = (uint64_t)(t->p[i] - '0');
        if (v > (lim - dgt) / 10) return num_err(j, t, err, INGOT_RANGE, "integer overflows 64 bits");
        v = v * 10 + dgt;
    }
    if (neg)
        *out = v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v;
    else
        *out = (int64_t)v;
    return INGOT_OK;
}

static const double pow10_exact[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                       1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                       1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

ingot_status ingot__json_f64(const ingot__json *j, const ingot__json_tok *t, double *out,
                             ingot_error *err)
{
    if (t->type != ING_JSON_NUMBER) return num_err(j, t, err, INGOT_WRONG_TYPE, "expected a number");
    const uint8_t *s = t->p;
    size_t n = t->len, i = 0;
    bool neg = false;
    if (s[0] == '-') {
        neg = true;
        i = 1;
    }
    /* Fast path (Clinger): mantissa of at most 19 digits that fits in 2^53, |exp10| <= 22. */
    uint64_t m = 0;
    int digits = 0;
    int64_t e10 = 0;
    bool fast = true;
    for (; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
        if (m == 0 && s[i] == '0') continue;
        if (++digits > 19) fast = false;
        else m = m * 10 + (uint64_t)(s[i] - '0');
    }
    if (i < n && s[i] == '.') {
        for (i++; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
            if (m == 0 && s[i] == '0') {
                e10--;
                continue;
            }
            if (++digits > 19) fast = false;
            else {
                m = m * 10 + (uint64_t)(s[i] - '0');
                e10--;
            }
        }
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        bool eneg = false;
        if (s[i] == '+' || s[i] == '-') eneg = s[i++] == '-';
        int64_t ev = 0;
        for (; i < n; i++) {
            if (ev < 100000) ev = ev * 10 + (s[i] - '0');
        }
        e10 += eneg ? -ev : ev;
    }
    if (fast && m <= ((uint64_t)1 << 53) && e10 >= -22 && e10 <= 22) {
        double v = (double)m;
        v = e10 < 0 ? v / pow10_exact[-e10] : v * pow10_exact[e10];
        *out = neg ? -v : v;
        return INGOT_OK;
    }
    if (m == 0 && digits == 0) { /* all-zero mantissa, any exponent */
        *out = neg ? -0.0 : 0.0;
        return INGOT_OK;
    }
    /* Slow path: strtod on a NUL-terminated copy, '.' replaced by the locale's decimal point. */
    char buf[1100];
    if (n >= sizeof buf - 8) return num_err(j, t, err, INGOT_LIMIT, "number text too long");
    const char *dp = ".";
    const struct lconv *lc = localeconv();
    if (lc && lc->decimal_point && lc->decimal_point[0]) dp = lc->decimal_point;
    size_t dpl = ing_strlen(dp), o = 0;
    if (dpl > 4) dpl = 4;
    for (size_t k = 0; k < n; k++) {
        if (s[k] == '.') {
            ING_MEMCPY(buf + o, dp, dpl);
            o += dpl;
        } else
            buf[o++] = (char)s[k];
    }
    buf[o] = 0;
    char *end = NULL;
    double v = strtod(buf, &end);
    if (end != buf + o) return num_err(j, t, err, INGOT_WRONG_TYPE, "number not convertible");
    if (__builtin_isinf(v)) return num_err(j, t, err, INGOT_RANGE, "number overflows a double");
    *out = v;
    return INGOT_OK;
}

size_t ingot__json_quote(char *dst, size_t cap, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    size_t need = 2;
    for (size_t i = 0; i < n; i++) {
        uint8_t c = (uint8_t)s[i];
        if (c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t')
            need += 2;
        else if (c < 0x20)
            need += 6;
        else
            need += 1;
    }
    if (need > cap) return need;
    size_t o = 0;
    dst[o++] = '"';
    for (size_t i = 0; i < n; i++) {
        uint8_t c = (uint8_t)s[i];
        char e = 0;
        switch (c) {
        case '"': e = '"'; break;
        case '\\': e = '\\'; break;
        case '\b': e = 'b'; break;
        case '\f': e = 'f'; break;
        case '\n': e = 'n'; break;
        case '\r': e = 'r'; break;
        case '\t': e = 't'; break;
        default: break;
        }
        if (e) {
            dst[o++] = '\\';
            dst[o++] = e;
        } else if (c < 0x20) {
            dst[o++] = '\\';
            dst[o++] = 'u';
            dst[o++] = '0';
            dst[o++] = '0';
            dst[o++] = hex[c >> 4];
            dst[o++] = hex[c & 15];
        } else
            dst[o++] = (char)c;
    }
    dst[o++] = '"';
    return o;
}
