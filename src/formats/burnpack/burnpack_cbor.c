/*
 * burnpack_cbor.c - CBOR for Burnpack: a pull parser over libcbor's streaming decoder (one
 * cbor_stream_decode call per event, our callbacks record it; libcbor never allocates in this
 * mode, so its process-global cbor_set_allocs is not used), the dtype table, the QFloat scheme
 * rendered as JSON and JSON transcoded back to shortest-form CBOR (libcbor's encoders).
 * Spec: ../shared/formats/burnpack.md §5-6.
 */
#include <cbor.h>
#include <string.h>

#include "alloc.h"
#include "burnpack_internal.h"
#include "error.h"
#include "utf8.h"

/* ---------------------------------------------------------------------------------------------
 * Buffer
 * ------------------------------------------------------------------------------------------- */

bool ingot__bp_buf_put(bp_buf *b, const void *s, size_t n)
{
    if (b->oom) return false;
    /* s may point into the buffer itself (a name copied into a key): keep its offset */
    const uint8_t *sp = s;
    bool inside = b->p && sp >= b->p && sp < b->p + b->len;
    size_t at = inside ? (size_t)(sp - b->p) : 0;
    if (n > b->cap - b->len) {
        size_t nc = b->cap ? b->cap : 256;
        while (nc - b->len < n) {
            if (nc > SIZE_MAX / 4) {
                b->oom = true;
                return false;
            }
            nc *= 2;
        }
        void *p = b->p;
        if (!ingot__grow(b->a, &p, b->cap, nc)) {
            b->oom = true;
            return false;
        }
        b->p = p;
        b->cap = nc;
        if (inside) s = b->p + at;
    }
    if (n) memcpy(b->p + b->len, s, n);
    b->len += n;
    return true;
}

void ingot__bp_buf_free(bp_buf *b)
{
    ingot__free(b->a, b->p, b->cap);
    b->p = NULL;
    b->len = b->cap = 0;
}

bool ingot__bp_put_head(bp_buf *b, unsigned major, uint64_t v)
{
    unsigned char tmp[9];
    size_t k;
    switch (major) {
    case 0: k = cbor_encode_uint(v, tmp, sizeof tmp); break;
    case 3: k = cbor_encode_string_start((size_t)v, tmp, sizeof tmp); break;
    case 4: k = cbor_encode_array_start((size_t)v, tmp, sizeof tmp); break;
    default: k = cbor_encode_map_start((size_t)v, tmp, sizeof tmp); break;
    }
    return k && ingot__bp_buf_put(b, tmp, k);
}

bool ingot__bp_put_text(bp_buf *b, const char *s, size_t n)
{
    return ingot__bp_put_head(b, 3, n) && ingot__bp_buf_put(b, s, n);
}

/* ---------------------------------------------------------------------------------------------
 * Pull parser
 * ------------------------------------------------------------------------------------------- */

#define CUR(ctx) ((bp_cur *)(ctx))
static void on_u8(void *x, uint8_t v) { CUR(x)->kind = EV_UINT, CUR(x)->u = v; }
static void on_u16(void *x, uint16_t v) { CUR(x)->kind = EV_UINT, CUR(x)->u = v; }
static void on_u32(void *x, uint32_t v) { CUR(x)->kind = EV_UINT, CUR(x)->u = v; }
static void on_u64(void *x, uint64_t v) { CUR(x)->kind = EV_UINT, CUR(x)->u = v; }
static void on_n8(void *x, uint8_t v) { CUR(x)->kind = EV_NEGINT, CUR(x)->u = v; }
static void on_n16(void *x, uint16_t v) { CUR(x)->kind = EV_NEGINT, CUR(x)->u = v; }
static void on_n32(void *x, uint32_t v) { CUR(x)->kind = EV_NEGINT, CUR(x)->u = v; }
static void on_n64(void *x, uint64_t v) { CUR(x)->kind = EV_NEGINT, CUR(x)->u = v; }
static void on_bytes(void *x, cbor_data s, size_t n)
{
    CUR(x)->kind = EV_BYTES, CUR(x)->s = s, CUR(x)->n = n;
}
static void on_text(void *x, cbor_data s, size_t n)
{
    CUR(x)->kind = EV_TEXT, CUR(x)->s = s, CUR(x)->n = n;
}
static void on_bytes_start(void *x) { CUR(x)->kind = EV_BYTES_START; }
static void on_text_start(void *x) { CUR(x)->kind = EV_TEXT_START; }
static void on_array(void *x, size_t n) { CUR(x)->kind = EV_ARRAY, CUR(x)->u = n; }
static void on_array_indef(void *x) { CUR(x)->kind = EV_ARRAY_INDEF; }
static void on_map(void *x, size_t n) { CUR(x)->kind = EV_MAP, CUR(x)->u = n; }
static void on_map_indef(void *x) { CUR(x)->kind = EV_MAP_INDEF; }
static void on_tag(void *x, uint64_t v) { CUR(x)->kind = EV_TAG, CUR(x)->u = v; }
static void on_float(void *x, float v) { (void)v, CUR(x)->kind = EV_FLOAT; }
static void on_double(void *x, double v) { (void)v, CUR(x)->kind = EV_FLOAT; }
static void on_null(void *x) { CUR(x)->kind = EV_NULL; }
static void on_undef(void *x) { CUR(x)->kind = EV_UNDEF; }
static void on_bool(void *x, bool v) { CUR(x)->kind = EV_BOOL, CUR(x)->u = v; }
static void on_break(void *x) { CUR(x)->kind = EV_BREAK; }

