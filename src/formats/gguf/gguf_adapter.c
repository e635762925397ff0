/*
 * gguf_adapter.c - GGUF v2/v3 reader (spec: ../shared/formats/gguf.md; layout in gguf_internal.h).
 *
 * Opening walks the KV records and tensor infos once, validating every field against the bytes
 * that remain, and keeps only offsets: nothing of the metadata is copied. Strings, arrays and keys
 * stay in the mapping (in pread mode: in the header bytes read at open) and are decoded on request.
 * Index (one allocation sized from the header counts): the start offset of each KV record, the
 * offset of each tensor info, and both sorted by name for O(log n) lookups. A second allocation
 * holds the NUL-terminated tensor names (the API hands out C strings) and, for string arrays, the
 * offset of every 16th element so that element k is found in at most 15 steps.
 *
 * Shapes: GGUF stores ne[] innermost first; ingot exposes shape[] outermost first (reversed).
 * Nested arrays (ARRAY of ARRAY) are exposed as one BYTES value holding their GGUF encoding,
 * starting at the value-type field (docs/formats/gguf.md).
 */
#include "alloc.h"
#include "file.h"
#include "gguf_format.h"
#include "gguf_internal.h"
#include "utf8.h"

typedef struct {
    uint64_t info_off; /* file offset of the tensor info record */
    uint64_t offset;   /* absolute file offset of the data */
    uint32_t name_off; /* into the name pool */
    uint32_t name_len;
} tent;

typedef struct {
    const uint8_t *hdr; /* file bytes [0, hdr_len): the mapping, or the header read in pread mode */
    uint64_t hdr_len;
    uint64_t n_kv, n_t;
    uint64_t *kv;      /* n_kv + 1 record start offsets (the last: end of the KV section) */
    uint64_t *kv_ck;   /* per KV: index of its first string checkpoint in ck[] */
    uint32_t *kv_tab;  /* hash table of KV index + 1 by key (0: empty), kv_mask + 1 slots */
    tent *t;
    uint32_t *t_tab;   /* hash table of tensor index + 1 by name, t_mask + 1 slots */
    uint64_t kv_mask, t_mask;
    uint64_t infos_end, data_off, data_end; /* data_end: relative end of the last tensor */
    size_t a_len;
    /* second allocation */
    uint64_t *ck;
    char *names;
    void *b;
    size_t b_len;
    uint32_t version;
    uint32_t align;
} state;

#define S(f) ((const state *)(f)->state)

static int probe(const uint8_t *head, size_t n)
{
    return n >= 4 && head[0] == 'G' && head[1] == 'G' && head[2] == 'U' && head[3] == 'F' ? 100
                                                                                          : 0;
}

/* ---- name lookup: open-addressing hash tables of index + 1, keys in the mapping ---- */

typedef struct {
    const state *s;
    bool tensors;
} sctx;

/* Name bytes of entry i: keys and tensor names both read from the file bytes. */
static void name_of(const sctx *c, uint32_t i, const uint8_t **p, uint64_t *len)
{
    uint64_t o = c->tensors ? c->s->t[i].info_off : c->s->kv[i];
    *len = ing_ld64(c->s->hdr + o);
    *p = c->s->hdr + o + 8;
}

static uint64_t hash_bytes(const uint8_t *p, uint64_t n)
{
    uint64_t h = 0x9E3779B97F4A7C15ull ^ n;
    for (; n >= 8; p += 8, n -= 8) {
        h = (h ^ ing_ld64(p)) * 0xBF58476D1CE4E5B9ull;
        h ^= h >> 31;
    }
    uint64_t v = 0;
    for (uint64_t k = 0; k < n; k++) v |= (uint64_t)p[k] << (8 * k);
    h = (h ^ v) * 0x94D049BB133111EBull;
    return h ^ (h >> 29);
}

/* Slots for n entries: a power of two >= 2n (load <= 1/2). */
static uint64_t tab_slots(uint64_t n)
{
    uint64_t c = 2;
    while (c < 2 * n) c <<= 1;
    return c;
}

/* Finds name in the table; UINT64_MAX if absent. */
static uint64_t tab_find(const sctx *c, const uint32_t *tab, uint64_t mask, const uint8_t *name,
                         uint64_t len)
{
    for (uint64_t h = hash_bytes(name, len) & mask;; h = (h + 1) & mask) {
        uint32_t e = tab[h];
        if (!e) return UINT64_MAX;
        const uint8_t *p;
        uint64_t l;
        name_of(c, e - 1, &p, &l);
        if (l == len && (len == 0 || ING_MEMCMP(p, name, (size_t)len) == 0)) return e - 1;
    }
}

/* Inserts entry i; returns the index of an earlier entry with the same name, or UINT64_MAX. */
static uint64_t tab_insert(const sctx *c, uint32_t *tab, uint64_t mask, uint32_t i)
{
    const uint8_t *name;
    uint64_t len;
    name_of(c, i, &name, &len);
    uint64_t h = hash_bytes(name, len) & mask;
    for (;; h = (h + 1) & mask) {
        uint32_t e = tab[h];
        if (!e) break;
        const uint8_t *p;
        uint64_t l;
        name_of(c, e - 1, &p, &l);
        if (l == len && (len == 0 || ING_MEMCMP(p, name, (size_t)len) == 0)) return e - 1;
    }
    tab[h] = i + 1;
    return UINT64_MAX;
}

