/*
 * bench_native.c - the native .ingot format against the raw system calls it sits on.
 *
 * Generates one file of --tensors tensors (about --size-mb MiB of data), then measures four cases,
 * each as a ratio to a baseline measured in the same run. Every rep measures the baseline and ingot
 * back to back, alternating which goes first, so that drift on a shared machine hits both:
 *   open    ingot_file_open + one ingot_file_tensor_find + close, against
 *           open + fstat + mmap + munmap + close (page cache warm). Goal: ingot/raw time <= 2.
 *   touch   a sum of every tensor byte through ingot_tensor_info.data, against the same sum over
 *           a raw mmap of the data region. Goal: throughput ratio >= 0.95.
 *   verify  ingot_file_verify(f, 1 and 2 threads), against ingot_crc32c over the same bytes (two
 *           threads hashing one half each for the 2-thread case). Goal: >= 0.8.
 *   write   ingot_writer streaming the same bytes from memory, against write() of the same number
 *           of bytes to a new file + fsync + close + rename + directory fsync. Goal: >= 0.8.
 * Rows marked "info" are breakdowns that explain a figure; they have no goal. The "hash" case
 * prints checksum throughputs (CRC-32C paths, XXH3-64 and zlib crc32 where built) for
 * docs/FORMAT.md's choice of checksum. Results and the reasoning: docs/PERFORMANCE.md.
 * The ratio printed is the median over pairs of reps of their per-rep ratios (see record()); the
 * medians of the two sides are printed beside it.
 *
 *   bench_native [--dir DIR] [--size-mb N] [--tensors N] [--reps N] [--open-iters N]
 *                [--cases open,touch,verify,hash,write] [--write-pause S] [--keep] [--json]
 *                [--quantized]
 * --quantized stores the matrices as Q4_K, Q6_K and Q8_0 instead of BF16, F32 and F16.
 * With --json, stdout holds one JSON object and the human-readable report goes to stderr.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "crc32c.h" /* ingot__crc32c_hw/_clmul/_sse42/_sw */
#include "ingot/ingot.h"
#include "bench_util.h"

#if defined(INGOT_HAVE_XXHASH)
#include <xxhash.h>
#if defined(INGOT_HAVE_XXH_DISPATCH)
#define XXH_DISPATCH_DISABLE_REPLACE /* keep XXH3_64bits the plain (SSE2) entry point */
#include <xxh_x86dispatch.h>
#endif
#endif
#if defined(INGOT_HAVE_ZLIB)
#include <zlib.h>
#endif

#ifndef BENCH_DEFAULT_DIR
#define BENCH_DEFAULT_DIR "."
#endif

#define MIB (1024.0 * 1024.0)
#define GB 1e9
#define MAX_REPS 101
#define WRITE_CHUNK (1u << 20)

/* ---------------------------------------------------------------------------------------------
 * Small utilities
 * ------------------------------------------------------------------------------------------- */

static FILE *out; /* human-readable report: stdout, or stderr with --json */

