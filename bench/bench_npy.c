/*
 * bench_npy.c - the .npz reader and writers against raw system calls, on a generated npz of
 * --tensors stored members (about --size-mb MiB of F32 data, written by ingot's npz writer).
 * Every rep measures the baseline and ingot back to back, alternating which goes first; the ratio
 * printed is the median of the per-rep ratios, beside the medians of both sides.
 *   open     ingot_file_open + one ingot_file_tensor_find + close (parses the zip central
 *            directory, reads every local header and every npy header), against open + fstat +
 *            mmap + munmap + close.
 *   touch    a 64-bit sum of every tensor byte through ingot_tensor_info.data, against the same
 *            sum over the raw mapping of the whole file.
 *   verify   ingot_file_verify (zip CRC-32 of every member) against ingot__crc32 over the whole
 *            raw mapping (info), plus CRC-32 throughput of ingot__crc32 and zlib's crc32.
 *   convert  npz -> .ingot and .ingot -> npz through ingot_writer (data pointers into the mapped
 *            source; no fsync), against write() of the same bytes to a new file + rename.
 *
 *   bench_npy [--dir DIR] [--size-mb N] [--tensors N] [--reps N] [--open-iters N] [--keep]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "ingot/ingot.h"
#include "zip.h"
#include "bench_util.h"

#define MIB (1024.0 * 1024.0)

static void die(const char *what, ingot_status st, const ingot_error *e)
{
    fprintf(stderr, "bench_npy: %s: %s %s\n", what, ingot_status_name(st), e ? e->msg : "");
    exit(1);
}

static volatile uint64_t sink;

/* One row: medians of baseline and ingot and the median of per-rep ratios (ingot/base for
 * times, ingot/base for throughputs too: read the unit). */
static void row(const char *name, const char *unit, double *base, double *ing, int reps)
{
    double r[64];
    for (int i = 0; i < reps; i++) r[i] = ing[i] / base[i];
    printf("  %-34s base %10.3f  ingot %10.3f %-6s  ratio %6.3f\n", name, bench_median(base, reps),
           bench_median(ing, reps), unit, bench_median(r, reps));
}

static uint64_t sum_bytes(const uint8_t *p, size_t n)
{
    uint64_t s = 0;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t v;
        memcpy(&v, p + i, 8);
        s += v;
    }
    for (; i < n; i++) s += p[i];
    return s;
}

static double raw_open(const char *path, int iters)
{
    double t0 = bench_now_s();
    for (int i = 0; i < iters; i++) {
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        struct stat sb;
        fstat(fd, &sb);
        void *p = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        sink += (uintptr_t)p;
        munmap(p, (size_t)sb.st_size);
        close(fd);
    }
    return (bench_now_s() - t0) / iters * 1e6;
}

static double ingot_open_time(const char *path, int iters, const char *find)
{
    double t0 = bench_now_s();
    for (int i = 0; i < iters; i++) {
        ingot_file *f;
        ingot_error e;
        ingot_status st = ingot_file_open(path, NULL, &f, &e);
        if (st) die("open", st, &e);
        ingot_tensor_info t;
        if (ingot_file_tensor_find(f, find, &t)) die("find", INGOT_NOT_FOUND, NULL);
        sink += t.offset;
        ingot_file_close(f);
    }
    return (bench_now_s() - t0) / iters * 1e6;
}

/* Writes every tensor of src to path in `format`, data pointers into the mapping. Seconds. */
static double convert(const ingot_file *src, const char *format, const char *path)
{
    double t0 = bench_now_s();
    ingot_writer_opts wo = {0};
    wo.format = format;
    wo.no_fsync = true;
    ingot_writer *w;
    ingot_error e;
    ingot_status st = ingot_writer_new(&wo, &w, &e);
    if (st) die("writer", st, &e);
    for (uint64_t i = 0; i < ingot_file_tensor_count(src); i++) {
        ingot_tensor_info t;
        ingot_file_tensor_at(src, i, &t);
        if ((st = ingot_writer_add_tensor(w, t.name, t.dtype, t.rank, t.shape, NULL, t.data, &e)))
            die("add", st, &e);
    }
    if ((st = ingot_writer_save(w, path, &e))) die("save", st, &e);
    ingot_writer_free(w);
    return bench_now_s() - t0;
}

