/*
 * rmd1_write.c - RMD1 writer ops. The file is rebuilt from the topology keys the reader exposes
 * (mlp.layer_count, mlp.sizes, mlp.activations; rmd1.* for a non-sequential layout) and the
 * tensors layers.<k>.weight [out, in] / layers.<k>.bias [out], F32 or F64. Integer keys of any
 * integer type are accepted (other formats may widen them). Spec: ../shared/formats/rmd1.md;
 * mapping and rules: docs/formats/rmd1.md.
 */
#include <string.h>

#include "alloc.h"
#include "checked.h"
#include "error.h"
#include "json.h"
#include "rmd1_format.h"
#include "writer_impl.h"

typedef struct {
    uint32_t L, W, B, es;
    const uint8_t *fill; /* weights fill || biases fill, as the gaps come in file order */
    uint8_t *fill_own;   /* the concatenation, when both parts are non-empty */
    uint64_t fill_len, fill_at;
    uint64_t total;
} wstate;

static const char *const known_keys[] = {
    "mlp.layer_count",     "mlp.activations",   "mlp.sizes",         "rmd1.version",
    "rmd1.dtype",          "rmd1.activation_ids", "rmd1.weight_offsets", "rmd1.bias_offsets",
    "rmd1.weights_len",    "rmd1.biases_len",   "rmd1.weights_fill", "rmd1.biases_fill",
};

static const ingot__wmeta *find_meta(const ingot_writer *w, const char *key)
{
    size_t n = strlen(key);
    for (size_t i = 0; i < w->n_meta; i++)
        if (w->meta[i].key_len == n && memcmp(w->meta[i].key, key, n) == 0) return &w->meta[i];
    return NULL;
}

static bool is_int_type(ingot_meta_type t) { return t >= INGOT_META_U8 && t <= INGOT_META_I64; }

/* Element `elem` of an integer entry (scalar: elem 0) as a non-negative value; false if the entry
 * is not an integer or the value is negative. */
static bool int_at(const ingot__wmeta *m, uint64_t elem, uint64_t *out)
{
    if (!is_int_type(m->type)) return false;
    uint32_t esz = ingot_meta_type_size(m->type);
    uint64_t v = 0;
    if (m->is_array) {
        for (uint32_t b = 0; b < esz; b++) v |= (uint64_t)m->blob[elem * esz + b] << (8 * b);
    } else {
        v = m->scalar;
    }
    if (m->type >= INGOT_META_I8 && esz < 8 && (v >> (8 * esz - 1)) & 1) return false;
    if (m->type == INGOT_META_I64 && (v >> 63)) return false;
    *out = v;
    return true;
}

static ingot_status bad_key(ingot_error *err, ingot_status code, const char *key, const char *msg)
{
    return ingot__err(err, code, INGOT_NO_OFFSET, key, strlen(key), "%s", msg);
}

/* Formats whose metadata holds only strings (safetensors) carry these keys as JSON text: "2",
 * "[2,3,1]". Parses such a text: one integer (array false) or an array of exactly `count`
 * integers, each in [lo, hi]. */
static ingot_status json_ints(const char *key, const ingot__wmeta *m, bool array, uint64_t count,
                              uint64_t lo, uint64_t hi, uint64_t *out, ingot_error *err)
{
    ingot__json j;
    ingot__json_tok t;
    ingot__json_init(&j, m->blob, m->blob_len, 2, 0);
    uint64_t n = 0;
    ingot_status st = ingot__json_next(&j, &t, NULL);
    if (st == INGOT_OK && array && t.type == ING_JSON_ARRAY) st = ingot__json_next(&j, &t, NULL);
    else if (array) st = INGOT_BAD_METADATA;
    while (st == INGOT_OK && t.type == ING_JSON_NUMBER) {
        uint64_t v;
        st = ingot__json_u64(&j, &t, &v, NULL);
        if (st == INGOT_OK && (v < lo || v > hi || n >= count)) st = INGOT_BAD_METADATA;
        if (st == INGOT_OK) out[n++] = v;
        if (st == INGOT_OK) st = ingot__json_next(&j, &t, NULL);
        if (!array) break;
    }
    if (st == INGOT_OK && array && t.type == ING_JSON_ARRAY_END) st = ingot__json_next(&j, &t, NULL);
    if (st != INGOT_OK || t.type != ING_JSON_END || n != count)
        return ingot__err(err, INGOT_BAD_METADATA, INGOT_NO_OFFSET, key, strlen(key),
                          "text value is not %s of %llu integers in [%llu, %llu]",
                          array ? "a JSON array" : "one", (unsigned long long)count,
                          (unsigned long long)lo, (unsigned long long)hi);
    return INGOT_OK;
}