static void die(const char *what, const char *detail)
{
    fprintf(stderr, "bench_native: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
    exit(2);
}

static void die_st(const char *what, ingot_status st, const ingot_error *e)
{
    char buf[400];
    if (e && e->code == st) ingot_error_format(e, buf, sizeof buf);
    else snprintf(buf, sizeof buf, "%s", ingot_status_name(st));
    die(what, buf);
}

static void die_errno(const char *what) { die(what, strerror(errno)); }

/* Defeats dead-code elimination of the results of timed loops. */
static volatile uint64_t sink;

/* The summing loop used for both sides of "touch": every byte, read as u64 words where aligned.
 * noinline so both callers run the very same machine code. */
__attribute__((noinline)) static uint64_t sum_bytes(const void *buf, size_t n)
{
    const uint8_t *p = buf;
    uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    /* Bytes outside whole aligned words count at their position in the word, so the sum does
     * not depend on where a buffer is cut: the sum over tensors (with zero padding between
     * them) equals the sum over the whole data region. */
    while (n && ((uintptr_t)p & 7)) {
        s0 += (uint64_t)*p << (8 * ((uintptr_t)p & 7));
        p++;
        n--;
    }
    while (n >= 32) {
        uint64_t a, b, c, d;
        memcpy(&a, p, 8);
        memcpy(&b, p + 8, 8);
        memcpy(&c, p + 16, 8);
        memcpy(&d, p + 24, 8);
        s0 += a;
        s1 += b;
        s2 += c;
        s3 += d;
        p += 32;
        n -= 32;
    }
    while (n >= 8) {
        uint64_t a;
        memcpy(&a, p, 8);
        s0 += a;
        p += 8;
        n -= 8;
    }
    for (size_t i = 0; i < n; i++) s1 += (uint64_t)p[i] << (8 * i);
    return s0 + s1 + s2 + s3;
}

/* ---------------------------------------------------------------------------------------------
 * Results: cases with a goal, and information rows
 * ------------------------------------------------------------------------------------------- */

typedef struct {
    char name[48];
    char unit[12];     /* of base/ingot: "us/op" or "GB/s" */
    bool lower_better; /* time-like unit: ratio = ingot / base */
    double base, ingot, ratio;
    double goal; /* 0: information row */
    int reps;
    double base_s[MAX_REPS], ingot_s[MAX_REPS];
} result;

static result results[64];
static int n_results;

static void print_header(void)
{
    fprintf(out, "\n%-40s %12s %12s %8s %8s  %s\n", "case", "baseline", "ingot", "ratio", "goal",
            "result");
}

/* Records one case. base/ingot hold per-rep values in `unit`. Reps come in pairs, one with the
 * baseline measured first and one with ingot first (on this VM the second of two back-to-back 2 GB
 * writes was often 2-3x slower than the first, whoever wrote it). The ratio is the median over the
 * pairs of the geometric mean of the pair's two per-rep ratios ingot/base, which cancels such order
 * effects; an odd last rep counts in the medians of the two sides but not in the ratio. The same
 * rule holds for times and throughputs (lower_better says which way the goal goes). */
static void record(const char *name, const char *unit, bool lower_better, const double *b,
                   const double *g, int reps, double goal)
{
    if (n_results == (int)(sizeof results / sizeof results[0])) die("too many results", NULL);
    result *r = &results[n_results++];
    memset(r, 0, sizeof *r);
    snprintf(r->name, sizeof r->name, "%s", name);
    snprintf(r->unit, sizeof r->unit, "%s", unit);
    r->lower_better = lower_better;
    r->reps = reps;
    memcpy(r->base_s, b, (size_t)reps * sizeof *b);
    memcpy(r->ingot_s, g, (size_t)reps * sizeof *g);
    double ratios[MAX_REPS];
    int pairs = reps / 2;
    for (int i = 0; i < pairs; i++)
        ratios[i] = sqrt((g[2 * i] / b[2 * i]) * (g[2 * i + 1] / b[2 * i + 1]));
    if (pairs == 0) ratios[pairs++] = g[0] / b[0];
    r->base = bench_median(b, reps);
    r->ingot = bench_median(g, reps);
    r->ratio = bench_median(ratios, pairs);
    r->goal = goal;
    char gs[16] = "-", res[8] = "info";
    if (goal > 0) {
        snprintf(gs, sizeof gs, "%s%.2gx", lower_better ? "<=" : ">=", goal);
        bool pass = lower_better ? r->ratio <= goal : r->ratio >= goal;
        snprintf(res, sizeof res, "%s", pass ? "PASS" : "MISS");
    }
    char label[64];
    snprintf(label, sizeof label, "%s (%s)", name, unit);
    fprintf(out, "%-40s %12.3f %12.3f %7.3fx %8s  %s\n", label, r->base, r->ingot, r->ratio, gs,
            res);
    fflush(out);
}

typedef struct {
    char name[64];
    double gbps_ram, gbps_cache;
} hash_info;

static hash_info hashes[8];
static int n_hashes;

/* ---------------------------------------------------------------------------------------------
 * The generated model
 * ------------------------------------------------------------------------------------------- */

typedef struct {
    char name[64];
    ingot_dtype dt;
    uint32_t rank;
    uint64_t shape[2];
    uint64_t nbytes, src_off; /* src_off: where its bytes start in the source buffer */
} tspec;

typedef struct {
    tspec *t;
    uint32_t n;
    uint64_t data_total; /* sum of nbytes */
    uint8_t *buf;        /* source bytes: data_total + slack, so a raw write of a whole file fits */
    size_t buf_len;
} model;

/* Blocks of four tensors as in a transformer layer: three weight matrices of varied size (rows of
 * 4096 bytes in BF16, F32, F16) and one small F16 norm vector of odd length (8190 bytes), so that
 * sizes differ, dtypes mix, and some tensors end off an 8-byte boundary. */
static void make_model(model *m, uint64_t data_bytes, uint32_t n, bool quant)
{
    m->n = n;
    m->t = calloc(n, sizeof *m->t);
    if (!m->t) die("out of memory", NULL);
    uint32_t n_small = n / 4, n_large = n - n_small;
    uint64_t small_bytes = 4095 * 2;
    uint64_t budget = data_bytes > n_small * small_bytes ? data_bytes - n_small * small_bytes : 0;
    uint64_t avg = n_large ? budget / n_large : 0;
    static const double factor[3] = {0.75, 1.0, 1.25};
    uint64_t off = 0;
    for (uint32_t i = 0; i < n; i++) {
        tspec *t = &m->t[i];
        uint32_t layer = i / 4, kind = i % 4;
        if (kind == 3 || n_large == 0) {
            snprintf(t->name, sizeof t->name, "blk.%u.attn_norm.weight", layer);
            t->dt = INGOT_DTYPE_F16;
            t->rank = 1;
            t->shape[0] = 4095;
        } else {
            static const char *const names[3] = {"attn_qkv", "ffn_up", "ffn_down"};
            static const ingot_dtype dts[3] = {INGOT_DTYPE_BF16, INGOT_DTYPE_F32, INGOT_DTYPE_F16};
            /* --quantized: block types as in a GGUF-style model (rows of 1024 or 2048 elements
             * are whole blocks of every one of them) */
            static const ingot_dtype qdts[3] = {INGOT_DTYPE_Q4_K, INGOT_DTYPE_Q6_K,
                                                INGOT_DTYPE_Q8_0};
            static const uint64_t cols[3] = {2048, 1024, 2048};
            snprintf(t->name, sizeof t->name, "blk.%u.%s.weight", layer, names[kind]);
            uint64_t rows = (uint64_t)((double)avg * factor[kind] / 4096.0);
            t->dt = quant ? qdts[kind] : dts[kind];
            t->rank = 2;
            t->shape[0] = rows ? rows : 1;
            t->shape[1] = cols[kind];
        }
        if (ingot_dtype_nbytes(t->dt, t->rank, t->shape, NULL, &t->nbytes) != INGOT_OK)
            die("bad generated shape", t->name);
        t->src_off = off;
        off += t->nbytes;
    }
    m->data_total = off;
    /* A whole file adds the header, at most 256 bytes of padding per tensor, and the table. */
    m->buf_len = (size_t)off + (size_t)n * 512 + (8u << 20);
    m->buf = mmap(NULL, m->buf_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m->buf == MAP_FAILED) die_errno("allocating the source buffer");
    uint64_t x = 0x9E3779B97F4A7C15ull;
    uint64_t *w = (uint64_t *)(void *)m->buf;
    for (size_t k = 0; k < m->buf_len / 8; k++) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        w[k] = x;
    }
}

