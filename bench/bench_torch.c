/*
 * bench_torch.c - the PyTorch adapter against torch.load, each in a fresh process.
 *
 * Generates (once, with /usr/bin/python3 + torch; --file to reuse one) a state dict of --tensors
 * float32 tensors holding about --size-mb MiB, saved by torch.save (zip format) into --dir
 * (default: the build tree). Then, per rep, with the page cache warm (a first unmeasured run of
 * each side reads the file once):
 *   torch   `/usr/bin/python3 -c "import torch; sd = torch.load(path)"` in a new process, plus a
 *           touch of the first element of every tensor; wall time of the whole process (interpreter
 *           start, import torch, torch.load); torch.load alone is also timed inside the process.
 *   ingot   this program re-executed (--child) in a new process: ingot_file_open + one byte read
 *           through ingot_tensor_info.data of every tensor + close; wall time of the process. The
 *           open alone is timed inside it.
 *   ingot+sum   the same, but summing every byte of every tensor (all data paged in): what a
 *           consumer that reads all weights pays; torch.load has read them all.
 * Printed: medians over --reps, the ratios torch/ingot, and the command lines.
 *
 *   bench_torch [--dir DIR] [--file PATH] [--size-mb N] [--tensors N] [--reps N] [--keep]
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ingot/ingot.h"
#include "bench_util.h"

#ifndef BENCH_DEFAULT_DIR
#define BENCH_DEFAULT_DIR "."
#endif

extern char **environ;

/* Child: open + touch; prints "open_s total_s tensors checksum". */
static int child(const char *path, bool sum_all)
{
    double t0 = bench_now_s();
    ingot_file *f;
    ingot_error e;
    if (ingot_file_open(path, NULL, &f, &e) != INGOT_OK) {
        char buf[300];
        fprintf(stderr, "open: %s\n", ingot_error_format(&e, buf, sizeof buf));
        return 1;
    }
    double t1 = bench_now_s();
    uint64_t n = ingot_file_tensor_count(f), acc = 0;
    for (uint64_t i = 0; i < n; i++) {
        ingot_tensor_info t;
        if (ingot_file_tensor_at(f, i, &t) != INGOT_OK || !t.data) return 1;
        const uint8_t *p = t.data;
        if (!sum_all) {
            if (t.nbytes) acc += p[0];
            continue;
        }
        uint64_t words = t.nbytes / 8, s = 0;
        for (uint64_t k = 0; k < words; k++) {
            uint64_t w;
            memcpy(&w, p + 8 * k, 8);
            s += w;
        }
        for (uint64_t k = words * 8; k < t.nbytes; k++) s += p[k];
        acc += s;
    }
    ingot_file_close(f);
    printf("%.6f %.6f %" PRIu64 " %" PRIu64 "\n", t1 - t0, bench_now_s() - t0, n, acc);
    return 0;
}

/* Runs argv in a new process; wall seconds; the child's stdout line into out. */
static double run_proc(char *const argv[], char *out, size_t cap)
{
    int fd[2];
    if (pipe(fd) != 0) return -1;
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fd[1], 1);
    posix_spawn_file_actions_addclose(&fa, fd[0]);
    double t0 = bench_now_s();
    pid_t pid;
    if (posix_spawn(&pid, argv[0], &fa, NULL, argv, environ) != 0) return -1;
    close(fd[1]);
    size_t got = 0;
    ssize_t r;
    while ((r = read(fd[0], out + got, cap - 1 - got)) > 0) got += (size_t)r;
    out[got] = 0;
    close(fd[0]);
    int status;
    waitpid(pid, &status, 0);
    double dt = bench_now_s() - t0;
    posix_spawn_file_actions_destroy(&fa);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        fprintf(stderr, "command failed: %s ... (%s)\n", argv[0], out);
        return -1;
    }
    return dt;
}

static const char *py_load =
    "import sys, time\n"
    "import torch\n"
    "t0 = time.monotonic()\n"
    "sd = torch.load(sys.argv[1])\n"
    "t1 = time.monotonic()\n"
    "acc = 0\n"
    "for v in sd.values(): acc += int(v.view(-1)[0] != 0) if v.numel() else 0\n"
    "print('%.6f %d' % (t1 - t0, len(sd)))\n";

static const char *py_gen =
    "import sys, collections, torch\n"
    "n, total = int(sys.argv[2]), int(sys.argv[3]) << 20\n"
    "per = total // 4 // n\n"
    "sd = collections.OrderedDict()\n"
    "for i in range(n):\n"
    "    cols = 1024\n"
    "    sd['layers.%d.weight' % i] = torch.full((per // cols, cols), float(i) * 0.5)\n"
    "torch.save(sd, sys.argv[1])\n";