/* ---- parsing ---- */

static void free_state(const ingot_allocator *a, state *s)
{
    if (!s) return;
    ingot__free(a, s->b, s->b_len);
    ingot__free(a, s, s->a_len);
}

static bool has_nul(const uint8_t *p, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        if (!p[i]) return true;
    return false;
}

/* Keys and tensor names must be UTF-8, as gguf-py decodes them (string values may hold any
 * bytes: vocabularies store raw-byte tokens). BAD_STRING at the first invalid byte; `where` names
 * the record by index, since the name itself is not printable text. */
static ingot_status check_utf8(gguf_cur *c, uint64_t at, uint64_t len, const char *rec,
                               uint64_t i, const char *what)
{
    size_t ok = ingot__utf8_prefix(c->p + at, (size_t)len, true);
    if (ok == len) return INGOT_OK;
    char w[32];
    size_t wl = ingot__fmt(w, sizeof w, "%s %llu", rec, (unsigned long long)i);
    return ingot__err(c->err, INGOT_BAD_STRING, at + ok, w, wl,
                      "%s %llu: %s is not valid UTF-8 (byte 0x%02x at index %zu of %llu)", rec,
                      (unsigned long long)i, what, c->p[at + ok], ok, (unsigned long long)len);
}

/* Decodes tensor info i: dtype, rank, shape (outermost first), relative offset. Everything was
 * validated at open. */
static void decode_info(const state *s, uint64_t info_off, ingot_dtype *dt, uint32_t *rank,
                        uint64_t *shape, uint64_t *rel)
{
    const uint8_t *p = s->hdr + info_off;
    uint64_t at = 8 + ing_ld64(p);
    uint32_t nd = ing_ld32(p + at);
    at += 4;
    for (uint32_t d = 0; d < nd; d++) shape[nd - 1 - d] = ing_ld64(p + at + 8 * d);
    at += 8ull * nd;
    *dt = gguf_dtype(ing_ld32(p + at));
    *rel = ing_ld64(p + at + 4);
    *rank = nd;
}

/* One parse over hdr[0, avail). On success *out owns the state. With c->need_more set the caller
 * reads further and calls again. */
