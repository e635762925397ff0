/*
 * llama2c_adapter.c - reader of llama2.c checkpoints (karpathy/llama2.c: run.c reads the legacy
 * layout, export.py writes all three; ingot's mapping: docs/formats/llama2c.md). Read-only.
 * All numbers little-endian; arrays are row-major, matrices [out, in] (torch's layout).
 *
 * legacy ("version 0", no magic): 7 x i32 dim, hidden_dim, n_layers, n_heads, n_kv_heads,
 *   vocab_size (negative: an untied classifier follows), seq_len; then f32 arrays:
 *   token_embd [vocab, dim], attn_norm [L][dim], wq [L][dim, dim], wk [L][kv, dim],
 *   wv [L][kv, dim], wo [L][dim, dim], ffn_norm [L][dim], w1 [L][hidden, dim],
 *   w2 [L][dim, hidden], w3 [L][hidden, dim], final norm [dim], freq_cis_real and
 *   freq_cis_imag [seq_len, head_size / 2], (classifier [vocab, dim]). Without a magic it is
 *   recognised only when the file size is exactly what the header implies (probe_size).
 * version 1 ("ak42"): u32 0x616b3432, i32 1, the 7 i32 (vocab > 0), u8 shared_classifier, zeros
 *   to byte 256; f32 arrays attn_norm [L], ffn_norm [L], final norm, token_embd, wq [L], wk [L],
 *   wv [L], wo [L], w1 [L], w2 [L], w3 [L], (classifier).
 * version 2: as 1 plus i32 group_size at byte 37; the three norm groups in f32, then each of
 *   token_embd, wq [L] .. w3 [L], (classifier) as int8 q [numel] followed by f32 scale
 *   [numel / group_size] (x = q[i] * scale[i / group_size] over the flat tensor).
 * Tensors carry llama.cpp's GGUF names (token_embd.weight, blk.N.attn_q.weight, ...; a v2
 * weight's scales are "<name>_scale") and the header becomes GGUF's llama.* keys, so the
 * language-model runtime reads a llama2.c file as it reads a GGUF one.
 */
#include <string.h>

#include "alloc.h"
#include "checked.h"
#include "error.h"
#include "llama2c_format.h"

#define AK42_MAGIC 0x616b3432u
#define LEGACY_HDR 28u
#define AK42_HDR 256u
/* Layers beyond this are no llama2.c model; the cap bounds the name pool (< 2.5 MiB). */
#define MAX_LAYERS 4096u

enum kind {
    K_EMBD, K_ATTN_NORM, K_Q, K_K, K_V, K_O, K_FFN_NORM, K_GATE, K_DOWN, K_UP, K_OUT_NORM,
    K_FREQ_RE, K_FREQ_IM, K_OUTPUT, K_COUNT
};

static const struct {
    const char *name; /* after "blk.N." for per-layer kinds */
    bool per_layer;
} kinds[K_COUNT] = {
    {"token_embd.weight", false}, {"attn_norm.weight", true}, {"attn_q.weight", true},
    {"attn_k.weight", true},      {"attn_v.weight", true},    {"attn_output.weight", true},
    {"ffn_norm.weight", true},    {"ffn_gate.weight", true},  {"ffn_down.weight", true},
    {"ffn_up.weight", true},      {"output_norm.weight", false}, {"freq_cis_real", false},
    {"freq_cis_imag", false},     {"output.weight", false},
};

typedef struct hdr {
    uint32_t version; /* 0 legacy, 1, 2 */
    uint32_t dim, hidden, L, heads, kv_heads, vocab, seq, gs;
    bool shared;
    uint64_t data;  /* offset of the first array */
    uint64_t total; /* file size the header implies */
} hdr;

/* A run of tensors of one kind in file order (L of them, or 1). */
typedef struct group {
    uint8_t kind;
    bool quant;       /* v2: int8 data + f32 scales per tensor */
    uint32_t count;   /* tensors */
    uint64_t first;   /* index of the group's first tensor (scales count as tensors) */
    uint64_t off;     /* file offset of its first byte */
    uint64_t qbytes;  /* bytes of one tensor's data */
    uint64_t sbytes;  /* v2: bytes of its scales */
} group;