/* Describes the model and streams it to path with ingot_writer (data pointers into m->buf). */
static void write_ingot(const model *m, const char *path, bool fsync_on)
{
    ingot_writer_opts o = {0};
    o.no_fsync = !fsync_on;
    ingot_writer *w;
    ingot_error e;
    ingot_status st = ingot_writer_new(&o, &w, &e);
    if (st != INGOT_OK) die_st("ingot_writer_new", st, &e);
    ingot_writer_set_string(w, "general.name", "bench_native");
    ingot_writer_set_u32(w, "general.block_count", m->n / 4);
    for (uint32_t i = 0; i < m->n; i++) {
        const tspec *t = &m->t[i];
        st = ingot_writer_add_tensor(w, t->name, t->dt, t->rank, t->shape, NULL,
                                     m->buf + t->src_off, &e);
        if (st != INGOT_OK) die_st("ingot_writer_add_tensor", st, &e);
    }
    st = ingot_writer_save(w, path, &e);
    if (st != INGOT_OK) die_st("ingot_writer_save", st, &e);
    ingot_writer_free(w);
}

/* ---------------------------------------------------------------------------------------------
 * Raw mapping helpers (the baselines)
 * ------------------------------------------------------------------------------------------- */

typedef struct {
    const uint8_t *p;
    size_t len;
} rawmap;

static rawmap raw_map(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) die_errno("open");
    struct stat sb;
    if (fstat(fd, &sb) != 0) die_errno("fstat");
    void *p = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) die_errno("mmap");
    close(fd);
    return (rawmap){p, (size_t)sb.st_size};
}

static void raw_unmap(rawmap r) { munmap((void *)(uintptr_t)r.p, r.len); }

static ingot_file *ingot_open_or_die(const char *path, const ingot_open_opts *o)
{
    ingot_file *f;
    ingot_error e;
    ingot_status st = ingot_file_open(path, o, &f, &e);
    if (st != INGOT_OK) die_st("ingot_file_open", st, &e);
    return f;
}

/* ---------------------------------------------------------------------------------------------
 * open
 * ------------------------------------------------------------------------------------------- */

static double time_open_raw(const char *path, int iters, bool touch_header, uint64_t header_len)
{
    double t0 = bench_now_s();
    for (int i = 0; i < iters; i++) {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        struct stat sb;
        if (fd < 0 || fstat(fd, &sb) != 0) die_errno("open/fstat");
        void *p = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) die_errno("mmap");
        if (touch_header) sink += sum_bytes(p, (size_t)header_len);
        munmap(p, (size_t)sb.st_size);
        close(fd);
    }
    return (bench_now_s() - t0) / iters * 1e6;
}

/* The I/O floor of an open that reads its header region with pread, as ingot_file_open does:
 * the raw sequence plus a 512-byte probe read and a read of the rest of the header region into a
 * reused buffer, and (with crc) a CRC-32C over it. */
static double time_open_raw_pread(const char *path, int iters, uint64_t header_len, bool crc)
{
    uint8_t *buf = malloc((size_t)header_len);
    if (!buf) die("out of memory", NULL);
    size_t probe = header_len < 512 ? (size_t)header_len : 512;
    double t0 = bench_now_s();
    for (int i = 0; i < iters; i++) {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        struct stat sb;
        if (fd < 0 || fstat(fd, &sb) != 0) die_errno("open/fstat");
        void *p = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) die_errno("mmap");
        if (pread(fd, buf, probe, 0) != (ssize_t)probe ||
            pread(fd, buf + probe, (size_t)header_len - probe, (off_t)probe) !=
                (ssize_t)(header_len - probe))
            die_errno("pread");
        if (crc) sink += ingot_crc32c(0, buf, (size_t)header_len);
        munmap(p, (size_t)sb.st_size);
        close(fd);
    }
    double t = (bench_now_s() - t0) / iters * 1e6;
    free(buf);
    return t;
}

static double time_open_ingot(const char *path, int iters, const model *m, ingot_verify_mode vm)
{
    ingot_open_opts o = {0};
    o.verify = vm;
    double t0 = bench_now_s();
    for (int i = 0; i < iters; i++) {
        ingot_file *f;
        ingot_status st = ingot_file_open(path, &o, &f, NULL);
        if (st != INGOT_OK) die_st("ingot_file_open", st, NULL);
        ingot_tensor_info t;
        st = ingot_file_tensor_find(f, m->t[(uint32_t)i % m->n].name, &t);
        if (st != INGOT_OK) die_st("ingot_file_tensor_find", st, NULL);
        sink += t.offset;
        ingot_file_close(f);
    }
    return (bench_now_s() - t0) / iters * 1e6;
}

