/*
 * file.c - the ingot_file object: opening by path (mmap or pread) or from a buffer, adapter
 * dispatch, the format-agnostic getters (typed metadata included), guarded reads and parallel
 * checksum verification. Knows no format: adapters come in as a list.
 */
#define _GNU_SOURCE
#include "file.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "alloc.h"
#include "checked.h"
#include "crc32c.h"
#include "error.h"
#include "guard.h"
#include "io.h"

size_t ingot__verify_chunk = 4u << 20;

#define PROBE_BYTES INGOT__PROBE_BYTES

static ingot_status sys_err(ingot_error *err, ingot_status code, const char *what,
                            const char *path, int e)
{
    return ingot__err(err, code, INGOT_NO_OFFSET, path, path ? strlen(path) : 0, "%s: %s", what,
                      strerror(e));
}

static ingot_status new_file(const ingot_open_opts *opts, ingot_file **out, ingot_error *err)
{
    ingot_allocator a = {0};
    if (opts && opts->allocator) a = *opts->allocator;
    ingot_file *f = ingot__calloc(&a, sizeof *f);
    if (!f) return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "allocating the file");
    f->alloc = a;
    f->fd = -1;
    f->alignment = 1;
    if (opts) f->opts = *opts;
    *out = f;
    return INGOT_OK;
}

static void release(ingot_file *f)
{
    for (size_t i = 0; i < f->n_notices; i++)
        ingot__free(&f->alloc, f->notices[i].name, f->notices[i].name_len + 1);
    ingot__free(&f->alloc, f->notices, f->cap_notices * sizeof *f->notices);
    if (f->map) ingot__io->munmap(f->map, f->map_len);
    if (f->fd >= 0) ingot__io->close(f->fd);
    ingot__free(&f->alloc, f->head, f->head_len);
    if (f->path) ingot__free(&f->alloc, (char *)f->path, f->path_len + 1);
    ingot__free(&f->alloc, f, sizeof *f);
}

void ingot_file_close(ingot_file *f)
{
    if (!f) return;
    if (f->fmt && f->fmt->close) f->fmt->close(f);
    release(f);
}

/* Grows f->head to n bytes and fills the new part with pread. */
static ingot_status head_pread(ingot_file *f, uint64_t n, ingot_error *err)
{
    if (n <= f->head_len) return INGOT_OK;
    if (n > SIZE_MAX / 2) return ingot__err(err, INGOT_LIMIT, 0, "header", 6, "header too large");
    void *buf = f->head;
    if (!ingot__grow(&f->alloc, &buf, f->head_len, (size_t)n))
        return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, "header", 6,
                          "allocating %llu header bytes", (unsigned long long)n);
    f->head = buf;
    size_t have = f->head_len;
    f->head_len = (size_t)n;
    while (have < n) {
        ssize_t r = ingot__io->pread(f->fd, f->head + have, (size_t)n - have, (off_t)have);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            f->head_len = have;
            if (r == 0)
                return ingot__err(err, INGOT_TRUNCATED, have, "header", 6,
                                  "file ended while reading the header");
            return sys_err(err, INGOT_IO, "pread", 0, errno);
        }
        have += (size_t)r;
    }
    return INGOT_OK;
}

ingot_status ingot__file_head(ingot_file *f, uint64_t n, const uint8_t **p, ingot_error *err)
{
    if (n > f->size)
        return ingot__err(err, INGOT_TRUNCATED, f->size, "header", 6,
                          "need %llu bytes, file has %llu", (unsigned long long)n,
                          (unsigned long long)f->size);
    if (f->base) {
        *p = f->base;
        return INGOT_OK;
    }
    ING_TRY(head_pread(f, n, err));
    *p = f->head;
    return INGOT_OK;
}

ingot_status ingot__file_head_copy(ingot_file *f, uint64_t n, const uint8_t **p,
                                   ingot_error *err)
{
    if (!f->base || f->fd < 0 || n > INGOT__HEAD_COPY_MAX) return ingot__file_head(f, n, p, err);
    if (n > f->size)
        return ingot__err(err, INGOT_TRUNCATED, f->size, "header", 6,
                          "need %llu bytes, file has %llu", (unsigned long long)n,
                          (unsigned long long)f->size);
    ING_TRY(head_pread(f, n, err));
    *p = f->head;
    return INGOT_OK;
}

typedef struct {
    const uint8_t *src;
    void *dst;
    size_t n;
} copy_job;

static ingot_status do_copy(void *arg)
{
    copy_job *j = arg;
    memcpy(j->dst, j->src, j->n);
    return INGOT_OK;
}

