/*
 * torch_adapter.c - PyTorch checkpoints written by torch.save (../shared/formats/pytorch.md):
 * detection by content, the getters, verification and metadata. The container readers are
 * torch_zip.c (torch >= 1.6: a zip whose records are 64-byte aligned and stored) and
 * torch_legacy.c (the pre-1.6 stream of five pickles and raw storages) and torch_tar.c (the tar
 * archives of torch <= 0.1.9); all feed the restricted pickle machine of torch_pickle.c, which
 * never calls or imports anything.
 *
 * Layout facts the probe relies on (spec §1):
 *   zip      "PK\3\4" at 0 and a first member named "<prefix>/data.pkl" (torch writes it first)
 *   legacy   PROTO 2..5 [FRAME] LONG1 10 bytes 6C FC 9C 46 F9 20 6A A8 50 19, STOP
 *   tar      "ustar" at 257 and a first member named "sys_info" (torch <= 0.1.9)
 *   refused  "PYTORCH1" preview archives
 */
#include "alloc.h"
#include "checked.h"
#include "error.h"
#include "torch_format.h"
#include "torch_internal.h"

const uint8_t ingot__torch_legacy_magic[10] = {0x6C, 0xFC, 0x9C, 0x46, 0xF9,
                                               0x20, 0x6A, 0xA8, 0x50, 0x19};

#define S(f) ((const tstate *)(f)->state)

static bool is_zip_torch(const uint8_t *h, size_t n)
{
    if (n < 30 || ING_MEMCMP(h, "PK\3\4", 4) != 0) return false;
    size_t nl = ing_ld16(h + 26);
    if (nl < 10 || 30 + nl > n) return false;
    const uint8_t *name = h + 30;
    if (ING_MEMCMP(name + nl - 9, "/data.pkl", 9) != 0) return false;
    for (size_t i = 0; i + 9 < nl; i++)
        if (name[i] == '/') return false;
    return true;
}

static bool is_legacy(const uint8_t *h, size_t n)
{
    if (n < 2 || h[0] != 0x80 || h[1] < 2 || h[1] > 5) return false;
    size_t p = 2;
    if (n > p && h[p] == 0x95) p += 9; /* FRAME */
    return n >= p + 13 && h[p] == 0x8A && h[p + 1] == 10 &&
           ING_MEMCMP(h + p + 2, ingot__torch_legacy_magic, 10) == 0 && h[p + 12] == '.';
}

static bool is_torch_tar(const uint8_t *h, size_t n)
{
    return n >= 262 && ING_MEMCMP(h + 257, "ustar", 5) == 0 && ING_MEMCMP(h, "sys_info", 9) == 0;
}

static int probe(const uint8_t *head, size_t n)
{
    if (is_zip_torch(head, n) || is_legacy(head, n) || is_torch_tar(head, n)) return 100;
    if (n >= 8 && ING_MEMCMP(head, "PYTORCH1", 8) == 0) return 100;
    return 0;
}

static void close_torch(ingot_file *f)
{
    tstate *s = f->state;
    if (!s) return;
    ingot__tp_flat_free(&s->fl, &f->alloc);
    if (s->st_entry) ingot__free(&f->alloc, s->st_entry, s->m.n_storages * sizeof *s->st_entry);
    ingot__tp_free(&s->m);
    if (s->has_zip) ingot__zip_close(&s->zip);
    if (s->owned) ingot__free(&f->alloc, s->owned, s->owned_len);
    ingot__free(&f->alloc, s, sizeof *s);
    f->state = NULL;
}