/* A scalar integer key in [lo, hi]; *present false when absent (absence is the caller's call). */
static ingot_status get_scalar(const ingot_writer *w, const char *key, uint64_t lo, uint64_t hi,
                               uint64_t *v, bool *present, ingot_error *err)
{
    const ingot__wmeta *m = find_meta(w, key);
    *present = m != NULL;
    if (!m) return INGOT_OK;
    if (!m->is_array && m->type == INGOT_META_STRING) return json_ints(key, m, false, 1, lo, hi, v, err);
    if (m->is_array || !int_at(m, 0, v))
        return bad_key(err, INGOT_BAD_METADATA, key, "must be a non-negative integer scalar");
    if (*v < lo || *v > hi)
        return ingot__err(err, INGOT_BAD_METADATA, INGOT_NO_OFFSET, key, strlen(key),
                          "value %llu outside [%llu, %llu]", (unsigned long long)*v,
                          (unsigned long long)lo, (unsigned long long)hi);
    return INGOT_OK;
}

/* An integer array key of exactly `count` elements, each in [lo, hi], into out (u64 each). */
static ingot_status get_array(const ingot_writer *w, const char *key, uint64_t count, uint64_t lo,
                              uint64_t hi, uint64_t *out, bool *present, ingot_error *err)
{
    const ingot__wmeta *m = find_meta(w, key);
    *present = m != NULL;
    if (!m) return INGOT_OK;
    if (!m->is_array && m->type == INGOT_META_STRING)
        return json_ints(key, m, true, count, lo, hi, out, err);
    if (!m->is_array || !is_int_type(m->type))
        return bad_key(err, INGOT_BAD_METADATA, key, "must be an integer array");
    if (m->count != count)
        return ingot__err(err, INGOT_BAD_METADATA, INGOT_NO_OFFSET, key, strlen(key),
                          "has %llu elements, the topology needs %llu",
                          (unsigned long long)m->count, (unsigned long long)count);
    for (uint64_t k = 0; k < count; k++)
        if (!int_at(m, k, &out[k]) || out[k] < lo || out[k] > hi)
            return ingot__err(err, INGOT_BAD_METADATA, INGOT_NO_OFFSET, key, strlen(key),
                              "element %llu is outside [%llu, %llu]", (unsigned long long)k,
                              (unsigned long long)lo, (unsigned long long)hi);
    return INGOT_OK;
}

/* Per-tensor rules, at add_tensor time (the core lends the name) and again at begin. */
static ingot_status check_tensor(const ingot__wtensor *t, ingot_error *err)
{
    uint32_t k;
    bool bias;
    if (t->dtype != INGOT_DTYPE_F32 && t->dtype != INGOT_DTYPE_F64)
        return ingot__err(err, INGOT_UNSUPPORTED, INGOT_NO_OFFSET, t->name, t->name_len,
                          "RMD1 stores only F32 or F64, not %s", ingot_dtype_name(t->dtype));
    if (!ingot__rmd1_parse_name(t->name, t->name_len, &k, &bias))
        return ingot__err(err, INGOT_UNSUPPORTED, INGOT_NO_OFFSET, t->name, t->name_len,
                          "RMD1 stores only tensors layers.<k>.weight and layers.<k>.bias");
    if (t->rank != (bias ? 1u : 2u))
        return ingot__err(err, INGOT_BAD_SHAPE, INGOT_NO_OFFSET, t->name, t->name_len,
                          "rank %u; RMD1 needs [out, in] weights and [out] biases", t->rank);
    return INGOT_OK;
}