static ingot_status read_fd(const ingot_file *f, uint64_t off, void *dst, size_t n,
                            ingot_error *err);

ingot_status ingot__file_pread(const ingot_file *f, uint64_t off, void *dst, size_t n,
                               ingot_error *err)
{
    if (f->fd < 0) return ingot__file_read(f, off, dst, n, err);
    if (!ing_in_bounds(off, n, f->size))
        return ingot__err(err, INGOT_RANGE, off, 0, 0, "read past the end of the file");
    return read_fd(f, off, dst, n, err);
}

ingot_status ingot__file_read(const ingot_file *f, uint64_t off, void *dst, size_t n,
                              ingot_error *err)
{
    if (!ing_in_bounds(off, n, f->size))
        return ingot__err(err, INGOT_RANGE, off, 0, 0, "read past the end of the file");
    if (f->base) {
        copy_job j = {f->base + off, dst, n};
        ingot_status st = ingot__guard(do_copy, &j);
        if (st == INGOT_IO_FAULT)
            return ingot__err(err, st, off, 0, 0,
                              "SIGBUS reading the mapping: the file was truncated or changed");
        return st;
    }
    return read_fd(f, off, dst, n, err);
}

static ingot_status read_fd(const ingot_file *f, uint64_t off, void *dst, size_t n,
                            ingot_error *err)
{
    size_t done = 0;
    while (done < n) {
        ssize_t r = ingot__io->pread(f->fd, (uint8_t *)dst + done, n - done, (off_t)(off + done));
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return sys_err(err, INGOT_IO, "pread", 0, errno);
        if (r == 0)
            return ingot__err(err, INGOT_IO_FAULT, off + done, 0, 0,
                              "file shrank since it was opened");
        done += (size_t)r;
    }
    return INGOT_OK;
}

static ingot_status dispatch(const ingot__format *const *formats, ingot_file *f, ingot_error *err)
{
    const ingot__format *best = NULL;
    if (f->opts.format) {
        for (size_t i = 0; formats[i]; i++)
            if (strcmp(formats[i]->name, f->opts.format) == 0) best = formats[i];
        if (!best)
            return ingot__err(err, INGOT_UNSUPPORTED, INGOT_NO_OFFSET, f->opts.format,
                              strlen(f->opts.format), "no adapter of that name");
    }
    /* Probing: the best score first; an adapter whose open declines the file (INGOT__DECLINED:
     * the bytes fit, the file is not its kind, nothing was touched) passes it to the next. */
    const uint8_t *head = NULL;
    size_t n = f->size < PROBE_BYTES ? (size_t)f->size : PROBE_BYTES;
    int ceiling = 1 << 30;
    ingot_status st;
    for (;;) {
        if (!f->opts.format) {
            if (!head) ING_TRY(ingot__file_head_copy(f, n, &head, err));
            int best_score = 0;
            best = NULL;
            for (size_t i = 0; formats[i]; i++) {
                int s = formats[i]->probe ? formats[i]->probe(head, n) : 0;
                if (formats[i]->probe_size) { /* formats told only by size (llama2.c legacy) */
                    int z = formats[i]->probe_size(head, n, f->size);
                    if (z > s) s = z;
                }
                if (s > best_score && s < ceiling) best_score = s, best = formats[i];
            }
            if (!best)
                return ingot__err(err, f->size == 0 ? INGOT_TRUNCATED : INGOT_UNKNOWN_FORMAT, 0, 0,
                                  0, f->size == 0 ? "empty file"
                                                  : "no known format matches these bytes");
            ceiling = best_score;
        }
        f->fmt = best;
        st = best->open(f, err);
        if (st == INGOT__DECLINED && !f->opts.format) continue;
        break;
    }
    if (st == INGOT__DECLINED)
        st = ingot__err(err, INGOT_UNKNOWN_FORMAT, 0, 0, 0, "the %s adapter declines this file",
                        best->name);
    if (st != INGOT_OK) {
        f->fmt = NULL;
        return st;
    }
    if (f->opts.verify == INGOT_VERIFY_ALL) {
        st = ingot_file_verify(f, f->opts.threads, err);
        if (st != INGOT_OK) {
            if (best->close) best->close(f);
            f->fmt = NULL;
        }
    }
    return st;
}

