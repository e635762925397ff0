/*
 * npy_adapter.c - readers for NumPy .npy (one array) and .npz (a zip of .npy members) files.
 * Header grammar: npy_header.c; zip rules: src/core/zip.h; deflated members are inflated with
 * zlib through the file's allocator. Documentation: docs/formats/npy.md.
 *
 * .npz layout: [local header, member.npy bytes]* central directory [zip64 end records] EOCD.
 * Stored members are zero-copy views into the mapping; deflated ones are NOT_MAPPED and read
 * through tensor_read (an inflate cursor per file makes sequential chunked reads linear).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "alloc.h"
#include "checked.h"
#include "error.h"
#include "file.h"
#include "npy_format.h"
#include "npy_header.h"
#include "order.h"
#include "utf8.h"
#include "zip.h"

/* Bytes of each npz member read with its local header at open (its npy header, usually 128). */
#define NPY_PREFETCH 128u

/* Name of the tensor of a .npy opened from a buffer (no path to take the stem from). */
#define NPY_BUFFER_NAME "array"

/* One array. The name (NUL-terminated) and the shape share one block of the state's arena, so a
 * tensor costs 8 bytes per dimension it has rather than per dimension it could have
 * (INGOT_MAX_RANK). */
typedef struct {
    char *name; /* arena block: name, NUL, padding to 8, then shape[rank] */
    size_t name_len;
    const uint64_t *shape;
    ingot_dtype dtype;
    uint32_t rank;
    uint64_t nelem, nbytes;
    uint64_t data_offset; /* of the array data within the npy (the header length) */
    bool big_endian, fortran;
    uint64_t offset;  /* absolute: data start (stored), or the compressed stream start */
    const void *data; /* into the mapping, or NULL */
    uint32_t flags;
    uint32_t member;  /* zip entry (npz) */
    bool deflated;
} ntensor;

/* Inflate state over one deflated member; input copied in chunks through ingot__file_read. */
#define INF_IN 65536
typedef struct {
    z_stream zs;
    bool live;
    uint32_t member;
    uint64_t in_off, in_left; /* next compressed bytes to fetch */
    uint64_t out_pos;         /* uncompressed bytes produced so far */
    uint8_t in[INF_IN];
} inflater;

/* Blocks of the arena the tensors' names and shapes come from (one allocation per chunk, not per
 * tensor: an npz of 1000 members made 1000 allocations and frees per open). */
typedef struct nchunk {
    struct nchunk *next;
    size_t size, used; /* bytes after the header */
} nchunk;

typedef struct {
    ntensor *t;
    size_t n;
    uint32_t *by_name;
    nchunk *chunks;     /* newest first */
    bool is_zip;
    ingot__zip zip;
    pthread_mutex_t mu; /* guards cur */
    bool mu_live;
    inflater *cur;      /* cached cursor for sequential reads of a deflated member */
    ingot_allocator alloc;
} nstate;

#define S(f) ((nstate *)(f)->state)

/* ---------------------------------------------------------------------------------------------
 * zlib through the ingot allocator (zfree has no size: keep it in a 16-byte prefix)
 * ------------------------------------------------------------------------------------------- */

static voidpf z_alloc(voidpf opaque, uInt items, uInt size)
{
    uint64_t n;
    if (!ing_mul(items, size, &n) || n > SIZE_MAX - 16) return Z_NULL;
    uint8_t *p = ingot__alloc(opaque, (size_t)n + 16);
    if (!p) return Z_NULL;
    size_t sz = (size_t)n;
    memcpy(p, &sz, sizeof sz);
    return p + 16;
}

static void z_free(voidpf opaque, voidpf ptr)
{
    if (!ptr) return;
    uint8_t *p = (uint8_t *)ptr - 16;
    size_t sz;
    memcpy(&sz, p, sizeof sz);
    ingot__free(opaque, p, sz + 16);
}

static void inf_end(const ingot_allocator *a, inflater *x)
{
    if (!x) return;
    if (x->live) inflateEnd(&x->zs);
    ingot__free(a, x, sizeof *x);
}

#define ENAME(e) (e)->name, (e)->name_len

