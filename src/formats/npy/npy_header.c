/*
 * npy_header.c - .npy preamble and header dictionary: a strict scanner for the dict NumPy writes
 * (any key order, optional trailing comma, whitespace), the descr table, and NumPy 1.24's header
 * writer. Nothing here evaluates Python; nothing is ever unpickled.
 */
#include "npy_header.h"

#include <stddef.h>

#include "checked.h"
#include "error.h"
#include "utf8.h"

#define ERR(code, off, ...) ingot__err(err, (code), base + (off), where, where_len, __VA_ARGS__)

ingot_status ingot__npy_preamble(const uint8_t *p, size_t n, npy_header *h, uint64_t base,
                                 const char *where, size_t where_len, ingot_error *err)
{
    ING_MEMSET(h, 0, offsetof(npy_header, shape)); /* not the 512 bytes of shape slots */
    size_t m = n < NPY_MAGIC_LEN ? n : NPY_MAGIC_LEN;
    if (ING_MEMCMP(p, NPY_MAGIC, m) != 0)
        return ERR(INGOT_BAD_MAGIC, 0, "npy: no \\x93NUMPY magic");
    if (n < 8) return ERR(INGOT_TRUNCATED, n, "npy: file ends inside the preamble");
    uint8_t major = p[6], minor = p[7];
    if (major < 1 || major > 3 || minor != 0)
        return ERR(INGOT_BAD_VERSION, 6, "npy: version %u.%u (1.0, 2.0 and 3.0 are known)",
                   (unsigned)major, (unsigned)minor);
    size_t pre = major == 1 ? 10 : 12;
    if (n < pre) return ERR(INGOT_TRUNCATED, n, "npy: file ends inside the header length");
    uint32_t hlen = major == 1 ? ing_ld16(p + 8) : ing_ld32(p + 8);
    if (hlen > NPY_MAX_HEADER)
        return ERR(INGOT_BAD_HEADER_SIZE, 8, "npy: header length %u exceeds the %u-byte cap",
                   (unsigned)hlen, (unsigned)NPY_MAX_HEADER);
    h->major = major;
    h->header_len = hlen;
    h->data_offset = pre + hlen;
    return INGOT_OK;
}

/* ---------------------------------------------------------------------------------------------
 * The dictionary scanner
 * ------------------------------------------------------------------------------------------- */

typedef struct {
    const uint8_t *p;
    size_t i, n; /* cursor and end, relative to p (p = start of the npy) */
    uint64_t base;
    const char *where;
    size_t where_len;
    ingot_error *err;
    bool allow_text;
} scan;

static void skip_ws(scan *s)
{
    while (s->i < s->n &&
           (s->p[s->i] == ' ' || s->p[s->i] == '\t' || s->p[s->i] == '\n' || s->p[s->i] == '\r'))
        s->i++;
}

#define SERR(code, off, ...)                                                                       \
    ingot__err(s->err, (code), s->base + (off), s->where, s->where_len, __VA_ARGS__)

/* A Python string literal without escapes: '...' or "...". Sets [*a, *b) to its contents. */
static ingot_status str_lit(scan *s, size_t *a, size_t *b)
{
    if (s->i >= s->n || (s->p[s->i] != '\'' && s->p[s->i] != '"'))
        return SERR(INGOT_BAD_METADATA, s->i, "npy: header: expected a quoted string");
    uint8_t q = s->p[s->i];
    size_t start = ++s->i;
    while (s->i < s->n && s->p[s->i] != q) {
        uint8_t c = s->p[s->i];
        if (c == '\\' || c == '\n' || c < 0x20)
            return SERR(INGOT_BAD_STRING, s->i, "npy: header: escape or control byte in a string");
        s->i++;
    }
    if (s->i >= s->n) return SERR(INGOT_BAD_STRING, start - 1, "npy: header: unterminated string");
    *a = start;
    *b = s->i++;
    return INGOT_OK;
}