ingot_status ingot__file_open_path(const ingot__format *const *formats, const char *path,
                                   const ingot_open_opts *opts, ingot_file **out,
                                   ingot_error *err)
{
    if (!out) return INGOT_MISUSE;
    *out = NULL;
    if (!path) return ingot__err(err, INGOT_MISUSE, INGOT_NO_OFFSET, 0, 0, "path is NULL");
    ingot_file *f = NULL;
    ING_TRY(new_file(opts, &f, err));
    ingot_status st;
    size_t plen = strlen(path);
    char *pcopy = ingot__alloc(&f->alloc, plen + 1);
    if (!pcopy) {
        st = ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "allocating the path");
        goto fail;
    }
    memcpy(pcopy, path, plen + 1);
    f->path = pcopy;
    f->path_len = plen;
    do f->fd = ingot__io->open(path, O_RDONLY | O_CLOEXEC, 0);
    while (f->fd < 0 && errno == EINTR);
    if (f->fd < 0) {
        st = sys_err(err, errno == ENOENT ? INGOT_NOT_FOUND : INGOT_IO, "open", path, errno);
        goto fail;
    }
    struct stat sb;
    if (ingot__io->fstat(f->fd, &sb) != 0) {
        st = sys_err(err, INGOT_IO, "fstat", path, errno);
        goto fail;
    }
    if (!S_ISREG(sb.st_mode)) {
        st = ingot__err(err, INGOT_IO, INGOT_NO_OFFSET, path, strlen(path), "not a regular file");
        goto fail;
    }
    f->size = (uint64_t)sb.st_size;
    bool cow = f->opts.io == INGOT_IO_MMAP_PRIVATE;
    if ((f->opts.io == INGOT_IO_MMAP || cow) && f->size > 0 && f->size <= SIZE_MAX) {
        /* copy-on-write: writable, and MAP_NORESERVE so that a mapping larger than RAM + swap
         * is not refused by the overcommit heuristic (only written pages take memory) */
        void *m = ingot__io->mmap(NULL, (size_t)f->size, cow ? PROT_READ | PROT_WRITE : PROT_READ,
                                  cow ? MAP_PRIVATE | MAP_NORESERVE : MAP_PRIVATE, f->fd, 0);
        if (m != MAP_FAILED) {
            f->map = m;
            f->map_len = (size_t)f->size;
            f->base = m;
            /* The descriptor stays open while the adapter opens the file, for
             * ingot__file_head_copy; the mapping keeps the file alive after that. */
        } /* else: fall back to pread, as SQLite does */
    }
    st = dispatch(formats, f, err);
    if (st != INGOT_OK) goto fail;
    if (f->base && f->fd >= 0) {
        ingot__io->close(f->fd);
        f->fd = -1;
    }
    *out = f;
    return INGOT_OK;
fail:
    release(f);
    return st;
}

ingot_status ingot__file_open_buffer(const ingot__format *const *formats, const void *buf,
                                     size_t size, const ingot_open_opts *opts, ingot_file **out,
                                     ingot_error *err)
{
    if (!out) return INGOT_MISUSE;
    *out = NULL;
    if (!buf && size)
        return ingot__err(err, INGOT_MISUSE, INGOT_NO_OFFSET, 0, 0, "buffer is NULL");
    ingot_file *f = NULL;
    ING_TRY(new_file(opts, &f, err));
    static const uint8_t empty[1];
    f->base = size ? buf : empty;
    f->size = size;
    ingot_status st = dispatch(formats, f, err);
    if (st != INGOT_OK) {
        release(f);
        return st;
    }
    *out = f;
    return INGOT_OK;
}

ingot_status ingot__file_notice(ingot_file *f, ingot_notice_kind kind, const char *name,
                                size_t name_len, uint64_t offset, ingot_error *err,
                                const char *fmt, ...)
{
    if (f->n_notices == f->cap_notices) {
        size_t nc = f->cap_notices ? f->cap_notices * 2 : 4;
        void *p = f->notices;
        if (!ingot__grow(&f->alloc, &p, f->cap_notices * sizeof *f->notices,
                         nc * sizeof *f->notices))
            return ingot__err(err, INGOT_NOMEM, offset, name, name_len, "allocating a notice");
        f->notices = p;
        f->cap_notices = nc;
    }
    ingot__notice *n = &f->notices[f->n_notices];
    n->name = ingot__strndup(&f->alloc, name, name_len);
    if (!n->name)
        return ingot__err(err, INGOT_NOMEM, offset, name, name_len, "allocating a notice");
    n->kind = kind;
    n->offset = offset;
    n->name_len = name_len;
    va_list ap;
    va_start(ap, fmt);
    ingot__vfmt(n->reason, sizeof n->reason, fmt, ap);
    va_end(ap);
    f->n_notices++;
    return INGOT_OK;
}