static const struct cbor_callbacks callbacks = {
    .uint8 = on_u8, .uint16 = on_u16, .uint32 = on_u32, .uint64 = on_u64,
    .negint8 = on_n8, .negint16 = on_n16, .negint32 = on_n32, .negint64 = on_n64,
    .byte_string = on_bytes, .byte_string_start = on_bytes_start,
    .string = on_text, .string_start = on_text_start,
    .array_start = on_array, .indef_array_start = on_array_indef,
    .map_start = on_map, .indef_map_start = on_map_indef,
    .tag = on_tag, .float2 = on_float, .float4 = on_float, .float8 = on_double,
    .undefined = on_undef, .null = on_null, .boolean = on_bool, .indef_break = on_break,
};

static ingot_status next_raw(bp_cur *c, ingot_error *err)
{
    if (c->pos >= c->len)
        return ingot__err(err, INGOT_BAD_HEADER_SIZE, c->base + c->len, "metadata", 8,
                          "metadata_size %zu ends inside a CBOR item", c->len);
    c->at = c->pos;
    c->kind = 0;
    struct cbor_decoder_result r = cbor_stream_decode(c->buf + c->pos, c->len - c->pos,
                                                      &callbacks, c);
    uint8_t head = c->buf[c->pos];
    if (r.status == CBOR_DECODER_FINISHED && c->kind && r.read > 0 && r.read <= c->len - c->pos) {
        c->pos += r.read;
        return INGOT_OK;
    }
    if (r.status == CBOR_DECODER_NEDATA) {
        unsigned major = head >> 5;
        if (major == 2 || major == 3)
            return ingot__err(err, INGOT_BAD_STRING, c->base + c->at, "metadata", 8,
                              "string at byte %llu runs past the end of the metadata",
                              (unsigned long long)(c->base + c->at));
        return ingot__err(err, INGOT_BAD_HEADER_SIZE, c->base + c->at, "metadata", 8,
                          "CBOR item at byte %llu runs past metadata_size %zu",
                          (unsigned long long)(c->base + c->at), c->len);
    }
    return ingot__err(err, INGOT_BAD_METADATA, c->base + c->at, "metadata", 8,
                      "malformed CBOR (head byte 0x%02x)", head);
}

ingot_status ingot__bp_next(bp_cur *c, ingot_error *err)
{
    do ING_TRY(next_raw(c, err));
    while (c->kind == EV_TAG);
    return INGOT_OK;
}

ingot_status ingot__bp_value(bp_cur *c, ingot_error *err)
{
    ING_TRY(ingot__bp_next(c, err));
    if (c->kind == EV_BREAK)
        return ingot__err(err, INGOT_BAD_METADATA, c->base + c->at, "metadata", 8,
                          "CBOR break where a value belongs");
    return INGOT_OK;
}

