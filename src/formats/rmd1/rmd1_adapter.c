/*
 * rmd1_adapter.c - reader of RMD1, the dense-MLP format of the Rust crate native_neural_network
 * (spec: ../shared/formats/rmd1.md; ingot's mapping: docs/formats/rmd1.md).
 *
 *   0   "RMD1" | u16 version = 1 | u8 dtype (0 f32, 1 f64) | u8 reserved = 0
 *   8   u32 L (layers) | u32 W (weight scalars) | u32 B (bias scalars)
 *   20  L records: u32 in, u32 out, u32 w_off, u32 b_off (scalar indices), u8 act, 3 reserved
 *   20+20L  W scalars, then B scalars (LE); the file ends right after them
 *
 * Each layer k becomes two zero-copy tensors, layers.<k>.weight [out, in] and layers.<k>.bias
 * [out], listed all weights first, then all biases (file order of the crate's sequential
 * packing). The topology becomes the runtime's mlp.* metadata, plus rmd1.* keys for what a
 * byte-exact rewrite needs. Every array value is computed from the mapped layer table on demand.
 */
#include <string.h>

#include "alloc.h"
#include "checked.h"
#include "error.h"
#include "rmd1_format.h"

/* An MLP with more layers than this is not a model anyone writes; the cap bounds the name pool
 * (at most ~3 MiB) for hostile inputs that declare many tiny layers. */
#define RMD1_MAX_LAYERS 65536u

static const char *const act_names[RMD1_ACT_COUNT] = {"identity", "relu", "sigmoid", "tanh",
                                                      "softmax"};

const char *ingot__rmd1_act_name(uint32_t id) { return id < RMD1_ACT_COUNT ? act_names[id] : NULL; }

int ingot__rmd1_act_id(const char *name, size_t len)
{
    for (uint32_t i = 0; i < RMD1_ACT_COUNT; i++)
        if (strlen(act_names[i]) == len && memcmp(act_names[i], name, len) == 0) return (int)i;
    return -1;
}

bool ingot__rmd1_parse_name(const char *name, size_t len, uint32_t *k, bool *is_bias)
{
    static const char pre[] = "layers.";
    size_t pl = sizeof pre - 1, i = pl;
    if (len <= pl || memcmp(name, pre, pl) != 0) return false;
    uint64_t v = 0;
    size_t d0 = i;
    while (i < len && name[i] >= '0' && name[i] <= '9') {
        v = v * 10 + (uint64_t)(name[i] - '0');
        if (v > UINT32_MAX) return false;
        i++;
    }
    if (i == d0 || (name[d0] == '0' && i - d0 > 1)) return false;
    const char *rest = name + i;
    size_t rl = len - i;
    if (rl == 7 && memcmp(rest, ".weight", 7) == 0) *is_bias = false;
    else if (rl == 5 && memcmp(rest, ".bias", 5) == 0) *is_bias = true;
    else return false;
    *k = (uint32_t)v;
    return true;
}

/* ---- state ---- */

enum {
    M_LAYER_COUNT,
    M_ACTIVATIONS,
    M_SIZES,
    M_VERSION,
    M_DTYPE,
    M_ACT_IDS,
    M_CANONICAL_END, /* the keys below only for a layout other than sequential packing */
    M_WOFFS = M_CANONICAL_END,
    M_BOFFS,
    M_WLEN,
    M_BLEN,
    M_WFILL,
    M_BFILL,
    M_COUNT
};

static const struct {
    const char *key;
    ingot_meta_type type;
    bool is_array;
} meta_keys[M_COUNT] = {
    {"mlp.layer_count", INGOT_META_U32, false},   {"mlp.activations", INGOT_META_STRING, true},
    {"mlp.sizes", INGOT_META_U64, true},          {"rmd1.version", INGOT_META_U16, false},
    {"rmd1.dtype", INGOT_META_U8, false},         {"rmd1.activation_ids", INGOT_META_U8, true},
    {"rmd1.weight_offsets", INGOT_META_U32, true}, {"rmd1.bias_offsets", INGOT_META_U32, true},
    {"rmd1.weights_len", INGOT_META_U32, false},  {"rmd1.biases_len", INGOT_META_U32, false},
    {"rmd1.weights_fill", INGOT_META_BYTES, false}, {"rmd1.biases_fill", INGOT_META_BYTES, false},
};

