/*
 * bench_tmpfile.c - what an unnamed temporary (O_TMPFILE, linked in at commit) costs against a
 * named one (O_EXCL "<target>.ingot-tmp-*", the fallback), through ingot_writer in --dir. Every rep
 * runs both back to back, alternating which goes first; printed: medians and the median of the
 * per-rep ratios unnamed/named.
 *   small    --small-iters saves of a 4 KiB .ingot over an existing target, fsync off: the system
 *            call overhead per save (unnamed: open O_TMPFILE, stat of /proc/self/fd, a failed
 *            linkat to the target, linkat to a name, rename; named: open O_EXCL, rename).
 *   new      the same, each save to a new target (unnamed: one linkat straight to it), unlinked
 *            after.
 *   fsync    --fsync-iters saves of the 4 KiB file with fsync (file and directory).
 *   large    one save of --size-mb MiB with fsync, from memory.
 *
 *   bench_tmpfile [--dir DIR] [--reps N] [--small-iters N] [--fsync-iters N] [--size-mb N]
 */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "afile.h"
#include "ingot/ingot.h"
#include "bench_util.h"

static void save(const char *path, const void *data, uint64_t n, bool do_fsync)
{
    ingot_writer_opts wo = {.no_fsync = !do_fsync};
    ingot_writer *w;
    ingot_error e;
    uint64_t shape = n;
    if (ingot_writer_new(&wo, &w, &e) != INGOT_OK ||
        ingot_writer_add_tensor(w, "w", INGOT_DTYPE_U8, 1, &shape, NULL, data, &e) != INGOT_OK ||
        ingot_writer_save(w, path, &e) != INGOT_OK) {
        fprintf(stderr, "bench_tmpfile: save %s: %s\n", path, e.msg);
        exit(1);
    }
    ingot_writer_free(w);
}

typedef struct {
    const char *name, *unit;
    double scale; /* seconds -> unit */
    double *t[2]; /* [named, unnamed] per rep */
} row;

/* One measurement of case c with temporaries of the given kind: seconds per save. */
static double run_case(int c, bool unnamed, const char *dir, const uint8_t *small,
                       const uint8_t *big, int small_iters, int fsync_iters, uint64_t big_n)
{
    ingot__afile_tmpfile = unnamed;
    char path[1024];
    snprintf(path, sizeof path, "%s/bench_tmpfile.ingot", dir);
    double t0, t;
    switch (c) {
    case 0:
        save(path, small, 4096, false);
        t0 = bench_now_s();
        for (int i = 0; i < small_iters; i++) save(path, small, 4096, false);
        t = (bench_now_s() - t0) / small_iters;
        break;
    case 1:
        unlink(path);
        t0 = bench_now_s();
        for (int i = 0; i < small_iters; i++) {
            save(path, small, 4096, false);
            unlink(path);
        }
        t = (bench_now_s() - t0) / small_iters;
        break;
    case 2:
        save(path, small, 4096, false);
        t0 = bench_now_s();
        for (int i = 0; i < fsync_iters; i++) save(path, small, 4096, true);
        t = (bench_now_s() - t0) / fsync_iters;
        break;
    default:
        save(path, small, 4096, false);
        t0 = bench_now_s();
        save(path, big, big_n, true);
        t = bench_now_s() - t0;
        break;
    }
    unlink(path);
    return t;
}

int main(int argc, char **argv)
{
    const char *dir = BENCH_DEFAULT_DIR;
    int reps = 9, small_iters = 2000, fsync_iters = 100;
    uint64_t size_mb = 512;
    for (int i = 1; i < argc; i++) {
        if (i + 1 >= argc) goto usage;
        if (!strcmp(argv[i], "--dir")) dir = argv[++i];
        else if (!strcmp(argv[i], "--reps")) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--small-iters")) small_iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--fsync-iters")) fsync_iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--size-mb")) size_mb = strtoull(argv[++i], NULL, 10);
        else goto usage;
    }
    if (reps < 1 || small_iters < 1 || fsync_iters < 1 || size_mb < 1) goto usage;
    uint64_t big_n = size_mb << 20;
    uint8_t *small = malloc(4096), *big = malloc(big_n);
    if (!small || !big) return 1;
    for (size_t i = 0; i < 4096; i++) small[i] = (uint8_t)(i * 131);
    for (uint64_t i = 0; i < big_n; i += 8) {
        uint64_t v = i * 0x9E3779B97F4A7C15ull;
        memcpy(big + i, &v, 8);
    }
    struct utsname u;
    uname(&u);
    printf("bench_tmpfile --dir %s --reps %d --small-iters %d --fsync-iters %d --size-mb %llu "
           "(%s %s)\n",
           dir, reps, small_iters, fsync_iters, (unsigned long long)size_mb, u.sysname,
           u.release);
    row rows[4] = {{"small (4 KiB, no fsync, over a target)", "us", 1e6, {0}},
                   {"new (4 KiB, no fsync, new target)", "us", 1e6, {0}},
                   {"fsync (4 KiB, fsync)", "ms", 1e3, {0}},
                   {"large (fsync)", "s", 1, {0}}};
    for (int c = 0; c < 4; c++)
        for (int k = 0; k < 2; k++) rows[c].t[k] = malloc(sizeof(double) * (size_t)reps);
    double *ratio = malloc(sizeof(double) * (size_t)reps);
    for (int c = 0; c < 4; c++) {
        for (int r = 0; r < reps; r++)
            for (int k = 0; k < 2; k++) {
                int unnamed = (r + k) % 2; /* alternate which goes first */
                rows[c].t[unnamed][r] =
                    run_case(c, unnamed, dir, small, big, small_iters, fsync_iters, big_n);
            }
        for (int r = 0; r < reps; r++) ratio[r] = rows[c].t[1][r] / rows[c].t[0][r];
        double mn = bench_median(rows[c].t[0], reps) * rows[c].scale;
        double mu = bench_median(rows[c].t[1], reps) * rows[c].scale;
        char label[64];
        snprintf(label, sizeof label, "%s", rows[c].name);
        if (c == 3) snprintf(label, sizeof label, "large (%llu MiB, fsync)",
                             (unsigned long long)size_mb);
        printf("  %-40s named %9.3f %s  unnamed %9.3f %s  unnamed/named %.3f\n", label, mn,
               rows[c].unit, mu, rows[c].unit, bench_median(ratio, reps));
        fflush(stdout);
    }
    return 0;
usage:
    fprintf(stderr, "usage: bench_tmpfile [--dir DIR] [--reps N] [--small-iters N] "
                    "[--fsync-iters N] [--size-mb N]\n");
    return 2;
}