static ingot_status count_check(bp_cur *c, bool map, const char *what, ingot_error *err)
{
    uint64_t rem = c->len - c->pos;
    if (map ? c->u > rem / 2 : c->u > rem)
        return ingot__err(err, map ? INGOT_BAD_COUNT : INGOT_BAD_ARRAY, c->base + c->at, what,
                          ing_strlen(what), "%s of %llu entries cannot fit in the %llu bytes left",
                          map ? "map" : "array", (unsigned long long)c->u,
                          (unsigned long long)rem);
    return INGOT_OK;
}

ingot_status ingot__bp_iter_begin(bp_cur *c, bp_iter *it, bool map, const char *what,
                                  ingot_error *err)
{
    if (c->kind == (map ? EV_MAP : EV_ARRAY)) {
        ING_TRY(count_check(c, map, what, err));
        it->indef = false;
        it->map = map;
        it->left = c->u;
        return INGOT_OK;
    }
    if (c->kind == (map ? EV_MAP_INDEF : EV_ARRAY_INDEF)) {
        it->indef = true;
        it->map = map;
        it->left = 0;
        return INGOT_OK;
    }
    return ingot__err(err, INGOT_WRONG_TYPE, c->base + c->at, what, ing_strlen(what),
                      "expected a CBOR %s", map ? "map" : "array");
}

ingot_status ingot__bp_iter_next(bp_cur *c, bp_iter *it, bool *more, ingot_error *err)
{
    if (!it->indef) {
        if (it->left == 0) {
            *more = false;
            return INGOT_OK;
        }
        it->left--;
        ING_TRY(ingot__bp_next(c, err));
        if (c->kind == EV_BREAK)
            return ingot__err(err, INGOT_BAD_METADATA, c->base + c->at, "metadata", 8,
                              "break inside a definite-length container");
        *more = true;
        return INGOT_OK;
    }
    ING_TRY(ingot__bp_next(c, err));
    *more = c->kind != EV_BREAK;
    return INGOT_OK;
}

ingot_status ingot__bp_skip(bp_cur *c, unsigned depth, ingot_error *err)
{
    if (depth > BP_MAX_DEPTH)
        return ingot__err(err, INGOT_BAD_ARRAY, c->base + c->at, "metadata", 8,
                          "CBOR nesting deeper than %u", BP_MAX_DEPTH);
    switch (c->kind) {
    case EV_ARRAY:
    case EV_MAP:
    case EV_ARRAY_INDEF:
    case EV_MAP_INDEF: {
        bp_iter it;
        bool more, map = c->kind == EV_MAP || c->kind == EV_MAP_INDEF;
        ING_TRY(ingot__bp_iter_begin(c, &it, map, "metadata", err));
        for (;;) {
            ING_TRY(ingot__bp_iter_next(c, &it, &more, err));
            if (!more) return INGOT_OK;
            ING_TRY(ingot__bp_skip(c, depth + 1, err));
            if (!map) continue;
            ING_TRY(ingot__bp_value(c, err));
            ING_TRY(ingot__bp_skip(c, depth + 1, err));
        }
    }
    case EV_TEXT_START:
    case EV_BYTES_START: {
        bp_ev want = c->kind == EV_TEXT_START ? EV_TEXT : EV_BYTES;
        for (;;) {
            ING_TRY(next_raw(c, err));
            if (c->kind == EV_BREAK) return INGOT_OK;
            if (c->kind != want)
                return ingot__err(err, INGOT_BAD_STRING, c->base + c->at, "metadata", 8,
                                  "bad chunk in an indefinite-length string");
        }
    }
    case EV_BREAK:
        return ingot__err(err, INGOT_BAD_METADATA, c->base + c->at, "metadata", 8,
                          "unexpected CBOR break");
    default: return INGOT_OK;
    }
}

/* ---------------------------------------------------------------------------------------------
 * Dtypes (spec §6)
 * ------------------------------------------------------------------------------------------- */