/* Skips a bracketed Python literal (structured descr) so the message can quote it. */
static ingot_status skip_nested(scan *s)
{
    size_t depth = 0, start = s->i;
    while (s->i < s->n) {
        uint8_t c = s->p[s->i];
        if (c == '\'' || c == '"') {
            size_t a, b;
            ING_TRY(str_lit(s, &a, &b));
            continue;
        }
        if (c == '[' || c == '(') {
            if (++depth > 32) return SERR(INGOT_BAD_ARRAY, s->i, "npy: header: nesting too deep");
        } else if (c == ']' || c == ')') {
            if (depth == 0) break;
            if (--depth == 0) {
                s->i++;
                return INGOT_OK;
            }
        }
        s->i++;
    }
    return SERR(INGOT_BAD_METADATA, start, "npy: header: unbalanced brackets in descr");
}

static bool lit(scan *s, const char *w)
{
    size_t k = ing_strlen(w);
    if (s->n - s->i < k || ING_MEMCMP(s->p + s->i, w, k) != 0) return false;
    /* not followed by an identifier character (True1, Falsey) */
    if (s->i + k < s->n) {
        uint8_t c = s->p[s->i + k];
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_')
            return false;
    }
    s->i += k;
    return true;
}

/* A non-negative decimal integer as Python writes it (no leading zeros; Python 2's 'L' suffix
 * accepted, as NumPy's reader does for v1 files). */
static ingot_status int_lit(scan *s, uint64_t *out)
{
    size_t start = s->i;
    if (s->i < s->n && s->p[s->i] == '-')
        return SERR(INGOT_BAD_SHAPE, s->i, "npy: header: negative dimension");
    uint64_t v = 0;
    while (s->i < s->n && s->p[s->i] >= '0' && s->p[s->i] <= '9') {
        uint64_t d = s->p[s->i] - '0';
        if (v > (UINT64_MAX - d) / 10 || v * 10 + d > (uint64_t)INT64_MAX)
            return SERR(INGOT_BAD_SHAPE, start, "npy: header: dimension exceeds 2^63-1");
        v = v * 10 + d;
        s->i++;
    }
    if (s->i == start) return SERR(INGOT_BAD_METADATA, s->i, "npy: header: expected an integer");
    if (s->p[start] == '0' && s->i - start > 1)
        return SERR(INGOT_BAD_METADATA, start, "npy: header: integer with a leading zero");
    if (s->i < s->n && s->p[s->i] == 'L') s->i++;
    *out = v;
    return INGOT_OK;
}

/* Python tuple of ints: (), (n,), (a, b), (a, b,). Rejects (n) (an int, not a tuple). */
static ingot_status shape_lit(scan *s, npy_header *h)
{
    if (s->i >= s->n || s->p[s->i] != '(')
        return SERR(INGOT_BAD_SHAPE, s->i, "npy: header: shape is not a tuple");
    size_t open = s->i++;
    uint32_t rank = 0;
    bool comma_after_last = false;
    skip_ws(s);
    while (s->i < s->n && s->p[s->i] != ')') {
        uint64_t v = 0;
        ING_TRY(int_lit(s, &v));
        if (rank == INGOT_MAX_RANK)
            return SERR(INGOT_BAD_NDIMS, open, "npy: shape has more than %d dimensions",
                        INGOT_MAX_RANK);
        h->shape[rank++] = v;
        skip_ws(s);
        comma_after_last = false;
        if (s->i < s->n && s->p[s->i] == ',') {
            s->i++;
            comma_after_last = true;
            skip_ws(s);
        } else if (s->i < s->n && s->p[s->i] != ')') {
            return SERR(INGOT_BAD_METADATA, s->i, "npy: header: expected ',' or ')' in shape");
        }
    }
    if (s->i >= s->n) return SERR(INGOT_BAD_METADATA, open, "npy: header: unterminated shape");
    if (rank == 1 && !comma_after_last)
        return SERR(INGOT_BAD_SHAPE, open, "npy: header: shape (n) is not a tuple; write (n,)");
    s->i++;
    h->rank = rank;
    return INGOT_OK;
}

typedef struct {
    char kind;
    uint32_t size;
    ingot_dtype dt;
} dmap;