uint64_t ingot_file_notice_count(const ingot_file *f) { return f ? f->n_notices : 0; }

ingot_status ingot_file_notice_at(const ingot_file *f, uint64_t i, ingot_notice *out)
{
    if (!f || !out) return INGOT_MISUSE;
    memset(out, 0, sizeof *out);
    if (i >= f->n_notices) return INGOT_RANGE;
    const ingot__notice *n = &f->notices[i];
    out->kind = n->kind;
    out->name = n->name;
    out->name_len = n->name_len;
    out->reason = n->reason;
    out->offset = n->offset;
    return INGOT_OK;
}

const char *ingot_file_format(const ingot_file *f) { return f ? f->fmt->name : NULL; }
uint64_t ingot_file_size(const ingot_file *f) { return f ? f->size : 0; }
const char *ingot_file_version(const ingot_file *f) { return f ? f->version : NULL; }
uint64_t ingot_file_alignment(const ingot_file *f) { return f ? f->alignment : 0; }

uint64_t ingot_file_tensor_count(const ingot_file *f) { return f ? f->fmt->tensor_count(f) : 0; }

ingot_status ingot_file_tensor_at(const ingot_file *f, uint64_t i, ingot_tensor_info *out)
{
    if (!f || !out) return INGOT_MISUSE;
    return f->fmt->tensor_at(f, i, out);
}

ingot_status ingot_file_tensor_findn(const ingot_file *f, const char *name, size_t len,
                                     ingot_tensor_info *out)
{
    if (!f || !out || (!name && len)) return INGOT_MISUSE;
    return f->fmt->tensor_find(f, name, len, out);
}

ingot_status ingot_file_tensor_find(const ingot_file *f, const char *name, ingot_tensor_info *out)
{
    if (!name) return INGOT_MISUSE;
    return ingot_file_tensor_findn(f, name, strlen(name), out);
}

ingot_status ingot_file_tensor_release(const ingot_file *f, uint64_t i, uint64_t *released,
                                       ingot_error *err)
{
    if (released) *released = 0;
    if (!f) return INGOT_MISUSE;
    ingot_tensor_info t;
    ingot_status st = f->fmt->tensor_at(f, i, &t);
    if (st != INGOT_OK) return ingot__err(err, st, INGOT_NO_OFFSET, 0, 0, "no tensor %llu",
                                          (unsigned long long)i);
    if (!f->map || f->opts.io != INGOT_IO_MMAP || !t.data || (t.flags & INGOT_TENSOR_STRIDED))
        return INGOT_OK;
    uintptr_t lo = (uintptr_t)f->map, hi = lo + f->map_len, a = (uintptr_t)t.data;
    if (a < lo || a > hi || t.nbytes > hi - a) return INGOT_OK;
    long pg = sysconf(_SC_PAGESIZE);
    uintptr_t ps = pg > 0 ? (uintptr_t)pg : 4096;
    uintptr_t b = (a + ps - 1) / ps * ps, e = (a + (uintptr_t)t.nbytes) / ps * ps;
    if (e <= b) return INGOT_OK; /* no whole page inside the tensor */
    if (madvise((void *)b, e - b, MADV_DONTNEED) != 0) return INGOT_OK; /* advice only */
    if (released) *released = e - b;
    return INGOT_OK;
}