static const struct {
    const char *name;
    bp_kind kind;
    ingot_dtype dtype;
    uint32_t esize;
} plain[] = {
    {"F64", BP_F64, INGOT_DTYPE_F64, 8},   {"F32", BP_F32, INGOT_DTYPE_F32, 4},
    {"Flex32", BP_FLEX32, INGOT_DTYPE_F32, 4}, {"F16", BP_F16, INGOT_DTYPE_F16, 2},
    {"BF16", BP_BF16, INGOT_DTYPE_BF16, 2}, {"I64", BP_I64, INGOT_DTYPE_I64, 8},
    {"I32", BP_I32, INGOT_DTYPE_I32, 4},   {"I16", BP_I16, INGOT_DTYPE_I16, 2},
    {"I8", BP_I8, INGOT_DTYPE_I8, 1},      {"U64", BP_U64, INGOT_DTYPE_U64, 8},
    {"U32", BP_U32, INGOT_DTYPE_U32, 4},   {"U16", BP_U16, INGOT_DTYPE_U16, 2},
    {"U8", BP_U8, INGOT_DTYPE_U8, 1},
};

const char *ingot__bp_kind_text(bp_kind k)
{
    for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++)
        if (plain[i].kind == k) return plain[i].name;
    return NULL;
}

static bool put_json_string(bp_buf *b, const uint8_t *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    ingot__bp_buf_put(b, "\"", 1);
    for (size_t i = 0; i < n; i++) {
        uint8_t ch = s[i];
        if (ch == '"' || ch == '\\') {
            char e[2] = {'\\', (char)ch};
            ingot__bp_buf_put(b, e, 2);
        } else if (ch < 0x20) {
            char e[6] = {'\\', 'u', '0', '0', hex[ch >> 4], hex[ch & 15]};
            ingot__bp_buf_put(b, e, 6);
        } else {
            ingot__bp_buf_put(b, &ch, 1);
        }
    }
    return ingot__bp_buf_put(b, "\"", 1);
}

/* Renders the current item as JSON; only text, uints, arrays and maps with text keys.
 * first_key (if not NULL) receives the first key of a map, or the text of a text item. */
static ingot_status render(bp_cur *c, unsigned depth, bp_buf *out, const char *who, size_t wl,
                           const uint8_t **first, size_t *first_n, ingot_error *err)
{
    if (depth > BP_MAX_DEPTH)
        return ingot__err(err, INGOT_BAD_ARRAY, c->base + c->at, who, wl,
                          "CBOR nesting deeper than %u", BP_MAX_DEPTH);
    char num[24];
    switch (c->kind) {
    case EV_UINT: {
        size_t k = ingot__fmt(num, sizeof num, "%llu", (unsigned long long)c->u);
        ingot__bp_buf_put(out, num, k);
        return INGOT_OK;
    }
    case EV_TEXT:
        if (!ingot__utf8_valid(c->s, c->n, true))
            return ingot__err(err, INGOT_BAD_STRING, c->base + c->at, who, wl,
                              "QFloat scheme text is not UTF-8");
        if (first) *first = c->s, *first_n = c->n;
        put_json_string(out, c->s, c->n);
        return INGOT_OK;
    case EV_ARRAY:
    case EV_ARRAY_INDEF:
    case EV_MAP:
    case EV_MAP_INDEF: {
        bool map = c->kind == EV_MAP || c->kind == EV_MAP_INDEF;
        bp_iter it;
        bool more;
        ING_TRY(ingot__bp_iter_begin(c, &it, map, who, err));
        ingot__bp_buf_put(out, map ? "{" : "[", 1);
        for (unsigned k = 0;; k++) {
            ING_TRY(ingot__bp_iter_next(c, &it, &more, err));
            if (!more) break;
            if (k) ingot__bp_buf_put(out, ",", 1);
            if (map) {
                if (c->kind != EV_TEXT)
                    return ingot__err(err, INGOT_UNSUPPORTED, c->base + c->at, who, wl,
                                      "QFloat scheme map key is not definite text");
                if (!ingot__utf8_valid(c->s, c->n, true))
                    return ingot__err(err, INGOT_BAD_STRING, c->base + c->at, who, wl,
                                      "QFloat scheme key is not UTF-8");
                if (first && k == 0) *first = c->s, *first_n = c->n;
                put_json_string(out, c->s, c->n);
                ingot__bp_buf_put(out, ":", 1);
                ING_TRY(ingot__bp_value(c, err));
            }
            ING_TRY(render(c, depth + 1, out, who, wl, NULL, NULL, err));
        }
        ingot__bp_buf_put(out, map ? "}" : "]", 1);
        return INGOT_OK;
    }
    default:
        return ingot__err(err, INGOT_UNSUPPORTED, c->base + c->at, who, wl,
                          "QFloat scheme holds a CBOR value other than text, uint, array, map");
    }
}