static const dmap dtypes[] = {
    {'b', 1, INGOT_DTYPE_BOOL}, {'i', 1, INGOT_DTYPE_I8},   {'i', 2, INGOT_DTYPE_I16},
    {'i', 4, INGOT_DTYPE_I32},  {'i', 8, INGOT_DTYPE_I64},  {'u', 1, INGOT_DTYPE_U8},
    {'u', 2, INGOT_DTYPE_U16},  {'u', 4, INGOT_DTYPE_U32},  {'u', 8, INGOT_DTYPE_U64},
    {'f', 2, INGOT_DTYPE_F16},  {'f', 4, INGOT_DTYPE_F32},  {'f', 8, INGOT_DTYPE_F64},
    {'c', 8, INGOT_DTYPE_C64},  {'c', 16, INGOT_DTYPE_C128},
};

const char *ingot__npy_descr(ingot_dtype dt)
{
    switch (dt) {
    case INGOT_DTYPE_BOOL: return "|b1";
    case INGOT_DTYPE_I8: return "|i1";
    case INGOT_DTYPE_I16: return "<i2";
    case INGOT_DTYPE_I32: return "<i4";
    case INGOT_DTYPE_I64: return "<i8";
    case INGOT_DTYPE_U8: return "|u1";
    case INGOT_DTYPE_U16: return "<u2";
    case INGOT_DTYPE_U32: return "<u4";
    case INGOT_DTYPE_U64: return "<u8";
    case INGOT_DTYPE_F16: return "<f2";
    case INGOT_DTYPE_F32: return "<f4";
    case INGOT_DTYPE_F64: return "<f8";
    case INGOT_DTYPE_C64: return "<c8";
    case INGOT_DTYPE_C128: return "<c16";
    default: return NULL;
    }
}

/* descr string -> dtype. Unsupported kinds (text, objects, dates, void, complex256, long double)
 * are UNSUPPORTED naming the descr; anything else unknown is BAD_TYPE. */
static ingot_status parse_descr(scan *s, size_t a, size_t b, npy_header *h)
{
    size_t len = b - a;
    const uint8_t *d = s->p + a;
    size_t k = len < sizeof h->descr - 1 ? len : sizeof h->descr - 1;
    ING_MEMCPY(h->descr, d, k);
    h->descr[k] = 0;
    if (len < 2) return SERR(INGOT_BAD_TYPE, a, "npy: unknown descr '%s'", h->descr);
    char order = (char)d[0];
    if (order != '<' && order != '>' && order != '|' && order != '=')
        return SERR(INGOT_BAD_TYPE, a, "npy: descr '%s' has no byte-order character", h->descr);
    char kind = (char)d[1];
    if ((kind == 'U' || kind == 'S' || kind == 'a') && s->allow_text) {
        /* itemsize: characters (U: 4 bytes each, S/a: 1); NumPy writes '<U3', '|S5' */
        uint64_t n = 0;
        size_t i = 2;
        for (; i < len && d[i] >= '0' && d[i] <= '9' && n < (1u << 30); i++)
            n = n * 10 + (d[i] - '0');
        if (i == 2 || i < len || n >= (1u << 30))
            return SERR(INGOT_BAD_TYPE, a, "npy: descr '%s': bad item size", h->descr);
        h->text = true;
        h->nbytes = kind == 'U' ? 4 * n : n; /* per element until the shape is known */
        return INGOT_OK;
    }
    if (kind == 'U' || kind == 'S' || kind == 'a' || kind == 'O' || kind == 'V' || kind == 'M' ||
        kind == 'm')
        return SERR(INGOT_UNSUPPORTED, a,
                    "npy: descr '%s': %s arrays are not supported (numeric and bool only)",
                    h->descr,
                    kind == 'O'   ? "object (pickled)"
                    : kind == 'V' ? "void"
                    : kind == 'M' || kind == 'm' ? "datetime/timedelta"
                                  : "string/unicode");
    uint64_t size = 0;
    size_t i = 2;
    if (i >= len) return SERR(INGOT_BAD_TYPE, a, "npy: descr '%s' has no item size", h->descr);
    for (; i < len; i++) {
        if (d[i] < '0' || d[i] > '9' || size > 1000)
            return SERR(INGOT_BAD_TYPE, a, "npy: unknown descr '%s'", h->descr);
        size = size * 10 + (d[i] - '0');
    }
    for (size_t j = 0; j < sizeof dtypes / sizeof dtypes[0]; j++) {
        if (dtypes[j].kind != kind || dtypes[j].size != size) continue;
        if (size > 1 && order == '|')
            return SERR(INGOT_BAD_TYPE, a,
                        "npy: descr '%s': '|' (no byte order) on a multi-byte type", h->descr);
        if (order == '>' && size > 1 && kind == 'c')
            return SERR(INGOT_UNSUPPORTED, a,
                        "npy: descr '%s': big-endian complex is not supported", h->descr);
        h->dtype = dtypes[j].dt;
        h->big_endian = order == '>' && size > 1;
        return INGOT_OK;
    }
    if (kind == 'c' || kind == 'f' || kind == 'i' || kind == 'u' || kind == 'b')
        return SERR(INGOT_UNSUPPORTED, a, "npy: descr '%s': no ingot dtype for this width",
                    h->descr);
    return SERR(INGOT_BAD_TYPE, a, "npy: unknown descr '%s'", h->descr);
}