typedef struct state {
    hdr h;
    group g[K_COUNT];
    uint32_t ng;
    uint64_t nt;
    char *names;
    size_t names_len;
    uint32_t *name_off;
} state;

#define S(f) ((const state *)(f)->state)

static int32_t ld_i32(const uint8_t *p) { return (int32_t)ing_ld32(p); }

/* Elements of one tensor of kind k. */
static uint64_t kind_elems(const hdr *h, int k)
{
    uint64_t dim = h->dim, kv = (uint64_t)h->dim / h->heads * h->kv_heads, hid = h->hidden;
    switch (k) {
    case K_EMBD: case K_OUTPUT: return (uint64_t)h->vocab * dim;
    case K_ATTN_NORM: case K_FFN_NORM: case K_OUT_NORM: return dim;
    case K_Q: case K_O: return dim * dim;
    case K_K: case K_V: return kv * dim;
    case K_GATE: case K_DOWN: case K_UP: return hid * dim;
    case K_FREQ_RE: case K_FREQ_IM: return (uint64_t)h->seq * (dim / h->heads / 2);
    }
    return 0;
}

/* File order of the groups of each layout. */
static const uint8_t order_v0[] = {K_EMBD, K_ATTN_NORM, K_Q, K_K, K_V, K_O, K_FFN_NORM, K_GATE,
                                   K_DOWN, K_UP, K_OUT_NORM, K_FREQ_RE, K_FREQ_IM, K_OUTPUT};
static const uint8_t order_v1[] = {K_ATTN_NORM, K_FFN_NORM, K_OUT_NORM, K_EMBD, K_Q, K_K, K_V,
                                   K_O, K_GATE, K_DOWN, K_UP, K_OUTPUT};

/* Lays the groups out from h (header already checked); every sum and product checked. Fills
 * s->g (if s) and h->total. BAD_SIZE on overflow or a v2 tensor not divisible by group_size. */
static ingot_status layout(hdr *h, state *s, ingot_error *err)
{
    const uint8_t *order = h->version == 0 ? order_v0 : order_v1;
    size_t n = h->version == 0 ? sizeof order_v0 : sizeof order_v1;
    uint64_t off = h->data, idx = 0;
    uint32_t ng = 0;
    for (size_t i = 0; i < n; i++) {
        int k = order[i];
        if (k == K_OUTPUT && h->shared) continue;
        bool quant = h->version == 2 && k != K_ATTN_NORM && k != K_FFN_NORM && k != K_OUT_NORM;
        uint32_t count = kinds[k].per_layer ? h->L : 1;
        uint64_t el = kind_elems(h, k), qb, sb = 0, per, all;
        if (quant) {
            if (el % h->gs)
                return ingot__err(err, INGOT_BAD_SIZE, 37, kinds[k].name, strlen(kinds[k].name),
                                  "llama2c: %llu elements are not a multiple of group_size %u",
                                  (unsigned long long)el, h->gs);
            qb = el;
            sb = el / h->gs * 4;
        } else if (!ing_mul(el, 4, &qb)) {
            qb = UINT64_MAX;
        }
        if (qb == UINT64_MAX || !ing_add(qb, sb, &per) || !ing_mul(per, count, &all) ||
            !ing_add(off, all, &off))
            return ingot__err(err, INGOT_BAD_SIZE, 0, "header", 6,
                              "llama2c: the arrays the header declares overflow 64 bits");
        if (s) {
            group *g = &s->g[ng];
            g->kind = (uint8_t)k;
            g->quant = quant;
            g->count = count;
            g->first = idx;
            g->off = off - all;
            g->qbytes = qb;
            g->sbytes = sb;
        }
        ng++;
        idx += (uint64_t)count * (quant ? 2 : 1);
    }
    h->total = off;
    if (s) {
        s->ng = ng;
        s->nt = idx;
    }
    return INGOT_OK;
}