int main(int argc, char **argv)
{
    const char *dir = BENCH_DEFAULT_DIR, *file = NULL;
    int size_mb = 2400, tensors = 300, reps = 5;
    bool keep = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--child") && i + 2 < argc) return child(argv[i + 1], !strcmp(argv[i + 2], "sum"));
        if (!strcmp(argv[i], "--dir") && i + 1 < argc) dir = argv[++i];
        else if (!strcmp(argv[i], "--file") && i + 1 < argc) file = argv[++i], keep = true;
        else if (!strcmp(argv[i], "--size-mb") && i + 1 < argc) size_mb = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--tensors") && i + 1 < argc) tensors = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--keep")) keep = true;
        else {
            fprintf(stderr, "usage: bench_torch [--dir DIR] [--file PATH] [--size-mb N] "
                            "[--tensors N] [--reps N] [--keep]\n");
            return 2;
        }
    }
    if (reps < 1 || reps > 100) reps = 5;
    char path[4096], self[4096], out[4096];
    if (file) snprintf(path, sizeof path, "%s", file);
    else snprintf(path, sizeof path, "%s/bench_torch_state.pt", dir);
    ssize_t sl = readlink("/proc/self/exe", self, sizeof self - 1);
    if (sl <= 0) return 1;
    self[sl] = 0;
    struct stat sb;
    if (stat(path, &sb) != 0) {
        char n_s[32], mb_s[32];
        snprintf(n_s, sizeof n_s, "%d", tensors);
        snprintf(mb_s, sizeof mb_s, "%d", size_mb);
        char *gen[] = {"/usr/bin/python3", "-c", (char *)py_gen, path, n_s, mb_s, NULL};
        fprintf(stderr, "generating %s (%d tensors, %d MiB) with torch.save ...\n", path, tensors,
                size_mb);
        if (run_proc(gen, out, sizeof out) < 0 || stat(path, &sb) != 0) return 1;
    }
    printf("file: %s, %.1f MB\n", path, (double)sb.st_size / 1e6);

    char *torch_argv[] = {"/usr/bin/python3", "-c", (char *)py_load, path, NULL};
    char *ing_argv[] = {self, "--child", path, "touch", NULL};
    char *sum_argv[] = {self, "--child", path, "sum", NULL};
    /* warm the page cache and check both sides agree on the tensor count */
    if (run_proc(torch_argv, out, sizeof out) < 0) return 1;
    int nt_torch = 0;
    double dummy;
    sscanf(out, "%lf %d", &dummy, &nt_torch);
    if (run_proc(sum_argv, out, sizeof out) < 0) return 1;
    double a, b;
    int nt_ingot = 0;
    sscanf(out, "%lf %lf %d", &a, &b, &nt_ingot);
    if (nt_torch != nt_ingot) {
        fprintf(stderr, "tensor counts differ: torch %d, ingot %d\n", nt_torch, nt_ingot);
        return 1;
    }

    double *tw = calloc((size_t)reps, sizeof *tw), *tl = calloc((size_t)reps, sizeof *tl);
    double *iw = calloc((size_t)reps, sizeof *iw), *io = calloc((size_t)reps, sizeof *io);
    double *sw = calloc((size_t)reps, sizeof *sw), *r1 = calloc((size_t)reps, sizeof *r1);
    double *r2 = calloc((size_t)reps, sizeof *r2), *it = calloc((size_t)reps, sizeof *it);
    double *r3 = calloc((size_t)reps, sizeof *r3);
    for (int k = 0; k < reps; k++) {
        /* alternate the order so drift on a shared machine hits both sides */
        double t = 0, i = 0;
        for (int side = 0; side < 2; side++) {
            if ((side == 0) == (k % 2 == 0)) {
                t = run_proc(torch_argv, out, sizeof out);
                if (t < 0) return 1;
                sscanf(out, "%lf", &tl[k]);
            } else {
                i = run_proc(ing_argv, out, sizeof out);
                if (i < 0) return 1;
                sscanf(out, "%lf %lf", &io[k], &it[k]);
            }
        }
        tw[k] = t;
        iw[k] = i;
        sw[k] = run_proc(sum_argv, out, sizeof out);
        if (sw[k] < 0) return 1;
        r1[k] = t / i;
        r2[k] = t / sw[k];
        r3[k] = tl[k] / it[k];
    }
    printf("%d tensors, %d reps, medians (fresh process each, page cache warm):\n", nt_torch, reps);
    printf("  torch.load process            %8.3f s   (torch.load alone %.3f s)\n",
           bench_median(tw, reps), bench_median(tl, reps));
    printf("  ingot open + touch process    %8.4f s   (open alone %.5f s)\n",
           bench_median(iw, reps), bench_median(io, reps));
    printf("  ingot open + sum all bytes    %8.4f s\n", bench_median(sw, reps));
    printf("  in-process: torch.load alone %.3f s vs ingot open + touch %.5f s: %.0f x\n",
           bench_median(tl, reps), bench_median(it, reps), bench_median(r3, reps));
    printf("  ratio torch / ingot touch     %8.1f x   (median of per-rep ratios; goal >= 20)\n",
           bench_median(r1, reps));
    printf("  ratio torch / ingot sum-all   %8.1f x\n", bench_median(r2, reps));
    printf("commands:\n  /usr/bin/python3 -c '<import torch; torch.load(%s); touch>'\n"
           "  %s --child %s touch|sum\n",
           path, self, path);
    free(tw), free(tl), free(iw), free(io), free(sw), free(r1), free(r2), free(it), free(r3);
    if (!keep) unlink(path);
    return 0;
}