/* The dict exactly as NumPy's own writer lays it out ("{'descr': '<f4', 'fortran_order': False,
 * 'shape': (16, 256), }", then spaces up to the closing newline), which is what nearly every
 * file holds: matched byte for byte and parsed without the general scanner's per-byte calls
 * (1000-member npz files parse 1000 of these at open). It uses the same descr and shape parsers
 * at the same positions, so it accepts and refuses exactly what the general scanner does: any
 * other layout (key order, spacing, quotes, a structured descr, an escape) leaves *done false
 * and the general scanner starts over. */
static ingot_status canonical(scan *s, npy_header *h, bool *done)
{
    static const char k_descr[] = "{'descr': '", k_fortran[] = "', 'fortran_order': ",
                      k_shape[] = ", 'shape': ", k_end[] = ", }";
    const uint8_t *p = s->p;
    size_t i = s->i, n = s->n;
    *done = false;
    if (n - i < sizeof k_descr - 1 || ING_MEMCMP(p + i, k_descr, sizeof k_descr - 1) != 0)
        return INGOT_OK;
    size_t a = i + sizeof k_descr - 1, b = a;
    while (b < n && p[b] != '\'' && p[b] >= 0x20 && p[b] != '\\') b++;
    if (b >= n || p[b] != '\'' || n - b < sizeof k_fortran - 1 ||
        ING_MEMCMP(p + b, k_fortran, sizeof k_fortran - 1) != 0)
        return INGOT_OK;
    i = b + sizeof k_fortran - 1;
    bool fortran;
    if (n - i >= 5 && ING_MEMCMP(p + i, "False", 5) == 0)
        fortran = false, i += 5;
    else if (n - i >= 4 && ING_MEMCMP(p + i, "True", 4) == 0)
        fortran = true, i += 4;
    else
        return INGOT_OK;
    if (n - i < sizeof k_shape || ING_MEMCMP(p + i, k_shape, sizeof k_shape - 1) != 0 ||
        p[i + sizeof k_shape - 1] != '(')
        return INGOT_OK;
    /* From here on the general scanner would reach the same descr and shape at the same
     * positions, so their verdicts are final. */
    *done = true;
    ING_TRY(parse_descr(s, a, b, h));
    h->fortran = fortran;
    s->i = i + sizeof k_shape - 1;
    ING_TRY(shape_lit(s, h));
    i = s->i;
    if (n - i < sizeof k_end - 1 || ING_MEMCMP(p + i, k_end, sizeof k_end - 1) != 0) {
        *done = false; /* e.g. '), 'extra': 1}': the general scanner names what is wrong */
        return INGOT_OK;
    }
    i += sizeof k_end - 1;
    for (uint64_t w; n - i >= 8 && (ING_MEMCPY(&w, p + i, 8), w == 0x2020202020202020u);)
        i += 8; /* the padding, eight spaces a step */
    while (i < n && p[i] == ' ') i++;
    if (i + 1 != n) { /* p[n - 1] is the newline (checked before) */
        *done = false;
        return INGOT_OK;
    }
    s->i = n;
    return INGOT_OK;
}