static ingot_status check_tensor_hook(ingot_writer *w, const ingot__wtensor *t, ingot_error *err)
{
    (void)w;
    return t->name ? check_tensor(t, err) : INGOT_OK;
}

static void free_state(ingot_writer *w)
{
    wstate *s = w->fmt_state;
    if (!s) return;
    ingot__free(&w->alloc, s->fill_own, s->fill_own ? (size_t)s->fill_len : 0);
    ingot__free(&w->alloc, s, sizeof *s);
    w->fmt_state = NULL;
}

/* Everything begin needs, in one allocation: u64 sizes[L+1], woff[L], boff[L]; u8 act[L];
 * u32 target order [2L]. */
typedef struct {
    uint64_t *sizes, *woff, *boff;
    uint32_t *order;
    uint8_t *act;
    size_t bytes;
    void *mem;
} plan;

static ingot_status plan_alloc(ingot_writer *w, uint32_t L, plan *p, ingot_error *err)
{
    p->bytes = ((size_t)L + 1) * 8 + (size_t)L * 16 + (size_t)L * 8 + L;
    p->mem = ingot__calloc(&w->alloc, p->bytes);
    if (!p->mem) return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "allocating");
    p->sizes = p->mem;
    p->woff = p->sizes + L + 1;
    p->boff = p->woff + L;
    p->order = (uint32_t *)(p->boff + L);
    p->act = (uint8_t *)(p->order + 2 * (size_t)L);
    return INGOT_OK;
}

/* Position of tensor (k, bias) in the wanted order: weights by offset, then biases by offset. */
static void sort_by_offset(uint32_t *v, uint32_t n, const uint64_t *off)
{
    /* insertion sort is fine for the canonical (already sorted) case; fall back to shell gaps */
    for (uint32_t gap = n / 2; gap > 0; gap /= 2)
        for (uint32_t i = gap; i < n; i++) {
            uint32_t x = v[i], j = i;
            while (j >= gap && off[v[j - gap]] > off[x]) {
                v[j] = v[j - gap];
                j -= gap;
            }
            v[j] = x;
        }
}

/* Layout from explicit rmd1.* keys: ranges inside W/B, no overlap; returns the gap total. */
static ingot_status check_layout(const uint64_t *off, const uint64_t *len, uint32_t L,
                                 uint64_t total, uint32_t *ord, const char *key, uint64_t *gaps,
                                 ingot_error *err)
{
    for (uint32_t k = 0; k < L; k++) ord[k] = k;
    sort_by_offset(ord, L, off);
    uint64_t pos = 0, g = 0;
    for (uint32_t j = 0; j < L; j++) {
        uint64_t o = off[ord[j]], e;
        if (o < pos || !ing_add(o, len[ord[j]], &e) || e > total)
            return ingot__err(err, INGOT_BAD_METADATA, INGOT_NO_OFFSET, key, strlen(key),
                              "layer %u's range overlaps another or exceeds the array", ord[j]);
        g += o - pos;
        pos = e;
    }
    *gaps = g + (total - pos);
    return INGOT_OK;
}

static ingot_status unknown_act(uint32_t k, const char *nm, size_t len, ingot_error *err)
{
    return ingot__err(err, INGOT_UNSUPPORTED, INGOT_NO_OFFSET, "mlp.activations", 15,
                      "layer %u: activation \"%.*s\" has no RMD1 id (identity, relu, sigmoid, "
                      "tanh, softmax)",
                      k, (int)(len > 40 ? 40 : len), nm);
}

