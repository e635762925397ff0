/*
 * torch_zip.c - torch >= 1.6 zip checkpoints (../shared/formats/pytorch.md §2) on the shared zip
 * reader (src/core/zip.h): archive prefix rule, refusal of TorchScript / torch.package archives,
 * the small text records (version, byteorder, .storage_alignment), data.pkl through the restricted
 * pickle machine, and one stored record `<prefix>/data/<key>` per referenced storage, whose bytes
 * the tensors map zero-copy.
 */
#include "alloc.h"
#include "checked.h"
#include "error.h"
#include "torch_internal.h"

/* Bytes of each record read with its local header at open (covers the small text records). */
#define TORCH_PREFETCH 64u

typedef struct {
    char *buf;
    size_t len, cap, prefix_len;
} namebuf;

static ingot_status name_set(ingot_file *f, namebuf *nb, const char *rec, size_t rl,
                             ingot_error *err)
{
    if (!ingot__tp_reserve(&f->alloc, (void **)&nb->buf, &nb->cap, nb->prefix_len + rl + 1, 1))
        return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "allocating a record name");
    ING_MEMCPY(nb->buf + nb->prefix_len, rec, rl);
    nb->len = nb->prefix_len + rl;
    return INGOT_OK;
}

static bool find(const tstate *s, const namebuf *nb, uint64_t *idx)
{
    return ingot__zip_find(&s->zip, nb->buf, nb->len, idx) == INGOT_OK;
}

/* Reads a small stored text record (<= cap bytes) into out. */
static ingot_status small_record(ingot_file *f, tstate *s, uint64_t idx, char *out, size_t cap,
                                 size_t *len, ingot_status too_big, ingot_error *err)
{
    ING_TRY(ingot__zip_locate(&s->zip, idx, err));
    const ingot__zip_entry *e = &s->zip.entries[idx];
    if (e->method != INGOT__ZIP_STORED)
        return ingot__err(err, INGOT_UNSUPPORTED, e->lho, e->name, e->name_len > 63 ? 63 : e->name_len,
                          "record compressed with %s (torch stores every record)",
                          ingot__zip_method_name(e->method));
    if (e->size > cap)
        return ingot__err(err, too_big, e->data_offset, e->name, e->name_len > 63 ? 63 : e->name_len,
                          "record of %llu bytes (at most %zu expected)",
                          (unsigned long long)e->size, cap);
    *len = (size_t)e->size;
    const uint8_t *pk = ingot__zip_peek(&s->zip, idx, e->data_offset, *len);
    if (pk) {
        ING_MEMCPY(out, pk, *len);
        return INGOT_OK;
    }
    return ingot__file_read(f, e->data_offset, out, *len, err);
}

static bool digits(const char *s, size_t n, uint64_t *v)
{
    if (n == 0 || n > 9) return false;
    uint64_t x = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return false;
        x = x * 10 + (uint64_t)(s[i] - '0');
    }
    *v = x;
    return true;
}