/* The QFloat scheme map: rendered whole; its "store" variant tells 0.19 ("U32") from 0.20+
 * ({"PackedNative": n}, {"PackedU32": n}); "Native" is valid in all. */
static ingot_status parse_scheme(bp_cur *c, const char *who, size_t wl, bp_buf *out,
                                 unsigned *versions, ingot_error *err)
{
    bp_iter it;
    bool more;
    if (c->kind != EV_MAP && c->kind != EV_MAP_INDEF)
        return ingot__err(err, INGOT_WRONG_TYPE, c->base + c->at, who, wl,
                          "QFloat scheme is not a map");
    ING_TRY(ingot__bp_iter_begin(c, &it, true, who, err));
    ingot__bp_buf_put(out, "{", 1);
    for (unsigned k = 0;; k++) {
        ING_TRY(ingot__bp_iter_next(c, &it, &more, err));
        if (!more) break;
        if (c->kind != EV_TEXT || !ingot__utf8_valid(c->s, c->n, true))
            return ingot__err(err, INGOT_UNSUPPORTED, c->base + c->at, who, wl,
                              "QFloat scheme key is not definite UTF-8 text");
        bool store = bp_is(c, "store");
        if (k) ingot__bp_buf_put(out, ",", 1);
        put_json_string(out, c->s, c->n);
        ingot__bp_buf_put(out, ":", 1);
        ING_TRY(ingot__bp_value(c, err));
        const uint8_t *f = NULL;
        size_t fn = 0;
        bool is_text = c->kind == EV_TEXT;
        ING_TRY(render(c, 6, out, who, wl, &f, &fn, err));
        if (!store) continue;
        if (is_text && fn == 3 && memcmp(f, "U32", 3) == 0) *versions &= BP_V19;
        else if (!is_text && f && ((fn == 12 && memcmp(f, "PackedNative", 12) == 0) ||
                                   (fn == 9 && memcmp(f, "PackedU32", 9) == 0)))
            *versions &= BP_V20 | BP_V21;
    }
    ingot__bp_buf_put(out, "}", 1);
    return INGOT_OK;
}

ingot_status ingot__bp_parse_dtype(bp_cur *c, const char *who, size_t wl, bp_dtype *out,
                            bp_buf *json, ingot_error *err)
{
    uint64_t at = c->base + c->at;
    if (c->kind == EV_TEXT) {
        for (size_t i = 0; i < sizeof plain / sizeof plain[0]; i++)
            if (bp_is(c, plain[i].name)) {
                *out = (bp_dtype){plain[i].kind, BP_VALL, plain[i].dtype, plain[i].esize};
                return INGOT_OK;
            }
        if (bp_is(c, "Bool")) {
            *out = (bp_dtype){BP_BOOL_TEXT, BP_V19 | BP_V20, INGOT_DTYPE_BOOL, 1};
            return INGOT_OK;
        }
        return ingot__err(err, INGOT_BAD_TYPE, at, who, wl, "unknown dtype \"%.*s\"",
                          (int)(c->n > 32 ? 32 : c->n), (const char *)c->s);
    }
    if (c->kind != EV_MAP && c->kind != EV_MAP_INDEF)
        return ingot__err(err, INGOT_WRONG_TYPE, at, who, wl, "dtype is neither text nor a map");
    if (c->kind == EV_MAP && c->u != 1)
        return ingot__err(err, INGOT_BAD_TYPE, at, who, wl, "dtype map has %llu entries, not 1",
                          (unsigned long long)c->u);
    bp_iter it;
    bool more;
    ING_TRY(ingot__bp_iter_begin(c, &it, true, who, err));
    ING_TRY(ingot__bp_iter_next(c, &it, &more, err));
    if (!more) return ingot__err(err, INGOT_BAD_TYPE, at, who, wl, "empty dtype map");
    bool is_bool = bp_is(c, "Bool"), is_q = bp_is(c, "QFloat");
    if (!is_bool && !is_q)
        return ingot__err(err, c->kind == EV_TEXT ? INGOT_BAD_TYPE : INGOT_WRONG_TYPE,
                          c->base + c->at, who, wl, "unknown dtype variant");
    ING_TRY(ingot__bp_value(c, err));
    if (is_bool) {
        if (bp_is(c, "Native")) *out = (bp_dtype){BP_BOOL_NATIVE, BP_V21, INGOT_DTYPE_BOOL, 1};
        else if (bp_is(c, "U8")) *out = (bp_dtype){BP_BOOL_U8, BP_V21, INGOT_DTYPE_BOOL, 1};
        else if (bp_is(c, "U32")) *out = (bp_dtype){BP_BOOL_U32, BP_V21, INGOT_DTYPE_U32, 4};
        else
            return ingot__err(err, c->kind == EV_TEXT ? INGOT_BAD_TYPE : INGOT_WRONG_TYPE,
                              c->base + c->at, who, wl,
                              "Bool store is not \"Native\", \"U8\" or \"U32\"");
    } else {
        *out = (bp_dtype){BP_QFLOAT, BP_VALL, INGOT_DTYPE_U8, 0};
        bp_buf scratch = {.a = json ? json->a : NULL};
        bp_buf *o = json ? json : &scratch;
        ingot__bp_buf_put(o, "{\"QFloat\":", 10);
        ingot_status st = parse_scheme(c, who, wl, o, &out->versions, err);
        ingot__bp_buf_put(o, "}", 1);
        if (!json) ingot__bp_buf_free(&scratch);
        ING_TRY(st);
        if (json && json->oom)
            return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, who, wl, "allocating the scheme");
        if (out->versions == 0)
            return ingot__err(err, INGOT_BAD_VERSION, at, who, wl, "QFloat store variant");
    }
    ING_TRY(ingot__bp_iter_next(c, &it, &more, err));
    if (more) return ingot__err(err, INGOT_BAD_TYPE, c->base + c->at, who, wl,
                                "dtype map has more than one entry");
    return INGOT_OK;
}