/* mlp.activations as JSON text ("[\"relu\",\"sigmoid\"]"), from a strings-only format. */
static ingot_status json_acts(const ingot__wmeta *m, uint32_t L, uint8_t *act, ingot_error *err)
{
    ingot__json j;
    ingot__json_tok t;
    ingot__json_init(&j, m->blob, m->blob_len, 2, 0);
    uint32_t n = 0;
    ingot_status st = ingot__json_next(&j, &t, NULL);
    if (st == INGOT_OK && t.type != ING_JSON_ARRAY) st = INGOT_BAD_METADATA;
    if (st == INGOT_OK) st = ingot__json_next(&j, &t, NULL);
    while (st == INGOT_OK && t.type == ING_JSON_STRING && n < L) {
        int id = -1;
        for (uint32_t i = 0; i < RMD1_ACT_COUNT && id < 0; i++) {
            const char *nm = ingot__rmd1_act_name(i);
            if (ingot__json_str_eq(&t, nm, strlen(nm))) id = (int)i;
        }
        if (id < 0) return unknown_act(n, (const char *)t.p, t.len, err);
        act[n++] = (uint8_t)id;
        st = ingot__json_next(&j, &t, NULL);
    }
    if (st == INGOT_OK && t.type == ING_JSON_ARRAY_END) st = ingot__json_next(&j, &t, NULL);
    if (st != INGOT_OK || t.type != ING_JSON_END || n != L)
        return bad_key(err, INGOT_BAD_METADATA, "mlp.activations",
                       "text value is not a JSON array with one name per layer");
    return INGOT_OK;
}