static ingot_status inf_start(const ingot_file *f, const ingot__zip_entry *e, uint32_t member,
                              inflater **out, inflater *reuse, ingot_error *err)
{
    inflater *x = reuse;
    if (!x) {
        x = ingot__alloc(&f->alloc, sizeof *x);
        if (!x)
            return ingot__err(err, INGOT_NOMEM, e->data_offset, ENAME(e),
                              "npz: allocating an inflater");
        memset(&x->zs, 0, sizeof x->zs);
        x->live = false;
    }
    if (x->live) {
        if (inflateReset(&x->zs) != Z_OK) {
            inflateEnd(&x->zs);
            x->live = false;
        }
    }
    if (!x->live) {
        memset(&x->zs, 0, sizeof x->zs);
        x->zs.zalloc = z_alloc;
        x->zs.zfree = z_free;
        x->zs.opaque = (voidpf)&f->alloc;
        if (inflateInit2(&x->zs, -MAX_WBITS) != Z_OK) {
            ingot__free(&f->alloc, x, sizeof *x);
            return ingot__err(err, INGOT_NOMEM, e->data_offset, ENAME(e),
                              "npz: initialising zlib");
        }
        x->live = true;
    }
    x->zs.next_in = x->in;
    x->zs.avail_in = 0;
    x->member = member;
    x->in_off = e->data_offset;
    x->in_left = e->comp_size;
    x->out_pos = 0;
    *out = x;
    return INGOT_OK;
}

/* Produces the next n uncompressed bytes into dst (NULL: discard). The member must inflate to
 * exactly e->size bytes: producing fewer is TRUNCATED/BAD_SIZE, a corrupt stream BAD_LAYOUT. */
static ingot_status inf_read(const ingot_file *f, const ingot__zip_entry *e, inflater *x,
                             uint8_t *dst, uint64_t n, uint32_t *crc, ingot_error *err)
{
    uint8_t scratch[4096];
    while (n) {
        if (x->zs.avail_in == 0 && x->in_left) {
            size_t k = x->in_left < INF_IN ? (size_t)x->in_left : INF_IN;
            ING_TRY(ingot__file_read(f, x->in_off, x->in, k, err));
            x->in_off += k;
            x->in_left -= k;
            x->zs.next_in = x->in;
            x->zs.avail_in = (uInt)k;
        }
        uint8_t *o = dst ? dst : scratch;
        uint64_t want = dst ? n : (n < sizeof scratch ? n : sizeof scratch);
        if (want > (1u << 30)) want = 1u << 30;
        x->zs.next_out = o;
        x->zs.avail_out = (uInt)want;
        int r = inflate(&x->zs, Z_NO_FLUSH);
        size_t got = (size_t)want - x->zs.avail_out;
        if (crc && got) *crc = ingot__crc32(*crc, o, got);
        x->out_pos += got;
        n -= got;
        if (dst) dst += got;
        if (r == Z_STREAM_END && n)
            return ingot__err(err, INGOT_BAD_SIZE, e->data_offset, ENAME(e),
                              "npz: member inflates to %llu bytes, the directory says %llu",
                              (unsigned long long)x->out_pos, (unsigned long long)e->size);
        if (r == Z_MEM_ERROR)
            return ingot__err(err, INGOT_NOMEM, e->data_offset, ENAME(e), "npz: zlib out of memory");
        if (r == Z_DATA_ERROR || r == Z_NEED_DICT || r == Z_STREAM_ERROR)
            return ingot__err(err, INGOT_BAD_LAYOUT, e->data_offset, ENAME(e),
                              "npz: corrupt deflate stream (%s)", x->zs.msg ? x->zs.msg : "zlib");
        if (r == Z_BUF_ERROR && got == 0 && x->zs.avail_in == 0 && x->in_left == 0)
            return ingot__err(err, INGOT_TRUNCATED, e->data_offset + e->comp_size, ENAME(e),
                              "npz: deflate stream ends before the member's %llu bytes",
                              (unsigned long long)e->size);
    }
    return INGOT_OK;
}

/* After all e->size bytes: the stream must end here and use every compressed byte. */
static ingot_status inf_finish(const ingot_file *f, const ingot__zip_entry *e, inflater *x,
                               ingot_error *err)
{
    uint8_t one;
    for (int guard = 0; guard < 1000; guard++) {
        if (x->zs.avail_in == 0 && x->in_left) {
            size_t k = x->in_left < INF_IN ? (size_t)x->in_left : INF_IN;
            ING_TRY(ingot__file_read(f, x->in_off, x->in, k, err));
            x->in_off += k;
            x->in_left -= k;
            x->zs.next_in = x->in;
            x->zs.avail_in = (uInt)k;
        }
        x->zs.next_out = &one;
        x->zs.avail_out = 1;
        int r = inflate(&x->zs, Z_NO_FLUSH);
        if (x->zs.avail_out == 0)
            return ingot__err(err, INGOT_BAD_SIZE, e->data_offset, ENAME(e),
                              "npz: member inflates to more than the directory's %llu bytes",
                              (unsigned long long)e->size);
        if (r == Z_STREAM_END) {
            if (x->zs.avail_in || x->in_left)
                return ingot__err(err, INGOT_BAD_LAYOUT, e->data_offset, ENAME(e),
                                  "npz: bytes after the end of the deflate stream");
            return INGOT_OK;
        }
        if (r != Z_OK && !(r == Z_BUF_ERROR && (x->zs.avail_in || x->in_left)))
            return ingot__err(err, r == Z_BUF_ERROR ? INGOT_TRUNCATED : INGOT_BAD_LAYOUT,
                              e->data_offset, ENAME(e), "npz: deflate stream does not end");
    }
    return ingot__err(err, INGOT_BAD_LAYOUT, e->data_offset, ENAME(e),
                      "npz: deflate stream does not end");
}

