/*
 * torch_tar.c - the tar checkpoints of torch <= 0.1.9 (replaced by the legacy stream in Feb 2017;
 * layout facts from torch/serialization.py's legacy tar loader, see docs/formats/torch.md). A
 * ustar/pax archive with the members sys_info (a pickle), storages (a pickled count, then per
 * storage a pickled (key, location, storage type), an int64 element count and the raw bytes, then
 * a pickled list of storage views), tensors (a pickled count, then per tensor a pickled (key,
 * storage key, tensor type), int32 ndim, 4 unused bytes, ndim int64 sizes, ndim int64 strides, an
 * int64 storage offset) and pickle (the object; persistent ids are tensor or storage keys).
 * Every pickle runs through the restricted machine of torch_pickle.c.
 */
#include "alloc.h"
#include "checked.h"
#include "error.h"
#include "torch_internal.h"

enum { M_SYS, M_PICKLE, M_TENSORS, M_STORAGES, N_MEMBERS };
static const char *const member_names[N_MEMBERS] = {"sys_info", "pickle", "tensors", "storages"};

typedef struct {
    uint64_t off, size; /* data of the member */
    uint64_t hdr;       /* its header, for errors */
    bool found;
} member;

static uint64_t octal(const uint8_t *p, size_t n, bool *ok)
{
    if (p[0] & 0x80) { /* GNU base-256 for sizes >= 8 GiB */
        uint64_t v = p[0] & 0x7F;
        for (size_t i = 1; i < n; i++) {
            if (v >> 56) {
                *ok = false;
                return 0;
            }
            v = v << 8 | p[i];
        }
        *ok = true;
        return v;
    }
    size_t i = 0;
    while (i < n && p[i] == ' ') i++;
    uint64_t v = 0;
    size_t digits = 0;
    for (; i < n && p[i] >= '0' && p[i] <= '7'; i++, digits++) {
        if (v >> 61) {
            *ok = false;
            return 0;
        }
        v = v << 3 | (uint64_t)(p[i] - '0');
    }
    for (; i < n; i++)
        if (p[i] != ' ' && p[i] != 0) {
            *ok = false;
            return 0;
        }
    *ok = digits > 0;
    return v;
}

/* pax extended header records "LEN KEY=VALUE\n": takes path and size for the next member. */
static ingot_status pax(const uint8_t *d, size_t n, uint64_t at, char *path, size_t *path_len,
                        uint64_t *size, bool *has_size, ingot_error *err)
{
    size_t p = 0;
    while (p < n) {
        size_t q = p, len = 0;
        while (q < n && d[q] >= '0' && d[q] <= '9' && len < 100000) len = len * 10 + (d[q++] - '0');
        if (q == p || q >= n || d[q] != ' ' || len < 5 || len > n - p || d[p + len - 1] != '\n')
            return ingot__err(err, INGOT_BAD_LAYOUT, at, "tar", 3, "malformed pax record");
        const uint8_t *kv = d + q + 1, *end = d + p + len - 1;
        const uint8_t *eq = kv;
        while (eq < end && *eq != '=') eq++;
        if (eq == end)
            return ingot__err(err, INGOT_BAD_LAYOUT, at, "tar", 3, "pax record without '='");
        size_t kl = (size_t)(eq - kv), vl = (size_t)(end - eq - 1);
        if (kl == 4 && ING_MEMCMP(kv, "path", 4) == 0) {
            if (vl > 255) return ingot__err(err, INGOT_LIMIT, at, "tar", 3, "pax path too long");
            ING_MEMCPY(path, eq + 1, vl);
            *path_len = vl;
        } else if (kl == 4 && ING_MEMCMP(kv, "size", 4) == 0) {
            uint64_t v = 0;
            if (vl == 0 || vl > 19)
                return ingot__err(err, INGOT_BAD_LAYOUT, at, "tar", 3, "bad pax size");
            for (size_t i = 0; i < vl; i++) {
                if (eq[1 + i] < '0' || eq[1 + i] > '9')
                    return ingot__err(err, INGOT_BAD_LAYOUT, at, "tar", 3, "bad pax size");
                v = v * 10 + (uint64_t)(eq[1 + i] - '0');
            }
            *size = v;
            *has_size = true;
        }
        p += len;
    }
    return INGOT_OK;
}