static ingot_status build(ingot_writer *w, plan *p, wstate *s, ingot_error *err)
{
    uint64_t L64;
    bool has;
    for (size_t i = 0; i < w->n_tensors; i++) ING_TRY(check_tensor(&w->tensors[i], err));
    ING_TRY(get_scalar(w, "mlp.layer_count", 1, 65536, &L64, &has, err));
    if (!has)
        return bad_key(err, INGOT_BAD_METADATA, "mlp.layer_count",
                       "missing: RMD1 needs the topology keys mlp.layer_count, mlp.sizes and "
                       "mlp.activations");
    uint32_t L = (uint32_t)L64;
    ING_TRY(plan_alloc(w, L, p, err));
    ING_TRY(get_array(w, "mlp.sizes", (uint64_t)L + 1, 1, UINT32_MAX, p->sizes, &has, err));
    if (!has) return bad_key(err, INGOT_BAD_METADATA, "mlp.sizes", "missing (in_0, out_0 .. out_{L-1})");

    const ingot__wmeta *acts = find_meta(w, "mlp.activations");
    if (!acts) return bad_key(err, INGOT_BAD_METADATA, "mlp.activations", "missing");
    if (!acts->is_array && acts->type == INGOT_META_STRING) {
        ING_TRY(json_acts(acts, L, p->act, err));
    } else {
        if (!acts->is_array || acts->type != INGOT_META_STRING || acts->count != L)
            return bad_key(err, INGOT_BAD_METADATA, "mlp.activations",
                           "must be a string array with one name per layer");
        size_t at = 0;
        for (uint32_t k = 0; k < L; k++) {
            const char *nm = (const char *)acts->blob + at;
            int id = ingot__rmd1_act_id(nm, (size_t)acts->lens[k]);
            if (id < 0) return unknown_act(k, nm, (size_t)acts->lens[k], err);
            p->act[k] = (uint8_t)id;
            at += (size_t)acts->lens[k];
        }
    }
    /* rmd1.activation_ids must agree when present (it is redundant with the names). */
    uint64_t *tmp = p->woff; /* scratch until the offsets are filled */
    ING_TRY(get_array(w, "rmd1.activation_ids", L, 0, RMD1_ACT_COUNT - 1, tmp, &has, err));
    for (uint32_t k = 0; has && k < L; k++)
        if (tmp[k] != p->act[k])
            return ingot__err(err, INGOT_BAD_METADATA, INGOT_NO_OFFSET, "rmd1.activation_ids", 19,
                              "layer %u: id %llu, but mlp.activations says \"%s\"", k,
                              (unsigned long long)tmp[k], ingot__rmd1_act_name(p->act[k]));
    uint64_t v;
    ING_TRY(get_scalar(w, "rmd1.version", 0, UINT64_MAX, &v, &has, err));
    if (has && v != RMD1_VERSION)
        return bad_key(err, INGOT_UNSUPPORTED, "rmd1.version", "only RMD1 version 1 exists");

    /* Tensors: exactly the 2L named ones, shapes from mlp.sizes, one dtype. */
    if (w->n_tensors != 2 * (uint64_t)L)
        return ingot__err(err, INGOT_BAD_METADATA, INGOT_NO_OFFSET, "mlp.layer_count", 15,
                          "%u layers need %llu tensors, the writer has %llu", L,
                          (unsigned long long)(2 * (uint64_t)L),
                          (unsigned long long)w->n_tensors);
    ingot_dtype dt = w->n_tensors ? w->tensors[0].dtype : INGOT_DTYPE_F32;
    for (size_t i = 0; i < w->n_tensors; i++) {
        const ingot__wtensor *t = &w->tensors[i];
        uint32_t k;
        bool bias;
        ingot__rmd1_parse_name(t->name, t->name_len, &k, &bias); /* check_tensor vetted it */
        if (k >= L)
            return ingot__err(err, INGOT_BAD_METADATA, INGOT_NO_OFFSET, t->name, t->name_len,
                              "layer %u does not exist (mlp.layer_count is %u)", k, L);
        if (t->dtype != dt)
            return ingot__err(err, INGOT_UNSUPPORTED, INGOT_NO_OFFSET, t->name, t->name_len,
                              "%s, but %s is %s: RMD1 has one dtype for the whole file",
                              ingot_dtype_name(t->dtype), w->tensors[0].name,
                              ingot_dtype_name(dt));
        uint64_t in = p->sizes[k], out = p->sizes[k + 1];
        if (t->shape[0] != out || (!bias && t->shape[1] != in))
            return ingot__err(err, INGOT_BAD_SHAPE, INGOT_NO_OFFSET, t->name, t->name_len,
                              "shape does not match mlp.sizes (layer %u: in %llu, out %llu)", k,
                              (unsigned long long)in, (unsigned long long)out);
        p->order[bias ? L + k : k] = (uint32_t)i; /* names are unique: each slot once */
    }
    ING_TRY(get_scalar(w, "rmd1.dtype", 0, 1, &v, &has, err));
    if (has && v != (dt == INGOT_DTYPE_F64 ? 1u : 0u))
        return bad_key(err, INGOT_BAD_METADATA, "rmd1.dtype", "disagrees with the tensors' dtype");
    s->L = L;
    s->es = dt == INGOT_DTYPE_F64 ? 8 : 4;

    /* Layout: sequential packing unless rmd1.* says otherwise. */
    uint64_t W = 0, B = 0;
    for (uint32_t k = 0; k < L; k++) {
        p->woff[k] = W;
        p->boff[k] = B;
        W += p->sizes[k] * p->sizes[k + 1];
        B += p->sizes[k + 1];
    }
    ING_TRY(get_array(w, "rmd1.weight_offsets", L, 0, UINT32_MAX, p->woff, &has, err));
    ING_TRY(get_array(w, "rmd1.bias_offsets", L, 0, UINT32_MAX, p->boff, &has, err));
    ING_TRY(get_scalar(w, "rmd1.weights_len", 1, UINT32_MAX, &W, &has, err));
    ING_TRY(get_scalar(w, "rmd1.biases_len", 1, UINT32_MAX, &B, &has, err));
    if (W > UINT32_MAX || B > UINT32_MAX)
        return bad_key(err, INGOT_UNSUPPORTED, "mlp.sizes",
                       "more than 2^32-1 weights or biases: RMD1 counts are u32");
    const ingot__wmeta *wf = find_meta(w, "rmd1.weights_fill"), *bf = find_meta(w, "rmd1.biases_fill");
    if (wf && (wf->is_array || wf->type != INGOT_META_BYTES))
        return bad_key(err, INGOT_BAD_METADATA, "rmd1.weights_fill", "must be bytes");
    if (bf && (bf->is_array || bf->type != INGOT_META_BYTES))
        return bad_key(err, INGOT_BAD_METADATA, "rmd1.biases_fill", "must be bytes");
    uint32_t *ord = ingot__alloc(&w->alloc, (size_t)L * sizeof(uint32_t));
    uint64_t *lens = ingot__alloc(&w->alloc, (size_t)L * sizeof(uint64_t));
    ingot_status st = INGOT_OK;
    uint64_t wg = 0, bg = 0;
    if (!ord || !lens) st = ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "allocating");
    if (st == INGOT_OK) {
        for (uint32_t k = 0; k < L; k++) lens[k] = p->sizes[k] * p->sizes[k + 1];
        st = check_layout(p->woff, lens, L, W, ord, "rmd1.weight_offsets", &wg, err);
    }
    if (st == INGOT_OK) {
        for (uint32_t k = 0; k < L; k++) lens[k] = p->sizes[k + 1];
        st = check_layout(p->boff, lens, L, B, ord, "rmd1.bias_offsets", &bg, err);
    }
    if (st == INGOT_OK) {
        /* Wanted order: weights by offset, then biases by offset. */
        uint32_t *o2 = ord;
        for (int part = 0; part < 2 && st == INGOT_OK; part++) {
            for (uint32_t k = 0; k < L; k++) o2[k] = k;
            sort_by_offset(o2, L, part ? p->boff : p->woff);
            /* p->order[part*L + k] holds the writer index of layer k; reorder to file order */
            for (uint32_t j = 0; j < L; j++) lens[j] = p->order[part * L + o2[j]];
            for (uint32_t j = 0; j < L; j++) p->order[part * L + j] = (uint32_t)lens[j];
        }
    }
    ingot__free(&w->alloc, ord, ord ? (size_t)L * sizeof(uint32_t) : 0);
    ingot__free(&w->alloc, lens, lens ? (size_t)L * sizeof(uint64_t) : 0);
    ING_TRY(st);
    uint64_t wfl = wf ? wf->blob_len : 0, bfl = bf ? bf->blob_len : 0;
    if (wfl != wg * s->es)
        return ingot__err(err, INGOT_BAD_METADATA, INGOT_NO_OFFSET, "rmd1.weights_fill", 17,
                          "%llu bytes, the layout leaves %llu uncovered weight bytes",
                          (unsigned long long)wfl, (unsigned long long)(wg * s->es));
    if (bfl != bg * s->es)
        return ingot__err(err, INGOT_BAD_METADATA, INGOT_NO_OFFSET, "rmd1.biases_fill", 16,
                          "%llu bytes, the layout leaves %llu uncovered bias bytes",
                          (unsigned long long)bfl, (unsigned long long)(bg * s->es));
    s->W = (uint32_t)W;
    s->B = (uint32_t)B;
    s->fill_len = wfl + bfl;
    if (wfl && bfl) {
        s->fill_own = ingot__alloc(&w->alloc, (size_t)s->fill_len);
        if (!s->fill_own) return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "allocating");
        memcpy(s->fill_own, wf->blob, (size_t)wfl);
        memcpy(s->fill_own + wfl, bf->blob, (size_t)bfl);
        s->fill = s->fill_own;
    } else {
        s->fill = wfl ? wf->blob : bfl ? bf->blob : NULL;
    }
    return INGOT_OK;
}

