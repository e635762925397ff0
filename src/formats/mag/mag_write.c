/*
 * mag_write.c - writers of magnetron's storage archive (versions 1 and 100, byte-identical to the
 * reference writer: records in its hash-table slot order, 0xFF fill and padding, zero slack up to
 * its size estimate, CRC-32C of [12, end of records)) and of its snapshot (version 100; the
 * timestamp is an option so the output is deterministic). Spec: ../shared/formats/mag.md.
 */
#include <string.h>

#include "alloc.h"
#include "checked.h"
#include "error.h"
#include "mag_internal.h"

typedef struct {
    bool snapshot;
    uint32_t version; /* storage: 1 or 100 */
    int codes;        /* storage v100: MAG_ERA_A2 (default) or MAG_ERA_A1 */
    uint64_t timestamp;
    uint8_t *hdr; /* everything before the first data byte */
    size_t hdr_len;
    uint64_t content_end, file_size;
} wstate;

static const uint8_t ff[64] = {
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};

static ingot_status init_common(ingot_writer *w, bool snapshot, ingot_error *err)
{
    wstate *s = ingot__calloc(&w->alloc, sizeof *s);
    if (!s) return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "allocating the writer");
    s->snapshot = snapshot;
    s->version = 100;
    s->codes = MAG_ERA_A2;
    w->fmt_state = s;
    /* The layout has its own alignment (64 for the archive, none for the snapshot). */
    if (w->alignment == 0) w->alignment = 64;
    return INGOT_OK;
}

static ingot_status init_a(ingot_writer *w, ingot_error *err) { return init_common(w, false, err); }
static ingot_status init_b(ingot_writer *w, ingot_error *err) { return init_common(w, true, err); }

static void free_state(ingot_writer *w)
{
    wstate *s = w->fmt_state;
    if (!s) return;
    ingot__free(&w->alloc, s->hdr, s->hdr_len);
    ingot__free(&w->alloc, s, sizeof *s);
    w->fmt_state = NULL;
}

static bool parse_u64(const char *v, uint64_t *out)
{
    uint64_t x = 0;
    if (!*v) return false;
    for (; *v; v++) {
        if (*v < '0' || *v > '9') return false;
        if (!ing_mul(x, 10, &x) || !ing_add(x, (uint64_t)(*v - '0'), &x)) return false;
    }
    *out = x;
    return true;
}

static ingot_status set_option_a(ingot_writer *w, const char *key, const char *value,
                                 ingot_error *err)
{
    wstate *s = w->fmt_state;
    size_t kl = strlen(key);
    if (strcmp(key, "version") == 0) {
        if (strcmp(value, "1") == 0) s->version = 1;
        else if (strcmp(value, "100") == 0) s->version = 100;
        else
            return ingot__err(err, INGOT_BAD_METADATA, INGOT_NO_OFFSET, key, kl,
                              "version '%s': the storage archive has versions 1 and 100", value);
        return INGOT_OK;
    }
    if (strcmp(key, "codes") == 0) {
        if (strcmp(value, "a1") == 0) s->codes = MAG_ERA_A1;
        else if (strcmp(value, "a2") == 0) s->codes = MAG_ERA_A2;
        else
            return ingot__err(err, INGOT_BAD_METADATA, INGOT_NO_OFFSET, key, kl,
                              "codes '%s': expected a1 or a2", value);
        return INGOT_OK;
    }
    return ingot__err(err, INGOT_UNSUPPORTED, INGOT_NO_OFFSET, key, kl,
                      "unknown option (mag has: version=1|100, codes=a1|a2)");
}

static ingot_status set_option_b(ingot_writer *w, const char *key, const char *value,
                                 ingot_error *err)
{
    wstate *s = w->fmt_state;
    size_t kl = strlen(key);
    if (strcmp(key, "timestamp") == 0) {
        if (!parse_u64(value, &s->timestamp))
            return ingot__err(err, INGOT_BAD_METADATA, INGOT_NO_OFFSET, key, kl,
                              "timestamp '%s' is not a decimal u64", value);
        return INGOT_OK;
    }
    return ingot__err(err, INGOT_UNSUPPORTED, INGOT_NO_OFFSET, key, kl,
                      "unknown option (mag-snapshot has: timestamp=SECONDS)");
}