/* Walks the archive's headers up to the end-of-archive block and locates the four members. */
static ingot_status find_members(ingot_file *f, member *mem, ingot_error *err)
{
    char path[256];
    size_t path_len = 0;
    uint64_t pax_size = 0;
    bool has_path = false, has_size = false;
    for (uint64_t pos = 0;;) {
        uint8_t h[512];
        if (!ing_in_bounds(pos, 512, f->size))
            return ingot__err(err, INGOT_TRUNCATED, pos, "tar", 3,
                              "archive ends before its end-of-archive block");
        ING_TRY(ingot__file_read(f, pos, h, 512, err));
        bool zero = true;
        for (size_t i = 0; i < 512 && zero; i++) zero = h[i] == 0;
        if (zero) return INGOT_OK; /* end of archive; the zero blocks and padding after it */
        bool ok;
        uint64_t sum = octal(h + 148, 8, &ok), u = 0;
        int64_t sg = 0;
        for (size_t i = 0; i < 512; i++) {
            uint8_t c = (i >= 148 && i < 156) ? ' ' : h[i];
            u += c;
            sg += (int8_t)c;
        }
        if (!ok || (sum != u && (int64_t)sum != sg))
            return ingot__err(err, INGOT_BAD_CHECKSUM, pos + 148, "tar", 3,
                              "tar header checksum does not match");
        if (ING_MEMCMP(h + 257, "ustar", 5) != 0)
            return ingot__err(err, INGOT_BAD_MAGIC, pos + 257, "tar", 3,
                              "tar header without ustar");
        uint64_t size = octal(h + 124, 12, &ok);
        if (!ok) return ingot__err(err, INGOT_BAD_SIZE, pos + 124, "tar", 3, "bad tar member size");
        if (has_size) size = pax_size;
        uint64_t data = pos + 512, padded, next;
        if (!ing_add(size, 511, &padded) || !ing_add(data, padded & ~(uint64_t)511, &next) ||
            !ing_in_bounds(data, size, f->size))
            return ingot__err(err, INGOT_TRUNCATED, data, "tar", 3,
                              "tar member of %llu bytes runs past the end of the file",
                              (unsigned long long)size);
        uint8_t type = h[156];
        if (type == 'x' || type == 'g') {
            if (size > 4096)
                return ingot__err(err, INGOT_LIMIT, pos, "tar", 3, "pax header over 4 KiB");
            if (type == 'x') {
                uint8_t buf[4096];
                ING_TRY(ingot__file_read(f, data, buf, (size_t)size, err));
                has_path = has_size = false;
                path_len = 0;
                ING_TRY(pax(buf, (size_t)size, pos, path, &path_len, &pax_size, &has_size, err));
                has_path = path_len > 0;
            }
            pos = next;
            continue;
        }
        char name[256];
        size_t nl = 0;
        if (has_path) {
            ING_MEMCPY(name, path, path_len);
            nl = path_len;
        } else {
            size_t pl = 0, bl = 0;
            if (ING_MEMCMP(h + 257, "ustar\0", 6) == 0)
                while (pl < 155 && h[345 + pl]) pl++;
            while (bl < 100 && h[bl]) bl++;
            if (pl) {
                ING_MEMCPY(name, h + 345, pl);
                name[pl] = '/';
                nl = pl + 1;
            }
            ING_MEMCPY(name + nl, h, bl);
            nl += bl;
        }
        has_path = has_size = false;
        if (type == '0' || type == 0) {
            for (int k = 0; k < N_MEMBERS; k++) {
                size_t kl = ing_strlen(member_names[k]);
                if (nl != kl || ING_MEMCMP(name, member_names[k], kl) != 0) continue;
                if (mem[k].found)
                    return ingot__err(err, INGOT_DUPLICATE, pos, member_names[k], kl,
                                      "tar member listed twice");
                mem[k] = (member){data, size, pos, true};
            }
        } else if (type != '5') {
            return ingot__err(err, INGOT_UNSUPPORTED, pos + 156, name, nl > 63 ? 63 : nl,
                              "tar member of type '%c' (only files and directories are read)",
                              type >= 32 && type < 127 ? type : '?');
        }
        pos = next;
    }
}

/* Runs the pickle starting at file offset off, inside a member ending at lim; *next is the offset
 * just past its STOP. The machine's buffer becomes these bytes (mapped, or read into s->owned):
 * values of earlier runs that point into the pickle bytes are not used after their run, except
 * for the object pickle's, which runs last. */