static ingot_status parse(ingot_file *f, gguf_cur *c, state **out)
{
    ingot_error *err = c->err;
    const uint8_t *p = c->p;
    state *s = NULL;
    ingot_status st;
    c->where = NULL;
    c->where_len = 0;
    ING_TRY(gguf_need(c, 0, 4, "magic"));
    if (ING_MEMCMP(p, "GGUF", 4) != 0)
        return ingot__err(err, INGOT_BAD_MAGIC, 0, "header", 6, "magic is not \"GGUF\"");
    ING_TRY(gguf_need(c, 4, 20, "header"));
    uint32_t version = ing_ld32(p + 4);
    if (version == 0 || version == 1 || (version & 0xFFFFu) == 0 || version > 3)
        return ingot__err(err, INGOT_BAD_VERSION, 4, "header", 6,
                          (version & 0xFFFFu) == 0 && version
                              ? "version 0x%08x: a big-endian GGUF file, not supported"
                              : "version %u not supported (GGUF 2 and 3 are)",
                          version);
    uint64_t n_t = ing_ld64(p + 8), n_kv = ing_ld64(p + 16);
    if (n_t > (uint64_t)INT64_MAX)
        return ingot__err(err, INGOT_BAD_COUNT, 8, "header", 6,
                          "tensor count %llu is negative as int64", (unsigned long long)n_t);
    if (n_kv > (uint64_t)INT64_MAX)
        return ingot__err(err, INGOT_BAD_COUNT, 16, "header", 6,
                          "KV count %llu is negative as int64", (unsigned long long)n_kv);
    if (n_t > GGUF_MAX_COUNT || n_kv > GGUF_MAX_COUNT)
        return ingot__err(err, INGOT_LIMIT, n_t > GGUF_MAX_COUNT ? 8 : 16, "header", 6,
                          "%s count %llu exceeds the cap of %llu", n_t > GGUF_MAX_COUNT ? "tensor" : "KV",
                          (unsigned long long)(n_t > GGUF_MAX_COUNT ? n_t : n_kv),
                          (unsigned long long)GGUF_MAX_COUNT);
    /* A KV record takes >= 14 bytes (key of 1 byte, 1-byte value), a tensor info >= 25. */
    uint64_t min_bytes = n_kv * 14 + n_t * 25;
    if (min_bytes > c->size - 24)
        return ingot__err(err, INGOT_TRUNCATED, 24, "header", 6,
                          "%llu KV records and %llu tensor infos need at least %llu bytes, the file "
                          "has %llu after the header",
                          (unsigned long long)n_kv, (unsigned long long)n_t,
                          (unsigned long long)min_bytes, (unsigned long long)(c->size - 24));

    uint64_t kv_slots = tab_slots(n_kv), t_slots = tab_slots(n_t);
    size_t a_len = sizeof(state) + (size_t)(n_kv + 1) * 8 + (size_t)n_kv * 8 +
                   (size_t)n_t * sizeof(tent) + (size_t)(kv_slots + t_slots) * 4;
    s = ingot__calloc(&f->alloc, a_len);
    if (!s) return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "allocating the index");
    s->a_len = a_len;
    s->hdr = p;
    s->version = version;
    s->n_kv = n_kv;
    s->n_t = n_t;
    uint8_t *m = (uint8_t *)(s + 1);
    s->kv = (void *)m;
    m += (n_kv + 1) * 8;
    s->kv_ck = (void *)m;
    m += n_kv * 8;
    s->t = (void *)m;
    m += n_t * sizeof(tent);
    s->kv_tab = (void *)m;
    m += kv_slots * 4;
    s->t_tab = (void *)m;
    s->kv_mask = kv_slots - 1;
    s->t_mask = t_slots - 1;
    const sctx kc = {s, false}, tc = {s, true};

    /* KV section */
    uint64_t at = 24, n_ck = 0, align = GGUF_DEFAULT_ALIGN;
    for (uint64_t i = 0; i < n_kv; i++) {
        s->kv[i] = at;
        c->where = NULL;
        c->where_len = 0;
        uint64_t klen = 0, kb = 0;
        st = gguf_string(c, at, "key", &klen, &kb);
        if (st != INGOT_OK) goto fail;
        c->where = (const char *)p + kb;
        c->where_len = (size_t)klen;
        if (klen == 0) {
            st = ingot__err(err, INGOT_BAD_STRING, at, 0, 0, "KV %llu has an empty key",
                            (unsigned long long)i);
            goto fail;
        }
        if (klen > GGUF_MAX_KEY) {
            st = ingot__err(err, INGOT_BAD_NAME, at, c->where, c->where_len,
                            "key of %llu bytes exceeds %u", (unsigned long long)klen, GGUF_MAX_KEY);
            goto fail;
        }
        if ((st = check_utf8(c, kb, klen, "KV", i, "key")) != INGOT_OK) goto fail;
        if (tab_insert(&kc, s->kv_tab, s->kv_mask, (uint32_t)i) != UINT64_MAX) {
            st = ingot__err(err, INGOT_DUPLICATE, at, c->where, c->where_len,
                            "KV %llu repeats an earlier key", (unsigned long long)i);
            goto fail;
        }
        uint64_t to = kb + klen;
        if ((st = gguf_need(c, to, 4, "value type")) != INGOT_OK) goto fail;
        uint32_t vt = ing_ld32(p + to);
        if (vt >= GT_COUNT) {
            st = ingot__err(err, INGOT_BAD_TYPE, to, c->where, c->where_len,
                            "value type %u is not a GGUF type (0..12)", vt);
            goto fail;
        }
        if (vt == GT_ARRAY) {
            if ((st = gguf_need(c, to + 4, 4, "array header")) != INGOT_OK) goto fail;
            if (ing_ld32(p + to + 4) == GT_STRING) {
                s->kv_ck[i] = n_ck;
                if ((st = gguf_need(c, to + 8, 8, "array header")) != INGOT_OK) goto fail;
                uint64_t cnt = ing_ld64(p + to + 8);
                if (cnt <= GGUF_MAX_ARRAY) n_ck += (cnt + GGUF_CK_STRIDE - 1) / GGUF_CK_STRIDE;
            }
        }
        if ((st = gguf_walk(c, to + 4, vt, 0, NULL, &at)) != INGOT_OK) goto fail;
        if (klen == 17 && ING_MEMCMP(p + kb, "general.alignment", 17) == 0) {
            if (vt != GT_U32) {
                st = ingot__err(err, INGOT_WRONG_TYPE, to, c->where, c->where_len,
                                "general.alignment has type %u, must be UINT32 (4)", vt);
                goto fail;
            }
            uint32_t a = ing_ld32(p + to + 4);
            if (!ing_is_pow2(a) || a > GGUF_MAX_ALIGN) {
                st = ingot__err(err, INGOT_BAD_ALIGN, to + 4, c->where, c->where_len,
                                "alignment %u is not a power of two in 1..%u", a, GGUF_MAX_ALIGN);
                goto fail;
            }
            align = a;
        }
    }
    s->kv[n_kv] = at;
    s->align = (uint32_t)align;

    /* Tensor infos: validate shape, type and size; offsets must follow the packed layout exactly
     * (as ggml requires): offset(i) = offset(i-1) + align_up(nbytes(i-1)). */
    uint64_t expect = 0, names_len = 0;
    for (uint64_t i = 0; i < n_t; i++) {
        uint64_t io = at;
        s->t[i].info_off = io;
        c->where = NULL;
        c->where_len = 0;
        uint64_t nlen = 0, nb = 0;
        if ((st = gguf_string(c, at, "tensor name", &nlen, &nb)) != INGOT_OK) goto fail;
        c->where = (const char *)p + nb;
        c->where_len = (size_t)nlen;
        if (nlen == 0 || nlen > GGUF_MAX_NAME || has_nul(p + nb, nlen)) {
            st = ingot__err(err, INGOT_BAD_NAME, io, c->where, c->where_len,
                            nlen == 0    ? "tensor %llu has an empty name"
                            : nlen > GGUF_MAX_NAME ? "tensor %llu: name longer than 63 bytes"
                                                   : "tensor %llu: name contains a NUL byte",
                            (unsigned long long)i);
            goto fail;
        }
        if ((st = check_utf8(c, nb, nlen, "tensor", i, "name")) != INGOT_OK) goto fail;
        s->t[i].name_len = (uint32_t)nlen;
        if (tab_insert(&tc, s->t_tab, s->t_mask, (uint32_t)i) != UINT64_MAX) {
            st = ingot__err(err, INGOT_DUPLICATE, io, c->where, c->where_len,
                            "tensor %llu repeats the name of an earlier tensor",
                            (unsigned long long)i);
            goto fail;
        }
        names_len += nlen + 1;
        at = nb + nlen;
        if ((st = gguf_need(c, at, 4, "n_dims")) != INGOT_OK) goto fail;
        uint32_t nd = ing_ld32(p + at);
        if (nd > GGUF_MAX_DIMS) {
            st = ingot__err(err, INGOT_BAD_NDIMS, at, c->where, c->where_len,
                            "n_dims %u exceeds GGUF's limit of %u (GGML_MAX_DIMS)", nd,
                            GGUF_MAX_DIMS);
            goto fail;
        }
        at += 4;
        if ((st = gguf_need(c, at, 8ull * nd + 12, "dimensions, type and offset")) != INGOT_OK)
            goto fail;
        uint64_t shape[GGUF_MAX_DIMS];
        for (uint32_t d = 0; d < nd; d++) {
            uint64_t ne = ing_ld64(p + at + 8 * d);
            if (ne > (uint64_t)INT64_MAX) {
                st = ingot__err(err, INGOT_BAD_SHAPE, at + 8 * d, c->where, c->where_len,
                                "ne[%u] = %llu is negative as int64", d, (unsigned long long)ne);
                goto fail;
            }
            shape[nd - 1 - d] = ne;
        }
        at += 8ull * nd;
        uint32_t type = ing_ld32(p + at);
        ingot_dtype dt = gguf_dtype(type);
        if (dt == INGOT_DTYPE_INVALID) {
            st = ingot__err(err, INGOT_BAD_TYPE, at, c->where, c->where_len,
                            "ggml type %u is unknown or removed", type);
            goto fail;
        }
        uint64_t nelem, nbytes;
        st = ingot_dtype_nbytes(dt, nd, shape, &nelem, &nbytes);
        if (st != INGOT_OK) {
            /* every multiplication is checked one dimension at a time: no wrapped product */
            st = ingot__err(err, st, io + 8 + nlen + 4, c->where, c->where_len,
                            st == INGOT_BAD_SHAPE ? "element count overflows int64 (%u dims)"
                            : nd && shape[nd - 1] % ingot_dtype_block_elems(dt) == 0
                                ? "byte size overflows (%u dims)"
                                : "ne[0] is not a whole number of blocks (%u dims)",
                            nd);
            goto fail;
        }
        uint64_t rel = ing_ld64(p + at + 4);
        if (rel % align) {
            st = ingot__err(err, INGOT_BAD_ALIGN, at + 4, c->where, c->where_len,
                            "offset %llu is not a multiple of the alignment %llu",
                            (unsigned long long)rel, (unsigned long long)align);
            goto fail;
        }
        if (rel != expect) {
            st = ingot__err(err, INGOT_BAD_LAYOUT, at + 4, c->where, c->where_len,
                            "offset %llu, expected %llu (tensors are packed in file order)",
                            (unsigned long long)rel, (unsigned long long)expect);
            goto fail;
        }
        uint64_t padded;
        if (!ing_round_up(nbytes, align, &padded)) {
            st = ingot__err(err, INGOT_BAD_ALIGN, io, c->where, c->where_len,
                            "size %llu rounded up to the alignment overflows",
                            (unsigned long long)nbytes);
            goto fail;
        }
        if (!ing_add(expect, padded, &expect) || expect > (uint64_t)INT64_MAX) {
            st = ingot__err(err, INGOT_BAD_SIZE, io, c->where, c->where_len,
                            "data section size overflows");
            goto fail;
        }
        s->data_end = rel + nbytes; /* offsets only grow: the last tensor ends the data; an
                                       empty tensor's offset must lie inside the file too */
        s->t[i].offset = rel; /* made absolute once the data section is known */
        at += 12;
    }
    c->where = NULL;
    c->where_len = 0;
    s->infos_end = at;
    /* The data section starts at the next multiple of the alignment. Without tensors it may lie
     * past the end of the file (writers omit the padding then: vocab-only files). */
    uint64_t data_off;
    if (!ing_round_up(at, align, &data_off)) {
        st = ingot__err(err, INGOT_BAD_ALIGN, at, 0, 0, "data offset overflows");
        goto fail;
    }
    s->data_off = data_off;
    if (n_t) {
        uint64_t end; /* data_end <= INT64_MAX and data_off < 2^64 - 2^20: no overflow below */
        if (!ing_add(data_off, s->data_end, &end) || end > c->size) {
            /* name the first tensor that does not fit */
            uint64_t room = c->size > data_off ? c->size - data_off : 0;
            uint64_t k = 0;
            for (; k + 1 < n_t; k++) {
                ingot_dtype dt;
                uint32_t r;
                uint64_t sh[GGUF_MAX_DIMS], rel, nb2;
                decode_info(s, s->t[k].info_off, &dt, &r, sh, &rel);
                ingot_dtype_nbytes(dt, r, sh, NULL, &nb2);
                if (rel + nb2 > room) break;
            }
            const uint8_t *np = p + s->t[k].info_off + 8;
            st = ingot__err(err, INGOT_TRUNCATED, c->size, (const char *)np, s->t[k].name_len,
                            "tensor data ends at byte %llu, the file has %llu bytes",
                            (unsigned long long)end, (unsigned long long)c->size);
            goto fail;
        }
    }
    uint64_t limit = data_off;
    if (n_t && !ing_round_up(data_off + s->data_end, align, &limit)) limit = UINT64_MAX;
    if (c->size > limit) {
        st = ingot__err(err, INGOT_BAD_LAYOUT, limit, 0, 0,
                        "%llu bytes after the end of the data section",
                        (unsigned long long)(c->size - limit));
        goto fail;
    }

    /* Second allocation: string checkpoints, tensor names, sort scratch. */
    if (names_len > UINT32_MAX) {
        st = ingot__err(err, INGOT_LIMIT, INGOT_NO_OFFSET, 0, 0, "tensor names too long");
        goto fail;
    }
    s->b_len = (size_t)n_ck * 8 + (size_t)names_len + 8;
    s->b = ingot__alloc(&f->alloc, s->b_len);
    if (!s->b) {
        s->b_len = 0;
        st = ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "allocating the name index");
        goto fail;
    }
    s->ck = s->b;
    s->names = (char *)(s->ck + n_ck);
    uint64_t np = 0;
    for (uint64_t i = 0; i < n_t; i++) {
        tent *t = &s->t[i];
        ING_MEMCPY(s->names + np, p + t->info_off + 8, t->name_len);
        s->names[np + t->name_len] = 0;
        t->name_off = (uint32_t)np;
        np += t->name_len + 1;
        t->offset += data_off;
    }
    for (uint64_t i = 0; i < n_kv; i++) { /* checkpoints of string arrays: walk them again */
        uint64_t o = s->kv[i], to = o + 8 + ing_ld64(p + o);
        if (ing_ld32(p + to) == GT_ARRAY && ing_ld32(p + to + 4) == GT_STRING) {
            uint64_t e;
            c->where = (const char *)p + o + 8;
            if ((st = gguf_walk(c, to + 4, GT_ARRAY, 0, s->ck + s->kv_ck[i], &e)) != INGOT_OK)
                goto fail;
        }
    }
    *out = s;
    return INGOT_OK;