static double raw_write(const uint8_t *p, size_t n, const char *path)
{
    double t0 = bench_now_s();
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    size_t done = 0;
    while (done < n) {
        ssize_t r = write(fd, p + done, n - done > (1u << 26) ? (1u << 26) : n - done);
        if (r <= 0) {
            perror("write");
            exit(1);
        }
        done += (size_t)r;
    }
    close(fd);
    rename(tmp, path);
    return bench_now_s() - t0;
}

int main(int argc, char **argv)
{
    const char *dir = ".";
    int size_mb = 64, tensors = 1000, reps = 7, open_iters = 20;
    bool keep = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--dir") && i + 1 < argc) dir = argv[++i];
        else if (!strcmp(argv[i], "--size-mb") && i + 1 < argc) size_mb = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--tensors") && i + 1 < argc) tensors = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--open-iters") && i + 1 < argc) open_iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--keep")) keep = true;
        else {
            fprintf(stderr, "usage: bench_npy [--dir D] [--size-mb N] [--tensors N] [--reps N] "
                            "[--open-iters N] [--keep]\n");
            return 2;
        }
    }
    if (reps < 1 || reps > 64 || tensors < 1) return 2;
    printf("command:");
    for (int i = 0; i < argc; i++) printf(" %s", argv[i]);
    printf("\n");

    /* Generate the npz: `tensors` F32 tensors of varying size, about size_mb MiB in total. */
    char npz[4096], ing[4096], npz2[4096], rawp[4096];
    snprintf(npz, sizeof npz, "%s/bench_npy.npz", dir);
    snprintf(ing, sizeof ing, "%s/bench_npy.ingot", dir);
    snprintf(npz2, sizeof npz2, "%s/bench_npy_2.npz", dir);
    snprintf(rawp, sizeof rawp, "%s/bench_npy.raw", dir);
    uint64_t per = (uint64_t)size_mb * 1024 * 1024 / 4 / (uint64_t)tensors;
    uint64_t total_elems = 0;
    uint64_t *len = malloc(sizeof *len * (size_t)tensors);
    for (int i = 0; i < tensors; i++) len[i] = per / 2 + (per * (uint64_t)(i % 7)) / 6, total_elems += len[i];
    float *data = malloc(total_elems * 4);
    for (uint64_t i = 0; i < total_elems; i++) data[i] = (float)(i % 1000) * 0.5f;
    {
        ingot_writer_opts wo = {0};
        wo.format = "npz";
        wo.no_fsync = true;
        ingot_writer *w;
        ingot_error e;
        ingot_status st = ingot_writer_new(&wo, &w, &e);
        if (st) die("writer", st, &e);
        uint64_t off = 0;
        for (int i = 0; i < tensors; i++) {
            char name[64];
            snprintf(name, sizeof name, "layers.%d.weight", i);
            uint64_t shape[2] = {len[i] / 64, 64};
            len[i] = shape[0] * 64;
            if ((st = ingot_writer_add_tensor(w, name, INGOT_DTYPE_F32, 2, shape, NULL, data + off,
                                              &e)))
                die("add", st, &e);
            off += len[i];
        }
        if ((st = ingot_writer_save(w, npz, &e))) die("save", st, &e);
        ingot_writer_free(w);
    }
    int fd = open(npz, O_RDONLY);
    struct stat sb;
    fstat(fd, &sb);
    size_t fsize = (size_t)sb.st_size;
    const uint8_t *map = mmap(NULL, fsize, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    printf("file: %s, %d stored members, %.1f MiB\n\n", npz, tensors, fsize / MIB);

    double b[64], g[64];
    /* open */
    raw_open(npz, 3), ingot_open_time(npz, 3, "layers.0.weight");
    for (int k = 0; k < reps; k++) {
        if (k % 2) {
            b[k] = raw_open(npz, open_iters);
            g[k] = ingot_open_time(npz, open_iters, "layers.7.weight");
        } else {
            g[k] = ingot_open_time(npz, open_iters, "layers.7.weight");
            b[k] = raw_open(npz, open_iters);
        }
    }
    row("open (us/op; ratio = ingot/raw)", "us", b, g, reps);

    /* touch */
    ingot_file *f;
    ingot_error e;
    ingot_status st = ingot_file_open(npz, NULL, &f, &e);
    if (st) die("open", st, &e);
    uint64_t tbytes = 0;
    for (uint64_t i = 0; i < ingot_file_tensor_count(f); i++) {
        ingot_tensor_info t;
        ingot_file_tensor_at(f, i, &t);
        tbytes += t.nbytes;
        if (!t.data || t.flags) die("touch: tensor not zero-copy", INGOT_UNSUPPORTED, NULL);
    }
    for (int k = 0; k < reps; k++) {
        double t0 = bench_now_s();
        sink += sum_bytes(map, fsize);
        double t1 = bench_now_s();
        uint64_t s = 0;
        for (uint64_t i = 0; i < ingot_file_tensor_count(f); i++) {
            ingot_tensor_info t;
            ingot_file_tensor_at(f, i, &t);
            s += sum_bytes(t.data, t.nbytes);
        }
        sink += s;
        double t2 = bench_now_s();
        b[k] = fsize / (t1 - t0) / 1e9;
        g[k] = tbytes / (t2 - t1) / 1e9;
    }
    row("touch (GB/s; ratio = ingot/raw)", "GB/s", b, g, reps);

    /* verify */
    for (int k = 0; k < reps; k++) {
        double t0 = bench_now_s();
        sink += ingot__crc32(0, map, fsize);
        double t1 = bench_now_s();
        if ((st = ingot_file_verify(f, 1, &e))) die("verify", st, &e);
        double t2 = bench_now_s();
        b[k] = fsize / (t1 - t0) / 1e9;
        g[k] = tbytes / (t2 - t1) / 1e9;
    }
    row("verify (GB/s; zip CRC-32, info)", "GB/s", b, g, reps);
    for (int k = 0; k < reps; k++) {
        double t0 = bench_now_s();
        sink += crc32(0, map, (uInt)(fsize > UINT32_MAX ? UINT32_MAX : fsize));
        double t1 = bench_now_s();
        sink += ingot__crc32(0, map, fsize);
        double t2 = bench_now_s();
        b[k] = fsize / (t1 - t0) / 1e9;
        g[k] = fsize / (t2 - t1) / 1e9;
    }
    row("CRC-32: zlib crc32 vs ingot__crc32", "GB/s", b, g, reps);

    /* convert */
    ingot_file *fi = NULL;
    for (int k = 0; k < reps; k++) {
        double tr, tg;
        if (k % 2) {
            tr = raw_write(map, fsize, rawp);
            tg = convert(f, "ingot", ing);
        } else {
            tg = convert(f, "ingot", ing);
            tr = raw_write(map, fsize, rawp);
        }
        b[k] = fsize / tr / MIB;
        g[k] = tbytes / tg / MIB;
    }
    row("convert npz -> .ingot (MiB/s)", "MiB/s", b, g, reps);
    if ((st = ingot_file_open(ing, NULL, &fi, &e))) die("open .ingot", st, &e);
    for (int k = 0; k < reps; k++) {
        double tr, tg;
        if (k % 2) {
            tr = raw_write(map, fsize, rawp);
            tg = convert(fi, "npz", npz2);
        } else {
            tg = convert(fi, "npz", npz2);
            tr = raw_write(map, fsize, rawp);
        }
        b[k] = fsize / tr / MIB;
        g[k] = tbytes / tg / MIB;
    }
    row("convert .ingot -> npz (MiB/s)", "MiB/s", b, g, reps);
    ingot_file_close(fi);
    ingot_file_close(f);
    munmap((void *)(uintptr_t)map, fsize);
    if (!keep) unlink(npz), unlink(ing), unlink(npz2);
    unlink(rawp);
    free(data);
    free(len);
    return 0;
}