/* Tensor restrictions; era decides the dtype codes, max_rank 0 means the snapshot. */
static ingot_status check_tensors(ingot_writer *w, int era, uint32_t version, uint32_t max_rank,
                                  ingot_error *err)
{
    for (size_t i = 0; i < w->n_tensors; i++) {
        const ingot__wtensor *t = &w->tensors[i];
        if (ingot__mag_code(era, t->dtype) < 0) {
            const char *dn = ingot_dtype_name(t->dtype);
            if (era == MAG_ERA_B)
                return ingot__err(err, INGOT_UNSUPPORTED, INGOT_NO_OFFSET, t->name, t->name_len,
                                  "dtype %s has no code in the mag snapshot", dn ? dn : "?");
            return ingot__err(err, INGOT_UNSUPPORTED, INGOT_NO_OFFSET, t->name, t->name_len,
                              "dtype %s has no code in mag version %u (era %s)", dn ? dn : "?",
                              version, era == MAG_ERA_A1 ? "A1: f32 f16 bool i32" : "A2");
        }
        if (max_rank && (t->rank == 0 || t->rank > max_rank))
            return ingot__err(err, INGOT_UNSUPPORTED, INGOT_NO_OFFSET, t->name, t->name_len,
                              "rank %u: mag version %u holds ranks 1..%u", t->rank, version,
                              max_rank);
        if (!max_rank && t->rank >= MAG_SNAP_RANK_LIMIT)
            return ingot__err(err, INGOT_UNSUPPORTED, INGOT_NO_OFFSET, t->name, t->name_len,
                              "rank %u: magnetron's snapshot reader takes ranks below %u",
                              t->rank, MAG_SNAP_RANK_LIMIT);
        for (uint32_t d = 0; d < t->rank; d++)
            if (t->shape[d] == 0)
                return ingot__err(err, INGOT_UNSUPPORTED, INGOT_NO_OFFSET, t->name, t->name_len,
                                  "dimension %u is 0: mag has no empty tensors", d);
        if (t->has_param_id)
            ingot__writer_notice(w, "tensor '%s': param id %llu dropped (mag has none)", t->name,
                                 (unsigned long long)t->param_id);
    }
    return INGOT_OK;
}

/* ---- storage archive ---- */

/* How a typed metadata entry is stored: 1 i64, 2 f64, 0 dropped (each lossy step noticed). */
static int meta_value(ingot_writer *w, const ingot__wmeta *m, uint64_t *bits)
{
    const char *tn = ingot_meta_type_name(m->type);
    if (m->is_array || m->type == INGOT_META_STRING || m->type == INGOT_META_BYTES) {
        ingot__writer_notice(w, "metadata '%s': %s%s dropped (mag holds only i64 and f64)", m->key,
                             tn ? tn : "?", m->is_array ? " array" : "");
        return 0;
    }
    uint64_t v = m->scalar;
    switch (m->type) {
    case INGOT_META_I64: *bits = v; return 1;
    case INGOT_META_F64: *bits = v; return 2;
    case INGOT_META_F32: {
        float f;
        uint32_t b = (uint32_t)v;
        memcpy(&f, &b, 4);
        double d = f;
        memcpy(bits, &d, 8);
        ingot__writer_notice(w, "metadata '%s': f32 stored as f64", m->key);
        return 2;
    }
    case INGOT_META_I8: *bits = (uint64_t)(int64_t)(int8_t)(uint8_t)v; break;
    case INGOT_META_I16: *bits = (uint64_t)(int64_t)(int16_t)(uint16_t)v; break;
    case INGOT_META_I32: *bits = (uint64_t)(int64_t)(int32_t)(uint32_t)v; break;
    case INGOT_META_U64:
        if (v > (uint64_t)INT64_MAX) {
            ingot__writer_notice(w, "metadata '%s': u64 %llu dropped (above the i64 range)",
                                 m->key, (unsigned long long)v);
            return 0;
        }
        *bits = v;
        break;
    default: *bits = v; break; /* U8, U16, U32, BOOL: zero-extended */
    }
    ingot__writer_notice(w, "metadata '%s': %s stored as i64", m->key, tn ? tn : "?");
    return 1;
}

typedef struct {
    const ingot__wmeta *m;
    uint64_t bits;
    uint32_t type;
} kept_meta;