/* Parses and checks the header in head[0..n) (n may be short). */
static ingot_status parse_header(const uint8_t *p, size_t n, hdr *h, ingot_error *err)
{
    memset(h, 0, sizeof *h);
    const uint8_t *c = p; /* the 7 config ints */
    if (n >= 8 && ing_ld32(p) == AK42_MAGIC) {
        int32_t v = ld_i32(p + 4);
        if (v != 1 && v != 2)
            return ingot__err(err, INGOT_BAD_VERSION, 4, "header", 6,
                              "llama2c: version %d (1 and 2 exist)", v);
        if (n < AK42_HDR)
            return ingot__err(err, INGOT_TRUNCATED, n, "header", 6,
                              "llama2c: %zu bytes, the header has 256", n);
        h->version = (uint32_t)v;
        c = p + 8;
        h->data = AK42_HDR;
        if (p[36] > 1)
            return ingot__err(err, INGOT_BAD_METADATA, 36, "header", 6,
                              "llama2c: shared_classifier flag is %u (0 or 1)", p[36]);
        h->shared = p[36] == 1;
        size_t pad = 37;
        if (v == 2) {
            int32_t gs = ld_i32(p + 37);
            if (gs <= 0)
                return ingot__err(err, INGOT_BAD_METADATA, 37, "header", 6,
                                  "llama2c: group_size %d", gs);
            h->gs = (uint32_t)gs;
            pad = 41;
        }
        for (size_t i = pad; i < AK42_HDR; i++)
            if (p[i])
                return ingot__err(err, INGOT_BAD_LAYOUT, i, "header", 6,
                                  "llama2c: header padding byte %zu is not zero", i);
    } else {
        if (n < LEGACY_HDR)
            return ingot__err(err, INGOT_TRUNCATED, n, "header", 6,
                              "llama2c: %zu bytes, the header has 28", n);
        h->data = LEGACY_HDR;
    }
    static const char *const field[7] = {"dim", "hidden_dim", "n_layers", "n_heads",
                                         "n_kv_heads", "vocab_size", "seq_len"};
    int32_t v[7];
    for (int i = 0; i < 7; i++) {
        v[i] = ld_i32(c + 4 * i);
        bool ok = i == 5 ? (v[i] != 0 && v[i] != INT32_MIN && (h->version == 0 || v[i] > 0))
                         : v[i] > 0;
        if (!ok)
            return ingot__err(err, INGOT_BAD_METADATA, (uint64_t)(c - p) + 4 * (uint64_t)i,
                              field[i], strlen(field[i]), "llama2c: %s is %d", field[i], v[i]);
    }
    h->dim = (uint32_t)v[0];
    h->hidden = (uint32_t)v[1];
    h->L = (uint32_t)v[2];
    h->heads = (uint32_t)v[3];
    h->kv_heads = (uint32_t)v[4];
    if (h->version == 0) h->shared = v[5] > 0;
    h->vocab = (uint32_t)(v[5] > 0 ? v[5] : -v[5]);
    h->seq = (uint32_t)v[6];
    uint64_t at = (uint64_t)(c - p);
    if (h->dim % h->heads || (h->dim / h->heads) % 2)
        return ingot__err(err, INGOT_BAD_METADATA, at + 12, "n_heads", 7,
                          "llama2c: dim %u is not n_heads %u x an even head size", h->dim,
                          h->heads);
    if (h->kv_heads > h->heads || h->heads % h->kv_heads)
        return ingot__err(err, INGOT_BAD_METADATA, at + 16, "n_kv_heads", 10,
                          "llama2c: %u kv heads do not divide %u heads", h->kv_heads, h->heads);
    if (h->L > MAX_LAYERS)
        return ingot__err(err, INGOT_LIMIT, at + 8, "n_layers", 8,
                          "llama2c: %u layers (ingot's cap is %u)", h->L, MAX_LAYERS);
    return layout(h, NULL, err);
}

static int probe(const uint8_t *head, size_t n)
{
    if (n < 4 || ing_ld32(head) != AK42_MAGIC) return 0;
    if (n >= 8 && (ing_ld32(head + 4) == 1 || ing_ld32(head + 4) == 2)) return 90;
    return 40;
}

/* The legacy layout has no magic: only a header whose arrays end exactly at the end of the
 * file counts (a 64-bit size agreeing by chance is not a practical risk). */