/* ---------------------------------------------------------------------------------------------
 * Shared helpers
 * ------------------------------------------------------------------------------------------- */

static size_t block_size(size_t name_len, uint32_t rank)
{
    return (name_len + 8) / 8 * 8 + 8 * (size_t)rank;
}

/* n bytes (a multiple of 8) from the arena: the newest chunk, else a new one of at least n bytes
 * and twice the last chunk's size (4 KiB, then up to 1 MiB), but no larger than the file where n
 * fits in that (RELIABILITY: no allocation past the file's size for what the file describes). */
static void *arena_take(ingot_file *f, nstate *s, size_t n)
{
    nchunk *c = s->chunks;
    if (!c || c->size - c->used < n) {
        size_t sz = c ? (c->size < (1u << 19) ? c->size * 2 : c->size) : 4096;
        if (sz > f->size) sz = (size_t)f->size;
        if (sz < n) sz = n;
        if (sz > SIZE_MAX - sizeof *c) return NULL;
        c = ingot__alloc(&f->alloc, sizeof *c + sz);
        if (!c) return NULL;
        c->next = s->chunks, c->size = sz, c->used = 0;
        s->chunks = c;
    }
    void *p = (char *)(c + 1) + c->used;
    c->used += n;
    return p;
}

/* Fills t from a parsed header: the block holding name and shape comes from s's arena. */
static ingot_status tensor_set(ingot_file *f, nstate *s, ntensor *t, const char *name, size_t nl,
                               const npy_header *h, ingot_error *err)
{
    char *b = arena_take(f, s, block_size(nl, h->rank));
    if (!b)
        return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, name, nl, "npy: allocating a name");
    memcpy(b, name, nl);
    b[nl] = 0;
    uint64_t *shape = (uint64_t *)(void *)(b + (nl + 8) / 8 * 8);
    for (uint32_t k = 0; k < h->rank; k++) shape[k] = h->shape[k];
    t->name = b;
    t->name_len = nl;
    t->shape = shape;
    t->dtype = h->dtype;
    t->rank = h->rank;
    t->nelem = h->nelem;
    t->nbytes = h->nbytes;
    t->data_offset = h->data_offset;
    t->big_endian = h->big_endian;
    t->fortran = h->fortran;
    return INGOT_OK;
}

static void set_layout_flags(const ingot_file *f, ntensor *t)
{
    t->flags = 0;
    if (t->big_endian) t->flags |= INGOT_TENSOR_BIG_ENDIAN;
    if (t->fortran) t->flags |= INGOT_TENSOR_FORTRAN;
    uint32_t es = ingot_dtype_block_bytes(t->dtype);
    if (t->deflated || (!f->base && t->nbytes)) {
        t->flags |= INGOT_TENSOR_NOT_MAPPED;
        t->data = NULL;
    } else {
        t->data = f->base ? f->base + t->offset : NULL;
    }
    if (!t->deflated && es > 1) {
        uintptr_t at = t->data ? (uintptr_t)t->data : (uintptr_t)t->offset;
        if (at % es) t->flags |= INGOT_TENSOR_UNALIGNED;
    }
}

static uint64_t pow2_align(uint64_t off)
{
    uint64_t a = 1;
    while (a < 64 && off % (a * 2) == 0) a *= 2;
    return a;
}

static nstate *state_new(ingot_file *f, size_t n, ingot_error *err)
{
    nstate *s = ingot__calloc(&f->alloc, sizeof *s);
    if (!s) {
        ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "npy: allocating the state");
        return NULL;
    }
    s->alloc = f->alloc;
    if (n) {
        s->t = ingot__calloc(&f->alloc, n * sizeof *s->t);
        s->by_name = ingot__alloc(&f->alloc, n * sizeof *s->by_name);
        if (!s->t || !s->by_name) {
            if (s->t) ingot__free(&f->alloc, s->t, n * sizeof *s->t);
            if (s->by_name) ingot__free(&f->alloc, s->by_name, n * sizeof *s->by_name);
            ingot__free(&f->alloc, s, sizeof *s);
            ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "npy: allocating %zu tensors", n);
            return NULL;
        }
    }
    s->n = n;
    return s;
}