static ingot_status begin(ingot_writer *w, uint64_t *total, ingot_error *err)
{
    wstate *s = ingot__calloc(&w->alloc, sizeof *s);
    if (!s) return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "allocating");
    w->fmt_state = s;
    plan p = {0};
    ingot_status st = build(w, &p, s, err);
    uint32_t L = s->L;
    uint8_t *hdr = NULL;
    size_t hdr_len = RMD1_HDR + (size_t)RMD1_REC * L;
    if (st == INGOT_OK) {
        /* Stream order must be file order. Tensors that carry their data are simply reordered;
         * pushed data arrives in declaration order, which must then already be file order. */
        bool in_order = true, all_data = true;
        for (uint32_t j = 0; j < 2 * L; j++) {
            if (p.order[j] != j) in_order = false;
            if (!w->tensors[j].data) all_data = false;
        }
        if (!in_order && !all_data) {
            st = ingot__err(err, INGOT_UNSUPPORTED, INGOT_NO_OFFSET, w->tensors[0].name,
                            w->tensors[0].name_len,
                            "RMD1 stores all weights, then all biases: declare the tensors in "
                            "that order (layers.0.weight .. layers.%u.bias) or pass their data "
                            "at add_tensor time",
                            L - 1);
        } else if (!in_order) {
            size_t tb = (size_t)2 * L * sizeof(ingot__wtensor);
            ingot__wtensor *tmp = ingot__alloc(&w->alloc, tb);
            if (!tmp) {
                st = ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "allocating");
            } else {
                for (uint32_t j = 0; j < 2 * L; j++) tmp[j] = w->tensors[p.order[j]];
                memcpy(w->tensors, tmp, tb);
                ingot__free(&w->alloc, tmp, tb);
            }
        }
    }
    if (st == INGOT_OK) {
        hdr = ingot__calloc(&w->alloc, hdr_len);
        if (!hdr) st = ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "allocating");
    }
    if (st == INGOT_OK) {
        memcpy(hdr, RMD1_MAGIC, 4);
        ing_st16(hdr + 4, RMD1_VERSION);
        hdr[6] = s->es == 8 ? 1 : 0;
        ing_st32(hdr + 8, L);
        ing_st32(hdr + 12, s->W);
        ing_st32(hdr + 16, s->B);
        uint64_t wbase = hdr_len, bbase = wbase + (uint64_t)s->W * s->es;
        for (uint32_t k = 0; k < L; k++) {
            uint8_t *r = hdr + RMD1_HDR + RMD1_REC * k;
            ing_st32(r, (uint32_t)p.sizes[k]);
            ing_st32(r + 4, (uint32_t)p.sizes[k + 1]);
            ing_st32(r + 8, (uint32_t)p.woff[k]);
            ing_st32(r + 12, (uint32_t)p.boff[k]);
            r[16] = p.act[k];
        }
        for (uint32_t j = 0; j < 2 * L; j++) {
            ingot__wtensor *t = &w->tensors[j];
            uint32_t k;
            bool bias;
            ingot__rmd1_parse_name(t->name, t->name_len, &k, &bias);
            t->offset = bias ? bbase + p.boff[k] * s->es : wbase + p.woff[k] * s->es;
        }
        s->total = bbase + (uint64_t)s->B * s->es;
        *total = s->total;
        /* Metadata RMD1 cannot hold. */
        for (size_t i = 0; i < w->n_meta; i++) {
            bool known = false;
            for (size_t j = 0; j < sizeof known_keys / sizeof *known_keys; j++)
                if (strcmp(w->meta[i].key, known_keys[j]) == 0) known = true;
            if (!known)
                ingot__writer_notice(w, "rmd1: metadata key '%s' dropped (RMD1 stores no free "
                                        "metadata)",
                                     w->meta[i].key);
        }
        st = ingot__wsink_reserve(w, s->total, err);
        if (st == INGOT_OK) st = ingot__wsink_write(w, hdr, hdr_len, err);
    }
    ingot__free(&w->alloc, hdr, hdr ? hdr_len : 0);
    ingot__free(&w->alloc, p.mem, p.mem ? p.bytes : 0);
    return st;
}