/* Parsing alone: open_buffer over a mapping that stays in place (no system calls, no faults). */
static double time_open_buffer(const rawmap *r, int iters, const model *m, ingot_verify_mode vm)
{
    ingot_open_opts o = {0};
    o.verify = vm;
    double t0 = bench_now_s();
    for (int i = 0; i < iters; i++) {
        ingot_file *f;
        ingot_status st = ingot_file_open_buffer(r->p, r->len, &o, &f, NULL);
        if (st != INGOT_OK) die_st("ingot_file_open_buffer", st, NULL);
        ingot_tensor_info t;
        st = ingot_file_tensor_find(f, m->t[(uint32_t)i % m->n].name, &t);
        if (st != INGOT_OK) die_st("ingot_file_tensor_find", st, NULL);
        sink += t.offset;
        ingot_file_close(f);
    }
    return (bench_now_s() - t0) / iters * 1e6;
}

static void bench_open(const char *path, const model *m, int reps, int iters, uint64_t data_off)
{
    double b[MAX_REPS], g[MAX_REPS], g2[MAX_REPS], bh[MAX_REPS], gb[MAX_REPS], gb2[MAX_REPS];
    double bp[MAX_REPS], bc[MAX_REPS];
    rawmap r = raw_map(path);
    sink += sum_bytes(r.p, (size_t)data_off); /* header pages resident in this mapping */
    /* warm up: page cache, allocator, code */
    time_open_raw(path, iters / 10 + 1, false, 0);
    time_open_ingot(path, iters / 10 + 1, m, INGOT_VERIFY_HEADER);
    for (int k = 0; k < reps; k++) {
        if (k % 2) g[k] = time_open_ingot(path, iters, m, INGOT_VERIFY_HEADER);
        b[k] = time_open_raw(path, iters, false, 0);
        if (k % 2 == 0) g[k] = time_open_ingot(path, iters, m, INGOT_VERIFY_HEADER);
        bh[k] = time_open_raw(path, iters, true, data_off);
        bp[k] = time_open_raw_pread(path, iters, data_off, false);
        bc[k] = time_open_raw_pread(path, iters, data_off, true);
        g2[k] = time_open_ingot(path, iters, m, INGOT_VERIFY_NONE);
        gb[k] = time_open_buffer(&r, iters, m, INGOT_VERIFY_HEADER);
        gb2[k] = time_open_buffer(&r, iters, m, INGOT_VERIFY_NONE);
    }
    raw_unmap(r);
    record("open+find", "us/op", true, b, g, reps, 2.0);
    record("  open+find, VERIFY_NONE", "us/op", true, b, g2, reps, 0);
    record("  raw + read header bytes", "us/op", true, b, bh, reps, 0);
    record("  raw + pread header", "us/op", true, b, bp, reps, 0);
    record("  raw + pread header + CRC-32C", "us/op", true, b, bc, reps, 0);
    record("  open_buffer+find (parse only)", "us/op", true, b, gb, reps, 0);
    record("  open_buffer+find, VERIFY_NONE", "us/op", true, b, gb2, reps, 0);
}

/* ---------------------------------------------------------------------------------------------
 * touch
 * ------------------------------------------------------------------------------------------- */

static double touch_ingot(const ingot_file *f, uint64_t *sum)
{
    uint64_t n = ingot_file_tensor_count(f), s = 0;
    double t0 = bench_now_s();
    for (uint64_t i = 0; i < n; i++) {
        ingot_tensor_info t;
        if (ingot_file_tensor_at(f, i, &t) != INGOT_OK || !t.data) die("tensor_at", NULL);
        s += sum_bytes(t.data, (size_t)t.nbytes);
    }
    sink += s;
    double dt = bench_now_s() - t0;
    *sum = s;
    return dt;
}

static double touch_raw(const rawmap *r, uint64_t data_off, uint64_t *sum)
{
    double t0 = bench_now_s();
    uint64_t s = sum_bytes(r->p + data_off, r->len - (size_t)data_off);
    sink += s; /* each call's result is used: no call can be dropped as redundant */
    double dt = bench_now_s() - t0;
    *sum = s;
    return dt;
}

static void bench_touch(const char *path, const model *m, int reps, uint64_t data_off)
{
    double b[MAX_REPS], g[MAX_REPS], b2[MAX_REPS], g2[MAX_REPS];
    double bytes = (double)m->data_total;
    uint64_t sb = 0, sg = 0;
    for (int k = 0; k < reps; k++) {
        /* Fresh mappings each rep: the first pass includes the (minor) page faults. The side
         * that goes first alternates from rep to rep. */
        for (int side = 0; side < 2; side++) {
            if ((side + k) % 2 == 0) {
                rawmap r = raw_map(path);
                b[k] = bytes / touch_raw(&r, data_off, &sb) / GB;
                b2[k] = bytes / touch_raw(&r, data_off, &sb) / GB;
                raw_unmap(r);
            } else {
                ingot_file *f = ingot_open_or_die(path, NULL);
                g[k] = bytes / touch_ingot(f, &sg) / GB;
                g2[k] = bytes / touch_ingot(f, &sg) / GB;
                ingot_file_close(f);
            }
        }
        if (sb != sg) die("touch: raw and ingot sums differ (padding not zero?)", NULL);
    }
    record("touch, fresh mapping", "GB/s", false, b, g, reps, 0.95);
    record("  touch, populated mapping", "GB/s", false, b2, g2, reps, 0);
}