static ingot_status open_torch(ingot_file *f, ingot_error *err)
{
    if (f->size == 0) return ingot__err(err, INGOT_TRUNCATED, 0, 0, 0, "empty file");
    const uint8_t *h;
    size_t n = f->size < INGOT__PROBE_BYTES ? (size_t)f->size : INGOT__PROBE_BYTES;
    ING_TRY(ingot__file_head(f, n, &h, err));
    if (n >= 8 && ING_MEMCMP(h, "PYTORCH1", 8) == 0)
        return ingot__err(err, INGOT_UNSUPPORTED, 0, 0, 0,
                          "PYTORCH1 preview-release archive (torch refuses it too)");
    bool tar = is_torch_tar(h, n);
    if (!tar && n < 262 && ING_MEMCMP(h, "sys_info", n < 9 ? n : 9) == 0)
        return ingot__err(err, INGOT_TRUNCATED, n, "tar", 3,
                          "file ends inside the first header of a tar checkpoint");
    bool zip = n >= 4 && ING_MEMCMP(h, "PK\3\4", 4) == 0;
    if (!zip && !tar && h[0] != 0x80)
        return ingot__err(err, n < 4 ? INGOT_TRUNCATED : INGOT_BAD_MAGIC, 0, 0, 0,
                          "not a torch.save checkpoint (neither a zip nor the legacy magic)");
    tstate *s = ingot__calloc(&f->alloc, sizeof *s);
    if (!s) return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "allocating the state");
    f->state = s;
    ingot_status st = zip   ? ingot__torch_open_zip(f, s, err)
                      : tar ? ingot__torch_open_tar(f, s, err)
                            : ingot__torch_open_legacy(f, s, err);
    if (st != INGOT_OK) close_torch(f);
    return st;
}