fail:
    free_state(&f->alloc, s);
    return st;
}

/* Where the header (KV records and tensor infos) ends, found from its length fields alone, over
 * bytes that arrive in growing pieces: the scan resumes where it stopped, down to the element of
 * a top-level string array (a 32k vocab), so reading the header costs one pass whatever the
 * number of pieces, and the parse runs once over the whole of it. */
typedef struct {
    uint64_t n_kv, n_t;
    uint64_t i, at;       /* next record (KVs, then tensor infos) and its offset; 0: header first */
    uint64_t arr_n, arr_j, arr_at; /* inside a top-level string array: count, next element */
} extent;

enum { EXT_MORE = 0, EXT_DONE = 1, EXT_ODD = -1 };

/* Advances x over p[0, avail) of a file of `size` bytes. EXT_DONE: *end is the end of the tensor
 * infos. EXT_MORE: *need is a lower bound of the bytes the header takes (it needs at least those
 * to go on). EXT_ODD: a field this scan does not follow (over a cap, past the file, an unknown
 * type): the caller parses the way it always did, which names the fault. */
static int extent_scan(extent *x, const uint8_t *p, uint64_t avail, uint64_t size, uint64_t *end,
                       uint64_t *need)
{
#define NEED(n)                                                                                        do {                                                                                                   uint64_t n_ = (n);                                                                                 if (n_ > size) return EXT_ODD;                                                                     if (n_ > avail) {                                                                                      *need = n_;                                                                                        return EXT_MORE;                                                                               }                                                                                              } while (0)
    if (x->at == 0) {
        NEED(24);
        x->n_t = ing_ld64(p + 8);
        x->n_kv = ing_ld64(p + 16);
        if (ING_MEMCMP(p, "GGUF", 4) || x->n_t > GGUF_MAX_COUNT || x->n_kv > GGUF_MAX_COUNT)
            return EXT_ODD;
        x->at = 24;
    }
    while (x->i < x->n_kv) {
        uint64_t at = x->at;
        if (x->arr_n) { /* resume inside a string array */
            uint64_t j = x->arr_j, q = x->arr_at;
            for (; j < x->arr_n; j++) {
                if (q + 8 > avail) {
                    x->arr_j = j, x->arr_at = q;
                    NEED(q + (x->arr_n - j) * 8); /* every element has its 8 length bytes */
                    NEED(q + 8);
                }
                uint64_t len = ing_ld64(p + q);
                if (len > GGUF_MAX_STRING || len > size - q - 8) return EXT_ODD;
                q += 8 + len;
            }
            x->arr_n = 0;
            x->at = q;
            x->i++;
            continue;
        }
        NEED(at + 8);
        uint64_t klen = ing_ld64(p + at);
        if (klen > GGUF_MAX_KEY) return EXT_ODD;
        uint64_t to = at + 8 + klen;
        NEED(to + 4);
        uint32_t vt = ing_ld32(p + to);
        if (vt == GT_STRING) {
            NEED(to + 12);
            uint64_t len = ing_ld64(p + to + 4);
            if (len > GGUF_MAX_STRING) return EXT_ODD;
            NEED(to + 12 + len);
            x->at = to + 12 + len;
        } else if (vt == GT_ARRAY) {
            NEED(to + 16);
            uint32_t et = ing_ld32(p + to + 4);
            uint64_t n = ing_ld64(p + to + 8);
            if (n > GGUF_MAX_ARRAY || et >= GT_COUNT) return EXT_ODD;
            if (et == GT_STRING) {
                x->arr_n = n, x->arr_j = 0, x->arr_at = to + 16;
                if (n) continue;
                x->arr_n = 0;
                x->at = to + 16;
            } else if (et == GT_ARRAY) { /* nested: walked whole, again if it needs more */
                gguf_cur c = {.p = p, .avail = avail, .size = size};
                uint64_t e = 0;
                if (gguf_walk(&c, to + 4, GT_ARRAY, 0, NULL, &e) != INGOT_OK) {
                    if (!c.need_more) return EXT_ODD;
                    *need = c.need;
                    return EXT_MORE;
                }
                x->at = e;
            } else {
                NEED(to + 16 + n * gguf_vt_size(et)); /* n <= 2^28: no wrap */
                x->at = to + 16 + n * gguf_vt_size(et);
            }
        } else if (vt < GT_COUNT) {
            NEED(to + 4 + gguf_vt_size(vt));
            x->at = to + 4 + gguf_vt_size(vt);
        } else {
            return EXT_ODD;
        }
        x->i++;
    }
    while (x->i < x->n_kv + x->n_t) {
        uint64_t at = x->at;
        NEED(at + 8);
        uint64_t nlen = ing_ld64(p + at);
        if (nlen > GGUF_MAX_NAME) return EXT_ODD;
        NEED(at + 8 + nlen + 4);
        uint32_t nd = ing_ld32(p + at + 8 + nlen);
        if (nd > GGUF_MAX_DIMS) return EXT_ODD;
        NEED(at + 8 + nlen + 4 + 8ull * nd + 12);
        x->at = at + 8 + nlen + 4 + 8ull * nd + 12;
        x->i++;
    }
    *end = x->at;
    return EXT_DONE;
#undef NEED
}