/* ---------------------------------------------------------------------------------------------
 * verify
 * ------------------------------------------------------------------------------------------- */

typedef struct {
    const uint8_t *p;
    size_t n;
    uint32_t crc;
} crc_part;

static void *crc_thread(void *arg)
{
    crc_part *c = arg;
    c->crc = ingot_crc32c(0, c->p, c->n);
    return NULL;
}

static double verify_raw(const rawmap *r, uint64_t data_off, int threads)
{
    const uint8_t *p = r->p + data_off;
    size_t n = r->len - (size_t)data_off;
    double t0 = bench_now_s();
    if (threads == 1) {
        sink += ingot_crc32c(0, p, n);
    } else {
        size_t half = n / 2;
        crc_part a = {p, half, 0}, c = {p + half, n - half, 0};
        pthread_t tid;
        if (pthread_create(&tid, NULL, crc_thread, &c) != 0) die("pthread_create", NULL);
        crc_thread(&a);
        pthread_join(tid, NULL);
        sink += ingot_crc32c_combine(a.crc, c.crc, c.n);
    }
    return bench_now_s() - t0;
}

static double verify_ingot(const ingot_file *f, int threads)
{
    ingot_error e;
    double t0 = bench_now_s();
    ingot_status st = ingot_file_verify(f, (uint32_t)threads, &e);
    double dt = bench_now_s() - t0;
    if (st != INGOT_OK) die_st("ingot_file_verify", st, &e);
    return dt;
}

static void bench_verify(const char *path, const model *m, int reps, uint64_t data_off)
{
    double bytes = (double)m->data_total;
    for (int threads = 1; threads <= 2; threads++) {
        double b[MAX_REPS], g[MAX_REPS], b2[MAX_REPS], g2[MAX_REPS];
        for (int k = 0; k < reps; k++) {
            /* fresh mappings (page faults included), then a second pass over the same ones; the
             * side that goes first alternates */
            for (int side = 0; side < 2; side++) {
                if ((side + k) % 2 == 0) {
                    rawmap r = raw_map(path);
                    b[k] = bytes / verify_raw(&r, data_off, threads) / GB;
                    b2[k] = bytes / verify_raw(&r, data_off, threads) / GB;
                    raw_unmap(r);
                } else {
                    ingot_file *f = ingot_open_or_die(path, NULL);
                    g[k] = bytes / verify_ingot(f, threads) / GB;
                    g2[k] = bytes / verify_ingot(f, threads) / GB;
                    ingot_file_close(f);
                }
            }
        }
        record(threads == 1 ? "verify, 1 thread" : "verify, 2 threads", "GB/s", false, b, g, reps,
               0.8);
        record(threads == 1 ? "  verify, 1 thread, populated map" : "  verify, 2 threads, populated map",
               "GB/s", false, b2, g2, reps, 0);
    }
}

/* ---------------------------------------------------------------------------------------------
 * hash (information for the checksum choice): throughput over the mapped data region (RAM) and
 * over a 256 KiB buffer hashed repeatedly (cache-resident, the function's own speed).
 * ------------------------------------------------------------------------------------------- */

typedef uint64_t (*hash_fn)(const uint8_t *p, size_t n);

static uint64_t h_crc32c(const uint8_t *p, size_t n) { return ingot_crc32c(0, p, n); }
static uint64_t h_crc32c_sse42(const uint8_t *p, size_t n) { return ingot__crc32c_sse42(0, p, n); }
static uint64_t h_crc32c_sw(const uint8_t *p, size_t n) { return ingot__crc32c_sw(0, p, n); }
#if defined(INGOT_HAVE_XXHASH)
static uint64_t h_xxh3(const uint8_t *p, size_t n) { return XXH3_64bits(p, n); }
#if defined(INGOT_HAVE_XXH_DISPATCH)
static uint64_t h_xxh3_dispatch(const uint8_t *p, size_t n) { return XXH3_64bits_dispatch(p, n); }
#endif
#endif
#if defined(INGOT_HAVE_ZLIB)
static uint64_t h_zlib(const uint8_t *p, size_t n)
{
    uLong c = crc32(0L, Z_NULL, 0);
    while (n) {
        uInt k = n > (1u << 30) ? (1u << 30) : (uInt)n;
        c = crc32(c, p, k);
        p += k;
        n -= k;
    }
    return c;
}
#endif

static double hash_rate(hash_fn fn, const uint8_t *p, size_t n, int loops, int reps)
{
    double v[MAX_REPS];
    for (int k = 0; k < reps; k++) {
        double t0 = bench_now_s();
        for (int i = 0; i < loops; i++) sink += fn(p, n);
        v[k] = (double)n * loops / (bench_now_s() - t0) / GB;
    }
    return bench_median(v, reps);
}