static int probe_size(const uint8_t *head, size_t n, uint64_t size)
{
    if (n >= 4 && ing_ld32(head) == AK42_MAGIC) return 0;
    hdr h;
    if (parse_header(head, n, &h, NULL) != INGOT_OK || h.version != 0) return 0;
    return h.total == size ? 30 : 0;
}

static void free_state(const ingot_allocator *a, state *s)
{
    if (!s) return;
    ingot__free(a, s->names, s->names_len);
    ingot__free(a, s->name_off, (size_t)s->nt * sizeof *s->name_off);
    ingot__free(a, s, sizeof *s);
}

/* Tensor i as (group, layer, scale). */
static const group *locate(const state *s, uint64_t i, uint32_t *layer, bool *scale)
{
    for (uint32_t k = 0; k < s->ng; k++) {
        const group *g = &s->g[k];
        uint64_t per = g->quant ? 2 : 1;
        if (i >= g->first && i < g->first + (uint64_t)g->count * per) {
            *layer = (uint32_t)((i - g->first) / per);
            *scale = (i - g->first) % per == 1;
            return g;
        }
    }
    return NULL;
}

static ingot_status open_l2c(ingot_file *f, ingot_error *err)
{
    uint64_t size = f->size;
    const uint8_t *p;
    size_t n = size < AK42_HDR ? (size_t)size : AK42_HDR;
    ING_TRY(ingot__file_head(f, n, &p, err));
    hdr h;
    ING_TRY(parse_header(p, n, &h, err));
    if (size < h.total)
        return ingot__err(err, INGOT_TRUNCATED, size, "header", 6,
                          "llama2c: file has %llu bytes, its header declares %llu",
                          (unsigned long long)size, (unsigned long long)h.total);
    if (size > h.total)
        return ingot__err(err, INGOT_BAD_LAYOUT, h.total, "header", 6,
                          "llama2c: %llu bytes follow the last array (the file must end there)",
                          (unsigned long long)(size - h.total));
    state *s = ingot__calloc(&f->alloc, sizeof *s);
    if (!s) return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "allocating the reader");
    s->h = h;
    ingot_status st = layout(&s->h, s, err);
    if (st == INGOT_OK) {
        /* "blk.4095.attn_output.weight_scale" is the longest name: 34 bytes */
        s->names_len = (size_t)s->nt * 36;
        s->names = ingot__alloc(&f->alloc, s->names_len);
        s->name_off = ingot__alloc(&f->alloc, (size_t)s->nt * sizeof *s->name_off);
        if (!s->names || !s->name_off)
            st = ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "allocating tensor names");
    }
    size_t at = 0;
    for (uint64_t i = 0; st == INGOT_OK && i < s->nt; i++) {
        uint32_t layer;
        bool scale;
        const group *g = locate(s, i, &layer, &scale);
        s->name_off[i] = (uint32_t)at;
        const char *nm = kinds[g->kind].name;
        if (kinds[g->kind].per_layer)
            at += ingot__fmt(s->names + at, s->names_len - at, "blk.%u.%s%s", layer, nm,
                             scale ? "_scale" : "") + 1;
        else
            at += ingot__fmt(s->names + at, s->names_len - at, "%s%s", nm, scale ? "_scale" : "") +
                  1;
    }
    if (st != INGOT_OK) {
        free_state(&f->alloc, s);
        return st;
    }
    f->state = s;
    bool aligned = true;
    for (uint32_t k = 0; k < s->ng; k++)
        if (s->g[k].quant && s->g[k].qbytes % 4) aligned = false;
    f->alignment = aligned ? 4 : 1;
    ingot__fmt(f->version, sizeof f->version, "%u", h.version);
    return INGOT_OK;
}

static void close_l2c(ingot_file *f)
{
    free_state(&f->alloc, f->state);
    f->state = NULL;
}

/* ---- tensors ---- */

static uint64_t tensor_count(const ingot_file *f) { return S(f)->nt; }