static ingot_status parsed(ingot_file *f, state *s, uint64_t hdr_len)
{
    s->hdr_len = hdr_len;
    f->state = s;
    f->alignment = s->align;
    ingot__fmt(f->version, sizeof f->version, "%u.0", s->version);
    return INGOT_OK;
}

static ingot_status open_gguf(ingot_file *f, ingot_error *err)
{
    /* The header's extent first (extent_scan), over bytes read with pread: in pread mode only
     * them, in mmap mode as a private copy while it is at most INGOT__HEAD_COPY_MAX bytes (no page
     * fault on the fresh mapping; larger headers are read through the mapping, which is cheaper
     * there, file.h). Then one parse. A caller's buffer is parsed in place. */
    bool copy = f->base && f->fd >= 0, stepwise = !f->base || copy;
    uint64_t want = f->size < INGOT__PROBE_BYTES ? f->size : INGOT__PROBE_BYTES;
    extent x = {0};
    while (stepwise) {
        const uint8_t *head;
        ING_TRY(ingot__file_head_copy(f, want, &head, err));
        uint64_t end = 0, need = 0;
        int r = extent_scan(&x, head, want, f->size, &end, &need);
        if (r == EXT_ODD) break;
        if (r == EXT_DONE) {
            gguf_cur c = {.p = head, .avail = want, .size = f->size, .err = err};
            state *s = NULL;
            ingot_status st = parse(f, &c, &s);
            if (st == INGOT_OK) return parsed(f, s, want);
            if (!c.need_more) return st;
            break; /* the parse wants bytes the scan did not: parse the way below */
        }
        uint64_t next = want * 2 > need ? want * 2 : need;
        next = next < f->size ? next : f->size;
        if (copy && next > INGOT__HEAD_COPY_MAX) break; /* through the mapping */
        want = next;
    }
    /* mmap / buffer: the whole file is addressable. pread: read the header in growing steps and
     * parse again until it is covered (only for headers the scan did not follow). */
    want = f->size;
    if (!f->base && want > (64u << 10)) want = 64u << 10;
    for (;;) {
        const uint8_t *head;
        ING_TRY(ingot__file_head(f, want, &head, err));
        gguf_cur c = {.p = head, .avail = want, .size = f->size, .err = err};
        state *s = NULL;
        ingot_status st = parse(f, &c, &s);
        if (st == INGOT_OK) return parsed(f, s, want);
        if (!c.need_more) return st;
        uint64_t next = want * 2 > c.need ? want * 2 : c.need;
        want = next < f->size ? next : f->size;
    }
}