static ingot_status begin_a(ingot_writer *w, uint64_t *total, ingot_error *err)
{
    wstate *s = w->fmt_state;
    int era = s->version == 1 ? MAG_ERA_A1 : s->codes;
    uint32_t max_rank = s->version == 1 ? 6 : 8;
    if (w->n_tensors > UINT32_MAX || w->n_meta > UINT32_MAX)
        return ingot__err(err, INGOT_LIMIT, INGOT_NO_OFFSET, 0, 0, "more than 2^32-1 entries");
    ING_TRY(check_tensors(w, era, s->version, max_rank, err));
    size_t nt = w->n_tensors, nm = w->n_meta;
    /* one allocation: kept metadata, hashes, orders, tensor permutation scratch */
    size_t nmax = nt > nm ? nt : nm;
    size_t bytes = nm * sizeof(kept_meta) + nmax * (sizeof(uint64_t) + sizeof(uint32_t)) +
                   nt * sizeof(ingot__wtensor);
    uint8_t *scratch = ingot__alloc(&w->alloc, bytes ? bytes : 1);
    if (!scratch) return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "allocating");
    /* 8-byte members first, the u32 order last */
    ingot__wtensor *perm = (ingot__wtensor *)(void *)scratch;
    kept_meta *km = (kept_meta *)(void *)(perm + nt);
    uint64_t *hashes = (uint64_t *)(void *)(km + nm);
    uint32_t *order = (uint32_t *)(void *)(hashes + nmax);
    ingot_status st = INGOT_OK;
    size_t nk = 0;
    for (size_t i = 0; i < nm; i++) {
        uint64_t bits = 0;
        int type = meta_value(w, &w->meta[i], &bits);
        if (type) km[nk++] = (kept_meta){&w->meta[i], bits, (uint32_t)type};
    }
    /* Tensors: records and data in slot order when every tensor's data is at hand; pushed data
     * arrives in declaration order, so then both follow the declaration unless it already is
     * the slot order. */
    for (size_t i = 0; i < nt; i++) hashes[i] = ingot__mag_hash(w->tensors[i].name, w->tensors[i].name_len);
    if ((st = ingot__mag_slot_order(&w->alloc, hashes, nt, order)) != INGOT_OK) goto out;
    bool all_given = true;
    for (size_t i = 0; i < nt; i++) all_given &= w->tensors[i].data != NULL;
    if (all_given) {
        for (size_t i = 0; i < nt; i++) perm[i] = w->tensors[order[i]];
        if (nt) memcpy(w->tensors, perm, nt * sizeof *perm);
    }
    for (size_t i = 0; i < nk; i++) hashes[i] = ingot__mag_hash(km[i].m->key, km[i].m->key_len);
    if ((st = ingot__mag_slot_order(&w->alloc, hashes, nk, order)) != INGOT_OK) goto out;

    /* Layout (all sizes are bounded by the description, checked anyway). */
    uint64_t pos = MAG_HDR_A, est = MAG_HDR_A;
    for (size_t i = 0; i < nk; i++) {
        pos += 16 + (uint64_t)km[i].m->key_len;
        est += 16 + (uint64_t)km[i].m->key_len + 8;
    }
    for (size_t i = 0; i < nt; i++) pos += 24 + 8 * (uint64_t)w->tensors[i].rank + w->tensors[i].name_len;
    uint64_t records_end = pos, data_base = pos, cursor;
    if (nt) ing_round_up(pos, MAG_ALIGN_A, &data_base);
    cursor = data_base;
    for (size_t i = 0; i < nt; i++) {
        ingot__wtensor *t = &w->tensors[i];
        uint64_t rlen = 24 + 8 * (uint64_t)t->rank + t->name_len, padded;
        t->offset = cursor;
        if (!ing_round_up(t->nbytes, MAG_ALIGN_A, &padded) || !ing_add(cursor, padded, &cursor) ||
            !ing_round_up(est + rlen, MAG_ALIGN_A, &est) || !ing_add(est, padded, &est)) {
            st = ingot__err(err, INGOT_BAD_SIZE, INGOT_NO_OFFSET, t->name, t->name_len,
                            "file size overflows");
            goto out;
        }
    }
    s->content_end = cursor;
    s->file_size = est;
    if (data_base > SIZE_MAX / 2) {
        st = ingot__err(err, INGOT_LIMIT, INGOT_NO_OFFSET, 0, 0, "header too large");
        goto out;
    }
    s->hdr_len = (size_t)data_base;
    s->hdr = ingot__alloc(&w->alloc, s->hdr_len);
    if (!s->hdr) {
        s->hdr_len = 0;
        st = ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "allocating the header");
        goto out;
    }
    uint8_t *h = s->hdr;
    memcpy(h, MAG_MAGIC, 4);
    ing_st32(h + 4, s->version);
    ing_st32(h + 12, (uint32_t)nt);
    ing_st32(h + 16, (uint32_t)nk);
    ing_st32(h + 20, 0);
    uint8_t *p = h + MAG_HDR_A;
    for (size_t i = 0; i < nk; i++) {
        const kept_meta *k = &km[order[i]];
        ing_st32(p, k->type);
        ing_st64(p + 4, k->bits);
        ing_st32(p + 12, k->m->key_len);
        memcpy(p + 16, k->m->key, k->m->key_len);
        p += 16 + k->m->key_len;
    }
    for (size_t i = 0; i < nt; i++) {
        const ingot__wtensor *t = &w->tensors[i];
        uint64_t nelem = t->nbytes / ingot_dtype_block_bytes(t->dtype);
        ing_st32(p, (uint32_t)ingot__mag_code(era, t->dtype) | t->rank << 8);
        ing_st64(p + 4, nelem);
        ing_st64(p + 12, t->offset);
        for (uint32_t d = 0; d < t->rank; d++) ing_st64(p + 20 + 8 * d, t->shape[d]);
        p += 20 + 8 * t->rank;
        ing_st32(p, t->name_len);
        memcpy(p + 4, t->name, t->name_len);
        p += 4 + t->name_len;
    }
    memset(p, 0xff, (size_t)(data_base - records_end));
    ing_st32(h + 8, ingot_crc32c(0, h + 12, (size_t)(records_end - 12)));
    *total = s->file_size;
    st = ingot__wsink_reserve(w, s->file_size, err);
    if (st == INGOT_OK) st = ingot__wsink_write(w, s->hdr, s->hdr_len, err);