ingot_status ingot_file_tensor_read(const ingot_file *f, uint64_t i, uint64_t offset, void *dst,
                                    size_t n, ingot_error *err)
{
    if (!f || (!dst && n)) return INGOT_MISUSE;
    ingot_tensor_info t;
    ingot_status st = f->fmt->tensor_at(f, i, &t);
    if (st != INGOT_OK) return ingot__err(err, st, INGOT_NO_OFFSET, 0, 0, "no tensor %llu",
                                          (unsigned long long)i);
    if (offset > t.nbytes || n > t.nbytes - offset)
        return ingot__err(err, INGOT_RANGE, t.offset, t.name, t.name_len,
                          "read of [%llu, +%zu) beyond the tensor's %llu bytes",
                          (unsigned long long)offset, n, (unsigned long long)t.nbytes);
    if (t.flags & INGOT_TENSOR_STRIDED)
        return ingot__err(err, INGOT_UNSUPPORTED, t.offset, t.name, t.name_len,
                          "a strided view has no contiguous stored bytes: use "
                          "ingot_file_tensor_copy()");
    if (f->fmt->tensor_read) {
        ING_TRY(f->fmt->tensor_read(f, i, offset, dst, n, err));
    } else {
        st = ingot__file_read(f, t.offset + offset, dst, n, err);
        if (st != INGOT_OK && err)
            ingot__err(err, st, err->offset, t.name, t.name_len, "%s", err->msg);
        if (st != INGOT_OK) return st;
    }
    size_t k; /* BOOL is the only dtype with invalid byte values */
    if (t.dtype == INGOT_DTYPE_BOOL && (k = ingot__first_non_bool(dst, n)) < n) {
        /* The file offset is known unless an adapter produced the bytes (a deflated member) */
        bool extent = !f->fmt->tensor_read || (t.data && !(t.flags & INGOT_TENSOR_NOT_MAPPED));
        uint64_t at = extent ? t.offset + offset + k : INGOT_NO_OFFSET;
        return ingot__err(err, INGOT_BAD_VALUE, at, t.name, t.name_len,
                          "BOOL byte %llu of the data is 0x%02x, not 0 or 1",
                          (unsigned long long)(offset + k), (unsigned)((const uint8_t *)dst)[k]);
    }
    return INGOT_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Verification: tensors are split in chunks of ingot__verify_chunk bytes; workers CRC chunks in any
 * order; chunk CRCs are then combined per tensor in file order, so the result and the reported
 * failure never depend on the thread count.
 * ------------------------------------------------------------------------------------------- */

typedef struct {
    uint32_t tensor;
    uint64_t off, len; /* absolute */
    uint32_t crc;
    ingot_status st;
} vitem;

typedef struct {
    const ingot_file *f;
    vitem *items;
    size_t n_items;
    atomic_size_t next;
    _Atomic uint64_t done;  /* bytes of tensor data scanned */
    uint64_t total;         /* sum of the tensors' nbytes */
    ingot_progress_fn fn;   /* progress, called by the calling thread's worker only */
    void *ctx;
} vshared;

typedef struct {
    vshared *s;
    uint8_t *bounce; /* pread mode: this worker's read buffer */
    bool caller;     /* runs on the thread that called verify: reports progress */
} vworker_arg;

typedef struct {
    const uint8_t *p;
    uint64_t n;
    uint32_t crc;
    bool zero;
} crc_job;

static ingot_status crc_mapped(void *arg)
{
    crc_job *j = arg;
    j->crc = ingot__crc32c_stream(0, j->p, (size_t)j->n);
    return INGOT_OK;
}

static ingot_status zero_mapped(void *arg)
{
    crc_job *j = arg;
    j->zero = true;
    for (uint64_t k = 0; k < j->n; k++)
        if (j->p[k]) {
            j->zero = false;
            j->n = k;
            break;
        }
    return INGOT_OK;
}

#define BOUNCE (1u << 20)

/* CRC (or zero check) of [off, off+len) through the mapping or pread. */
static ingot_status scan(const ingot_file *f, uint64_t off, uint64_t len, uint8_t *bounce,
                         bool zero_check, uint32_t *crc, uint64_t *nonzero_at)
{
    if (f->base) {
        crc_job j = {f->base + off, len, 0, true};
        ingot_status st = ingot__guard(zero_check ? zero_mapped : crc_mapped, &j);
        if (st != INGOT_OK) return st;
        if (crc) *crc = j.crc;
        if (zero_check && !j.zero) *nonzero_at = off + j.n;
        return INGOT_OK;
    }
    uint32_t c = 0;
    for (uint64_t done = 0; done < len;) {
        size_t n = len - done < BOUNCE ? (size_t)(len - done) : BOUNCE;
        ING_TRY(ingot__file_read(f, off + done, bounce, n, NULL));
        if (zero_check) {
            for (size_t k = 0; k < n; k++)
                if (bounce[k]) {
                    *nonzero_at = off + done + k;
                    return INGOT_OK;
                }
        } else {
            c = ingot_crc32c(c, bounce, n);
        }
        done += n;
    }
    if (crc) *crc = c;
    return INGOT_OK;
}

static void *vworker(void *arg)
{
    vworker_arg *w = arg;
    vshared *s = w->s;
    for (;;) {
        size_t k = atomic_fetch_add(&s->next, 1);
        if (k >= s->n_items) break;
        vitem *it = &s->items[k];
        it->st = scan(s->f, it->off, it->len, w->bounce, false, &it->crc, NULL);
        uint64_t done = atomic_fetch_add(&s->done, it->len) + it->len;
        if (w->caller && s->fn) s->fn(s->ctx, done, s->total);
    }
    return NULL;
}

ingot_status ingot_file_tensor_verify(const ingot_file *f, uint64_t i, ingot_error *err)
{
    if (!f) return INGOT_MISUSE;
    ingot_tensor_info t;
    ingot_status st = f->fmt->tensor_at(f, i, &t);
    if (st != INGOT_OK)
        return ingot__err(err, st, INGOT_NO_OFFSET, 0, 0, "no tensor %llu", (unsigned long long)i);
    if (f->fmt->tensor_verify) {
        ING_TRY(f->fmt->tensor_verify(f, i, err));
        return ingot__tensor_check_values(f, i, err);
    }
    bool has_crc = false;
    uint32_t want = 0;
    uint64_t zero_after = 0;
    if (f->fmt->tensor_check) ING_TRY(f->fmt->tensor_check(f, i, &has_crc, &want, &zero_after));
    uint8_t *bounce = NULL;
    if (!f->base && !(bounce = ingot__alloc(&f->alloc, BOUNCE)))
        return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "allocating a read buffer");
    uint32_t got = 0;
    uint64_t bad = UINT64_MAX;
    st = scan(f, t.offset, t.nbytes, bounce, false, &got, NULL);
    if (st == INGOT_OK && zero_after)
        st = scan(f, t.offset + t.nbytes, zero_after, bounce, true, NULL, &bad);
    ingot__free(&f->alloc, bounce, BOUNCE);
    if (st != INGOT_OK)
        return ingot__err(err, st, t.offset, t.name, t.name_len, "reading tensor data failed");
    if (has_crc && got != want)
        return ingot__err(err, INGOT_BAD_CHECKSUM, t.offset, t.name, t.name_len,
                          "tensor data checksum 0x%08x, stored 0x%08x", got, want);
    if (bad != UINT64_MAX)
        return ingot__err(err, INGOT_BAD_LAYOUT, bad, t.name, t.name_len,
                          "padding after the tensor is not zero");
    return ingot__tensor_check_values(f, i, err);
}