/* ---------------------------------------------------------------------------------------------
 * JSON (the subset render() writes) -> CBOR
 * ------------------------------------------------------------------------------------------- */

typedef struct {
    const char *s;
    size_t n, i;
} jp;

static void ws(jp *p)
{
    while (p->i < p->n && (p->s[p->i] == ' ' || p->s[p->i] == '\n' || p->s[p->i] == '\t' ||
                           p->s[p->i] == '\r'))
        p->i++;
}

static int hexv(char ch)
{
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
    return -1;
}

static bool hex4(jp *p, uint32_t *v)
{
    if (p->n - p->i < 4) return false;
    *v = 0;
    for (int k = 0; k < 4; k++) {
        int h = hexv(p->s[p->i++]);
        if (h < 0) return false;
        *v = *v << 4 | (uint32_t)h;
    }
    return true;
}

/* Decodes a JSON string at p->i (the opening quote) into tmp. */
static bool jstring(jp *p, bp_buf *tmp)
{
    if (p->i >= p->n || p->s[p->i] != '"') return false;
    p->i++;
    while (p->i < p->n) {
        char ch = p->s[p->i++];
        if (ch == '"') return !tmp->oom;
        if ((unsigned char)ch < 0x20) return false;
        if (ch != '\\') {
            ingot__bp_buf_put(tmp, &ch, 1);
            continue;
        }
        if (p->i >= p->n) return false;
        char e = p->s[p->i++];
        const char *simple = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t";
        const char *hit = e ? strchr(simple, e) : NULL;
        if (hit) {
            ingot__bp_buf_put(tmp, to + (hit - simple), 1);
            continue;
        }
        if (e != 'u') return false;
        uint32_t cp, lo;
        if (!hex4(p, &cp)) return false;
        if (cp >= 0xDC00 && cp < 0xE000) return false;
        if (cp >= 0xD800 && cp < 0xDC00) {
            if (p->n - p->i < 2 || p->s[p->i] != '\\' || p->s[p->i + 1] != 'u') return false;
            p->i += 2;
            if (!hex4(p, &lo) || lo < 0xDC00 || lo >= 0xE000) return false;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        }
        uint8_t u[4];
        size_t k;
        if (cp < 0x80) u[0] = (uint8_t)cp, k = 1;
        else if (cp < 0x800) u[0] = (uint8_t)(0xC0 | cp >> 6), u[1] = (uint8_t)(0x80 | (cp & 63)), k = 2;
        else if (cp < 0x10000)
            u[0] = (uint8_t)(0xE0 | cp >> 12), u[1] = (uint8_t)(0x80 | ((cp >> 6) & 63)),
            u[2] = (uint8_t)(0x80 | (cp & 63)), k = 3;
        else
            u[0] = (uint8_t)(0xF0 | cp >> 18), u[1] = (uint8_t)(0x80 | ((cp >> 12) & 63)),
            u[2] = (uint8_t)(0x80 | ((cp >> 6) & 63)), u[3] = (uint8_t)(0x80 | (cp & 63)), k = 4;
        ingot__bp_buf_put(tmp, u, k);
    }
    return false;
}