static ingot_status run_at(ingot_file *f, tstate *s, uint64_t off, uint64_t lim, uint32_t *root,
                           uint64_t *next, ingot_error *err)
{
    tp_machine *m = &s->m;
    const uint8_t *p;
    uint64_t len = lim - off, stop = 0, end = 0;
    bool capped = len > TP_MAX_PICKLE + 4096;
    if (capped) len = TP_MAX_PICKLE + 4096;
    if (f->base) {
        p = f->base + off;
        ingot_status st = ingot__tp_scan_end(p, len, 0, off, &stop, NULL, err);
        if (st == INGOT_TRUNCATED && capped)
            return ingot__err(err, INGOT_LIMIT, off, "pickle", 6, "pickle larger than %llu bytes",
                              (unsigned long long)TP_MAX_PICKLE);
        ING_TRY(st);
    } else {
        uint64_t win = len < 4096 ? len : 4096;
        for (;;) {
            if (win > s->owned_len) {
                if (!ingot__grow(&f->alloc, (void **)&s->owned, s->owned_len, (size_t)win))
                    return ingot__err(err, INGOT_NOMEM, off, "pickle", 6, "reading a pickle");
                s->owned_len = (size_t)win;
            }
            ING_TRY(ingot__file_read(f, off, s->owned, (size_t)win, err));
            ingot_status st = ingot__tp_scan_end(s->owned, win, 0, off, &stop, NULL, err);
            if (st == INGOT_OK) break;
            if (st == INGOT_TRUNCATED && win == len && capped)
                return ingot__err(err, INGOT_LIMIT, off, "pickle", 6,
                                  "pickle larger than %llu bytes",
                                  (unsigned long long)TP_MAX_PICKLE);
            if (st != INGOT_TRUNCATED || win == len) return st;
            win = len / 4 < win ? len : win * 4;
        }
        p = s->owned;
        len = win;
    }
    if (stop > TP_MAX_PICKLE)
        return ingot__err(err, INGOT_LIMIT, off, "pickle", 6, "pickle larger than %llu bytes",
                          (unsigned long long)TP_MAX_PICKLE);
    m->buf = p;
    m->buf_len = len;
    m->base_off = off;
    ING_TRY(ingot__tp_run(m, 0, stop, root, &end, err));
    *next = off + end;
    return INGOT_OK;
}

static ingot_status read_le(ingot_file *f, uint64_t off, uint64_t lim, size_t n, uint64_t *v,
                            const char *what, ingot_error *err)
{
    uint8_t b[8] = {0};
    if (off > lim || lim - off < n)
        return ingot__err(err, INGOT_TRUNCATED, off, what, ing_strlen(what),
                          "tar member ends inside %s", what);
    ING_TRY(ingot__file_read(f, off, b, n, err));
    *v = n == 4 ? ing_ld32(b) : ing_ld64(b);
    return INGOT_OK;
}

/* A pickled count: an int in [0, bytes left / min_record]. */
static ingot_status count_of(const tp_machine *m, uint32_t node, uint64_t at, uint64_t left,
                             uint64_t min_record, const char *what, uint64_t *out,
                             ingot_error *err)
{
    const tp_node *n = &m->nodes[node];
    if (n->kind != TPV_INT || (int64_t)n->a < 0 || n->a > left / min_record)
        return ingot__err(err, INGOT_BAD_COUNT, at, what, ing_strlen(what),
                          "%s count is not an int within the member", what);
    *out = n->a;
    return INGOT_OK;
}

/* Items of a tuple node into it[]; false if node is not a tuple of exactly n items. */
static bool tuple_of(const tp_machine *m, uint32_t node, uint32_t *it, uint32_t n)
{
    const tp_node *t = &m->nodes[node];
    if (t->kind != TPV_TUPLE || t->count != n) return false;
    uint32_t k = 0;
    for (uint32_t c = t->head; c != TP_NONE_IDX; c = m->cells[c].next) it[k++] = m->cells[c].val;
    return true;
}

static bool int_of(const tp_machine *m, uint32_t node, int64_t *v)
{
    if (m->nodes[node].kind != TPV_INT) return false;
    *v = (int64_t)m->nodes[node].a;
    return true;
}