static void close_gguf(ingot_file *f)
{
    free_state(&f->alloc, f->state);
    f->state = NULL;
}

/* ---- tensors ---- */

static uint64_t tensor_count(const ingot_file *f) { return S(f)->n_t; }

static ingot_status tensor_at(const ingot_file *f, uint64_t i, ingot_tensor_info *out)
{
    const state *s = S(f);
    ING_MEMSET(out, 0, sizeof *out);
    if (i >= s->n_t) return INGOT_RANGE;
    const tent *t = &s->t[i];
    uint64_t rel;
    decode_info(s, t->info_off, &out->dtype, &out->rank, out->shape, &rel);
    ingot_dtype_nbytes(out->dtype, out->rank, out->shape, &out->nelem, &out->nbytes);
    out->name = s->names + t->name_off;
    out->name_len = t->name_len;
    out->offset = t->offset;
    out->index = (uint32_t)i;
    if (f->base) {
        out->data = f->base + t->offset;
    } else if (t->offset <= s->hdr_len && out->nbytes <= s->hdr_len - t->offset) {
        out->data = s->hdr + t->offset; /* the header read already covers it */
    } else {
        out->flags |= INGOT_TENSOR_NOT_MAPPED;
    }
    /* Alignments below 8 (accepted, as by ggml), or a caller buffer that is not itself aligned,
     * can leave scalar data misaligned. */
    uint32_t esz = ingot_dtype_block_bytes(out->dtype);
    uint64_t addr = out->data ? (uint64_t)(uintptr_t)out->data : t->offset;
    if (!ingot_dtype_is_quantized(out->dtype) && esz > 1 && addr % esz)
        out->flags |= INGOT_TENSOR_UNALIGNED;
    return INGOT_OK;
}