typedef struct {
    const uint8_t *table; /* L records (mapping or f->head) */
    uint32_t L, W, B, es;
    uint8_t dtype;
    uint64_t wbase, bbase; /* file offsets of the W and B arrays */
    bool canonical;
    uint32_t n_meta;
    char *names; /* "layers.<k>.weight\0" for every k, then "layers.<k>.bias\0" */
    size_t names_len;
    uint32_t *name_off; /* 2L offsets into names */
    uint8_t *fill;      /* non-canonical: uncovered W scalars' bytes, then uncovered B ones */
    uint32_t *slot;     /* non-canonical: tensor index -> slot (k weight, L+k bias), file order */
    uint32_t *pos;      /* and the inverse */
    uint64_t wfill_len, bfill_len;
} state;

#define S(f) ((const state *)(f)->state)

static uint32_t rec_in(const state *s, uint32_t k) { return ing_ld32(s->table + RMD1_REC * k); }
static uint32_t rec_out(const state *s, uint32_t k) { return ing_ld32(s->table + RMD1_REC * k + 4); }
static uint32_t rec_woff(const state *s, uint32_t k) { return ing_ld32(s->table + RMD1_REC * k + 8); }
static uint32_t rec_boff(const state *s, uint32_t k) { return ing_ld32(s->table + RMD1_REC * k + 12); }
static uint8_t rec_act(const state *s, uint32_t k) { return s->table[RMD1_REC * k + 16]; }

static void free_state(const ingot_allocator *a, state *s)
{
    if (!s) return;
    ingot__free(a, s->names, s->names_len);
    ingot__free(a, s->name_off, (size_t)s->L * 2 * sizeof(uint32_t));
    ingot__free(a, s->fill, (size_t)(s->wfill_len + s->bfill_len));
    ingot__free(a, s->slot, s->slot ? (size_t)s->L * 4 * sizeof(uint32_t) : 0);
    ingot__free(a, s, sizeof *s);
}

/* ---- probe / open ---- */

static int probe(const uint8_t *head, size_t n)
{
    if (n < 4 || memcmp(head, RMD1_MAGIC, 4) != 0) return 0;
    /* Four ASCII bytes are a weak magic: the version and dtype make it a strong one. */
    if (n >= 8 && ing_ld16(head + 4) == RMD1_VERSION && head[6] <= 1 && head[7] == 0) return 90;
    return 60;
}

/* Merge sort of layer indices by a key (offsets), stable. */
static void sort_by(uint32_t *v, uint32_t *tmp, uint32_t n, const state *s,
                    uint32_t (*key)(const state *, uint32_t))
{
    if (n < 2) return;
    uint32_t h = n / 2;
    sort_by(v, tmp, h, s, key);
    sort_by(v + h, tmp, n - h, s, key);
    uint32_t i = 0, j = h, k = 0;
    while (i < h && j < n) tmp[k++] = key(s, v[j]) < key(s, v[i]) ? v[j++] : v[i++];
    while (i < h) tmp[k++] = v[i++];
    while (j < n) tmp[k++] = v[j++];
    memcpy(v, tmp, (size_t)n * sizeof *v);
}

/* Non-canonical layout: the ranges sorted by offset must not overlap. Measures (dst NULL) or
 * copies into dst the scalars no layer covers, in file order. */