static void state_free(const ingot_allocator *a, nstate *s, size_t cap)
{
    if (!s) return;
    for (nchunk *c = s->chunks, *next; c; c = next) {
        next = c->next;
        ingot__free(a, c, sizeof *c + c->size);
    }
    if (s->t) ingot__free(a, s->t, cap * sizeof *s->t);
    if (s->by_name) ingot__free(a, s->by_name, cap * sizeof *s->by_name);
    if (s->cur) inf_end(a, s->cur);
    if (s->mu_live) pthread_mutex_destroy(&s->mu);
    ingot__zip_close(&s->zip);
    ingot__free(a, s, sizeof *s);
}

static void close_npy(ingot_file *f)
{
    nstate *s = S(f);
    if (!s) return;
    size_t cap = s->is_zip ? (size_t)s->zip.count : s->n;
    /* tensors were filled up to s->n; the arrays were allocated for cap entries */
    state_free(&f->alloc, s, cap ? cap : s->n);
    f->state = NULL;
}

static const void *name_of(const void *ctx, uint32_t i, size_t *len)
{
    const nstate *s = ctx;
    *len = s->t[i].name_len;
    return s->t[i].name;
}

static int cmp_name(const void *ctx, uint32_t a, uint32_t b)
{
    const nstate *s = ctx;
    return ingot__bytes_cmp(s->t[a].name, s->t[a].name_len, s->t[b].name, s->t[b].name_len);
}

static ingot_status index_names(ingot_file *f, nstate *s, ingot_error *err)
{
    for (size_t i = 0; i < s->n; i++) s->by_name[i] = (uint32_t)i;
    if (s->n < 2) return INGOT_OK;
    size_t k = 1; /* members already in name order (np.savez of sorted keys): no sort */
    while (k < s->n && cmp_name(s, (uint32_t)(k - 1), (uint32_t)k) < 0) k++;
    if (k == s->n) return INGOT_OK;
    uint32_t *tmp = ingot__alloc(&f->alloc, s->n * sizeof *tmp);
    if (!tmp)
        return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "npz: sorting %zu names",
                          s->n);
    ingot__index_sort(s->by_name, tmp, s->n, cmp_name, s);
    ingot__free(&f->alloc, tmp, s->n * sizeof *tmp);
    return INGOT_OK;
}

/* ---------------------------------------------------------------------------------------------
 * .npy
 * ------------------------------------------------------------------------------------------- */

static int probe_npy(const uint8_t *head, size_t n)
{
    if (n >= NPY_MAGIC_LEN) return memcmp(head, NPY_MAGIC, NPY_MAGIC_LEN) == 0 ? 100 : 0;
    return 0;
}

/* The stem of the path: basename without its last extension; NPY_BUFFER_NAME without a path or
 * when the stem is empty or not UTF-8. */
static void stem_of(const ingot_file *f, const char **s, size_t *n)
{
    *s = NPY_BUFFER_NAME;
    *n = sizeof NPY_BUFFER_NAME - 1;
    if (!f->path) return;
    const char *p = f->path;
    size_t len = f->path_len ? f->path_len : strlen(p);
    size_t b = len;
    while (b > 0 && p[b - 1] != '/') b--;
    size_t e = len;
    for (size_t k = len; k > b; k--)
        if (p[k - 1] == '.') {
            e = k - 1;
            break;
        }
    if (e == b) return; /* ".npy" or "" */
    if (!ingot__utf8_valid((const uint8_t *)p + b, e - b, false)) return;
    *s = p + b;
    *n = e - b;
}