static ingot_status read_storages(ingot_file *f, tstate *s, const member *ms, ingot_error *err)
{
    tp_machine *m = &s->m;
    uint64_t pos = ms->off, lim = ms->off + ms->size, n = 0;
    uint32_t root, it[4];
    ING_TRY(run_at(f, s, pos, lim, &root, &pos, err));
    /* a record is at least a 12-byte pickle and an 8-byte count */
    ING_TRY(count_of(m, root, ms->off, lim - pos, 20, "storages", &n, err));
    for (uint64_t i = 0; i < n; i++) {
        uint64_t at = pos;
        ING_TRY(run_at(f, s, pos, lim, &root, &pos, err));
        int64_t key;
        uint8_t stype, esize;
        if (!tuple_of(m, root, it, 3) || !int_of(m, it[0], &key) ||
            m->nodes[it[1]].kind != TPV_STR || !ingot__tp_storage_type(m, it[2], &stype, &esize))
            return ingot__err(err, INGOT_BAD_LAYOUT, at, "storages", 8,
                              "storage record is not (int key, str location, storage type)");
        uint64_t numel, nbytes, data, end;
        ING_TRY(read_le(f, pos, lim, 8, &numel, "a storage's element count", err));
        data = pos + 8;
        if (!ing_mul(numel, esize, &nbytes) || !ing_add(data, nbytes, &end) || end > lim)
            return ingot__err(err, INGOT_TRUNCATED, pos, "storages", 8,
                              "storage of %llu elements runs past the end of its member",
                              (unsigned long long)numel);
        uint32_t idx;
        ING_TRY(ingot__tp_tar_storage(m, key, stype, numel, data, at - m->base_off, &idx, err));
        pos = end;
    }
    uint64_t at = pos;
    ING_TRY(run_at(f, s, pos, lim, &root, &pos, err));
    const tp_node *v = &m->nodes[root];
    if ((v->kind != TPV_LIST && v->kind != TPV_TUPLE))
        return ingot__err(err, INGOT_BAD_LAYOUT, at, "storages", 8,
                          "storage views are not a list");
    if (v->count)
        return ingot__err(err, INGOT_UNSUPPORTED, at, "storages", 8,
                          "storage views (a storage inside another) are not supported");
    if (pos != lim)
        return ingot__err(err, INGOT_BAD_LAYOUT, pos, "storages", 8,
                          "%llu bytes after the storage views", (unsigned long long)(lim - pos));
    return ingot__tp_tar_seal(m, 0, err);
}

static ingot_status read_tensors(ingot_file *f, tstate *s, const member *mt, ingot_error *err)
{
    tp_machine *m = &s->m;
    uint64_t pos = mt->off, lim = mt->off + mt->size, n = 0;
    uint32_t root, it[3];
    ING_TRY(run_at(f, s, pos, lim, &root, &pos, err));
    size_t n_storage_keys = m->n_pkeys; /* sorted: the storages */
    ING_TRY(count_of(m, root, mt->off, lim - pos, 24, "tensors", &n, err));
    for (uint64_t i = 0; i < n; i++) {
        uint64_t at = pos;
        ING_TRY(run_at(f, s, pos, lim, &root, &pos, err));
        int64_t key, sid;
        if (!tuple_of(m, root, it, 3) || !int_of(m, it[0], &key) || !int_of(m, it[1], &sid))
            return ingot__err(err, INGOT_BAD_LAYOUT, at, "tensors", 7,
                              "tensor record is not (int key, int storage key, type)");
        int64_t si = -1;
        size_t lo = 0, hi = n_storage_keys;
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (m->pkeys[mid] == sid) {
                si = (int64_t)m->nodes[m->pnodes[mid]].a;
                break;
            }
            if (m->pkeys[mid] < sid) lo = mid + 1;
            else hi = mid;
        }
        if (si < 0)
            return ingot__err(err, INGOT_BAD_LAYOUT, at, "tensors", 7,
                              "tensor on storage %lld, which the storages member lacks",
                              (long long)sid);
        uint64_t nd, sz[INGOT_MAX_RANK], off;
        int64_t sd[INGOT_MAX_RANK];
        ING_TRY(read_le(f, pos, lim, 4, &nd, "a tensor's ndim", err));
        if (nd > INGOT_MAX_RANK)
            return ingot__err(err, INGOT_BAD_NDIMS, pos, "tensors", 7,
                              "tensor of %lld dimensions (ingot's limit is %d)",
                              (long long)(int32_t)nd, INGOT_MAX_RANK);
        pos += 8; /* int32 ndim, 4 unused bytes */
        for (uint64_t k = 0; k < 2 * nd; k++, pos += 8) {
            uint64_t x;
            ING_TRY(read_le(f, pos, lim, 8, &x, "a tensor's sizes and strides", err));
            if ((int64_t)x < 0)
                return ingot__err(err, INGOT_BAD_SHAPE, pos, "tensors", 7,
                                  "negative tensor size or stride");
            if (k < nd) sz[k] = x;
            else sd[k - nd] = (int64_t)x;
        }
        ING_TRY(read_le(f, pos, lim, 8, &off, "a tensor's storage offset", err));
        if ((int64_t)off < 0)
            return ingot__err(err, INGOT_BAD_LAYOUT, pos, "tensors", 7,
                              "negative storage offset");
        pos += 8;
        ING_TRY(ingot__tp_tar_tensor(m, key, (uint32_t)si, off, (uint32_t)nd, sz, sd,
                                     at - m->base_off, err));
    }
    if (pos != lim)
        return ingot__err(err, INGOT_BAD_LAYOUT, pos, "tensors", 7,
                          "%llu bytes after the last tensor", (unsigned long long)(lim - pos));
    return ingot__tp_tar_seal(m, 0, err);
}