static ingot_status tensor_find(const ingot_file *f, const char *name, size_t len,
                                ingot_tensor_info *out)
{
    const state *s = S(f);
    const sctx c = {s, true};
    uint64_t i = tab_find(&c, s->t_tab, s->t_mask, (const uint8_t *)name, len);
    if (i == UINT64_MAX) {
        ING_MEMSET(out, 0, sizeof *out);
        return INGOT_NOT_FOUND;
    }
    return tensor_at(f, i, out);
}

/* GGUF has no checksums; verification checks that the alignment padding after each tensor (up
 * to the next tensor, or to the aligned end for the last one) is zero, as every writer leaves it. */
static ingot_status tensor_check(const ingot_file *f, uint64_t i, bool *has_crc, uint32_t *crc,
                                 uint64_t *zero_after)
{
    const state *s = S(f);
    *has_crc = false;
    *crc = 0;
    ingot_tensor_info t;
    ING_TRY(tensor_at(f, i, &t));
    uint64_t end = t.offset + t.nbytes, next = 0;
    if (i + 1 < s->n_t) next = s->t[i + 1].offset;
    else ing_round_up(end, s->align, &next); /* checked at open */
    if (next > f->size) next = f->size;
    *zero_after = next > end ? next - end : 0;
    return INGOT_OK;
}

/* The padding between the tensor infos and the data section must be zero. */
static ingot_status verify_header(const ingot_file *f, ingot_error *err)
{
    const state *s = S(f);
    uint64_t end = s->data_off < f->size ? s->data_off : f->size;
    uint8_t buf[256];
    for (uint64_t at = s->infos_end; at < end;) {
        size_t n = end - at < sizeof buf ? (size_t)(end - at) : sizeof buf;
        ING_TRY(ingot__file_read(f, at, buf, n, err));
        for (size_t k = 0; k < n; k++)
            if (buf[k])
                return ingot__err(err, INGOT_BAD_LAYOUT, at + k, "header", 6,
                                  "padding before the data section is not zero");
        at += n;
    }
    return INGOT_OK;
}

/* ---- metadata ---- */

static uint64_t meta_count(const ingot_file *f) { return S(f)->n_kv; }