static ingot_status open_npy(ingot_file *f, ingot_error *err)
{
    const uint8_t *p;
    const char *nm;
    size_t nl;
    stem_of(f, &nm, &nl);
    size_t first = f->size < 12 ? (size_t)f->size : 12;
    /* pread copies while the mapping is fresh (file.h); data pointers come from f->base */
    ING_TRY(ingot__file_head_copy(f, first, &p, err));
    npy_header h;
    ING_TRY(ingot__npy_preamble(p, first, &h, 0, nm, nl, err));
    if (h.data_offset > f->size)
        return ingot__err(err, INGOT_TRUNCATED, f->size, nm, nl,
                          "npy: file ends inside the %llu-byte header",
                          (unsigned long long)h.data_offset);
    ING_TRY(ingot__file_head_copy(f, h.data_offset, &p, err));
    ING_TRY(ingot__npy_parse(p, &h, false, 0, nm, nl, err));
    uint64_t end;
    if (!ing_add(h.data_offset, h.nbytes, &end) || end > f->size)
        return ingot__err(err, INGOT_TRUNCATED, f->size, nm, nl,
                          "npy: data needs %llu bytes at offset %llu, the file has %llu",
                          (unsigned long long)h.nbytes, (unsigned long long)h.data_offset,
                          (unsigned long long)f->size);
    if (end != f->size)
        return ingot__err(err, INGOT_BAD_LAYOUT, end, nm, nl,
                          "npy: %llu bytes after the array data",
                          (unsigned long long)(f->size - end));
    nstate *s = state_new(f, 1, err);
    if (!s) return err ? err->code : INGOT_NOMEM;
    ntensor *t = &s->t[0];
    ingot_status st = tensor_set(f, s, t, nm, nl, &h, err);
    if (st != INGOT_OK) {
        s->n = 0;
        state_free(&f->alloc, s, 1);
        return st;
    }
    t->offset = h.data_offset;
    set_layout_flags(f, t);
    s->by_name[0] = 0;
    f->state = s;
    f->alignment = pow2_align(h.data_offset);
    ingot__fmt(f->version, sizeof f->version, "%u.0", (unsigned)h.major);
    return INGOT_OK;
}

/* ---------------------------------------------------------------------------------------------
 * .npz
 * ------------------------------------------------------------------------------------------- */

static bool ends_npy(const uint8_t *name, size_t n)
{
    return n >= 4 && memcmp(name + n - 4, ".npy", 4) == 0;
}

/* A zip whose first local header names a *.npy member (the name lies within the probe bytes);
 * or an empty zip (np.savez() of nothing) at a low score. */
static int probe_npz(const uint8_t *head, size_t n)
{
    if (n >= 22 && ing_ld32(head) == 0x06054b50u && n == 22) return 10;
    if (n < 30 || ing_ld32(head) != 0x04034b50u) return 0;
    size_t nl = ing_ld16(head + 26);
    if (nl == 0 || 30 + nl > n) return 0;
    return ends_npy(head + 30, nl) ? 90 : 0;
}

/* An error the npy parser reported at offset `rel` of a deflated member's inflated bytes: that
 * is no file offset. The record's offset becomes the file offset of the member's compressed
 * data, and the message says where in the inflated member the fault lies. */
static ingot_status in_inflated(ingot_error *err, ingot_status st, const ingot__zip_entry *e,
                                const char *nm, size_t nl)
{
    if (!err || st == INGOT_OK) return st;
    char msg[sizeof err->msg];
    memcpy(msg, err->msg, sizeof msg);
    if (err->offset == INGOT_NO_OFFSET)
        return ingot__err(err, st, e->data_offset, nm, nl, "in the inflated member '%.*s': %s",
                          (int)e->name_len, e->name, msg);
    return ingot__err(err, st, e->data_offset, nm, nl,
                      "offset %llu in the inflated member '%.*s': %s",
                      (unsigned long long)err->offset, (int)e->name_len, e->name, msg);
}

/* Reads and parses the npy header of a member into *h (string members included: h->text). Error
 * offsets are file offsets for a stored member; for a deflated one see in_inflated(). nm names
 * the array (the member name without ".npy"). */