static ingot_status check_ranges(ingot_file *f, state *s, uint32_t *ord, uint32_t *tmp,
                                 bool bias, uint8_t *dst, uint64_t *fill_len, ingot_error *err)
{
    uint32_t L = s->L;
    for (uint32_t k = 0; k < L; k++) ord[k] = k;
    sort_by(ord, tmp, L, s, bias ? rec_boff : rec_woff);
    uint64_t pos = 0, gaps = 0, total = bias ? s->B : s->W, base = bias ? s->bbase : s->wbase;
    for (uint32_t j = 0; j <= L; j++) {
        uint64_t start = total, len = 0;
        if (j < L) {
            uint32_t k = ord[j];
            start = bias ? rec_boff(s, k) : rec_woff(s, k);
            len = bias ? rec_out(s, k) : (uint64_t)rec_in(s, k) * rec_out(s, k);
            if (start < pos) {
                char nm[32];
                size_t nl = ingot__fmt(nm, sizeof nm, "layers.%u.%s", k, bias ? "bias" : "weight");
                return ingot__err(err, INGOT_BAD_LAYOUT,
                                  RMD1_HDR + RMD1_REC * (uint64_t)k + (bias ? 12 : 8), nm, nl,
                                  "its range overlaps another layer's");
            }
        }
        uint64_t n = (start - pos) * s->es;
        if (dst && n) ING_TRY(ingot__file_read(f, base + pos * s->es, dst + gaps, (size_t)n, err));
        gaps += n;
        pos = start + len;
    }
    *fill_len = gaps;
    /* Tensors are listed in file order: weights by offset, then biases by offset. */
    for (uint32_t j = 0; j < L; j++) {
        s->slot[(bias ? L : 0) + j] = (bias ? L : 0) + ord[j];
        s->pos[(bias ? L : 0) + ord[j]] = (bias ? L : 0) + j;
    }
    return INGOT_OK;
}