ingot_status ingot_file_verify(const ingot_file *f, uint32_t threads, ingot_error *err)
{
    return ingot_file_verify_progress(f, threads, NULL, NULL, err);
}

ingot_status ingot_file_verify_progress(const ingot_file *f, uint32_t threads,
                                        ingot_progress_fn fn, void *ctx, ingot_error *err)
{
    if (!f) return INGOT_MISUSE;
    if (f->fmt->verify_header) ING_TRY(f->fmt->verify_header(f, err));
    uint64_t nt = f->fmt->tensor_count(f);
    uint64_t total = 0;
    for (uint64_t i = 0; i < nt; i++) {
        ingot_tensor_info t;
        ING_TRY(f->fmt->tensor_at(f, i, &t));
        total += t.nbytes;
    }
    if (nt == 0) {
        if (fn) fn(ctx, 0, 0);
        return INGOT_OK;
    }
    if (f->fmt->tensor_verify) { /* the format's own checks, in file order */
        uint64_t done = 0;
        for (uint64_t i = 0; i < nt; i++) {
            ingot_tensor_info t;
            f->fmt->tensor_at(f, i, &t);
            ING_TRY(f->fmt->tensor_verify(f, i, err));
            ING_TRY(ingot__tensor_check_values(f, i, err));
            done += t.nbytes;
            if (fn) fn(ctx, done, total);
        }
        return INGOT_OK;
    }
    if (threads == 0) threads = 1;
    if (threads > 64) threads = 64;

    /* Plan: every tensor split in chunks (an empty tensor is one empty chunk). */
    size_t chunk = ingot__verify_chunk ? ingot__verify_chunk : 1;
    uint64_t n_items = 0;
    for (uint64_t i = 0; i < nt; i++) {
        ingot_tensor_info t;
        ING_TRY(f->fmt->tensor_at(f, i, &t));
        n_items += t.nbytes ? (t.nbytes + chunk - 1) / chunk : 1;
    }
    if (n_items > SIZE_MAX / sizeof(vitem))
        return ingot__err(err, INGOT_LIMIT, INGOT_NO_OFFSET, 0, 0, "too many chunks");
    vshared s = {.f = f, .n_items = (size_t)n_items, .total = total, .fn = fn, .ctx = ctx};
    size_t items_bytes = (size_t)n_items * sizeof(vitem);
    s.items = ingot__alloc(&f->alloc, items_bytes);
    if (!s.items)
        return ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "allocating the plan");
    size_t k = 0;
    for (uint64_t i = 0; i < nt; i++) {
        ingot_tensor_info t;
        f->fmt->tensor_at(f, i, &t);
        uint64_t off = 0;
        do {
            uint64_t len = t.nbytes - off < chunk ? t.nbytes - off : chunk;
            s.items[k++] = (vitem){(uint32_t)i, t.offset + off, len, 0, INGOT_OK};
            off += len;
        } while (off < t.nbytes);
    }
    atomic_init(&s.next, 0);
    atomic_init(&s.done, 0);
    if (threads > n_items) threads = (uint32_t)n_items;

    ingot_status st = INGOT_OK;
    uint8_t *bounces = NULL;
    size_t bounce_bytes = 0;
    if (!f->base) {
        bounce_bytes = (size_t)threads * BOUNCE;
        bounces = ingot__alloc(&f->alloc, bounce_bytes);
        if (!bounces) {
            st = ingot__err(err, INGOT_NOMEM, INGOT_NO_OFFSET, 0, 0, "allocating read buffers");
            goto done;
        }
    }
    vworker_arg args[64];
    pthread_t tids[64];
    uint32_t started = 0;
    for (uint32_t t = 0; t < threads; t++)
        args[t] = (vworker_arg){&s, bounces ? bounces + (size_t)t * BOUNCE : NULL, t == 0};
    for (uint32_t t = 1; t < threads; t++, started++)
        if (pthread_create(&tids[t - 1], NULL, vworker, &args[t]) != 0) break;
    vworker(&args[0]); /* the caller works too; with no threads started it does everything */
    for (uint32_t t = 0; t < started; t++) pthread_join(tids[t], NULL);
    if (fn) fn(ctx, total, total);

    /* Combine per tensor, in file order; report the first failure. */
    k = 0;
    for (uint64_t i = 0; i < nt && st == INGOT_OK; i++) {
        ingot_tensor_info t;
        f->fmt->tensor_at(f, i, &t);
        uint32_t crc = 0;
        for (; k < s.n_items && s.items[k].tensor == i; k++) {
            if (s.items[k].st != INGOT_OK) {
                st = ingot__err(err, s.items[k].st, s.items[k].off, t.name, t.name_len,
                                "reading tensor data failed (%s)",
                                ingot_status_str(s.items[k].st));
                break;
            }
            crc = ingot_crc32c_combine(crc, s.items[k].crc, s.items[k].len);
        }
        if (st != INGOT_OK) break;
        bool has_crc = false;
        uint32_t want = 0;
        uint64_t zero_after = 0;
        if (f->fmt->tensor_check) {
            st = f->fmt->tensor_check(f, i, &has_crc, &want, &zero_after);
            if (st != INGOT_OK) break;
        }
        if (has_crc && crc != want) {
            st = ingot__err(err, INGOT_BAD_CHECKSUM, t.offset, t.name, t.name_len,
                            "tensor data checksum 0x%08x, stored 0x%08x", crc, want);
            break;
        }
        if (zero_after) {
            uint64_t bad = UINT64_MAX;
            st = scan(f, t.offset + t.nbytes, zero_after, bounces, true, NULL, &bad);
            if (st != INGOT_OK)
                st = ingot__err(err, st, t.offset + t.nbytes, t.name, t.name_len,
                                "reading padding failed");
            else if (bad != UINT64_MAX)
                st = ingot__err(err, INGOT_BAD_LAYOUT, bad, t.name, t.name_len,
                                "padding after the tensor is not zero");
        }
        if (st == INGOT_OK) st = ingot__tensor_check_values(f, i, err);
    }