static ingot_status member_header(ingot_file *f, const ingot__zip *z, uint32_t member,
                                  bool deflated, const char *nm, size_t nl, npy_header *h,
                                  ingot_error *err)
{
    const ingot__zip_entry *e = &z->entries[member];
    uint8_t pre[12];
    size_t first = e->size < 12 ? (size_t)e->size : 12;
    inflater *x = NULL;
    ingot_status st = INGOT_OK;
    uint8_t *buf = NULL;
    size_t buf_len = 0;
    /* npy offsets: file offsets for a stored member, inflated-member offsets for a deflated one */
    uint64_t base = deflated ? 0 : e->data_offset;
    if (deflated) {
        ING_TRY(inf_start(f, e, member, &x, NULL, err));
        st = inf_read(f, e, x, pre, first, NULL, err);
        if (st != INGOT_OK) goto done;
    } else {
        /* from the prefetched local header window (ingot__zip_prefetch) when it holds them */
        const uint8_t *pk = ingot__zip_peek(z, member, e->data_offset, first);
        if (pk) memcpy(pre, pk, first);
        else st = ingot__file_read(f, e->data_offset, pre, first, err);
        if (st != INGOT_OK) goto done;
    }
    st = ingot__npy_preamble(pre, first, h, base, nm, nl, err);
    if (st == INGOT_OK && h->data_offset > e->size)
        st = ingot__err(err, INGOT_TRUNCATED, base + e->size, nm, nl,
                        "npz: member of %llu bytes ends inside its %llu-byte npy header",
                        (unsigned long long)e->size, (unsigned long long)h->data_offset);
    if (st != INGOT_OK) goto parsed;
    const uint8_t *whole = deflated ? NULL
                                    : ingot__zip_peek(z, member, e->data_offset,
                                                      (size_t)h->data_offset);
    if (whole || (!deflated && f->base)) {
        st = ingot__npy_parse(whole ? whole : f->base + e->data_offset, h, true, base, nm, nl,
                              err);
    } else {
        buf_len = (size_t)h->data_offset;
        buf = ingot__alloc(&f->alloc, buf_len);
        if (!buf) {
            st = ingot__err(err, INGOT_NOMEM, e->data_offset, nm, nl, "npz: header buffer");
            goto done;
        }
        /* the preamble's bytes already read; a v1 header of length 0 ends before them (the
         * parser refuses it, but the copy must not run past the buffer) */
        size_t have = first < buf_len ? first : buf_len;
        memcpy(buf, pre, have);
        if (buf_len > have) {
            if (deflated)
                st = inf_read(f, e, x, buf + have, buf_len - have, NULL, err);
            else
                st = ingot__file_read(f, e->data_offset + have, buf + have, buf_len - have, err);
        }
        if (st != INGOT_OK) goto done;
        st = ingot__npy_parse(buf, h, true, base, nm, nl, err);
    }
    if (st != INGOT_OK) goto parsed;
    uint64_t end;
    if (!ing_add(h->data_offset, h->nbytes, &end) || end > e->size)
        st = ingot__err(err, INGOT_TRUNCATED, e->data_offset, nm, nl,
                        "npz: member holds %llu bytes, its header declares %llu + %llu",
                        (unsigned long long)e->size, (unsigned long long)h->data_offset,
                        (unsigned long long)h->nbytes);
    else if (end != e->size)
        st = ingot__err(err, INGOT_BAD_LAYOUT, base + end, nm, nl,
                        "npz: %llu bytes after the array data in the member",
                        (unsigned long long)(e->size - end));
parsed:
    if (deflated) st = in_inflated(err, st, e, nm, nl);
done:
    if (buf) ingot__free(&f->alloc, buf, buf_len);
    if (x) inf_end(&f->alloc, x);
    return st;
}

static ingot_status open_npz(ingot_file *f, ingot_error *err)
{
    ingot__zip_source src;
    ingot__zip_source_file(&src, f);
    ingot__zip z;
    ING_TRY(ingot__zip_open(&z, &src, &f->alloc, NULL, err));
    size_t cap = (size_t)z.count;
    nstate *s = state_new(f, cap, err);
    if (!s) {
        ingot__zip_close(&z);
        return err ? err->code : INGOT_NOMEM;
    }
    s->zip = z;
    s->is_zip = true;
    s->n = 0;
    f->state = s;
    /* Every local header and the npy header after it (NumPy writes 128 bytes or fewer), in one
     * pass by offset: the loop below then reads no page of the mapping. */
    ingot_status st = ingot__zip_prefetch(&s->zip, NPY_PREFETCH, err);
    if (st != INGOT_OK) goto fail;
    uint64_t align = 64;
    for (uint64_t i = 0; i < s->zip.count; i++) {
        ingot__zip_entry *e = &s->zip.entries[i];
        if (e->info & INGOT__ZIP_ENTRY_DIR) continue;
        if (!ends_npy((const uint8_t *)e->name, e->name_len)) continue; /* not an array */
        if (e->name_len == 4) {
            st = ingot__err(err, INGOT_BAD_NAME, e->cd_pos, ENAME(e),
                            "npz: member '.npy' gives an empty tensor name");
            goto fail;
        }
        if (e->method != INGOT__ZIP_STORED && e->method != INGOT__ZIP_DEFLATE) {
            st = ingot__err(err, INGOT_UNSUPPORTED, e->cd_pos + 10, ENAME(e),
                            "npz: member compressed with method %u (%s); only stored and "
                            "deflate are supported",
                            (unsigned)e->method, ingot__zip_method_name(e->method));
            goto fail;
        }
        st = ingot__zip_locate(&s->zip, i, err);
        if (st != INGOT_OK) goto fail;
        bool deflated = e->method == INGOT__ZIP_DEFLATE;
        size_t nl = e->name_len - 4;
        npy_header h;
        st = member_header(f, &s->zip, (uint32_t)i, deflated, e->name, nl, &h, err);
        if (st != INGOT_OK) goto fail;
        if (h.text) {
            /* scipy.sparse.save_npz stores 'format' as '<U3'; np.savez(x=..., s="abc") a '<U3'
             * scalar: not a tensor, but no reason to refuse the arrays beside it */
            st = ingot__file_notice(f, INGOT_NOTICE_SKIPPED, e->name, nl, e->data_offset, err,
                                    "npz: member '%.*s' holds a %s array (descr '%s'), not "
                                    "numbers: skipped",
                                    (int)e->name_len, e->name,
                                    h.descr[1] == 'U' ? "unicode string" : "byte string",
                                    h.descr);
            if (st != INGOT_OK) goto fail;
            continue;
        }
        ntensor *t = &s->t[s->n];
        st = tensor_set(f, s, t, e->name, nl, &h, err);
        if (st != INGOT_OK) goto fail;
        s->n++;
        t->member = (uint32_t)i;
        t->deflated = deflated;
        t->offset = t->deflated ? e->data_offset : e->data_offset + t->data_offset;
        set_layout_flags(f, t);
        if (!t->deflated) {
            uint64_t a = pow2_align(t->offset);
            if (a < align) align = a;
        }
    }
    st = index_names(f, s, err);
    if (st != INGOT_OK) goto fail;
    if (pthread_mutex_init(&s->mu, NULL) != 0) {
        st = ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "npz: creating a mutex");
        goto fail;
    }
    s->mu_live = true;
    f->alignment = s->n ? align : 1;
    ingot__fmt(f->version, sizeof f->version, "%s", s->zip.zip64 ? "zip64" : "zip");
    return INGOT_OK;