ingot_status ingot__torch_finish(ingot_file *f, tstate *s, uint32_t root, uint64_t root_off,
                                 ingot_error *err)
{
    ING_TRY(ingot__tp_flatten(&s->m, root, root_off, &s->fl, err));
    /* Placeholders for objects outside the allow-list: one notice each, in file order. */
    for (size_t i = 0; i < s->fl.n_places; i++) {
        const tp_place *pl = &s->fl.places[i];
        const uint8_t *cls;
        uint64_t cl, at;
        const char *op;
        ingot__tp_place_describe(&s->m, pl->node, &cls, &cl, &op, &at);
        bool obj = s->m.nodes[pl->node].kind == TPV_OBJECT;
        const char *name = pl->name_len ? s->fl.names + pl->name_off : "(root)";
        size_t nl = pl->name_len ? pl->name_len : 6;
        ING_TRY(ingot__file_notice(f, INGOT_NOTICE_SKIPPED, name, nl, s->m.base_off + at, err,
                                   "inert placeholder for %s %.*s (%s at byte %llu): never "
                                   "imported or called",
                                   obj ? "an object made by" : "the global",
                                   (int)(cl > 96 ? 96 : cl),
                                   (const char *)cls, op,
                                   (unsigned long long)(s->m.base_off + at)));
    }
    uint64_t align = 64;
    for (size_t i = 0; i < s->m.n_tensors; i++) {
        const tp_tensor *t = &s->m.tensors[i];
        uint64_t off = s->m.storages[t->storage].data_offset + t->offset * t->esize;
        while (align > 1 && off % align) align /= 2;
    }
    f->alignment = align;
    return INGOT_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Tensors
 * ------------------------------------------------------------------------------------------- */

static uint64_t tensor_count(const ingot_file *f) { return S(f)->fl.n_entries; }

static ingot_status tensor_at(const ingot_file *f, uint64_t i, ingot_tensor_info *out)
{
    const tstate *s = S(f);
    if (i >= s->fl.n_entries) return INGOT_RANGE;
    const tp_entry *e = &s->fl.entries[i];
    const tp_tensor *t = &s->m.tensors[e->tensor];
    const tp_storage *st = &s->m.storages[t->storage];
    ING_MEMSET(out, 0, sizeof *out);
    out->name = s->fl.names + e->name_off;
    out->name_len = e->name_len;
    out->dtype = (ingot_dtype)t->dtype;
    out->rank = t->ndim;
    const uint64_t *size = tp_size(&s->m, t);
    for (uint32_t k = 0; k < t->ndim; k++) out->shape[k] = size[k];
    out->nelem = t->nelem;
    out->nbytes = t->nelem * t->esize; /* bounded by the storage (checked at rebuild) or dense */
    out->offset = st->data_offset + t->offset * t->esize;
    out->index = (uint32_t)i;
    if (!t->contiguous) {
        out->flags |= INGOT_TENSOR_STRIDED;
        const int64_t *stride = tp_stride(&s->m, t);
        for (uint32_t k = 0; k < t->ndim; k++) out->strides[k] = stride[k];
    }
    if (s->big_endian && t->esize > 1) out->flags |= INGOT_TENSOR_BIG_ENDIAN;
    if (f->base) {
        out->data = f->base + out->offset;
        if ((uintptr_t)out->data % t->esize) out->flags |= INGOT_TENSOR_UNALIGNED;
    } else {
        out->flags |= INGOT_TENSOR_NOT_MAPPED;
        if (out->offset % t->esize) out->flags |= INGOT_TENSOR_UNALIGNED;
    }
    return INGOT_OK;
}

static ingot_status tensor_find(const ingot_file *f, const char *name, size_t len,
                                ingot_tensor_info *out)
{
    int64_t i = ingot__tp_flat_find(&S(f)->fl, name, len);
    if (i < 0) {
        ING_MEMSET(out, 0, sizeof *out);
        return INGOT_NOT_FOUND;
    }
    return tensor_at(f, (uint64_t)i, out);
}

/* Verifies the whole storage under tensor i: the zip CRC-32 of its record where the file has one,
 * else a guarded read-through (legacy files carry no checksum). */
static ingot_status tensor_verify(const ingot_file *f, uint64_t i, ingot_error *err)
{
    const tstate *s = S(f);
    if (i >= s->fl.n_entries) return ingot__err(err, INGOT_RANGE, INGOT_NO_OFFSET, 0, 0, "no tensor");
    const tp_entry *e = &s->fl.entries[i];
    const tp_tensor *t = &s->m.tensors[e->tensor];
    const tp_storage *st = &s->m.storages[t->storage];
    const char *name = s->fl.names + e->name_off;
    ingot_status r;
    if (s->has_zip) {
        r = ingot__zip_check_stored_crc(&s->zip, s->st_entry[t->storage], true, err);
    } else {
        uint8_t buf[16384];
        r = INGOT_OK;
        for (uint64_t off = 0; off < st->nbytes && r == INGOT_OK; off += sizeof buf) {
            size_t k = st->nbytes - off < sizeof buf ? (size_t)(st->nbytes - off) : sizeof buf;
            r = ingot__file_read(f, st->data_offset + off, buf, k, err);
        }
    }
    if (r != INGOT_OK && err) {
        char msg[192];
        ING_MEMCPY(msg, err->msg, sizeof msg);
        ingot__err(err, r, err->offset, name, e->name_len, "%s", msg);
    }
    return r;
}

/* Zip files: a tensor is covered by its storage record's CRC-32, shared by the tensors viewing
 * that storage, unless the record says 0 over data (torch >= 2 with compute_crc32=False: not
 * computed, so nothing is checked); legacy files have no checksum. */
static ingot_status verify_plan(const ingot_file *f, ingot_verify_plan *p)
{
    const tstate *s = S(f);
    if (!s->has_zip || s->fl.n_entries == 0) return INGOT_OK;
    size_t words = (s->m.n_storages + 63) / 64;
    uint64_t *seen = ingot__calloc(&f->alloc, words * sizeof *seen);
    if (!seen) return INGOT_NOMEM;
    uint64_t covered = 0, distinct = 0;
    for (size_t i = 0; i < s->fl.n_entries; i++) {
        uint32_t st = s->m.tensors[s->fl.entries[i].tensor].storage;
        const ingot__zip_entry *ze = &s->zip.entries[s->st_entry[st]];
        if (ze->crc32 == 0 && ze->size != 0) continue;
        covered++;
        if (!(seen[st / 64] >> (st % 64) & 1)) distinct++;
        seen[st / 64] |= 1ull << (st % 64);
    }
    ingot__free(&f->alloc, seen, words * sizeof *seen);
    p->tensors_with_checksum = covered;
    p->checksums = distinct;
    if (covered) p->checks |= INGOT_CHECK_ZIP_CRC32;
    return INGOT_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Metadata
 * ------------------------------------------------------------------------------------------- */

static uint64_t meta_count(const ingot_file *f) { return S(f)->fl.n_metas; }

static ingot_status meta_at(const ingot_file *f, uint64_t i, ingot_meta_info *out)
{
    const tstate *s = S(f);
    if (i >= s->fl.n_metas) return INGOT_RANGE;
    const tp_meta *mt = &s->fl.metas[i];
    ING_MEMSET(out, 0, sizeof *out);
    out->key = s->fl.names + mt->key_off;
    out->key_len = mt->key_len;
    out->type = (ingot_meta_type)mt->type;
    out->is_array = mt->is_array;
    out->count = mt->count;
    out->index = i;
    if (mt->is_array) return INGOT_OK;
    switch (mt->type) {
    case INGOT_META_I64: out->v.i = (int64_t)mt->value; break;
    case INGOT_META_F64: ING_MEMCPY(&out->v.f, &mt->value, 8); break;
    case INGOT_META_BOOL: out->v.b = mt->value != 0; break;
    default: {
        uint64_t len;
        out->data = mt->src == TPM_NAMES
                        ? (const void *)(s->fl.names + mt->value)
                        : (const void *)ingot__tp_bytes(&s->m, (uint32_t)mt->value, &len);
        break;
    }
    }
    return INGOT_OK;
}

static ingot_status meta_find(const ingot_file *f, const char *key, size_t len,
                              ingot_meta_info *out)
{
    int64_t i = ingot__tp_flat_meta_find(&S(f)->fl, key, len);
    if (i < 0) return INGOT_NOT_FOUND;
    return meta_at(f, (uint64_t)i, out);
}

static ingot_status meta_array_read(const ingot_file *f, uint64_t index, ingot_meta_type type,
                                    uint64_t first, uint64_t n, void *dst)
{
    const tstate *s = S(f);
    if (index >= s->fl.n_metas) return INGOT_RANGE;
    const tp_meta *mt = &s->fl.metas[index];
    if (!mt->is_array || mt->type != type || type == INGOT_META_STRING) return INGOT_WRONG_TYPE;
    if (first > mt->count || n > mt->count - first) return INGOT_RANGE;
    const uint64_t *v = s->fl.vals + mt->value + first;
    uint8_t *d = dst;
    for (uint64_t k = 0; k < n; k++) {
        if (type == INGOT_META_BOOL) d[k] = v[k] != 0;
        else ING_MEMCPY(d + 8 * k, &v[k], 8);
    }
    return INGOT_OK;
}

static ingot_status meta_array_string(const ingot_file *f, uint64_t index, uint64_t elem,
                                      const char **str, size_t *len)
{
    const tstate *s = S(f);
    if (index >= s->fl.n_metas) return INGOT_RANGE;
    const tp_meta *mt = &s->fl.metas[index];
    if (!mt->is_array || mt->type != INGOT_META_STRING) return INGOT_WRONG_TYPE;
    if (elem >= mt->count) return INGOT_RANGE;
    uint64_t l;
    *str = (const char *)ingot__tp_bytes(&s->m, s->fl.refs[mt->value + elem], &l);
    *len = (size_t)l;
    return INGOT_OK;
}

const ingot__format ingot__format_torch = {
    .name = "torch",
    .probe = probe,
    .open = open_torch,
    .close = close_torch,
    .tensor_count = tensor_count,
    .tensor_at = tensor_at,
    .tensor_find = tensor_find,
    .tensor_verify = tensor_verify,
    .verify_plan = verify_plan,
    .meta_count = meta_count,
    .meta_at = meta_at,
    .meta_find = meta_find,
    .meta_array_read = meta_array_read,
    .meta_array_string = meta_array_string,
};