done:
    ingot__free(&f->alloc, bounces, bounce_bytes);
    ingot__free(&f->alloc, s.items, items_bytes);
    return st;
}

const char *ingot_check_name(uint32_t check)
{
    switch (check) {
#define X(name, bit, str)                                                                          \
    case INGOT_CHECK_##name:                                                                       \
        return str;
        INGOT_CHECK_LIST(X)
#undef X
    default: return NULL;
    }
}

ingot_status ingot_file_verify_plan(const ingot_file *f, ingot_verify_plan *out)
{
    if (!out) return INGOT_MISUSE;
    memset(out, 0, sizeof *out);
    if (!f) return INGOT_MISUSE;
    ingot_verify_plan p = {.checks = INGOT_CHECK_STRUCTURE | f->fmt->checks};
    uint64_t nt = f->fmt->tensor_count(f);
    for (uint64_t i = 0; i < nt; i++) {
        ingot_tensor_info t;
        ING_TRY(f->fmt->tensor_at(f, i, &t));
        p.data_bytes += t.nbytes;
        if (t.dtype == INGOT_DTYPE_BOOL) p.checks |= INGOT_CHECK_BOOL_VALUES;
        if (f->fmt->verify_plan || f->fmt->tensor_verify || !f->fmt->tensor_check) continue;
        bool has_crc = false;
        uint32_t crc;
        uint64_t zero_after;
        ING_TRY(f->fmt->tensor_check(f, i, &has_crc, &crc, &zero_after));
        if (has_crc) p.tensors_with_checksum++, p.checksums++;
    }
    if (f->fmt->verify_plan) ING_TRY(f->fmt->verify_plan(f, &p));
    else if (p.tensors_with_checksum) p.checks |= INGOT_CHECK_TENSOR_CRC32C;
    if (nt) p.checks |= INGOT_CHECK_READABLE;
    p.tensors_without = nt - p.tensors_with_checksum;
    *out = p;
    return INGOT_OK;
}