static ingot_status open_rmd1(ingot_file *f, ingot_error *err)
{
    const uint8_t *h;
    uint64_t size = f->size;
    if (size < RMD1_HDR) {
        size_t n = size < 4 ? (size_t)size : 4;
        ING_TRY(ingot__file_head(f, n, &h, err));
        if (memcmp(h, RMD1_MAGIC, n) != 0)
            return ingot__err(err, INGOT_BAD_MAGIC, 0, "header", 6, "not an RMD1 file");
        return ingot__err(err, INGOT_TRUNCATED, size, "header", 6,
                          "file has %llu bytes, the RMD1 header 20", (unsigned long long)size);
    }
    ING_TRY(ingot__file_head(f, RMD1_HDR, &h, err));
    if (memcmp(h, RMD1_MAGIC, 4) != 0)
        return ingot__err(err, INGOT_BAD_MAGIC, 0, "header", 6, "not an RMD1 file");
    uint16_t version = ing_ld16(h + 4);
    if (version != RMD1_VERSION)
        return ingot__err(err, INGOT_BAD_VERSION, 4, "header", 6,
                          "RMD1 version %u (only 1 exists)", version);
    if (h[6] > 1)
        return ingot__err(err, INGOT_BAD_TYPE, 6, "header", 6,
                          "dtype code %u (0 = f32, 1 = f64)", h[6]);
    if (h[7] != 0)
        return ingot__err(err, INGOT_BAD_FLAGS, 7, "header", 6, "reserved byte is 0x%x, not 0",
                          h[7]);
    uint32_t L = ing_ld32(h + 8), W = ing_ld32(h + 12), B = ing_ld32(h + 16);
    if (L == 0) return ingot__err(err, INGOT_BAD_COUNT, 8, "header", 6, "layer_count is 0");
    /* Every layer owns at least one weight and one bias, and ranges never overlap. */
    if (L > W || L > B)
        return ingot__err(err, INGOT_BAD_COUNT, 8, "header", 6,
                          "layer_count %u exceeds weights_len %u or biases_len %u", L, W, B);
    if (L > RMD1_MAX_LAYERS)
        return ingot__err(err, INGOT_LIMIT, 8, "header", 6, "%u layers (ingot's cap is %u)", L,
                          RMD1_MAX_LAYERS);
    uint32_t es = h[6] ? 8 : 4;
    /* All fields are u32: 20 + 20L + (W + B) * 8 < 2^40, no overflow possible. */
    uint64_t table_end = RMD1_HDR + (uint64_t)RMD1_REC * L;
    uint64_t expect = table_end + ((uint64_t)W + B) * es;
    if (size < expect)
        return ingot__err(err, INGOT_TRUNCATED, size, "header", 6,
                          "file has %llu bytes, its header declares %llu",
                          (unsigned long long)size, (unsigned long long)expect);
    if (size > expect)
        return ingot__err(err, INGOT_BAD_LAYOUT, expect, "header", 6,
                          "%llu bytes follow the biases (the file must end there)",
                          (unsigned long long)(size - expect));
    ING_TRY(ingot__file_head(f, table_end, &h, err));

    state *s = ingot__calloc(&f->alloc, sizeof *s);
    if (!s) return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "allocating the reader");
    s->table = h + RMD1_HDR;
    s->L = L;
    s->W = W;
    s->B = B;
    s->es = es;
    s->dtype = h[6];
    s->wbase = table_end;
    s->bbase = table_end + (uint64_t)W * es;
    ingot_status st = INGOT_OK;
    uint32_t *ord = NULL;

    /* Per layer: shapes, ranges, activation, reserved bytes, the chain. */
    uint64_t wseq = 0, bseq = 0;
    bool canonical = true;
    for (uint32_t k = 0; k < L && st == INGOT_OK; k++) {
        uint64_t at = table_end - RMD1_REC * (uint64_t)(L - k);
        uint32_t in = rec_in(s, k), out = rec_out(s, k), wo = rec_woff(s, k), bo = rec_boff(s, k);
        char nm[32];
        size_t nl = ingot__fmt(nm, sizeof nm, "layer %u", k);
        uint64_t n = (uint64_t)in * out;
        const uint8_t *r = s->table + RMD1_REC * k;
        if (in == 0 || out == 0)
            st = ingot__err(err, INGOT_BAD_SHAPE, at + (in == 0 ? 0 : 4), nm, nl,
                            "input_size %u, output_size %u: both must be > 0", in, out);
        else if (k > 0 && in != rec_out(s, k - 1))
            st = ingot__err(err, INGOT_BAD_SHAPE, at, nm, nl,
                            "input_size %u differs from the previous layer's output_size %u", in,
                            rec_out(s, k - 1));
        else if ((uint64_t)wo + n > W)
            st = ingot__err(err, INGOT_BAD_LAYOUT, at + 8, nm, nl,
                            "weights [%u, +%llu) exceed weights_len %u", wo,
                            (unsigned long long)n, W);
        else if ((uint64_t)bo + out > B)
            st = ingot__err(err, INGOT_BAD_LAYOUT, at + 12, nm, nl,
                            "biases [%u, +%u) exceed biases_len %u", bo, out, B);
        else if (r[16] >= RMD1_ACT_COUNT)
            st = ingot__err(err, INGOT_BAD_TYPE, at + 16, nm, nl, "activation id %u (0..4)",
                            r[16]);
        else if (r[17] | r[18] | r[19])
            st = ingot__err(err, INGOT_BAD_FLAGS, at + 17, nm, nl,
                            "reserved bytes of the layer record are not 0");
        if (st != INGOT_OK) break;
        if (wo != wseq || bo != bseq) canonical = false;
        wseq += n;
        bseq += out;
    }
    if (st == INGOT_OK && (wseq != W || bseq != B)) canonical = false;
    s->canonical = canonical;

    if (st == INGOT_OK && !canonical) {
        /* Any layout whose ranges do not overlap is accepted; the scalars between them are kept
         * as rmd1.*_fill so that a rewrite is byte-exact. */
        size_t ob = (size_t)L * 2 * sizeof(uint32_t);
        ord = ingot__alloc(&f->alloc, ob);
        s->slot = ingot__alloc(&f->alloc, 2 * ob);
        if (s->slot) s->pos = s->slot + 2 * (size_t)L;
        if (!ord || !s->slot) st = ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "allocating");
        uint64_t wl = 0, bl = 0;
        if (st == INGOT_OK) st = check_ranges(f, s, ord, ord + L, false, NULL, &wl, err);
        if (st == INGOT_OK) st = check_ranges(f, s, ord, ord + L, true, NULL, &bl, err);
        if (st == INGOT_OK && wl + bl) {
            s->fill = ingot__alloc(&f->alloc, (size_t)(wl + bl));
            if (!s->fill) st = ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "allocating");
            else s->wfill_len = wl, s->bfill_len = bl;
            if (st == INGOT_OK) st = check_ranges(f, s, ord, ord + L, false, s->fill, &wl, err);
            if (st == INGOT_OK)
                st = check_ranges(f, s, ord, ord + L, true, s->fill + s->wfill_len, &bl, err);
        }
        ingot__free(&f->alloc, ord, ord ? ob : 0);
    }

    /* Names: "layers.<k>.weight" then "layers.<k>.bias"; at most 2 * 65536 * 25 bytes. */
    if (st == INGOT_OK) {
        s->names_len = (size_t)L * 2 * 26;
        s->names = ingot__alloc(&f->alloc, s->names_len);
        s->name_off = ingot__alloc(&f->alloc, (size_t)L * 2 * sizeof(uint32_t));
        if (!s->names || !s->name_off) {
            st = ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "allocating tensor names");
        } else {
            size_t at = 0;
            for (uint32_t i = 0; i < 2 * L; i++) {
                s->name_off[i] = (uint32_t)at;
                at += ingot__fmt(s->names + at, s->names_len - at, "layers.%u.%s",
                                 i < L ? i : i - L, i < L ? "weight" : "bias") + 1;
            }
        }
    }
    if (st != INGOT_OK) {
        free_state(&f->alloc, s);
        return st;
    }
    s->n_meta = canonical ? M_CANONICAL_END : M_COUNT;
    f->state = s;
    f->alignment = (es == 8 && s->wbase % 8 == 0) ? 8 : 4;
    ingot__fmt(f->version, sizeof f->version, "1");
    return INGOT_OK;
}

