/*
 * torch_legacy.c - the pre-1.6 torch.save stream (../shared/formats/pytorch.md §5): five pickles
 * (magic, protocol version 1001, sys_info, the object, the sorted storage keys) followed, per key,
 * by an int64 little-endian element count and the raw little-endian storage bytes. No alignment,
 * nothing after the last storage. Every pickle runs through the restricted machine.
 */
#include "checked.h"
#include "error.h"
#include "torch_internal.h"

/* The bytes holding the five pickles: the whole image when mapped; in pread mode the head grown
 * until the fifth STOP (or a refused opcode, which the machine then names). */
static ingot_status header_bytes(ingot_file *f, const uint8_t **buf, uint64_t *len,
                                 ingot_error *err)
{
    if (f->base) {
        *buf = f->base;
        *len = f->size;
        return INGOT_OK;
    }
    uint64_t n = f->size < (1u << 16) ? f->size : (1u << 16);
    for (;;) {
        const uint8_t *h;
        ING_TRY(ingot__file_head(f, n, &h, err));
        uint64_t p = 0;
        ingot_status st = INGOT_OK;
        for (int k = 0; k < 5 && st == INGOT_OK; k++) {
            uint64_t e;
            bool stopped;
            st = ingot__tp_scan_end(h, n, p, 0, &e, &stopped, err);
            if (st == INGOT_OK) {
                p = e;
                if (!stopped) break; /* a refused opcode: the machine reports it */
            }
        }
        if (st == INGOT_OK) {
            *buf = h;
            *len = p;
            return INGOT_OK;
        }
        if (st != INGOT_TRUNCATED || n == f->size) return st;
        if (n >= 5 * TP_MAX_PICKLE)
            return ingot__err(err, INGOT_LIMIT, n, "pickle", 6, "legacy pickles larger than %llu bytes",
                              (unsigned long long)(5 * TP_MAX_PICKLE));
        n = f->size / 4 < n ? f->size : n * 4;
    }
}

static ingot_status read_u64(ingot_file *f, uint64_t off, uint64_t *v, ingot_error *err)
{
    uint8_t b[8];
    if (!ing_in_bounds(off, 8, f->size))
        return ingot__err(err, INGOT_TRUNCATED, off, "storages", 8,
                          "file ends inside a storage's element count");
    if (f->base) ING_MEMCPY(b, f->base + off, 8);
    else ING_TRY(ingot__file_read(f, off, b, 8, err));
    *v = ing_ld64(b);
    return INGOT_OK;
}

static bool dict_get(const tp_machine *m, uint32_t dict, const char *key, uint32_t *val)
{
    const tp_node *d = &m->nodes[dict];
    size_t kl = ing_strlen(key);
    for (uint32_t c = d->head; c != TP_NONE_IDX; c = m->cells[c].next) {
        uint32_t k = m->cells[c].key;
        uint64_t len;
        if (m->nodes[k].kind != TPV_STR) continue;
        const uint8_t *p = ingot__tp_bytes(m, k, &len);
        if (len == kl && ING_MEMCMP(p, key, kl) == 0) {
            *val = m->cells[c].val;
            return true;
        }
    }
    return false;
}

/* Runs the pickle starting at p over exactly its own bytes (found by decoding opcode lengths),
 * so the memo cap (pickle bytes / 2) is per pickle, not per file. */
static ingot_status run_one(tp_machine *m, uint64_t p, uint64_t len, uint32_t *root, uint64_t *end,
                            ingot_error *err)
{
    uint64_t stop;
    ING_TRY(ingot__tp_scan_end(m->buf, len, p, m->base_off, &stop, NULL, err));
    if (stop - p > TP_MAX_PICKLE)
        return ingot__err(err, INGOT_LIMIT, p, "pickle", 6, "legacy pickle larger than %llu bytes",
                          (unsigned long long)TP_MAX_PICKLE);
    return ingot__tp_run(m, p, stop, root, end, err);
}

