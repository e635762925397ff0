/*
 * json.h - strict RFC 8259 JSON pull scanner for hostile input, shared by the safetensors and
 * tenzor adapters (hosted core, no format knowledge).
 *
 * Design: no allocation, no recursion. The caller owns an `ingot__json` state (a few hundred
 * bytes, on the stack is fine) over a borrowed buffer and pulls one token at a time with
 * ingot__json_next(). The scanner checks the whole grammar as it goes: structure, string escapes,
 * strict UTF-8 (no overlongs, no surrogates, <= U+10FFFF) in raw string bytes, \uXXXX surrogate
 * pairing (a lone surrogate is an error), number syntax, literals, nesting depth, and that nothing
 * but whitespace (0x20 0x09 0x0A 0x0D) follows the top-level value. A UTF-8 BOM or NUL bytes are
 * not whitespace. Duplicate keys are NOT detected (that needs memory): callers that care check.
 *
 * Strings are not copied: a token points at the raw bytes between the quotes. If the token has no
 * ING_JSON_ESCAPED flag the raw bytes ARE the decoded string (zero-copy); otherwise decode with
 * ingot__json_str() into a caller buffer of tok.dlen bytes (the decoded length, computed while
 * scanning). Numbers are kept as text and converted on request with overflow detection.
 *
 * Errors: every failure fills the optional ingot_error with a byte offset = base_offset + the
 * position in the buffer of the offending byte, and returns:
 *   - BAD_STRING  for a malformed string (bad escape, bad UTF-8, control character, lone
 *                 surrogate, unterminated);
 *   - BAD_ARRAY   when nesting exceeds the depth limit (the catalogue's "depth bomb");
 *   - j->syntax_code (default INGOT_BAD_METADATA, set by the caller after init) for every other
 *                 grammar error, including input that ends inside the value;
 *   - number getters: WRONG_TYPE (not representable in the requested type: fraction/exponent for
 *                 integers, negative for u64) and RANGE (magnitude overflow).
 * After an error the scanner stays failed: further ingot__json_next() calls return the same code.
 *
 * Thread-safety: a scanner is used by one thread; the buffer is only read.
 */
/* API stable */
#ifndef INGOT_JSON_H
#define INGOT_JSON_H

#include "deps.h"
#include "ingot/core.h"

/* Hard cap on nesting depth (the state keeps one bit per level). */
#define ING_JSON_DEPTH_CAP 256

typedef enum ingot__json_type {
    ING_JSON_END = 0,   /* the top-level value is complete and only whitespace followed */
    ING_JSON_OBJECT,    /* '{' */
    ING_JSON_OBJECT_END,/* '}' */
    ING_JSON_ARRAY,     /* '[' */
    ING_JSON_ARRAY_END, /* ']' */
    ING_JSON_KEY,       /* an object member name; its ':' is consumed, the value comes next */
    ING_JSON_STRING,    /* a string value */
    ING_JSON_NUMBER,
    ING_JSON_TRUE,
    ING_JSON_FALSE,
    ING_JSON_NULL,
} ingot__json_type;

/* Token flags. */
enum {
    ING_JSON_ESCAPED = 1u << 0, /* string: contains backslash escapes (decode with _str) */
    ING_JSON_HAS_NUL = 1u << 1, /* string: decodes to a NUL byte somewhere (\u0000) */
    ING_JSON_NEG = 1u << 2,     /* number: leading '-' */
    ING_JSON_FRAC = 1u << 3,    /* number: has a fraction part */
    ING_JSON_EXP = 1u << 4,     /* number: has an exponent part */
    ING_JSON_NONASCII = 1u << 5 /* string: raw bytes contain UTF-8 sequences >= 0x80 */
};

typedef struct ingot__json_tok {
    ingot__json_type type;
    uint32_t flags;     /* ING_JSON_* */
    uint32_t depth;     /* containers enclosing the token (0 for the top-level value; a
                           container's begin and end tokens carry the depth outside it) */
    size_t pos;         /* buffer position of the token's first byte (the '"' of a string) */
    const uint8_t *p;   /* string/key: first byte after the opening quote; number: first char */
    size_t len;         /* string/key: raw bytes between the quotes; number: characters */
    size_t dlen;        /* string/key: decoded length in bytes (== len when not ESCAPED) */
    uint64_t mag;       /* number: integer-part digits accumulated while scanning (modulo 2^64;
                           internal to the number getters, which use them when no overflow is
                           possible) */
} ingot__json_tok;

typedef struct ingot__json {
    const uint8_t *buf;
    size_t len;
    size_t pos;
    uint64_t base_offset;      /* added to buffer positions in error offsets */
    ingot_status syntax_code;  /* code for grammar errors; default INGOT_BAD_METADATA */
    ingot_status failed;       /* sticky error, INGOT_OK while healthy */
    uint32_t depth;
    uint32_t max_depth;
    uint8_t state;
    uint64_t stack[ING_JSON_DEPTH_CAP / 64]; /* bit set: level is an object, clear: array */
} ingot__json;

/* Starts scanning buf[0..len) (borrowed). max_depth: 0 or > ING_JSON_DEPTH_CAP means the cap.
 * base_offset: file offset of buf[0], for error offsets. */
void ingot__json_init(ingot__json *j, const void *buf, size_t len, uint32_t max_depth,
                      uint64_t base_offset);