/* Counts the elements of the array/object at p->i without consuming it (for definite heads). */
static bool jcount(const jp *p0, uint64_t *count);

static bool jvalue(jp *p, bp_buf *out, unsigned depth)
{
    ws(p);
    if (p->i >= p->n || depth > BP_MAX_DEPTH) return false;
    char ch = p->s[p->i];
    if (ch == '"') {
        bp_buf tmp = {.a = out->a};
        bool ok = jstring(p, &tmp) && ingot__utf8_valid(tmp.p, tmp.len, true) &&
                  ingot__bp_put_text(out, (const char *)tmp.p, tmp.len);
        ingot__bp_buf_free(&tmp);
        return ok;
    }
    if (ch >= '0' && ch <= '9') {
        uint64_t v = 0;
        if (ch == '0' && p->i + 1 < p->n && p->s[p->i + 1] >= '0' && p->s[p->i + 1] <= '9')
            return false;
        while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9') {
            unsigned d = (unsigned)(p->s[p->i++] - '0');
            if (v > (UINT64_MAX - d) / 10) return false;
            v = v * 10 + d;
        }
        return ingot__bp_put_head(out, 0, v);
    }
    if (ch != '[' && ch != '{') return false;
    bool map = ch == '{';
    uint64_t count;
    if (!jcount(p, &count) || !ingot__bp_put_head(out, map ? 5 : 4, count)) return false;
    p->i++;
    ws(p);
    if (p->i < p->n && p->s[p->i] == (map ? '}' : ']')) {
        p->i++;
        return true;
    }
    for (;;) {
        if (map) {
            ws(p);
            if (p->i >= p->n || p->s[p->i] != '"' || !jvalue(p, out, depth + 1)) return false;
            ws(p);
            if (p->i >= p->n || p->s[p->i++] != ':') return false;
        }
        if (!jvalue(p, out, depth + 1)) return false;
        ws(p);
        if (p->i >= p->n) return false;
        char sep = p->s[p->i++];
        if (sep == ',') continue;
        return sep == (map ? '}' : ']');
    }
}

/* Scans the container at p0->i for its number of top-level elements (strings skipped whole). */
static bool jcount(const jp *p0, uint64_t *count)
{
    jp p = *p0;
    size_t depth = 0;
    bool any = false;
    *count = 0;
    for (; p.i < p.n; p.i++) {
        char ch = p.s[p.i];
        if (ch == '"') {
            for (p.i++; p.i < p.n && p.s[p.i] != '"'; p.i++)
                if (p.s[p.i] == '\\') p.i++;
            if (depth == 1) any = true;
            continue;
        }
        if (ch == '[' || ch == '{') {
            if (depth == 1) any = true;
            depth++;
            continue;
        }
        if (ch == ']' || ch == '}') {
            if (--depth == 0) {
                *count += any;
                return true;
            }
            continue;
        }
        if (depth == 1 && ch == ',') (*count)++;
        else if (depth == 1 && ch != ' ' && ch != '\n' && ch != '\t' && ch != '\r' && ch != ':')
            any = true;
    }
    return false;
}

ingot_status ingot__bp_json_to_cbor(const char *json, size_t n, bp_buf *out, const char *who,
                             size_t wl, ingot_error *err)
{
    jp p = {json, n, 0};
    bool ok = jvalue(&p, out, 0);
    ws(&p);
    if (!ok || p.i != p.n || out->oom)
        return ingot__err(err, out->oom ? INGOT_NOMEM : INGOT_BAD_METADATA, INGOT_NO_OFFSET, who,
                          wl, "not the JSON subset a Burnpack dtype is written in");
    return INGOT_OK;
}