/* ---------------------------------------------------------------------------------------------
 * Metadata
 * ------------------------------------------------------------------------------------------- */

uint64_t ingot_file_meta_count(const ingot_file *f) { return f ? f->fmt->meta_count(f) : 0; }

ingot_status ingot_file_meta_at(const ingot_file *f, uint64_t i, ingot_meta_info *out)
{
    if (!f || !out) return INGOT_MISUSE;
    return f->fmt->meta_at(f, i, out);
}

ingot_status ingot_file_meta_find(const ingot_file *f, const char *key, ingot_meta_info *out)
{
    if (!f || !key || !out) return INGOT_MISUSE;
    return f->fmt->meta_find(f, key, strlen(key), out);
}

static ingot_status scalar(const ingot_file *f, const char *key, ingot_meta_type type,
                           ingot_meta_info *m)
{
    ING_TRY(ingot_file_meta_find(f, key, m));
    if (m->type != type || m->is_array) return INGOT_WRONG_TYPE;
    return INGOT_OK;
}

#define GETTER(suffix, TYPE, ctype, field)                                                        \
    ingot_status ingot_file_meta_get_##suffix(const ingot_file *f, const char *key, ctype *out)  \
    {                                                                                             \
        ingot_meta_info m;                                                                        \
        if (!out) return INGOT_MISUSE;                                                            \
        ING_TRY(scalar(f, key, INGOT_META_##TYPE, &m));                                           \
        *out = (ctype)m.v.field;                                                                  \
        return INGOT_OK;                                                                          \
    }
GETTER(u8, U8, uint8_t, u)
GETTER(u16, U16, uint16_t, u)
GETTER(u32, U32, uint32_t, u)
GETTER(u64, U64, uint64_t, u)
GETTER(i8, I8, int8_t, i)
GETTER(i16, I16, int16_t, i)
GETTER(i32, I32, int32_t, i)
GETTER(i64, I64, int64_t, i)
GETTER(f32, F32, float, f)
GETTER(f64, F64, double, f)
GETTER(bool, BOOL, bool, b)
#undef GETTER

ingot_status ingot_file_meta_get_string(const ingot_file *f, const char *key, const char **s,
                                        size_t *len)
{
    ingot_meta_info m;
    if (!s || !len) return INGOT_MISUSE;
    ING_TRY(scalar(f, key, INGOT_META_STRING, &m));
    *s = m.data;
    *len = (size_t)m.count;
    return INGOT_OK;
}

ingot_status ingot_file_meta_get_bytes(const ingot_file *f, const char *key, const void **p,
                                       size_t *len)
{
    ingot_meta_info m;
    if (!p || !len) return INGOT_MISUSE;
    ING_TRY(scalar(f, key, INGOT_META_BYTES, &m));
    *p = m.data;
    *len = (size_t)m.count;
    return INGOT_OK;
}

ingot_status ingot_file_meta_get_array(const ingot_file *f, const char *key, ingot_meta_type type,
                                       uint64_t *count)
{
    ingot_meta_info m;
    if (!count) return INGOT_MISUSE;
    ING_TRY(ingot_file_meta_find(f, key, &m));
    if (!m.is_array || m.type != type) return INGOT_WRONG_TYPE;
    *count = m.count;
    return INGOT_OK;
}

ingot_status ingot_file_meta_array_read(const ingot_file *f, uint64_t index, ingot_meta_type type,
                                        uint64_t first, uint64_t n, void *dst)
{
    if (!f || (!dst && n)) return INGOT_MISUSE;
    return f->fmt->meta_array_read(f, index, type, first, n, dst);
}

ingot_status ingot_file_meta_array_string(const ingot_file *f, uint64_t index, uint64_t elem,
                                          const char **s, size_t *len)
{
    if (!f || !s || !len) return INGOT_MISUSE;
    return f->fmt->meta_array_string(f, index, elem, s, len);
}