static void bench_hash(const char *path, const model *m, uint64_t data_off)
{
    struct {
        const char *name;
        hash_fn fn;
    } fns[] = {
        {"CRC-32C (ingot_crc32c)", h_crc32c},
        {"CRC-32C SSE4.2 crc32, 3 streams", h_crc32c_sse42},
        {"CRC-32C portable slice-by-8", h_crc32c_sw},
#if defined(INGOT_HAVE_XXHASH)
        {"XXH3-64 (libxxhash, XXH3_64bits)", h_xxh3},
#if defined(INGOT_HAVE_XXH_DISPATCH)
        {"XXH3-64 (libxxhash, x86 dispatch)", h_xxh3_dispatch},
#endif
#endif
#if defined(INGOT_HAVE_ZLIB)
        {"CRC-32 (zlib crc32)", h_zlib},
#endif
    };
    rawmap r = raw_map(path);
    const uint8_t *p = r.p + data_off;
    size_t n = (size_t)m->data_total;
    sink += sum_bytes(p, n); /* populate the mapping: measure hashing, not faults */
    size_t small = 256 * 1024;
    fprintf(out, "\n%-40s %12s %12s   (information for the checksum choice)\n", "hash",
            "RAM GB/s", "cache GB/s");
    for (size_t i = 0; i < sizeof fns / sizeof fns[0]; i++) {
        hash_info *h = &hashes[n_hashes++];
        snprintf(h->name, sizeof h->name, "%s", fns[i].name);
        h->gbps_ram = hash_rate(fns[i].fn, p, n, 1, 3);
        int loops = (int)((1u << 30) / small);
        h->gbps_cache = hash_rate(fns[i].fn, p, small, loops, 3);
        fprintf(out, "%-40s %12.2f %12.2f\n", h->name, h->gbps_ram, h->gbps_cache);
        fflush(out);
    }
#if !defined(INGOT_HAVE_XXHASH)
    fprintf(out, "(XXH3-64: not built; install libxxhash-dev and reconfigure)\n");
#endif
#if !defined(INGOT_HAVE_ZLIB)
    fprintf(out, "(zlib crc32: not built; install zlib1g-dev and reconfigure)\n");
#endif
    raw_unmap(r);
}

/* ---------------------------------------------------------------------------------------------
 * write
 * ------------------------------------------------------------------------------------------- */

static void fsync_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) die_errno("open dir");
    if (fsync(fd) != 0) die_errno("fsync dir");
    close(fd);
}

/* Settles the file system before a timed write: the previous rep's unlink (online discard on
 * some mounts) and any writeback complete outside the timer. */
static double write_pause = 0; /* seconds to wait after syncfs, before a timed write */

static void settle(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) die_errno("open dir");
    if (syncfs(fd) != 0) die_errno("syncfs");
    close(fd);
    if (write_pause > 0) {
        struct timespec ts = {(time_t)write_pause,
                              (long)((write_pause - (double)(time_t)write_pause) * 1e9)};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
        }
    }
}

static double write_raw(const model *m, const char *dir, const char *tmp, const char *dst,
                        uint64_t file_size)
{
    settle(dir);
    double t0 = bench_now_s();
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) die_errno("create raw file");
    const uint8_t *p = m->buf;
    uint64_t left = file_size;
    while (left) {
        size_t k = left < WRITE_CHUNK ? (size_t)left : WRITE_CHUNK;
        ssize_t w = write(fd, p, k);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) die_errno("write");
        p += w;
        left -= (uint64_t)w;
    }
    if (fsync(fd) != 0) die_errno("fsync");
    if (close(fd) != 0) die_errno("close");
    if (rename(tmp, dst) != 0) die_errno("rename");
    fsync_dir(dir);
    return bench_now_s() - t0;
}

static double write_with_ingot(const model *m, const char *dir, const char *dst)
{
    settle(dir);
    double t0 = bench_now_s();
    write_ingot(m, dst, true);
    return bench_now_s() - t0;
}

static void bench_write(const model *m, const char *dir, int reps, uint64_t file_size)
{
    char tmp[4200], dst[4200], idst[4200];
    snprintf(tmp, sizeof tmp, "%s/bench_native_raw.tmp", dir);
    snprintf(dst, sizeof dst, "%s/bench_native_raw.bin", dir);
    snprintf(idst, sizeof idst, "%s/bench_native_w.ingot", dir);
    if (file_size > m->buf_len) die("source buffer smaller than the file", NULL);
    double b[MAX_REPS], g[MAX_REPS];
    double bytes = (double)file_size;
    for (int k = 0; k < reps; k++) {
        /* Alternate which goes first. Both files are deleted only after both writes: on a disk
         * that discards freed blocks (this VM's ext4 is mounted -o discard), writing right after
         * deleting the previous file of the same size was up to 3x slower, which would favour
         * whichever side never follows its own delete. */
        if (k % 2 == 0) {
            b[k] = bytes / write_raw(m, dir, tmp, dst, file_size) / GB;
            g[k] = bytes / write_with_ingot(m, dir, idst) / GB;
        } else {
            g[k] = bytes / write_with_ingot(m, dir, idst) / GB;
            b[k] = bytes / write_raw(m, dir, tmp, dst, file_size) / GB;
        }
        unlink(dst);
        unlink(idst);
    }
    record("write + fsync", "GB/s", false, b, g, reps, 0.8);
}