ingot_status ingot__torch_open_tar(ingot_file *f, tstate *s, ingot_error *err)
{
    member mem[N_MEMBERS];
    ING_MEMSET(mem, 0, sizeof mem);
    ING_TRY(find_members(f, mem, err));
    for (int k = 0; k < N_MEMBERS; k++)
        if (!mem[k].found)
            return ingot__err(err, INGOT_BAD_LAYOUT, 0, member_names[k],
                              ing_strlen(member_names[k]), "tar checkpoint without its '%s' member",
                              member_names[k]);
    s->legacy = true;
    tp_machine *m = &s->m;
    ingot__tp_init(m, &f->alloc, NULL, 0, 0, 0);
    /* sys_info: the writer's byte order (the storages are raw native bytes) */
    uint32_t root, le = TP_NONE_IDX, pv = TP_NONE_IDX;
    uint64_t next;
    ING_TRY(run_at(f, s, mem[M_SYS].off, mem[M_SYS].off + mem[M_SYS].size, &root, &next, err));
    const tp_node *d = &m->nodes[root];
    for (uint32_t c = d->kind == TPV_DICT ? d->head : TP_NONE_IDX; c != TP_NONE_IDX;
         c = m->cells[c].next) {
        uint64_t kl;
        uint32_t k = m->cells[c].key;
        if (m->nodes[k].kind != TPV_STR) continue;
        const uint8_t *kb = ingot__tp_bytes(m, k, &kl);
        if (kl == 13 && ING_MEMCMP(kb, "little_endian", 13) == 0) le = m->cells[c].val;
        if (kl == 16 && ING_MEMCMP(kb, "protocol_version", 16) == 0) pv = m->cells[c].val;
    }
    if (d->kind != TPV_DICT || le == TP_NONE_IDX || m->nodes[le].kind != TPV_BOOL)
        return ingot__err(err, INGOT_BAD_METADATA, mem[M_SYS].off, "sys_info", 8,
                          "sys_info is not a dict with a bool 'little_endian'");
    if (!m->nodes[le].a)
        return ingot__err(err, INGOT_UNSUPPORTED, mem[M_SYS].off, "sys_info", 8,
                          "big-endian tar checkpoint (little_endian False)");
    if (pv != TP_NONE_IDX && m->nodes[pv].kind == TPV_INT)
        ingot__fmt(f->version, sizeof f->version, "%lld", (long long)(int64_t)m->nodes[pv].a);
    else ingot__fmt(f->version, sizeof f->version, "tar");
    ING_TRY(read_storages(f, s, &mem[M_STORAGES], err));
    ING_TRY(read_tensors(f, s, &mem[M_TENSORS], err));
    const member *mp = &mem[M_PICKLE];
    ING_TRY(run_at(f, s, mp->off, mp->off + mp->size, &root, &next, err));
    if (next != mp->off + mp->size)
        return ingot__err(err, INGOT_BAD_LAYOUT, next, "pickle", 6,
                          "%llu bytes after the object pickle's STOP",
                          (unsigned long long)(mp->off + mp->size - next));
    return ingot__torch_finish(f, s, root, mp->off, err);
}