out:
    ingot__free(&w->alloc, scratch, bytes ? bytes : 1);
    return st;
}

static ingot_status fill_to(ingot_writer *w, uint64_t at, ingot_error *err)
{
    if (w->pos > at)
        return ingot__err(err, INGOT_MISUSE, w->pos, 0, 0, "stream position past the layout");
    while (w->pos < at) {
        size_t k = at - w->pos < sizeof ff ? (size_t)(at - w->pos) : sizeof ff;
        ING_TRY(ingot__wsink_write(w, ff, k, err));
    }
    return INGOT_OK;
}

static ingot_status before_tensor_a(ingot_writer *w, uint64_t i, ingot_error *err)
{
    return fill_to(w, w->tensors[i].offset, err);
}

static ingot_status finish_a(ingot_writer *w, ingot_error *err)
{
    wstate *s = w->fmt_state;
    ING_TRY(fill_to(w, s->content_end, err));
    if (w->pos > s->file_size)
        return ingot__err(err, INGOT_MISUSE, w->pos, 0, 0, "wrote past the layout");
    return ingot__wsink_zeros(w, s->file_size - w->pos, err);
}

/* ---- snapshot ---- */

static ingot_status begin_b(ingot_writer *w, uint64_t *total, ingot_error *err)
{
    wstate *s = w->fmt_state;
    ING_TRY(check_tensors(w, MAG_ERA_B, 100, 0, err));
    for (size_t i = 0; i < w->n_meta; i++)
        ingot__writer_notice(w, "metadata '%s' dropped (the mag snapshot has no metadata yet)",
                             w->meta[i].key);
    size_t nt = w->n_tensors;
    if (nt + 1 > 65535)
        return ingot__err(err, INGOT_LIMIT, INGOT_NO_OFFSET, 0, 0,
                          "%zu tensors: the snapshot string pool holds at most 65534 keys", nt);
    uint64_t blob = 0, desc = 0, data = 0;
    for (size_t i = 0; i < nt; i++) {
        blob += w->tensors[i].name_len;
        desc += 24 + 8 * (uint64_t)w->tensors[i].rank;
    }
    if (blob > MAG_B_POOL_MAX)
        return ingot__err(err, INGOT_LIMIT, INGOT_NO_OFFSET, 0, 0,
                          "names take %llu bytes: the snapshot pool holds at most 128 MiB",
                          (unsigned long long)blob);
    uint64_t pos = MAG_HDR_B + 8 + 4 * ((uint64_t)nt + 1) + blob + 8 + desc + 4;
    s->hdr_len = (size_t)pos;
    s->hdr = ingot__alloc(&w->alloc, s->hdr_len);
    if (!s->hdr) {
        s->hdr_len = 0;
        return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "allocating the header");
    }
    uint8_t *h = s->hdr;
    memcpy(h, MAG_MAGIC, 4);
    ing_st32(h + 4, 100);
    ing_st64(h + 8, s->timestamp);
    ing_st32(h + 20, 0);
    ing_st32(h + 24, 0);
    ing_st32(h + 28, (uint32_t)nt);
    uint8_t *p = h + MAG_HDR_B;
    memcpy(p, "SRP!", 4);
    ing_st32(p + 4, (uint32_t)nt);
    uint8_t *offs = p + 8, *b = offs + 4 * (nt + 1);
    uint32_t at = 0;
    ing_st32(offs, 0);
    for (size_t i = 0; i < nt; i++) {
        memcpy(b + at, w->tensors[i].name, w->tensors[i].name_len);
        at += w->tensors[i].name_len;
        ing_st32(offs + 4 * (i + 1), at);
    }
    p = b + at;
    memcpy(p, "MDT!DSC!", 8);
    p += 8;
    for (size_t i = 0; i < nt; i++) {
        ingot__wtensor *t = &w->tensors[i];
        ing_st32(p, t->rank | (uint32_t)ingot__mag_code(MAG_ERA_B, t->dtype) << 8);
        ing_st32(p + 4, (uint32_t)i);
        ing_st64(p + 8, t->nbytes / ingot_dtype_block_bytes(t->dtype));
        ing_st64(p + 16, data);
        for (uint32_t d = 0; d < t->rank; d++) ing_st64(p + 24 + 8 * d, t->shape[d]);
        p += 24 + 8 * t->rank;
        t->offset = pos + data;
        if (!ing_add(data, t->nbytes, &data))
            return ingot__err(err, INGOT_BAD_SIZE, INGOT_NO_OFFSET, t->name, t->name_len,
                              "file size overflows");
    }
    memcpy(p, "BUF!", 4);
    ing_st32(h + 16, ingot_crc32c(0, h + 20, (size_t)(p - (h + 20))));
    if (!ing_add(pos, data, &s->file_size))
        return ingot__err(err, INGOT_BAD_SIZE, INGOT_NO_OFFSET, 0, 0, "file size overflows");
    s->content_end = s->file_size;
    *total = s->file_size;
    ING_TRY(ingot__wsink_reserve(w, s->file_size, err));
    return ingot__wsink_write(w, s->hdr, s->hdr_len, err);
}

static ingot_status before_tensor_b(ingot_writer *w, uint64_t i, ingot_error *err)
{
    if (w->pos != w->tensors[i].offset)
        return ingot__err(err, INGOT_MISUSE, w->pos, 0, 0, "stream position off the layout");
    return INGOT_OK;
}

static ingot_status finish_b(ingot_writer *w, ingot_error *err)
{
    wstate *s = w->fmt_state;
    if (w->pos != s->file_size)
        return ingot__err(err, INGOT_MISUSE, w->pos, 0, 0, "wrote %llu bytes, layout has %llu",
                          (unsigned long long)w->pos, (unsigned long long)s->file_size);
    return INGOT_OK;
}

const ingot__writer_ops ingot__writer_mag = {
    .init = init_a,
    .begin = begin_a,
    .before_tensor = before_tensor_a,
    .finish = finish_a,
    .free_state = free_state,
    .set_option = set_option_a,
};

const ingot__writer_ops ingot__writer_mag_snapshot = {
    .init = init_b,
    .begin = begin_b,
    .before_tensor = before_tensor_b,
    .finish = finish_b,
    .free_state = free_state,
    .set_option = set_option_b,
};