static void close_rmd1(ingot_file *f)
{
    free_state(&f->alloc, f->state);
    f->state = NULL;
}

/* ---- tensors ---- */

static uint64_t tensor_count(const ingot_file *f) { return 2 * (uint64_t)S(f)->L; }

static ingot_status tensor_at(const ingot_file *f, uint64_t i, ingot_tensor_info *out)
{
    const state *s = S(f);
    memset(out, 0, sizeof *out);
    if (i >= 2 * (uint64_t)s->L) return INGOT_RANGE;
    uint32_t sl = s->slot ? s->slot[i] : (uint32_t)i;
    bool bias = sl >= s->L;
    uint32_t k = bias ? sl - s->L : sl;
    uint32_t in = rec_in(s, k), o = rec_out(s, k);
    out->name = s->names + s->name_off[sl];
    out->name_len = strlen(out->name);
    out->dtype = s->es == 8 ? INGOT_DTYPE_F64 : INGOT_DTYPE_F32;
    if (bias) {
        out->rank = 1;
        out->shape[0] = o;
        out->nelem = o;
        out->offset = s->bbase + (uint64_t)rec_boff(s, k) * s->es;
    } else {
        out->rank = 2;
        out->shape[0] = o;
        out->shape[1] = in;
        out->nelem = (uint64_t)in * o;
        out->offset = s->wbase + (uint64_t)rec_woff(s, k) * s->es;
    }
    out->nbytes = out->nelem * s->es;
    if (f->base) {
        out->data = f->base + out->offset;
        if ((uintptr_t)out->data % s->es) out->flags |= INGOT_TENSOR_UNALIGNED;
    } else {
        out->flags |= INGOT_TENSOR_NOT_MAPPED;
        if (out->offset % s->es) out->flags |= INGOT_TENSOR_UNALIGNED;
    }
    out->index = (uint32_t)i;
    return INGOT_OK;
}

static ingot_status tensor_find(const ingot_file *f, const char *name, size_t len,
                                ingot_tensor_info *out)
{
    uint32_t k;
    bool bias;
    memset(out, 0, sizeof *out);
    if (!name || !ingot__rmd1_parse_name(name, len, &k, &bias) || k >= S(f)->L)
        return INGOT_NOT_FOUND;
    uint32_t sl = bias ? S(f)->L + k : k;
    return tensor_at(f, S(f)->pos ? S(f)->pos[sl] : sl, out);
}

/* ---- metadata ---- */

static uint64_t meta_count(const ingot_file *f) { return S(f)->n_meta; }