static ingot_status meta_at(const ingot_file *f, uint64_t i, ingot_meta_info *out)
{
    const state *s = S(f);
    ING_MEMSET(out, 0, sizeof *out);
    if (i >= s->n_kv) return INGOT_RANGE;
    const uint8_t *p = s->hdr;
    uint64_t o = s->kv[i], klen = ing_ld64(p + o), to = o + 8 + klen;
    out->key = (const char *)p + o + 8;
    out->key_len = (size_t)klen;
    out->index = i;
    uint32_t vt = ing_ld32(p + to);
    const uint8_t *v = p + to + 4;
    out->count = 1;
    switch (vt) {
    case GT_U8: out->v.u = v[0]; break;
    case GT_U16: out->v.u = ing_ld16(v); break;
    case GT_U32: out->v.u = ing_ld32(v); break;
    case GT_U64: out->v.u = ing_ld64(v); break;
    case GT_I8: out->v.i = (int8_t)v[0]; break;
    case GT_I16: out->v.i = (int16_t)ing_ld16(v); break;
    case GT_I32: out->v.i = (int32_t)ing_ld32(v); break;
    case GT_I64: out->v.i = (int64_t)ing_ld64(v); break;
    case GT_F32: {
        uint32_t b = ing_ld32(v);
        float x;
        ING_MEMCPY(&x, &b, 4);
        out->v.f = x;
        break;
    }
    case GT_F64: {
        uint64_t b = ing_ld64(v);
        ING_MEMCPY(&out->v.f, &b, 8);
        break;
    }
    case GT_BOOL: out->v.b = v[0] != 0; break; /* ggml: any non-zero byte is true */
    case GT_STRING:
        out->count = ing_ld64(v);
        out->data = v + 8;
        break;
    default: { /* ARRAY */
        uint32_t et = ing_ld32(v);
        if (et == GT_ARRAY) { /* nested: the GGUF encoding from the value type on, as BYTES */
            out->type = INGOT_META_BYTES;
            out->count = s->kv[i + 1] - to;
            out->data = p + to;
            return INGOT_OK;
        }
        out->is_array = true;
        out->count = ing_ld64(v + 4);
        vt = et;
        break;
    }
    }
    out->type = gguf_vt_meta(vt);
    return INGOT_OK;
}

static ingot_status meta_find(const ingot_file *f, const char *key, size_t len,
                              ingot_meta_info *out)
{
    const state *s = S(f);
    const sctx c = {s, false};
    uint64_t i = tab_find(&c, s->kv_tab, s->kv_mask, (const uint8_t *)key, len);
    if (i == UINT64_MAX) {
        ING_MEMSET(out, 0, sizeof *out);
        return INGOT_NOT_FOUND;
    }
    return meta_at(f, i, out);
}

/* Array entry `index`: its element gguf_type, count and payload offset; WRONG_TYPE if scalar. */
static ingot_status array_of(const state *s, uint64_t index, uint32_t *et, uint64_t *count,
                             uint64_t *payload)
{
    if (index >= s->n_kv) return INGOT_RANGE;
    const uint8_t *p = s->hdr;
    uint64_t o = s->kv[index], to = o + 8 + ing_ld64(p + o);
    if (ing_ld32(p + to) != GT_ARRAY || ing_ld32(p + to + 4) == GT_ARRAY) return INGOT_WRONG_TYPE;
    *et = ing_ld32(p + to + 4);
    *count = ing_ld64(p + to + 8);
    *payload = to + 16;
    return INGOT_OK;
}

static ingot_status meta_array_read(const ingot_file *f, uint64_t index, ingot_meta_type type,
                                    uint64_t first, uint64_t n, void *dst)
{
    const state *s = S(f);
    uint32_t et;
    uint64_t count, pay;
    ING_TRY(array_of(s, index, &et, &count, &pay));
    if (et == GT_STRING || gguf_vt_meta(et) != type) return INGOT_WRONG_TYPE;
    if (first > count || n > count - first) return INGOT_RANGE;
    uint32_t esz = gguf_vt_size(et);
    const uint8_t *src = s->hdr + pay + first * esz;
    uint8_t *d = dst;
    for (uint64_t k = 0; k < n; k++, src += esz, d += esz) {
        switch (esz) {
        case 1: d[0] = et == GT_BOOL ? (src[0] != 0) : src[0]; break;
        case 2: { uint16_t x = ing_ld16(src); ING_MEMCPY(d, &x, 2); break; }
        case 4: { uint32_t x = ing_ld32(src); ING_MEMCPY(d, &x, 4); break; }
        default: { uint64_t x = ing_ld64(src); ING_MEMCPY(d, &x, 8); break; }
        }
    }
    return INGOT_OK;
}

static ingot_status meta_array_string(const ingot_file *f, uint64_t index, uint64_t elem,
                                      const char **str, size_t *len)
{
    const state *s = S(f);
    uint32_t et;
    uint64_t count, pay;
    ING_TRY(array_of(s, index, &et, &count, &pay));
    (void)pay;
    if (et != GT_STRING) return INGOT_WRONG_TYPE;
    if (elem >= count) return INGOT_RANGE;
    const uint8_t *p = s->hdr;
    uint64_t at = s->ck[s->kv_ck[index] + elem / GGUF_CK_STRIDE];
    for (uint64_t k = elem % GGUF_CK_STRIDE; k; k--) at += 8 + ing_ld64(p + at);
    *len = (size_t)ing_ld64(p + at);
    *str = (const char *)p + at + 8;
    return INGOT_OK;
}

static const char *const gguf_extensions[] = {"gguf", NULL};

const ingot__format ingot__format_gguf = {
    .name = "gguf",
    .extensions = gguf_extensions,
    .probe = probe,
    .open = open_gguf,
    .close = close_gguf,
    .tensor_count = tensor_count,
    .tensor_at = tensor_at,
    .tensor_find = tensor_find,
    .tensor_check = tensor_check,
    .verify_header = verify_header,
    .checks = INGOT_CHECK_PADDING, /* no checksums in GGUF */
    .meta_count = meta_count,
    .meta_at = meta_at,
    .meta_find = meta_find,
    .meta_array_read = meta_array_read,
    .meta_array_string = meta_array_string,
    .writer = &ingot__writer_gguf,
};