static ingot_status open_records(ingot_file *f, tstate *s, namebuf *nb, ingot_error *err)
{
    ingot__zip *z = &s->zip;
    if (z->count == 0)
        return ingot__err(err, INGOT_BAD_LAYOUT, z->cd_offset, 0, 0,
                          "empty archive: no data.pkl");
    /* Prefix: the first central-directory name up to its first '/'. */
    const ingot__zip_entry *e0 = &z->entries[0];
    size_t pl = 0;
    while (pl < e0->name_len && e0->name[pl] != '/') pl++;
    if (pl == 0 || pl == e0->name_len)
        return ingot__err(err, INGOT_BAD_LAYOUT, e0->cd_pos, e0->name,
                          e0->name_len > 63 ? 63 : e0->name_len,
                          "first archive member is not inside a <prefix>/ directory");
    for (uint64_t i = 0; i < z->count; i++) {
        const ingot__zip_entry *e = &z->entries[i];
        if (e->name_len <= pl || ING_MEMCMP(e->name, e0->name, pl + 1) != 0)
            return ingot__err(err, INGOT_BAD_LAYOUT, e->cd_pos, e->name,
                              e->name_len > 63 ? 63 : e->name_len,
                              "member outside the archive prefix '%.*s/'", (int)(pl > 40 ? 40 : pl),
                              e0->name);
        /* torch.package archives keep Python source and pickled storages under .data/ */
        const char *rest = e->name + pl + 1;
        size_t rl = e->name_len - pl - 1;
        if ((rl == 20 && ING_MEMCMP(rest, ".data/extern_modules", 20) == 0) ||
            (rl > 14 && ING_MEMCMP(rest, ".data/", 6) == 0 &&
             ING_MEMCMP(rest + rl - 8, ".storage", 8) == 0))
            return ingot__err(err, INGOT_UNSUPPORTED, e->cd_pos, e->name,
                              e->name_len > 63 ? 63 : e->name_len,
                              "torch.package archive (contains Python code): not a torch.save file");
    }
    if (!ingot__tp_reserve(&f->alloc, (void **)&nb->buf, &nb->cap, pl + 64, 1))
        return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "allocating a record name");
    ING_MEMCPY(nb->buf, e0->name, pl + 1);
    nb->prefix_len = pl + 1;

    uint64_t idx;
    ING_TRY(name_set(f, nb, "constants.pkl", 13, err));
    if (find(s, nb, &idx))
        return ingot__err(err, INGOT_UNSUPPORTED, z->entries[idx].cd_pos, "constants.pkl", 13,
                          "TorchScript archive (torch.jit.save): not a torch.save checkpoint");

    /* version (or .data/version of TorchScript-era writers): digits, optional newline, 1..10 */
    char txt[64];
    size_t tl;
    ING_TRY(name_set(f, nb, "version", 7, err));
    if (!find(s, nb, &idx)) {
        ING_TRY(name_set(f, nb, ".data/version", 13, err));
        if (!find(s, nb, &idx))
            return ingot__err(err, INGOT_BAD_LAYOUT, INGOT_NO_OFFSET, "version", 7,
                              "archive has no version record");
    }
    ING_TRY(small_record(f, s, idx, txt, 16, &tl, INGOT_BAD_VERSION, err));
    if (tl && txt[tl - 1] == '\n') tl--;
    uint64_t ver;
    if (!digits(txt, tl, &ver) || ver < 1 || ver > 10)
        return ingot__err(err, INGOT_BAD_VERSION, z->entries[idx].data_offset, "version", 7,
                          "archive version '%.*s' (1 to 10 are read)", (int)tl, txt);
    ingot__fmt(f->version, sizeof f->version, "%llu", (unsigned long long)ver);

    ING_TRY(name_set(f, nb, "byteorder", 9, err));
    if (find(s, nb, &idx)) {
        ING_TRY(small_record(f, s, idx, txt, 16, &tl, INGOT_BAD_METADATA, err));
        if (tl == 3 && ING_MEMCMP(txt, "big", 3) == 0) s->big_endian = true;
        else if (!(tl == 6 && ING_MEMCMP(txt, "little", 6) == 0))
            return ingot__err(err, INGOT_BAD_METADATA, z->entries[idx].data_offset, "byteorder", 9,
                              "byteorder record is neither 'little' nor 'big'");
    }
    ING_TRY(name_set(f, nb, ".storage_alignment", 18, err));
    if (find(s, nb, &idx)) {
        ING_TRY(small_record(f, s, idx, txt, 16, &tl, INGOT_BAD_ALIGN, err));
        uint64_t al;
        if (!digits(txt, tl, &al) || !ing_is_pow2(al) || al > 4096)
            return ingot__err(err, INGOT_BAD_ALIGN, z->entries[idx].data_offset,
                              ".storage_alignment", 18,
                              "storage alignment '%.*s' is not a power of two <= 4096", (int)tl,
                              txt);
    }
    return INGOT_OK;
}