ingot_status ingot__npy_parse(const uint8_t *p, npy_header *h, bool allow_text, uint64_t base,
                              const char *where, size_t where_len, ingot_error *err)
{
    size_t pre = h->major == 1 ? 10 : 12;
    scan sc = {p, pre, (size_t)h->data_offset, base, where, where_len, err, allow_text};
    scan *s = &sc;
    /* v1/v2 headers are latin-1 (no check needed: every byte is a character); v3 is UTF-8. */
    if (h->major == 3 && !ingot__utf8_valid(p + pre, h->header_len, false))
        return SERR(INGOT_BAD_STRING, pre, "npy: v3 header is not valid UTF-8");
    if (h->header_len == 0 || p[h->data_offset - 1] != '\n')
        return SERR(INGOT_BAD_METADATA, h->data_offset ? h->data_offset - 1 : pre,
                    "npy: header does not end in a newline");
    skip_ws(s);
    bool fast;
    size_t dict_at = s->i;
    ING_TRY(canonical(s, h, &fast));
    if (fast) goto parsed;
    s->i = dict_at;
    h->rank = 0, h->fortran = false, h->text = false, h->nbytes = 0;
    if (s->i >= s->n || p[s->i] != '{')
        return SERR(INGOT_BAD_METADATA, s->i, "npy: header is not a dict literal");
    s->i++;
    bool seen[3] = {false, false, false};
    for (;;) {
        skip_ws(s);
        if (s->i < s->n && p[s->i] == '}') break;
        size_t ka, kb;
        size_t key_at = s->i;
        ING_TRY(str_lit(s, &ka, &kb));
        int key = -1;
        if (kb - ka == 5 && !ING_MEMCMP(p + ka, "descr", 5)) key = 0;
        if (kb - ka == 13 && !ING_MEMCMP(p + ka, "fortran_order", 13)) key = 1;
        if (kb - ka == 5 && !ING_MEMCMP(p + ka, "shape", 5)) key = 2;
        if (key < 0)
            return SERR(INGOT_BAD_METADATA, key_at, "npy: header has an unknown key '%.*s'",
                        (int)(kb - ka < 40 ? kb - ka : 40), (const char *)p + ka);
        if (seen[key])
            return SERR(INGOT_DUPLICATE, key_at, "npy: header key '%.*s' appears twice",
                        (int)(kb - ka), (const char *)p + ka);
        seen[key] = true;
        skip_ws(s);
        if (s->i >= s->n || p[s->i] != ':')
            return SERR(INGOT_BAD_METADATA, s->i, "npy: header: expected ':'");
        s->i++;
        skip_ws(s);
        if (key == 0) {
            if (s->i < s->n && (p[s->i] == '[' || p[s->i] == '(' || p[s->i] == '{')) {
                size_t a = s->i;
                if (p[s->i] != '{') ING_TRY(skip_nested(s));
                size_t shown = s->i > a ? s->i - a : 1;
                return SERR(INGOT_UNSUPPORTED, a,
                            "npy: descr %.*s%s: structured dtypes are not supported",
                            (int)(shown < 60 ? shown : 60), (const char *)p + a,
                            shown > 60 ? "..." : "");
            }
            size_t a, b;
            ING_TRY(str_lit(s, &a, &b));
            ING_TRY(parse_descr(s, a, b, h));
        } else if (key == 1) {
            if (lit(s, "True"))
                h->fortran = true;
            else if (lit(s, "False"))
                h->fortran = false;
            else
                return SERR(INGOT_BAD_METADATA, s->i, "npy: fortran_order is not True or False");
        } else {
            ING_TRY(shape_lit(s, h));
        }
        skip_ws(s);
        if (s->i < s->n && p[s->i] == ',') {
            s->i++;
            continue;
        }
        skip_ws(s);
        if (s->i < s->n && p[s->i] == '}') break;
        return SERR(INGOT_BAD_METADATA, s->i, "npy: header: expected ',' or '}'");
    }
    s->i++; /* '}' */
    skip_ws(s);
    if (s->i != s->n)
        return SERR(INGOT_BAD_METADATA, s->i, "npy: header: bytes after the dict");
    for (int k = 0; k < 3; k++)
        if (!seen[k])
            return SERR(INGOT_BAD_METADATA, pre, "npy: header lacks the key '%s'",
                        k == 0 ? "descr" : k == 1 ? "fortran_order" : "shape");
parsed:;
    ingot_status st;
    if (h->text) {
        uint64_t item = h->nbytes, n;
        st = ingot_dtype_nbytes(INGOT_DTYPE_U8, h->rank, h->shape, &h->nelem, &n);
        if (st == INGOT_OK && !ing_mul(h->nelem, item, &h->nbytes)) st = INGOT_BAD_SIZE;
    } else {
        st = ingot_dtype_nbytes(h->dtype, h->rank, h->shape, &h->nelem, &h->nbytes);
    }
    if (st != INGOT_OK)
        return SERR(st, pre, "npy: shape of %u dimensions overflows for %s", (unsigned)h->rank,
                    h->descr);
    /* Fortran order is the same bytes as C order for rank <= 1. */
    if (h->rank <= 1) h->fortran = false;
    return INGOT_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Writer side: numpy.lib.format._write_array_header + _wrap_header (1.24), ARRAY_ALIGN = 64,
 * GROWTH_AXIS_MAX_DIGITS = 21.
 * ------------------------------------------------------------------------------------------- */

static size_t put_u64(char *o, uint64_t v)
{
    char t[24];
    size_t n = 0;
    do t[n++] = (char)('0' + v % 10), v /= 10;
    while (v);
    for (size_t i = 0; i < n; i++) o[i] = t[n - 1 - i];
    return n;
}

size_t ingot__npy_format_header(uint8_t *out, size_t cap, ingot_dtype dt, uint32_t rank,
                                const uint64_t *shape)
{
    const char *descr = ingot__npy_descr(dt);
    if (!descr || rank > INGOT_MAX_RANK) return 0;
    char d[NPY_HDR_CAP]; /* < 60 + 22 per dimension + 21 */
    size_t n = 0;
#define PUT(s)                                                                                     \
    do {                                                                                           \
        size_t l_ = ing_strlen(s);                                                                 \
        ING_MEMCPY(d + n, s, l_);                                                                  \
        n += l_;                                                                                   \
    } while (0)
    PUT("{'descr': '");
    PUT(descr);
    PUT("', 'fortran_order': False, 'shape': (");
    size_t first_digits = 0;
    for (uint32_t k = 0; k < rank; k++) {
        if (k) PUT(", ");
        size_t l = put_u64(d + n, shape[k]);
        if (k == 0) first_digits = l;
        n += l;
    }
    if (rank == 1) PUT(",");
    PUT("), }");
#undef PUT
    if (rank > 0)
        for (size_t k = first_digits; k < 21; k++) d[n++] = ' ';
    /* hlen = dict + '\n'; pad so 10 + hlen + pad is a multiple of 64 (pad in 1..64). */
    size_t hlen = n + 1;
    size_t pad = 64 - ((8 + 2 + hlen) % 64);
    size_t total = 10 + hlen + pad;
    if (total > cap || hlen + pad > 65535) return 0;
    ING_MEMCPY(out, NPY_MAGIC, NPY_MAGIC_LEN);
    out[6] = 1;
    out[7] = 0;
    ing_st16(out + 8, (uint16_t)(hlen + pad));
    ING_MEMCPY(out + 10, d, n);
    ING_MEMSET(out + 10 + n, ' ', pad);
    out[total - 1] = '\n';
    return total;
}