fail:
    state_free(&f->alloc, s, cap);
    f->state = NULL;
    return st;
}

/* ---------------------------------------------------------------------------------------------
 * Queries (both formats)
 * ------------------------------------------------------------------------------------------- */

static uint64_t tensor_count(const ingot_file *f) { return S(f)->n; }

static void fill(const ntensor *t, uint64_t i, ingot_tensor_info *out)
{
    memset(out, 0, sizeof *out);
    out->name = t->name;
    out->name_len = t->name_len;
    out->dtype = t->dtype;
    out->rank = t->rank;
    for (uint32_t k = 0; k < t->rank; k++) out->shape[k] = t->shape[k];
    out->nelem = t->nelem;
    out->nbytes = t->nbytes;
    out->offset = t->offset;
    out->data = t->data;
    out->flags = t->flags;
    out->index = (uint32_t)i;
}

static ingot_status tensor_at(const ingot_file *f, uint64_t i, ingot_tensor_info *out)
{
    const nstate *s = S(f);
    if (i >= s->n) {
        if (out) memset(out, 0, sizeof *out);
        return INGOT_RANGE;
    }
    fill(&s->t[i], i, out);
    return INGOT_OK;
}

static ingot_status tensor_find(const ingot_file *f, const char *name, size_t len,
                                ingot_tensor_info *out)
{
    const nstate *s = S(f);
    uint32_t i;
    if (ingot__index_find(s->by_name, s->n, name_of, s, name, len, &i)) {
        fill(&s->t[i], i, out);
        return INGOT_OK;
    }
    memset(out, 0, sizeof *out);
    return INGOT_NOT_FOUND;
}

/* Reads stored bytes [off, off+n) of a deflated member's array: continues the cached cursor when
 * it is on this member at or before the wanted position, else restarts from the stream start. */
static ingot_status read_deflated(const ingot_file *f, nstate *s, const ntensor *t, uint64_t off,
                                  void *dst, size_t n, ingot_error *err)
{
    const ingot__zip_entry *e = &s->zip.entries[t->member];
    uint64_t want = t->data_offset + off;
    bool locked = pthread_mutex_trylock(&s->mu) == 0;
    inflater *x = NULL;
    ingot_status st;
    if (locked && s->cur && s->cur->live && s->cur->member == t->member &&
        s->cur->out_pos <= want) {
        x = s->cur;
        st = INGOT_OK;
    } else {
        inflater *reuse = locked ? s->cur : NULL;
        if (locked) s->cur = NULL;
        st = inf_start(f, e, t->member, &x, reuse, err);
    }
    if (st == INGOT_OK && x->out_pos < want)
        st = inf_read(f, e, x, NULL, want - x->out_pos, NULL, err);
    if (st == INGOT_OK) st = inf_read(f, e, x, dst, n, NULL, err);
    if (locked) {
        if (st == INGOT_OK) {
            s->cur = x;
        } else {
            inf_end(&f->alloc, x);
            s->cur = NULL;
        }
        pthread_mutex_unlock(&s->mu);
    } else if (x) {
        inf_end(&f->alloc, x);
    }
    if (st != INGOT_OK && err && err->where[0] == 0)
        ingot__err(err, st, err->offset, t->name, t->name_len, "%s", err->msg);
    return st;
}