static ingot_status meta_at(const ingot_file *f, uint64_t i, ingot_meta_info *out)
{
    const state *s = S(f);
    memset(out, 0, sizeof *out);
    if (i >= s->n_meta) return INGOT_RANGE;
    out->key = meta_keys[i].key;
    out->key_len = strlen(out->key);
    out->type = meta_keys[i].type;
    out->is_array = meta_keys[i].is_array;
    out->index = i;
    out->count = 1;
    switch (i) {
    case M_LAYER_COUNT: out->v.u = s->L; break;
    case M_ACTIVATIONS: out->count = s->L; break;
    case M_SIZES: out->count = (uint64_t)s->L + 1; break;
    case M_VERSION: out->v.u = RMD1_VERSION; break;
    case M_DTYPE: out->v.u = s->dtype; break;
    case M_ACT_IDS: out->count = s->L; break;
    case M_WOFFS: out->count = s->L; break;
    case M_BOFFS: out->count = s->L; break;
    case M_WLEN: out->v.u = s->W; break;
    case M_BLEN: out->v.u = s->B; break;
    case M_WFILL:
        out->count = s->wfill_len;
        out->data = s->fill ? s->fill : (const void *)"";
        break;
    case M_BFILL:
        out->count = s->bfill_len;
        out->data = s->fill ? s->fill + s->wfill_len : (const void *)"";
        break;
    }
    return INGOT_OK;
}

static ingot_status meta_find(const ingot_file *f, const char *key, size_t len,
                              ingot_meta_info *out)
{
    for (uint64_t i = 0; i < S(f)->n_meta; i++)
        if (strlen(meta_keys[i].key) == len && memcmp(meta_keys[i].key, key, len) == 0)
            return meta_at(f, i, out);
    memset(out, 0, sizeof *out);
    return INGOT_NOT_FOUND;
}

static ingot_status meta_array_read(const ingot_file *f, uint64_t index, ingot_meta_type type,
                                    uint64_t first, uint64_t n, void *dst)
{
    const state *s = S(f);
    if (index >= s->n_meta) return INGOT_RANGE;
    if (!meta_keys[index].is_array || meta_keys[index].type != type ||
        type == INGOT_META_STRING)
        return INGOT_WRONG_TYPE;
    uint64_t count = index == M_SIZES ? (uint64_t)s->L + 1 : s->L;
    if (first > count || n > count - first) return INGOT_RANGE;
    for (uint64_t j = 0; j < n; j++) {
        uint32_t k = (uint32_t)(first + j);
        switch (index) {
        case M_SIZES: {
            uint64_t v = k == 0 ? rec_in(s, 0) : rec_out(s, k - 1);
            memcpy((uint8_t *)dst + 8 * j, &v, 8);
            break;
        }
        case M_ACT_IDS: ((uint8_t *)dst)[j] = rec_act(s, k); break;
        case M_WOFFS:
        case M_BOFFS: {
            uint32_t v = index == M_WOFFS ? rec_woff(s, k) : rec_boff(s, k);
            memcpy((uint8_t *)dst + 4 * j, &v, 4);
            break;
        }
        default: return INGOT_WRONG_TYPE;
        }
    }
    return INGOT_OK;
}

static ingot_status meta_array_string(const ingot_file *f, uint64_t index, uint64_t elem,
                                      const char **str, size_t *len)
{
    const state *s = S(f);
    if (index >= s->n_meta) return INGOT_RANGE;
    if (index != M_ACTIVATIONS) return INGOT_WRONG_TYPE;
    if (elem >= s->L) return INGOT_RANGE;
    *str = act_names[rec_act(s, (uint32_t)elem)];
    *len = strlen(*str);
    return INGOT_OK;
}

static const char *const rmd1_extensions[] = {"rmd1", NULL};

const ingot__format ingot__format_rmd1 = {
    .name = "rmd1",
    .extensions = rmd1_extensions,
    .probe = probe,
    .open = open_rmd1,
    .close = close_rmd1,
    .tensor_count = tensor_count,
    .tensor_at = tensor_at,
    .tensor_find = tensor_find,
    .meta_count = meta_count,
    .meta_at = meta_at,
    .meta_find = meta_find,
    .meta_array_read = meta_array_read,
    .meta_array_string = meta_array_string,
    .writer = &ingot__writer_rmd1,
};