/* Pulls the next token into *t. Returns INGOT_OK with t->type == ING_JSON_END once the value is
 * complete (and only whitespace trails it); errors as described above. */
ingot_status ingot__json_next(ingot__json *j, ingot__json_tok *t, ingot_error *err);

/* If t is an OBJECT or ARRAY begin token just returned by _next, consumes everything up to and
 * including its matching end (fully validated). For any other token: no-op, OK. */
ingot_status ingot__json_skip(ingot__json *j, const ingot__json_tok *t, ingot_error *err);

/* Decodes string/key token t into dst (cap >= t->dlen, else RANGE). *out_len = t->dlen. No NUL is
 * appended. dst may be NULL when t->dlen == 0. */
ingot_status ingot__json_str(const ingot__json_tok *t, void *dst, size_t cap, size_t *out_len,
                             ingot_error *err);

/* True if string/key token t decodes to exactly s[0..n). No allocation, no copy. */
bool ingot__json_str_eq(const ingot__json_tok *t, const char *s, size_t n);

/* Number conversions of a NUMBER token (errors at the token's offset, via base_offset of j). */
ingot_status ingot__json_u64(const ingot__json *j, const ingot__json_tok *t, uint64_t *out,
                             ingot_error *err);
ingot_status ingot__json_i64(const ingot__json *j, const ingot__json_tok *t, int64_t *out,
                             ingot_error *err);
/* Correctly rounded (strtod, locale-independent). RANGE if the value overflows to infinity. */
ingot_status ingot__json_f64(const ingot__json *j, const ingot__json_tok *t, double *out,
                             ingot_error *err);

/* Raw access for a caller's purpose-built fast path over a layout it expects (the safetensors
 * reader matches the compact tensor entries the reference writer emits byte for byte and leaves
 * everything else, including every error, to _next).
 *
 * ingot__json_value_at: when the scanner expects a value right after a KEY token (or the top-level
 * value), returns the buffer position of its first byte, whitespace skipped; SIZE_MAX in any
 * other state or after an error. Consumes nothing.
 * ingot__json_value_done: the caller has matched one complete, valid JSON value at
 * [ingot__json_value_at(j), end) by itself (its nesting within the scanner's depth limit); the
 * scanner continues after it as if _next had returned that value (and its contents). */
size_t ingot__json_value_at(const ingot__json *j);
void ingot__json_value_done(ingot__json *j, size_t end);

/* Matches a non-negative JSON integer at b[pos..len) in the form _next accepts, of at most 19
 * digits (so it fits in 64 bits) and without a fraction or exponent: returns the position after
 * its last digit and stores its value, or returns 0 (nothing stored) when b[pos] does not start
 * such a number. A '0' ends the number: what follows it is the caller's to check. */
/* Consumes the decimal digits at b[pos..len), accumulating them into *acc (acc = acc * 10 + digit,
 * modulo 2^64); returns the position after the last one. On a little-endian host eight bytes a
 * step: a byte is a digit iff (byte ^ '0') < 10, tested per byte without carries between bytes,
 * and up to eight digits are combined by three multiplications (pairs, quads, the eight). */
static inline size_t ingot__json_digits(const uint8_t *b, size_t pos, size_t len, uint64_t *acc)
{
    uint64_t m = *acc;
#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
    while (len - pos >= 8) {
        uint64_t v;
        ING_MEMCPY(&v, b + pos, 8);
        uint64_t d = v ^ (ones * '0');                                /* digits: 0..9 */
        uint64_t nd = (((d & (ones * 0x7F)) + ones * 0x76) | d) & high; /* high bit: >= 10 */
        unsigned k = nd ? (unsigned)__builtin_ctzll(nd) >> 3 : 8;   /* leading digits */
        if (k == 0) break;
        uint64_t x = d << (64 - 8 * k); /* the k digits on top, zeros (leading) below */
        x = x * 10 + (x >> 8);                                          /* byte pairs */
        x = ((x & 0x000000FF000000FFull) * (100 + (1000000ull << 32)) +
             ((x >> 16) & 0x000000FF000000FFull) * (1 + (10000ull << 32))) >> 32;
        static const uint32_t p10[9] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000,
                                        100000000};
        m = m * p10[k] + x;
        pos += k;
        if (k < 8) {
            *acc = m;
            return pos;
        }
    }
#endif
    while (pos < len && b[pos] >= '0' && b[pos] <= '9') m = m * 10 + (uint64_t)(b[pos++] - '0');
    *acc = m;
    return pos;
}

static inline size_t ingot__json_uint_at(const uint8_t *b, size_t pos, size_t len, uint64_t *out)
{
    if (pos >= len || b[pos] < '0' || b[pos] > '9') return 0;
    if (b[pos] == '0') {
        *out = 0;
        return pos + 1;
    }
    uint64_t v = 0;
    size_t end = ingot__json_digits(b, pos, len, &v);
    if (end - pos > 19) return 0; /* v wrapped: too long for 64 bits (20 digits may fit: the
                                     general path decides those) */
    *out = v;
    return end;
}

/* Writes s[0..n) as a JSON string literal (with quotes) into dst; returns the length it needs.
 * Writes only when cap is large enough (then dst[len] is NOT written). Escapes '"', '\\' and
 * control characters (\b \f \n \r \t, others \u00XX); other bytes are copied (input must be UTF-8).
 * Used by writers that emit JSON. */
size_t ingot__json_quote(char *dst, size_t cap, const char *s, size_t n);

#endif