ingot_status ingot__torch_open_legacy(ingot_file *f, tstate *s, ingot_error *err)
{
    const uint8_t *buf = NULL;
    uint64_t len = 0;
    ING_TRY(header_bytes(f, &buf, &len, err));
    s->legacy = true;
    tp_machine *m = &s->m;
    ingot__tp_init(m, &f->alloc, buf, len, 0, 6);

    /* 1. magic */
    uint32_t root;
    uint64_t p = 0, e;
    ING_TRY(run_one(m, p, len, &root, &e, err));
    const tp_node *r = &m->nodes[root];
    uint64_t bl;
    if (r->kind != TPV_BIGINT || r->b != 10 ||
        ING_MEMCMP(ingot__tp_bytes(m, root, &bl), ingot__torch_legacy_magic, 10) != 0)
        return ingot__err(err, INGOT_BAD_MAGIC, 0, "magic", 5,
                          "first pickle is not torch's legacy magic number");
    /* 2. protocol version */
    p = e;
    ING_TRY(run_one(m, p, len, &root, &e, err));
    r = &m->nodes[root];
    if (r->kind != TPV_INT || r->a != 1001)
        return ingot__err(err, INGOT_BAD_VERSION, p, "protocol_version", 16,
                          "legacy protocol version is not 1001");
    /* 3. sys_info */
    p = e;
    ING_TRY(run_one(m, p, len, &root, &e, err));
    uint32_t le;
    if (m->nodes[root].kind != TPV_DICT || !dict_get(m, root, "little_endian", &le) ||
        m->nodes[le].kind != TPV_BOOL)
        return ingot__err(err, INGOT_BAD_METADATA, p, "sys_info", 8,
                          "sys_info is not a dict with a bool 'little_endian'");
    if (!m->nodes[le].a)
        return ingot__err(err, INGOT_UNSUPPORTED, p, "sys_info", 8,
                          "big-endian legacy file (little_endian False)");
    /* 4. the object */
    uint64_t obj_off = e;
    uint32_t obj;
    ING_TRY(run_one(m, obj_off, len, &obj, &e, err));
    /* 5. storage keys */
    p = e;
    uint32_t keys;
    ING_TRY(run_one(m, p, len, &keys, &e, err));
    if (m->nodes[keys].kind != TPV_LIST)
        return ingot__err(err, INGOT_BAD_LAYOUT, p, "storage keys", 12,
                          "fifth pickle is not the list of storage keys");

    /* The key list names every referenced storage exactly once. */
    for (uint32_t c = m->nodes[keys].head; c != TP_NONE_IDX; c = m->cells[c].next) {
        uint32_t k = m->cells[c].val;
        if (m->nodes[k].kind != TPV_STR)
            return ingot__err(err, INGOT_BAD_LAYOUT, p, "storage keys", 12,
                              "storage key list holds a non-str");
        uint64_t kl;
        const uint8_t *key = ingot__tp_bytes(m, k, &kl);
        int64_t si = ingot__tp_storage_find(m, key, kl);
        size_t wl = kl > 63 ? 63 : (size_t)kl;
        if (si < 0)
            return ingot__err(err, INGOT_BAD_LAYOUT, p, (const char *)key, wl,
                              "storage key not referenced by the pickle");
        if (m->storages[si].used)
            return ingot__err(err, INGOT_DUPLICATE, p, (const char *)key, wl,
                              "storage key listed twice");
        m->storages[si].used = true;
    }
    for (size_t i = 0; i < m->n_storages; i++)
        if (!m->storages[i].used) {
            uint64_t kl;
            const uint8_t *key = tp_storage_key(m, i, &kl);
            return ingot__err(err, INGOT_BAD_LAYOUT, m->storages[i].pid_offset, (const char *)key,
                              kl > 63 ? 63 : (size_t)kl,
                              "storage referenced by the pickle is missing from the key list");
        }
    /* Storages: int64 element count + bytes, in key-list order. */
    uint64_t pos = e;
    for (uint32_t c = m->nodes[keys].head; c != TP_NONE_IDX; c = m->cells[c].next) {
        uint64_t kl;
        const uint8_t *key = ingot__tp_bytes(m, m->cells[c].val, &kl);
        tp_storage *st = &m->storages[ingot__tp_storage_find(m, key, kl)];
        size_t wl = kl > 63 ? 63 : (size_t)kl;
        uint64_t count = 0;
        ING_TRY(read_u64(f, pos, &count, err));
        if (count != st->numel)
            return ingot__err(err, INGOT_BAD_SIZE, pos, (const char *)key, wl,
                              "storage holds %llu elements, the pickle says %llu",
                              (unsigned long long)count, (unsigned long long)st->numel);
        st->data_offset = pos + 8;
        if (!ing_add(st->data_offset, st->nbytes, &pos) || pos > f->size)
            return ingot__err(err, INGOT_TRUNCATED, st->data_offset, (const char *)key, wl,
                              "storage of %llu bytes runs past the end of the file",
                              (unsigned long long)st->nbytes);
    }
    if (pos != f->size)
        return ingot__err(err, INGOT_BAD_LAYOUT, pos, 0, 0,
                          "%llu trailing bytes after the last storage",
                          (unsigned long long)(f->size - pos));
    ingot__fmt(f->version, sizeof f->version, "1001");
    return ingot__torch_finish(f, s, obj, obj_off, err);
}