static ingot_status tensor_at(const ingot_file *f, uint64_t i, ingot_tensor_info *out)
{
    const state *s = S(f);
    memset(out, 0, sizeof *out);
    if (i >= s->nt) return INGOT_RANGE;
    uint32_t layer;
    bool scale;
    const group *g = locate(s, i, &layer, &scale);
    const hdr *h = &s->h;
    out->name = s->names + s->name_off[i];
    out->name_len = strlen(out->name);
    out->offset = g->off + (uint64_t)layer * (g->qbytes + g->sbytes) + (scale ? g->qbytes : 0);
    uint64_t kv = (uint64_t)h->dim / h->heads * h->kv_heads;
    uint64_t rows = 0, cols = 0;
    switch (g->kind) {
    case K_EMBD: case K_OUTPUT: rows = h->vocab, cols = h->dim; break;
    case K_ATTN_NORM: case K_FFN_NORM: case K_OUT_NORM: rows = h->dim; break;
    case K_Q: case K_O: rows = cols = h->dim; break;
    case K_K: case K_V: rows = kv, cols = h->dim; break;
    case K_GATE: case K_UP: rows = h->hidden, cols = h->dim; break;
    case K_DOWN: rows = h->dim, cols = h->hidden; break;
    case K_FREQ_RE: case K_FREQ_IM: rows = h->seq, cols = h->dim / h->heads / 2; break;
    }
    uint32_t es = 4;
    if (scale) {
        out->dtype = INGOT_DTYPE_F32;
        out->rank = 1;
        out->shape[0] = g->sbytes / 4;
    } else {
        out->dtype = g->quant ? INGOT_DTYPE_I8 : INGOT_DTYPE_F32;
        es = g->quant ? 1 : 4;
        out->rank = cols ? 2 : 1;
        out->shape[0] = rows;
        out->shape[1] = cols;
    }
    out->nelem = out->rank == 2 ? out->shape[0] * out->shape[1] : out->shape[0];
    out->nbytes = out->nelem * es;
    if (f->base) {
        out->data = f->base + out->offset;
        if ((uintptr_t)out->data % es) out->flags |= INGOT_TENSOR_UNALIGNED;
    } else {
        out->flags |= INGOT_TENSOR_NOT_MAPPED;
        if (out->offset % es) out->flags |= INGOT_TENSOR_UNALIGNED;
    }
    out->index = (uint32_t)i;
    return INGOT_OK;
}

static ingot_status tensor_find(const ingot_file *f, const char *name, size_t len,
                                ingot_tensor_info *out)
{
    const state *s = S(f);
    memset(out, 0, sizeof *out);
    if (!name) return INGOT_NOT_FOUND;
    bool scale = len > 6 && memcmp(name + len - 6, "_scale", 6) == 0;
    size_t base = scale ? len - 6 : len;
    uint32_t layer = 0;
    const char *rest = name;
    size_t rl = base;
    bool per_layer = base > 4 && memcmp(name, "blk.", 4) == 0;
    if (per_layer) {
        size_t i = 4;
        uint64_t v = 0;
        while (i < base && name[i] >= '0' && name[i] <= '9' && v <= MAX_LAYERS)
            v = v * 10 + (uint64_t)(name[i++] - '0');
        if (i == 4 || i >= base || name[i] != '.' || (name[4] == '0' && i > 5) || v >= s->h.L)
            return INGOT_NOT_FOUND;
        layer = (uint32_t)v;
        rest = name + i + 1;
        rl = base - i - 1;
    }
    for (uint32_t k = 0; k < s->ng; k++) {
        const group *g = &s->g[k];
        const char *kn = kinds[g->kind].name;
        if (kinds[g->kind].per_layer != per_layer || strlen(kn) != rl || memcmp(kn, rest, rl))
            continue;
        if (scale && !g->quant) return INGOT_NOT_FOUND;
        return tensor_at(f, g->first + (uint64_t)layer * (g->quant ? 2 : 1) + (scale ? 1 : 0),
                         out);
    }
    return INGOT_NOT_FOUND;
}

/* ---- metadata: GGUF's llama.* keys plus llama2c.* ---- */

enum {
    M_ARCH, M_BLOCKS, M_EMBD, M_FFN, M_HEADS, M_KV_HEADS, M_CTX, M_ROPE_DIMS, M_ROPE_BASE,
    M_EPS, M_BOS, M_EOS, M_VERSION, M_SHARED, M_GROUP, M_COUNT
};