/* The gap before tensor i (or before the end) is the next run of fill bytes. */
static ingot_status put_fill(ingot_writer *w, uint64_t upto, ingot_error *err)
{
    wstate *s = w->fmt_state;
    if (w->pos > upto)
        return ingot__err(err, INGOT_MISUSE, w->pos, 0, 0, "stream position past tensor start");
    uint64_t n = upto - w->pos;
    if (n == 0) return INGOT_OK;
    if (n > s->fill_len - s->fill_at)
        return ingot__err(err, INGOT_MISUSE, w->pos, 0, 0, "fill bytes exhausted");
    ING_TRY(ingot__wsink_write(w, s->fill + s->fill_at, (size_t)n, err));
    s->fill_at += n;
    return INGOT_OK;
}

static ingot_status before_tensor(ingot_writer *w, uint64_t i, ingot_error *err)
{
    return put_fill(w, w->tensors[i].offset, err);
}

static ingot_status finish(ingot_writer *w, ingot_error *err)
{
    wstate *s = w->fmt_state;
    ING_TRY(put_fill(w, s->total, err));
    if (w->pos != s->total || s->fill_at != s->fill_len)
        return ingot__err(err, INGOT_MISUSE, w->pos, 0, 0, "wrote %llu bytes, layout has %llu",
                          (unsigned long long)w->pos, (unsigned long long)s->total);
    return INGOT_OK;
}

const ingot__writer_ops ingot__writer_rmd1 = {
    .check_tensor = check_tensor_hook,
    .begin = begin,
    .before_tensor = before_tensor,
    .finish = finish,
    .free_state = free_state,
};