ingot_status ingot__torch_open_zip(ingot_file *f, tstate *s, ingot_error *err)
{
    ingot__zip_source src;
    ingot__zip_source_file(&src, f);
    ING_TRY(ingot__zip_open(&s->zip, &src, &f->alloc, NULL, err));
    s->has_zip = true;
    namebuf nb = {0};
    /* Every local header (and the small records after theirs) in one pass by offset: locating
     * the storage records below then reads no page of the mapping. */
    ingot_status st = ingot__zip_prefetch(&s->zip, TORCH_PREFETCH, err);
    if (st == INGOT_OK) st = open_records(f, s, &nb, err);
    if (st != INGOT_OK) goto done;

    /* data.pkl */
    uint64_t pk;
    if ((st = name_set(f, &nb, "data.pkl", 8, err)) != INGOT_OK) goto done;
    if (!find(s, &nb, &pk)) {
        st = ingot__err(err, INGOT_BAD_LAYOUT, INGOT_NO_OFFSET, "data.pkl", 8,
                        "archive has no data.pkl (an interrupted torch.save?)");
        goto done;
    }
    if ((st = ingot__zip_locate(&s->zip, pk, err)) != INGOT_OK) goto done;
    const ingot__zip_entry *pe = &s->zip.entries[pk];
    if (pe->method != INGOT__ZIP_STORED) {
        st = ingot__err(err, INGOT_UNSUPPORTED, pe->lho, "data.pkl", 8,
                        "data.pkl compressed with %s (torch stores it)",
                        ingot__zip_method_name(pe->method));
        goto done;
    }
    if (pe->size > TP_MAX_PICKLE) {
        st = ingot__err(err, INGOT_LIMIT, pe->data_offset, "data.pkl", 8,
                        "data.pkl of %llu bytes (cap %llu)", (unsigned long long)pe->size,
                        (unsigned long long)TP_MAX_PICKLE);
        goto done;
    }
    const uint8_t *pkl;
    /* a pread copy while the mapping is fresh, unless it is large (file.h, INGOT__HEAD_COPY_MAX) */
    if (f->base && (f->fd < 0 || pe->size > INGOT__HEAD_COPY_MAX)) {
        pkl = f->base + pe->data_offset;
    } else {
        s->owned_len = (size_t)pe->size;
        if (!(s->owned = ingot__alloc(&f->alloc, s->owned_len))) {
            st = ingot__err(err, INGOT_NOMEM, pe->data_offset, "data.pkl", 8,
                            "allocating %zu bytes for data.pkl", s->owned_len);
            goto done;
        }
        if ((st = ingot__file_pread(f, pe->data_offset, s->owned, s->owned_len, err)) != INGOT_OK)
            goto done;
        pkl = s->owned;
    }
    tp_machine *m = &s->m;
    ingot__tp_init(m, &f->alloc, pkl, pe->size, pe->data_offset, 5);
    m->reserve_max = f->size; /* the pickle is a part of the file: at least its length */
    uint32_t root;
    uint64_t end;
    if ((st = ingot__tp_run(m, 0, pe->size, &root, &end, err)) != INGOT_OK) goto done;
    if (end != pe->size) {
        st = ingot__err(err, INGOT_BAD_LAYOUT, pe->data_offset + end, "data.pkl", 8,
                        "%llu bytes after the pickle's STOP",
                        (unsigned long long)(pe->size - end));
        goto done;
    }

    /* One stored record per referenced storage, exactly numel x element size bytes. */
    if (m->n_storages) {
        s->st_entry = ingot__alloc(&f->alloc, m->n_storages * sizeof *s->st_entry);
        if (!s->st_entry) {
            st = ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "allocating the storage map");
            goto done;
        }
    }
    /* Each member named <prefix>/data/<key> to the storage with that key, by the machine's hash
     * of the keys (one probe per member instead of a search of the names per storage); member
     * names are unique (zip open), so at most one member names a storage. */
    for (size_t i = 0; i < m->n_storages; i++) s->st_entry[i] = UINT32_MAX;
    for (uint64_t i = 0; i < s->zip.count; i++) {
        const ingot__zip_entry *e = &s->zip.entries[i];
        size_t pl = nb.prefix_len; /* every name starts with the prefix (open_records) */
        if (e->name_len < pl + 5 || ING_MEMCMP(e->name + pl, "data/", 5) != 0) continue;
        int64_t k = ingot__tp_storage_find(m, (const uint8_t *)e->name + pl + 5,
                                           e->name_len - pl - 5);
        if (k >= 0) s->st_entry[k] = (uint32_t)i;
    }
    for (size_t i = 0; i < m->n_storages; i++) {
        tp_storage *sto = &m->storages[i];
        uint64_t kl, idx = s->st_entry[i];
        const uint8_t *key = tp_storage_key(m, i, &kl);
        size_t wl = kl > 63 ? 63 : (size_t)kl;
        if (idx == UINT32_MAX) {
            st = ingot__err(err, INGOT_BAD_LAYOUT, sto->pid_offset, (const char *)key, wl,
                            "missing storage record data/%.*s", (int)wl, (const char *)key);
            goto done;
        }
        if ((st = ingot__zip_locate(&s->zip, idx, err)) != INGOT_OK) goto done;
        const ingot__zip_entry *e = &s->zip.entries[idx];
        if (e->method != INGOT__ZIP_STORED || e->comp_size != e->size) {
            st = ingot__err(err, INGOT_UNSUPPORTED, e->lho, (const char *)key, wl,
                            "storage record compressed with %s: it cannot be mapped",
                            ingot__zip_method_name(e->method));
            goto done;
        }
        if (e->size != sto->nbytes) {
            st = ingot__err(err, INGOT_BAD_SIZE, e->data_offset, (const char *)key, wl,
                            "storage record holds %llu bytes, the pickle says %llu",
                            (unsigned long long)e->size, (unsigned long long)sto->nbytes);
            goto done;
        }
        if (s->big_endian && (sto->stype == TPS_CFLOAT || sto->stype == TPS_CDOUBLE)) {
            st = ingot__err(err, INGOT_UNSUPPORTED, e->data_offset, (const char *)key, wl,
                            "big-endian complex storage");
            goto done;
        }
        sto->data_offset = e->data_offset;
        sto->crc = e->crc32;
        sto->record = (uint32_t)idx;
        sto->used = true;
        s->st_entry[i] = (uint32_t)idx;
    }
    st = ingot__torch_finish(f, s, root, pe->data_offset, err);
done:
    ingot__free(&f->alloc, nb.buf, nb.cap);
    return st;
}