static const struct {
    const char *key;
    ingot_meta_type type;
} meta_keys[M_COUNT] = {
    {"general.architecture", INGOT_META_STRING},
    {"llama.block_count", INGOT_META_U32},
    {"llama.embedding_length", INGOT_META_U32},
    {"llama.feed_forward_length", INGOT_META_U32},
    {"llama.attention.head_count", INGOT_META_U32},
    {"llama.attention.head_count_kv", INGOT_META_U32},
    {"llama.context_length", INGOT_META_U32},
    {"llama.rope.dimension_count", INGOT_META_U32},
    {"llama.rope.freq_base", INGOT_META_F32},
    {"llama.attention.layer_norm_rms_epsilon", INGOT_META_F32},
    {"tokenizer.ggml.bos_token_id", INGOT_META_U32},
    {"tokenizer.ggml.eos_token_id", INGOT_META_U32},
    {"llama2c.version", INGOT_META_U32},
    {"llama2c.shared_classifier", INGOT_META_BOOL},
    {"llama2c.group_size", INGOT_META_U32},
};

static uint64_t meta_count(const ingot_file *f)
{
    return S(f)->h.version == 2 ? M_COUNT : M_COUNT - 1;
}

static ingot_status meta_at(const ingot_file *f, uint64_t i, ingot_meta_info *out)
{
    const hdr *h = &S(f)->h;
    memset(out, 0, sizeof *out);
    if (i >= meta_count(f)) return INGOT_RANGE;
    out->key = meta_keys[i].key;
    out->key_len = strlen(out->key);
    out->type = meta_keys[i].type;
    out->index = i;
    out->count = 1;
    switch (i) {
    case M_ARCH: out->data = "llama", out->count = 5; break;
    case M_BLOCKS: out->v.u = h->L; break;
    case M_EMBD: out->v.u = h->dim; break;
    case M_FFN: out->v.u = h->hidden; break;
    case M_HEADS: out->v.u = h->heads; break;
    case M_KV_HEADS: out->v.u = h->kv_heads; break;
    case M_CTX: out->v.u = h->seq; break;
    case M_ROPE_DIMS: out->v.u = h->dim / h->heads; break;
    case M_ROPE_BASE: out->v.f = 10000.0f; break;     /* run.c's constant */
    case M_EPS: out->v.f = 1e-5f; break;              /* run.c's rmsnorm epsilon */
    case M_BOS: out->v.u = 1; break;                  /* llama2.c's tokenizer: 1 = BOS */
    case M_EOS: out->v.u = 2; break;                  /* 2 = EOS */
    case M_VERSION: out->v.u = h->version; break;
    case M_SHARED: out->v.b = h->shared; break;
    case M_GROUP: out->v.u = h->gs; break;
    }
    return INGOT_OK;
}

static ingot_status meta_find(const ingot_file *f, const char *key, size_t len,
                              ingot_meta_info *out)
{
    for (uint64_t i = 0; i < meta_count(f); i++)
        if (strlen(meta_keys[i].key) == len && memcmp(meta_keys[i].key, key, len) == 0)
            return meta_at(f, i, out);
    memset(out, 0, sizeof *out);
    return INGOT_NOT_FOUND;
}

static ingot_status meta_array_read(const ingot_file *f, uint64_t index, ingot_meta_type type,
                                    uint64_t first, uint64_t n, void *dst)
{
    (void)type, (void)first, (void)n, (void)dst;
    return index < meta_count(f) ? INGOT_WRONG_TYPE : INGOT_RANGE;
}

static ingot_status meta_array_string(const ingot_file *f, uint64_t index, uint64_t elem,
                                      const char **s, size_t *len)
{
    (void)elem, (void)s, (void)len;
    return index < meta_count(f) ? INGOT_WRONG_TYPE : INGOT_RANGE;
}

const ingot__format ingot__format_llama2c = {
    .name = "llama2c",
    .probe = probe,
    .probe_size = probe_size,
    .open = open_l2c,
    .close = close_l2c,
    .tensor_count = tensor_count,
    .tensor_at = tensor_at,
    .tensor_find = tensor_find,
    .meta_count = meta_count,
    .meta_at = meta_at,
    .meta_find = meta_find,
    .meta_array_read = meta_array_read,
    .meta_array_string = meta_array_string,
};