/* ---------------------------------------------------------------------------------------------
 * Machine description and JSON
 * ------------------------------------------------------------------------------------------- */

static char cpu_model[128] = "unknown";
static char cpu_sig[64] = "";

static void read_cpuinfo(void)
{
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return;
    char line[512];
    int fam = -1, mod = -1;
    while (fgets(line, sizeof line, f)) {
        char *colon = strchr(line, ':');
        if (!colon) continue;
        char *v = colon + 1;
        while (*v == ' ' || *v == '\t') v++;
        v[strcspn(v, "\n")] = 0;
        if (!strncmp(line, "model name", 10) && !strcmp(cpu_model, "unknown"))
            snprintf(cpu_model, sizeof cpu_model, "%s", v);
        else if (!strncmp(line, "cpu family", 10) && fam < 0) fam = atoi(v);
        else if (!strncmp(line, "model\t", 6) && mod < 0) mod = atoi(v);
    }
    fclose(f);
    if (fam >= 0) snprintf(cpu_sig, sizeof cpu_sig, "family %d model %d", fam, mod);
}

/* The 1-minute load average, to judge how much other work shared the machine. */
static double loadavg(void)
{
    double l = -1;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fscanf(f, "%lf", &l) != 1) l = -1;
        fclose(f);
    }
    return l;
}

static double load_start, load_end;

static void json_str(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') printf("\\%c", *s);
        else if ((unsigned char)*s < 0x20) printf("\\u%04x", (unsigned char)*s);
        else putchar(*s);
    }
    putchar('"');
}

static void json_arr(const double *v, int n)
{
    putchar('[');
    for (int i = 0; i < n; i++) printf("%s%.6g", i ? "," : "", v[i]);
    putchar(']');
}

static void print_json(const char *cmd, long cores, const struct utsname *u, const model *m,
                       uint64_t file_size, const char *path)
{
    printf("{\n  \"command\": ");
    json_str(cmd);
    printf(",\n  \"machine\": {\"cpu\": ");
    json_str(cpu_model);
    printf(", \"cpu_signature\": ");
    json_str(cpu_sig);
    printf(", \"cores\": %ld, \"crc32c_hw\": %s, \"crc32c_clmul\": %s, \"kernel\": ", cores,
           ingot__crc32c_hw() ? "true" : "false", ingot__crc32c_clmul() ? "true" : "false");
    json_str(u->release);
    printf(", \"loadavg_start\": %.2f, \"loadavg_end\": %.2f", load_start, load_end);
    printf("},\n  \"file\": {\"path\": ");
    json_str(path);
    printf(", \"bytes\": %" PRIu64 ", \"tensor_bytes\": %" PRIu64 ", \"tensors\": %u},\n",
           file_size, m->data_total, m->n);
    printf("  \"cases\": [\n");
    for (int i = 0; i < n_results; i++) {
        const result *r = &results[i];
        const char *nm = r->name;
        while (*nm == ' ') nm++;
        printf("    {\"name\": ");
        json_str(nm);
        printf(", \"unit\": ");
        json_str(r->unit);
        printf(", \"baseline\": %.6g, \"ingot\": %.6g, \"ratio\": %.6g", r->base, r->ingot,
               r->ratio);
        if (r->goal > 0)
            printf(", \"goal\": \"%s%.2g\", \"pass\": %s", r->lower_better ? "<=" : ">=", r->goal,
                   (r->lower_better ? r->ratio <= r->goal : r->ratio >= r->goal) ? "true"
                                                                                 : "false");
        printf(", \"baseline_reps\": ");
        json_arr(r->base_s, r->reps);
        printf(", \"ingot_reps\": ");
        json_arr(r->ingot_s, r->reps);
        printf("}%s\n", i + 1 < n_results ? "," : "");
    }
    printf("  ],\n  \"hash\": [\n");
    for (int i = 0; i < n_hashes; i++) {
        printf("    {\"name\": ");
        json_str(hashes[i].name);
        printf(", \"ram_gbps\": %.4g, \"cache_gbps\": %.4g}%s\n", hashes[i].gbps_ram,
               hashes[i].gbps_cache, i + 1 < n_hashes ? "," : "");
    }
    printf("  ]\n}\n");
}

/* ---------------------------------------------------------------------------------------------
 * main
 * ------------------------------------------------------------------------------------------- */

static void usage(void)
{
    fprintf(stderr,
            "usage: bench_native [--dir DIR] [--size-mb N] [--tensors N] [--reps N]\n"
            "                    [--open-iters N] [--cases open,touch,verify,hash,write]\n"
            "                    [--write-pause S] [--keep] [--json] [--quantized]\n"
            "  --dir DIR       where the generated file goes (default: the build directory)\n"
            "  --size-mb N     tensor data in MiB (default 2048)\n"
            "  --tensors N     number of tensors (default 1000)\n"
            "  --reps N        repetitions per case, medians reported (default 10, 1..%d)\n"
            "  --open-iters N  open/close iterations per rep (default 2000)\n"
            "  --cases LIST    subset of cases to run (default all)\n"
            "  --write-pause S seconds to wait before each timed write (default 0)\n"
            "  --keep          keep the generated file\n"
            "  --json          JSON on stdout, report on stderr\n"
            "  --quantized     matrices as Q4_K, Q6_K, Q8_0 (block types) instead of BF16, F32, F16\n",
            MAX_REPS);
    exit(2);
}