static ingot_status tensor_read(const ingot_file *f, uint64_t i, uint64_t off, void *dst,
                                size_t n, ingot_error *err)
{
    nstate *s = S(f);
    if (i >= s->n) return INGOT_RANGE;
    const ntensor *t = &s->t[i];
    if (t->deflated) return read_deflated(f, s, t, off, dst, n, err);
    ingot_status st = ingot__file_read(f, t->offset + off, dst, n, err);
    if (st != INGOT_OK && err) ingot__err(err, st, err->offset, t->name, t->name_len, "%s", err->msg);
    return st;
}

/* The zip CRC-32 covers the whole member (npy header and data). */
static ingot_status tensor_verify(const ingot_file *f, uint64_t i, ingot_error *err)
{
    nstate *s = S(f);
    if (i >= s->n) return INGOT_RANGE;
    const ntensor *t = &s->t[i];
    const ingot__zip_entry *e = &s->zip.entries[t->member];
    if (!t->deflated) {
        ingot_status st = ingot__zip_check_stored_crc(&s->zip, t->member, false, err);
        if (st != INGOT_OK && err)
            ingot__err(err, st, err->offset, t->name, t->name_len, "%s", err->msg);
        return st;
    }
    inflater *x = NULL;
    ING_TRY(inf_start(f, e, t->member, &x, NULL, err));
    uint32_t crc = 0;
    ingot_status st = inf_read(f, e, x, NULL, e->size, &crc, err);
    if (st == INGOT_OK) st = inf_finish(f, e, x, err);
    inf_end(&f->alloc, x);
    if (st == INGOT_OK && crc != e->crc32)
        st = ingot__err(err, INGOT_BAD_CHECKSUM, e->data_offset, t->name, t->name_len,
                        "npz: CRC-32 of the inflated member is 0x%08x, the directory says 0x%08x",
                        (unsigned)crc, (unsigned)e->crc32);
    return st;
}

/* Every tensor is one member with its own zip CRC-32. */
static ingot_status verify_plan(const ingot_file *f, ingot_verify_plan *p)
{
    p->tensors_with_checksum = p->checksums = S(f)->n;
    if (p->checksums) p->checks |= INGOT_CHECK_ZIP_CRC32;
    return INGOT_OK;
}

static uint64_t meta_count(const ingot_file *f)
{
    (void)f;
    return 0;
}
static ingot_status meta_at(const ingot_file *f, uint64_t i, ingot_meta_info *out)
{
    (void)f, (void)i;
    if (out) memset(out, 0, sizeof *out);
    return INGOT_RANGE;
}
static ingot_status meta_find(const ingot_file *f, const char *key, size_t len,
                              ingot_meta_info *out)
{
    (void)f, (void)key, (void)len;
    if (out) memset(out, 0, sizeof *out);
    return INGOT_NOT_FOUND;
}
static ingot_status meta_array_read(const ingot_file *f, uint64_t index, ingot_meta_type type,
                                    uint64_t first, uint64_t n, void *dst)
{
    (void)f, (void)index, (void)type, (void)first, (void)n, (void)dst;
    return INGOT_RANGE;
}
static ingot_status meta_array_string(const ingot_file *f, uint64_t index, uint64_t elem,
                                      const char **str, size_t *len)
{
    (void)f, (void)index, (void)elem, (void)str, (void)len;
    return INGOT_RANGE;
}

extern const ingot__writer_ops ingot__writer_npy;
extern const ingot__writer_ops ingot__writer_npz;

static const char *const npy_ext[] = {"npy", NULL};
static const char *const npz_ext[] = {"npz", NULL};

const ingot__format ingot__format_npy = {
    .name = "npy",
    .extensions = npy_ext,
    .probe = probe_npy,
    .open = open_npy,
    .close = close_npy,
    .tensor_count = tensor_count,
    .tensor_at = tensor_at,
    .tensor_find = tensor_find,
    .meta_count = meta_count,
    .meta_at = meta_at,
    .meta_find = meta_find,
    .meta_array_read = meta_array_read,
    .meta_array_string = meta_array_string,
    .writer = &ingot__writer_npy,
};

const ingot__format ingot__format_npz = {
    .name = "npz",
    .extensions = npz_ext,
    .probe = probe_npz,
    .open = open_npz,
    .close = close_npy,
    .tensor_count = tensor_count,
    .tensor_at = tensor_at,
    .tensor_find = tensor_find,
    .tensor_read = tensor_read,
    .tensor_verify = tensor_verify,
    .verify_plan = verify_plan,
    .meta_count = meta_count,
    .meta_at = meta_at,
    .meta_find = meta_find,
    .meta_array_read = meta_array_read,
    .meta_array_string = meta_array_string,
    .writer = &ingot__writer_npz,
};