static uint64_t parse_u64(const char *s, const char *opt)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s || *end || s[0] == '-') die("bad number for", opt);
    return v;
}

static bool wants(const char *cases, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = cases; *p;) {
        size_t k = strcspn(p, ",");
        if (k == n && !strncmp(p, name, n)) return true;
        p += k;
        if (*p == ',') p++;
    }
    return false;
}

int main(int argc, char **argv)
{
    const char *dir = BENCH_DEFAULT_DIR, *cases = "open,touch,verify,hash,write";
    uint64_t size_mb = 2048, n_tensors = 1000, reps = 10, open_iters = 2000;
    bool json = false, keep = false, quantized = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        bool more = i + 1 < argc;
        if (!strcmp(a, "--dir") && more) dir = argv[++i];
        else if (!strcmp(a, "--size-mb") && more) size_mb = parse_u64(argv[++i], a);
        else if (!strcmp(a, "--tensors") && more) n_tensors = parse_u64(argv[++i], a);
        else if (!strcmp(a, "--reps") && more) reps = parse_u64(argv[++i], a);
        else if (!strcmp(a, "--open-iters") && more) open_iters = parse_u64(argv[++i], a);
        else if (!strcmp(a, "--cases") && more) cases = argv[++i];
        else if (!strcmp(a, "--write-pause") && more) write_pause = (double)parse_u64(argv[++i], a);
        else if (!strcmp(a, "--json")) json = true;
        else if (!strcmp(a, "--keep")) keep = true;
        else if (!strcmp(a, "--quantized")) quantized = true;
        else usage();
    }
    if (reps < 1 || reps > MAX_REPS || n_tensors < 1 || n_tensors > 1000000 || size_mb < 1 ||
        open_iters < 1 || open_iters > 100000000)
        usage();
    out = json ? stderr : stdout;

    char cmd[4096] = "";
    size_t at = 0;
    for (int i = 0; i < argc && at < sizeof cmd; i++)
        at += (size_t)snprintf(cmd + at, sizeof cmd - at, "%s%s", i ? " " : "", argv[i]);
    fprintf(out, "command: %s\n", cmd);

    read_cpuinfo();
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    struct utsname u;
    if (uname(&u) != 0) memset(&u, 0, sizeof u);
    load_start = loadavg();
    fprintf(out, "cpu: %s (%s), %ld online cores, kernel %s; load average %.2f\n", cpu_model,
            cpu_sig, cores, u.release, load_start);
    fprintf(out, "crc32c: %s\n",
            ingot__crc32c_clmul() ? "hardware (VPCLMULQDQ folding with four crc32 streams beside it)"
            : ingot__crc32c_hw()  ? "hardware (SSE4.2 crc32, 3 streams)"
                                  : "portable slice-by-8");
    fprintf(out, "ingot %s; reps %" PRIu64 ", open: %" PRIu64 " iterations per rep\n",
            ingot_version_string(), reps, open_iters);

    char path[4200];
    snprintf(path, sizeof path, "%s/bench_native.ingot", dir);
    model m;
    make_model(&m, size_mb * (uint64_t)MIB, (uint32_t)n_tensors, quantized);
    double t0 = bench_now_s();
    write_ingot(&m, path, true);
    double gen_s = bench_now_s() - t0;

    ingot_file *f = ingot_open_or_die(path, NULL);
    uint64_t file_size = ingot_file_size(f);
    ingot_tensor_info t0i;
    if (ingot_file_tensor_at(f, 0, &t0i) != INGOT_OK) die("tensor 0", NULL);
    uint64_t data_off = t0i.offset;
    ingot_file_close(f);
    fprintf(out,
            "file: %s, %" PRIu64 " bytes (%.1f MiB), %u tensors, %.1f MiB of tensor data, "
            "header region %" PRIu64 " bytes; generated in %.2f s\n",
            path, file_size, (double)file_size / MIB, m.n, (double)m.data_total / MIB, data_off,
            gen_s);
    fprintf(out, "note: on a shared machine expect run-to-run noise. Each rep measures baseline and "
                 "ingot back to back, alternating which goes first; ratio = median over pairs of "
                 "reps of the pair's geometric-mean ratio.\n");

    /* Warm the page cache for the read cases (the writer left it mostly resident). */
    {
        rawmap r = raw_map(path);
        sink += sum_bytes(r.p, r.len);
        raw_unmap(r);
    }

    int nr = (int)reps;
    bool any_case = wants(cases, "open") || wants(cases, "touch") || wants(cases, "verify") ||
                    wants(cases, "write");
    if (any_case) print_header();
    if (wants(cases, "open")) bench_open(path, &m, nr, (int)open_iters, data_off);
    if (wants(cases, "touch")) bench_touch(path, &m, nr, data_off);
    if (wants(cases, "verify")) bench_verify(path, &m, nr, data_off);
    if (wants(cases, "write")) bench_write(&m, dir, nr, file_size);
    if (wants(cases, "hash")) bench_hash(path, &m, data_off);

    load_end = loadavg();
    fprintf(out, "\nload average at the end: %.2f\n", load_end);
    if (json) print_json(cmd, cores, &u, &m, file_size, path);
    if (!keep) unlink(path);
    munmap(m.buf, m.buf_len);
    free(m.t);
    return 0;
}
